//! `splunk`: Splunk's webhook alert action: the saved search, its results link, and the first
//! result's host, source and raw event, each named as missing when Splunk leaves it out. The
//! topic is the search's name.

use super::{at, Outcome, Post, Request};
use serde_json::Value;

/// Formats a Splunk alert.
pub fn format(req: &Request<'_>) -> Outcome {
    let p = req.payload;
    let field = |path: &[&str], missing: &'static str| -> Result<String, String> {
        match at(p, path) {
            None | Some(Value::Null) => Ok(missing.to_owned()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("{} is not text", path.join("."))),
        }
    };
    let fields = (|| -> Result<_, String> {
        Ok((
            field(&["search_name"], "Missing search_name")?,
            field(&["results_link"], "Missing results_link")?,
            field(&["result", "host"], "Missing host")?,
            field(&["result", "source"], "Missing source")?,
            field(&["result", "_raw"], "Missing _raw")?,
        ))
    })();
    match fields {
        Ok((search, link, host, source, raw)) => Outcome::Send {
            event_type: None,
            posts: vec![Post {
                body: format!(
                    "Splunk alert from saved search:\n* **Search**: [{search}]({link})\n\
                     * **Host**: {host}\n* **Source**: `{source}`\n* **Raw**: `{raw}`"
                ),
                // Zulip's view cuts a name of 60 characters or more itself.
                topic: if search.chars().count() >= 60 {
                    format!("{}...", search.chars().take(57).collect::<String>())
                } else {
                    search
                },
            }],
        },
        Err(reason) => Outcome::Malformed(reason),
    }
}

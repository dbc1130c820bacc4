//! `papertrail`: a Papertrail saved search's alert (JSON in the form field `payload`): how many
//! events matched, the first four of them quoted with their time, source and query, and a link
//! to the rest. The topic is always `logs`. No event types.

use super::{global_time, req_array, req_str, Outcome, Post, Request, Res};
use serde_json::Value;

/// Events shown before "See more".
const SHOWN: usize = 4;

/// Formats a Papertrail alert.
pub fn format(req: &Request<'_>) -> Outcome {
    if req.payload.get("events").is_none() {
        return Outcome::Refused("Events key is missing from payload".into());
    }
    match render(req.payload) {
        Ok(body) => Outcome::Send {
            event_type: None,
            posts: vec![Post {
                topic: "logs".into(),
                body,
            }],
        },
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn render(p: &Value) -> Res<String> {
    let name = req_str(p, &["saved_search", "name"])?;
    let url = req_str(p, &["saved_search", "html_search_url"])?;
    let query = req_str(p, &["saved_search", "query"])?;
    let events = req_array(p, &["events"])?;
    let mut parts = vec![format!(
        "[Search for \"{name}\"]({url}) found **{}** matches:\n",
        events.len()
    )];
    for (index, event) in events.iter().enumerate() {
        let time = global_time(req_str(event, &["received_at"])?)
            .ok_or_else(|| "received_at is not an ISO 8601 time".to_string())?;
        parts.push(format!(
            "{time} - {} - {query}:\n``` quote\n{}\n```",
            req_str(event, &["source_name"])?,
            req_str(event, &["message"])?
        ));
        if index + 1 == SHOWN {
            parts.push(format!("[See more]({url})"));
            break;
        }
    }
    Ok(parts.join("\n"))
}

//! `zapier`: Zapier's Zulip app and its "Webhooks by Zapier" posts. `{"type": "auth"}` is the
//! app checking its connection: answered with the bot's name, address and id, nothing posted.
//! Otherwise `content` goes to the topic `topic` (or the older `subject`).

use super::{Outcome, Post, Request};
use serde_json::Value;

/// Formats a Zapier request.
pub fn format(req: &Request<'_>) -> Outcome {
    let p = req.payload;
    let field = |name: &str| -> Result<Option<&str>, String> {
        match p.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("{name} is not text")),
        }
    };
    let read = (|| -> Result<_, String> {
        Ok((
            field("type")?,
            field("topic")?.or(field("subject")?),
            field("content")?,
        ))
    })();
    match read {
        Err(reason) => Outcome::Malformed(reason),
        Ok((Some("auth"), _, _)) => Outcome::Introduce,
        Ok((_, None, _)) => Outcome::Refused("Topic can't be empty".into()),
        Ok((_, _, None)) => Outcome::Refused("Content can't be empty".into()),
        Ok((_, Some(topic), Some(content))) => Outcome::Send {
            event_type: None,
            posts: vec![Post {
                topic: topic.to_owned(),
                body: content.to_owned(),
            }],
        },
    }
}

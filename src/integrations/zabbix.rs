//! `zabbix`: a Zabbix webhook media type (Zabbix 5.4 and later) posting the host, severity,
//! status, item, trigger and link of a problem. The topic is the host. A payload missing one is
//! refused and the bot's owner is told, as in Zulip.

use super::{Outcome, Post, Request};
use serde_json::Value;

/// Formats a Zabbix alert.
pub fn format(req: &Request<'_>) -> Outcome {
    let field = |name: &str| req.payload.get(name).and_then(Value::as_str);
    let (Some(host), Some(severity), Some(status), Some(item), Some(trigger), Some(link)) = (
        field("hostname"),
        field("severity"),
        field("status"),
        field("item"),
        field("trigger"),
        field("link"),
    ) else {
        return Outcome::MissingData;
    };
    Outcome::Send {
        event_type: None,
        posts: vec![Post {
            topic: host.to_owned(),
            body: format!(
                "{status} ({severity}) alert on [{host}]({link}):\n* {trigger}\n* {item}"
            ),
        }],
    }
}

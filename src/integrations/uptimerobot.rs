//! `uptimerobot`: UptimeRobot's alert contacts (a JSON template the user pastes into
//! UptimeRobot). The event type is `up` or `down`; the topic is the monitor's name. A payload
//! missing what the message needs is refused, and the bot's owner is told.

use super::{Outcome, Post, Request};
use serde_json::Value;

/// The event types (the alert's `alert_type_friendly_name`, in lower case).
pub const EVENT_TYPES: &[&str] = &["up", "down"];

/// Formats an UptimeRobot alert.
pub fn format(req: &Request<'_>) -> Outcome {
    let field = |name: &str| req.payload.get(name).and_then(Value::as_str);
    let Some(kind) = field("alert_type_friendly_name") else {
        return Outcome::MissingData;
    };
    let event_type = match kind {
        "Up" => "up",
        "Down" => "down",
        other => {
            return Outcome::Unsupported {
                event_type: other.to_owned(),
            }
        }
    };
    let (Some(name), Some(url), Some(details), Some(duration)) = (
        field("monitor_friendly_name"),
        field("monitor_url"),
        field("alert_details"),
        field("alert_friendly_duration"),
    ) else {
        return Outcome::MissingData;
    };
    let body = if event_type == "down" {
        format!("{name} ({url}) is DOWN ({details}).")
    } else {
        format!("{name} ({url}) is back UP ({details}).\nIt was down for {duration}.")
    };
    Outcome::Send {
        event_type: Some(event_type.to_owned()),
        posts: vec![Post {
            topic: name.to_owned(),
            body,
        }],
    }
}

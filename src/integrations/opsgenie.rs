//! `opsgenie`: Opsgenie's webhook integration. The event type is the alert's `action` (any
//! action, custom ones too); the topic is the integration's name; the message links the alert
//! and lists what the action carried.

use super::{bool_param, req_str, Outcome, Post, Request, Res};
use serde_json::Value;

/// The actions Opsgenie sends (custom actions come as their own names too).
pub const EVENT_TYPES: &[&str] = &[
    "AddTeam",
    "UnAcknowledge",
    "AddNote",
    "TestAction",
    "Close",
    "Escalate",
    "AddRecipient",
    "RemoveTags",
    "Acknowledge",
    "Delete",
    "AddTags",
    "TakeOwnership",
    "Create",
    "AssignOwnership",
];

/// Formats an Opsgenie alert action.
pub fn format(req: &Request<'_>) -> Outcome {
    match render(req) {
        Ok(outcome) => outcome,
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn render(req: &Request<'_>) -> Res<Outcome> {
    let p = req.payload;
    let action = req_str(p, &["action"])?;
    let alert_id = req_str(p, &["alert", "alertId"])?;
    let integration = req_str(p, &["integrationName"])?;
    let host = if bool_param(req, "eu_region", false)? {
        "app.eu.opsgenie.com"
    } else {
        "app.opsgenie.com"
    };
    let mut body = format!(
        "[Opsgenie alert for {integration}](https://{host}/alert/V2#/show/{alert_id}):\n* **Type**: {action}\n"
    );
    let alert = p.get("alert").cloned().unwrap_or(Value::Null);
    let optional = |v: &Value, key: &str| -> Res<Option<String>> {
        match v.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{key} is not a string")),
        }
    };
    for (key, label) in [
        ("note", "Note"),
        ("recipient", "Recipient"),
        ("addedTags", "Tags added"),
        ("team", "Team added"),
        ("owner", "Assigned owner"),
        ("removedTags", "Tags removed"),
        ("message", "Message"),
    ] {
        if let Some(value) = optional(&alert, key)? {
            body.push_str(&format!("* **{label}**: {value}\n"));
        }
    }
    let tags: Vec<String> = alert
        .get("tags")
        .and_then(Value::as_array)
        .map(|tags| {
            tags.iter()
                .filter_map(Value::as_str)
                .map(|t| format!("`{t}`"))
                .collect()
        })
        .unwrap_or_default();
    if !tags.is_empty() {
        body.push_str(&format!("* **Tags**: {}\n", tags.join(", ")));
    }
    if let Some(escalation) = optional(p, "escalationName")? {
        body.push_str(&format!("* **Escalation**: {escalation}\n"));
    }
    Ok(Outcome::Send {
        event_type: Some(action.to_owned()),
        posts: vec![Post {
            topic: integration.to_owned(),
            body,
        }],
    })
}

//! `newrelic`: New Relic's incident workflow webhook (its default payload, or one the user
//! built with the same fields). The event type is the incident's `state` (`CREATED`,
//! `ACTIVATED`, `CLOSED`); the topic its title. A payload lacking an expected field gets a
//! warning listing what is missing instead.

use super::{py_str, Outcome, Post, Request};
use serde_json::Value;

/// The states New Relic reports (the event types).
pub const EVENT_TYPES: &[&str] = &["CREATED", "ACTIVATED", "CLOSED"];

/// The fields the message is made of, in the order a warning lists the missing ones.
const EXPECTED: &[&str] = &[
    "issueUrl",
    "title",
    "priority",
    "totalIncidents",
    "state",
    "createdAt",
    "updatedAt",
    "alertPolicyNames",
    "alertConditionNames",
];

/// Formats a New Relic incident notification.
pub fn format(req: &Request<'_>) -> Outcome {
    let p = req.payload;
    let missing: Vec<String> = EXPECTED
        .iter()
        .filter(|field| p.get(**field).is_none())
        .map(|field| format!("`{field}`"))
        .collect();
    if !missing.is_empty() {
        return Outcome::Send {
            event_type: None,
            posts: vec![Post {
                topic: "New Relic incident alerts".into(),
                body: format!(
                    ":danger: A New Relic [incident](https://one.newrelic.com/alerts-ai) updated\n\n\
                     **Warning**: Unable to use the default notification format because at least one \
                     expected field was missing from the incident payload. See [New Relic integration \
                     documentation](/integrations/newrelic).\n\n**Missing fields**: {}",
                    missing.join(", ")
                ),
            }],
        };
    }
    match render(p) {
        Ok((state, post)) => Outcome::Send {
            event_type: Some(state),
            posts: vec![post],
        },
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn render(p: &Value) -> Result<(String, Post), String> {
    let text = |field: &str| {
        p.get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{field} is not a string"))
    };
    let names = |field: &str| -> Result<String, String> {
        let list = p
            .get(field)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{field} is not a list"))?;
        list.iter()
            .map(|v| {
                v.as_str()
                    .map(|s| format!("`{s}`"))
                    .ok_or_else(|| format!("{field} holds a non-string"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|items| items.join(", "))
    };
    let time = |field: &str| -> Result<String, String> {
        let ms = p
            .get(field)
            .and_then(Value::as_i64)
            .ok_or_else(|| format!("{field} is not a number of milliseconds"))?;
        super::epoch_time(ms.div_euclid(1000)).ok_or_else(|| format!("{field} is out of range"))
    };
    let state = text("state")?;
    if !EVENT_TYPES.contains(&state) {
        return Err(format!("unknown state {state}"));
    }
    let priority = text("priority")?;
    let emoji = match priority {
        "CRITICAL" => ":red_circle:",
        "HIGH" => ":orange_circle:",
        "MEDIUM" => ":yellow:",
        "LOW" => ":blue_circle:",
        other => return Err(format!("unknown priority {other}")),
    };
    let total = p
        .get("totalIncidents")
        .and_then(Value::as_i64)
        .ok_or("totalIncidents is not a number")?;
    let acknowledged = match p.get("owner").and_then(Value::as_str) {
        Some(owner) if !owner.is_empty() && owner != "N/A" => {
            format!("**Acknowledged by**: {owner}")
        }
        _ => String::new(),
    };
    let mut custom = String::new();
    if let Some(fields) = p.get("zulipCustomFields").and_then(Value::as_object) {
        for (key, value) in fields {
            let shown = match value {
                Value::Array(items) if items.iter().all(is_plain) => {
                    items.iter().map(py_str).collect::<Vec<_>>().join(", ")
                }
                v if is_plain(v) => py_str(v),
                _ => "*Value is not a supported data type*".to_owned(),
            };
            custom.push_str(&format!("- **{}**: {shown}\n", capitalize(key)));
        }
    }
    let title = text("title")?;
    let body = format!(
        "{emoji} **[{title}]({url})**\n\n```quote\n**Priority**: {priority}\n**State**: {state}\n\
         **Updated at**: {updated}\n{acknowledged}\n```\n\n```spoiler :file: Incident details\n\n\
         - **Alert policies**: {policies}\n- **Conditions**: {conditions}\n\
         - **Total incidents**: {total}\n- **Incident created at**: {created}\n{custom}\n```",
        url = text("issueUrl")?,
        updated = time("updatedAt")?,
        policies = names("alertPolicyNames")?,
        conditions = names("alertConditionNames")?,
        created = time("createdAt")?,
    );
    Ok((
        state.to_owned(),
        Post {
            topic: title.to_owned(),
            body,
        },
    ))
}

/// A value shown as it is: nothing, a yes/no, a number or a text.
fn is_plain(v: &Value) -> bool {
    matches!(
        v,
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)
    )
}

/// The first character upper case, the rest lower case (Python's `str.capitalize`).
fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

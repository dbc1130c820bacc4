//! The audit trail and time travel shared by the command line (`chronicle log`, `dump --only`,
//! `diff`) and the admin API (`GET /admin/events`, `GET /admin/projections`): which events a
//! filter keeps, how an event reads as one line or as JSON, one area of a dump, and what changed
//! between two dumps.

use crate::events::Envelope;
use crate::time::iso8601_ms;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// Which events a listing keeps (every part optional).
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Only events after this seq.
    pub after_seq: u64,
    /// Only events of these types (`MessageSent`, ...).
    pub types: Option<BTreeSet<String>>,
    /// Only events caused by this user (0: the server itself).
    pub actor: Option<u64>,
    /// Only events at or after this time (milliseconds).
    pub since_ms: Option<i64>,
    /// Only events at or before this time (milliseconds).
    pub until_ms: Option<i64>,
}

impl EventFilter {
    /// Reads the type list (`A,B`), checking each name against the schema.
    pub fn parse_types(list: &str) -> Result<BTreeSet<String>, String> {
        let known: BTreeSet<&str> = crate::events::v2::EVENT_TYPES.iter().copied().collect();
        let mut types = BTreeSet::new();
        for name in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if !known.contains(name) {
                return Err(format!("unknown event type '{name}'"));
            }
            types.insert(name.to_owned());
        }
        Ok(types)
    }

    pub fn keeps(&self, env: &Envelope) -> bool {
        env.seq.0 > self.after_seq
            && self.types.as_ref().is_none_or(|t| {
                // Imported history answers to its own type too (`--type MessageSent`
                // lists imported messages).
                t.contains(env.event.type_name()) || t.contains(env.event.inner().type_name())
            })
            && self.actor.is_none_or(|a| env.actor.map_or(0, |u| u.0) == a)
            && self.since_ms.is_none_or(|t| env.at >= t)
            && self.until_ms.is_none_or(|t| env.at <= t)
    }

    /// Whether no later event can pass (events are in time order along the log).
    pub fn past_the_end(&self, env: &Envelope) -> bool {
        self.until_ms.is_some_and(|t| env.at > t)
    }
}

/// An event as the admin listing shows it, secrets redacted.
pub fn event_json(env: &Envelope) -> Value {
    json!({
        "seq": env.seq.0,
        "time": iso8601_ms(env.at),
        "actor": env.actor.map(|a| a.0),
        "type": env.event.type_name(),
        "schema_version": env.schema_version,
        "payload": env.redacted_payload(),
    })
}

/// An event as one line for a person: seq, time, actor, type and its fields (long values cut).
pub fn event_line(env: &Envelope) -> String {
    let actor = env
        .actor
        .map_or_else(|| "server".to_owned(), |a| format!("user {a}"));
    let mut line = format!(
        "{:>8}  {}  {:<9}  {}",
        env.seq.0,
        iso8601_ms(env.at),
        actor,
        env.event.type_name()
    );
    if let Value::Object(fields) = env.redacted_payload() {
        for (key, value) in fields {
            let shown = match value {
                Value::String(text) => json!(cut(&text, 48)).to_string(),
                other => cut(&other.to_string(), 64),
            };
            line.push_str(&format!(" {key}={shown}"));
        }
    }
    line
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

/// One area of a dump (`users`, `messages`, ...), or the list of areas when it has none.
pub fn only_area(dump: &Value, area: &str) -> Result<Value, String> {
    match dump.get(area) {
        Some(value) if area != "seq" => Ok(json!({"seq": dump["seq"], area: value})),
        _ => Err(format!(
            "no area '{area}'; the areas are: {}",
            areas(dump).join(", ")
        )),
    }
}

/// The areas of a dump, in order.
pub fn areas(dump: &Value) -> Vec<String> {
    dump.as_object()
        .map(|m| m.keys().filter(|k| *k != "seq").cloned().collect())
        .unwrap_or_default()
}

/// What changed between two dumps, per area: each changed value with its JSON path, as it was
/// and as it became (absent on one side: `null` there, with `"added"`/`"removed"`).
pub fn diff(before: &Value, after: &Value) -> Value {
    let mut out = Map::new();
    for area in areas(after) {
        let mut changes = Vec::new();
        walk(
            &format!("/{area}"),
            &before[&area],
            &after[&area],
            &mut changes,
        );
        if !changes.is_empty() {
            out.insert(area, Value::Array(changes));
        }
    }
    json!({"from_seq": before["seq"], "to_seq": after["seq"], "changes": out})
}

fn walk(path: &str, before: &Value, after: &Value, out: &mut Vec<Value>) {
    if before == after {
        return;
    }
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let child = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => walk(&child, x, y, out),
                    (None, Some(y)) => out.push(json!({"path": child, "added": y})),
                    (Some(x), None) => out.push(json!({"path": child, "removed": x})),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            // Rows are matched by position; an inserted row shows as changes after it.
            for i in 0..a.len().max(b.len()) {
                let child = format!("{path}/{i}");
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => walk(&child, x, y, out),
                    (None, Some(y)) => out.push(json!({"path": child, "added": y})),
                    (Some(x), None) => out.push(json!({"path": child, "removed": x})),
                    (None, None) => {}
                }
            }
        }
        _ => out.push(json!({"path": path, "before": before, "after": after})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_lists_changed_paths_per_area() {
        let before = json!({"seq": 3, "users": [{"id": 1, "name": "A"}], "realm": {"name": "X"}, "tags": []});
        let after = json!({"seq": 5, "users": [{"id": 1, "name": "B"}, {"id": 2}], "realm": {"name": "X"}, "tags": ["a/b"]});
        assert_eq!(
            diff(&before, &after),
            json!({"from_seq": 3, "to_seq": 5, "changes": {
                "users": [
                    {"path": "/users/0/name", "before": "A", "after": "B"},
                    {"path": "/users/1", "added": {"id": 2}},
                ],
                "tags": [{"path": "/tags/0", "added": "a/b"}],
            }})
        );
        assert_eq!(diff(&after, &after)["changes"], json!({}));
    }

    #[test]
    fn areas_and_only() {
        let dump = json!({"seq": 9, "users": [], "realm": {}});
        assert_eq!(
            only_area(&dump, "realm").unwrap(),
            json!({"seq": 9, "realm": {}})
        );
        assert_eq!(
            only_area(&dump, "nope").unwrap_err(),
            "no area 'nope'; the areas are: users, realm"
        );
        assert!(only_area(&dump, "seq").is_err());
    }

    #[test]
    fn unknown_types_are_refused() {
        assert!(EventFilter::parse_types("MessageSent, UserCreated").is_ok());
        assert_eq!(
            EventFilter::parse_types("MessageSnet").unwrap_err(),
            "unknown event type 'MessageSnet'"
        );
    }
}

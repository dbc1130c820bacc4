//! The attachment object of `GET /attachments` and `attachment` events.

use crate::projections::attachments::Attachment;
use crate::projections::Projections;
use serde_json::{json, Value};

/// Zulip's attachment object: the file, and the messages that link it with their send times
/// (milliseconds).
pub fn attachment_json(state: &Projections, a: &Attachment) -> Value {
    let messages: Vec<Value> = a
        .messages
        .iter()
        .filter_map(|id| state.messages.get(*id))
        .map(|m| json!({"id": m.id.0, "date_sent": m.timestamp * 1000}))
        .collect();
    json!({
        "id": a.id.0,
        "name": a.name,
        "path_id": a.path_id,
        "size": a.size,
        "create_time": a.created_ms,
        "messages": messages,
    })
}

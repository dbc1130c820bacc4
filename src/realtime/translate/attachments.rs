//! `attachment` events: each goes to the upload's owner only.

use super::event::Deliveries;
use crate::ids::{AttachmentId, MessageId, UserId};
use crate::projections::Projections;
use crate::render::attachments::attachment_json;
use serde_json::json;

/// `add`, with `upload_space_used` (the organization's, as Zulip's).
pub fn uploaded(state: &Projections, id: AttachmentId) -> Deliveries {
    let Some(a) = state.attachments.get(id) else {
        return Deliveries::new();
    };
    Deliveries::from(vec![(
        a.owner_id,
        json!({
            "type": "attachment",
            "op": "add",
            "attachment": attachment_json(state, a),
            "upload_space_used": state.attachments.total_bytes(),
        }),
    )])
}

/// `remove`, with `upload_space_used` after it.
pub fn deleted(state: &Projections, id: AttachmentId, owner: UserId) -> Deliveries {
    Deliveries::from(vec![(
        owner,
        json!({
            "type": "attachment",
            "op": "remove",
            "attachment": {"id": id.0},
            "upload_space_used": state.attachments.total_bytes(),
        }),
    )])
}

/// `update` for each upload a message (newly sent or edited) links: its message list changed.
pub fn linked(state: &Projections, message: MessageId) -> Deliveries {
    state
        .attachments
        .of_message(message)
        .map(|a| {
            (
                a.owner_id,
                json!({
                    "type": "attachment",
                    "op": "update",
                    "attachment": attachment_json(state, a),
                    "upload_space_used": state.attachments.total_bytes(),
                }),
            )
        })
        .collect()
}

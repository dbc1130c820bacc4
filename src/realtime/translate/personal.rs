//! Events about a user's own things, each for that user only: scheduled messages, reminders,
//! navigation views, client devices, drafts and saved snippets.

use super::event::Deliveries;
use crate::events::Event;
use crate::projections::Projections;
use serde_json::{json, Value};

/// The client events of one of the user-owned events; empty for any other event.
pub fn personal(state: &Projections, event: &Event) -> Deliveries {
    let one = |user: crate::ids::UserId, event: Value| Deliveries::from(vec![(user, event)]);
    match event {
        Event::ScheduledMessageSaved {
            scheduled_message_id: id,
            sender_id,
            edit,
            ..
        } => {
            let Some(saved) = state.scheduled.get(*id) else {
                return Deliveries::new();
            };
            match (saved.reminder_for.is_some(), *edit) {
                (true, _) => one(
                    *sender_id,
                    json!({"type": "reminders", "op": "add", "reminders": [crate::commands::scheduled::reminder_json(state, saved)]}),
                ),
                (false, false) => one(
                    *sender_id,
                    json!({"type": "scheduled_messages", "op": "add", "scheduled_messages": [saved.json()]}),
                ),
                (false, true) => one(
                    *sender_id,
                    json!({"type": "scheduled_messages", "op": "update", "scheduled_message": saved.json()}),
                ),
            }
        }
        // Zulip tells of a failed scheduled message (an `update` with `failed`), not of a failed
        // reminder.
        Event::ScheduledMessageFailed {
            scheduled_message_id: id,
            sender_id,
            reminder: false,
            ..
        } => match state.scheduled.get(*id) {
            Some(failed) => one(
                *sender_id,
                json!({"type": "scheduled_messages", "op": "update", "scheduled_message": failed.json()}),
            ),
            None => Deliveries::new(),
        },
        Event::ScheduledMessageRemoved {
            scheduled_message_id: id,
            sender_id,
            reminder,
            ..
        } => one(
            *sender_id,
            if *reminder {
                json!({"type": "reminders", "op": "remove", "reminder_id": id.0})
            } else {
                json!({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": id.0})
            },
        ),
        Event::NavigationViewAdded {
            user_id, fragment, ..
        } => match state.navigation_views.get(*user_id, fragment) {
            Some(view) => one(
                *user_id,
                json!({
                    "type": "navigation_view",
                    "op": "add",
                    "navigation_view": crate::projections::navigation_views::view_json(fragment, view),
                }),
            ),
            None => Deliveries::new(),
        },
        Event::NavigationViewChanged {
            user_id,
            fragment,
            is_pinned,
            name,
        } => {
            let mut data = serde_json::Map::new();
            if let Some(pinned) = is_pinned {
                data.insert("is_pinned".into(), json!(pinned));
            }
            if let Some(name) = name {
                data.insert("name".into(), json!(name));
            }
            one(
                *user_id,
                json!({"type": "navigation_view", "op": "update", "fragment": fragment, "data": data}),
            )
        }
        Event::NavigationViewRemoved { user_id, fragment } => one(
            *user_id,
            json!({"type": "navigation_view", "op": "remove", "fragment": fragment}),
        ),
        Event::ClientDeviceRegistered { user_id, device_id } => one(
            *user_id,
            json!({"type": "device", "op": "add", "device_id": device_id}),
        ),
        Event::PushDeviceChanged {
            user_id,
            device_id,
            change,
        } => {
            // Only the fields that changed, as Zulip's `device` update events.
            use crate::events::PushChange;
            use crate::projections::devices::token_id_text;
            let mut event = json!({"type": "device", "op": "update", "device_id": device_id});
            let push = state.devices.push(*user_id, *device_id);
            match change {
                PushChange::KeySet { push_key_id, .. } => {
                    event["push_key_id"] = json!(push_key_id);
                }
                PushChange::TokenRequested { token_id, .. } => {
                    event["pending_push_token_id"] = json!(token_id_text(*token_id));
                    event["push_token_last_updated_timestamp"] =
                        json!(push.and_then(|p| p.push_token_last_updated_timestamp));
                    event["push_registration_error_code"] = Value::Null;
                }
                PushChange::TokenAccepted { token_id } => {
                    event["push_token_id"] = json!(token_id_text(*token_id));
                    event["pending_push_token_id"] = Value::Null;
                }
                PushChange::TokenRefused { error_code } => {
                    event["push_registration_error_code"] = json!(error_code);
                }
                PushChange::TokenDropped { .. } => {
                    event["push_token_id"] = Value::Null;
                }
            }
            one(*user_id, event)
        }
        Event::ClientDeviceRemoved { user_id, device_id } => one(
            *user_id,
            json!({"type": "device", "op": "remove", "device_id": device_id}),
        ),
        Event::DraftsSaved {
            user_id,
            drafts,
            edit,
        } => {
            let saved: Vec<Value> = drafts
                .iter()
                .filter_map(|(id, _)| {
                    let draft = state.drafts.draft(*user_id, *id)?;
                    Some(crate::projections::drafts::draft_json(*id, draft))
                })
                .collect();
            match (edit, saved.first()) {
                (true, Some(draft)) => one(
                    *user_id,
                    json!({"type": "drafts", "op": "update", "draft": draft}),
                ),
                (false, Some(_)) => one(
                    *user_id,
                    json!({"type": "drafts", "op": "add", "drafts": saved}),
                ),
                (_, None) => Deliveries::new(),
            }
        }
        Event::DraftRemoved { user_id, draft_id } => one(
            *user_id,
            json!({"type": "drafts", "op": "remove", "draft_id": draft_id}),
        ),
        Event::SavedSnippetSaved {
            user_id,
            snippet_id,
            edit,
            ..
        } => match state.drafts.snippet(*user_id, *snippet_id) {
            Some(snippet) => one(
                *user_id,
                json!({
                    "type": "saved_snippets",
                    "op": if *edit { "update" } else { "add" },
                    "saved_snippet": crate::projections::drafts::snippet_json(*snippet_id, snippet),
                }),
            ),
            None => Deliveries::new(),
        },
        Event::SavedSnippetRemoved {
            user_id,
            snippet_id,
        } => one(
            *user_id,
            json!({"type": "saved_snippets", "op": "remove", "saved_snippet_id": snippet_id}),
        ),
        _ => Deliveries::new(),
    }
}

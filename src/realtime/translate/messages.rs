//! Events about messages: new ones, flags, reactions, edits and moves, deletions,
//! submessages, typing and topic visibility.

use super::audience::{active_holders, first_message_changes};
use super::event::{ClientEvent, Deliveries, MessageSource, Variants};
use crate::events::{
    Envelope, Event, MessageFlag, MessageMove, Recipient, SenderQueue, TopicPolicy, TypingTarget,
};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::messages::recipients;
use crate::projections::Address;
use crate::projections::{Message, Projections, User};
use crate::render::channels::muted_topics_json;
use crate::render::messages::{
    message_flags, shown_topic, topic_links_json, SharedMessageJson, SharedText,
};
use crate::render::users::shown_email;
use crate::render::Site;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Zulip sends no typing notifications for channels with more subscribers than this.
const MAX_CHANNEL_TYPING_AUDIENCE: usize = 100;

/// The `message` event of `message` for `viewer`, with its Markdown source and stored topic
/// for the queues that registered for them.
pub fn message_event(
    state: &Projections,
    site: &Site,
    viewer: &User,
    message: &Message,
) -> ClientEvent {
    let text = SharedMessageJson::new(message).get(state, site, viewer);
    message_event_of(state, viewer, message, text)
}

/// [`message_event`] with the message's JSON as `viewer` sees it already written.
fn message_event_of(
    state: &Projections,
    viewer: &User,
    message: &Message,
    text: SharedText,
) -> ClientEvent {
    let flags = message_flags(state, viewer.user_id, message.id);
    let mut body = serde_json::Map::new();
    body.insert("type".into(), Value::from("message"));
    body.insert("flags".into(), Value::from(flags));
    ClientEvent {
        user_id: viewer.user_id,
        body: Value::Object(body),
        variants: Variants {
            message_source: Some(MessageSource {
                id: message.id,
                json: text.json,
                content: message.content.clone(),
                topic: message.topic().to_owned(),
                in_channel: message.channel().is_some(),
                markdown_json: text.markdown_json,
            }),
            ..Variants::default()
        },
    }
}

/// `message` for every recipient (the sending queue learns its `local_id`), and a channel's
/// `first_message_id` update when this is its first message.
pub fn message_sent(
    state: &Projections,
    site: &Site,
    message_id: MessageId,
    sender_id: UserId,
    sender_queue: Option<&SenderQueue>,
    listening: &dyn Fn(UserId) -> bool,
) -> Deliveries {
    let Some(message) = state.messages.get(message_id) else {
        return Deliveries::new();
    };
    let mut shared = SharedMessageJson::new(message);
    let mut out: Deliveries =
        recipients(&state.channels, &state.users, &message.recipient, sender_id)
            .into_iter()
            .filter(|user_id| listening(*user_id))
            .filter_map(|user_id| {
                let viewer = state.users.get(user_id).filter(|u| u.is_active)?;
                let text = shared.get(state, site, viewer);
                let mut event = message_event_of(state, viewer, message, text);
                if user_id == sender_id {
                    event.variants.sender_queue = sender_queue.cloned();
                }
                Some(event)
            })
            .collect();
    if let Address::Channel { channel_id, .. } = &message.recipient {
        out.extend(first_message_changes(
            state,
            *channel_id,
            &[message_id],
            &[],
        ));
    }
    out
}

/// `update_message_flags`, to the user alone; removing `read` says where each message is.
pub fn flags_changed(
    state: &Projections,
    user_id: UserId,
    flag: MessageFlag,
    add: bool,
    message_ids: &[MessageId],
) -> Deliveries {
    let op = if add { "add" } else { "remove" };
    let mut event = json!({
        "type": "update_message_flags", "op": op, "operation": op, "flag": flag.as_str(),
        "messages": message_ids, "all": false,
    });
    if !add && flag == MessageFlag::Read {
        let details: serde_json::Map<String, Value> = message_ids
            .iter()
            .filter_map(|id| state.messages.get(*id))
            .map(|m| {
                let detail = match &m.recipient {
                    Address::Channel { channel_id, topic } => {
                        json!({"type": "stream", "stream_id": channel_id.0, "topic": topic})
                    }
                    Address::Direct { user_ids } => json!({
                        "type": "private",
                        "user_ids": user_ids.iter().filter(|u| **u != user_id).collect::<Vec<_>>(),
                    }),
                };
                (m.id.0.to_string(), detail)
            })
            .collect();
        event["message_details"] = Value::Object(details);
    }
    Deliveries::from(vec![(user_id, event)])
}

/// A `reaction` event (`ReactionAdded`, `ReactionRemoved`) for everyone holding a copy of the
/// message.
pub fn reaction_changed(state: &Projections, site: &Site, event: &Event) -> Deliveries {
    let (op, message_id, user_id, emoji_name, emoji_code, reaction_type) = match event {
        Event::ReactionAdded {
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        } => (
            "add",
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        ),
        Event::ReactionRemoved {
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        } => (
            "remove",
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        ),
        _ => return Deliveries::new(),
    };
    let Some(reactor) = state.users.get(*user_id) else {
        return Deliveries::new();
    };
    active_holders(state, *message_id)
        .into_iter()
        .map(|viewer| {
            (
                viewer.user_id,
                json!({
                    "type": "reaction", "message_id": message_id.0, "user_id": user_id.0,
                    "user": {
                        "user_id": user_id.0, "email": shown_email(state, site, viewer, reactor),
                        "full_name": reactor.full_name,
                    },
                    "op": op, "emoji_name": emoji_name, "emoji_code": emoji_code,
                    "reaction_type": reaction_type.as_str(),
                }),
            )
        })
        .collect()
}

/// `submessage` (`SubmessageAdded`), for everyone holding a copy of the message.
pub fn submessage_added(state: &Projections, event: &Event) -> Deliveries {
    let Event::SubmessageAdded {
        submessage_id,
        message_id,
        sender_id,
        msg_type,
        content,
    } = event
    else {
        return Deliveries::new();
    };
    let event = json!({
        "type": "submessage", "msg_type": msg_type, "message_id": message_id.0,
        "submessage_id": submessage_id, "sender_id": sender_id.0, "content": content,
    });
    active_holders(state, *message_id)
        .into_iter()
        .map(|u| (u.user_id, event.clone()))
        .collect()
}

/// `delete_message` for those who held the messages, and a `first_message_id` update.
pub fn messages_deleted(
    state: &Projections,
    message_ids: &[MessageId],
    recipient: &Recipient,
    holders: &[UserId],
) -> Deliveries {
    let mut event = json!({"type": "delete_message", "message_ids": message_ids});
    let mut variants = Variants::default();
    match recipient {
        Recipient::Channel { channel_id, topic } => {
            event["message_type"] = json!("stream");
            event["stream_id"] = json!(channel_id.0);
            event["topic"] = json!(shown_topic(topic, false));
            variants.stored_topics.push(("topic", topic.clone()));
        }
        Recipient::Direct { .. } => event["message_type"] = json!("private"),
    }
    let mut out: Deliveries = holders
        .iter()
        .filter(|id| state.users.get(**id).is_some_and(|u| u.is_active))
        .map(|id| ClientEvent {
            user_id: *id,
            body: event.clone(),
            variants: variants.clone(),
        })
        .collect();
    if let Recipient::Channel { channel_id, .. } = recipient {
        out.extend(first_message_changes(state, *channel_id, &[], message_ids));
    }
    out
}

/// `typing` `start` or `stop`, to the other participants of a conversation or the
/// subscribers of a (small) channel who receive typing notifications.
pub fn typing(
    state: &Projections,
    site: &Site,
    user_id: UserId,
    target: &TypingTarget,
    op: &str,
) -> Deliveries {
    let Some(sender) = state.users.get(user_id) else {
        return Deliveries::new();
    };
    let person = |viewer: &User, u: &User| json!({"user_id": u.user_id.0, "email": shown_email(state, site, viewer, u)});
    match target {
        TypingTarget::Direct { user_ids } => user_ids
            .iter()
            .filter_map(|id| state.users.get(*id).filter(|u| receives_typing(state, u)))
            .map(|viewer| {
                let recipients: Vec<Value> = user_ids
                    .iter()
                    .filter_map(|id| state.users.get(*id))
                    .map(|u| person(viewer, u))
                    .collect();
                (
                    viewer.user_id,
                    json!({
                        "type": "typing", "op": op, "message_type": "direct",
                        "sender": person(viewer, sender), "recipients": recipients,
                    }),
                )
            })
            .collect(),
        TypingTarget::Channel { channel_id, topic } => channel_typing_audience(state, *channel_id)
            .into_iter()
            .map(|viewer| ClientEvent {
                user_id: viewer.user_id,
                body: json!({
                    "type": "typing", "op": op, "message_type": "stream",
                    "sender": person(viewer, sender), "stream_id": channel_id.0,
                    "topic": shown_topic(topic, false),
                }),
                variants: Variants {
                    stored_topics: vec![("topic", topic.clone())],
                    ..Variants::default()
                },
            })
            .collect(),
    }
}

/// `typing_edit_message` `start` or `stop`, to those who would be told of the edit: the
/// participants of a direct message, or the subscribers of a (small) channel, who receive
/// typing notifications.
pub fn edit_typing(
    state: &Projections,
    user_id: UserId,
    message_id: crate::ids::MessageId,
    start: bool,
) -> Deliveries {
    let Some(message) = state.messages.get(message_id) else {
        return Deliveries::new();
    };
    let op = if start { "start" } else { "stop" };
    let body = |recipient: Value| {
        json!({
            "type": "typing_edit_message", "op": op, "sender_id": user_id.0,
            "message_id": message_id.0, "recipient": recipient,
        })
    };
    match &message.recipient {
        crate::projections::Address::Direct { user_ids } => {
            let ids: Vec<u64> = user_ids.iter().map(|u| u.0).collect();
            user_ids
                .iter()
                .filter_map(|id| state.users.get(*id).filter(|u| receives_typing(state, u)))
                .map(|viewer| {
                    let recipient = json!({"type": "direct", "user_ids": ids});
                    (viewer.user_id, body(recipient))
                })
                .collect()
        }
        crate::projections::Address::Channel { channel_id, topic } => {
            // Subscribers who can read the message (a protected history hides it from later
            // ones).
            channel_typing_audience(state, *channel_id)
                .into_iter()
                .filter(|viewer| crate::projections::can_read(state, viewer, message))
                .map(|viewer| ClientEvent {
                    user_id: viewer.user_id,
                    body: body(json!({
                        "type": "channel", "channel_id": channel_id.0,
                        "topic": shown_topic(topic, false),
                    })),
                    variants: Variants {
                        stored_topics: vec![("topic", topic.to_string())],
                        ..Variants::default()
                    },
                })
                .collect()
        }
    }
}

/// The subscribers of a channel who receive typing notifications; nobody when the channel has
/// more than [`MAX_CHANNEL_TYPING_AUDIENCE`] subscribers.
fn channel_typing_audience(state: &Projections, channel_id: ChannelId) -> Vec<&User> {
    match state.channels.get(channel_id) {
        Some(channel) if channel.subscribers.len() <= MAX_CHANNEL_TYPING_AUDIENCE => channel
            .subscribers
            .iter()
            .filter_map(|id| state.users.get(*id).filter(|u| receives_typing(state, u)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Active users who have not turned typing notifications off (`receives_typing_notifications`).
fn receives_typing(state: &Projections, user: &User) -> bool {
    user.is_active
        && state
            .user_settings
            .get(user.user_id, "receives_typing_notifications")
            != crate::events::RealmValue::Bool(false)
}

/// The legacy `muted_topics` list and the `user_topic` event, to the user alone.
pub fn topic_visibility_set(
    state: &Projections,
    at: i64,
    user_id: UserId,
    channel_id: ChannelId,
    topic: &str,
    policy: TopicPolicy,
) -> Deliveries {
    let muted = muted_topics_json(state, user_id);
    let mut out = Deliveries::new();
    out.push((
        user_id,
        json!({"type": "muted_topics", "muted_topics": muted}),
    ));
    out.push(ClientEvent {
        user_id,
        body: json!({
            "type": "user_topic", "stream_id": channel_id.0,
            "topic_name": shown_topic(topic, false),
            "last_updated": at / 1000, "visibility_policy": policy.code(),
        }),
        variants: Variants {
            stored_topics: vec![("topic_name", topic.to_owned())],
            ..Variants::default()
        },
    });
    out
}

/// `update_message` for an edit, to everyone holding a copy of the edited message (of any
/// moved message, for a move), and `delete_message` to those a move to another channel took
/// the messages from.
pub fn message_edited(
    state: &Projections,
    env: &Envelope,
    message_id: MessageId,
    editor: UserId,
    content_changed: bool,
    moved: Option<&MessageMove>,
) -> Deliveries {
    let Some(message) = state.messages.get(message_id) else {
        return Deliveries::new();
    };
    let Some(edit) = message.edits().last() else {
        return Deliveries::new();
    };
    let (event, variants) =
        update_message_body(state, env, message, editor, content_changed, moved);
    // The channel the message was in before this edit.
    let orig_channel = edit.prev_channel.or(message.channel());
    // Everyone holding a copy of a moved message hears of the move, not only those holding
    // the edited one: their unread counts and topics change too.
    let audience: Vec<&User> = match moved {
        Some(m) => state
            .messages
            .holders_of_any(&m.message_ids)
            .into_iter()
            .filter_map(|id| state.users.get(id).filter(|u| u.is_active))
            .collect(),
        None => active_holders(state, message_id),
    };
    let mut out: Deliveries = audience
        .into_iter()
        .map(|viewer| {
            let mut event = event.clone();
            event["flags"] = json!(message_flags(state, viewer.user_id, message_id));
            // The edited text only to those holding the edited message (a later joiner of a
            // channel without public history may hold only other moved messages).
            if state.messages.flags(viewer.user_id, message_id).is_none() {
                if let Some(map) = event.as_object_mut() {
                    for key in [
                        "content",
                        "rendered_content",
                        "orig_content",
                        "orig_rendered_content",
                        "is_me_message",
                    ] {
                        map.remove(key);
                    }
                }
            }
            ClientEvent {
                user_id: viewer.user_id,
                body: event,
                variants: variants.clone(),
            }
        })
        .collect();
    // A move to a channel someone cannot read takes the messages away from them.
    if let Some(moved) = moved.filter(|m| m.new_channel_id.is_some()) {
        let told: std::collections::HashSet<UserId> = out.iter().map(|e| e.user_id).collect();
        if let Some(old) = orig_channel.and_then(|c| state.channels.get(c)) {
            let prev_topic = edit.prev_topic.as_deref().unwrap_or(message.topic());
            let event = json!({
                "type": "delete_message", "message_type": "stream", "stream_id": old.id.0,
                "topic": shown_topic(prev_topic, false),
                "message_ids": moved.message_ids,
            });
            let variants = Variants {
                stored_topics: vec![("topic", prev_topic.to_owned())],
                ..Variants::default()
            };
            // Its subscribers, and anyone else who held a copy and lost it (a sender who was
            // not subscribed, a historical copy).
            let lost = state.messages.lost_in_move(&moved.message_ids);
            let losers: BTreeSet<&UserId> = old.subscribers.iter().chain(lost.iter()).collect();
            out.extend(
                losers
                    .into_iter()
                    .filter(|u| !told.contains(u))
                    .filter(|u| state.users.get(**u).is_some_and(|u| u.is_active))
                    .map(|u| ClientEvent {
                        user_id: *u,
                        body: event.clone(),
                        variants: variants.clone(),
                    }),
            );
        }
    }
    // A move between channels can change which message is oldest in either (after the
    // deletions above, which count who was told of the move itself).
    if let (Some(moved), Some(old)) = (moved, orig_channel) {
        if let Some(new) = moved.new_channel_id.filter(|new| *new != old) {
            out.extend(first_message_changes(state, old, &[], &moved.message_ids));
            out.extend(first_message_changes(state, new, &moved.message_ids, &[]));
        }
    }
    out
}

/// The `update_message` event common to every recipient of an edit, before their flags.
fn update_message_body(
    state: &Projections,
    env: &Envelope,
    message: &Message,
    editor: UserId,
    content_changed: bool,
    moved: Option<&MessageMove>,
) -> (Value, Variants) {
    let message_ids: Vec<u64> = match moved {
        Some(m) => m.message_ids.iter().map(|id| id.0).collect(),
        None => vec![message.id.0],
    };
    let mut event = json!({
        "type": "update_message", "user_id": editor.0, "edit_timestamp": env.at / 1000,
        "message_id": message.id.0, "message_ids": message_ids, "rendering_only": false,
    });
    let mut variants = Variants::default();
    let edit = message.edits().last();
    let orig_channel = edit.and_then(|e| e.prev_channel).or(message.channel());
    if let Some(channel) = orig_channel.and_then(|c| state.channels.get(c)) {
        event["stream_id"] = json!(channel.id.0);
        event["stream_name"] = json!(channel.name);
    }
    if content_changed {
        // A content edit and a move are one event but two history entries: the content is the
        // one before the last (a content edit is recorded first).
        let content_edit = message
            .edits()
            .iter()
            .rev()
            .find(|e| e.prev_content.is_some());
        if let Some((raw, html)) = content_edit.and_then(|e| e.prev_content.as_ref()) {
            event["orig_content"] = json!(&**raw);
            event["orig_rendered_content"] = json!(&**html);
        }
        event["content"] = json!(&*message.content);
        event["rendered_content"] = json!(&*message.rendered_content());
        event["is_me_message"] = json!(message.is_me_message);
    }
    if let Some(moved) = moved {
        event["propagate_mode"] = json!(moved.propagate_mode.as_str());
        if let Some(channel) = moved.new_channel_id {
            event["new_stream_id"] = json!(channel.0);
        }
        if moved.new_topic.is_some() {
            let orig = edit.and_then(|e| e.prev_topic.clone()).unwrap_or_default();
            event["orig_subject"] = json!(shown_topic(&orig, false));
            event["subject"] = json!(shown_topic(message.topic(), false));
            // Clients with `empty_topic_name` get the topics as they are.
            variants.stored_topics = vec![
                ("orig_subject", orig),
                ("subject", message.topic().to_owned()),
            ];
            event["topic_links"] = topic_links_json(state, message.topic());
        }
    }
    (event, variants)
}

//! Messages as clients see them: the message object of `GET /messages` and `message` events,
//! its flags, reactions, submessages, edit history and topic links.

use super::users::{avatar_url, shown_email};
use super::Site;
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::messages::{flag_names, flags, EMPTY_TOPIC_DISPLAY_NAME};
use crate::projections::Address;
use crate::projections::{Message, Projections, User};
use serde_json::{json, Value};

/// `topic_links` of a topic, with the organization's current linkifiers.
pub fn topic_links_json(state: &Projections, topic: &str) -> Value {
    Value::Array(
        crate::linkify::topic_links(&state.linkifiers.compiled(), topic)
            .into_iter()
            .map(|(text, url)| json!({"url": url, "text": text}))
            .collect(),
    )
}

/// The shown topic: the empty topic is "general chat" unless the client handles it.
pub fn shown_topic(topic: &str, allow_empty_topic_name: bool) -> String {
    if topic.is_empty() && !allow_empty_topic_name {
        EMPTY_TOPIC_DISPLAY_NAME.to_owned()
    } else {
        topic.to_owned()
    }
}

/// A message's submessages as Zulip lists them.
pub fn submessages_json(message: &Message) -> Value {
    message
        .submessages()
        .iter()
        .map(|sm| {
            json!({
                "msg_type": sm.msg_type, "content": sm.content, "message_id": message.id.0,
                "sender_id": sm.sender_id.0, "id": sm.id,
            })
        })
        .collect()
}

/// [`message_json`] (with Markdown applied) for many viewers of one message, built once for all
/// who see it alike. It depends on the viewer only through the addresses it shows: the sender's,
/// a direct message's people's, the reactors'. Anyone not among those people sees what anyone
/// else does who sees hidden addresses as they do. A message to a channel of hundreds was
/// built once per subscriber.
pub struct SharedMessageJson<'a> {
    message: &'a Message,
    /// The people whose addresses the JSON shows: each sees their own.
    shown: Vec<UserId>,
    /// The JSON for viewers who do not (index 0) and do (1) see hidden addresses.
    built: [Option<Value>; 2],
}

impl<'a> SharedMessageJson<'a> {
    pub fn new(message: &'a Message) -> SharedMessageJson<'a> {
        let mut shown = vec![message.sender_id];
        if let Address::Direct { user_ids } = &message.recipient {
            shown.extend(user_ids.iter().copied());
        }
        shown.extend(message.reactions().iter().map(|r| r.user_id));
        SharedMessageJson {
            message,
            shown,
            built: [None, None],
        }
    }

    /// The message as `viewer` sees it, as [`message_json`] writes it.
    pub fn get(&mut self, state: &Projections, site: &Site, viewer: &User) -> Value {
        if self.shown.contains(&viewer.user_id) {
            return message_json(state, site, viewer, self.message, true, false);
        }
        let sight = usize::from(crate::render::users::sees_hidden_emails(state, viewer));
        self.built[sight]
            .get_or_insert_with(|| message_json(state, site, viewer, self.message, true, false))
            .clone()
    }
}

/// A message as `viewer` sees it (without `flags`, which callers add where Zulip has them).
pub fn message_json(
    state: &Projections,
    site: &Site,
    viewer: &User,
    message: &Message,
    apply_markdown: bool,
    allow_empty_topic_name: bool,
) -> Value {
    let sender = state.users.get(message.sender_id);
    let (kind, display_recipient, stream_id) = match &message.recipient {
        Address::Channel { channel_id, .. } => (
            "stream",
            json!(state.channels.get(*channel_id).map(|c| c.name.clone()).unwrap_or_default()),
            Some(channel_id.0),
        ),
        Address::Direct { user_ids } => (
            "private",
            Value::Array(
                user_ids
                    .iter()
                    .filter_map(|id| state.users.get(*id))
                    .map(|u| json!({"id": u.user_id.0, "email": shown_email(state, site, viewer, u), "full_name": u.full_name, "is_mirror_dummy": false}))
                    .collect(),
            ),
            None,
        ),
    };
    let content = if apply_markdown {
        message.rendered_content()
    } else {
        std::borrow::Cow::Borrowed(&*message.content)
    };
    let mut out = json!({
        "id": message.id.0,
        "sender_id": message.sender_id.0,
        "content": &*content,
        "recipient_id": state.messages.recipient_id(message),
        "timestamp": message.timestamp,
        "client": &*message.client,
        "subject": match message.channel() {
            Some(_) => shown_topic(message.topic(), allow_empty_topic_name),
            None => String::new(),
        },
        "topic_links": match message.channel() {
            Some(_) => topic_links_json(state, message.topic()),
            None => json!([]),
        },
        "is_me_message": message.is_me_message,
        "reactions": reactions_json(state, site, viewer, message),
        "submessages": submessages_json(message),
        "sender_full_name": sender.map(|u| u.full_name.clone()).unwrap_or_default(),
        "sender_email": sender.map(|u| shown_email(state, site, viewer, u)).unwrap_or_default(),
        "sender_realm_str": "",
        "display_recipient": display_recipient,
        "type": kind,
        "avatar_url": sender.map(|u| avatar_url(site, u)),
        "content_type": if apply_markdown { "text/html" } else { "text/x-markdown" },
    });
    if let (Some(id), Value::Object(map)) = (stream_id, &mut out) {
        map.insert("stream_id".into(), json!(id));
    }
    if let (Some(extra), Value::Object(map)) = (message.extra.as_deref(), &mut out) {
        if let Some(at) = extra.last_edit_timestamp {
            map.insert("last_edit_timestamp".into(), json!(at));
        }
        if let Some(at) = extra.last_moved_timestamp {
            map.insert("last_moved_timestamp".into(), json!(at));
        }
        let visibility = state.realm.text("message_edit_history_visibility_policy");
        if !extra.edits.is_empty() && visibility != "none" {
            let history = edit_history_json(message, allow_empty_topic_name, visibility == "moves");
            if history.as_array().is_some_and(|h| !h.is_empty()) {
                map.insert("edit_history".into(), history);
            }
        }
    }
    out
}

/// A message's reactions. Each carries the deprecated `user` object too: Zulip dropped it from
/// message objects at feature level 328, but zulip-term 0.7.0 still reads it.
fn reactions_json(state: &Projections, site: &Site, viewer: &User, message: &Message) -> Value {
    message
        .reactions()
        .iter()
        .map(|r| {
            let user = state.users.get(r.user_id);
            json!({
                "emoji_name": r.emoji_name, "emoji_code": r.emoji_code,
                "reaction_type": r.reaction_type.as_str(), "user_id": r.user_id.0,
                "user": {
                    "id": r.user_id.0,
                    "email": user.map(|u| shown_email(state, site, viewer, u)),
                    "full_name": user.map(|u| u.full_name.clone()),
                    "is_mirror_dummy": false,
                },
            })
        })
        .collect()
}

/// One state of a message in its history: topic, channel and content after some edit.
struct Version {
    topic: String,
    channel: Option<ChannelId>,
    content: (std::sync::Arc<str>, std::sync::Arc<str>),
}

/// The message as it was after each edit, oldest first, starting with the original.
fn versions(message: &Message) -> Vec<Version> {
    let mut current = Version {
        topic: message.topic().to_owned(),
        channel: message.channel(),
        content: (message.content.clone(), message.rendered_arc()),
    };
    let mut out = Vec::with_capacity(message.edits().len() + 1);
    for edit in message.edits().iter().rev() {
        let before = Version {
            topic: edit
                .prev_topic
                .clone()
                .unwrap_or_else(|| current.topic.clone()),
            channel: edit.prev_channel.or(current.channel),
            content: edit
                .prev_content
                .clone()
                .unwrap_or_else(|| current.content.clone()),
        };
        out.push(std::mem::replace(&mut current, before));
    }
    out.push(current);
    out.reverse();
    out
}

/// Whether an edit moved the message (topic or channel), as opposed to editing its content
/// only: with the organization's edit history policy "moves", only these are shown.
fn is_move(edit: &crate::projections::messages::EditRecord) -> bool {
    edit.prev_topic.is_some() || edit.prev_channel.is_some()
}

/// The `edit_history` of a message object: newest edit first, each with what it changed
/// (moves only, without content, when `moves_only`).
fn edit_history_json(message: &Message, allow_empty_topic_name: bool, moves_only: bool) -> Value {
    let versions = versions(message);
    let mut entries: Vec<Value> = message
        .edits()
        .iter()
        .zip(versions.iter().skip(1))
        .filter(|(edit, _)| !moves_only || is_move(edit))
        .map(|(edit, after)| {
            let mut entry = json!({"user_id": edit.user_id.0, "timestamp": edit.timestamp});
            if let Some((raw, html)) = edit.prev_content.as_ref().filter(|_| !moves_only) {
                entry["prev_content"] = json!(&**raw);
                entry["prev_rendered_content"] = json!(&**html);
            }
            if let Some(prev) = &edit.prev_topic {
                entry["prev_topic"] = json!(shown_topic(prev, allow_empty_topic_name));
                entry["topic"] = json!(shown_topic(&after.topic, allow_empty_topic_name));
            }
            if let Some(prev) = edit.prev_channel {
                entry["prev_stream"] = json!(prev.0);
                entry["stream"] = json!(after.channel.map(|c| c.0));
            }
            entry
        })
        .collect();
    entries.reverse();
    Value::Array(entries)
}

/// `GET /messages/{id}/history`'s snapshots, oldest first. With `moves_only` (the
/// organization's policy "moves") only moves are listed and every snapshot shows the current
/// content, so no earlier content can be read back.
pub fn message_history_json(
    message: &Message,
    allow_empty_topic_name: bool,
    moves_only: bool,
) -> Vec<Value> {
    let versions = versions(message);
    let current = versions.last().map(|v| &v.content);
    let content = |own: &(std::sync::Arc<str>, std::sync::Arc<str>)| -> (String, String) {
        let (raw, html) = if moves_only {
            current.unwrap_or(own)
        } else {
            own
        };
        (raw.to_string(), html.to_string())
    };
    let mut out = Vec::with_capacity(versions.len());
    let mut budget = crate::html_diff::CELL_BUDGET;
    let (raw, html) = content(&versions[0].content);
    out.push(json!({
        "topic": shown_topic(&versions[0].topic, allow_empty_topic_name),
        "content": raw,
        "rendered_content": html,
        "user_id": message.sender_id.0,
        "timestamp": message.timestamp,
    }));
    for (edit, after) in message.edits().iter().zip(versions.iter().skip(1)) {
        if moves_only && !is_move(edit) {
            continue;
        }
        let (raw, html) = content(&after.content);
        let mut snapshot = json!({
            "topic": shown_topic(&after.topic, allow_empty_topic_name),
            "content": raw,
            "rendered_content": html,
            "user_id": edit.user_id.0,
            "timestamp": edit.timestamp,
        });
        if let Some((raw, html)) = edit.prev_content.as_ref().filter(|_| !moves_only) {
            snapshot["prev_content"] = json!(&**raw);
            snapshot["prev_rendered_content"] = json!(&**html);
            snapshot["content_html_diff"] = json!(crate::html_diff::highlight_differences(
                html,
                &after.content.1,
                &mut budget,
            ));
        }
        if let Some(prev) = &edit.prev_topic {
            snapshot["prev_topic"] = json!(shown_topic(prev, allow_empty_topic_name));
        }
        if let Some(prev) = edit.prev_channel {
            snapshot["prev_stream"] = json!(prev.0);
            snapshot["stream"] = json!(after.channel.map(|c| c.0));
        }
        out.push(snapshot);
    }
    out
}

/// The viewer's flags on a message (`read` and `historical` where they have no copy).
pub fn message_flags(state: &Projections, viewer: UserId, message: MessageId) -> Vec<&'static str> {
    match state.messages.flags(viewer, message) {
        Some(bits) => flag_names(bits, false),
        None => flag_names(flags::READ, true),
    }
}

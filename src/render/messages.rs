//! Messages as clients see them: the message object of `GET /messages` and `message` events,
//! its flags, reactions, submessages, edit history and topic links.

use super::fields::{Fields, JsonBuf};
use super::users::{avatar_url, shown_email};
use super::Site;
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::messages::{flag_names, flags, EMPTY_TOPIC_DISPLAY_NAME};
use crate::projections::Address;
use crate::projections::{Message, Projections, User};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::sync::{Arc, OnceLock};

/// `topic_links` of a topic, with the organization's current linkifiers.
pub fn topic_links_json(state: &Projections, topic: &str) -> Value {
    serde_json::to_value(topic_links(state, topic)).unwrap_or_else(|_| json!([]))
}

/// One of a topic's `topic_links`.
#[derive(Serialize)]
struct TopicLink {
    url: String,
    text: String,
}

fn topic_links(state: &Projections, topic: &str) -> Vec<TopicLink> {
    crate::linkify::topic_links(&state.linkifiers.compiled(), topic)
        .into_iter()
        .map(|(text, url)| TopicLink { url, text })
        .collect()
}

/// The shown topic: the empty topic is "general chat" unless the client handles it.
pub fn shown_topic(topic: &str, allow_empty_topic_name: bool) -> String {
    shown_topic_str(topic, allow_empty_topic_name).to_owned()
}

fn shown_topic_str(topic: &str, allow_empty_topic_name: bool) -> &str {
    if topic.is_empty() && !allow_empty_topic_name {
        EMPTY_TOPIC_DISPLAY_NAME
    } else {
        topic
    }
}

/// One of a message's `submessages`.
#[derive(Serialize)]
struct SubmessageJson<'a> {
    msg_type: &'a str,
    content: &'a str,
    message_id: u64,
    sender_id: u64,
    id: u64,
}

fn submessages(message: &Message) -> Vec<SubmessageJson<'_>> {
    message
        .submessages()
        .iter()
        .map(|sm| SubmessageJson {
            msg_type: &sm.msg_type,
            content: &sm.content,
            message_id: message.id.0,
            sender_id: sm.sender_id.0,
            id: sm.id,
        })
        .collect()
}

/// A message's submessages as Zulip lists them.
pub fn submessages_json(message: &Message) -> Value {
    serde_json::to_value(submessages(message)).unwrap_or_else(|_| json!([]))
}

/// [`message_json`] (with Markdown applied) written as JSON text for many viewers of one
/// message, once for all who see it alike. It depends on the viewer only through the addresses
/// it shows: the sender's, a direct message's people's, the reactors'. Anyone not among those
/// people sees what anyone else does who sees hidden addresses as they do. A message to a
/// channel of hundreds was built once per subscriber.
pub struct SharedMessageJson<'a> {
    message: &'a Message,
    /// The people whose addresses the JSON shows: each sees their own.
    shown: Vec<UserId>,
    /// The text for viewers who do not (index 0) and do (1) see hidden addresses.
    written: [Option<SharedText>; 2],
}

/// A message's JSON text as a viewer sees it, shared by everyone who sees it alike, with room for
/// the same text with the Markdown source in place of the HTML (for clients without
/// `apply_markdown`), written by the first one who wants it and shared as the text is.
#[derive(Debug, Clone)]
pub struct SharedText {
    pub json: Arc<str>,
    pub markdown_json: MarkdownJson,
}

/// A message's Markdown-source text, written when first wanted and shared once written.
pub type MarkdownJson = Arc<OnceLock<Arc<str>>>;

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
            written: [None, None],
        }
    }

    /// The message as `viewer` sees it, as [`message_json`] writes it.
    pub fn get(&mut self, state: &Projections, site: &Site, viewer: &User) -> SharedText {
        let write = || {
            let how = MessageView {
                apply_markdown: true,
                allow_empty_topic_name: false,
            };
            let mut buf = JsonBuf::with_capacity(1024);
            buf.object(|o| write_message(o, state, site, viewer, self.message, how));
            // Plain data with string keys: it always writes.
            let bytes = buf.into_bytes().unwrap_or_default();
            SharedText {
                json: Arc::from(String::from_utf8(bytes).unwrap_or_default()),
                markdown_json: MarkdownJson::default(),
            }
        };
        if self.shown.contains(&viewer.user_id) {
            return write();
        }
        let sight = usize::from(crate::render::users::sees_hidden_emails(state, viewer));
        self.written[sight].get_or_insert_with(write).clone()
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
    let mut out = Map::new();
    let how = MessageView {
        apply_markdown,
        allow_empty_topic_name,
    };
    write_message(&mut out, state, site, viewer, message, how);
    Value::Object(out)
}

/// What a client asked of the message objects it gets.
#[derive(Debug, Clone, Copy)]
pub struct MessageView {
    /// `content` as HTML (else its Markdown source).
    pub apply_markdown: bool,
    /// The empty topic shown as it is (else as "general chat").
    pub allow_empty_topic_name: bool,
}

/// A direct message's participant in `display_recipient`.
#[derive(Serialize)]
struct Participant<'a> {
    id: u64,
    email: String,
    full_name: &'a str,
    is_mirror_dummy: bool,
}

/// One of a message's `reactions`. Each carries the deprecated `user` object too: Zulip
/// dropped it from message objects at feature level 328, but zulip-term 0.7.0 still reads it.
#[derive(Serialize)]
struct ReactionJson<'a> {
    emoji_name: &'a str,
    emoji_code: &'a str,
    reaction_type: &'a str,
    user_id: u64,
    user: Reactor<'a>,
}

#[derive(Serialize)]
struct Reactor<'a> {
    id: u64,
    email: Option<String>,
    full_name: Option<&'a str>,
    is_mirror_dummy: bool,
}

/// The fields of [`message_json`], written into a map or straight into an answer's bytes
/// (`GET /messages` writes pages of them).
pub fn write_message(
    out: &mut impl Fields,
    state: &Projections,
    site: &Site,
    viewer: &User,
    message: &Message,
    how: MessageView,
) {
    let sender = state.users.get(message.sender_id);
    let content = if how.apply_markdown {
        message.rendered_content()
    } else {
        std::borrow::Cow::Borrowed(&*message.content)
    };
    let in_channel = message.channel().is_some();
    out.field("id", &message.id.0);
    out.field("sender_id", &message.sender_id.0);
    out.field("content", &*content);
    out.field("recipient_id", &state.messages.recipient_id(message));
    out.field("timestamp", &message.timestamp);
    out.field("client", &*message.client);
    out.field(
        "subject",
        match in_channel {
            true => shown_topic_str(message.topic(), how.allow_empty_topic_name),
            false => "",
        },
    );
    out.field(
        "topic_links",
        &match in_channel {
            true => topic_links(state, message.topic()),
            false => Vec::new(),
        },
    );
    out.field("is_me_message", &message.is_me_message);
    out.field("reactions", &reactions(state, site, viewer, message));
    out.field("submessages", &submessages(message));
    out.field("sender_full_name", sender.map_or("", |u| &u.full_name));
    out.field(
        "sender_email",
        &sender
            .map(|u| shown_email(state, site, viewer, u))
            .unwrap_or_default(),
    );
    out.field("sender_realm_str", "");
    let (kind, stream_id) = match &message.recipient {
        Address::Channel { channel_id, .. } => {
            let name = state.channels.get(*channel_id).map_or("", |c| &c.name);
            out.field("display_recipient", name);
            ("stream", Some(channel_id.0))
        }
        Address::Direct { user_ids } => {
            let participants: Vec<Participant<'_>> = user_ids
                .iter()
                .filter_map(|id| state.users.get(*id))
                .map(|u| Participant {
                    id: u.user_id.0,
                    email: shown_email(state, site, viewer, u),
                    full_name: &u.full_name,
                    is_mirror_dummy: false,
                })
                .collect();
            out.field("display_recipient", &participants);
            ("private", None)
        }
    };
    out.field("type", kind);
    out.field("avatar_url", &sender.map(|u| avatar_url(site, u)));
    out.field(
        "content_type",
        if how.apply_markdown {
            "text/html"
        } else {
            "text/x-markdown"
        },
    );
    if let Some(id) = stream_id {
        out.field("stream_id", &id);
    }
    if let Some(extra) = message.extra.as_deref() {
        if let Some(at) = extra.last_edit_timestamp {
            out.field("last_edit_timestamp", &at);
        }
        if let Some(at) = extra.last_moved_timestamp {
            out.field("last_moved_timestamp", &at);
        }
        let visibility = state.realm.text("message_edit_history_visibility_policy");
        if !extra.edits.is_empty() && visibility != "none" {
            let history =
                edit_history_json(message, how.allow_empty_topic_name, visibility == "moves");
            if history.as_array().is_some_and(|h| !h.is_empty()) {
                out.field("edit_history", &history);
            }
        }
    }
}

fn reactions<'a>(
    state: &'a Projections,
    site: &Site,
    viewer: &User,
    message: &'a Message,
) -> Vec<ReactionJson<'a>> {
    message
        .reactions()
        .iter()
        .map(|r| {
            let user = state.users.get(r.user_id);
            ReactionJson {
                emoji_name: &r.emoji_name,
                emoji_code: &r.emoji_code,
                reaction_type: r.reaction_type.as_str(),
                user_id: r.user_id.0,
                user: Reactor {
                    id: r.user_id.0,
                    email: user.map(|u| shown_email(state, site, viewer, u)),
                    full_name: user.map(|u| u.full_name.as_str()),
                    is_mirror_dummy: false,
                },
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::edit::{edit_message, EditRequest};
    use crate::commands::reactions::{add_reaction, EmojiRequest};
    use crate::commands::testing::{Given, OWNER};
    use crate::events::{PropagateMode, Role};

    /// `GET /messages` writes message objects straight to bytes; events and single messages
    /// build them as maps. Both must be the same text, key order included.
    #[test]
    fn a_message_written_to_bytes_is_its_map_written_out() {
        let mut given = Given::org();
        let a = given.user("a@example.com", Role::Member);
        let channel = given.channel("design", &[OWNER, a]);
        let edited = given.message(a, channel, "", "first **draft** <b>");
        given.ok(OWNER, |s, c| {
            let thumbs = EmojiRequest {
                emoji_name: Some("thumbs_up".into()),
                emoji_code: None,
                reaction_type: None,
            };
            add_reaction(s, c, edited, thumbs)
        });
        given.ok(a, |s, c| {
            let request = EditRequest {
                content: Some("second draft".into()),
                topic: Some("plans".into()),
                channel_id: None,
                propagate_mode: PropagateMode::ChangeOne,
                notify_old_thread: false,
                notify_new_thread: false,
                realm_url: "http://example.com".into(),
            };
            edit_message(s, c, edited, request)
        });
        let direct = given.direct(OWNER, &[a], "hello \"a\"");
        let site = Site {
            realm_url: "http://example.com".into(),
            ..Site::default()
        };
        let state = &given.state;
        let mut compared = 0;
        for viewer in [OWNER, a] {
            let viewer = state.users.get(viewer).unwrap();
            for id in [edited, direct] {
                let message = state.messages.get(id).unwrap();
                for apply_markdown in [true, false] {
                    for allow_empty_topic_name in [true, false] {
                        let how = MessageView {
                            apply_markdown,
                            allow_empty_topic_name,
                        };
                        let map = message_json(
                            state,
                            &site,
                            viewer,
                            message,
                            how.apply_markdown,
                            how.allow_empty_topic_name,
                        );
                        let mut bytes = JsonBuf::default();
                        bytes.object(|o| write_message(o, state, &site, viewer, message, how));
                        let text = String::from_utf8(bytes.into_bytes().unwrap()).unwrap();
                        assert_eq!(text, serde_json::to_string(&map).unwrap());
                        compared += 1;
                    }
                }
            }
        }
        assert_eq!(compared, 16);
        // What the comparison covered: a reaction with its reactor, an edit history, a
        // direct message's participants.
        let owner = state.users.get(OWNER).unwrap();
        let json = message_json(
            state,
            &site,
            owner,
            state.messages.get(edited).unwrap(),
            true,
            false,
        );
        assert_eq!(json["reactions"][0]["user"]["id"], json!(OWNER.0));
        assert_eq!(
            json["edit_history"][0]["prev_topic"],
            json!(EMPTY_TOPIC_DISPLAY_NAME)
        );
        assert_eq!(json["subject"], json!("plans"));
        let json = message_json(
            state,
            &site,
            owner,
            state.messages.get(direct).unwrap(),
            true,
            false,
        );
        assert_eq!(json["display_recipient"].as_array().map(Vec::len), Some(2));
        assert_eq!(json["type"], json!("private"));
    }
}

//! Messages: `POST /messages`, `GET /messages/{message_id}`, `GET /messages`,
//! `POST /messages/flags`, `POST /mark_topic_as_read`, and the Message object.

use super::subscriptions::{topic_param, EMPTY_TOPIC_DISPLAY_NAME};
use super::users::{avatar_url, email_visible, placeholder_email};
use super::{path_id, AppState, Auth, Params, Site};
use crate::commands::messages::{
    can_read, readable, ChannelRef, Destination, EditRequest, EmojiRequest,
};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{MessageFlag, PropagateMode, Recipient};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::messages::{flag_names, flags};
use crate::projections::user_topics::topic_key;
use crate::projections::{Message, Projections, User};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Zulip's `MAX_MESSAGES_PER_FETCH`.
pub const MAX_MESSAGES_PER_FETCH: u64 = 5000;
/// What Zulip answers as the anchor for `newest`.
pub const LARGER_THAN_MAX_MESSAGE_ID: u64 = 10_000_000_000_000_000;

/// The email `viewer` sees for `user`: real when visible, else the placeholder.
pub fn shown_email(state: &Projections, site: &Site, viewer: &User, user: &User) -> String {
    if email_visible(state, viewer, user) {
        user.email.clone()
    } else {
        placeholder_email(site, user)
    }
}

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
        Recipient::Channel { channel_id, .. } => (
            "stream",
            json!(state.channels.get(*channel_id).map(|c| c.name.clone()).unwrap_or_default()),
            Some(channel_id.0),
        ),
        Recipient::Direct { user_ids } => (
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
    let mut out = json!({
        "id": message.id.0,
        "sender_id": message.sender_id.0,
        "content": if apply_markdown { &*message.rendered_content } else { &*message.content },
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
        content: (message.content.clone(), message.rendered_content.clone()),
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

fn parse_destination(state: &Projections, params: &mut Params) -> ApiResult<Destination> {
    let kind = params.required_str("type")?;
    let to = params.required_str("to")?;
    match kind.as_str() {
        "stream" | "channel" => {
            let topic = match (params.str("topic"), params.str("subject")) {
                (Some(topic), _) | (None, Some(topic)) => topic_param(&topic),
                (None, None) => return Err(ApiError::missing("topic")),
            };
            let channel = match serde_json::from_str::<Value>(&to) {
                Ok(Value::Number(n)) => ChannelRef::Id(ChannelId(
                    n.as_u64().ok_or_else(|| ApiError::invalid("to", &to))?,
                )),
                Ok(Value::String(name)) => ChannelRef::Name(name),
                Ok(Value::Array(items)) if items.len() == 1 => match &items[0] {
                    Value::Number(n) => ChannelRef::Id(ChannelId(
                        n.as_u64().ok_or_else(|| ApiError::invalid("to", &to))?,
                    )),
                    Value::String(name) => ChannelRef::Name(name.clone()),
                    _ => return Err(ApiError::invalid("to", &to)),
                },
                _ => ChannelRef::Name(to.clone()),
            };
            Ok(Destination::Channel { channel, topic })
        }
        "private" | "direct" => {
            let entries: Vec<Value> = match serde_json::from_str::<Value>(&to) {
                Ok(Value::Array(items)) => items,
                Ok(Value::Number(n)) => vec![Value::Number(n)],
                _ => to
                    .split(',')
                    .map(|e| Value::String(e.trim().to_owned()))
                    .filter(|v| v != "")
                    .collect(),
            };
            let mut user_ids = Vec::new();
            for entry in entries {
                match entry {
                    Value::Number(n) => user_ids.push(UserId(
                        n.as_u64().ok_or_else(|| ApiError::invalid("to", &to))?,
                    )),
                    Value::String(email) => {
                        let user = state
                            .users
                            .by_email(&email)
                            .or_else(|| {
                                // Placeholder addresses (`user{id}@…`) name users too.
                                email
                                    .strip_prefix("user")
                                    .and_then(|r| r.split('@').next())
                                    .and_then(|n| n.parse::<u64>().ok())
                                    .and_then(|id| state.users.get(UserId(id)))
                            })
                            .ok_or_else(|| {
                                ApiError::bad_request(format!("Invalid email '{email}'"))
                            })?;
                        user_ids.push(user.user_id);
                    }
                    _ => return Err(ApiError::invalid("to", &to)),
                }
            }
            Ok(Destination::Direct { user_ids })
        }
        other => Err(ApiError::invalid("type", other)),
    }
}

/// `POST /messages`.
pub async fn send_message(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let destination = state.engine.read(|s| parse_destination(s, &mut params))?;
    let content = params.required_str("content")?;
    let client = req
        .headers()
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split('/').next())
        .filter(|c| !c.is_empty())
        .unwrap_or("API")
        .chars()
        .take(30)
        .collect::<String>();
    // Zulip echoes `local_id` to the sending queue, and only there.
    let sender_queue = match (params.str("queue_id"), params.str("local_id")) {
        (Some(queue_id), Some(local_id)) => Some(crate::events::SenderQueue { queue_id, local_id }),
        _ => None,
    };
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::messages::send_message(
                s,
                ctx,
                destination,
                &content,
                &client,
                sender_queue,
            )
        })
        .await?;
    Ok(params.success(json!({"id": committed.value.0})))
}

/// `GET /messages/{message_id}`.
pub async fn get_message(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = MessageId(
        path_id(&req, "message_id").map_err(|_| ApiError::bad_request("Invalid message(s)"))?,
    );
    let apply_markdown = params.bool("apply_markdown")?.unwrap_or(true);
    let allow_empty = params.bool("allow_empty_topic_name")?.unwrap_or(false);
    let body = state.engine.read(|s| {
        let me = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("user missing"))?;
        let message = readable(s, me, id)?;
        let mut json = message_json(s, &state.site, me, message, apply_markdown, allow_empty);
        json["flags"] = json!(message_flags(s, me.user_id, id));
        Ok::<_, ApiError>(json!({"message": json, "raw_content": &*message.content}))
    })?;
    Ok(params.success(body))
}

/// One narrow term.
#[derive(Debug, Clone)]
pub struct Term {
    operator: String,
    operand: Value,
    negated: bool,
}

/// A narrow in either form (`[["channel", "x"]]` or `[{"operator": ..., "operand": ...}]`).
pub fn parse_narrow(raw: Option<Value>) -> ApiResult<Vec<Term>> {
    let items = match raw {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(ApiError::bad_request("narrow is not a list").with("var_name", "narrow"))
        }
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::Array(pair) if pair.len() == 2 => Ok(Term {
                operator: pair[0].as_str().unwrap_or_default().to_owned(),
                operand: pair[1].clone(),
                negated: false,
            }),
            Value::Object(map) => Ok(Term {
                operator: map
                    .get("operator")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                operand: map.get("operand").cloned().unwrap_or(Value::Null),
                negated: map.get("negated").and_then(Value::as_bool).unwrap_or(false),
            }),
            _ => Err(ApiError::new(
                ErrorCode::BadNarrow,
                "Invalid narrow operator: malformed term",
            )
            .with("desc", "malformed term")),
        })
        .collect()
}

fn bad_narrow(desc: &str) -> ApiError {
    ApiError::new(
        ErrorCode::BadNarrow,
        format!("Invalid narrow operator: {desc}"),
    )
    .with("desc", desc)
}

/// A compiled narrow: where candidates come from, and a predicate over them.
/// The index a narrow walks.
enum Source<'a> {
    /// A channel's, a topic's or a conversation's messages.
    Set(&'a BTreeSet<MessageId>),
    /// The messages in every one of the word index's lists for a search (shortest first),
    /// within a set when the narrow also names one.
    Words {
        lists: Vec<&'a [MessageId]>,
        within: Option<&'a BTreeSet<MessageId>>,
    },
}

struct Narrow<'a> {
    state: &'a Projections,
    me: &'a User,
    /// What the narrow walks; `None`: the user's own copies.
    source: Option<Source<'a>>,
    use_received: bool,
    /// A search walked the word index instead of the user's copies: only messages the user
    /// holds a copy of count.
    require_copy: bool,
    terms: Vec<Term>,
    /// Each `search:` operand with its words, split once.
    search_words: Vec<(String, Vec<String>)>,
}

/// The words of every `search:` operand of a narrow (`BAD_NARROW` for an overlong one).
fn search_words(terms: &[Term]) -> ApiResult<Vec<(String, Vec<String>)>> {
    use crate::projections::search::{words, MAX_QUERY_CHARS};
    terms
        .iter()
        .filter(|t| t.operator == "search")
        .map(|t| {
            let operand = t.operand.as_str().unwrap_or_default();
            if operand.chars().count() > MAX_QUERY_CHARS {
                return Err(bad_narrow("search operand too long"));
            }
            Ok((operand.to_owned(), words(operand)))
        })
        .collect()
}

fn user_by_operand(state: &Projections, operand: &Value) -> Option<UserId> {
    match operand {
        Value::Number(n) => n
            .as_u64()
            .map(UserId)
            .filter(|id| state.users.get(*id).is_some()),
        Value::String(email) => state.users.by_email(email).map(|u| u.user_id).or_else(|| {
            email
                .strip_prefix("user")
                .and_then(|r| r.split('@').next())
                .and_then(|n| n.parse().ok())
                .map(UserId)
        }),
        _ => None,
    }
}

fn users_by_operand(state: &Projections, operand: &Value) -> Option<Vec<UserId>> {
    match operand {
        Value::Array(items) => items.iter().map(|v| user_by_operand(state, v)).collect(),
        Value::String(text) => text
            .split(',')
            .map(|e| user_by_operand(state, &json!(e.trim())))
            .collect(),
        Value::Number(_) => user_by_operand(state, operand).map(|u| vec![u]),
        _ => None,
    }
}

impl<'a> Narrow<'a> {
    fn compile(state: &'a Projections, me: &'a User, terms: Vec<Term>) -> ApiResult<Narrow<'a>> {
        let mut narrow = Narrow {
            state,
            me,
            source: None,
            use_received: true,
            require_copy: false,
            terms: Vec::new(),
            search_words: search_words(&terms)?,
        };
        let channel_of = |operand: &Value| -> Option<ChannelId> {
            match operand {
                Value::Number(n) => n
                    .as_u64()
                    .map(ChannelId)
                    .filter(|id| state.channels.get(*id).is_some()),
                Value::String(name) => state.channels.by_name(name).map(|c| c.id),
                _ => None,
            }
        };
        let mut channel = None;
        for term in &terms {
            match term.operator.as_str() {
                "channel" | "stream" => {
                    let id =
                        channel_of(&term.operand).ok_or_else(|| bad_narrow("unknown channel"))?;
                    if !term.negated {
                        channel = Some(id);
                    }
                }
                // As Zulip: an unknown user or a malformed id is an error, not an empty page.
                "sender" | "dm-including" | "group-pm-with" => {
                    if user_by_operand(state, &term.operand).is_none() {
                        let shown = match &term.operand {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        };
                        return Err(bad_narrow(&format!("unknown user {shown}")));
                    }
                }
                "id" => {
                    let numeric = term.operand.as_u64().is_some()
                        || term.operand.as_str().is_some_and(|s| {
                            !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
                        });
                    if !numeric {
                        return Err(bad_narrow("Invalid message ID"));
                    }
                }
                "topic" | "subject" | "dm" | "pm-with" | "is" | "search" | "near" | "has"
                | "channels" | "streams" | "with" => {}
                other => return Err(bad_narrow(other)),
            }
        }
        if let Some(id) = channel {
            narrow.use_received = false;
            let topic = terms
                .iter()
                .find(|t| matches!(t.operator.as_str(), "topic" | "subject") && !t.negated)
                .and_then(|t| t.operand.as_str());
            let set = match topic {
                Some(topic) => state.messages.in_topic(id, &topic_param(topic)),
                None => state.messages.in_channel(id),
            };
            narrow.source = Some(Source::Set(set.unwrap_or(empty_set())));
        }
        if let Some(term) = terms
            .iter()
            .find(|t| matches!(t.operator.as_str(), "dm" | "pm-with") && !t.negated)
        {
            let mut users =
                users_by_operand(state, &term.operand).ok_or_else(|| bad_narrow("invalid user"))?;
            users.push(me.user_id);
            users.sort();
            users.dedup();
            narrow.use_received = false;
            narrow.source = Some(Source::Set(
                state
                    .messages
                    .in_conversation(&users)
                    .unwrap_or(empty_set()),
            ));
        }
        // A search walks the word index's answer (within the source above, if any).
        let query = terms
            .iter()
            .find(|t| t.operator == "search" && !t.negated)
            .and_then(|t| t.operand.as_str());
        if let Some(lists) = query.and_then(|q| state.messages.search_lists(q)) {
            let within = match narrow.source.take() {
                Some(Source::Set(set)) => Some(set),
                _ => None,
            };
            narrow.require_copy = narrow.use_received;
            narrow.source = Some(Source::Words { lists, within });
        }
        narrow.terms = terms;
        Ok(narrow)
    }

    fn matches_term(&self, message: &Message, term: &Term) -> bool {
        let state = self.state;
        let bits = state.messages.flags(self.me.user_id, message.id);
        match term.operator.as_str() {
            "channel" | "stream" => match &term.operand {
                Value::Number(n) => message.channel().is_some_and(|c| Some(c.0) == n.as_u64()),
                Value::String(name) => message
                    .channel()
                    .and_then(|c| state.channels.get(c))
                    .is_some_and(|c| c.name.to_lowercase() == name.to_lowercase()),
                _ => false,
            },
            "topic" | "subject" => {
                message.channel().is_some()
                    && topic_key(message.topic())
                        == topic_key(&topic_param(term.operand.as_str().unwrap_or_default()))
            }
            "sender" => user_by_operand(state, &term.operand) == Some(message.sender_id),
            "dm" | "pm-with" => {
                match (&message.recipient, users_by_operand(state, &term.operand)) {
                    (Recipient::Direct { user_ids }, Some(mut users)) => {
                        users.push(self.me.user_id);
                        users.sort();
                        users.dedup();
                        *user_ids == users
                    }
                    _ => false,
                }
            }
            "dm-including" | "group-pm-with" => {
                match (&message.recipient, user_by_operand(state, &term.operand)) {
                    (Recipient::Direct { user_ids }, Some(user)) => user_ids.contains(&user),
                    _ => false,
                }
            }
            "is" => match term.operand.as_str().unwrap_or_default() {
                "dm" | "private" => matches!(message.recipient, Recipient::Direct { .. }),
                "starred" => bits.is_some_and(|b| b & flags::STARRED != 0),
                "mentioned" | "alerted" => bits.is_some_and(|b| {
                    b & (flags::MENTIONED | flags::STREAM_WILDCARD | flags::TOPIC_WILDCARD) != 0
                }),
                "unread" => bits.is_some_and(|b| b & flags::READ == 0),
                "resolved" => message.topic().starts_with("✔ "),
                "followed" => message.channel().is_some_and(|c| {
                    state
                        .user_topics
                        .policy(self.me.user_id, c, message.topic())
                        == 3
                }),
                "muted" => message.channel().is_some_and(|c| {
                    state
                        .user_topics
                        .policy(self.me.user_id, c, message.topic())
                        == 1
                        || state
                            .channels
                            .subscription(self.me.user_id, c)
                            .is_some_and(|s| s.is_muted)
                }),
                _ => false,
            },
            "search" => {
                let operand = term.operand.as_str().unwrap_or_default();
                match self.search_words.iter().find(|(o, _)| o == operand) {
                    Some((_, wanted)) => crate::projections::search::has_words(
                        wanted,
                        message.topic(),
                        &message.content,
                    ),
                    None => crate::projections::search::text_matches(
                        operand,
                        message.topic(),
                        &message.content,
                    ),
                }
            }
            "id" => {
                term.operand
                    .as_u64()
                    .or_else(|| term.operand.as_str().and_then(|s| s.parse().ok()))
                    == Some(message.id.0)
            }
            "has" => match term.operand.as_str().unwrap_or_default() {
                "link" => message.rendered_content.contains("<a href"),
                "reaction" => !message.reactions().is_empty(),
                "image" | "attachment" => false,
                _ => false,
            },
            "channels" | "streams" => message
                .channel()
                .and_then(|c| state.channels.get(c))
                .is_some_and(|c| !c.invite_only),
            // `near` and `with` only move the anchor or the view; they do not filter.
            _ => true,
        }
    }

    fn matches(&self, id: MessageId) -> bool {
        let Some(message) = self.state.messages.get(id) else {
            return false;
        };
        if self.require_copy && self.state.messages.flags(self.me.user_id, id).is_none() {
            return false;
        }
        can_read(self.state, self.me, message)
            && self
                .terms
                .iter()
                .all(|t| self.matches_term(message, t) != t.negated)
    }

    /// Candidate ids in ascending order, as a set to take ranges of.
    fn candidates(&self) -> Box<dyn DoubleEndedIterator<Item = MessageId> + '_> {
        match &self.source {
            Some(Source::Set(set)) => Box::new(set.iter().copied()),
            // A small channel, topic or conversation is walked itself, each id looked up in
            // the word lists; otherwise the rarest word's list is walked.
            Some(Source::Words {
                lists,
                within: Some(set),
            }) if lists.first().is_some_and(|l| set.len() < l.len()) => {
                let lists = lists.clone();
                Box::new(
                    set.iter()
                        .copied()
                        .filter(move |id| lists.iter().all(|l| l.binary_search(id).is_ok())),
                )
            }
            Some(Source::Words { lists, within }) => {
                let within = *within;
                Box::new(
                    crate::projections::search::intersect(lists.clone())
                        .filter(move |id| within.is_none_or(|set| set.contains(id))),
                )
            }
            None if self.use_received => Box::new(
                self.state
                    .messages
                    .received(self.me.user_id)
                    .into_iter()
                    .flat_map(|m| m.keys().copied()),
            ),
            None => Box::new(std::iter::empty()),
        }
    }
}

/// Checks a narrow's operators (Zulip's `BAD_NARROW` for unknown ones or unknown channels).
pub fn check_narrow(state: &Projections, viewer: &User, terms: &[Term]) -> ApiResult<()> {
    Narrow::compile(state, viewer, terms.to_vec()).map(|_| ())
}

/// Whether `viewer` may read `message` and it matches every term of a narrow: which message
/// events a queue registered with that narrow receives.
pub fn narrow_matches(
    state: &Projections,
    viewer: &User,
    terms: &[Term],
    message: &Message,
) -> bool {
    let narrow = Narrow {
        state,
        me: viewer,
        source: None,
        use_received: true,
        require_copy: false,
        terms: Vec::new(),
        search_words: search_words(terms).unwrap_or_default(),
    };
    can_read(state, viewer, message)
        && terms
            .iter()
            .all(|t| narrow.matches_term(message, t) != t.negated)
}

fn empty_set() -> &'static BTreeSet<MessageId> {
    static EMPTY: std::sync::OnceLock<BTreeSet<MessageId>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(BTreeSet::new)
}

/// Where a range of a narrow starts and how far it goes (`anchor`, `num_before`, ...).
#[derive(Debug, Clone)]
struct WindowRequest {
    anchor: Option<String>,
    use_first_unread: bool,
    include_anchor: bool,
    num_before: u64,
    num_after: u64,
}

impl WindowRequest {
    /// Reads the range parameters; `num_before`/`num_after` only when `counted` (they are
    /// not taken with `message_ids`).
    fn parse(params: &mut Params, counted: bool) -> ApiResult<WindowRequest> {
        let anchor = params.str("anchor");
        let use_first_unread = params.bool("use_first_unread_anchor")?.unwrap_or(false);
        let include_anchor = params.bool("include_anchor")?.unwrap_or(true);
        let (num_before, num_after) = if counted {
            (
                params.required_int::<u64>("num_before")?,
                params.required_int::<u64>("num_after")?,
            )
        } else {
            (0, 0)
        };
        if num_before.saturating_add(num_after) > MAX_MESSAGES_PER_FETCH {
            return Err(ApiError::bad_request(format!(
                "Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH})."
            )));
        }
        Ok(WindowRequest {
            anchor,
            use_first_unread,
            include_anchor,
            num_before,
            num_after,
        })
    }
}

/// The messages of a narrow around an anchor, in id order.
struct Window {
    anchor: u64,
    found_anchor: bool,
    found_oldest: bool,
    found_newest: bool,
    ids: Vec<MessageId>,
}

impl Window {
    fn compute(
        s: &Projections,
        me: &User,
        narrow: &Narrow<'_>,
        request: &WindowRequest,
    ) -> ApiResult<Window> {
        let anchor_text = request
            .anchor
            .as_deref()
            .map(|a| a.trim().trim_matches('"').to_owned());
        let first_unread = || {
            narrow.candidates().find(|id| {
                narrow.matches(*id)
                    && s.messages
                        .flags(me.user_id, *id)
                        .is_some_and(|b| b & flags::READ == 0)
            })
        };
        let newest_anchor = (LARGER_THAN_MAX_MESSAGE_ID, true, false);
        let (anchor, newest, oldest) = match anchor_text.as_deref() {
            Some("newest") => newest_anchor,
            Some("oldest") => (0, false, true),
            Some("first_unread") => first_unread().map_or(newest_anchor, |id| (id.0, false, false)),
            None if request.use_first_unread => {
                first_unread().map_or(newest_anchor, |id| (id.0, false, false))
            }
            None => return Err(ApiError::missing("anchor")),
            Some(n) => {
                let id = n
                    .parse::<u64>()
                    .map_err(|_| ApiError::invalid("anchor", n))?;
                if request.use_first_unread {
                    first_unread().map_or(newest_anchor, |first| (first.0, false, false))
                } else {
                    (id, false, false)
                }
            }
        };
        let anchor_id = MessageId(anchor);
        let mut before: Vec<MessageId> = narrow
            .candidates()
            .rev()
            .filter(|id| *id < anchor_id)
            .filter(|id| narrow.matches(*id))
            .take(request.num_before as usize)
            .collect();
        before.reverse();
        let found_anchor = request.include_anchor && narrow.matches(anchor_id);
        let after: Vec<MessageId> = narrow
            .candidates()
            .filter(|id| *id > anchor_id)
            .filter(|id| narrow.matches(*id))
            .take(request.num_after as usize)
            .collect();
        let found_oldest = oldest || (before.len() as u64) < request.num_before;
        let found_newest = newest || (after.len() as u64) < request.num_after;
        let mut ids = before;
        if found_anchor {
            ids.push(anchor_id);
        }
        ids.extend(after);
        Ok(Window {
            anchor,
            found_anchor,
            found_oldest,
            found_newest,
            ids,
        })
    }
}

/// `GET /messages`.
pub async fn get_messages(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let narrow_raw: Option<Value> = params.json("narrow")?;
    let message_ids: Option<Vec<u64>> = params.json("message_ids")?;
    let apply_markdown = params.bool("apply_markdown")?.unwrap_or(true);
    let allow_empty = params.bool("allow_empty_topic_name")?.unwrap_or(false);
    let _client_gravatar = params.bool("client_gravatar")?;
    let request = WindowRequest::parse(&mut params, message_ids.is_none())?;
    let terms = parse_narrow(narrow_raw)?;
    let body = state.engine.read(|s| {
        let me = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("user missing"))?;
        let narrow = Narrow::compile(s, me, terms)?;
        let render = |id: MessageId| {
            s.messages.get(id).map(|m| {
                let mut json = message_json(s, &state.site, me, m, apply_markdown, allow_empty);
                json["flags"] = json!(message_flags(s, me.user_id, id));
                json
            })
        };
        if let Some(ids) = message_ids {
            let messages: Vec<Value> = ids
                .into_iter()
                .map(MessageId)
                .filter(|id| narrow.matches(*id))
                .filter_map(render)
                .collect();
            return Ok::<_, ApiError>(json!({"messages": messages, "history_limited": false}));
        }
        let window = Window::compute(s, me, &narrow, &request)?;
        let messages: Vec<Value> = window.ids.iter().copied().filter_map(render).collect();
        Ok(json!({
            "anchor": window.anchor,
            "found_anchor": window.found_anchor,
            "found_oldest": window.found_oldest,
            "found_newest": window.found_newest,
            "history_limited": false,
            "messages": messages,
        }))
    })?;
    Ok(params.success(body))
}

fn parse_flag(name: &str) -> ApiResult<MessageFlag> {
    match name {
        "read" => Ok(MessageFlag::Read),
        "starred" => Ok(MessageFlag::Starred),
        "collapsed" => Ok(MessageFlag::Collapsed),
        "mentioned"
        | "stream_wildcard_mentioned"
        | "topic_wildcard_mentioned"
        | "wildcard_mentioned"
        | "has_alert_word"
        | "historical" => Err(ApiError::bad_request(format!(
            "Flag not editable: '{name}'"
        ))),
        other => Err(ApiError::bad_request(format!("Invalid flag: '{other}'"))),
    }
}

/// `POST /messages/flags`.
pub async fn update_message_flags(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let ids: Vec<u64> = params
        .json("messages")?
        .ok_or_else(|| ApiError::missing("messages"))?;
    let op = params.required_str("op")?;
    let flag = parse_flag(&params.required_str("flag")?)?;
    let add = match op.as_str() {
        "add" => true,
        "remove" => false,
        other => {
            return Err(ApiError::bad_request(format!(
                "Invalid message flag operation: '{other}'"
            )))
        }
    };
    let requested: Vec<MessageId> = ids.into_iter().map(MessageId).collect();
    let echo: Vec<u64> = requested.iter().map(|m| m.0).collect();
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::messages::update_flags(s, ctx, requested, flag, add)
        })
        .await?;
    Ok(params.success(json!({"messages": echo, "ignored_because_not_subscribed_channels": []})))
}

/// `POST /mark_topic_as_read` (deprecated).
pub async fn mark_topic_as_read(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let channel = ChannelId(params.required_int::<u64>("stream_id")?);
    let topic = topic_param(&params.required_str("topic_name")?);
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            let me = crate::commands::actor(s, ctx)?;
            let visible = s.channels.get(channel).filter(|c| {
                crate::commands::channels::access(s, me, c)
                    == crate::commands::channels::Access::Content
            });
            if visible.is_none() {
                return Err(ApiError::bad_request("Invalid channel ID"));
            }
            let unread: Vec<MessageId> = s
                .messages
                .in_topic(channel, &topic)
                .into_iter()
                .flatten()
                .copied()
                .filter(|id| {
                    s.messages
                        .flags(me.user_id, *id)
                        .is_some_and(|b| b & flags::READ == 0)
                })
                .collect();
            crate::commands::messages::update_flags(s, ctx, unread, MessageFlag::Read, true)
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `POST /typing`.
pub async fn set_typing_status(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    use crate::events::TypingTarget;
    let kind = params.str("type").unwrap_or_else(|| "direct".into());
    let op = params.required_str("op")?;
    let start = match op.as_str() {
        "start" => true,
        "stop" => false,
        other => return Err(ApiError::invalid("op", other)),
    };
    let target = match kind.as_str() {
        "direct" => {
            let to: Vec<u64> = params.json("to")?.ok_or_else(|| ApiError::missing("to"))?;
            TypingTarget::Direct {
                user_ids: to.into_iter().map(UserId).collect(),
            }
        }
        "stream" | "channel" => {
            let channel_id = params
                .int::<u64>("stream_id")?
                .ok_or_else(|| ApiError::bad_request("Missing 'stream_id' argument"))?;
            let topic = params
                .str("topic")
                .ok_or_else(|| ApiError::bad_request("Missing topic"))?;
            TypingTarget::Channel {
                channel_id: ChannelId(channel_id),
                topic: topic_param(&topic),
            }
        }
        other => return Err(ApiError::invalid("type", other)),
    };
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::messages::set_typing(s, ctx, target, start)
        })
        .await?;
    Ok(params.success(json!({})))
}

fn message_id_param(req: &HttpRequest) -> ApiResult<MessageId> {
    path_id(req, "message_id")
        .map(MessageId)
        .map_err(|_| ApiError::bad_request("Invalid message(s)"))
}

fn emoji_request(params: &mut Params) -> EmojiRequest {
    EmojiRequest {
        emoji_name: params.str("emoji_name"),
        emoji_code: params.str("emoji_code"),
        reaction_type: params.str("reaction_type"),
    }
}

/// `POST /messages/{message_id}/reactions`.
pub async fn add_reaction(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = message_id_param(&req)?;
    let emoji = emoji_request(&mut params);
    if emoji.emoji_name.is_none() {
        return Err(ApiError::missing("emoji_name"));
    }
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::messages::add_reaction(s, ctx, id, emoji)
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `DELETE /messages/{message_id}/reactions`.
pub async fn remove_reaction(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = message_id_param(&req)?;
    let emoji = emoji_request(&mut params);
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::messages::remove_reaction(s, ctx, id, emoji)
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `PATCH /messages/{message_id}`.
pub async fn update_message(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = message_id_param(&req)?;
    let propagate_mode = match params.str("propagate_mode").as_deref() {
        None | Some("change_one") => PropagateMode::ChangeOne,
        Some("change_later") => PropagateMode::ChangeLater,
        Some("change_all") => PropagateMode::ChangeAll,
        Some(other) => return Err(ApiError::invalid("propagate_mode", other)),
    };
    let topic = match (params.str("topic"), params.str("subject")) {
        (Some(topic), _) | (None, Some(topic)) => Some(topic_param(&topic)),
        (None, None) => None,
    };
    let request = EditRequest {
        content: params.str("content"),
        topic,
        channel_id: params.int::<u64>("stream_id")?.map(ChannelId),
        propagate_mode,
        notify_old_thread: params
            .bool("send_notification_to_old_thread")?
            .unwrap_or(false),
        notify_new_thread: params
            .bool("send_notification_to_new_thread")?
            .unwrap_or(true),
        realm_url: state.site.realm_url.clone(),
    };
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::messages::edit_message(s, ctx, id, request)
        })
        .await?;
    Ok(params.success(json!({"detached_uploads": []})))
}

/// `DELETE /messages/{message_id}`.
pub async fn delete_message(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = message_id_param(&req)?;
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::messages::delete_message(s, ctx, id)
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `GET /messages/{message_id}/history`.
pub async fn get_message_history(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = message_id_param(&req)?;
    let allow_empty = params.bool("allow_empty_topic_name")?.unwrap_or(false);
    let history = state.engine.read(|s| {
        let me = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("user missing"))?;
        let message = readable(s, me, id)?;
        let visibility = s.realm.text("message_edit_history_visibility_policy");
        if visibility == "none" {
            return Err(ApiError::bad_request(
                "Message edit history is disabled in this organization",
            ));
        }
        Ok::<_, ApiError>(message_history_json(
            message,
            allow_empty,
            visibility == "moves",
        ))
    })?;
    Ok(params.success(json!({"message_history": history})))
}

/// Marks as read every unread copy of `me` that `filter` keeps.
async fn mark_read_where(
    state: &AppState,
    user: UserId,
    check: impl FnOnce(&Projections, &User) -> ApiResult<()> + Send + 'static,
    filter: impl Fn(&Message) -> bool + Send + 'static,
) -> ApiResult<()> {
    state
        .engine
        .execute(Some(user), move |s, ctx| {
            let me = crate::commands::actor(s, ctx)?;
            check(s, me)?;
            let unread: Vec<MessageId> = s
                .messages
                .received(me.user_id)
                .into_iter()
                .flatten()
                .filter(|(_, bits)| *bits & flags::READ == 0)
                .map(|(id, _)| *id)
                .filter(|id| s.messages.get(*id).is_some_and(&filter))
                .collect();
            crate::commands::messages::update_flags(s, ctx, unread, MessageFlag::Read, true)
        })
        .await?;
    Ok(())
}

/// `POST /mark_stream_as_read` (deprecated).
pub async fn mark_stream_as_read(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let channel = ChannelId(params.required_int::<u64>("stream_id")?);
    mark_read_where(
        &state,
        auth.user_id,
        move |s, me| {
            s.channels
                .get(channel)
                .filter(|c| {
                    crate::commands::channels::access(s, me, c)
                        == crate::commands::channels::Access::Content
                })
                .map(|_| ())
                .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))
        },
        move |m| m.channel() == Some(channel),
    )
    .await?;
    Ok(params.success(json!({})))
}

/// `POST /mark_all_as_read` (deprecated): always completes in one request here.
pub async fn mark_all_as_read(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    mark_read_where(&state, auth.user_id, |_, _| Ok(()), |_| true).await?;
    Ok(params.success(json!({"complete": true})))
}

/// `POST /messages/flags/narrow`: adds or removes a flag on a range of a narrow, decided on the
/// writer against the newest state.
pub async fn update_message_flags_for_narrow(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let request = WindowRequest::parse(&mut params, true)?;
    if request.anchor.is_none() {
        return Err(ApiError::missing("anchor"));
    }
    let terms = parse_narrow(Some(
        params
            .json::<Value>("narrow")?
            .ok_or_else(|| ApiError::missing("narrow"))?,
    ))?;
    let op = params.required_str("op")?;
    let flag = parse_flag(&params.required_str("flag")?)?;
    let add = match op.as_str() {
        "add" => true,
        "remove" => false,
        other => {
            return Err(ApiError::bad_request(format!(
                "Invalid message flag operation: '{other}'"
            )))
        }
    };
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            let me = crate::commands::actor(s, ctx)?;
            let narrow = Narrow::compile(s, me, terms)?;
            let window = Window::compute(s, me, &narrow, &request)?;
            // Flags live on the user's copies: messages without one are not processed.
            let processed: Vec<MessageId> = window
                .ids
                .iter()
                .copied()
                .filter(|id| s.messages.flags(me.user_id, *id).is_some())
                .collect();
            let (events, updated) =
                crate::commands::messages::update_flags(s, ctx, processed.clone(), flag, add)?;
            let summary = json!({
                "processed_count": processed.len(),
                "updated_count": updated.len(),
                "first_processed_id": processed.first().map(|id| id.0),
                "last_processed_id": processed.last().map(|id| id.0),
                "found_oldest": window.found_oldest,
                "found_newest": window.found_newest,
                "ignored_because_not_subscribed_channels": [],
            });
            Ok((events, summary))
        })
        .await?;
    Ok(params.success(committed.value))
}

/// `GET /messages/matches_narrow`: which of the given messages match a narrow.
pub async fn get_messages_matching_narrow(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let ids: Vec<u64> = params
        .json("msg_ids")?
        .ok_or_else(|| ApiError::missing("msg_ids"))?;
    let terms = parse_narrow(Some(
        params
            .json::<Value>("narrow")?
            .ok_or_else(|| ApiError::missing("narrow"))?,
    ))?;
    let body = state.engine.read(|s| {
        let me = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("user missing"))?;
        let narrow = Narrow::compile(s, me, terms)?;
        let matches: serde_json::Map<String, Value> = ids
            .into_iter()
            .map(MessageId)
            .filter(|id| narrow.matches(*id))
            .filter_map(|id| s.messages.get(id))
            .map(|m| {
                (
                    m.id.0.to_string(),
                    json!({
                        "match_content": &*m.rendered_content,
                        "match_subject": crate::markdown::escape_html(m.topic()),
                    }),
                )
            })
            .collect();
        Ok::<_, ApiError>(json!({"messages": matches}))
    })?;
    Ok(params.success(body))
}

/// `POST /submessage`: widget data attached to a message.
pub async fn add_submessage(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let message_id = MessageId(params.required_int::<u64>("message_id")?);
    let msg_type = params.required_str("msg_type")?;
    let content = params.required_str("content")?;
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::messages::add_submessage(s, ctx, message_id, msg_type, content)
        })
        .await?;
    Ok(params.success(json!({})))
}

//! Messages: `POST /messages`, `GET /messages/{message_id}`, `GET /messages`,
//! `POST /messages/flags`, `POST /mark_topic_as_read`, and the Message object.

use super::params::json_response;
use super::{path_id, AppState, Auth, Params};
use crate::commands::edit::EditRequest;
use crate::commands::messages::{readable, ChannelRef, Destination};
use crate::commands::reactions::EmojiRequest;
use crate::commands::Decision;
use crate::error::{ApiError, ApiResult};
use crate::events::{MessageFlag, PropagateMode};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::narrow::parse_narrow;
use crate::narrow::Narrow;
use crate::projections::messages::flags;
use crate::projections::messages::topic_param;
use crate::projections::{Message, Projections, User};
use crate::render::fields::{Fields, JsonBuf};
use crate::render::messages::message_flags;
use crate::render::messages::message_history_json;
use crate::render::messages::{message_json, write_message, MessageView};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

/// Zulip's `MAX_MESSAGES_PER_FETCH`.
pub const MAX_MESSAGES_PER_FETCH: u64 = 5000;
/// What Zulip answers as the anchor for `newest`.
pub const LARGER_THAN_MAX_MESSAGE_ID: u64 = 10_000_000_000_000_000;

pub(crate) fn parse_destination(
    state: &Projections,
    params: &mut Params,
) -> ApiResult<Destination> {
    let kind = params.required_str("type")?;
    let to = params.required_str("to")?;
    let topic = match (params.str("topic"), params.str("subject")) {
        (Some(topic), _) | (None, Some(topic)) => Some(topic),
        (None, None) => None,
    };
    destination_of(state, &kind, &to, topic)
}

/// A message's audience from the `type`, `to` and `topic` parameters, as `POST /messages`
/// takes them.
pub(crate) fn destination_of(
    state: &Projections,
    kind: &str,
    to: &str,
    topic: Option<String>,
) -> ApiResult<Destination> {
    let to = to.to_owned();
    match kind {
        "stream" | "channel" => {
            let topic = match topic {
                Some(topic) => topic_param(&topic),
                None => return Err(ApiError::missing("topic")),
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

/// The sending client's name, as Zulip takes it: the User-Agent's product (at most 30
/// characters), else `API`.
pub(crate) fn client_name(req: &HttpRequest) -> String {
    req.headers()
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split('/').next())
        .filter(|c| !c.is_empty())
        .unwrap_or("API")
        .chars()
        .take(30)
        .collect()
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
    let client = client_name(&req);
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
                destination.clone(),
                &content,
                &client,
                sender_queue.clone(),
            )
        })
        .await?;
    Ok(params.success(json!({"id": committed.value.0})))
}

/// `POST /messages/{message_id}/report`: the report goes to the moderation channel.
pub async fn report_message(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = MessageId(
        path_id(&req, "message_id").map_err(|_| ApiError::bad_request("Invalid message(s)"))?,
    );
    let report_type = params.required_str("report_type")?;
    let description = params.str("description").unwrap_or_default();
    let realm_url = state.site.realm_url.clone();
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::reports::report_message(
                s,
                ctx,
                id,
                &report_type,
                &description,
                &realm_url,
            )
        })
        .await
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

/// `POST /messages/render`: what the server would render `content` as, for the caller (the
/// previews clients show); nothing is stored.
pub async fn render_message(
    state: web::Data<AppState>,
    _auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let content = params.required_str("content")?;
    // Rendered as a send would render it: what is past the longest message is cut off first.
    let content = crate::commands::messages::truncate(
        &content,
        crate::commands::messages::MAX_MESSAGE_LENGTH,
        "\n[message truncated]",
    );
    let rendered = state.engine.read(|s| {
        crate::markdown::render_message(&content, &crate::commands::markup::OrgResolver(s)).html
    });
    Ok(params.success(json!({ "rendered": rendered })))
}

/// `GET /messages/{message_id}/read_receipts`: who has read a message the caller can read,
/// while the organization has read receipts on.
pub async fn get_read_receipts(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = MessageId(
        path_id(&req, "message_id").map_err(|_| ApiError::bad_request("Invalid message(s)"))?,
    );
    let user_ids = state.engine.read(|s| {
        let me = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("user missing"))?;
        let message = readable(s, me, id)?;
        if !s.realm.flag("enable_read_receipts") {
            return Err(ApiError::bad_request(
                "Read receipts are disabled in this organization.",
            ));
        }
        Ok::<_, ApiError>(s.read_by(message, me.user_id))
    })?;
    Ok(params.success(json!({ "user_ids": user_ids })))
}

/// Where a range of a narrow starts and how far it goes (`anchor`, `num_before`, ...).
#[derive(Debug, Clone)]
struct WindowRequest {
    anchor: Option<String>,
    /// With `anchor=date`: the instant, as given.
    anchor_date: Option<String>,
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
        let anchor_date = params.str("anchor_date");
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
            anchor_date,
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
            Some("date") => {
                let text = request
                    .anchor_date
                    .as_deref()
                    .ok_or_else(|| ApiError::bad_request("Missing 'anchor_date' argument."))?;
                let at_ms = crate::time::parse_iso8601_ms(text).ok_or_else(|| {
                    ApiError::bad_request("anchor_date is not an ISO 8601 datetime string")
                })?;
                date_anchor(s, narrow, at_ms).map_or(newest_anchor, |id| (id.0, false, false))
            }
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

/// The anchor of `anchor=date`, as Zulip's: the first message of the narrow sent at or after
/// `at_ms`, else its newest; `None` when it has none. A message's time never decreases as ids
/// grow (the log's clock only moves forward, and an import sends in the order of the original
/// send times), so the walk stops at the first message on the far side of the instant, from
/// whichever end of the narrow the instant is nearer in time.
fn date_anchor(s: &Projections, narrow: &Narrow<'_>, at_ms: i64) -> Option<MessageId> {
    let sent_ms = |id: &MessageId| s.messages.get(*id).map_or(0, |m| m.timestamp * 1000);
    let matching = || narrow.candidates().filter(|id| narrow.matches(*id));
    let (oldest, newest) = (matching().next()?, matching().next_back()?);
    let (first_ms, last_ms) = (sent_ms(&oldest), sent_ms(&newest));
    if at_ms <= first_ms {
        return Some(oldest);
    }
    if at_ms > last_ms {
        return Some(newest);
    }
    if at_ms - first_ms < last_ms - at_ms {
        matching().find(|id| sent_ms(id) >= at_ms)
    } else {
        matching()
            .rev()
            .take_while(|id| sent_ms(id) >= at_ms)
            .last()
    }
}

/// `GET /messages`.
pub async fn get_messages(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let narrow_raw: Option<Value> = params.json("narrow")?;
    // A set, as Zulip's query makes it: each message once, in id order, at most as many as a
    // range may ask for (a list repeating one id would otherwise multiply the answer).
    let message_ids = params
        .json::<Vec<u64>>("message_ids")?
        .map(|ids| ids.into_iter().collect::<std::collections::BTreeSet<u64>>());
    if message_ids
        .as_ref()
        .is_some_and(|ids| ids.len() as u64 > MAX_MESSAGES_PER_FETCH)
    {
        return Err(ApiError::bad_request(format!(
            "Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH})."
        )));
    }
    let apply_markdown = params.bool("apply_markdown")?.unwrap_or(true);
    let allow_empty = params.bool("allow_empty_topic_name")?.unwrap_or(false);
    let _client_gravatar = params.bool("client_gravatar")?;
    let request = WindowRequest::parse(&mut params, message_ids.is_none())?;
    let terms = parse_narrow(narrow_raw)?;
    let how = MessageView {
        apply_markdown,
        allow_empty_topic_name: allow_empty,
    };
    // The page is written straight to bytes while the state is read: a tree of maps built
    // per message, only to be written out and dropped, was most of the cost of the answer.
    let body = state.engine.read(|s| {
        let me = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("user missing"))?;
        let narrow = Narrow::compile(s, me, terms)?;
        let write = |b: &mut JsonBuf, m: &Message| {
            b.object(|o| {
                write_message(o, s, &state.site, me, m, how);
                o.field("flags", &message_flags(s, me.user_id, m.id));
                // A search's results carry what matched, as Zulip's do.
                if let Some((content, subject)) = narrow.highlights(m) {
                    o.field("match_content", &content);
                    o.field("match_subject", &subject);
                }
            })
        };
        let page = |ids: &mut dyn Iterator<Item = MessageId>| -> Vec<&Message> {
            ids.filter_map(|id| s.messages.get(id)).collect()
        };
        if let Some(ids) = message_ids {
            let found = page(
                &mut ids
                    .into_iter()
                    .map(MessageId)
                    .filter(|id| narrow.matches(*id)),
            );
            return params.success_bytes(PAGE_CAPACITY, |o| {
                o.field_with("messages", |b| b.array(found, write));
                o.field("history_limited", &false);
            });
        }
        let window = Window::compute(s, me, &narrow, &request)?;
        let found = page(&mut window.ids.iter().copied());
        params.success_bytes(PAGE_CAPACITY, |o| {
            o.field("anchor", &window.anchor);
            o.field("found_anchor", &window.found_anchor);
            o.field("found_oldest", &window.found_oldest);
            o.field("found_newest", &window.found_newest);
            o.field("history_limited", &false);
            o.field_with("messages", |b| b.array(found, write));
        })
    })?;
    Ok(json_response(body))
}

/// Bytes set aside for a page of messages (about a kilobyte a message).
const PAGE_CAPACITY: usize = 64 * 1024;

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
            crate::commands::flags::update_flags(s, ctx, requested.clone(), flag, add)
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
        .answer(&auth, params, move |s, ctx| {
            let me = crate::commands::actor(s, ctx)?;
            let visible = s.channels.get(channel).filter(|c| {
                crate::projections::access(s, me, c) == crate::projections::Access::Content
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
            crate::commands::flags::update_flags(s, ctx, unread, MessageFlag::Read, true)
        })
        .await
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
        .answer(&auth, params, move |s, ctx| {
            crate::commands::typing::set_typing(s, ctx, target.clone(), start)
        })
        .await
}

/// `POST /messages/{message_id}/typing` (Zulip 10, feature level 351): start or stop editing.
pub async fn set_edit_typing_status(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let message_id = message_id_param(&req)?;
    let start = match params.required_str("op")?.as_str() {
        "start" => true,
        "stop" => false,
        other => return Err(ApiError::invalid("op", other)),
    };
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::typing::set_edit_typing(s, ctx, message_id, start)
        })
        .await
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
        .answer(&auth, params, move |s, ctx| {
            crate::commands::reactions::add_reaction(s, ctx, id, emoji.clone())
        })
        .await
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
        .answer(&auth, params, move |s, ctx| {
            crate::commands::reactions::remove_reaction(s, ctx, id, emoji.clone())
        })
        .await
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
            crate::commands::edit::edit_message(s, ctx, id, request.clone())
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
        .answer(&auth, params, move |s, ctx| {
            crate::commands::delete::delete_message(s, ctx, id)
        })
        .await
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
    check: impl Fn(&Projections, &User) -> ApiResult<()> + Send + 'static,
    filter: impl Fn(&Message) -> bool + Send + 'static,
) -> ApiResult<()> {
    state
        .engine
        .execute(Some(user), move |s, ctx| {
            let me = crate::commands::actor(s, ctx)?;
            check(s, me)?;
            let (unread, _) = s.messages.unread_of(me.user_id, usize::MAX);
            let unread: Vec<MessageId> = unread
                .into_iter()
                .rev()
                .map(|(id, _)| id)
                .filter(|id| s.messages.get(*id).is_some_and(&filter))
                .collect();
            crate::commands::flags::update_flags(s, ctx, unread, MessageFlag::Read, true)
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
                    crate::projections::access(s, me, c) == crate::projections::Access::Content
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
            let narrow = Narrow::compile(s, me, terms.clone())?;
            let window = Window::compute(s, me, &narrow, &request)?;
            // Flags live on the user's copies: messages without one are not processed.
            let processed: Vec<MessageId> = window
                .ids
                .iter()
                .copied()
                .filter(|id| s.messages.flags(me.user_id, *id).is_some())
                .collect();
            let Decision {
                events,
                reply: updated,
            } = crate::commands::flags::update_flags(s, ctx, processed.clone(), flag, add)?;
            let summary = json!({
                "processed_count": processed.len(),
                "updated_count": updated.len(),
                "first_processed_id": processed.first().map(|id| id.0),
                "last_processed_id": processed.last().map(|id| id.0),
                "found_oldest": window.found_oldest,
                "found_newest": window.found_newest,
                "ignored_because_not_subscribed_channels": [],
            });
            Ok(Decision::new(events, summary))
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
    // Each message looked at once, however often the list names it.
    let ids: std::collections::BTreeSet<u64> = params
        .json::<Vec<u64>>("msg_ids")?
        .ok_or_else(|| ApiError::missing("msg_ids"))?
        .into_iter()
        .collect();
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
                let (content, subject) = narrow.highlights(m).unwrap_or_else(|| {
                    let content = m.rendered_content().to_string();
                    (content, crate::markdown::escape_html(m.topic()))
                });
                (
                    m.id.0.to_string(),
                    json!({"match_content": content, "match_subject": subject}),
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
        .answer(&auth, params, move |s, ctx| {
            crate::commands::messages::add_submessage(
                s,
                ctx,
                message_id,
                msg_type.clone(),
                content.clone(),
            )
        })
        .await
}

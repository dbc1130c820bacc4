//! Drafts and saved snippets: a user's own text, kept on the server for all their clients.

use super::channels::MAX_TOPIC_LENGTH;
use super::messages::{truncate, MAX_MESSAGE_LENGTH};
use super::{actor, Ctx, Decision};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{Draft, Event};
use crate::ids::{ChannelId, UserId};
use crate::projections::{access, Access, Projections, User};

/// Zulip's `SavedSnippet.MAX_TITLE_LENGTH`.
pub const MAX_SNIPPET_TITLE_LENGTH: usize = 60;

/// A draft as a client sends it (`timestamp` may be absent).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct DraftRequest {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub to: Vec<u64>,
    #[serde(default)]
    pub topic: String,
    pub content: String,
    pub timestamp: Option<i64>,
}

/// Zulip's checks of a draft: the kind, its audience (a channel the user can see, or users that
/// exist), no null bytes, a non-negative time; the topic and content cut to Zulip's lengths.
fn checked_draft(state: &Projections, me: &User, ctx: &Ctx, d: DraftRequest) -> ApiResult<Draft> {
    if d.content.contains('\0') {
        return Err(ApiError::bad_request("Content must not contain null bytes"));
    }
    if d.topic.contains('\0') {
        return Err(ApiError::bad_request("Topic must not contain null bytes"));
    }
    let timestamp = match d.timestamp {
        Some(t) if t < 0 => return Err(ApiError::bad_request("Timestamp must not be negative.")),
        Some(t) => t,
        None => ctx.now_ms / 1000,
    };
    let (to, topic) = match d.kind.as_str() {
        "" => (Vec::new(), String::new()),
        "stream" => {
            let [channel] = d.to[..] else {
                return Err(ApiError::bad_request(
                    "Must specify exactly 1 channel ID for channel messages",
                ));
            };
            let visible = state
                .channels
                .get(ChannelId(channel))
                .is_some_and(|c| access(state, me, c) != Access::None);
            if !visible {
                return Err(ApiError::bad_request("Invalid channel ID"));
            }
            (vec![channel], truncate(&d.topic, MAX_TOPIC_LENGTH, "..."))
        }
        "private" => {
            for id in &d.to {
                if state.users.get(UserId(*id)).is_none() {
                    return Err(ApiError::bad_request(format!("Invalid user ID {id}")));
                }
            }
            (d.to.clone(), String::new())
        }
        _ => return Err(ApiError::invalid("type", &d.kind)),
    };
    Ok(Draft {
        kind: d.kind,
        to,
        topic,
        content: truncate(&d.content, MAX_MESSAGE_LENGTH, "\n[message truncated]"),
        timestamp,
    })
}

/// The acting user, who must keep drafts on the server (`enable_drafts_synchronization`).
fn syncing<'a>(state: &'a Projections, ctx: &Ctx) -> ApiResult<&'a User> {
    let me = actor(state, ctx)?;
    let on = state
        .user_settings
        .get(me.user_id, "enable_drafts_synchronization");
    if on != crate::events::RealmValue::Bool(true) {
        return Err(ApiError::bad_request(
            "User has disabled synchronizing drafts.",
        ));
    }
    Ok(me)
}

fn no_such_draft() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "Draft does not exist")
}

/// `POST /drafts`: the new drafts' ids, in order.
pub fn create_drafts(
    state: &Projections,
    ctx: &Ctx,
    drafts: Vec<DraftRequest>,
) -> ApiResult<Decision<Vec<u64>>> {
    let me = syncing(state, ctx)?;
    let mut saved = Vec::new();
    for (i, d) in drafts.into_iter().enumerate() {
        let draft = checked_draft(state, me, ctx, d)?;
        saved.push((state.drafts.next_draft_id() + i as u64, draft));
    }
    let ids = saved.iter().map(|(id, _)| *id).collect();
    let events = if saved.is_empty() {
        Vec::new()
    } else {
        vec![Event::DraftsSaved {
            user_id: me.user_id,
            drafts: saved,
            edit: false,
        }]
    };
    Ok(Decision::new(events, ids))
}

/// `PATCH /drafts/{id}`: the draft replaced.
pub fn edit_draft(state: &Projections, ctx: &Ctx, id: u64, d: DraftRequest) -> ApiResult<Decision> {
    let me = syncing(state, ctx)?;
    state
        .drafts
        .draft(me.user_id, id)
        .ok_or_else(no_such_draft)?;
    let draft = checked_draft(state, me, ctx, d)?;
    Ok(Decision::events(vec![Event::DraftsSaved {
        user_id: me.user_id,
        drafts: vec![(id, draft)],
        edit: true,
    }]))
}

/// `DELETE /drafts/{id}`.
pub fn delete_draft(state: &Projections, ctx: &Ctx, id: u64) -> ApiResult<Decision> {
    let me = syncing(state, ctx)?;
    state
        .drafts
        .draft(me.user_id, id)
        .ok_or_else(no_such_draft)?;
    Ok(Decision::events(vec![Event::DraftRemoved {
        user_id: me.user_id,
        draft_id: id,
    }]))
}

fn checked_snippet_text(title: Option<&str>, content: Option<&str>) -> ApiResult<()> {
    if let Some(title) = title {
        if title.trim().is_empty() {
            return Err(ApiError::bad_request("Title cannot be empty."));
        }
        if title.chars().count() > MAX_SNIPPET_TITLE_LENGTH {
            return Err(ApiError::bad_request(format!(
                "title is too long (limit: {MAX_SNIPPET_TITLE_LENGTH} characters)"
            )));
        }
    }
    if let Some(content) = content {
        if content.trim().is_empty() {
            return Err(ApiError::bad_request("Content cannot be empty."));
        }
        if content.chars().count() > MAX_MESSAGE_LENGTH {
            return Err(ApiError::bad_request(format!(
                "content is too long (limit: {MAX_MESSAGE_LENGTH} characters)"
            )));
        }
    }
    Ok(())
}

fn no_such_snippet() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "Saved snippet does not exist.")
}

/// `POST /saved_snippets`: the new snippet's id.
pub fn create_snippet(
    state: &Projections,
    ctx: &Ctx,
    title: &str,
    content: &str,
) -> ApiResult<Decision<u64>> {
    let me = actor(state, ctx)?;
    checked_snippet_text(Some(title), Some(content))?;
    let id = state.drafts.next_snippet_id();
    Ok(Decision::new(
        vec![Event::SavedSnippetSaved {
            user_id: me.user_id,
            snippet_id: id,
            title: title.trim().to_owned(),
            content: content.to_owned(),
            edit: false,
        }],
        id,
    ))
}

/// `PATCH /saved_snippets/{id}`.
pub fn edit_snippet(
    state: &Projections,
    ctx: &Ctx,
    id: u64,
    title: Option<&str>,
    content: Option<&str>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let old = state
        .drafts
        .snippet(me.user_id, id)
        .ok_or_else(no_such_snippet)?;
    if title.is_none() && content.is_none() {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    checked_snippet_text(title, content)?;
    Ok(Decision::events(vec![Event::SavedSnippetSaved {
        user_id: me.user_id,
        snippet_id: id,
        title: title.map_or_else(|| old.title.clone(), |t| t.trim().to_owned()),
        content: content.map_or_else(|| old.content.clone(), str::to_owned),
        edit: true,
    }]))
}

/// `DELETE /saved_snippets/{id}`.
pub fn delete_snippet(state: &Projections, ctx: &Ctx, id: u64) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    state
        .drafts
        .snippet(me.user_id, id)
        .ok_or_else(no_such_snippet)?;
    Ok(Decision::events(vec![Event::SavedSnippetRemoved {
        user_id: me.user_id,
        snippet_id: id,
    }]))
}

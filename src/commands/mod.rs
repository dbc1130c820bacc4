//! Commands: pure decisions over the projections. Each takes `&Projections` and a `Ctx` and
//! returns the events to append plus a reply, or a Zulip-shaped rejection. Nothing here does
//! I/O, reads a clock or draws randomness: random nonces and password hashes are made by the
//! caller beforehand and passed in.

pub mod attachments;
pub mod channels;
pub mod default_groups;
pub mod delete;
pub mod devices;
pub mod directory;
pub mod drafts;
pub mod edit;
pub mod email_gateway;
pub mod emoji;
pub mod flags;
pub mod groups;
pub mod invitations;
pub mod linkifiers;
pub mod markup;
pub mod messages;
pub mod mutes;
pub mod notices;
pub mod notifications;
pub mod playgrounds;
pub mod presence;
pub mod profile_fields;
pub mod reactions;
pub mod realm;
pub mod realm_domains;
pub mod reports;
pub mod scheduled;
pub mod scim;
pub mod sessions;
pub mod storage;
#[cfg(test)]
pub mod testing;
pub mod two_factor;
pub mod typing;
pub mod users;
pub mod views;

use crate::error::{ApiError, ApiResult};
use crate::events::Event;
use crate::ids::UserId;
use crate::projections::{Projections, User};

/// What a command sees besides the state: the clock reading and who is acting.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    /// Milliseconds since the epoch; also the `at` of the events the command returns.
    pub now_ms: i64,
    pub actor: Option<UserId>,
}

/// What a command decided: the events to append, and the reply its caller answers with once
/// they are durable. A command that only changes state replies `()`.
#[derive(Debug)]
pub struct Decision<R = ()> {
    pub events: Vec<Event>,
    pub reply: R,
}

impl<R> Decision<R> {
    /// Events and a reply.
    pub fn new(events: Vec<Event>, reply: R) -> Decision<R> {
        Decision { events, reply }
    }

    /// The same events with another reply.
    pub fn map<S>(self, f: impl FnOnce(R) -> S) -> Decision<S> {
        Decision {
            events: self.events,
            reply: f(self.reply),
        }
    }
}

impl Decision {
    /// Events and no reply.
    pub fn events(events: Vec<Event>) -> Decision {
        Decision { events, reply: () }
    }
}

/// The acting user, re-read from the decision state: a user deactivated or demoted by an
/// earlier command of the same batch is refused here even though authentication passed.
pub fn actor<'a>(state: &'a Projections, ctx: &Ctx) -> ApiResult<&'a User> {
    ctx.actor
        .and_then(|id| state.users.get(id))
        .filter(|user| user.is_active)
        .ok_or_else(|| ApiError::unauthorized("Account is deactivated"))
}

/// The acting user, who must be an owner or administrator.
pub fn admin<'a>(state: &'a Projections, ctx: &Ctx) -> ApiResult<&'a User> {
    let user = actor(state, ctx)?;
    if user.role.is_admin() {
        Ok(user)
    } else {
        Err(ApiError::must_be_admin())
    }
}

/// The acting user, who must be an owner.
pub fn owner<'a>(state: &'a Projections, ctx: &Ctx) -> ApiResult<&'a User> {
    let user = actor(state, ctx)?;
    if user.role == crate::events::Role::Owner {
        Ok(user)
    } else {
        Err(ApiError::must_be_owner())
    }
}

/// Whether `url` is an absolute http(s) URL with a host.
pub fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| {
        let host = r.split(['/', '?', '#']).next().unwrap_or_default();
        !host.is_empty() && !url.chars().any(|c| c.is_whitespace() || c.is_control())
    })
}

/// The 1-based position of the first character Zulip's `check_string_is_printable` refuses:
/// a control character (Cc) or a noncharacter (of the unassigned ones, Cn, the code points
/// that are never assigned). Surrogates (Cs) cannot occur in Rust text.
pub fn unprintable_position(text: &str) -> Option<usize> {
    text.chars()
        .position(|c| {
            let code = u32::from(c);
            c.is_control() || (0xFDD0..=0xFDEF).contains(&code) || code & 0xFFFE == 0xFFFE
        })
        .map(|at| at + 1)
}

/// Zulip's `check_stream_topic`: a topic with an unprintable character is refused.
pub fn check_topic_characters(topic: &str) -> ApiResult<()> {
    match unprintable_position(topic) {
        Some(position) => Err(ApiError::bad_request(format!(
            "Invalid character in topic, at position {position}!"
        ))),
        None => Ok(()),
    }
}

/// Zulip's `normalize_body`: a message may not hold a NUL.
pub fn check_content_characters(content: &str) -> ApiResult<()> {
    if content.contains('\0') {
        return Err(ApiError::bad_request("Message must not contain null bytes"));
    }
    Ok(())
}

/// Zulip lets a request that started inside an edit limit finish a little after it.
const EDIT_GRACE_SECS: i64 = 20;

/// Whether `sent` (seconds) is past the organization's time limit `setting` at `now`, grace
/// included; an unlimited setting never is.
pub fn past_limit(state: &Projections, setting: &str, sent: i64, now: i64) -> bool {
    state
        .realm
        .limit_secs(setting)
        .is_some_and(|limit| now.saturating_sub(sent) > limit.saturating_add(EDIT_GRACE_SECS))
}

/// Whether `user` is covered by the organization's setting `realm` or the channel's `channel`.
pub fn allowed_here(
    state: &Projections,
    user: &User,
    realm: &str,
    channel: Option<&crate::events::GroupSetting>,
) -> bool {
    state.realm_allows(user.user_id, realm)
        || channel.is_some_and(|s| state.groups.setting_allows(&state.users, user.user_id, s))
}

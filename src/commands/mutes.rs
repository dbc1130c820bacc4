//! Muting users (`POST`/`DELETE /users/me/muted_users/{id}`), with Zulip's side effect: the
//! muted user's messages are read for the muter, those held now and those to come.

use super::actor;
use super::Decision;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, MessageFlag};
use crate::ids::UserId;
use crate::projections::Projections;

/// `POST /users/me/muted_users/{id}`: any account of the organization but oneself (bots and
/// deactivated users included); the messages of theirs the caller holds unread become read.
pub fn mute_user(state: &Projections, ctx: &Ctx, muted: UserId) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    if muted == me.user_id {
        return Err(ApiError::bad_request("Cannot mute self"));
    }
    state
        .users
        .get(muted)
        .filter(|u| !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if state.mutes.mutes(me.user_id, muted) {
        return Err(ApiError::bad_request("User already muted"));
    }
    let mut events = vec![Event::UserMuted {
        user_id: me.user_id,
        muted_user_id: muted,
    }];
    let (unread, _) = state.messages.unread_of(me.user_id, usize::MAX);
    let mut theirs: Vec<_> = unread
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| {
            state
                .messages
                .get(*id)
                .is_some_and(|m| m.sender_id == muted)
        })
        .collect();
    theirs.sort_unstable();
    if !theirs.is_empty() {
        events.push(Event::MessageFlagsChanged {
            user_id: me.user_id,
            flag: MessageFlag::Read,
            add: true,
            message_ids: theirs,
        });
    }
    Ok(Decision::events(events))
}

/// `DELETE /users/me/muted_users/{id}`.
pub fn unmute_user(state: &Projections, ctx: &Ctx, muted: UserId) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    state
        .users
        .get(muted)
        .filter(|u| !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if !state.mutes.mutes(me.user_id, muted) {
        return Err(ApiError::bad_request("User is not muted"));
    }
    Ok(Decision::events(vec![Event::UserUnmuted {
        user_id: me.user_id,
        muted_user_id: muted,
    }]))
}

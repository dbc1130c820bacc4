//! Web sessions: signing in to the web client (`POST /login/`) and ending a session (logging
//! out, or from the settings).

use super::{Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::Event;
use crate::ids::UserId;
use crate::projections::Projections;

/// How long a web session lasts: two weeks, Zulip's (Django's `SESSION_COOKIE_AGE`) default.
pub const SESSION_LIFETIME_MS: i64 = 14 * 24 * 60 * 60 * 1000;

/// Longest browser description kept with a session.
pub const MAX_CLIENT_CHARS: usize = 200;

/// A new session `session_id` (random, made by the caller) for `user_id`, whose password the
/// caller checked. Refused for an account that cannot sign in (deactivated, or a bot).
pub fn start_session(
    state: &Projections,
    ctx: &Ctx,
    user_id: UserId,
    session_id: &str,
    client: &str,
) -> ApiResult<Decision> {
    let user = state
        .users
        .get(user_id)
        .ok_or_else(|| ApiError::unauthorized("Your username or password is incorrect"))?;
    if !user.is_active {
        return Err(ApiError::new(
            crate::error::ErrorCode::UserDeactivated,
            "Account is deactivated",
        ));
    }
    if user.is_bot() {
        return Err(ApiError::unauthorized(
            "Bots cannot sign in to the web client",
        ));
    }
    if state.sessions.get(session_id).is_some() {
        return Err(ApiError::internal("session id collision"));
    }
    let expires_at = ctx.now_ms.saturating_add(SESSION_LIFETIME_MS);
    let client: String = client.chars().take(MAX_CLIENT_CHARS).collect();
    Ok(Decision::events(vec![Event::SessionStarted {
        user_id,
        session_id: session_id.to_owned(),
        expires_at,
        client,
    }]))
}

/// Ends `session_id`, which must be one of the acting user's own.
pub fn end_session(state: &Projections, ctx: &Ctx, session_id: &str) -> ApiResult<Decision> {
    let me = super::actor(state, ctx)?;
    match state.sessions.get(session_id) {
        Some(session) if session.user_id == me.user_id => {
            Ok(Decision::events(vec![Event::SessionEnded {
                user_id: me.user_id,
                session_id: session_id.to_owned(),
            }]))
        }
        _ => Err(ApiError::bad_request("No such session").with("var_name", "session_id")),
    }
}

/// The digest a single-use proof of identity is remembered by: SHA-256 over what kind of
/// proof it is, who issued it and its own name, in hex.
pub fn token_digest(kind: &str, issuer: &str, id: &str) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    for part in [kind, issuer, id] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Uses the single-use proof `digest` (valid until `expires_at`, ms) to sign in: refused when
/// it was used already or has expired. In one commit, so two uses at once cannot both pass.
pub fn spend_token(
    state: &Projections,
    ctx: &Ctx,
    digest: &str,
    expires_at: i64,
) -> ApiResult<Decision> {
    if state.sessions.token_spent(digest) {
        return Err(ApiError::new(
            crate::error::ErrorCode::AuthenticationFailed,
            "This sign-in was already used",
        ));
    }
    if expires_at <= ctx.now_ms {
        return Err(ApiError::new(
            crate::error::ErrorCode::AuthenticationFailed,
            "This sign-in has expired",
        ));
    }
    Ok(Decision::events(vec![Event::SignInTokenSpent {
        digest: digest.to_owned(),
        expires_at,
    }]))
}

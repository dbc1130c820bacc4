//! Presence reports (`POST /users/me/presence`).

use super::actor;
use super::Decision;
use crate::commands::Ctx;
use crate::error::ApiResult;
use crate::events::Event;
use crate::projections::Projections;

/// Zulip's `PRESENCE_UPDATE_MIN_FREQ_SECONDS`: a report this soon after the last one that
/// counted changes nothing a client could see, so it is not logged. Clients ping every 60 s,
/// so an online user costs about one event a minute.
pub const PRESENCE_UPDATE_MIN_FREQ_MS: i64 = 55_000;

/// Records that the caller is connected (`active`: and using a client), unless the last
/// report is recent enough to make this one invisible.
pub fn update_presence(state: &Projections, ctx: &Ctx, active: bool) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    // Invisible mode: Zulip records nothing while a user does not share presence.
    if !crate::projections::shares_presence(state, me.user_id) {
        return Ok(Decision::events(Vec::new()));
    }
    let recent = |t: Option<i64>| t.is_some_and(|t| ctx.now_ms - t < PRESENCE_UPDATE_MIN_FREQ_MS);
    let current = state.presence.get(me.user_id);
    let connected_recently = recent(current.map(|p| p.last_connected_ms));
    let active_recently = recent(current.and_then(|p| p.last_active_ms));
    if connected_recently && (!active || active_recently) {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::PresenceUpdated {
        user_id: me.user_id,
        active,
    }]))
}

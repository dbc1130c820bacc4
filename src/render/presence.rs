//! Presence as clients see it, in the modern format (by user id) or the legacy one (by email,
//! with a single `website` client and the `aggregated` view, both the same).

use super::users::shown_email;
use super::Site;
use crate::ids::Seq;
use crate::projections::presence::UserPresence;
use crate::projections::{shares_presence, Projections, User};
use serde_json::{json, Map, Value};

/// Zulip's `PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS`: a user active within this long
/// of their last connection shows as active in the legacy format.
const LEGACY_ACTIVITY_OFFSET_MS: i64 = 70_000;

/// How far back presence data goes unless a client asks otherwise (`history_limit_days`).
const DEFAULT_HISTORY_DAYS: i64 = 14;

/// The legacy `(status, timestamp in seconds)` of a presence record.
pub fn legacy_status(p: &UserPresence) -> (&'static str, i64) {
    match p.last_active_ms {
        Some(active) if active + LEGACY_ACTIVITY_OFFSET_MS >= p.last_connected_ms => {
            ("active", active / 1000)
        }
        _ => ("idle", p.last_connected_ms / 1000),
    }
}

/// The modern form: `active_timestamp` and `idle_timestamp`, in seconds. A user never seen
/// active shows the time they joined there, as Zulip does.
pub fn modern_json(p: &UserPresence, user: &User) -> Value {
    json!({
        "active_timestamp": p.last_active_ms.unwrap_or(user.date_joined_ms) / 1000,
        "idle_timestamp": p.last_connected_ms / 1000,
    })
}

fn legacy_json(p: &UserPresence) -> Value {
    let (status, timestamp) = legacy_status(p);
    json!({
        "website": {"client": "website", "status": status, "timestamp": timestamp, "pushable": false},
        "aggregated": {"client": "website", "status": status, "timestamp": timestamp},
    })
}

/// Which presence records a request wants.
pub struct PresenceQuery {
    /// Modern format (by user id) rather than legacy (by email).
    pub modern: bool,
    /// Only records updated after this id (`last_update_id`).
    pub after: Option<Seq>,
    pub history_days: Option<i64>,
}

/// The presence of every active human the viewer knows of, as `POST /users/me/presence`,
/// `GET /realm/presence` and `/register` answer it, with the newest update id among them
/// (-1 when there is none and the client gave none).
pub fn presences_json(
    state: &Projections,
    site: &Site,
    viewer: &User,
    query: &PresenceQuery,
    now_ms: i64,
) -> (Value, i64) {
    let days = query.history_days.unwrap_or(DEFAULT_HISTORY_DAYS).max(0);
    let oldest = now_ms.saturating_sub(days.saturating_mul(86_400_000));
    let mut out = Map::new();
    let mut newest = query.after.map_or(-1, |s| s.0 as i64);
    for (user_id, presence) in state.presence.iter() {
        let Some(user) = state
            .users
            .get(user_id)
            .filter(|u| u.is_active && !u.is_bot() && shares_presence(state, user_id))
        else {
            continue;
        };
        let fresh = match query.after {
            Some(after) if after.0 > 0 => presence.update_id > after,
            _ => presence.last_connected_ms >= oldest,
        };
        if !fresh {
            continue;
        }
        newest = newest.max(presence.update_id.0 as i64);
        if query.modern {
            out.insert(user_id.0.to_string(), modern_json(presence, user));
        } else {
            out.insert(
                shown_email(state, site, viewer, user),
                legacy_json(presence),
            );
        }
    }
    (Value::Object(out), newest)
}

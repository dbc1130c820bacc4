//! Presence: `POST /users/me/presence`, `GET /realm/presence`,
//! `GET /users/{user_id_or_email}/presence`.
//!
//! Since Zulip 7.0 presence is one record per user (last connected, last active), shown in
//! the modern format (by user id) or the legacy one (by email, with a single `website` client
//! and the `aggregated` view, both the same).

use super::messages::shown_email;
use super::users::find_user;
use super::{AppState, Auth, Params, Site};
use crate::error::{ApiError, ApiResult};
use crate::ids::Seq;
use crate::projections::presence::{UserPresence, OFFLINE_THRESHOLD_MS};
use crate::projections::{Projections, User};
use actix_web::{web, HttpRequest, HttpResponse};
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

/// Whether a user shares their presence (`presence_enabled`; off is Zulip's invisible mode).
pub fn shares_presence(state: &Projections, user: crate::ids::UserId) -> bool {
    state.user_settings.get(user, "presence_enabled") != crate::events::RealmValue::Bool(false)
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

fn status_is_active(raw: &str) -> ApiResult<bool> {
    match raw {
        "active" => Ok(true),
        "idle" => Ok(false),
        other => Err(ApiError::bad_request(format!("Invalid status: {other}"))),
    }
}

/// `POST /users/me/presence`: records the report, then (unless `ping_only`) answers with
/// everyone's presence.
pub async fn update_presence(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let active = status_is_active(&params.required_str("status")?)?;
    let ping_only = params.bool("ping_only")?.unwrap_or(false);
    let _new_user_input = params.bool("new_user_input")?;
    let slim = params.bool("slim_presence")?.unwrap_or(false);
    let last_update_id = params.int::<i64>("last_update_id")?;
    let history_days = params.int::<i64>("history_limit_days")?;
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::presence::update_presence(s, ctx, active)
        })
        .await?;
    if ping_only {
        return Ok(params.success(json!({})));
    }
    let now = crate::time::now_ms();
    let query = PresenceQuery {
        modern: slim || last_update_id.is_some(),
        after: last_update_id.map(|id| Seq(id.max(0) as u64)),
        history_days,
    };
    let body = state.engine.read(|s| {
        let viewer = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("authenticated user missing"))?;
        let (presences, newest) = presences_json(s, &state.site, viewer, &query, now);
        Ok::<_, ApiError>(json!({
            "presences": presences,
            "server_timestamp": now as f64 / 1000.0,
            "presence_last_update_id": newest,
        }))
    })?;
    Ok(params.success(body))
}

/// `GET /realm/presence`: everyone's presence, legacy format.
pub async fn get_presence(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let now = crate::time::now_ms();
    let query = PresenceQuery {
        modern: false,
        after: None,
        history_days: None,
    };
    let presences = state.engine.read(|s| {
        let viewer = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("authenticated user missing"))?;
        Ok::<_, ApiError>(presences_json(s, &state.site, viewer, &query, now).0)
    })?;
    Ok(params.success(json!({
        "presences": presences,
        "server_timestamp": now as f64 / 1000.0,
    })))
}

/// `GET /users/{user_id_or_email}/presence`: one user's status and time; `offline` when the
/// last report is older than the offline threshold.
pub async fn get_user_presence(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let key = req
        .match_info()
        .get("user_id_or_email")
        .unwrap_or_default()
        .to_owned();
    let now = crate::time::now_ms();
    let presence = state.engine.read(|s| {
        let viewer = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("authenticated user missing"))?;
        let user = find_user(s, &state.site, viewer, &key)
            .filter(|u| !u.is_system_bot())
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if user.is_bot() {
            return Err(ApiError::bad_request(
                "Presence is not supported for bot users.",
            ));
        }
        let p = s
            .presence
            .get(user.user_id)
            .filter(|_| shares_presence(s, user.user_id))
            .ok_or_else(|| ApiError::bad_request(format!("No presence data for {key}")))?;
        let (status, timestamp) = legacy_status(p);
        // Only the aggregate says "offline" once the last report is old, as in Zulip.
        let aggregated = if now - timestamp * 1000 > OFFLINE_THRESHOLD_MS {
            "offline"
        } else {
            status
        };
        Ok(json!({
            "website": {"status": status, "timestamp": timestamp},
            "aggregated": {"status": aggregated, "timestamp": timestamp},
        }))
    })?;
    Ok(params.success(json!({ "presence": presence })))
}

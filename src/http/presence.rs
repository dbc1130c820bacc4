//! Presence: `POST /users/me/presence`, `GET /realm/presence`,
//! `GET /users/{user_id_or_email}/presence`; user statuses: `POST /users/me/status`,
//! `GET /users/{user_id}/status`.
//!
//! Since Zulip 7.0 presence is one record per user (last connected, last active), shown in
//! the modern format (by user id) or the legacy one (by email, with a single `website` client
//! and the `aggregated` view, both the same).

use super::users::find_user;
use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult};
use crate::ids::Seq;
use crate::projections::presence::OFFLINE_THRESHOLD_MS;
use crate::projections::shares_presence;
use crate::render::presence::legacy_status;
use crate::render::presence::presences_json;
use crate::render::presence::PresenceQuery;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

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

/// A status's text and emoji, as both status endpoints take them.
fn status_request(
    params: &mut Params,
    away: Option<bool>,
) -> crate::commands::presence::StatusRequest {
    crate::commands::presence::StatusRequest {
        away,
        status_text: params.str("status_text"),
        emoji: crate::commands::reactions::EmojiRequest {
            emoji_name: params.str("emoji_name"),
            emoji_code: params.str("emoji_code"),
            reaction_type: params.str("reaction_type"),
        },
    }
}

/// `POST /users/me/status`.
pub async fn update_status(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let away = params.bool("away")?;
    let request = status_request(&mut params, away);
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::presence::set_status(s, ctx, None, request.clone())
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `POST /users/{user_id}/status` (Zulip 11, feature level 407): an administrator sets another
/// person's status (text and emoji; `away` is the person's own).
pub async fn update_status_for_user(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = super::path_id(&req, "user_id").map_err(|_| ApiError::bad_request("No such user"))?;
    let request = status_request(&mut params, None);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::presence::set_status(
                s,
                ctx,
                Some(crate::ids::UserId(id)),
                request.clone(),
            )
        })
        .await
}

/// `GET /users/{user_id}/status`: one user's status (`{}` without one).
pub async fn get_status(
    state: web::Data<AppState>,
    _auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = super::path_id(&req, "user_id").map_err(|_| ApiError::bad_request("No such user"))?;
    let status = state.engine.read(|s| {
        s.users
            .get(crate::ids::UserId(id))
            .filter(|u| !u.is_system_bot())
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        Ok::<_, ApiError>(
            s.user_status
                .get(crate::ids::UserId(id))
                .map_or_else(|| json!({}), |st| st.json()),
        )
    })?;
    Ok(params.success(json!({ "status": status })))
}

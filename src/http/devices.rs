//! Navigation views, client devices and push registration: a user's own client-side things.
//!
//! No push notification service is configured in Chronicle, so push registration answers
//! Zulip's `PUSH_SERVICE_NOT_CONFIGURED` rather than a success for something not done.

use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult, ErrorCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

/// `GET /navigation_views`.
pub async fn get_navigation_views(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let views = state.engine.read(|s| s.navigation_views.json(auth.user_id));
    Ok(params.success(json!({ "navigation_views": views })))
}

/// A trimmed text parameter that may not be blank (Zulip's "x cannot be blank").
fn not_blank(params: &mut Params, name: &str) -> ApiResult<Option<String>> {
    match params.str(name).map(|v| v.trim().to_owned()) {
        Some(v) if v.is_empty() => Err(ApiError::bad_request(format!("{name} cannot be blank"))),
        other => Ok(other),
    }
}

/// `POST /navigation_views`.
pub async fn add_navigation_view(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let fragment =
        not_blank(&mut params, "fragment")?.ok_or_else(|| ApiError::missing("fragment"))?;
    let is_pinned = params
        .bool("is_pinned")?
        .ok_or_else(|| ApiError::missing("is_pinned"))?;
    let name = not_blank(&mut params, "name")?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::views::add_view(s, ctx, &fragment, is_pinned, name.as_deref())
        })
        .await
}

/// `PATCH /navigation_views/{fragment}`.
pub async fn update_navigation_view(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let fragment = req
        .match_info()
        .get("fragment")
        .unwrap_or_default()
        .to_owned();
    let is_pinned = params.bool("is_pinned")?;
    let name = not_blank(&mut params, "name")?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::views::change_view(s, ctx, &fragment, is_pinned, name.as_deref())
        })
        .await
}

/// `DELETE /navigation_views/{fragment}`.
pub async fn remove_navigation_view(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let fragment = req
        .match_info()
        .get("fragment")
        .unwrap_or_default()
        .to_owned();
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::views::remove_view(s, ctx, &fragment)
        })
        .await
}

/// `POST /register_client_device`: `{"device_id": N}`.
pub async fn register_client_device(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let committed = state
        .engine
        .execute(
            Some(auth.user_id),
            crate::commands::devices::register_device,
        )
        .await?;
    Ok(params.success(json!({ "device_id": committed.value })))
}

/// `POST /remove_client_device`.
pub async fn remove_client_device(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let device_id = params.required_int::<u64>("device_id")?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::devices::remove_device(s, ctx, device_id)
        })
        .await
}

/// Zulip's answer when no push notification service is configured.
fn push_not_configured() -> ApiError {
    ApiError::new(
        ErrorCode::PushServiceNotConfigured,
        "Server is not configured to use push notification service.",
    )
}

/// `POST /mobile_push/register` and the legacy token endpoints (`/users/me/apns_device_token`,
/// `/users/me/android_gcm_reg_id`): no push service is configured, so nothing is registered.
/// The caller must still be a valid user; the device must be theirs.
pub async fn register_push(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    if let Some(device_id) = params.int::<u64>("device_id")? {
        let known = state
            .engine
            .read(|s| s.devices.has(auth.user_id, device_id));
        if !known {
            return Err(ApiError::bad_request("Invalid `device_id`"));
        }
    }
    Err(push_not_configured())
}

//! Navigation views, client devices and push registration: a user's own client-side things.
//!
//! Push registration goes to Zulip's push notification service when one is configured
//! (`[push]`, `notify::push`); without one it answers Zulip's `PUSH_SERVICE_NOT_CONFIGURED`
//! rather than a success for something not done.

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

/// The legacy token endpoints (`/users/me/apns_device_token`, `/users/me/android_gcm_reg_id`),
/// deprecated since feature level 406: the apps register through `POST /mobile_push/register`
/// at Chronicle's level, so no legacy token is ever kept. Removing one (zulip-flutter does at
/// logout for accounts that once had one) succeeds with nothing to remove; registering one is
/// refused, telling the app to use the current registration.
pub async fn legacy_push_token(
    state: web::Data<AppState>,
    _auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let token = params.str("token").unwrap_or_default();
    if token.is_empty() || token.len() > 4096 {
        return Err(ApiError::bad_request("Empty or invalid length token"));
    }
    if state.push.is_none() {
        return Err(push_not_configured());
    }
    if req.method() == actix_web::http::Method::DELETE {
        return Ok(params.success(json!({})));
    }
    Err(ApiError::bad_request(
        "Legacy push registration is not supported: register through /mobile_push/register.",
    ))
}

/// `POST /mobile_push/register` (feature level 468): a device's push key and its token to
/// register with Zulip's push notification service (done in the background; the outcome comes
/// as `device` events).
pub async fn register_push(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    if state.push.is_none() {
        return Err(push_not_configured());
    }
    let device_id = params.required_int::<u64>("device_id")?;
    let push_key_id = params.str("push_key_id");
    let push_key = params.str("push_key");
    let token_kind = params.str("token_kind");
    let token_id = params.str("token_id");
    let bouncer_public_key = params.str("bouncer_public_key");
    let encrypted = params.str("encrypted_push_registration");
    let key = match (push_key_id, push_key) {
        (Some(id), Some(key)) => {
            let id: u32 = id.trim().parse().map_err(|_| {
                ApiError::bad_request(
                    "Invalid push_key_id: Value error, Not a valid unsigned 32-bit integer",
                )
            })?;
            let raw = crate::notify::push::parse_push_key(&key)
                .ok_or_else(|| ApiError::bad_request("Invalid `push_key`"))?;
            Some((
                id,
                crate::notify::push::seal_key(&state.secret, auth.user_id, device_id, &raw),
            ))
        }
        _ => None,
    };
    let token = match (token_kind, token_id, bouncer_public_key, encrypted) {
        (Some(kind), Some(id), Some(bouncer_key), Some(sealed)) => {
            if kind != "fcm" && kind != "apns" {
                return Err(ApiError::bad_request("Invalid token_kind"));
            }
            let token_id = crate::notify::push::parse_token_id(&id)
                .ok_or_else(|| ApiError::bad_request("`token_id` is not Base64 encoded"))?;
            if sealed.len() > 16_384 || bouncer_key.len() > 256 {
                return Err(ApiError::bad_request("Invalid encrypted_push_registration"));
            }
            Some(crate::commands::devices::TokenRequest {
                token_kind: kind,
                token_id,
                encrypted_push_registration: sealed,
                bouncer_public_key: bouncer_key,
            })
        }
        _ => None,
    };
    let request = crate::commands::devices::PushRegistration {
        device_id,
        key,
        token,
    };
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::devices::register_push(s, ctx, request.clone())
        })
        .await
}

/// `POST /mobile_push/test_notification` (`token`, legacy) and
/// `POST /mobile_push/e2ee/test_notification` (`device_id`): Zulip's test payload to the
/// caller's devices that take pushes (one device when named), sent now, with the service's
/// errors as Zulip answers them.
pub async fn test_notification(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let Some(push) = state.push.clone() else {
        return Err(push_not_configured());
    };
    let device_id = params.int::<u64>("device_id")?;
    // The legacy form names a token: the device whose token id it has.
    let token_id = params.str("token").map(|token| {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(token.as_bytes());
        i64::from_be_bytes(digest[..8].try_into().unwrap_or([0; 8]))
    });
    let (devices, payload) = state.engine.read(|s| {
        let devices: Vec<_> = crate::notify::push::devices_of(s, &state.secret, auth.user_id)
            .into_iter()
            .filter(|d| device_id.is_none_or(|id| d.0 == id))
            .filter(|d| token_id.is_none_or(|id| d.2 == id))
            .collect();
        let payload = crate::notify::push::test_payload(
            s,
            &state.site,
            auth.user_id,
            crate::time::now_ms() / 1000,
        );
        (devices, payload)
    });
    if devices.is_empty() {
        return Err(ApiError::new(
            ErrorCode::NoActivePushDevice,
            "No active registered push device",
        ));
    }
    let body = json!({
        "realm_uuid": crate::notify::push::bouncer::realm_uuid(&state.secret),
        "push_requests": crate::notify::push::push_requests(&devices, &payload, true),
    });
    if let Err(error) = push
        .bouncer
        .post(
            "push/e2ee/notify",
            crate::notify::push::bouncer::Body::Json(&body),
            true,
        )
        .await
    {
        tracing::warn!(%error, "a test push was not sent");
        return Err(if error.unreachable {
            ApiError::new(
                ErrorCode::FailedToConnectBouncer,
                "Network error while connecting to Zulip push notification service.",
            )
        } else if error.retry {
            ApiError::new(
                ErrorCode::InternalServerErrorOnBouncer,
                "Internal server error on Zulip push notification service, retry later.",
            )
        } else {
            ApiError::new(
                ErrorCode::AdminActionRequired,
                "Push notification configuration issue on server, contact the server administrator or retry later.",
            )
        });
    }
    let device_ids: Vec<u64> = devices.iter().map(|d| d.0).collect();
    let user = auth.user_id;
    state
        .engine
        .execute(Some(user), move |_, _| {
            Ok(crate::commands::Decision::events(vec![
                crate::events::Event::PushTestSent {
                    user_id: user,
                    device_ids: device_ids.clone(),
                },
            ]))
        })
        .await?;
    Ok(params.success(json!({})))
}

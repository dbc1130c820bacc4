//! Two-factor authentication over HTTP (`identity::two_factor` has the codes,
//! `commands::two_factor` the decisions):
//!
//! - the web login's second step: after a right password, a person who has it (or an owner or
//!   administrator who must have it and does not yet) gets a short-lived MACed cookie and the
//!   login page asks for a code (or shows the QR code to enrol), `POST /login/two_factor/`;
//! - the settings: `GET /json/users/me/two_factor`, `POST /json/users/me/two_factor/setup`,
//!   `GET /json/users/me/two_factor/qr.svg`, `POST|DELETE /json/users/me/two_factor`,
//!   `POST /json/users/me/two_factor/backup_codes`;
//! - `DELETE /users/{user_id}/two_factor`: an administrator switches it off for someone who
//!   lost their device;
//! - (`second_factor` has the code checks, the pending login's cookie, and `POST
//!   /fetch_api_key` with the password followed by a code.)
//!
//! Sign-in through a directory's password (LDAP) takes the second step too; sign-in through an
//! identity provider (OpenID Connect, JWT) does not: the provider is in charge of its factors,
//! as in Zulip.

use super::auth::audit_sign_in_outcome;
use super::second_factor::{
    checked_against_new, checked_against_own, now_seconds, pending_cookie, pending_of, Pending,
    SecondStep,
};
use super::webclient::{redirect, same_origin_post};
use super::{AppState, Auth, Params};
use crate::commands::two_factor::{self as commands, Passed};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::identity::two_factor as totp;
use crate::ids::UserId;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use serde_json::json;

/// How long an enrolment started in the settings may take to be confirmed.
const SETUP_SECONDS: i64 = 900;

/// The key and `otpauth://` URI of an enrolment, for the person `user_id`.
fn enrolment_offer(
    state: &AppState,
    user_id: UserId,
    key_nonce: &str,
) -> ApiResult<(String, String)> {
    let (email, organization) = state
        .engine
        .read(|s| {
            s.users
                .get(user_id)
                .map(|u| (u.email.clone(), s.realm.name.clone()))
        })
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    let key = totp::key(&state.secret, user_id, key_nonce);
    let issuer = if organization.trim().is_empty() {
        "Chronicle".to_owned()
    } else {
        organization
    };
    Ok((totp::base32(&key), totp::otpauth_uri(&key, &issuer, &email)))
}

fn svg(uri: &str) -> HttpResponse {
    match totp::qr_svg(uri) {
        Some(svg) => HttpResponse::Ok()
            .content_type("image/svg+xml")
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .body(svg),
        None => ApiError::internal("the QR code could not be drawn").error_response(),
    }
}

/// `GET /login/two_factor/setup`: the key to enrol with, during a login that requires it.
pub async fn login_setup(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let Some(Pending {
        user_id,
        step: SecondStep::Enrol { key_nonce },
        ..
    }) = pending_of(&req, &state)
    else {
        return expired().error_response();
    };
    match enrolment_offer(&state, user_id, &key_nonce) {
        Ok((secret, uri)) => HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(json!({"result": "success", "msg": "", "secret": secret, "otpauth_uri": uri})),
        Err(error) => error.error_response(),
    }
}

/// `GET /login/two_factor/qr.svg`: its QR code.
pub async fn login_qr(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let Some(Pending {
        user_id,
        step: SecondStep::Enrol { key_nonce },
        ..
    }) = pending_of(&req, &state)
    else {
        return expired().error_response();
    };
    match enrolment_offer(&state, user_id, &key_nonce) {
        Ok((_, uri)) => svg(&uri),
        Err(error) => error.error_response(),
    }
}

fn expired() -> ApiError {
    ApiError::bad_request("This login took too long; please start again")
}

/// `POST /login/two_factor/` (`code`): the login's second step. A right code (or the first
/// code of the enrolment) ends the login as a password alone would have; a wrong one goes back
/// to the step with `error=invalid_code`.
pub async fn login_code(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> HttpResponse {
    if !same_origin_post(&req, &state) {
        return redirect("/login/?error=origin");
    }
    let Some(pending) = pending_of(&req, &state) else {
        return redirect("/login/?error=two_factor_expired");
    };
    let code = params.str("code").unwrap_or_default();
    let ip = super::auth::client_ip(&req, &state);
    let login = state
        .engine
        .read(|s| s.users.get(pending.user_id).map(|u| u.email.clone()))
        .unwrap_or_default();
    let user_id = pending.user_id;
    let passed = match &pending.step {
        SecondStep::Code => checked_against_own(&state, user_id, &code).map(Passed::Proof),
        SecondStep::Enrol { key_nonce } => checked_against_new(&state, user_id, key_nonce, &code)
            .map(|step| Passed::Enrolled {
                key_nonce: key_nonce.clone(),
                step,
            }),
    };
    let passed = match passed {
        Ok(passed) => passed,
        Err(error) => {
            audit_sign_in_outcome(&state, "two_factor", &login, ip, Err(&error));
            let again = match pending.step {
                SecondStep::Code => "code",
                SecondStep::Enrol { .. } => "setup",
            };
            let reason = match error.code() {
                Some(ErrorCode::RateLimitHit) => "code_rate_limited",
                _ => "invalid_code",
            };
            return redirect(&format!("/login/?two_factor={again}&error={reason}"));
        }
    };
    // The code is spent in the commit that signs in: the browser's session, or (for the mobile
    // app) the code alone before its key is handed over.
    let outcome = match pending.mobile_otp {
        Some(otp) => state
            .engine
            .execute(Some(user_id), move |s, _ctx| {
                Ok(crate::commands::Decision::events(
                    passed.events(s, user_id)?,
                ))
            })
            .await
            .map(|_| super::webclient::mobile_flow_redirect(&req, &state, user_id, &otp)),
        None => {
            super::webclient::start_browser_session_with(&req, &state, user_id, Some(passed)).await
        }
    };
    audit_sign_in_outcome(
        &state,
        "two_factor",
        &login,
        ip,
        outcome.as_ref().map(|_| user_id),
    );
    let mut response = match outcome {
        Ok(response) => response,
        // Spent meanwhile by another request with the same code, or the account changed.
        Err(error) => match error.code() {
            Some(ErrorCode::UserDeactivated) => redirect("/login/?error=deactivated"),
            _ => redirect("/login/?two_factor=code&error=invalid_code"),
        },
    };
    if let Ok(value) = HeaderValue::from_str(&pending_cookie(&state, "", 0)) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// `GET /json/users/me/two_factor`: whether the person has it, how many backup codes are
/// left, and whether the organization requires it of them.
pub async fn status(
    req: HttpRequest,
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let me = super::auth::current_session(&req)?;
    let (enrolment, admin) = state.engine.read(|s| {
        (
            s.sessions.two_factor(me.user_id).cloned(),
            s.users.get(me.user_id).is_some_and(|u| u.role.is_admin()),
        )
    });
    Ok(params.success(json!({
        "available": state.identity.two_factor,
        "enabled": enrolment.is_some(),
        "enabled_at": enrolment.as_ref().map(|e| e.enabled_at / 1000),
        "backup_codes_left": enrolment.as_ref().map_or(0, |e| e.backup_codes_left()),
        "required": admin && state.identity.two_factor_required_for_admins,
    })))
}

/// The token of an enrolment started in the settings: its nonce, until when, and a MAC that
/// binds both to the person.
fn setup_token(state: &AppState, user_id: UserId, key_nonce: &str, expires: i64) -> String {
    let payload = format!("{key_nonce}.{expires}");
    let mac = state
        .secret
        .sign_in_flow_mac(&format!("two-factor-setup\0{}\0{payload}", user_id.0));
    format!("{payload}.{mac}")
}

/// The nonce of a valid setup token of `user_id`'s.
fn setup_nonce(state: &AppState, user_id: UserId, token: &str) -> ApiResult<String> {
    let refused = || ApiError::bad_request("The setup has expired; please start again");
    let mut parts = token.split('.');
    let (Some(nonce), Some(expires), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(refused());
    };
    let expires: i64 = expires.parse().map_err(|_| refused())?;
    let expected = setup_token(state, user_id, nonce, expires);
    if expires <= now_seconds()
        || !crate::auth::constant_time_eq(expected.as_bytes(), token.as_bytes())
    {
        return Err(refused());
    }
    Ok(nonce.to_owned())
}

fn available(state: &AppState) -> ApiResult<()> {
    if state.identity.two_factor {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "Two-factor authentication is not enabled on this server",
        ))
    }
}

/// `POST /json/users/me/two_factor/setup`: a new key to enrol with (nothing is recorded until
/// a code of it confirms it): `secret` (base32), `otpauth_uri`, and `setup_token` for the
/// confirmation and the QR code.
pub async fn setup(
    req: HttpRequest,
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    available(&state)?;
    let me = super::auth::current_session(&req)?;
    if state
        .engine
        .read(|s| s.sessions.two_factor(me.user_id).is_some())
    {
        return Err(ApiError::bad_request(
            "Two-factor authentication is already on",
        ));
    }
    let nonce = crate::auth::new_api_key_nonce();
    let (secret, uri) = enrolment_offer(&state, me.user_id, &nonce)?;
    let token = setup_token(&state, me.user_id, &nonce, now_seconds() + SETUP_SECONDS);
    Ok(params.success(json!({"secret": secret, "otpauth_uri": uri, "setup_token": token})))
}

/// `GET /json/users/me/two_factor/qr.svg?setup_token=…`: the QR code of an enrolment.
pub async fn setup_qr(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> HttpResponse {
    let drawn = (|| {
        let me = super::auth::current_session(&req)?;
        let token = params.required_str("setup_token")?;
        let nonce = setup_nonce(&state, me.user_id, &token)?;
        enrolment_offer(&state, me.user_id, &nonce)
    })();
    match drawn {
        Ok((_, uri)) => svg(&uri),
        Err(error) => error.error_response(),
    }
}

/// Runs `decide` with the nonce of new backup codes for `user_id`, and answers the codes
/// (shown this once).
async fn with_new_backup_codes<F>(
    state: &AppState,
    params: Params,
    user_id: UserId,
    decide: F,
) -> ApiResult<HttpResponse>
where
    F: Fn(
            &crate::projections::Projections,
            &crate::commands::Ctx,
            String,
        ) -> ApiResult<crate::commands::Decision>
        + Send
        + 'static,
{
    let backup_nonce = crate::auth::new_api_key_nonce();
    let nonce = backup_nonce.clone();
    state
        .engine
        .execute(Some(user_id), move |s, ctx| decide(s, ctx, nonce.clone()))
        .await?;
    let codes = totp::backup_codes(&state.secret, user_id, &backup_nonce);
    Ok(params.success(json!({ "backup_codes": codes })))
}

/// `POST /json/users/me/two_factor` (`setup_token`, `code`): confirms the enrolment with the
/// authenticator's first code; answers the ten backup codes (shown once).
pub async fn enable(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    available(&state)?;
    let me = super::auth::current_session(&req)?;
    let token = params.required_str("setup_token")?;
    let code = params.required_str("code")?;
    let key_nonce = setup_nonce(&state, me.user_id, &token)?;
    let step = checked_against_new(&state, me.user_id, &key_nonce, &code)?;
    let session = me.session_id.clone();
    with_new_backup_codes(&state, params, me.user_id, move |s, ctx, nonce| {
        commands::enable_own(s, ctx, key_nonce.clone(), nonce, step, &session)
    })
    .await
}

/// `POST /json/users/me/two_factor/backup_codes` (`code`): ten new backup codes in place of
/// the old ones.
pub async fn renew_backup_codes(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let me = super::auth::current_session(&req)?;
    let code = params.required_str("code")?;
    let proof = checked_against_own(&state, me.user_id, &code)?;
    with_new_backup_codes(&state, params, me.user_id, move |s, ctx, nonce| {
        commands::issue_backup_codes(s, ctx, proof, nonce)
    })
    .await
}

/// `DELETE /json/users/me/two_factor` (`code`): switches it off, with a code (so that a
/// browser left signed in is not enough).
pub async fn disable_own(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let me = super::auth::current_session(&req)?;
    let code = params.required_str("code")?;
    let proof = checked_against_own(&state, me.user_id, &code)?;
    let user_id = me.user_id;
    state
        .engine
        .execute(Some(user_id), move |s, ctx| {
            commands::disable(s, ctx, user_id, Some(proof))
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `DELETE /users/{user_id}/two_factor`: an administrator switches off someone's two-factor
/// authentication (an owner's: only an owner), for a person who lost their device.
pub async fn disable_for(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let target = UserId(super::path_id(&req, "user_id")?);
    if target == auth.user_id {
        return Err(ApiError::bad_request(
            "Switch off your own two-factor authentication in your settings, with a code",
        ));
    }
    state
        .answer(&auth, params, move |s, ctx| {
            commands::disable(s, ctx, target, None)
        })
        .await
}

//! Passwords with a second factor: which second step a password sign-in needs, the cookie of
//! a login between its password and its code, code checks (counted against the person's
//! failures), and `POST /fetch_api_key`, which takes the password followed by the code.
//!
//! Below the web login (`webclient`) and the two-factor pages (`two_factor`), above the
//! password check itself (`auth`).

use super::auth::{audit_sign_in, client_ip, secure_suffix, sign_in_with_password};
use super::{AppState, Params};
use crate::commands::two_factor as commands;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::identity::two_factor::{self as totp, Enrolment, Proof};
use crate::ids::UserId;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

/// The cookie that carries a login between the password and the code.
const PENDING_COOKIE: &str = "chronicle_2fa";
/// How long the code may follow the password (django-two-factor-auth's 600 s).
const PENDING_SECONDS: i64 = 600;

/// What the second step of a login is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecondStep {
    /// A code of the person's authenticator (or a backup code).
    Code,
    /// Enrolment first (required and not set up): the key from this nonce.
    Enrol { key_nonce: String },
}

/// A login between its password and its code, as its cookie carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub user_id: UserId,
    pub expires: i64,
    pub step: SecondStep,
    /// The mobile app's pad, when the app started this login.
    pub mobile_otp: Option<String>,
}

impl Pending {
    fn payload(&self) -> String {
        let step = match &self.step {
            SecondStep::Code => "code".to_owned(),
            SecondStep::Enrol { key_nonce } => format!("enrol-{key_nonce}"),
        };
        let otp = self.mobile_otp.as_deref().unwrap_or("-");
        format!("{}.{}.{step}.{otp}", self.user_id.0, self.expires)
    }

    /// The MAC of `payload`, bound to the person's password as it is now: a password changed
    /// or reset meanwhile ends the pending login.
    fn mac(state: &AppState, payload: &str) -> String {
        let user = payload
            .split('.')
            .next()
            .and_then(|id| id.parse().ok())
            .map(UserId);
        let password = state
            .engine
            .read(|s| {
                user.and_then(|u| s.users.get(u))
                    .and_then(|u| u.password_hash.clone())
            })
            .unwrap_or_default();
        state
            .secret
            .sign_in_flow_mac(&format!("two-factor\0{payload}\0{password}"))
    }

    fn cookie_value(&self, state: &AppState) -> String {
        let payload = self.payload();
        format!("{payload}.{}", Self::mac(state, &payload))
    }

    fn parse(state: &AppState, value: &str, now: i64) -> Option<Pending> {
        let (payload, mac) = value.rsplit_once('.')?;
        let expected = Self::mac(state, payload);
        if !crate::auth::constant_time_eq(mac.as_bytes(), expected.as_bytes()) {
            return None;
        }
        let mut parts = payload.split('.');
        let user_id = UserId(parts.next()?.parse().ok()?);
        let expires: i64 = parts.next()?.parse().ok()?;
        let step = match parts.next()? {
            "code" => SecondStep::Code,
            other => SecondStep::Enrol {
                key_nonce: other.strip_prefix("enrol-")?.to_owned(),
            },
        };
        let mobile_otp = match parts.next()? {
            "-" => None,
            otp => Some(otp.to_owned()),
        };
        (expires > now && parts.next().is_none()).then_some(Pending {
            user_id,
            expires,
            step,
            mobile_otp,
        })
    }
}

pub fn now_seconds() -> i64 {
    crate::time::now_ms() / 1000
}

/// The second step `user_id`'s password sign-in needs, if any.
pub fn second_step(state: &AppState, user_id: UserId) -> Option<SecondStep> {
    if !state.identity.two_factor {
        return None;
    }
    let (enrolled, admin) = state.engine.read(|s| {
        (
            s.sessions.two_factor(user_id).is_some(),
            s.users.get(user_id).is_some_and(|u| u.role.is_admin()),
        )
    });
    if enrolled {
        Some(SecondStep::Code)
    } else if admin && state.identity.two_factor_required_for_admins {
        Some(SecondStep::Enrol {
            key_nonce: crate::auth::new_api_key_nonce(),
        })
    } else {
        None
    }
}

/// After a right password: the login page's second step (where to send the browser), and the
/// `Set-Cookie` value of the pending login.
pub fn begin(
    state: &AppState,
    user_id: UserId,
    step: SecondStep,
    mobile_otp: Option<String>,
) -> (&'static str, String) {
    let page = match step {
        SecondStep::Code => "/login/?two_factor=code",
        SecondStep::Enrol { .. } => "/login/?two_factor=setup",
    };
    let pending = Pending {
        user_id,
        expires: now_seconds() + PENDING_SECONDS,
        step,
        mobile_otp,
    };
    (
        page,
        pending_cookie(state, &pending.cookie_value(state), PENDING_SECONDS),
    )
}

/// The `Set-Cookie` value of a pending login (`max_age` 0: cleared).
pub fn pending_cookie(state: &AppState, value: &str, max_age: i64) -> String {
    format!(
        "{PENDING_COOKIE}={value}; Path=/login/; Max-Age={max_age}; HttpOnly; SameSite=Strict{}",
        secure_suffix(state)
    )
}

pub fn pending_of(req: &HttpRequest, state: &AppState) -> Option<Pending> {
    Pending::parse(
        state,
        super::auth::cookie(req, PENDING_COOKIE)?,
        now_seconds(),
    )
}

/// Checks `code` for `user_id` against `enrolment`, counted against the person's failures
/// (ten in fifteen minutes; a right code takes its try back).
pub fn checked(
    state: &AppState,
    user_id: UserId,
    enrolment: &Enrolment<'_>,
    code: &str,
) -> ApiResult<Proof> {
    let key = crate::http::rate_limit::Key::TwoFactor(user_id.0);
    state.rate_limiter.hit(key.clone())?;
    match totp::check(&state.secret, user_id, enrolment, code, now_seconds()) {
        Some(proof) => {
            state.rate_limiter.release(&key);
            Ok(proof)
        }
        None => Err(ApiError::bad_request(commands::INVALID_CODE)),
    }
}

/// A code checked against `user_id`'s enrolment.
pub fn checked_against_own(state: &AppState, user_id: UserId, code: &str) -> ApiResult<Proof> {
    let enrolment = state
        .engine
        .read(|s| s.sessions.two_factor(user_id).cloned())
        .ok_or_else(|| ApiError::bad_request("Two-factor authentication is not on"))?;
    checked(state, user_id, &enrolment.enrolment(), code)
}

/// A code checked against a key not enrolled yet.
pub fn checked_against_new(
    state: &AppState,
    user_id: UserId,
    key_nonce: &str,
    code: &str,
) -> ApiResult<u64> {
    let fresh = Enrolment {
        key_nonce,
        backup_nonce: None,
        backup_used: 0,
        last_step: 0,
    };
    match checked(state, user_id, &fresh, code)? {
        Proof::Code { step } => Ok(step),
        Proof::Backup { .. } => Err(ApiError::bad_request(commands::INVALID_CODE)),
    }
}

/// What `POST /fetch_api_key` makes of a password for `user_id`, whose password (all of
/// `given`, or `given` without its last six characters) was right: `Ok(None)` when the
/// account needs no code; the proof to spend when it has two-factor authentication and the
/// code followed the password; else why not.
pub fn api_key_second_factor(
    state: &AppState,
    user_id: UserId,
    code: Option<&str>,
) -> ApiResult<Option<Proof>> {
    match second_step(state, user_id) {
        None => Ok(None),
        Some(SecondStep::Enrol { .. }) => Err(ApiError::new(
            ErrorCode::AuthenticationFailed,
            "Your organization requires two-factor authentication: set it up by logging in to \
             the web app first",
        )),
        Some(SecondStep::Code) => match code {
            Some(code) => checked_against_own(state, user_id, code).map(Some),
            None => Err(ApiError::new(
                ErrorCode::AuthenticationFailed,
                "This account uses two-factor authentication: enter your password followed by \
                 the 6-digit code of your authenticator app",
            )),
        },
    }
}

/// `POST /fetch_api_key`: exchanges a username (email) and password for the API key.
pub async fn fetch_api_key(
    state: web::Data<AppState>,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let username = params.required_str("username")?;
    let password = params.required_str("password")?;
    let ip = client_ip(&req, &state);
    let user_id = password_and_second_factor(&state, ip, &username, password).await?;
    let (api_key, email) = state
        .engine
        .read(|s| {
            s.users.get(user_id).map(|u| {
                (
                    state.secret.api_key(user_id, &u.api_key_nonce),
                    u.email.clone(),
                )
            })
        })
        .ok_or_else(|| ApiError::internal("account vanished"))?;
    state.alert_login(&req, user_id);
    Ok(params.success(json!({"api_key": api_key, "email": email, "user_id": user_id.0})))
}

/// `fetch_api_key`'s check: the password, and for a person with two-factor authentication the
/// code typed right after it (`hunter2` then `123456`: `hunter2123456`), as FreeIPA takes them.
/// A right password without the code is refused with a message that says how; the code is
/// spent. One password check per request when the address is known (whether the account has a
/// second factor decides which part of the text is the password, so the time taken does not
/// tell who has one), and one line in the sign-in audit with the outcome.
async fn password_and_second_factor(
    state: &AppState,
    ip: Option<std::net::IpAddr>,
    username: &str,
    password: String,
) -> ApiResult<UserId> {
    let digits = crate::identity::two_factor::DIGITS;
    let split = password
        .len()
        .checked_sub(digits)
        .filter(|at| *at > 0 && password.is_char_boundary(*at))
        .map(|at| password.split_at(at))
        .filter(|(_, code)| code.bytes().all(|b| b.is_ascii_digit()))
        .map(|(password, code)| (password.to_owned(), code.to_owned()));
    let known = state.engine.read(|s| {
        s.users
            .by_email(username)
            .map(|u| s.sessions.two_factor(u.user_id).is_some())
    });
    let (method, result) = match (known, split) {
        // An address with a second factor: the password is what precedes the code.
        (Some(true), Some((password, code))) if state.identity.two_factor => {
            let (method, result) = sign_in_with_password(state, ip, username, password).await;
            (method, with_second_factor(state, result, Some(&code)).await)
        }
        // Any other address: the whole text is the password.
        (Some(_), _) => {
            let (method, result) = sign_in_with_password(state, ip, username, password).await;
            (method, with_second_factor(state, result, None).await)
        }
        // A directory username: the whole text, else (a right password followed by a code)
        // the text before the code, for an account that has a second factor.
        (None, split) => {
            let (method, whole) = sign_in_with_password(state, ip, username, password).await;
            match (whole, split) {
                (Err(error), Some((password, code)))
                    if state.identity.two_factor
                        && state.identity.ldap.is_some()
                        && error.code() == Some(ErrorCode::AuthenticationFailed) =>
                {
                    let (method, result) =
                        sign_in_with_password(state, ip, username, password).await;
                    if result.is_ok() {
                        // The first try was this person's too: it does not count as a failure.
                        let key =
                            crate::http::rate_limit::Key::Login(username.trim().to_lowercase());
                        state.rate_limiter.release(&key);
                    }
                    let enrolled = result.as_ref().is_ok_and(|user_id| {
                        state
                            .engine
                            .read(|s| s.sessions.two_factor(*user_id).is_some())
                    });
                    let result = if enrolled || result.is_err() {
                        result
                    } else {
                        Err(error)
                    };
                    (method, with_second_factor(state, result, Some(&code)).await)
                }
                (whole, _) => (method, with_second_factor(state, whole, None).await),
            }
        }
    };
    audit_sign_in(state, method, username, ip, &result);
    result
}

/// A password sign-in's outcome once the second factor (`code`, typed after the password) is
/// checked and spent, for an account that has one or must have one.
async fn with_second_factor(
    state: &AppState,
    signed_in: ApiResult<UserId>,
    code: Option<&str>,
) -> ApiResult<UserId> {
    let user_id = signed_in?;
    if let Some(proof) = api_key_second_factor(state, user_id, code)? {
        state
            .engine
            .execute(Some(user_id), move |s, _ctx| {
                let spent = crate::commands::two_factor::spend(s, user_id, proof)?;
                Ok(crate::commands::Decision::events(vec![spent]))
            })
            .await?;
    }
    Ok(user_id)
}

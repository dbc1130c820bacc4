//! Authentication: the `Auth` extractor (HTTP Basic `email:api_key`, or a web session on
//! `/json/...`), `POST /fetch_api_key` and
//! `POST /users/me/api_key/regenerate`.

use super::{AppState, Params};
use crate::auth::{constant_time_eq, has_api_key_format, new_api_key_nonce, verify_password};
use crate::commands;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::Role;
use crate::ids::UserId;
use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest, HttpResponse};
use base64::Engine as _;
use serde_json::json;
use std::future::{ready, Ready};

/// A caller whose Basic credentials were valid for an active account.
#[derive(Debug, Clone)]
pub struct Auth {
    pub user_id: UserId,
    pub role: Role,
}

impl Auth {
    /// Owners and administrators pass; everyone else gets `UNAUTHORIZED_PRINCIPAL`.
    pub fn require_admin(&self) -> ApiResult<()> {
        if self.role.is_admin() {
            Ok(())
        } else {
            Err(ApiError::must_be_admin())
        }
    }
}

pub(crate) fn authenticate(req: &HttpRequest) -> ApiResult<Auth> {
    // The web client's mirror of the API is authenticated by its session cookie instead.
    if is_session_path(req.path()) {
        return session_auth(req);
    }
    let state = req
        .app_data::<web::Data<AppState>>()
        .ok_or_else(|| ApiError::internal("application state missing"))?;
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        // A browser opening an uploaded file (a link, or an image in a message) or an avatar
        // brings its web session instead.
        let opening_upload = req.method() == actix_web::http::Method::GET
            && (req.path().starts_with("/user_uploads/") || req.path().starts_with("/avatar/"));
        if let Some(session) = opening_upload.then(|| session_of(req, state)).flatten() {
            return Ok(Auth {
                user_id: session.user_id,
                role: session.role,
            });
        }
        return Err(not_logged_in());
    };
    let value = value.to_str().unwrap_or_default();
    let (scheme, encoded) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(ApiError::bad_request(
            "This endpoint requires HTTP basic authentication.",
        ));
    }
    let malformed = || ApiError::unauthorized("Invalid authorization header for basic auth");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (email, key) = decoded.split_once(':').ok_or_else(malformed)?;
    if !has_api_key_format(key) {
        return Err(ApiError::unauthorized("Malformed API key"));
    }
    state.engine.read(|s| {
        let user = s
            .users
            .by_email(email)
            // The server's own bots have no API access at all.
            .filter(|u| !u.is_system_bot())
            .filter(|u| {
                let expected = state.secret.api_key(u.user_id, &u.api_key_nonce);
                constant_time_eq(expected.as_bytes(), key.as_bytes())
            })
            .ok_or_else(|| ApiError::unauthorized("Invalid API key"))?;
        if !user.is_active {
            return Err(ApiError::unauthorized("Account is deactivated"));
        }
        // Incoming webhook bots post messages and call their webhooks (which some services
        // authenticate with these credentials instead of a key in the URL), nothing else, as
        // in Zulip.
        let sending = req.method() == actix_web::http::Method::POST
            && (req.path() == "/api/v1/messages" || req.path().starts_with("/api/v1/external/"));
        if user.bot_type == Some(crate::events::INCOMING_WEBHOOK_BOT) && !sending {
            return Err(ApiError::unauthorized(
                "This API is not available to incoming webhook bots.",
            ));
        }
        Ok(Auth {
            user_id: user.user_id,
            role: user.role,
        })
    })
}

/// The caller of a request that was authenticated and counted against its user before it
/// reached its handler.
#[derive(Debug, Clone)]
pub struct Counted(pub Auth);

impl FromRequest for Auth {
    type Error = ApiError;
    type Future = Ready<Result<Auth, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        // An API request was authenticated, and counted against its user, on its way in
        // (`http::app`'s rate-limit layer).
        if let Some(auth) = req.extensions().get::<Counted>() {
            return ready(Ok(auth.0.clone()));
        }
        ready(authenticate(req).and_then(|auth| {
            // Every authenticated request counts against its user.
            if let Some(state) = req.app_data::<web::Data<AppState>>() {
                let key = crate::http::rate_limit::Key::User(auth.user_id.0);
                if let Some(standing) = state.rate_limiter.hit(key)? {
                    actix_web::HttpMessage::extensions_mut(req).insert(standing);
                }
            }
            Ok(auth)
        }))
    }
}

/// Brings one person's account in step with their directory entry: only they are listed, and
/// nobody missing is deactivated, so nobody else is touched.
async fn sync_one(
    state: &AppState,
    entry: crate::commands::directory::Entry,
    rules: crate::commands::directory::SyncRules,
) -> ApiResult<()> {
    let rules = crate::commands::directory::SyncRules {
        deactivate_missing: false,
        ..rules
    };
    state
        .engine
        .execute(None, move |s, ctx| {
            crate::commands::directory::sync(s, ctx, std::slice::from_ref(&entry), &rules)
        })
        .await?;
    Ok(())
}

/// `POST /jwt/fetch_api_key` (`token`, `include_profile`): the API key of the person a JSON Web
/// Token signed with the organization's key names (its `email` claim), as Zulip's JWT backend;
/// with `include_profile`, their user object too.
pub async fn jwt_fetch_api_key(
    state: web::Data<AppState>,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let token = params.str("token").unwrap_or_default();
    let include_profile = params.bool("include_profile")?.unwrap_or(false);
    let user_id = jwt_person(&state, client_ip(&req, &state), &token)?;
    let body = state
        .engine
        .read(|s| {
            s.users.get(user_id).map(|u| {
                let mut body = json!({
                    "api_key": state.secret.api_key(user_id, &u.api_key_nonce),
                    "email": u.email,
                });
                if include_profile {
                    body["user"] = crate::render::users::user_json(s, &state.site, u, u, true);
                }
                body
            })
        })
        .ok_or_else(|| ApiError::internal("account vanished"))?;
    state.alert_login(&req, user_id);
    Ok(params.success(body))
}

/// The active person a JSON Web Token names, with Zulip's refusals: JWT not configured, no
/// token, a token that is not signed with the key (or expired, or of another algorithm), no
/// `email` claim, an unknown address (`AUTHENTICATION_FAILED`), a deactivated account. Why a
/// token was refused goes to the server's log, never the token.
pub fn jwt_person(
    state: &AppState,
    ip: Option<std::net::IpAddr>,
    token: &str,
) -> ApiResult<UserId> {
    let (login, result) = jwt_account(state, token);
    audit_sign_in(state, "jwt", &login, ip, &result);
    result
}

/// [`jwt_person`]'s work, with the address the token named (if it was read).
fn jwt_account(state: &AppState, token: &str) -> (String, ApiResult<UserId>) {
    match jwt_claimed_email(state, token) {
        Ok(person) => {
            let result = jwt_active_account(state, &person);
            (person, result)
        }
        Err(e) => (String::new(), Err(e)),
    }
}

/// The `email` claim of a token signed with the organization's key.
fn jwt_claimed_email(state: &AppState, token: &str) -> ApiResult<String> {
    let Some(key) = &state.identity.jwt else {
        return Err(ApiError::bad_request(
            "JWT authentication is not enabled for this organization",
        ));
    };
    if token.is_empty() {
        return Err(ApiError::bad_request("No JSON web token passed in request"));
    }
    let now = crate::time::now_ms() / 1000;
    let claims = crate::identity::jwt::verify(token, key, now).map_err(|reason| {
        tracing::info!(?reason, "a JSON web token was refused");
        ApiError::bad_request("Bad JSON web token")
    })?;
    claims
        .get("email")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ApiError::bad_request("No email specified in JSON web token claims"))
}

/// The active human account of `email`, with Zulip's refusals.
fn jwt_active_account(state: &AppState, email: &str) -> ApiResult<UserId> {
    let account = state.engine.read(|s| {
        s.users
            .by_email(email)
            .filter(|u| !u.is_bot())
            .map(|u| (u.user_id, u.is_active))
    });
    match account {
        Some((user_id, true)) => Ok(user_id),
        Some((_, false)) => Err(deactivated()),
        None => Err(ApiError::new(
            ErrorCode::AuthenticationFailed,
            "Your username or password is incorrect",
        )),
    }
}

/// The account `username` names, if `password` is its password and it may sign in: a
/// password Chronicle keeps (when `[auth] password` is on), else the directory's (an LDAP bind;
/// `username` may then be the directory's username too). `AUTHENTICATION_FAILED` otherwise
/// (also for an unknown account, after the same work), or `USER_DEACTIVATED`. Five failures per
/// username in 30 minutes, then nothing more is tried (`RATE_LIMIT_HIT`): an attempt is counted
/// before its hash is checked and given back when the password was right, so parallel guesses
/// cannot all be checked before the first failure is counted. The hash is checked off the async
/// workers, within `PasswordWork`'s bounds (`ip` is the client's address).
pub async fn check_password(
    state: &AppState,
    ip: Option<std::net::IpAddr>,
    username: &str,
    password: String,
) -> ApiResult<UserId> {
    let (method, result) = sign_in_with_password(state, ip, username, password).await;
    audit_sign_in(state, method, username, ip, &result);
    result
}

/// Writes a sign-in attempt to the sign-in audit (`DATA_DIR/sign-in-audit.jsonl`); a failure
/// to write it is logged, and does not change the answer.
pub fn audit_sign_in(
    state: &AppState,
    method: &'static str,
    login: &str,
    ip: Option<std::net::IpAddr>,
    result: &ApiResult<UserId>,
) {
    audit_sign_in_outcome(state, method, login, ip, result.as_ref().copied());
}

/// [`audit_sign_in`] with the outcome borrowed.
pub fn audit_sign_in_outcome(
    state: &AppState,
    method: &'static str,
    login: &str,
    ip: Option<std::net::IpAddr>,
    result: Result<UserId, &ApiError>,
) {
    let attempt = crate::access_audit::SignIn {
        at_ms: crate::time::now_ms(),
        method,
        login: login.trim().to_owned(),
        user_id: result.as_ref().ok().map(|u| u.0),
        outcome: match result {
            Ok(_) => "ok".to_owned(),
            Err(error) => error
                .code()
                .map_or("INTERNAL", |code| code.as_str())
                .to_owned(),
        },
        ip,
    };
    if let Err(error) = state.sign_in_audit.record_sign_in(&attempt) {
        tracing::warn!(%error, "the sign-in audit could not be written");
    }
}

/// [`check_password`]'s work, with the way it was decided (`password` or `ldap`).
pub(super) async fn sign_in_with_password(
    state: &AppState,
    ip: Option<std::net::IpAddr>,
    username: &str,
    password: String,
) -> (&'static str, ApiResult<UserId>) {
    let login_key = crate::http::rate_limit::Key::Login(username.trim().to_lowercase());
    if let Err(limited) = state.rate_limiter.hit(login_key.clone()) {
        return ("password", Err(limited));
    }
    if state.identity.password {
        match check_kept_password(state, ip, username, password.clone()).await {
            Ok(Some(account)) => {
                state.rate_limiter.release(&login_key);
                return ("password", account);
            }
            Ok(None) => {}
            Err(refused) => {
                // Not checked at all: the attempt does not count against the username.
                state.rate_limiter.release(&login_key);
                return ("password", Err(refused));
            }
        }
    }
    let mut method = "password";
    if let Some(directory) = &state.identity.ldap {
        method = "ldap";
        match directory.authenticate(username, &password).await {
            Ok(Some(person)) => {
                state.rate_limiter.release(&login_key);
                return (method, directory_sign_in(state, person).await);
            }
            Ok(None) => {}
            Err(error) => {
                state.rate_limiter.release(&login_key);
                tracing::warn!("sign-in through the LDAP directory failed: {error}");
                return (
                    method,
                    Err(ApiError::new(
                        ErrorCode::Busy,
                        "The organization's directory cannot be reached; try again in a moment.",
                    )),
                );
            }
        }
    }
    (
        method,
        Err(ApiError::new(
            ErrorCode::AuthenticationFailed,
            "Your username or password is incorrect",
        )),
    )
}

/// The account whose kept password `password` is: `Ok(None)` when it is not (or there is no
/// such account, checked against a dummy hash so that it costs the same time), else the
/// account, or `USER_DEACTIVATED`. `Err` when the check was refused before it ran.
async fn check_kept_password(
    state: &AppState,
    ip: Option<std::net::IpAddr>,
    username: &str,
    password: String,
) -> ApiResult<Option<ApiResult<UserId>>> {
    let account = state.engine.read(|s| {
        s.users
            .by_email(username)
            .map(|u| (u.user_id, u.password_hash.clone(), u.is_active))
    });
    let hash = account
        .as_ref()
        .and_then(|(_, hash, _)| hash.clone())
        .unwrap_or_else(|| crate::auth::dummy_password_hash().to_owned());
    let verified = state
        .password_work
        .run(ip, move || verify_password(&hash, &password))
        .await?;
    Ok(match account.filter(|_| verified) {
        Some((user_id, Some(_), true)) => Some(Ok(user_id)),
        Some((_, Some(_), false)) => Some(Err(deactivated())),
        _ => None,
    })
}

fn deactivated() -> ApiError {
    ApiError::new(ErrorCode::UserDeactivated, "Account is deactivated")
}

/// The account of a person the directory just vouched for (see [`vouched_sign_in`]). Locked in
/// the directory: `USER_DEACTIVATED`.
async fn directory_sign_in(
    state: &AppState,
    person: crate::identity::ldap::Person,
) -> ApiResult<UserId> {
    if person.entry.disabled {
        return Err(deactivated());
    }
    let entry = state.identity.entry_of(&state.uploads, person).await;
    let rules = state.identity.rules.clone();
    vouched_sign_in(state, entry, state.identity.create_users, rules).await
}

/// The account of a person a directory or an identity provider vouches for: brought in step
/// with what it says of them (name, role, groups), or created at their first sign-in when
/// `create` allows. Deactivated here: `USER_DEACTIVATED`; unknown and not created:
/// `AUTHENTICATION_FAILED`.
pub async fn vouched_sign_in(
    state: &AppState,
    entry: crate::commands::directory::Entry,
    create: bool,
    rules: crate::commands::directory::SyncRules,
) -> ApiResult<UserId> {
    let email = entry.email.clone();
    let existing = state.engine.read(|s| {
        s.users
            .by_email(&email)
            .map(|u| (u.user_id, u.is_active && !u.is_bot()))
    });
    match existing {
        Some((_, false)) => Err(deactivated()),
        Some((user_id, true)) => {
            sync_one(state, entry, rules).await?;
            Ok(user_id)
        }
        None if create => {
            let nonce = crate::auth::new_api_key_nonce();
            let (first, rules_then) = (entry.clone(), rules.clone());
            let created = state
                .engine
                .execute(None, move |s, ctx| {
                    // The person is signing in: Welcome Bot greets them.
                    crate::commands::directory::sign_up(
                        s,
                        ctx,
                        &first,
                        &rules_then,
                        nonce.clone(),
                        true,
                    )
                })
                .await?;
            // What only an existing account can hold (its profile fields) follows at once.
            sync_one(state, entry, rules).await?;
            Ok(created.value)
        }
        None => Err(ApiError::new(
            ErrorCode::AuthenticationFailed,
            "Your username or password is incorrect",
        )),
    }
}

/// The address of the client that sent `req`, for the per-address bounds: `None` for a request
/// another node of the cluster passed on (it was bounded there).
pub fn client_ip(req: &HttpRequest, state: &AppState) -> Option<std::net::IpAddr> {
    if state
        .cluster
        .as_ref()
        .is_some_and(|c| c.carries_token(req.headers()))
    {
        return None;
    }
    req.peer_addr().map(|a| a.ip())
}

/// `POST /users/me/api_key/regenerate`: a new key; the old one stops working at once.
pub async fn regenerate_api_key(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let nonce = new_api_key_nonce();
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            commands::users::regenerate_api_key(s, ctx, nonce.clone())
                .map(|decided| decided.map(|user_id| (user_id, nonce.clone())))
        })
        .await?;
    let (user_id, nonce) = committed.value;
    Ok(params.success(json!({"api_key": state.secret.api_key(user_id, &nonce)})))
}

// ---- web sessions (the web client's cookie; signing in and out is in `webclient`) ----------

/// The session cookie (Django's and Zulip's name).
pub const SESSION_COOKIE: &str = "sessionid";

/// A live web session: whose, and which.
#[derive(Debug, Clone)]
pub struct WebSession {
    pub user_id: UserId,
    pub role: Role,
    pub session_id: String,
}

/// True for the paths a session authenticates (the API mirror).
pub fn is_session_path(path: &str) -> bool {
    path.starts_with("/json/")
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub(super) fn cookie<'r>(req: &'r HttpRequest, name: &str) -> Option<&'r str> {
    req.headers()
        .get_all(header::COOKIE)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim_matches('"'))
}

/// The session the request's `sessionid` cookie names, if the cookie is genuine, the session
/// has neither ended nor expired, and its account is active.
pub fn session_of(req: &HttpRequest, state: &AppState) -> Option<WebSession> {
    let (session_id, mac) = cookie(req, SESSION_COOKIE)?.split_once('.')?;
    let now = crate::time::now_ms();
    state.engine.read(|s| {
        let session = s.sessions.get(session_id)?;
        let expected = state.secret.session_mac(session.user_id, session_id);
        if session.expires_at <= now || !constant_time_eq(expected.as_bytes(), mac.as_bytes()) {
            return None;
        }
        let user = s.users.get(session.user_id).filter(|u| u.is_active)?;
        Some(WebSession {
            user_id: user.user_id,
            role: user.role,
            session_id: session_id.to_owned(),
        })
    })
}

/// The session `webclient::guard` found for a `/json/...` request.
pub fn current_session(req: &HttpRequest) -> ApiResult<WebSession> {
    req.extensions()
        .get::<WebSession>()
        .cloned()
        .ok_or_else(not_logged_in)
}

/// The `Auth` of a `/json/...` request: its session's user.
pub fn session_auth(req: &HttpRequest) -> ApiResult<Auth> {
    current_session(req).map(|session| Auth {
        user_id: session.user_id,
        role: session.role,
    })
}

pub fn not_logged_in() -> ApiError {
    ApiError::unauthorized("Not logged in: API authentication or user session required")
}

/// `; Secure` when the organization's URL is https (cookies then never travel in the clear).
pub fn secure_suffix(state: &AppState) -> &'static str {
    if state.site.realm_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    }
}

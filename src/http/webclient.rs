//! The web client: its pages and files (`GET /`, `GET /login/`, `GET /static/web/...`, compiled
//! into the binary from `src/http/web/`), signing in and out (`POST /login/`,
//! `POST /json/logout`), the person's own sessions (`GET /json/sessions`,
//! `DELETE /json/sessions/{id}`), and the CSRF check in front of `/json/...`, the mirror of the
//! API that browsers use, as Zulip's web app does. Finding a request's session is `auth`'s,
//! beside the API key check.
//!
//! A browser holds two cookies. `sessionid` (`HttpOnly`, `SameSite=Lax`) is a session's id and
//! a MAC of it under the server secret; the log keeps only the id (`SessionStarted`), so
//! sessions survive restarts, and neither the log nor a dump lets anyone in. `csrftoken`
//! (readable by the page, `SameSite=Strict`) is another MAC of the id; the page sends it back in
//! `X-CSRFToken` with every request that is not a read, which a page of another site cannot
//! do. The API key never reaches the page.

pub(super) use super::auth::secure_suffix;
use super::auth::{current_session, not_logged_in, session_of, WebSession, SESSION_COOKIE};
use super::{AppState, Params};
use crate::auth::{constant_time_eq, new_api_key_nonce};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::ids::UserId;
use actix_web::body::BoxBody;
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse, ResponseError};
use serde_json::json;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;

/// The cookie the page reads its CSRF token from (Django's and Zulip's name).
pub const CSRF_COOKIE: &str = "csrftoken";
/// The header the page sends its CSRF token back in.
pub const CSRF_HEADER: &str = "x-csrftoken";

/// What the pages may load and do: only this origin's scripts, styles, images and connections,
/// no inline code, no framing, and Trusted Types, so that HTML reaches the document only
/// through the client's one sanitizing policy (for the server's rendered messages). Forms post
/// here only, and the login form may end at `zulip:` (the mobile app's sign-in,
/// `mobile_flow_otp`), which browsers check against `form-action` too.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self' zulip:; \
    frame-ancestors 'none'; base-uri 'none'; require-trusted-types-for 'script'; \
    trusted-types chronicle-message-html";

/// In front of every `/json/...` route: finds the request's session (for `Auth`) and, for
/// anything but a read, requires it and its CSRF token (`CSRF_FAILED`, 403). A 401 names the
/// session scheme, as Zulip's does on these routes.
pub fn guard<S>(
    req: ServiceRequest,
    srv: &S,
) -> Pin<Box<dyn Future<Output = Result<ServiceResponse<BoxBody>, actix_web::Error>>>>
where
    S: Service<ServiceRequest, Response = ServiceResponse<BoxBody>, Error = actix_web::Error>,
    S::Future: 'static,
{
    let session = req
        .app_data::<web::Data<AppState>>()
        .and_then(|state| session_of(req.request(), state));
    let reading = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !reading {
        let refused = match &session {
            None => Some(not_logged_in()),
            Some(session) => csrf_refusal(req.request(), session),
        };
        if let Some(error) = refused {
            let response = req.into_response(error.error_response());
            return Box::pin(async move { Ok(with_session_challenge(response)) });
        }
    }
    if let Some(session) = session {
        req.extensions_mut().insert(session);
    }
    let response = srv.call(req);
    Box::pin(async move { Ok(with_session_challenge(response.await?)) })
}

/// Why the request's CSRF token does not do for `session`, if it does not.
fn csrf_refusal(req: &HttpRequest, session: &WebSession) -> Option<ApiError> {
    let state = req.app_data::<web::Data<AppState>>()?;
    let expected = state
        .secret
        .csrf_token(session.user_id, &session.session_id);
    let reason = match req.headers().get(CSRF_HEADER).map(HeaderValue::as_bytes) {
        None => "CSRF token missing.",
        Some(sent) if constant_time_eq(sent, expected.as_bytes()) => return None,
        Some(_) => "CSRF token incorrect.",
    };
    Some(
        ApiError::new(ErrorCode::CsrfFailed, format!("CSRF error: {reason}"))
            .with("reason", reason),
    )
}

/// A 401 on a session route challenges for a session, not Basic credentials.
fn with_session_challenge(mut res: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    if res.status() == StatusCode::UNAUTHORIZED {
        res.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Session realm=\"zulip\""),
        );
    }
    res
}

/// `GET /`: the app for a signed-in browser, else the way to the login page.
pub async fn app_page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match session_of(&req, &state) {
        Some(_) => page("app.html"),
        None => redirect("/login/"),
    }
}

/// `GET /login/`: the login form, or the app for a browser that is signed in already. With
/// `mobile_flow_otp` (the mobile app's sign-in through the browser) a signed-in browser goes
/// straight back to the app with its key, as Zulip's does; a malformed pad is refused.
pub async fn login_page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let otp = match mobile_flow_otp(req.query_string()) {
        Ok(otp) => otp,
        Err(error) => return error.error_response(),
    };
    match (session_of(&req, &state), otp) {
        (Some(session), Some(otp)) => mobile_flow_redirect(&req, &state, session.user_id, &otp),
        (Some(_), None) => redirect("/"),
        (None, _) => page("login.html"),
    }
}

/// The mobile app's one-time pad in a query or form (`mobile_flow_otp`): `None` when absent,
/// Zulip's "Invalid OTP" when it is not 64 hexadecimal digits.
fn mobile_flow_otp(query: &str) -> ApiResult<Option<String>> {
    let otp = serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .unwrap_or_default()
        .into_iter()
        .find(|(name, _)| name == "mobile_flow_otp")
        .map(|(_, value)| value);
    match otp {
        Some(otp) if !crate::auth::is_valid_otp(&otp) => Err(ApiError::bad_request("Invalid OTP")),
        otp => Ok(otp),
    }
}

/// The end of the mobile app's sign-in through the browser, as Zulip's
/// `create_response_for_otp_flow`: a 302 to
/// `zulip://login?otp_encrypted_api_key=…&email=…&user_id=…&realm=…`, the API key's ASCII in
/// hex XORed with the pad the app chose, so the key never crosses the browser in the clear.
pub(super) fn mobile_flow_redirect(
    req: &HttpRequest,
    state: &AppState,
    user_id: UserId,
    otp: &str,
) -> HttpResponse {
    let account = state.engine.read(|s| {
        s.users.get(user_id).filter(|u| u.is_active).map(|u| {
            (
                state.secret.api_key(user_id, &u.api_key_nonce),
                u.email.clone(),
            )
        })
    });
    let Some((key, email)) = account else {
        return redirect("/login/?error=unavailable");
    };
    let Some(encrypted) = crate::auth::otp_encrypt_api_key(&key, otp) else {
        return ApiError::bad_request("Invalid OTP").error_response();
    };
    state.alert_login(req, user_id);
    let query = serde_urlencoded::to_string([
        ("otp_encrypted_api_key", encrypted),
        ("email", email),
        ("user_id", user_id.0.to_string()),
        ("realm", state.site.realm_url.clone()),
    ])
    .unwrap_or_default();
    HttpResponse::Found()
        .insert_header((header::LOCATION, format!("zulip://login?{query}")))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// `POST /login/` (the login form, `username` and `password`): checks the password, starts a
/// session and sets its cookies, then sends the browser to the app. A failure goes back to the
/// form with a code naming what went wrong (never the text typed). A post that a page of
/// another site made is refused, so that no page can sign a browser in to an account of its
/// choosing.
pub async fn login(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> HttpResponse {
    let otp = params.str("mobile_flow_otp");
    if otp
        .as_deref()
        .is_some_and(|otp| !crate::auth::is_valid_otp(otp))
    {
        return ApiError::bad_request("Invalid OTP").error_response();
    }
    // A failure goes back to the form, keeping the mobile app's pad for the next try.
    let failed = |code: &str| {
        let keep = otp
            .as_deref()
            .map(|otp| format!("&mobile_flow_otp={otp}"))
            .unwrap_or_default();
        redirect(&format!("/login/?error={code}{keep}"))
    };
    if !same_origin_post(&req, &state) {
        return failed("origin");
    }
    let username = params.str("username").unwrap_or_default();
    let password = params.str("password").unwrap_or_default();
    if username.trim().is_empty() || password.is_empty() {
        return failed("missing");
    }
    let ip = super::auth::client_ip(&req, &state);
    let user_id = match super::auth::check_password(&state, ip, &username, password).await {
        Ok(user_id) => user_id,
        Err(error) => return failed(failure_code(&error)),
    };
    if let Some(step) = super::second_factor::second_step(&state, user_id) {
        let (page, cookie) = super::second_factor::begin(&state, user_id, step, otp);
        let mut response = redirect(page);
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
        return response;
    }
    if let Some(otp) = otp {
        return mobile_flow_redirect(&req, &state, user_id, &otp);
    }
    start_browser_session(&req, &state, user_id).await
}

/// `POST /accounts/login/jwt/` (`token`): the web login of the person a JSON Web Token signed
/// with the organization's key names, as Zulip's `remote_user_jwt`: a session and the app, or
/// the login page with the reason's code.
pub async fn jwt_login(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> HttpResponse {
    if !same_origin_post(&req, &state) {
        return redirect("/login/?error=origin");
    }
    let token = params.str("token").unwrap_or_default();
    let ip = super::auth::client_ip(&req, &state);
    match super::auth::jwt_person(&state, ip, &token) {
        Ok(user_id) => start_browser_session(&req, &state, user_id).await,
        // A token refused for what it is reads as a wrong password would.
        Err(error) => {
            let code = match error.code() {
                Some(ErrorCode::UserDeactivated) => "deactivated",
                _ => "invalid",
            };
            redirect(&format!("/login/?error={code}"))
        }
    }
}

/// A new web session for `user_id`: its cookies, and the way to the app.
pub(super) async fn start_browser_session(
    req: &HttpRequest,
    state: &AppState,
    user_id: UserId,
) -> HttpResponse {
    match start_browser_session_with(req, state, user_id, None).await {
        Ok(response) => response,
        Err(error) => redirect(&format!("/login/?error={}", failure_code(&error))),
    }
}

/// A new web session for `user_id`, recorded with the second step it passed (in the same
/// commit: a code cannot sign in twice).
pub(super) async fn start_browser_session_with(
    req: &HttpRequest,
    state: &AppState,
    user_id: UserId,
    passed: Option<crate::commands::two_factor::Passed>,
) -> ApiResult<HttpResponse> {
    let session_id = new_api_key_nonce();
    let (client, address) = super::login_origin(req, state);
    let client = if client.is_empty() {
        "a browser".to_owned()
    } else {
        client
    };
    let started = {
        let session_id = session_id.clone();
        state
            .engine
            .execute(Some(user_id), move |s, ctx| {
                let mut decision = crate::commands::sessions::start_session(
                    s,
                    ctx,
                    user_id,
                    &session_id,
                    &client,
                )?;
                decision
                    .events
                    .extend(crate::commands::notifications::login_alert(
                        s, ctx, user_id, &client, &address,
                    ));
                if let Some(passed) = &passed {
                    let mut first = passed.events(s, user_id)?;
                    first.append(&mut decision.events);
                    decision.events = first;
                }
                Ok(decision)
            })
            .await
    };
    started.map(|_| signed_in(state, user_id, &session_id))
}

/// The login form's code for a refusal.
fn failure_code(error: &ApiError) -> &'static str {
    match error.code() {
        Some(ErrorCode::UserDeactivated) => "deactivated",
        Some(ErrorCode::RateLimitHit) => "rate_limited",
        Some(ErrorCode::AuthenticationFailed | ErrorCode::Unauthorized) => "invalid",
        _ => "unavailable",
    }
}

/// Whether a form post came from a page of this server. Browsers say where a request comes
/// from (`Sec-Fetch-Site`, else `Origin`); a request that says neither is not a browser's, so
/// no browser's cookies are at stake.
pub(super) fn same_origin_post(req: &HttpRequest, state: &AppState) -> bool {
    let headers = req.headers();
    if let Some(site) = headers.get("sec-fetch-site") {
        return matches!(site.as_bytes(), b"same-origin" | b"none");
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = req.connection_info().host().to_owned();
    let scheme = req.connection_info().scheme().to_owned();
    origin == state.site.realm_url || origin == format!("{scheme}://{host}")
}

/// The answer to a successful login: both cookies, and the way to the app.
fn signed_in(state: &AppState, user_id: UserId, session_id: &str) -> HttpResponse {
    let max_age = crate::commands::sessions::SESSION_LIFETIME_MS / 1000;
    let secure = secure_suffix(state);
    let session = format!(
        "{SESSION_COOKIE}={session_id}.{}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}",
        state.secret.session_mac(user_id, session_id)
    );
    let csrf = format!(
        "{CSRF_COOKIE}={}; Path=/; Max-Age={max_age}; SameSite=Strict{secure}",
        state.secret.csrf_token(user_id, session_id)
    );
    let mut response = redirect("/");
    for cookie in [session, csrf] {
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

/// Both cookies, expired.
fn cleared_cookies(state: &AppState, mut response: HttpResponse) -> HttpResponse {
    let secure = secure_suffix(state);
    for cookie in [
        format!("{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{secure}"),
        format!("{CSRF_COOKIE}=; Path=/; Max-Age=0; SameSite=Strict{secure}"),
    ] {
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

/// `POST /json/logout`: ends this browser's session and clears its cookies.
pub async fn logout(
    req: HttpRequest,
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let session = current_session(&req)?;
    end(&state, &session, session.session_id.clone()).await?;
    Ok(cleared_cookies(&state, params.success(json!({}))))
}

/// `GET /json/sessions`: the person's own live sessions, newest first, this one marked.
pub async fn get_sessions(
    req: HttpRequest,
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let me = current_session(&req)?;
    let now = crate::time::now_ms();
    let mut sessions: Vec<(i64, serde_json::Value)> = state.engine.read(|s| {
        s.sessions
            .of_user(me.user_id)
            .filter(|(_, session)| session.expires_at > now)
            .map(|(id, session)| {
                let entry = json!({
                    "id": id,
                    "current": id == me.session_id,
                    "started": session.started_at / 1000,
                    "expires": session.expires_at / 1000,
                    "client": session.client,
                });
                (session.started_at, entry)
            })
            .collect()
    });
    sessions.sort_by_key(|(started, _)| std::cmp::Reverse(*started));
    let sessions: Vec<serde_json::Value> = sessions.into_iter().map(|(_, s)| s).collect();
    Ok(params.success(json!({ "sessions": sessions })))
}

/// `DELETE /json/sessions/{session_id}`: ends one of the person's own sessions (this one too:
/// then its cookies are cleared, as by logging out).
pub async fn end_session(
    req: HttpRequest,
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let me = current_session(&req)?;
    let target = req
        .match_info()
        .get("session_id")
        .unwrap_or_default()
        .to_owned();
    let this_one = target == me.session_id;
    end(&state, &me, target).await?;
    let response = params.success(json!({}));
    Ok(if this_one {
        cleared_cookies(&state, response)
    } else {
        response
    })
}

async fn end(state: &AppState, me: &WebSession, session_id: String) -> ApiResult<()> {
    state
        .engine
        .execute(Some(me.user_id), move |s, ctx| {
            crate::commands::sessions::end_session(s, ctx, &session_id)
        })
        .await?;
    Ok(())
}

/// The client's files, by path below `src/http/web/` (listed by `build.rs`).
static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/web_files.rs"));

/// `GET /static/web/{path}`: one of the client's files. The pages name them under the build's
/// version (`/static/web/VERSION/js/app.js`), which a browser keeps for a year without asking
/// again: a new build has a new version, so new addresses. Without it, or under another
/// version (a page loaded before an upgrade), the file is revalidated by its hash.
pub async fn asset(req: HttpRequest) -> HttpResponse {
    let path = req.match_info().get("path").unwrap_or_default();
    let (path, cache) = match path.split_once('/') {
        Some((first, rest)) if Some(first) == version() => {
            (rest, "public, max-age=31536000, immutable")
        }
        Some((first, rest)) if is_version(first) => (rest, "no-cache"),
        _ => (path, "no-cache"),
    };
    serve(&req, path, cache)
}

/// The compiled-in client's version: the first 12 hex digits of a hash of every file's name
/// and bytes. `None` while the files are read from `CHRONICLE_WEB_DIR`.
fn version() -> Option<&'static str> {
    static VERSION: OnceLock<Option<String>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            use sha2::{Digest, Sha256};
            if dev_dir().is_some() {
                return None;
            }
            let mut hash = Sha256::new();
            let mut files: Vec<_> = FILES.iter().collect();
            files.sort_by_key(|(name, _)| *name);
            for (name, bytes) in files {
                hash.update((name.len() as u64).to_be_bytes());
                hash.update(name.as_bytes());
                hash.update((bytes.len() as u64).to_be_bytes());
                hash.update(bytes);
            }
            Some(
                hash.finalize()[..6]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
            )
        })
        .as_deref()
}

/// Whether a path's first part has the form of a version (12 lowercase hex digits).
fn is_version(part: &str) -> bool {
    part.len() == 12
        && part
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A page (`app.html`, `login.html`): never cached, so a new server's client loads at once.
/// Its files are named under the build's version, and its `{{key}}` marks filled with the
/// client's texts.
pub(super) fn page(name: &str) -> HttpResponse {
    let bytes = match version() {
        Some(v) => versioned_pages(v).get(name).cloned(),
        None => file(name).map(|page| {
            let texts = file(TEXTS_FILE).and_then(|table| texts_of(&table.bytes));
            fill_texts(
                &String::from_utf8_lossy(&page.bytes),
                &texts.unwrap_or_default(),
            )
            .into_bytes()
        }),
    };
    match bytes {
        Some(bytes) => with_page_headers(HttpResponse::Ok())
            .content_type("text/html; charset=utf-8")
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .body(bytes),
        None => ApiError::not_found().error_response(),
    }
}

/// The compiled-in pages with their files' addresses under `version` and their texts filled
/// in, written once.
fn versioned_pages(version: &str) -> &'static HashMap<&'static str, Vec<u8>> {
    static PAGES: OnceLock<HashMap<&'static str, Vec<u8>>> = OnceLock::new();
    PAGES.get_or_init(|| {
        let prefix = format!("\"/static/web/{version}/");
        let texts = compiled()
            .get(TEXTS_FILE)
            .and_then(|table| texts_of(table.bytes))
            .unwrap_or_default();
        FILES
            .iter()
            .filter(|(name, _)| name.ends_with(".html"))
            .map(|(name, bytes)| {
                let text = String::from_utf8_lossy(bytes).replace("\"/static/web/", &prefix);
                (*name, fill_texts(&text, &texts).into_bytes())
            })
            .collect()
    })
}

/// The module holding every text the client shows (see its head): the pages take theirs from
/// the same table.
const TEXTS_FILE: &str = "js/texts.js";

/// The table of `js/texts.js`: the JSON object after `export const TEXTS = `, up to the line
/// that closes it.
fn texts_of(module: &[u8]) -> Option<HashMap<String, String>> {
    let module = std::str::from_utf8(module).ok()?;
    const START: &str = "export const TEXTS = ";
    let start = module.find(START)? + START.len();
    let end = start + module[start..].find("\n};")? + 2;
    serde_json::from_str(&module[start..end]).ok()
}

/// `page` with each `{{key}}` mark replaced by its text, escaped for HTML; a mark without a
/// text stays as it is (the tests rule that out).
fn fill_texts(page: &str, texts: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(page.len());
    let mut rest = page;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        match after
            .find("}}")
            .and_then(|close| Some((close, texts.get(&after[..close])?)))
        {
            Some((close, text)) => {
                out.push_str(&crate::markdown::escape_html(text));
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn serve(req: &HttpRequest, path: &str, cache: &'static str) -> HttpResponse {
    let Some(found) = file(path) else {
        return ApiError::not_found().error_response();
    };
    // The compressed form when the browser takes it (every browser does): a third of the
    // bytes, compressed once per build rather than per request.
    let compressible = found.gzip.is_some();
    let (body, etag, gzipped) = match found.gzip {
        Some((gzip, etag)) if accepts_gzip(req) => (gzip, etag, true),
        _ => (found.bytes, found.etag, false),
    };
    let fresh = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .is_some_and(|sent| sent.as_bytes() == etag.as_bytes());
    let mut response = if fresh {
        with_page_headers(HttpResponse::NotModified())
    } else {
        with_page_headers(HttpResponse::Ok())
    };
    response
        .insert_header((header::CONTENT_TYPE, content_type(path)))
        .insert_header((header::CACHE_CONTROL, cache))
        .insert_header((header::ETAG, etag));
    if compressible {
        response.insert_header((header::VARY, "Accept-Encoding"));
    }
    if gzipped {
        response.insert_header((header::CONTENT_ENCODING, "gzip"));
    }
    if fresh {
        response.finish()
    } else {
        response.body(body)
    }
}

/// Whether the request's `Accept-Encoding` takes gzip: named (or `*`) without `q=0`.
fn accepts_gzip(req: &HttpRequest) -> bool {
    req.headers()
        .get_all(header::ACCEPT_ENCODING)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|param| {
                param
                    .split_once('=')
                    .filter(|(key, _)| key.trim().eq_ignore_ascii_case("q"))
                    .and_then(|(_, q)| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (name.eq_ignore_ascii_case("gzip")
                || name.eq_ignore_ascii_case("x-gzip")
                || name == "*")
                && !refused
        })
}

/// The headers every page and file of the client carries.
fn with_page_headers(
    mut response: actix_web::HttpResponseBuilder,
) -> actix_web::HttpResponseBuilder {
    response
        .insert_header(("Content-Security-Policy", CONTENT_SECURITY_POLICY))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("X-Frame-Options", "DENY"))
        .insert_header(("Referrer-Policy", "same-origin"))
        .insert_header(("Cross-Origin-Opener-Policy", "same-origin"));
    response
}

pub(super) fn redirect(to: &str) -> HttpResponse {
    with_page_headers(HttpResponse::build(StatusCode::SEE_OTHER))
        .insert_header((header::LOCATION, to))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// A file of the client as served: its bytes and entity tag, and for the compiled-in text
/// files their gzip form with its own tag.
struct Found {
    bytes: actix_web::web::Bytes,
    etag: String,
    gzip: Option<(actix_web::web::Bytes, String)>,
}

/// A file's bytes and entity tag: compiled in, or, when `CHRONICLE_WEB_DIR` names a directory
/// (while working on the client), read from there on every request (uncompressed).
fn file(path: &str) -> Option<Found> {
    use actix_web::web::Bytes;
    if let Some(dir) = dev_dir() {
        if !plain_relative(path) {
            return None;
        }
        let bytes = std::fs::read(dir.join(path)).ok()?;
        let etag = tag_of(&bytes);
        return Some(Found {
            bytes: Bytes::from(bytes),
            etag,
            gzip: None,
        });
    }
    compiled().get(path).map(|file| Found {
        bytes: Bytes::from_static(file.bytes),
        etag: file.etag.clone(),
        gzip: file
            .gzip
            .as_ref()
            .map(|(gzip, etag)| (Bytes::from_static(gzip.as_slice()), etag.clone())),
    })
}

/// A path below the client's directory, and nothing else: parts of letters, digits, `.`, `_`
/// and `-`, none empty or starting with a dot (so no `..`, no absolute path, no hidden file).
fn plain_relative(path: &str) -> bool {
    !path.is_empty()
        && path.split('/').all(|part| {
            !part.is_empty()
                && !part.starts_with('.')
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        })
}

fn dev_dir() -> Option<&'static std::path::Path> {
    static DIR: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| std::env::var_os("CHRONICLE_WEB_DIR").map(std::path::PathBuf::from))
        .as_deref()
}

/// A compiled-in file: its bytes, tag, and for text (scripts, styles, pages, icons) its gzip
/// form and that form's tag, when smaller.
struct Compiled {
    bytes: &'static [u8],
    etag: String,
    gzip: Option<(Vec<u8>, String)>,
}

/// Hashes and compresses the compiled-in files (tens of milliseconds), which the server does
/// aside at start-up; a request that comes first waits for it.
pub fn prepare_files() {
    compiled();
}

/// The compiled-in files with their tags, hashed and compressed once.
fn compiled() -> &'static HashMap<&'static str, Compiled> {
    static TABLE: OnceLock<HashMap<&'static str, Compiled>> = OnceLock::new();
    TABLE.get_or_init(|| {
        FILES
            .iter()
            .map(|(name, bytes)| {
                let text = content_type(name).starts_with("text/")
                    || content_type(name).starts_with("image/svg");
                let etag = tag_of(bytes);
                let gzip = text
                    .then(|| gzipped(bytes))
                    .flatten()
                    .filter(|gzip| gzip.len() < bytes.len())
                    .map(|gzip| (gzip, format!("{}-gzip\"", &etag[..etag.len() - 1])));
                (*name, Compiled { bytes, etag, gzip })
            })
            .collect()
    })
}

fn gzipped(bytes: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(bytes).ok()?;
    gz.finish().ok()
}

fn tag_of(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("\"{}\"", hex(&Sha256::digest(bytes)[..12]))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

/// The compiled-in files' names and sizes (the bench fetches each, as a browser would).
pub fn compiled_files() -> impl Iterator<Item = (&'static str, usize)> {
    FILES.iter().map(|(name, bytes)| (*name, bytes.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_read_from_disk_stay_inside_the_clients_directory() {
        for good in ["app.html", "js/app.js", "icons/attach.svg", "css/app.css"] {
            assert!(plain_relative(good), "{good}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../Cargo.toml",
            "js/../../x",
            "js//app.js",
            ".hidden",
            "js/.x",
            "a b",
            "js\\app.js",
            "%2e%2e/x",
            "js/app.js\0",
        ] {
            assert!(!plain_relative(bad), "{bad}");
        }
    }

    #[test]
    fn the_whole_client_is_small_and_every_file_has_its_type() {
        // Issue 39's bound: the client's files stay under 300 KB compressed, as the server
        // sends them to a browser (gzip, but for images).
        let compressed: usize = compiled()
            .values()
            .map(|file| {
                file.gzip
                    .as_ref()
                    .map_or(file.bytes.len(), |(gzip, _)| gzip.len())
            })
            .sum();
        assert!(compressed < 300_000, "{compressed} bytes compressed");
        for (name, _) in compiled_files() {
            assert_ne!(content_type(name), "application/octet-stream", "{name}");
        }
        assert!(compiled().contains_key("app.html") && compiled().contains_key("login.html"));
    }

    /// Every text the client shows is in `js/texts.js` (issue 39): each key a module names (a
    /// quoted `module.key` literal) or a page marks (`{{key}}`) is in the table, every key in
    /// the table is used, and no module writes a visible text into an element itself.
    #[test]
    fn every_text_is_in_the_one_table_and_used() {
        let texts =
            texts_of(compiled()[TEXTS_FILE].bytes).expect("js/texts.js holds its JSON table");
        assert!(texts.len() > 500, "{} texts", texts.len());
        let prefixes: std::collections::HashSet<&str> = texts
            .keys()
            .filter_map(|k| k.split_once('.'))
            .map(|(p, _)| p)
            .collect();
        let mut used = std::collections::HashSet::new();
        for (name, bytes) in FILES {
            let source = String::from_utf8_lossy(bytes);
            if name.ends_with(".html") {
                let mut rest = &source[..];
                while let Some(open) = rest.find("{{") {
                    let close = rest[open..].find("}}").expect("a closed mark") + open;
                    used.insert(rest[open + 2..close].to_owned());
                    rest = &rest[close + 2..];
                }
            } else if name.ends_with(".js") && *name != TEXTS_FILE {
                // Every "prefix.words" in double quotes, wherever it stands.
                for (at, _) in source.match_indices('"') {
                    let after = &source[at + 1..];
                    let Some(end) = after.find(|c: char| {
                        !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
                    }) else {
                        continue;
                    };
                    let quoted = &after[..end];
                    let key_like = after[end..].starts_with('"')
                        && quoted
                            .split_once('.')
                            .is_some_and(|(p, rest)| prefixes.contains(p) && !rest.is_empty());
                    if key_like {
                        used.insert(quoted.to_owned());
                    }
                }
                // The places a visible text would be written in directly.
                for written in [
                    "text: \"",
                    "label: \"",
                    "title: \"",
                    "placeholder: \"",
                    "toast(\"",
                    "\"aria-label\": \"",
                ] {
                    for (at, _) in source.match_indices(written) {
                        let after = &source[at + written.len()..];
                        let first = after.chars().next().unwrap_or('"');
                        let example_address = after.starts_with("http");
                        let shown = &source[at..(at + 60).min(source.len())];
                        assert!(
                            !first.is_alphabetic() || example_address,
                            "{name}: a text written in place: {shown}"
                        );
                    }
                }
            }
        }
        let mut missing: Vec<_> = used.iter().filter(|k| !texts.contains_key(*k)).collect();
        missing.sort();
        assert!(missing.is_empty(), "keys with no text: {missing:?}");
        let mut unused: Vec<_> = texts.keys().filter(|k| !used.contains(*k)).collect();
        unused.sort();
        assert!(unused.is_empty(), "texts nothing uses: {unused:?}");
    }

    /// The page names every module its first screen imports (`modulepreload`), so that the
    /// browser asks for them all at once rather than one level of imports at a time, and names
    /// no module the first screen does not import (those load when first used: `lazy.js`).
    #[test]
    fn the_page_preloads_exactly_the_first_screens_modules() {
        let source = |name: &str| String::from_utf8_lossy(compiled()[name].bytes).into_owned();
        let page = source("app.html");
        let named: std::collections::BTreeSet<String> = page
            .split("\"/static/web/js/")
            .skip(1)
            .filter_map(|rest| rest.split_once('"').map(|(name, _)| name.to_owned()))
            .collect();
        let mut imported = std::collections::BTreeSet::new();
        let mut todo = vec!["start.js".to_owned(), "app.js".to_owned()];
        while let Some(name) = todo.pop() {
            let module = source(&format!("js/{name}"));
            if !imported.insert(name) {
                continue;
            }
            // Static imports only: `import … from "./x.js"`, `export … from "./x.js"`,
            // `import "./x.js"`; `import("./x.js")` loads later.
            for marker in ["from \"./", "import \"./"] {
                for piece in module.split(marker).skip(1) {
                    if let Some((file, _)) = piece.split_once('"') {
                        todo.push(file.to_owned());
                    }
                }
            }
        }
        assert_eq!(named, imported);
    }

    #[test]
    fn pages_get_their_texts_escaped() {
        let texts = HashMap::from([
            ("a.b".to_owned(), "Log in".to_owned()),
            ("a.c".to_owned(), "<Tom & \"Jerry\">".to_owned()),
        ]);
        assert_eq!(
            fill_texts("<p>{{a.b}}</p><i title=\"{{a.c}}\">{{a.x}} {{ }}", &texts),
            "<p>Log in</p><i title=\"&lt;Tom &amp; &quot;Jerry&quot;&gt;\">{{a.x}} {{ }}"
        );
        let page = page("login.html");
        assert_eq!(page.status(), StatusCode::OK);
        let served = versioned_pages(version().expect("compiled in"))["login.html"].clone();
        let served = String::from_utf8(served).unwrap();
        assert!(
            served.contains(">Log in</button>") && !served.contains("{{"),
            "{served}"
        );
    }
}

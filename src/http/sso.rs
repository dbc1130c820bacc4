//! Single sign-on in the browser through an OpenID Connect provider, at Zulip's addresses:
//! `GET /accounts/login/social/oidc` (the first provider) or `.../oidc/NAME` starts it (also
//! under `/accounts/register/social/`), the provider sends the browser back to
//! `GET /complete/oidc/`, and the sign-in ends as the password form's does: a web session, or,
//! when the mobile app started it (`mobile_flow_otp`), Zulip's `zulip://login?...` redirect
//! with the API key encrypted by the app's pad.
//!
//! Between the start and the end, what must be checked (`state`, `nonce`, the PKCE verifier,
//! the pad) travels in a cookie signed with the server's secret, readable by this server only
//! (`HttpOnly`, sent to `/complete/` only, ten minutes), so any node of a cluster can finish a
//! sign-in another started. A failure goes back to the login page with a code naming what went
//! wrong; why goes to the server's log and the sign-in audit, never the code or the tokens.

use super::sealed::{sealed, unsealed};
use super::webclient::{mobile_flow_redirect, redirect, start_browser_session};
use super::AppState;
use crate::error::{ApiError, ErrorCode};
use crate::identity::oidc::{Flow, OidcError, Provider, FLOW_LIFETIME_SECS};
use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use std::sync::Arc;

/// The cookie holding a sign-in in progress.
const FLOW_COOKIE: &str = "chronicle_sso";

/// Where providers send the browser back (register this as the client's redirect URI).
pub fn redirect_uri(state: &AppState) -> String {
    format!("{}/complete/oidc/", state.site.realm_url)
}

/// `GET /accounts/login/social/oidc` and `/accounts/register/social/oidc`: the first provider.
pub async fn start_first(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let first = state.identity.oidc.first().cloned();
    start(&req, &state, first).await
}

/// `GET /accounts/login/social/oidc/{name}` (and `register`): the provider named.
pub async fn start_named(
    req: HttpRequest,
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> HttpResponse {
    let provider = state
        .identity
        .oidc
        .iter()
        .find(|p| p.name == *name)
        .cloned();
    start(&req, &state, provider).await
}

async fn start(
    req: &HttpRequest,
    state: &AppState,
    provider: Option<Arc<Provider>>,
) -> HttpResponse {
    let Some(provider) = provider else {
        return ApiError::new(
            ErrorCode::BadRequest,
            "OpenID Connect authentication is not enabled for this organization",
        )
        .error_response();
    };
    let otp = match AppPad::of(req) {
        Ok(Some(otp)) => Some(otp),
        Ok(None) if super::desktop_flow::from_desktop_app(req) => {
            return super::desktop_flow::app_page()
        }
        Ok(None) => None,
        Err(error) => return error.error_response(),
    };
    let now = crate::time::now_ms() / 1000;
    match provider.start(&redirect_uri(state), otp, now).await {
        Ok((url, flow)) => {
            let mut response = HttpResponse::Found()
                .insert_header((header::LOCATION, url))
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .finish();
            if let Ok(value) = HeaderValue::from_str(&flow_cookie(state, &flow)) {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
            response
        }
        Err(error) => {
            tracing::warn!(provider = %provider.name, "OpenID Connect sign-in could not start: {error}");
            redirect("/login/?error=sso_unavailable")
        }
    }
}

/// `GET /complete/oidc/` (`code`, `state`, or the provider's `error`): the end of the sign-in.
pub async fn complete(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let query = Query::of(&req);
    let ip = super::auth::client_ip(&req, &state);
    let now = crate::time::now_ms() / 1000;
    let flow = super::auth::cookie(&req, FLOW_COOKIE).and_then(|value| read_flow(&state, value));
    let outcome = match flow {
        None => Err((
            "sso_expired",
            "no sign-in in progress in this browser (or it expired)".to_owned(),
        )),
        Some(flow) if now - flow.started > FLOW_LIFETIME_SECS || now < flow.started - 60 => Err((
            "sso_expired",
            "the sign-in took longer than ten minutes".to_owned(),
        )),
        Some(flow)
            if !crate::auth::constant_time_eq(
                query.get("state").unwrap_or_default().as_bytes(),
                flow.state.as_bytes(),
            ) =>
        {
            Err((
                "sso_expired",
                "the answer's state is not this browser's sign-in".to_owned(),
            ))
        }
        Some(flow) => finish(
            &state,
            ip,
            &flow,
            query.get("code"),
            query.get("error"),
            query.get("iss"),
        )
        .await
        .map(|u| (u, flow)),
    };
    let outcome = outcome.map(|(user_id, flow)| (user_id, flow.app_pad));
    let response = end_sign_in(&req, &state, "OpenID Connect", outcome).await;
    clear_flow_cookie(&state, response)
}

/// The account of the person the flow's provider vouches for; the attempt goes to the sign-in
/// audit (as `EMAIL (PROVIDER)`, or `(PROVIDER)` when the provider's answer was refused).
async fn finish(
    state: &AppState,
    ip: Option<std::net::IpAddr>,
    flow: &Flow,
    code: Option<&str>,
    provider_error: Option<&str>,
    iss: Option<&str>,
) -> Result<crate::ids::UserId, (&'static str, String)> {
    let provider = state
        .identity
        .oidc
        .iter()
        .find(|p| p.name == flow.provider)
        .cloned()
        .ok_or((
            "sso_unavailable",
            format!("no provider {} any more", flow.provider),
        ))?;
    if let Some(error) = provider_error {
        return Err(("sso_refused", format!("the provider answered {error:?}")));
    }
    if !provider.issued_here(iss) {
        return Err((
            "sso_refused",
            format!(
                "the answer names another issuer ({:?})",
                iss.unwrap_or_default()
            ),
        ));
    }
    let code = code
        .filter(|c| !c.is_empty())
        .ok_or(("sso_refused", "the provider sent no code".to_owned()))?;
    let entry = match provider.finish(&redirect_uri(state), code, flow).await {
        Ok(entry) => entry,
        Err(error) => {
            let code = match &error {
                OidcError::Unreachable(_) => "sso_unavailable",
                OidcError::Refused(_) => "sso_refused",
                OidcError::NoAddress(_) => "sso_no_address",
            };
            let refused = Err(ApiError::new(
                ErrorCode::AuthenticationFailed,
                error.to_string(),
            ));
            let login = format!("({})", flow.provider);
            super::auth::audit_sign_in(state, "oidc", &login, ip, &refused);
            return Err((code, error.to_string()));
        }
    };
    let login = format!("{} ({})", entry.email, flow.provider);
    sign_in_entry(
        state,
        ip,
        "oidc",
        &login,
        entry,
        provider.create_users,
        provider.groups.synced_groups.clone(),
    )
    .await
}

/// The account of the person an identity provider vouched for (`entry`), made at their first
/// sign-in when `create_users`, with their role and `synced_groups` brought in step; the
/// attempt goes to the sign-in audit as `login` by `method`. A failure is the login page's
/// code and the reason for the server's log.
pub(super) async fn sign_in_entry(
    state: &AppState,
    ip: Option<std::net::IpAddr>,
    method: &'static str,
    login: &str,
    entry: crate::commands::directory::Entry,
    create_users: bool,
    synced_groups: Vec<String>,
) -> Result<crate::ids::UserId, (&'static str, String)> {
    let rules = crate::commands::directory::SyncRules {
        deactivate_missing: false,
        synced_groups,
    };
    // A first sign-in with an address outside the allowed domains makes no account.
    let outside = state.engine.read(|s| {
        s.users.by_email(&entry.email).is_none()
            && crate::commands::realm_domains::email_refusal(s, &entry.email).is_some()
    });
    if outside {
        let refused = Err(crate::commands::realm_domains::not_allowed(&entry.email));
        super::auth::audit_sign_in(state, method, login, ip, &refused);
        return Err((
            "sso_domain",
            format!("{} is outside the allowed domains", entry.email),
        ));
    }
    let result = super::auth::vouched_sign_in(state, entry, create_users, rules).await;
    super::auth::audit_sign_in(state, method, login, ip, &result);
    result.map_err(|error| {
        let code = match error.code() {
            Some(ErrorCode::UserDeactivated) => "deactivated",
            Some(ErrorCode::AuthenticationFailed) => "sso_no_account",
            // What the provider said of them cannot make an account here (an invalid address,
            // a name refused or already taken): trying again will not help.
            Some(ErrorCode::BadRequest) => "sso_signup_refused",
            _ => "sso_unavailable",
        };
        (code, error.to_string())
    })
}

/// The end of a sign-in through a provider: the mobile app's redirect, or the desktop app's
/// page, when one of them started it, else a web session; a failure goes back to the login page with its code.
pub(super) async fn end_sign_in(
    req: &HttpRequest,
    state: &AppState,
    backend: &str,
    outcome: Result<(crate::ids::UserId, Option<AppPad>), (&'static str, String)>,
) -> HttpResponse {
    match outcome {
        Ok((user_id, Some(AppPad::Mobile(otp)))) => mobile_flow_redirect(req, state, user_id, &otp),
        Ok((user_id, Some(AppPad::Desktop(otp)))) => {
            super::desktop_flow::finish(state, user_id, &otp)
        }
        Ok((user_id, None)) => start_browser_session(req, state, user_id).await,
        Err((code, why)) => {
            tracing::info!("{backend} sign-in failed: {why}");
            redirect(&format!("/login/?error={code}"))
        }
    }
}

pub use crate::identity::oidc::AppPad;

impl AppPad {
    /// The app's pad in a sign-in's start address (`mobile_flow_otp` or `desktop_flow_otp`):
    /// `None` when absent, Zulip's "Invalid OTP" when it is not 64 hexadecimal digits.
    pub(super) fn of(req: &HttpRequest) -> Result<Option<AppPad>, ApiError> {
        let query = Query::of(req);
        let pad = match (query.get("mobile_flow_otp"), query.get("desktop_flow_otp")) {
            (Some(otp), None) => AppPad::Mobile(otp.to_owned()),
            (None, Some(otp)) => AppPad::Desktop(otp.to_owned()),
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => {
                return Err(ApiError::bad_request(
                    "Can't use both mobile_flow_otp and desktop_flow_otp together.",
                ))
            }
        };
        match &pad {
            AppPad::Mobile(otp) | AppPad::Desktop(otp) if crate::auth::is_valid_otp(otp) => {
                Ok(Some(pad))
            }
            _ => Err(ApiError::bad_request("Invalid OTP")),
        }
    }
}

/// A request's query parameters.
pub(super) struct Query(Vec<(String, String)>);

impl Query {
    pub(super) fn of(req: &HttpRequest) -> Query {
        Query(serde_urlencoded::from_str(req.query_string()).unwrap_or_default())
    }

    /// The first value of `name`.
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The cookie of a sign-in in progress.
fn flow_cookie(state: &AppState, flow: &Flow) -> String {
    format!(
        "{FLOW_COOKIE}={}; Path=/complete/; Max-Age={FLOW_LIFETIME_SECS}; HttpOnly; SameSite=Lax{}",
        sealed(state, "oidc-flow", flow),
        super::webclient::secure_suffix(state)
    )
}

/// The flow in a cookie's value, when this server signed it.
fn read_flow(state: &AppState, value: &str) -> Option<Flow> {
    unsealed(state, "oidc-flow", value)
}

fn clear_flow_cookie(state: &AppState, mut response: HttpResponse) -> HttpResponse {
    let cookie = format!(
        "{FLOW_COOKIE}=; Path=/complete/; Max-Age=0; HttpOnly; SameSite=Lax{}",
        super::webclient::secure_suffix(state)
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

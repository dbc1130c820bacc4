//! Single sign-on through a SAML 2.0 identity provider, at Zulip's addresses:
//! `GET /accounts/login/social/saml/NAME` (also under `/accounts/register/social/`) sends the
//! browser to the provider with an `AuthnRequest`, the provider posts its `Response` to
//! `POST /complete/saml/`, and the sign-in ends as every other does: a web session, or the
//! mobile app's `zulip://login?...` redirect (`mobile_flow_otp`), or the desktop app's page
//! (`desktop_flow_otp`, see `desktop_flow`), when an app started it.
//! `GET /saml/metadata.xml` is the service provider's metadata for the provider's
//! administrator.
//!
//! What the end must check (the request's ID, the provider, the app's pad) travels in a cookie
//! signed with the server's secret, sent to `/complete/saml/` only. The provider's post comes
//! from its own site, so on HTTPS the cookie is `SameSite=None` (`Secure`): without it, no
//! browser would send it with that post. The pad never goes to the provider. Each assertion
//! signs in once: its digest is recorded in the log (`SignInTokenSpent`) in a commit of its
//! own before the person is signed in, so a replay is refused on every node and after a
//! restart.

use super::sealed::{sealed, unsealed};
use super::sso::{end_sign_in, sign_in_entry, AppPad};
use super::webclient::redirect;
use super::{AppState, Params};
use crate::error::{ApiError, ErrorCode};
use crate::identity::saml::{Idp, SamlError};
use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use std::sync::Arc;

/// The cookie holding a sign-in in progress.
const FLOW_COOKIE: &str = "chronicle_saml";
/// How long a sign-in may take at the provider.
const FLOW_LIFETIME_SECS: i64 = 600;

/// A SAML sign-in in progress.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Flow {
    idp: String,
    request_id: String,
    /// The mobile or desktop app's pad, when the app started the sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    app_pad: Option<AppPad>,
    /// UNIX seconds.
    started: i64,
}

/// The entity ID Chronicle has at identity providers.
pub fn sp_entity_id(state: &AppState) -> String {
    state
        .identity
        .saml_sp_entity_id
        .clone()
        .unwrap_or_else(|| state.site.realm_url.clone())
}

/// Where providers post their responses (the assertion consumer service).
pub fn acs_url(state: &AppState) -> String {
    format!("{}/complete/saml/", state.site.realm_url)
}

fn idp_named(state: &AppState, name: &str) -> Option<Arc<Idp>> {
    state.identity.saml.iter().find(|p| p.name == name).cloned()
}

/// `GET /saml/metadata.xml`.
pub async fn metadata(state: web::Data<AppState>) -> HttpResponse {
    if state.identity.saml.is_empty() {
        return ApiError::new(ErrorCode::NotFound, "SAML authentication is not enabled")
            .error_response();
    }
    HttpResponse::Ok()
        .content_type("application/samlmetadata+xml")
        .body(crate::identity::saml::sp_metadata(
            &sp_entity_id(&state),
            &acs_url(&state),
        ))
}

/// `GET /accounts/login/social/saml/{name}` and `/accounts/register/social/saml/{name}`.
pub async fn start(
    req: HttpRequest,
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> HttpResponse {
    let Some(idp) = idp_named(&state, &name) else {
        return ApiError::bad_request("SAML authentication with this provider is not enabled")
            .error_response();
    };
    let app_pad = match AppPad::of(&req) {
        Ok(Some(pad)) => Some(pad),
        Ok(None) if super::desktop_flow::from_desktop_app(&req) => {
            return super::desktop_flow::app_page()
        }
        Ok(None) => None,
        Err(error) => return error.error_response(),
    };
    let now_ms = crate::time::now_ms();
    let relay_state = crate::auth::new_api_key_nonce();
    match idp
        .start(
            &sp_entity_id(&state),
            &acs_url(&state),
            &relay_state,
            now_ms,
        )
        .await
    {
        Ok((url, request_id)) => {
            let flow = Flow {
                idp: idp.name.clone(),
                request_id,
                app_pad,
                started: now_ms / 1000,
            };
            let mut response = HttpResponse::Found()
                .insert_header((header::LOCATION, url))
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .finish();
            if let Ok(value) = HeaderValue::from_str(&flow_cookie(&state, Some(&flow))) {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
            response
        }
        Err(error) => {
            tracing::warn!(provider = %idp.name, "SAML sign-in could not start: {error}");
            redirect("/login/?error=sso_unavailable")
        }
    }
}

/// `POST /complete/saml/` (`SAMLResponse`, `RelayState`): the end of the sign-in.
pub async fn complete(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> HttpResponse {
    let ip = super::auth::client_ip(&req, &state);
    let now_ms = crate::time::now_ms();
    let flow = super::auth::cookie(&req, FLOW_COOKIE)
        .and_then(|v| unsealed::<Flow>(&state, "saml-flow", v));
    let response = params.str("SAMLResponse").unwrap_or_default();
    let outcome = match flow {
        None => Err((
            "sso_expired",
            "no SAML sign-in in progress in this browser (or it expired)".to_owned(),
        )),
        Some(flow)
            if now_ms / 1000 - flow.started > FLOW_LIFETIME_SECS
                || now_ms / 1000 < flow.started - 60 =>
        {
            Err((
                "sso_expired",
                "the sign-in took longer than ten minutes".to_owned(),
            ))
        }
        Some(flow) => finish(&state, ip, &flow, &response, now_ms)
            .await
            .map(|user_id| (user_id, flow.app_pad)),
    };
    if let Err((code @ "sso_expired", why)) = &outcome {
        // A response with no sign-in of this browser to answer: recorded, as any refusal.
        let failed = Err(ApiError::new(ErrorCode::AuthenticationFailed, why.clone()));
        super::auth::audit_sign_in(&state, "saml", &format!("({code})"), ip, &failed);
    }
    let response = end_sign_in(&req, &state, "SAML", outcome).await;
    clear_flow_cookie(&state, response)
}

/// The account of the person the provider's response vouches for, once its assertion is
/// spent; every attempt goes to the sign-in audit.
async fn finish(
    state: &AppState,
    ip: Option<std::net::IpAddr>,
    flow: &Flow,
    saml_response: &str,
    now_ms: i64,
) -> Result<crate::ids::UserId, (&'static str, String)> {
    let idp = idp_named(state, &flow.idp).ok_or((
        "sso_unavailable",
        format!("no SAML provider {} any more", flow.idp),
    ))?;
    let refused = |code: &'static str, why: String| {
        let failed = Err(ApiError::new(ErrorCode::AuthenticationFailed, why.clone()));
        super::auth::audit_sign_in(state, "saml", &format!("({})", flow.idp), ip, &failed);
        (code, why)
    };
    if saml_response.is_empty() {
        return Err(refused(
            "sso_refused",
            "the provider posted no SAMLResponse".into(),
        ));
    }
    let checked = idp
        .check(
            &sp_entity_id(state),
            &acs_url(state),
            saml_response,
            &flow.request_id,
            now_ms,
        )
        .await
        .and_then(|asserted| idp.entry(&asserted).map(|entry| (asserted, entry)));
    let (asserted, entry) = match checked {
        Ok(checked) => checked,
        Err(error) => {
            let code = match &error {
                SamlError::Unreachable(_) => "sso_unavailable",
                SamlError::Refused(_) => "sso_refused",
                SamlError::NoAddress(_) => "sso_no_address",
            };
            return Err(refused(code, error.to_string()));
        }
    };
    let digest = crate::commands::sessions::token_digest(
        "saml-assertion",
        &asserted.issuer,
        &asserted.assertion_id,
    );
    let expires_at = asserted.expires_at.saturating_mul(1000);
    let spent = state
        .engine
        .execute(None, move |s, ctx| {
            crate::commands::sessions::spend_token(s, ctx, &digest, expires_at)
        })
        .await;
    if let Err(error) = spent {
        return Err(refused("sso_refused", format!("the assertion: {error}")));
    }
    let login = format!("{} ({})", entry.email, flow.idp);
    sign_in_entry(
        state,
        ip,
        "saml",
        &login,
        entry,
        idp.create_users,
        idp.groups.synced_groups.clone(),
    )
    .await
}

/// The cookie of a sign-in in progress, or the one that forgets it (`None`).
fn flow_cookie(state: &AppState, flow: Option<&Flow>) -> String {
    let secure = super::webclient::secure_suffix(state);
    // The provider's post is cross-site: only `SameSite=None` cookies go with it, and
    // browsers take those on HTTPS only.
    let same_site = if secure.is_empty() { "Lax" } else { "None" };
    let (value, age) = match flow {
        Some(flow) => (sealed(state, "saml-flow", flow), FLOW_LIFETIME_SECS),
        None => (String::new(), 0),
    };
    format!(
        "{FLOW_COOKIE}={value}; Path=/complete/saml/; Max-Age={age}; HttpOnly; \
         SameSite={same_site}{secure}"
    )
}

fn clear_flow_cookie(state: &AppState, mut response: HttpResponse) -> HttpResponse {
    if let Ok(value) = HeaderValue::from_str(&flow_cookie(state, None)) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

//! Allowed email domains: `GET|POST /realm/domains`, `PATCH|DELETE /realm/domains/{domain}`
//! (changes by owners, as Zulip).

use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

/// `GET /realm/domains`: every allowed domain, as `/register`'s `realm_domains`.
pub async fn list_domains(
    state: web::Data<AppState>,
    _auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let domains = state.engine.read(crate::render::realm::domains_json);
    Ok(params.success(json!({ "domains": domains })))
}

fn allow_subdomains(params: &mut Params) -> ApiResult<bool> {
    params
        .bool("allow_subdomains")?
        .ok_or_else(|| ApiError::missing("allow_subdomains"))
}

fn domain_in_path(req: &HttpRequest) -> String {
    req.match_info()
        .get("domain")
        .unwrap_or_default()
        .to_owned()
}

/// `POST /realm/domains` (`domain`, `allow_subdomains`).
pub async fn add_domain(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let domain = params.required_str("domain")?;
    let allow = allow_subdomains(&mut params)?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::realm_domains::add_domain(s, ctx, &domain, allow)
        })
        .await?;
    let (id, domain) = committed.value;
    Ok(params.success(json!({ "new_domain": [id, domain] })))
}

/// `PATCH /realm/domains/{domain}` (`allow_subdomains`).
pub async fn change_domain(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let domain = domain_in_path(&req);
    let allow = allow_subdomains(&mut params)?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::realm_domains::change_domain(s, ctx, &domain, allow)
        })
        .await
}

/// `DELETE /realm/domains/{domain}`.
pub async fn remove_domain(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let domain = domain_in_path(&req);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::realm_domains::remove_domain(s, ctx, &domain)
        })
        .await
}

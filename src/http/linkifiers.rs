//! Linkifiers: `GET /realm/linkifiers`, `PATCH /realm/linkifiers` (reorder),
//! `POST /realm/filters`, `PATCH|DELETE /realm/filters/{filter_id}`.

use super::{path_id, AppState, Auth, Params};
use crate::commands::linkifiers::LinkifierRequest;
use crate::error::{ApiError, ApiResult};
use crate::ids::LinkifierId;
use crate::render::realm::linkifiers_json;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

/// `GET /realm/linkifiers`.
pub async fn get_linkifiers(
    state: web::Data<AppState>,
    _auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let linkifiers = state.engine.read(linkifiers_json);
    Ok(params.success(json!({ "linkifiers": linkifiers })))
}

fn read_request(params: &mut Params) -> ApiResult<LinkifierRequest> {
    Ok(LinkifierRequest {
        pattern: params.required_str("pattern")?,
        url_template: params.required_str("url_template")?,
        example_input: params.str("example_input"),
        reverse_template: params.str("reverse_template"),
        alternative_url_templates: params
            .json("alternative_url_templates")?
            .unwrap_or_default(),
    })
}

/// `POST /realm/filters` (administrators).
pub async fn add_linkifier(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let request = read_request(&mut params)?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::linkifiers::add_linkifier(s, ctx, request.clone())
        })
        .await?;
    Ok(params.success(json!({"id": committed.value.0})))
}

/// `PATCH /realm/filters/{filter_id}` (administrators).
pub async fn update_linkifier(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let id = LinkifierId(path_id(&req, "filter_id")?);
    let request = read_request(&mut params)?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::linkifiers::update_linkifier(s, ctx, id, request.clone())
        })
        .await
}

/// `DELETE /realm/filters/{filter_id}` (administrators).
pub async fn remove_linkifier(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let id = LinkifierId(path_id(&req, "filter_id")?);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::linkifiers::remove_linkifier(s, ctx, id)
        })
        .await
}

/// `PATCH /realm/linkifiers` (administrators): `ordered_linkifier_ids`.
pub async fn reorder_linkifiers(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let order: Vec<u64> = params
        .json("ordered_linkifier_ids")?
        .ok_or_else(|| ApiError::missing("ordered_linkifier_ids"))?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::linkifiers::reorder_linkifiers(s, ctx, order.clone())
        })
        .await
}

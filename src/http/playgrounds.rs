//! Code playgrounds: `POST /realm/playgrounds`, `DELETE /realm/playgrounds/{playground_id}`
//! (administrators, as Zulip); everyone reads them in `/register`'s `realm_playgrounds`.

use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

/// `POST /realm/playgrounds` (`name`, `pygments_language`, `url_template`): answers the id.
pub async fn add_playground(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let request = crate::commands::playgrounds::PlaygroundRequest {
        name: params.required_str("name")?,
        pygments_language: params.required_str("pygments_language")?,
        url_template: params.required_str("url_template")?,
    };
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::playgrounds::add_playground(s, ctx, request.clone())
        })
        .await?;
    Ok(params.success(json!({ "id": committed.value })))
}

/// `DELETE /realm/playgrounds/{playground_id}`.
pub async fn remove_playground(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = super::path_id(&req, "playground_id")
        .map_err(|_| ApiError::bad_request("Invalid playground"))?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::playgrounds::remove_playground(s, ctx, id)
        })
        .await
}

//! `/drafts` and `/saved_snippets`: a user's drafts and snippets, kept for all their clients.

use super::{path_id, AppState, Auth, Params};
use crate::commands::drafts::{self as commands, DraftRequest};
use crate::error::{ApiError, ApiResult};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

/// `GET /drafts`: the most recently edited first, with their count.
pub async fn get_drafts(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let drafts = state.engine.read(|s| s.drafts.drafts_json(auth.user_id));
    Ok(params.success(json!({"count": drafts.len(), "drafts": drafts})))
}

/// `POST /drafts`: `drafts` is a JSON list; the answer lists the new ids in order.
pub async fn create_drafts(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let drafts: Vec<DraftRequest> = params.json("drafts")?.unwrap_or_default();
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            commands::create_drafts(s, ctx, drafts.clone())
        })
        .await?;
    Ok(params.success(json!({ "ids": committed.value })))
}

/// `PATCH /drafts/{draft_id}`: `draft` replaces it.
pub async fn edit_draft(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = path_id(&req, "draft_id")?;
    let draft: DraftRequest = params
        .json("draft")?
        .ok_or_else(|| ApiError::missing("draft"))?;
    state
        .answer(&auth, params, move |s, ctx| {
            commands::edit_draft(s, ctx, id, draft.clone())
        })
        .await
}

/// `DELETE /drafts/{draft_id}`.
pub async fn delete_draft(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = path_id(&req, "draft_id")?;
    state
        .answer(&auth, params, move |s, ctx| {
            commands::delete_draft(s, ctx, id)
        })
        .await
}

/// `GET /saved_snippets`.
pub async fn get_saved_snippets(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let snippets = state.engine.read(|s| s.drafts.snippets_json(auth.user_id));
    Ok(params.success(json!({ "saved_snippets": snippets })))
}

/// `POST /saved_snippets`.
pub async fn create_saved_snippet(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let title = params.required_str("title")?;
    let content = params.required_str("content")?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            commands::create_snippet(s, ctx, &title, &content)
        })
        .await?;
    Ok(params.success(json!({ "saved_snippet_id": committed.value })))
}

/// `PATCH /saved_snippets/{saved_snippet_id}`.
pub async fn edit_saved_snippet(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = path_id(&req, "saved_snippet_id")?;
    let title = params.str("title");
    let content = params.str("content");
    state
        .answer(&auth, params, move |s, ctx| {
            commands::edit_snippet(s, ctx, id, title.as_deref(), content.as_deref())
        })
        .await
}

/// `DELETE /saved_snippets/{saved_snippet_id}`.
pub async fn delete_saved_snippet(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = path_id(&req, "saved_snippet_id")?;
    state
        .answer(&auth, params, move |s, ctx| {
            commands::delete_snippet(s, ctx, id)
        })
        .await
}

//! Channel folders: `GET /channel_folders`, `POST /channel_folders/create`,
//! `PATCH /channel_folders/{channel_folder_id}`, `PATCH /channel_folders` (reorder).

use super::{path_id, AppState, Auth, Params};
use crate::error::{ApiError, ApiResult};
use crate::ids::FolderId;
use crate::projections::Folders;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

/// `GET /channel_folders`.
pub async fn get_channel_folders(
    state: web::Data<AppState>,
    _auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let include_archived = params.bool("include_archived")?.unwrap_or(false);
    let folders = state.engine.read(|s| {
        s.folders
            .ordered()
            .into_iter()
            .filter(|f| include_archived || !f.is_archived)
            .map(Folders::to_json)
            .collect::<Vec<_>>()
    });
    Ok(params.success(json!({"channel_folders": folders})))
}

/// `POST /channel_folders/create` (administrators).
pub async fn create_channel_folder(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let name = params.required_str("name")?;
    let description = params.required_str("description")?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::channels::create_folder(s, ctx, &name, &description)
        })
        .await?;
    Ok(params.success(json!({"channel_folder_id": committed.value.0})))
}

/// `PATCH /channel_folders/{channel_folder_id}` (administrators).
pub async fn update_channel_folder(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let id = FolderId(path_id(&req, "channel_folder_id")?);
    let name = params.str("name");
    let description = params.str("description");
    let is_archived = params.bool("is_archived")?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::channels::update_folder(
                s,
                ctx,
                id,
                name.clone(),
                description.clone(),
                is_archived,
            )
        })
        .await
}

/// `PATCH /channel_folders`: the new order of all folders (administrators).
pub async fn reorder_channel_folders(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let order: Vec<u64> = params
        .json("order")?
        .ok_or_else(|| ApiError::missing("order"))?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::channels::reorder_folders(
                s,
                ctx,
                order.clone().into_iter().map(FolderId).collect(),
            )
        })
        .await
}

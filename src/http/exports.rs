//! Data exports for administrators: `POST /export/realm` writes the organization in Zulip's
//! export format (`import::export_zulip`), `GET /export/realm` lists the exports, `DELETE
//! /export/realm/{export_id}` deletes one; the tarball downloads from its `export_url`
//! (`/user_uploads/exports/…`) for administrators only. Each export and deletion is an event
//! (`RealmExported`, `RealmExportDeleted`), told to the administrators as `realm_export`.
//!
//! Zulip's two kinds are served: `export_type` 1 holds the public data (public channels and
//! their messages, the people, custom emoji, linkifiers, profile fields, the files those
//! messages link); `export_type` 2 adds the private data of the members who consented
//! (`allow_private_data_export`, listed by `GET /export/realm/consents`), and, as in Zulip,
//! brings those who did not as deactivated accounts. The whole organization is exported by
//! `chronicle export-to zulip`, on the server's machine.

use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult};
use crate::events::Event;
use actix_web::{web, HttpResponse};
use serde_json::json;

/// `POST /export/realm`.
pub async fn start(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    if !auth.role.is_admin() {
        return Err(ApiError::must_be_admin());
    }
    let export_type = params.int::<u8>("export_type")?.unwrap_or(1);
    if !(1..=2).contains(&export_type) {
        return Err(ApiError::bad_request("Invalid export type."));
    }
    // The organization as of now, written beside the uploads, then kept among them.
    let snapshot = state.engine.read(|s| s.clone_without_word_index());
    let scope = if export_type == 2 {
        crate::import::export_zulip::Scope::consented(&snapshot)
    } else {
        crate::import::export_zulip::Scope::Public
    };
    let uploads = state.uploads.clone();
    let scratch_dir = state.data_dir.clone();
    let (sha256, size) = web::block(move || -> Result<(String, u64), String> {
        let scratch = tempfile::Builder::new()
            .prefix(".export-")
            .tempdir_in(&scratch_dir)
            .map_err(|e| e.to_string())?;
        let out = scratch.path().join("export.tar.gz");
        crate::import::export_zulip::write(&snapshot, &uploads, &out, &scope)
            .map_err(|e| e.to_string())?;
        let bytes = std::fs::read(&out).map_err(|e| e.to_string())?;
        let sha256 = uploads.put(&bytes).map_err(|e| e.to_string())?;
        Ok((sha256, bytes.len() as u64))
    })
    .await
    .map_err(|e| ApiError::internal(format!("export: {e}")))?
    .map_err(|e| ApiError::internal(format!("export: {e}")))?;
    let random = uuid::Uuid::new_v4().simple().to_string();
    let path_id = format!(
        "exports/{}/{}/zulip-export-{}.tar.gz",
        crate::projections::emoji::REALM_ID,
        &random[..24],
        &random[24..]
    );
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            let me = crate::commands::actor(s, ctx)?;
            if !me.role.is_admin() {
                return Err(ApiError::must_be_admin());
            }
            let export_id = s.realm.exports.keys().max().map_or(1, |m| m + 1);
            Ok(crate::commands::Decision::new(
                vec![Event::RealmExported {
                    export_id,
                    export_type,
                    path_id: path_id.clone(),
                    size,
                    sha256: sha256.clone(),
                }],
                export_id,
            ))
        })
        .await?;
    Ok(params.success(json!({ "id": committed.value })))
}

/// `GET /export/realm`.
pub async fn list(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    if !auth.role.is_admin() {
        return Err(ApiError::must_be_admin());
    }
    let exports = state
        .engine
        .read(|s| crate::render::realm::exports_json(s, &state.site));
    Ok(params.success(json!({ "exports": exports })))
}

/// `GET /export/realm/consents`: whether each member consents to an export of their private
/// data (`allow_private_data_export`); the active people who are not bots, as Zulip lists them.
pub async fn consents(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    if !auth.role.is_admin() {
        return Err(ApiError::must_be_admin());
    }
    let consents = state.engine.read(|s| {
        s.export_consents()
            .map(|(user_id, consented)| json!({"user_id": user_id.0, "consented": consented}))
            .collect::<Vec<_>>()
    });
    Ok(params.success(json!({ "export_consents": consents })))
}

/// `DELETE /export/realm/{export_id}`.
pub async fn delete(
    state: web::Data<AppState>,
    auth: Auth,
    path: web::Path<String>,
    params: Params,
) -> ApiResult<HttpResponse> {
    if !auth.role.is_admin() {
        return Err(ApiError::must_be_admin());
    }
    let export_id: u64 = path
        .parse()
        .map_err(|_| ApiError::bad_request("Invalid data export ID"))?;
    state
        .answer(&auth, params, move |s, ctx| {
            let me = crate::commands::actor(s, ctx)?;
            if !me.role.is_admin() {
                return Err(ApiError::must_be_admin());
            }
            match s.realm.exports.get(&export_id) {
                None => Err(ApiError::bad_request("Invalid data export ID")),
                Some(e) if e.deleted_ms.is_some() => {
                    Err(ApiError::bad_request("Export already deleted"))
                }
                Some(_) => Ok(crate::commands::Decision::events(vec![
                    Event::RealmExportDeleted { export_id },
                ])),
            }
        })
        .await
}

/// The tarball of an export at `/user_uploads/{path_id}`, for administrators only; `None`
/// when `path_id` names no export (the caller answers as for any missing file).
pub fn find(state: &AppState, auth: &Auth, path_id: &str) -> ApiResult<Option<(String, String)>> {
    let found = state.engine.read(|s| {
        s.realm
            .exports
            .values()
            .find(|e| e.path_id == path_id && e.deleted_ms.is_none())
            .map(|e| e.sha256.clone())
    });
    let Some(sha256) = found else {
        return Ok(None);
    };
    if !auth.role.is_admin() {
        return Err(ApiError::must_be_admin());
    }
    let name = path_id
        .rsplit('/')
        .next()
        .unwrap_or("export.tar.gz")
        .to_owned();
    Ok(Some((sha256, name)))
}

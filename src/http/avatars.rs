//! Avatars: the PNG behind every `avatar_url` (`/avatar/{key}`, `/avatar/{key}/medium`), and
//! `POST`/`DELETE /users/me/avatar`.

use super::{AppState, Auth, Params};
use crate::avatars::{generated, resize_upload, AvatarError, DEFAULT_SIZE, MEDIUM_SIZE};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{AvatarImage, RealmImage};
use crate::ids::UserId;
use crate::render::users::avatar_url;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

/// How long decoding and resizing an uploaded picture may take.
const RESIZE_TIME: std::time::Duration = std::time::Duration::from_secs(10);

fn png_response(bytes: Vec<u8>, cache: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("image/png")
        .insert_header(("Cache-Control", cache))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body(bytes)
}

async fn avatar(state: &AppState, key: &str, medium: bool) -> HttpResponse {
    if key == "realm" {
        let stored = state
            .engine
            .read(|s| s.realm.image(RealmImage::Icon).map(str::to_owned));
        if let Some(hash) = stored {
            if let Some(found) = stored_png(state, hash).await {
                return found;
            }
            tracing::warn!(
                "the organization's uploaded icon is missing; serving the generated one"
            );
        }
    }
    let uploaded = key.parse::<u64>().ok().and_then(|id| {
        state
            .engine
            .read(|s| s.users.get(UserId(id))?.avatar.clone())
    });
    if let Some(image) = uploaded {
        let hash = if medium {
            image.medium_sha256
        } else {
            image.sha256
        };
        if let Some(found) = stored_png(state, hash).await {
            return found;
        }
        tracing::warn!(%key, "an uploaded avatar's file is missing; serving the generated one");
    }
    let size = if medium { MEDIUM_SIZE } else { DEFAULT_SIZE };
    png_response(generated(key, size), "public, max-age=86400")
}

/// Who may see the picture behind `key`: the organization's icon (`realm`) is shown on the
/// login page, so anyone; a person's, only someone logged in (an API key or a web session),
/// as Zulip does for an organization that is not web-public.
fn may_see(req: &HttpRequest, key: &str) -> ApiResult<()> {
    if key == "realm" {
        return Ok(());
    }
    super::auth::authenticate(req).map(|_| ())
}

/// `GET /avatar/{key}`: a user's avatar (by id, for those logged in), or the organization's
/// icon (`realm`).
pub async fn get_avatar(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let key = req.match_info().get("key").unwrap_or_default();
    if let Err(refused) = may_see(&req, key) {
        return actix_web::ResponseError::error_response(&refused);
    }
    avatar(&state, key, false).await
}

/// `GET /avatar/{key}/medium`: the 500-pixel form.
pub async fn get_avatar_medium(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let key = req.match_info().get("key").unwrap_or_default();
    if let Err(refused) = may_see(&req, key) {
        return actix_web::ResponseError::error_response(&refused);
    }
    avatar(&state, key, true).await
}

/// Stores one PNG among the uploads; returns its hash.
async fn store_png(state: &AppState, bytes: Vec<u8>) -> ApiResult<String> {
    let store = state.uploads.clone();
    let stored = web::block(move || store.put(&bytes))
        .await
        .map_err(|e| ApiError::internal(format!("avatar storage: {e}")))?;
    stored.map_err(|e| ApiError::internal(format!("avatar storage: {e}")))
}

/// `POST /users/me/avatar`: one picture (PNG, JPEG, GIF or WebP, at most 5 MiB), cropped to its
/// centre square and stored at Zulip's two sizes.
pub async fn upload_avatar(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let image = uploaded_avatar(&state, params.take_files()).await?;
    set(state, auth, params, Some(image)).await
}

/// The one uploaded image of a request, decoded within bounds, cropped, resized to Zulip's two
/// avatar sizes and stored (`POST /users/me/avatar`, `PATCH /bots/{id}`).
pub async fn uploaded_avatar(
    state: &web::Data<AppState>,
    files: Vec<super::params::UploadedFile>,
) -> ApiResult<AvatarImage> {
    let (small, medium) = processed(files, "avatar", resize_upload).await?;
    Ok(AvatarImage {
        sha256: store_png(state, small).await?,
        medium_sha256: store_png(state, medium).await?,
    })
}

/// The one uploaded picture of a request (Zulip's "You must upload exactly one {what}."),
/// decoded and resized by `process` on the blocking pool within `RESIZE_TIME`, with Zulip's
/// answers for what cannot be.
async fn processed<T: Send + 'static>(
    files: Vec<super::params::UploadedFile>,
    what: &str,
    process: fn(&[u8]) -> Result<T, AvatarError>,
) -> ApiResult<T> {
    let mut files = files;
    if files.len() != 1 {
        return Err(ApiError::bad_request(format!(
            "You must upload exactly one {what}."
        )));
    }
    let bytes = files.remove(0).bytes;
    let done = tokio::time::timeout(RESIZE_TIME, web::block(move || process(&bytes)))
        .await
        .map_err(|_| ApiError::new(ErrorCode::BadImage, "Image processing took too long"))?
        .map_err(|e| ApiError::internal(format!("resizing: {e}")))?;
    match done {
        Ok(value) => Ok(value),
        Err(AvatarError::TooLarge) => Err(ApiError::bad_request(format!(
            "Uploaded file is larger than the allowed limit of {} MiB",
            crate::avatars::MAX_AVATAR_FILE_SIZE_MIB
        ))),
        Err(AvatarError::NotAnImage) => Err(ApiError::new(
            ErrorCode::BadImage,
            "Could not decode image; did you upload an image file?",
        )),
        Err(AvatarError::TooManyPixels) => Err(ApiError::new(
            ErrorCode::BadImage,
            "Image size exceeds limit.",
        )),
    }
}

/// `POST /realm/icon`: the organization's square icon (administrators), at Zulip's 100 pixels.
pub async fn upload_realm_icon(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let (small, _) = processed(params.take_files(), "icon", resize_upload).await?;
    let sha256 = store_png(&state, small).await?;
    set_realm_image(&state, &auth, RealmImage::Icon, Some(sha256)).await?;
    let url = icon_url(&state);
    Ok(params.success(json!({ "icon_url": url })))
}

/// `DELETE /realm/icon`: back to the generated icon.
pub async fn delete_realm_icon(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    set_realm_image(&state, &auth, RealmImage::Icon, None).await?;
    let url = icon_url(&state);
    Ok(params.success(json!({ "icon_url": url })))
}

/// `POST /realm/logo`: the organization's wide logo, or with `night` the dark theme's
/// (administrators), fitted in 800 × 100.
pub async fn upload_realm_logo(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let image = logo_kind(&mut params)?;
    let png = processed(params.take_files(), "logo", crate::avatars::resize_logo).await?;
    let sha256 = store_png(&state, png).await?;
    set_realm_image(&state, &auth, image, Some(sha256)).await?;
    Ok(params.success(json!({})))
}

/// `DELETE /realm/logo`: back to the default logo (`night` for the dark theme's).
pub async fn delete_realm_logo(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let image = logo_kind(&mut params)?;
    set_realm_image(&state, &auth, image, None).await?;
    Ok(params.success(json!({})))
}

fn logo_kind(params: &mut Params) -> ApiResult<RealmImage> {
    Ok(if params.bool("night")?.unwrap_or(false) {
        RealmImage::NightLogo
    } else {
        RealmImage::Logo
    })
}

fn icon_url(state: &AppState) -> String {
    state
        .engine
        .read(|s| crate::render::realm::image_json(s, &state.site, RealmImage::Icon).0)
}

/// A stored PNG by its hash, cached for a year (the URL that names it changes with it); `None`
/// when its file is missing.
async fn stored_png(state: &AppState, hash: String) -> Option<HttpResponse> {
    let store = state.uploads.clone();
    match web::block(move || store.read(&hash)).await {
        Ok(Ok(bytes)) => Some(png_response(bytes, "public, max-age=31536000")),
        _ => None,
    }
}

async fn set_realm_image(
    state: &AppState,
    auth: &Auth,
    image: RealmImage,
    sha256: Option<String>,
) -> ApiResult<()> {
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::realm::set_image(s, ctx, image, sha256.clone())
        })
        .await?;
    Ok(())
}

/// `GET /avatar/realm/logo` and `/avatar/realm/night_logo`: the uploaded logo, else the
/// generated icon in its place. Anyone may see them (the login page shows the organization).
pub async fn get_realm_logo(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let image = if req.path().ends_with("night_logo") {
        RealmImage::NightLogo
    } else {
        RealmImage::Logo
    };
    let stored = state
        .engine
        .read(|s| s.realm.image(image).map(str::to_owned));
    if let Some(hash) = stored {
        if let Some(found) = stored_png(&state, hash).await {
            return found;
        }
        tracing::warn!("the organization's uploaded logo is missing; serving the generated one");
    }
    png_response(generated("realm", DEFAULT_SIZE), "public, max-age=86400")
}

/// `DELETE /users/me/avatar`: back to the generated avatar.
pub async fn delete_avatar(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    set(state, auth, params, None).await
}

async fn set(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
    image: Option<AvatarImage>,
) -> ApiResult<HttpResponse> {
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::users::set_avatar(s, ctx, image.clone())
        })
        .await?;
    let url = state.engine.read(|s| {
        s.users
            .get(auth.user_id)
            .map(|u| avatar_url(&state.site, u))
            .unwrap_or_default()
    });
    Ok(params.success(json!({ "avatar_url": url })))
}

//! Custom emoji: `GET /realm/emoji`, `POST|DELETE /realm/emoji/{emoji_name}`, and the images
//! at `/user_avatars/{realm_id}/emoji/images/{file}`.

use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult};
use crate::projections::emoji::REALM_ID;
use crate::render::realm::realm_emoji_json;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

/// `GET /realm/emoji`.
pub async fn get_realm_emoji(
    state: web::Data<AppState>,
    _auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let emoji = state.engine.read(realm_emoji_json);
    Ok(params.success(json!({ "emoji": emoji })))
}

fn emoji_name(req: &HttpRequest) -> String {
    req.match_info()
        .get("emoji_name")
        .unwrap_or_default()
        .to_owned()
}

/// `POST /realm/emoji/{emoji_name}`: one image file, `multipart/form-data`.
pub async fn upload_custom_emoji(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let name = emoji_name(&req);
    let mut files: Vec<Vec<u8>> = params.take_files().into_iter().map(|f| f.bytes).collect();
    // A still image larger than Zulip's 64 pixels is shrunk here, on the blocking pool, before
    // the command sees it (the size limit applies to what was uploaded). Bytes that do not
    // decode are left to the command's checks, which run first (permission, name, type).
    let recognised = files.len() == 1
        && files[0].len() <= crate::commands::emoji::MAX_EMOJI_FILE_SIZE_MIB * 1024 * 1024
        && crate::commands::emoji::image_type(&files[0]).is_some();
    if recognised {
        let original = files.remove(0);
        let resized = web::block(move || match crate::avatars::resize_emoji(&original) {
            Ok(Some(small)) => small,
            Ok(None) | Err(_) => original,
        })
        .await
        .map_err(|e| ApiError::internal(format!("resizing: {e}")))?;
        files.push(resized);
    }
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::emoji::add_custom_emoji(s, ctx, &name, files.clone())
        })
        .await
}

/// `DELETE /realm/emoji/{emoji_name}`.
pub async fn deactivate_custom_emoji(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let name = emoji_name(&req);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::emoji::deactivate_custom_emoji(s, ctx, &name)
        })
        .await
}

/// `GET /user_avatars/{realm_id}/emoji/images/still/{id}.png`: the first frame of an animated
/// emoji as a PNG, made on the blocking pool (public and immutable, like the image itself).
pub async fn get_emoji_still(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    use actix_web::ResponseError;
    let realm = req.match_info().get("realm_id").unwrap_or_default();
    let file = req.match_info().get("file").unwrap_or_default();
    let found = (realm == REALM_ID.to_string())
        .then(|| {
            state.engine.read(|s| {
                s.custom_emoji
                    .by_still_name(file)
                    .map(|e| e.image.0.clone())
            })
        })
        .flatten();
    let Some(bytes) = found else {
        return ApiError::new(crate::error::ErrorCode::NotFound, "File not found").error_response();
    };
    match web::block(move || crate::avatars::still_frame(&bytes)).await {
        Ok(Ok(png)) => HttpResponse::Ok()
            .content_type("image/png")
            .insert_header(("Cache-Control", "public, max-age=31536000, immutable"))
            .insert_header(("X-Content-Type-Options", "nosniff"))
            .body(png),
        _ => ApiError::new(crate::error::ErrorCode::NotFound, "File not found").error_response(),
    }
}

/// `GET /user_avatars/{realm_id}/emoji/images/{file}`: the uploaded image, public like Zulip's
/// upload directory (messages of any viewer may show it).
pub async fn get_emoji_image(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let realm = req.match_info().get("realm_id").unwrap_or_default();
    let file = req.match_info().get("file").unwrap_or_default();
    let found = (realm == REALM_ID.to_string())
        .then(|| {
            state.engine.read(|s| {
                s.custom_emoji
                    .by_file_name(file)
                    .map(|e| (e.content_type.clone(), e.image.0.clone()))
            })
        })
        .flatten();
    match found {
        Some((content_type, bytes)) => HttpResponse::Ok()
            .content_type(content_type)
            .insert_header(("Cache-Control", "public, max-age=31536000, immutable"))
            // The type was checked from the bytes; browsers must not guess another.
            .insert_header(("X-Content-Type-Options", "nosniff"))
            .body(bytes.to_vec()),
        None => actix_web::ResponseError::error_response(&ApiError::not_found()),
    }
}

/// `GET /static/generated/emoji/{file}`: the emoji data file `server_emoji_data_url` names. Its
/// name carries a hash of its content, so clients may keep it for ever; any other name is a 404.
pub async fn get_emoji_data(req: HttpRequest) -> HttpResponse {
    let file = crate::emoji::api_file();
    if req.match_info().get("file") != Some(file.name.as_str()) {
        return actix_web::ResponseError::error_response(&ApiError::not_found());
    }
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("Cache-Control", "public, max-age=31536000, immutable"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body(file.json.clone())
}

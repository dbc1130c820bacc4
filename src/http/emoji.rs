//! Custom emoji: `GET /realm/emoji`, `POST|DELETE /realm/emoji/{emoji_name}`, and the images
//! at `/user_avatars/{realm_id}/emoji/images/{file}`.

use super::{AppState, Auth, Params};
use crate::avatars::AvatarError;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::ids::EmojiId;
use crate::projections::emoji::REALM_ID;
use crate::render::realm::realm_emoji_json;
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

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
    // The picture is decoded here, on the blocking pool and within the emoji bounds, before the
    // command sees it: a still one larger than Zulip's 64 pixels is shrunk, and one that does
    // not decode within the bounds is refused (the size limit applies to what was uploaded).
    // The command's own checks (permission, name, type) come first, so it is told the outcome.
    let recognised = files.len() == 1
        && files[0].len() <= crate::commands::emoji::MAX_EMOJI_FILE_SIZE_MIB * 1024 * 1024
        && crate::commands::emoji::image_type(&files[0]).is_some();
    let mut picture: Result<(), AvatarError> = Ok(());
    if recognised {
        let original = files.remove(0);
        let prepared = tokio::time::timeout(
            DECODE_TIME,
            web::block(move || {
                crate::avatars::prepare_emoji(&original).map(|small| small.unwrap_or(original))
            }),
        )
        .await
        .map_err(|_| ApiError::new(ErrorCode::BadImage, "Image processing took too long"))?
        .map_err(|e| ApiError::internal(format!("resizing: {e}")))?;
        match prepared {
            Ok(kept) => files.push(kept),
            Err(refused) => {
                picture = Err(refused);
                files.push(Vec::new());
            }
        }
    }
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::emoji::add_custom_emoji(s, ctx, &name, files.clone(), picture)
        })
        .await
}

/// How long decoding and resizing an uploaded emoji may take.
const DECODE_TIME: std::time::Duration = std::time::Duration::from_secs(10);

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

/// The still images of animated emoji, each made once (an emoji's image never changes): the
/// first request for one decodes it on the blocking pool while any others for it wait, and
/// every later one is answered from here. `None` is kept for an image that does not decode
/// within the emoji bounds (one stored before they applied), so it is not tried again.
#[derive(Default)]
pub struct EmojiStills {
    made: std::sync::Mutex<HashMap<EmojiId, Arc<tokio::sync::OnceCell<Option<Bytes>>>>>,
}

impl EmojiStills {
    async fn get(&self, id: EmojiId, image: Arc<[u8]>) -> Option<Bytes> {
        let cell = self
            .made
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id)
            .or_default()
            .clone();
        cell.get_or_init(|| async move {
            match web::block(move || crate::avatars::still_frame(&image)).await {
                Ok(Ok(png)) => Some(Bytes::from(png)),
                _ => None,
            }
        })
        .await
        .clone()
    }
}

/// `GET /user_avatars/{realm_id}/emoji/images/still/{id}.png`: the first frame of an animated
/// emoji as a PNG (public and immutable, like the image itself), made once (`EmojiStills`).
pub async fn get_emoji_still(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    use actix_web::ResponseError;
    let realm = req.match_info().get("realm_id").unwrap_or_default();
    let file = req.match_info().get("file").unwrap_or_default();
    let found = (realm == REALM_ID.to_string())
        .then(|| {
            state.engine.read(|s| {
                s.custom_emoji
                    .by_still_name(file)
                    .map(|e| (e.id, e.image.0.clone()))
            })
        })
        .flatten();
    let Some((id, bytes)) = found else {
        return ApiError::new(ErrorCode::NotFound, "File not found").error_response();
    };
    match state.emoji_stills.get(id, bytes).await {
        Some(png) => HttpResponse::Ok()
            .content_type("image/png")
            .insert_header(("Cache-Control", "public, max-age=31536000, immutable"))
            .insert_header(("X-Content-Type-Options", "nosniff"))
            .body(png),
        None => ApiError::new(ErrorCode::NotFound, "File not found").error_response(),
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

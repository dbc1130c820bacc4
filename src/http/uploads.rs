//! Uploaded files: `POST /user_uploads`, downloads at `/user_uploads/{realm_id}/{path}` (API key
//! in the `Authorization` header, as the mobile app sends it), temporary links
//! (`GET /api/v1/user_uploads/...`, then `/user_uploads/temporary/{token}/{name}` without
//! credentials for a minute), thumbnails of images at `/user_uploads/thumbnail/{path}/{format}`,
//! `GET /attachments` and `DELETE /attachments/{id}`.

use super::{path_id, AppState, Auth, Params};
use crate::commands::attachments::StoredUpload;
use crate::error::{ApiError, ApiResult};
use crate::ids::AttachmentId;
use crate::projections::access::can_see_upload;
use crate::render::attachments::attachment_json;
use crate::thumbnails::Format;
use crate::uploads::{sanitize_name, sniff_image, Incoming, ReceiveError};
use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde_json::json;

/// How long a temporary download link works (Zulip: 60 seconds).
const TEMPORARY_LINK_SECS: i64 = 60;

/// Fields a multipart upload may have besides its file.
const MAX_UPLOAD_FIELDS: usize = 16;

/// Bytes gathered before they are written out (on the blocking pool).
const WRITE_BATCH: usize = 1024 * 1024;

fn io_error(e: std::io::Error) -> ApiError {
    if crate::store::space::is_no_space(&e) {
        tracing::error!(error = %e, "an upload did not fit on the disk");
        return ApiError::new(
            crate::error::ErrorCode::StorageFull,
            "The server's disk is full: the file was not saved.",
        )
        .retry_after(crate::engine::RETRY_AFTER_SECONDS);
    }
    ApiError::internal(format!("upload storage: {e}"))
}

/// Writes a batch on the blocking pool, handing the upload back.
async fn write_batch(mut incoming: Incoming, batch: Vec<u8>) -> ApiResult<Incoming> {
    let written = web::block(move || incoming.write(&batch).map(|()| incoming))
        .await
        .map_err(|e| ApiError::internal(format!("upload storage: {e}")))?;
    written.map_err(|e| match e {
        ReceiveError::TooLarge => ApiError::internal("limit"),
        ReceiveError::Io(e) => io_error(e),
    })
}

/// A received file: where its bytes went, its name and the type its sender declared.
struct Received {
    incoming: Incoming,
    name: String,
    declared: Option<String>,
}

/// Reads the multipart body: exactly one file (streamed to disk, at most `limit` bytes) and
/// up to a few small text fields, which are ignored.
async fn receive(
    state: &AppState,
    req: &HttpRequest,
    payload: web::Payload,
    limit: u64,
) -> ApiResult<Received> {
    let too_large = || {
        ApiError::bad_request(format!(
            "Uploaded file is larger than the allowed limit of {} MiB",
            state.site.uploads.max_file_mib
        ))
    };
    let malformed = |e: actix_multipart::MultipartError| {
        ApiError::bad_request(format!("Malformed multipart body: {e}"))
    };
    let mut multipart = actix_multipart::Multipart::new(req.headers(), payload);
    let mut received: Option<Received> = None;
    let mut fields = 0;
    while let Some(field) = multipart.next().await {
        fields += 1;
        if fields > MAX_UPLOAD_FIELDS {
            return Err(ApiError::bad_request("Too many fields in the request"));
        }
        let mut field = field.map_err(malformed)?;
        let file_name = field
            .content_disposition()
            .and_then(|d| d.get_filename().map(str::to_owned));
        let Some(file_name) = file_name else {
            // A text field: read (bounded) and ignored.
            let mut size = 0;
            while let Some(chunk) = field.next().await {
                size += chunk.map_err(malformed)?.len();
                if size > super::params::MAX_BODY_BYTES {
                    return Err(ApiError::bad_request("Request body too large"));
                }
            }
            continue;
        };
        if received.is_some() {
            return Err(ApiError::bad_request(
                "You may only upload one file at a time",
            ));
        }
        let declared = field.content_type().map(|m| m.essence_str().to_owned());
        let store = state.uploads.clone();
        let mut incoming = web::block(move || store.begin(limit))
            .await
            .map_err(|e| ApiError::internal(format!("upload storage: {e}")))?
            .map_err(io_error)?;
        let (mut batch, mut size) = (Vec::new(), 0u64);
        while let Some(chunk) = field.next().await {
            let chunk = chunk.map_err(malformed)?;
            size += chunk.len() as u64;
            if size > limit {
                return Err(too_large());
            }
            batch.extend_from_slice(&chunk);
            if batch.len() >= WRITE_BATCH {
                incoming = write_batch(incoming, std::mem::take(&mut batch)).await?;
            }
        }
        incoming = write_batch(incoming, batch).await?;
        received = Some(Received {
            incoming,
            name: sanitize_name(&file_name),
            declared,
        });
    }
    received.ok_or_else(|| ApiError::bad_request("You must specify a file to upload"))
}

/// The type recorded for an upload: an image type only when the bytes are one (they are then
/// served inline); otherwise what the client declared, if it is a plain `type/subtype`.
fn content_type(head: &[u8], declared: Option<&str>) -> String {
    if let Some(image) = sniff_image(head) {
        return image.to_owned();
    }
    let plain = |t: &str| {
        let mut parts = t.split('/');
        let token = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
        };
        matches!((parts.next(), parts.next(), parts.next()), (Some(a), Some(b), None) if token(a) && token(b))
    };
    match declared {
        Some(t) if plain(t) && !t.starts_with("image/") => t.to_ascii_lowercase(),
        _ => "application/octet-stream".to_owned(),
    }
}

/// `POST /user_uploads`: one file of `multipart/form-data`, under any field name.
pub async fn upload_file(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    payload: web::Payload,
) -> ApiResult<HttpResponse> {
    // A file is not taken in while nothing could record it (a disk below its reserve).
    if let Some(refusal) = state.engine.writes().refusal() {
        return Err(refusal);
    }
    let limit = state.site.uploads.max_file_bytes();
    if let Some(declared) = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        // The body holds the file and a little framing.
        if declared > limit + 64 * 1024 {
            return Err(ApiError::bad_request(format!(
                "Uploaded file is larger than the allowed limit of {} MiB",
                state.site.uploads.max_file_mib
            )));
        }
    }
    let is_multipart = req
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data"));
    if !is_multipart {
        return Err(ApiError::bad_request("You must specify a file to upload"));
    }
    // Uploads get ten times the usual body time (a 25 MiB file on a slow link).
    let deadline = state.client_timeouts.body * 10;
    let received = tokio::time::timeout(deadline, receive(&state, &req, payload, limit))
        .await
        .map_err(|_| {
            ApiError::new(
                crate::error::ErrorCode::RequestTimeout,
                "Request body not received in time",
            )
        })??;
    let store = state.uploads.clone();
    let Received {
        incoming,
        name,
        declared,
    } = received;
    let (sha256, size, head) = web::block(move || incoming.finish(&store))
        .await
        .map_err(|e| ApiError::internal(format!("upload storage: {e}")))?
        .map_err(io_error)?;
    let image = match sniff_image(&head) {
        Some(_) => {
            let (store, hash) = (state.uploads.clone(), sha256.clone());
            web::block(move || store.make_thumbnails(&hash))
                .await
                .ok()
                .flatten()
        }
        None => None,
    };
    let upload = StoredUpload {
        image,
        content_type: content_type(&head, declared.as_deref()),
        random: uuid::Uuid::new_v4().simple().to_string()[..24].to_owned(),
        name: name.clone(),
        size,
        sha256,
    };
    let quota = state.site.uploads.quota_bytes();
    let path = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::attachments::record_upload(s, ctx, upload.clone(), quota)
        })
        .await?;
    let url = format!("/user_uploads/{}", path.value);
    Ok(Params::default().success(json!({"uri": url, "url": url, "filename": name})))
}

/// The `{realm_id}/{path}` of the request.
fn request_path(req: &HttpRequest) -> String {
    let realm = req.match_info().get("realm_id").unwrap_or_default();
    let rest = req.match_info().get("path").unwrap_or_default();
    format!("{realm}/{rest}")
}

/// The upload at `path`, if `auth` may see it: `(id, hash, type, name)`.
fn visible_upload(
    state: &AppState,
    auth: &Auth,
    path: &str,
) -> ApiResult<(AttachmentId, String, String, String)> {
    state.engine.read(|s| {
        let me = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("user missing"))?;
        s.attachments
            .by_path(path)
            .filter(|a| can_see_upload(s, me, a))
            .map(|a| {
                (
                    a.id,
                    a.sha256.clone(),
                    a.content_type.clone(),
                    a.name.clone(),
                )
            })
            .ok_or_else(|| ApiError::new(crate::error::ErrorCode::NotFound, "File not found"))
    })
}

/// Declared types that an upload is served with, always as a download: none of them is a
/// document, a script or a style that a browser would run. Any other type that is not an
/// image read from the bytes is served as `application/octet-stream`.
const SAFE_DOWNLOAD_TYPES: &[&str] = &[
    "text/plain",
    "text/csv",
    "application/pdf",
    "application/zip",
    "application/gzip",
    "application/x-tar",
    "application/json",
    "audio/mpeg",
    "audio/ogg",
    "audio/wav",
    "audio/webm",
    "audio/mp4",
    "audio/flac",
    "video/mp4",
    "video/webm",
    "video/ogg",
    "video/quicktime",
];

/// The bytes of an upload: from the upload directory, or in a cluster from the node that took
/// the upload (checked against its hash, and kept).
async fn upload_bytes(state: &AppState, sha256: &str) -> ApiResult<Vec<u8>> {
    let store = state.uploads.clone();
    let hash = sha256.to_owned();
    let read = web::block(move || store.read(&hash))
        .await
        .map_err(|e| ApiError::internal(format!("upload storage: {e}")))?;
    match read {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let fetched = match &state.cluster {
                Some(cluster) => cluster.fetch_upload(sha256).await,
                None => None,
            };
            let Some(bytes) = fetched else {
                // Recorded but not on disk (a data directory restored without its uploads):
                // said in the log, and answered like a file that does not exist.
                tracing::error!(%sha256, "an uploaded file is missing from the upload directory");
                return Err(ApiError::new(
                    crate::error::ErrorCode::NotFound,
                    "File not found",
                ));
            };
            let (store, kept) = (state.uploads.clone(), bytes.clone());
            if let Ok(Err(error)) = web::block(move || store.put(&kept)).await {
                tracing::warn!(%error, "a file fetched from another node was not kept");
            }
            Ok(bytes)
        }
        Err(e) => Err(io_error(e)),
    }
}

/// The file's bytes with headers that keep a browser from running them: images inline (their
/// type was read from the bytes), everything else as a download, never sniffed, sandboxed.
async fn file_response(
    state: &AppState,
    sha256: String,
    content_type: String,
    name: String,
) -> ApiResult<HttpResponse> {
    let bytes = upload_bytes(state, &sha256).await?;
    let inline = sniff_image(&bytes).is_some() && content_type.starts_with("image/");
    // Only an image read from the bytes, or a type no browser runs, keeps its recorded type: a
    // client may declare anything (`text/html`, `application/javascript`, an SVG).
    let content_type = if inline || SAFE_DOWNLOAD_TYPES.contains(&content_type.as_str()) {
        content_type
    } else {
        "application/octet-stream".to_owned()
    };
    let disposition = format!(
        "{}; filename=\"{name}\"",
        if inline { "inline" } else { "attachment" }
    );
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Content-Disposition", disposition))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Content-Security-Policy", "default-src 'none'; sandbox"))
        .insert_header(("Cache-Control", "private, max-age=3600"))
        .body(bytes))
}

/// `GET /user_uploads/{realm_id}/{path}`: the file, for its owner and for users who can read a
/// message linking it.
pub async fn download(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    // A data export (`/user_uploads/exports/…`), for administrators.
    if req.match_info().get("realm_id") == Some("exports") {
        let path = format!(
            "exports/{}",
            req.match_info().get("path").unwrap_or_default()
        );
        if let Some((sha256, name)) = super::exports::find(&state, &auth, &path)? {
            return file_response(&state, sha256, "application/gzip".into(), name).await;
        }
    }
    if req.match_info().get("realm_id") == Some("thumbnail") {
        return thumbnail(
            &state,
            &auth,
            req.match_info().get("path").unwrap_or_default(),
        )
        .await;
    }
    let (_, sha256, content_type, name) = visible_upload(&state, &auth, &request_path(&req))?;
    file_response(&state, sha256, content_type, name).await
}

/// `GET /user_uploads/thumbnail/{path_id}/{format}`: a thumbnail of an uploaded image, for
/// whoever may see the image. A format name Zulip's clients may ask for gets the nearest one
/// made (`crate::thumbnails::Format::serving`); one not yet made (after an import, on another
/// node) is made before the answer, as Zulip does.
async fn thumbnail(state: &AppState, auth: &Auth, rest: &str) -> ApiResult<HttpResponse> {
    let not_found = || ApiError::new(crate::error::ErrorCode::NotFound, "File not found");
    let (path, requested) = rest.rsplit_once('/').ok_or_else(not_found)?;
    let (id, sha256, _, _) = visible_upload(state, auth, path)?;
    let image = state
        .engine
        .read(|s| s.attachments.get(id).and_then(|a| a.image))
        .ok_or_else(not_found)?;
    let format = Format::serving(requested, &image).ok_or_else(not_found)?;
    let name = format.name();
    let store = state.uploads.clone();
    let (hash, kept_name) = (sha256.clone(), name.clone());
    let kept = web::block(move || store.read_thumbnail(&hash, &kept_name))
        .await
        .map_err(|e| ApiError::internal(format!("upload storage: {e}")))?;
    let bytes = match kept {
        Ok(bytes) => bytes,
        Err(_) => {
            let original = upload_bytes(state, &sha256).await?;
            let store = state.uploads.clone();
            let made = web::block(move || {
                let thumbnail = crate::thumbnails::make(&original, format)?;
                if let Err(error) = store.put_thumbnail(&sha256, &name, &thumbnail) {
                    tracing::warn!(%error, "a thumbnail was not kept");
                }
                Some(thumbnail)
            })
            .await
            .map_err(|e| ApiError::internal(format!("upload storage: {e}")))?;
            made.ok_or_else(|| {
                tracing::warn!(attachment = id.0, "an uploaded image gave no thumbnail");
                not_found()
            })?
        }
    };
    // A photo's thumbnail is a JPEG (`crate::thumbnails`); its type is read from its bytes.
    let kind = sniff_image(&bytes).unwrap_or("image/webp");
    Ok(HttpResponse::Ok()
        .content_type(kind)
        .insert_header(("Content-Disposition", "inline"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Content-Security-Policy", "default-src 'none'; sandbox"))
        .insert_header(("Cache-Control", "private, immutable"))
        .body(bytes))
}

/// `GET /api/v1/user_uploads/{realm_id}/{path}`: a link that works for a minute without
/// credentials (for clients that hand the file to another program).
pub async fn temporary_link(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let (id, _, _, name) = visible_upload(&state, &auth, &request_path(&req))?;
    let expires = crate::time::now_ms() / 1000 + TEMPORARY_LINK_SECS;
    let token = format!(
        "{}-{expires}-{}",
        id.0,
        state.secret.upload_token(id.0, expires)
    );
    Ok(params.success(json!({ "url": format!("/user_uploads/temporary/{token}/{name}") })))
}

/// `GET /user_uploads/temporary/{token}/{name}`: the file of an unexpired temporary link.
pub async fn download_temporary(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let not_found = || ApiError::new(crate::error::ErrorCode::NotFound, "File not found");
    let token = req.match_info().get("token").unwrap_or_default();
    let name = req.match_info().get("name").unwrap_or_default();
    let mut parts = token.splitn(3, '-');
    let (Some(id), Some(expires), Some(mac)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(not_found());
    };
    let (Ok(id), Ok(expires)) = (id.parse::<u64>(), expires.parse::<i64>()) else {
        return Err(not_found());
    };
    let valid = expires >= crate::time::now_ms() / 1000
        && crate::auth::constant_time_eq(
            state.secret.upload_token(id, expires).as_bytes(),
            mac.as_bytes(),
        );
    if !valid {
        return Err(not_found());
    }
    let found = state.engine.read(|s| {
        s.attachments
            .get(AttachmentId(id))
            .filter(|a| a.name == name)
            .map(|a| (a.sha256.clone(), a.content_type.clone(), a.name.clone()))
    });
    let (sha256, content_type, name) = found.ok_or_else(not_found)?;
    file_response(&state, sha256, content_type, name).await
}

/// `GET /thumbnail/status/{realm_id}/{path}` (Zulip 12, feature level 479): whether every
/// thumbnail of the caller's own uploaded image is made (they are made with the upload, and
/// again on request when missing).
pub async fn thumbnail_status(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let path = request_path(&req);
    let found = state.engine.read(|s| {
        s.attachments
            .by_path(&path)
            .filter(|a| a.owner_id == auth.user_id)
            .and_then(|a| a.image.map(|image| (a.sha256.clone(), image)))
    });
    let (sha256, image) = found.ok_or_else(|| ApiError::bad_request("Invalid attachment"))?;
    let store = state.uploads.clone();
    let made = web::block(move || store.has_thumbnails(&sha256, &image))
        .await
        .map_err(|e| ApiError::internal(format!("upload storage: {e}")))?;
    Ok(params.success(json!({ "has_thumbnail": made })))
}

/// `GET /attachments`: the caller's uploads and the space they take.
pub async fn get_attachments(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let body = state.engine.read(|s| {
        let attachments: Vec<_> = s
            .attachments
            .owned_by(auth.user_id)
            .map(|a| attachment_json(s, a))
            .collect();
        json!({
            "attachments": attachments,
            "upload_space_used": s.attachments.total_bytes(),
        })
    });
    Ok(params.success(body))
}

/// `DELETE /attachments/{attachment_id}`: the owner deletes an upload; its bytes go once the
/// deletion is durable (unless another upload holds the same bytes).
pub async fn delete_attachment(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = AttachmentId(
        path_id(&req, "attachment_id").map_err(|_| ApiError::bad_request("Invalid attachment"))?,
    );
    let unshared = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::attachments::delete_attachment(s, ctx, id)
        })
        .await?;
    if let Some(sha256) = unshared.value {
        let store = state.uploads.clone();
        let removed = web::block(move || store.remove(&sha256)).await;
        if !matches!(removed, Ok(Ok(()))) {
            // The deletion stands; `chronicle erase` removes bytes no upload names.
            tracing::warn!(
                attachment = id.0,
                "could not remove a deleted upload's file"
            );
        }
    }
    Ok(params.success(json!({})))
}

//! Uploaded files: recording an upload whose bytes are on disk, and deleting one.

use super::actor;
use super::Decision;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::Event;
use crate::ids::AttachmentId;
use crate::projections::Projections;

/// An upload whose bytes are stored (`crate::uploads`), to be recorded.
#[derive(Debug, Clone)]
pub struct StoredUpload {
    /// The sanitized file name.
    pub name: String,
    /// The random middle part of the path (`{realm_id}/{random}/{name}`).
    pub random: String,
    pub size: u64,
    pub sha256: String,
    pub content_type: String,
    /// An image's preview facts, when the bytes are one (`crate::thumbnails::probe`).
    pub image: Option<crate::events::UploadedImage>,
}

/// Records an upload, unless it would take the organization past its quota (`None`: none).
/// Answers the attachment's `path_id`.
pub fn record_upload(
    state: &Projections,
    ctx: &Ctx,
    upload: StoredUpload,
    quota_bytes: Option<u64>,
) -> ApiResult<Decision<String>> {
    let me = actor(state, ctx)?;
    if quota_bytes.is_some_and(|quota| state.attachments.total_bytes() + upload.size > quota) {
        return Err(ApiError::new(
            ErrorCode::RealmUploadQuota,
            "Upload would exceed your organization's upload quota.",
        ));
    }
    let path_id = format!(
        "{}/{}/{}",
        crate::projections::emoji::REALM_ID,
        upload.random,
        upload.name
    );
    Ok(Decision::new(
        vec![Event::AttachmentUploaded {
            attachment_id: state.attachments.next_id(),
            owner_id: me.user_id,
            path_id: path_id.clone(),
            name: upload.name,
            size: upload.size,
            sha256: upload.sha256,
            content_type: upload.content_type,
            image: upload.image,
        }],
        path_id,
    ))
}

/// `DELETE /attachments/{id}`: only the owner may. Answers the file's hash when no other upload
/// holds the same bytes (the caller removes them once the deletion is durable).
pub fn delete_attachment(
    state: &Projections,
    ctx: &Ctx,
    id: AttachmentId,
) -> ApiResult<Decision<Option<String>>> {
    let me = actor(state, ctx)?;
    let attachment = state
        .attachments
        .get(id)
        .filter(|a| a.owner_id == me.user_id)
        .ok_or_else(|| ApiError::bad_request("Invalid attachment"))?;
    let unshared = (!state.attachments.bytes_shared(id, &attachment.sha256))
        .then(|| attachment.sha256.clone());
    Ok(Decision::new(
        vec![Event::AttachmentDeleted {
            attachment_id: id,
            owner_id: me.user_id,
        }],
        unshared,
    ))
}

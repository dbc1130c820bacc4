//! Custom emoji: upload and deactivation, with Zulip's checks in Zulip's order.

use super::actor;
use super::Decision;
use crate::commands::Ctx;
use crate::emoji;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{Event, ImageBytes};
use crate::ids::EmojiId;
use crate::projections::Projections;
use std::sync::Arc;

/// Zulip's default `MAX_EMOJI_FILE_SIZE_MIB`.
pub const MAX_EMOJI_FILE_SIZE_MIB: usize = 5;

/// The name an upload asks for, as Zulip reads it: trimmed, spaces as underscores, and case
/// folded (the API treats upper and lower case alike).
pub fn normalized_name(raw: &str) -> String {
    raw.trim().replace(' ', "_").to_lowercase()
}

/// Zulip's `check_valid_emoji_name`.
fn check_name(name: &str) -> ApiResult<()> {
    if name.is_empty() {
        return Err(ApiError::bad_request("Emoji name is missing"));
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    if !name.chars().all(allowed) {
        return Err(ApiError::bad_request(
            "Emoji names must contain only lowercase alphanumeric characters, hyphens, and underscores.",
        ));
    }
    if name.ends_with(['-', '_']) {
        return Err(ApiError::bad_request(
            "Emoji names must end with either a letter or digit.",
        ));
    }
    Ok(())
}

/// The image type of a file, from its first bytes: the formats Zulip takes for emoji.
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// `POST /realm/emoji/{emoji_name}`: `files` are the uploaded files' bytes.
pub fn add_custom_emoji(
    state: &Projections,
    ctx: &Ctx,
    raw_name: &str,
    mut files: Vec<Vec<u8>>,
    picture: Result<(), crate::avatars::AvatarError>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let name = normalized_name(raw_name);
    check_name(&name)?;
    if !state.realm_allows(me.user_id, "can_add_custom_emoji_group") {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    if state.custom_emoji.active_named(&name).is_some() {
        return Err(ApiError::bad_request(
            "A custom emoji with this name already exists.",
        ));
    }
    if files.len() != 1 {
        return Err(ApiError::bad_request("You must upload exactly one file."));
    }
    let overrides_builtin =
        emoji::unicode_code(&name).is_some() || name == emoji::ZULIP_EXTRA_EMOJI;
    if overrides_builtin && !me.role.is_admin() {
        return Err(ApiError::bad_request(
            "Only administrators can override default emoji.",
        ));
    }
    let image = files.remove(0);
    if image.len() > MAX_EMOJI_FILE_SIZE_MIB * 1024 * 1024 {
        return Err(ApiError::bad_request(format!(
            "Uploaded file is larger than the allowed limit of {MAX_EMOJI_FILE_SIZE_MIB} MiB"
        )));
    }
    // What the HTTP layer found decoding the picture (within the emoji bounds).
    picture.map_err(bad_image)?;
    let content_type =
        image_type(&image).ok_or_else(|| ApiError::bad_request("Invalid image format"))?;
    let emoji_id = EmojiId(state.custom_emoji.max_id().0 + 1);
    Ok(Decision::events(vec![Event::CustomEmojiAdded {
        emoji_id,
        name,
        content_type: content_type.to_owned(),
        image: ImageBytes(Arc::from(image)),
    }]))
}

/// Zulip's answer to a picture it cannot use.
fn bad_image(refused: crate::avatars::AvatarError) -> ApiError {
    match refused {
        crate::avatars::AvatarError::TooManyPixels => ApiError::new(
            ErrorCode::BadImage,
            format!(
                "Image size exceeds limit: custom emoji may be at most {0} x {0} pixels.",
                crate::avatars::EMOJI_BOUNDS.side
            ),
        ),
        _ => ApiError::new(
            ErrorCode::BadImage,
            "Could not decode image; did you upload an image file?",
        ),
    }
}

/// `DELETE /realm/emoji/{emoji_name}`: administrators, or the emoji's author.
pub fn deactivate_custom_emoji(state: &Projections, ctx: &Ctx, name: &str) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let emoji = state.custom_emoji.active_named(name).ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotFound,
            format!("Emoji '{name}' does not exist"),
        )
    })?;
    if !me.role.is_admin() && emoji.author_id != Some(me.user_id) {
        return Err(ApiError::bad_request(
            "Must be an organization administrator or emoji author",
        ));
    }
    Ok(Decision::events(vec![Event::CustomEmojiDeactivated {
        emoji_id: emoji.id,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_zulips_rules() {
        assert_eq!(normalized_name("  Party Parrot "), "party_parrot");
        assert!(check_name("party_parrot").is_ok());
        assert!(check_name("x-1").is_ok());
        let msg = |n: &str| check_name(n).unwrap_err().body()["msg"].clone();
        assert_eq!(msg(""), "Emoji name is missing");
        assert_eq!(
            msg("tada_"),
            "Emoji names must end with either a letter or digit."
        );
        assert_eq!(
            msg("ta.da"),
            "Emoji names must contain only lowercase alphanumeric characters, hyphens, and underscores."
        );
    }

    #[test]
    fn image_types_come_from_magic_bytes() {
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_type(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"<svg></svg>"), None);
        assert_eq!(image_type(b""), None);
    }
}

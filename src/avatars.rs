//! Avatar images as PNG, which every client can show (the mobile app cannot show SVG): a
//! generated pattern for users who uploaded none, and uploaded pictures decoded with bounds and
//! resized to Zulip's two sizes.

use image::{ImageFormat, ImageReader, Limits, Rgba, RgbaImage};
use std::io::Cursor;

/// Zulip's avatar sizes: the default and `-medium`.
pub const DEFAULT_SIZE: u32 = 100;
pub const MEDIUM_SIZE: u32 = 500;

/// Zulip's `max_avatar_file_size_mib` default.
pub const MAX_AVATAR_FILE_SIZE_MIB: u64 = 5;

/// The largest picture accepted, per side, and the memory a decode may take.
const MAX_SIDE: u32 = 8192;
const MAX_DECODE_BYTES: u64 = 256 * 1024 * 1024;

/// Why an uploaded picture was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum AvatarError {
    TooLarge,
    NotAnImage,
}

fn fnv(key: &str) -> u32 {
    key.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

fn png(image: &RgbaImage) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    // Encoding an in-memory RGBA image to memory cannot fail short of allocation failure.
    let _ = image.write_to(&mut out, ImageFormat::Png);
    out.into_inner()
}

/// An HSL colour (saturation and lightness fixed) as RGB.
fn hue_rgb(hue: u32) -> [u8; 3] {
    let (s, l) = (0.55f32, 0.50f32);
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let h = (hue % 360) as f32 / 60.0;
    let x = c * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let byte = |v: f32| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    [byte(r), byte(g), byte(b)]
}

/// A generated avatar for `key`: a 5×5 mirrored pattern in a colour of its own on a light
/// background, `size` pixels square. The same key always gives the same picture.
pub fn generated(key: &str, size: u32) -> Vec<u8> {
    let hash = fnv(key);
    let [r, g, b] = hue_rgb(hash % 360);
    let fg = Rgba([r, g, b, 255]);
    let bg = Rgba([240, 240, 240, 255]);
    // 15 bits decide the left three columns; the right two mirror them.
    let bits = fnv(&format!("{key}/pattern"));
    let on = |col: u32, row: u32| {
        let col = col.min(4 - col);
        bits >> (col * 5 + row) & 1 == 1
    };
    let cell = (size / 6).max(1);
    let margin = (size - cell * 5) / 2;
    let image = RgbaImage::from_fn(size, size, |x, y| {
        if x < margin || y < margin {
            return bg;
        }
        let (col, row) = ((x - margin) / cell, (y - margin) / cell);
        if col < 5 && row < 5 && on(col, row) {
            fg
        } else {
            bg
        }
    });
    png(&image)
}

/// Decodes a PNG, JPEG, GIF or WebP (told by its bytes; the first frame of an animation) within
/// the bounds on dimensions and memory; `None` for a format `wanted` turns down.
fn decode_bounded(
    bytes: &[u8],
    wanted: impl Fn(ImageFormat) -> bool,
) -> Result<Option<image::DynamicImage>, AvatarError> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|_| AvatarError::NotAnImage)?;
    let format = match reader.format() {
        Some(f @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP)) => {
            f
        }
        _ => return Err(AvatarError::NotAnImage),
    };
    if !wanted(format) {
        return Ok(None);
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    reader
        .decode()
        .map(Some)
        .map_err(|_| AvatarError::NotAnImage)
}

/// Decodes an uploaded picture (PNG, JPEG, GIF or WebP, told by its bytes; the first frame of
/// an animation) within bounds on bytes, dimensions and memory, crops it to its centre square
/// and returns it as PNG at the default and medium sizes.
pub fn resize_upload(bytes: &[u8]) -> Result<(Vec<u8>, Vec<u8>), AvatarError> {
    if bytes.len() as u64 > MAX_AVATAR_FILE_SIZE_MIB * 1024 * 1024 {
        return Err(AvatarError::TooLarge);
    }
    let image = decode_bounded(bytes, |_| true)?.ok_or(AvatarError::NotAnImage)?;
    let side = image.width().min(image.height());
    if side == 0 {
        return Err(AvatarError::NotAnImage);
    }
    let square = image.crop_imm(
        (image.width() - side) / 2,
        (image.height() - side) / 2,
        side,
        side,
    );
    let at = |size: u32| {
        png(&square
            .resize_exact(size, size, image::imageops::FilterType::Triangle)
            .to_rgba8())
    };
    Ok((at(DEFAULT_SIZE), at(MEDIUM_SIZE)))
}

/// Zulip's custom emoji size.
pub const EMOJI_SIZE: u32 = 64;

/// A still custom emoji (PNG, JPEG or WebP) larger than 64 pixels, shrunk to fit in 64 × 64
/// (its proportions kept) as PNG, as Zulip resizes emoji; `None` when it already fits or is a
/// GIF (kept as uploaded, animation and all). Decoded with the same bounds as avatars.
pub fn resize_emoji(bytes: &[u8]) -> Result<Option<Vec<u8>>, AvatarError> {
    let Some(image) = decode_bounded(bytes, |format| format != ImageFormat::Gif)? else {
        return Ok(None);
    };
    if image.width() <= EMOJI_SIZE && image.height() <= EMOJI_SIZE {
        return Ok(None);
    }
    let small = image.resize(
        EMOJI_SIZE,
        EMOJI_SIZE,
        image::imageops::FilterType::Triangle,
    );
    Ok(Some(png(&small.to_rgba8())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dimensions(png_bytes: &[u8]) -> (u32, u32) {
        let image = image::load_from_memory_with_format(png_bytes, ImageFormat::Png).unwrap();
        (image.width(), image.height())
    }

    #[test]
    fn generated_avatars_are_pngs_of_their_own() {
        let a = generated("12", DEFAULT_SIZE);
        assert!(a.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert_eq!(dimensions(&a), (100, 100));
        assert_eq!(a, generated("12", DEFAULT_SIZE));
        assert_ne!(a, generated("13", DEFAULT_SIZE));
        assert_eq!(dimensions(&generated("12", MEDIUM_SIZE)), (500, 500));
    }

    #[test]
    fn large_still_emoji_shrink_to_64_pixels() {
        let wide = RgbaImage::from_pixel(256, 128, Rgba([200, 20, 30, 255]));
        let shrunk = resize_emoji(&png(&wide)).unwrap().unwrap();
        assert_eq!(dimensions(&shrunk), (64, 32));
        let small = RgbaImage::from_pixel(40, 40, Rgba([1, 2, 3, 255]));
        assert_eq!(resize_emoji(&png(&small)), Ok(None));
        assert_eq!(resize_emoji(b"GIF89a\x01\x00\x01\x00"), Ok(None));
        assert_eq!(resize_emoji(b"not an image"), Err(AvatarError::NotAnImage));
    }

    #[test]
    fn uploads_are_cropped_resized_and_bounded() {
        let wide = RgbaImage::from_pixel(300, 120, Rgba([10, 20, 30, 255]));
        let (small, medium) = resize_upload(&png(&wide)).unwrap();
        assert_eq!(dimensions(&small), (100, 100));
        assert_eq!(dimensions(&medium), (500, 500));
        assert_eq!(resize_upload(b"<svg/>"), Err(AvatarError::NotAnImage));
        assert_eq!(
            resize_upload(b"\x89PNG\r\n\x1a\ntruncated"),
            Err(AvatarError::NotAnImage)
        );
        // A PNG header claiming 100,000 × 100,000 pixels is refused before any pixel is
        // allocated.
        let mut huge = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        huge.extend_from_slice(&100_000u32.to_be_bytes());
        huge.extend_from_slice(&100_000u32.to_be_bytes());
        huge.extend_from_slice(&[8, 6, 0, 0, 0]);
        let crc = crc32fast::hash(&huge[12..]);
        huge.extend_from_slice(&crc.to_be_bytes());
        assert_eq!(resize_upload(&huge), Err(AvatarError::NotAnImage));
        let big = vec![0u8; (MAX_AVATAR_FILE_SIZE_MIB * 1024 * 1024 + 1) as usize];
        assert_eq!(resize_upload(&big), Err(AvatarError::TooLarge));
    }
}

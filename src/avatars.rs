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

/// How large a picture a decode accepts, per side, and how much memory it may take.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub side: u32,
    pub alloc: u64,
}

/// Avatars: up to 8192 pixels a side and 256 MiB.
pub const AVATAR_BOUNDS: Bounds = Bounds {
    side: 8192,
    alloc: 256 * 1024 * 1024,
};

/// Custom emoji, shown at 64 pixels: up to 1024 pixels a side (the first frame of an animation
/// included) and 32 MiB, far below the avatar bounds, since their still image is made for
/// anyone who asks, without login.
pub const EMOJI_BOUNDS: Bounds = Bounds {
    side: 1024,
    alloc: 32 * 1024 * 1024,
};

/// Why an uploaded picture was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AvatarError {
    /// More bytes than the upload limit.
    TooLarge,
    /// Wider or taller than the bounds allow, or more memory to decode than they allow.
    TooManyPixels,
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
    bounds: Bounds,
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
    limits.max_image_width = Some(bounds.side);
    limits.max_image_height = Some(bounds.side);
    limits.max_alloc = Some(bounds.alloc);
    reader.limits(limits);
    match reader.decode() {
        Ok(image) => Ok(Some(image)),
        Err(image::ImageError::Limits(_)) => Err(AvatarError::TooManyPixels),
        Err(_) => Err(AvatarError::NotAnImage),
    }
}

/// Decodes an uploaded picture (PNG, JPEG, GIF or WebP, told by its bytes; the first frame of
/// an animation) within bounds on bytes, dimensions and memory, crops it to its centre square
/// and returns it as PNG at the default and medium sizes.
pub fn resize_upload(bytes: &[u8]) -> Result<(Vec<u8>, Vec<u8>), AvatarError> {
    if bytes.len() as u64 > MAX_AVATAR_FILE_SIZE_MIB * 1024 * 1024 {
        return Err(AvatarError::TooLarge);
    }
    let image = decode_bounded(bytes, AVATAR_BOUNDS, |_| true)?.ok_or(AvatarError::NotAnImage)?;
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

/// The box an organization's wide logo is fitted in (Zulip's `resize_logo`: 800 × 100).
pub const LOGO_WIDTH: u32 = 800;
pub const LOGO_HEIGHT: u32 = 100;

/// Decodes an uploaded logo within the same bounds as an avatar and fits it, keeping its
/// proportions, in Zulip's 800 × 100 box (never enlarged), as PNG.
pub fn resize_logo(bytes: &[u8]) -> Result<Vec<u8>, AvatarError> {
    if bytes.len() as u64 > MAX_AVATAR_FILE_SIZE_MIB * 1024 * 1024 {
        return Err(AvatarError::TooLarge);
    }
    let image = decode_bounded(bytes, AVATAR_BOUNDS, |_| true)?.ok_or(AvatarError::NotAnImage)?;
    if image.width() == 0 || image.height() == 0 {
        return Err(AvatarError::NotAnImage);
    }
    let fitted = if image.width() > LOGO_WIDTH || image.height() > LOGO_HEIGHT {
        image.resize(
            LOGO_WIDTH,
            LOGO_HEIGHT,
            image::imageops::FilterType::Triangle,
        )
    } else {
        image
    };
    Ok(png(&fitted.to_rgba8()))
}

/// Zulip's custom emoji size.
pub const EMOJI_SIZE: u32 = 64;

/// An uploaded custom emoji checked as Zulip would keep it: its first frame must decode within
/// [`EMOJI_BOUNDS`] (else it is refused, and nothing undecodable is ever stored or served);
/// then a still picture (PNG, JPEG or WebP) larger than 64 pixels is shrunk to fit in 64 × 64,
/// its proportions kept, as PNG (`Some`), and one that fits, or a GIF (kept as uploaded,
/// animation and all), is kept as it is (`None`).
pub fn prepare_emoji(bytes: &[u8]) -> Result<Option<Vec<u8>>, AvatarError> {
    let image = decode_bounded(bytes, EMOJI_BOUNDS, |_| true)?.ok_or(AvatarError::NotAnImage)?;
    let is_gif = bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a");
    if is_gif || (image.width() <= EMOJI_SIZE && image.height() <= EMOJI_SIZE) {
        return Ok(None);
    }
    let small = image.resize(
        EMOJI_SIZE,
        EMOJI_SIZE,
        image::imageops::FilterType::Triangle,
    );
    Ok(Some(png(&small.to_rgba8())))
}

/// Whether an image is animated: a GIF with more than one frame, or a WebP whose extended
/// header says so. Read from the container's structure, without decoding pixels; bounded by the
/// bytes given, so any input is safe.
pub fn is_animated(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        return gif_frames(bytes) > 1;
    }
    // RIFF....WEBPVP8X, then the flags byte: bit 1 is "animation".
    bytes.len() > 20
        && &bytes[0..4] == b"RIFF"
        && &bytes[8..12] == b"WEBP"
        && &bytes[12..16] == b"VP8X"
        && bytes[20] & 0x02 != 0
}

/// The image descriptors of a GIF, counted up to 2.
fn gif_frames(bytes: &[u8]) -> usize {
    // Header (6), logical screen descriptor (7), then the global colour table if flagged.
    let Some(&packed) = bytes.get(10) else {
        return 0;
    };
    let mut at = 13;
    if packed & 0x80 != 0 {
        at += 3 << ((packed & 0x07) + 1);
    }
    let mut frames = 0;
    // Skips data sub-blocks (a length byte, then that many bytes, until a zero length).
    let skip_blocks = |mut at: usize| -> Option<usize> {
        loop {
            let len = *bytes.get(at)? as usize;
            at += 1;
            if len == 0 {
                return Some(at);
            }
            at += len;
        }
    };
    while let Some(&kind) = bytes.get(at) {
        match kind {
            // Image descriptor (10 bytes), its local colour table, the LZW code size, data.
            0x2C => {
                frames += 1;
                if frames > 1 {
                    return frames;
                }
                let Some(&flags) = bytes.get(at + 9) else {
                    return frames;
                };
                at += 10;
                if flags & 0x80 != 0 {
                    at += 3 << ((flags & 0x07) + 1);
                }
                at += 1;
                match skip_blocks(at) {
                    Some(next) => at = next,
                    None => return frames,
                }
            }
            // Extension: its label, then sub-blocks.
            0x21 => match skip_blocks(at + 2) {
                Some(next) => at = next,
                None => return frames,
            },
            // Trailer, or anything else: the end.
            _ => return frames,
        }
    }
    frames
}

/// The first frame of an animated emoji as a PNG no larger than 64 × 64 (Zulip's `still_url`
/// image), decoded within [`EMOJI_BOUNDS`] (an emoji stored before they applied may fail them).
pub fn still_frame(bytes: &[u8]) -> Result<Vec<u8>, AvatarError> {
    let image = decode_bounded(bytes, EMOJI_BOUNDS, |_| true)?.ok_or(AvatarError::NotAnImage)?;
    let image = if image.width() > EMOJI_SIZE || image.height() > EMOJI_SIZE {
        image.resize(
            EMOJI_SIZE,
            EMOJI_SIZE,
            image::imageops::FilterType::Triangle,
        )
    } else {
        image
    };
    Ok(png(&image.to_rgba8()))
}

#[cfg(test)]
pub(crate) mod tests {
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
        let shrunk = prepare_emoji(&png(&wide)).unwrap().unwrap();
        assert_eq!(dimensions(&shrunk), (64, 32));
        let small = RgbaImage::from_pixel(40, 40, Rgba([1, 2, 3, 255]));
        assert_eq!(prepare_emoji(&png(&small)), Ok(None));
        assert_eq!(
            prepare_emoji(&gif_of_side(80, 2)),
            Ok(None),
            "a GIF is kept"
        );
        // What does not decode is refused, not stored as it came.
        assert_eq!(
            prepare_emoji(b"GIF89a\x01\x00\x01\x00"),
            Err(AvatarError::NotAnImage)
        );
        assert_eq!(prepare_emoji(b"not an image"), Err(AvatarError::NotAnImage));
    }

    /// A GIF of `frames` frames of `side` × `side` pixels.
    pub fn gif_of_side(side: u32, frames: usize) -> Vec<u8> {
        use image::codecs::gif::GifEncoder;
        use image::{Delay, Frame};
        let mut out = Vec::new();
        {
            let mut encoder = GifEncoder::new(&mut out);
            let all = (0..frames).map(|i| {
                let picture = RgbaImage::from_pixel(side, side, Rgba([i as u8 * 90, 10, 10, 255]));
                Frame::from_parts(picture, 0, 0, Delay::from_numer_denom_ms(100, 1))
            });
            encoder.encode_frames(all).unwrap();
        }
        out
    }

    #[test]
    fn an_emoji_whose_canvas_is_8000_pixels_is_refused_before_it_is_decoded() {
        // Two small frames on an 8000 x 8000 canvas: a few dozen bytes that would take 256 MB.
        let mut bomb = gif_of_side(2, 2);
        bomb[6..10].copy_from_slice(&[0x40, 0x1f, 0x40, 0x1f]);
        assert!(is_animated(&bomb));
        assert_eq!(prepare_emoji(&bomb), Err(AvatarError::TooManyPixels));
        assert_eq!(still_frame(&bomb), Err(AvatarError::TooManyPixels));
        let at_the_bound = gif_of_side(EMOJI_BOUNDS.side, 1);
        assert_eq!(prepare_emoji(&at_the_bound), Ok(None));
        let past_it = gif_of_side(EMOJI_BOUNDS.side + 1, 1);
        assert_eq!(prepare_emoji(&past_it), Err(AvatarError::TooManyPixels));
    }

    #[test]
    fn animated_images_are_told_apart_and_give_a_still_frame() {
        let gif = |frames: usize| gif_of_side(80, frames);
        let animated = gif(3);
        assert!(is_animated(&animated));
        assert!(!is_animated(&gif(1)));
        assert!(!is_animated(&png(&RgbaImage::from_pixel(
            4,
            4,
            Rgba([0, 0, 0, 255])
        ))));
        assert!(!is_animated(b"GIF89a\x01"));
        // Truncated anywhere: still no panic.
        for cut in 0..animated.len() {
            let _ = is_animated(&animated[..cut]);
        }
        let still = still_frame(&animated).unwrap();
        assert_eq!(dimensions(&still), (64, 64));
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
        assert_eq!(resize_upload(&huge), Err(AvatarError::TooManyPixels));
        let big = vec![0u8; (MAX_AVATAR_FILE_SIZE_MIB * 1024 * 1024 + 1) as usize];
        assert_eq!(resize_upload(&big), Err(AvatarError::TooLarge));
    }
}

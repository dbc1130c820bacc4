//! Thumbnails of uploaded images, as Zulip (9.0 and later) serves them to its clients.
//!
//! An uploaded PNG, JPEG, GIF or WebP whose header reads within the bounds below is an image a
//! message previews: its size and whether it moves are recorded with the upload
//! ([`crate::events::UploadedImage`]), and a message linking it renders Zulip's
//! `div.message_inline_image` whose `img` points at
//! `/user_uploads/thumbnail/{path_id}/840x560.webp` (`840x560-anim.webp` for an animation).
//!
//! Thumbnails are derived data, never state: made from the upload's bytes when it is received
//! (so a message sent after it never waits on one), kept beside the uploads in
//! `uploads/thumbnails/`, and made again on request when missing (after an import, on another
//! node of a cluster, or when the directory was cleared). Their bytes follow from the
//! upload's bytes alone, so nothing about them goes into the log.
//!
//! They are fitted inside 840 × 560, never enlarged, turned upright by the EXIF orientation.
//! The pure-Rust WebP encoder has no lossy mode, and a lossless photo would be larger than the
//! photo, so a JPEG upload's thumbnail is a JPEG (the photo itself when it already fits
//! upright), served as `image/jpeg` under the format's name: Zulip's API tells clients not to
//! assume the format of a thumbnail. Anything else (screenshots, drawings) is a lossless WebP.
//! An animation's thumbnail is an animated WebP of its frames, written here from the encoder's
//! single frames; frames past the animation bound are left out, as Zulip does.

use crate::events::UploadedImage;
use image::codecs::gif::GifDecoder;
use image::codecs::webp::{WebPDecoder, WebPEncoder};
use image::metadata::Orientation;
use image::{
    AnimationDecoder, DynamicImage, ExtendedColorType, Frame, ImageDecoder, ImageFormat,
    ImageReader, Limits, RgbaImage,
};
use std::io::Cursor;
use std::sync::Mutex;

/// A thumbnail format, named as Zulip names it: `{max_width}x{max_height}[-anim].webp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub max_width: u32,
    pub max_height: u32,
    pub animated: bool,
}

/// The formats made, in Zulip's order (its `THUMBNAIL_OUTPUT_FORMATS`, the `/register` key
/// `server_thumbnail_formats`): the animated one only for animations.
pub const FORMATS: [Format; 2] = [
    Format {
        max_width: 840,
        max_height: 560,
        animated: true,
    },
    Format {
        max_width: 840,
        max_height: 560,
        animated: false,
    },
];

/// The extension (and encoding) of every format.
pub const EXTENSION: &str = "webp";

/// Pixels of a still image read (Zulip's `IMAGE_BOMB_TOTAL_PIXELS`); a larger image is a file,
/// not a preview.
pub const MAX_PIXELS: u64 = 90_000_000;

/// Pixels of an animation's frames read (Zulip's bound: a third of [`MAX_PIXELS`]). An
/// animation must fit it twice over (two frames); its thumbnail has as many frames as fit.
pub const MAX_ANIMATED_PIXELS: u64 = MAX_PIXELS / 3;

/// Memory one decode may take.
const MAX_ALLOC: u64 = 512 * 1024 * 1024;

/// One decode at a time, so that memory stays within one image's bound however many arrive.
static DECODING: Mutex<()> = Mutex::new(());

impl Format {
    /// Zulip's name of the format, the last part of a thumbnail URL.
    pub fn name(&self) -> String {
        format!(
            "{}x{}{}.{EXTENSION}",
            self.max_width,
            self.max_height,
            if self.animated { "-anim" } else { "" }
        )
    }

    /// The format an image is shown in by default: the first of [`FORMATS`] whose animation
    /// matches the image's.
    pub fn default_for(image: &UploadedImage) -> Format {
        FORMATS
            .into_iter()
            .find(|f| f.animated == image.animated)
            .unwrap_or(FORMATS[1])
    }

    /// The format served for a requested name: Zulip's `{w}x{h}[-anim].{ext}`, answered with
    /// the nearest format made (an animation when one is asked for and the image moves, else
    /// the still one). `None` when the name is not of that form.
    pub fn serving(name: &str, image: &UploadedImage) -> Option<Format> {
        let (stem, extension) = name.rsplit_once('.')?;
        if extension.is_empty() || !extension.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        let (size, animated) = match stem.strip_suffix("-anim") {
            Some(size) => (size, true),
            None => (stem, false),
        };
        let (width, height) = size.split_once('x')?;
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 6 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(width) || !digits(height) {
            return None;
        }
        let wanted = animated && image.animated;
        FORMATS.into_iter().find(|f| f.animated == wanted)
    }
}

/// Whether the orientation turns the picture on its side.
fn turns_sideways(orientation: Orientation) -> bool {
    matches!(
        orientation,
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    )
}

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(u16::MAX as u32);
    limits.max_image_height = Some(u16::MAX as u32);
    limits.max_alloc = Some(MAX_ALLOC);
    limits
}

fn is_gif(bytes: &[u8]) -> bool {
    bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a")
}

/// What a preview of the bytes needs, read from the header alone: `None` unless they are a
/// PNG, JPEG, GIF or WebP within the pixel bounds.
pub fn probe(bytes: &[u8]) -> Option<UploadedImage> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?;
    if !matches!(
        reader.format(),
        Some(ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP)
    ) {
        return None;
    }
    reader.limits(limits());
    let mut decoder = reader.into_decoder().ok()?;
    let (width, height) = decoder.dimensions();
    let pixels = u64::from(width) * u64::from(height);
    if pixels == 0 || pixels > MAX_PIXELS {
        return None;
    }
    let animated = crate::avatars::is_animated(bytes);
    if animated && pixels * 2 > MAX_ANIMATED_PIXELS {
        return None;
    }
    let sideways = turns_sideways(decoder.orientation().unwrap_or(Orientation::NoTransforms));
    let (width, height) = if sideways {
        (height, width)
    } else {
        (width, height)
    };
    Some(UploadedImage {
        width,
        height,
        animated,
    })
}

/// The size a picture is shown at in a format: fitted inside it, proportions kept, never
/// enlarged, at least one pixel a side.
fn fitted(width: u32, height: u32, format: Format) -> (u32, u32) {
    if width <= format.max_width && height <= format.max_height {
        return (width, height);
    }
    let scale = f64::min(
        f64::from(format.max_width) / f64::from(width),
        f64::from(format.max_height) / f64::from(height),
    );
    let side = |v: u32| ((f64::from(v) * scale).round() as u32).max(1);
    (side(width), side(height))
}

/// A thumbnail made: its format and its WebP bytes.
pub type Thumbnail = (Format, Vec<u8>);

/// Every thumbnail of an image: `(format, WebP bytes)`, the animated one only for an
/// animation. `None` when the bytes do not decode within the bounds (the upload is then kept
/// as a file without a preview).
pub fn make_all(bytes: &[u8]) -> Option<(UploadedImage, Vec<Thumbnail>)> {
    let image = probe(bytes)?;
    let mut made = Vec::new();
    for format in FORMATS {
        if format.animated && !image.animated {
            continue;
        }
        made.push((format, make(bytes, format)?));
    }
    Some((image, made))
}

/// One thumbnail of an image whose header [`probe`] accepted; `None` when it does not decode.
pub fn make(bytes: &[u8], format: Format) -> Option<Vec<u8>> {
    let _one = DECODING.lock().unwrap_or_else(|e| e.into_inner());
    if format.animated {
        animated(bytes, format)
    } else {
        still(bytes, format)
    }
}

/// The JPEG quality of a photo's thumbnail.
const PHOTO_QUALITY: u8 = 85;

/// The first frame, upright, fitted: a JPEG for a photo (a JPEG upload), a lossless WebP for
/// anything else (screenshots and drawings, where a lossy encoding blurs text and lossless
/// WebP is smaller than the PNG).
fn still(bytes: &[u8], format: Format) -> Option<Vec<u8>> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?;
    reader.limits(limits());
    let photo = reader.format() == Some(ImageFormat::Jpeg);
    let mut decoder = reader.into_decoder().ok()?;
    let (width, height) = decoder.dimensions();
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return None;
    }
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let mut picture = DynamicImage::from_decoder(decoder).ok()?;
    picture.apply_orientation(orientation);
    let (w, h) = fitted(picture.width(), picture.height(), format);
    let resized = (w, h) != (picture.width(), picture.height());
    if resized {
        picture = picture.thumbnail_exact(w, h);
    }
    if photo {
        // A photo that already fits and stands upright is its own thumbnail (no second
        // loss); else it is encoded again as a JPEG.
        if !resized && orientation == Orientation::NoTransforms {
            return Some(bytes.to_vec());
        }
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, PHOTO_QUALITY)
            .encode_image(&picture.to_rgb8())
            .ok()?;
        return Some(out);
    }
    // The encoder panics on a buffer of other dimensions than it is told.
    let (w, h) = (picture.width(), picture.height());
    let mut out = Vec::new();
    let encoder = WebPEncoder::new_lossless(&mut out);
    if picture.color().has_alpha() {
        encoder
            .encode(&picture.to_rgba8(), w, h, ExtendedColorType::Rgba8)
            .ok()?;
    } else {
        encoder
            .encode(&picture.to_rgb8(), w, h, ExtendedColorType::Rgb8)
            .ok()?;
    }
    Some(out)
}

/// The frames of a GIF or an animated WebP, composited, each fitted, as an animated WebP; as
/// many frames as [`MAX_ANIMATED_PIXELS`] allows.
fn animated(bytes: &[u8], format: Format) -> Option<Vec<u8>> {
    let (width, height, frames): (u32, u32, image::Frames<'_>) = if is_gif(bytes) {
        let mut decoder = GifDecoder::new(Cursor::new(bytes)).ok()?;
        decoder.set_limits(limits()).ok()?;
        let (w, h) = decoder.dimensions();
        (w, h, decoder.into_frames())
    } else {
        let mut decoder = WebPDecoder::new(Cursor::new(bytes)).ok()?;
        decoder.set_limits(limits()).ok()?;
        let (w, h) = decoder.dimensions();
        (w, h, decoder.into_frames())
    };
    let pixels = u64::from(width) * u64::from(height);
    if pixels == 0 || pixels * 2 > MAX_ANIMATED_PIXELS {
        return None;
    }
    let most = frame_budget(pixels);
    let (w, h) = fitted(width, height, format);
    let mut encoded = Vec::new();
    for frame in frames.take(most) {
        let frame: Frame = frame.ok()?;
        let (numer, denom) = frame.delay().numer_denom_ms();
        let ms = numer / denom.max(1);
        // Browsers show a GIF frame of under 20 ms for 100 ms; so does the thumbnail.
        let ms = if ms < 20 { 100 } else { ms.min(0xFF_FFFF) };
        let canvas: RgbaImage = frame.into_buffer();
        let canvas = if (w, h) == canvas.dimensions() {
            canvas
        } else {
            image::imageops::thumbnail(&canvas, w, h)
        };
        if canvas.dimensions() != (w, h) {
            return None;
        }
        let mut single = Vec::new();
        WebPEncoder::new_lossless(&mut single)
            .encode(&canvas, w, h, ExtendedColorType::Rgba8)
            .ok()?;
        encoded.push((vp8l_chunk(&single)?.to_vec(), ms));
    }
    if encoded.is_empty() {
        return None;
    }
    Some(animated_webp(w, h, &encoded))
}

/// How many frames of so many pixels an animated thumbnail reads.
fn frame_budget(pixels: u64) -> usize {
    (MAX_ANIMATED_PIXELS / pixels.max(1)).max(1) as usize
}

/// The `VP8L` chunk (header, data and padding) of a simple lossless WebP file.
fn vp8l_chunk(webp: &[u8]) -> Option<&[u8]> {
    let mut at = 12;
    while at + 8 <= webp.len() {
        let size = u32::from_le_bytes(webp[at + 4..at + 8].try_into().ok()?) as usize;
        let end = (at + 8).checked_add(size)?.checked_add(size & 1)?;
        if &webp[at..at + 4] == b"VP8L" {
            return webp.get(at..end.min(webp.len()));
        }
        at = end;
    }
    None
}

fn push_chunk(out: &mut Vec<u8>, fourcc: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(fourcc);
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
    if data.len() % 2 == 1 {
        out.push(0);
    }
}

fn push_u24(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes()[..3]);
}

/// An animated WebP (the extended format: `VP8X`, `ANIM`, one `ANMF` a frame) of full-canvas
/// frames, each given as its `VP8L` chunk and its duration in milliseconds.
fn animated_webp(width: u32, height: u32, frames: &[(Vec<u8>, u32)]) -> Vec<u8> {
    let mut chunks = Vec::new();
    let mut vp8x = vec![0x10 | 0x02, 0, 0, 0]; // alpha, animation
    push_u24(&mut vp8x, width - 1);
    push_u24(&mut vp8x, height - 1);
    push_chunk(&mut chunks, b"VP8X", &vp8x);
    // Transparent background, looping forever.
    push_chunk(&mut chunks, b"ANIM", &[0, 0, 0, 0, 0, 0]);
    for (vp8l, ms) in frames {
        let mut frame = Vec::with_capacity(16 + vp8l.len());
        push_u24(&mut frame, 0);
        push_u24(&mut frame, 0);
        push_u24(&mut frame, width - 1);
        push_u24(&mut frame, height - 1);
        push_u24(&mut frame, *ms);
        // Each frame replaces the canvas: no blending, no disposal.
        frame.push(0x02);
        frame.extend_from_slice(vp8l);
        push_chunk(&mut chunks, b"ANMF", &frame);
    }
    let mut out = Vec::with_capacity(12 + chunks.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&((4 + chunks.len()) as u32).to_le_bytes());
    out.extend_from_slice(b"WEBP");
    out.extend_from_slice(&chunks);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    fn png(width: u32, height: u32) -> Vec<u8> {
        let picture = RgbImage::from_fn(width, height, |x, y| {
            Rgb([(x % 256) as u8, (y % 256) as u8, 90])
        });
        let mut out = Cursor::new(Vec::new());
        picture.write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    fn decoded(webp: &[u8]) -> DynamicImage {
        image::load_from_memory_with_format(webp, ImageFormat::WebP).unwrap()
    }

    #[test]
    fn formats_are_named_as_zulip_names_them() {
        let names: Vec<String> = FORMATS.iter().map(Format::name).collect();
        assert_eq!(names, ["840x560-anim.webp", "840x560.webp"]);
        let still = UploadedImage {
            width: 10,
            height: 10,
            animated: false,
        };
        let moving = UploadedImage {
            animated: true,
            ..still
        };
        assert_eq!(Format::default_for(&still).name(), "840x560.webp");
        assert_eq!(Format::default_for(&moving).name(), "840x560-anim.webp");
        // Another size or extension gets the nearest format made; a malformed name nothing.
        assert_eq!(Format::serving("300x200.jpg", &still), Some(FORMATS[1]));
        assert_eq!(
            Format::serving("840x560-anim.webp", &still),
            Some(FORMATS[1])
        );
        assert_eq!(
            Format::serving("840x560-anim.webp", &moving),
            Some(FORMATS[0])
        );
        assert_eq!(Format::serving("840x560.webp", &moving), Some(FORMATS[1]));
        for bad in [
            "",
            "840x560",
            "x560.webp",
            "840x.webp",
            "a40x560.webp",
            "840x560.",
            "../x.webp",
        ] {
            assert_eq!(Format::serving(bad, &still), None, "{bad}");
        }
    }

    #[test]
    fn a_large_picture_is_fitted_and_a_small_one_kept_at_its_size() {
        let (image, made) = make_all(&png(1680, 560)).unwrap();
        assert_eq!(
            image,
            UploadedImage {
                width: 1680,
                height: 560,
                animated: false
            }
        );
        assert_eq!(made.len(), 1);
        assert_eq!(made[0].0, FORMATS[1]);
        let thumb = decoded(&made[0].1);
        assert_eq!((thumb.width(), thumb.height()), (840, 280));

        let (_, made) = make_all(&png(128, 600)).unwrap();
        let thumb = decoded(&made[0].1);
        assert_eq!((thumb.width(), thumb.height()), (119, 560));

        let (_, made) = make_all(&png(128, 128)).unwrap();
        let thumb = decoded(&made[0].1);
        assert_eq!((thumb.width(), thumb.height()), (128, 128));
        // Lossless: the picture is the same.
        assert_eq!(
            thumb.to_rgb8(),
            image::load_from_memory(&png(128, 128)).unwrap().to_rgb8()
        );
    }

    fn jpeg(width: u32, height: u32) -> Vec<u8> {
        let picture = RgbImage::from_fn(width, height, |x, y| {
            Rgb([(x % 256) as u8, (y % 256) as u8, 90])
        });
        let mut out = Cursor::new(Vec::new());
        picture.write_to(&mut out, ImageFormat::Jpeg).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_photo_s_thumbnail_is_a_jpeg_or_the_photo_itself() {
        // Larger than the box: a JPEG fitted in it.
        let (_, made) = make_all(&jpeg(1200, 900)).unwrap();
        assert!(made[0].1.starts_with(b"\xff\xd8\xff"));
        let thumb = image::load_from_memory(&made[0].1).unwrap();
        assert_eq!((thumb.width(), thumb.height()), (747, 560));
        // Already within it and upright: the photo's own bytes.
        let small = jpeg(300, 200);
        let (_, made) = make_all(&small).unwrap();
        assert_eq!(made[0].1, small);
    }

    #[test]
    fn an_animation_gets_an_animated_thumbnail_and_a_still_one() {
        let gif = crate::avatars::tests::gif_of_side(600, 3);
        let (image, made) = make_all(&gif).unwrap();
        assert!(image.animated);
        assert_eq!(made.iter().map(|(f, _)| *f).collect::<Vec<_>>(), FORMATS);
        let decoder = WebPDecoder::new(Cursor::new(&made[0].1)).unwrap();
        assert!(decoder.has_animation());
        let frames: Vec<Frame> = decoder.into_frames().collect::<Result<_, _>>().unwrap();
        assert_eq!(frames.len(), 3);
        for (i, frame) in frames.iter().enumerate() {
            assert_eq!(frame.buffer().dimensions(), (560, 560));
            assert_eq!(
                frame.delay().numer_denom_ms().0 / frame.delay().numer_denom_ms().1.max(1),
                100
            );
            // Each frame's colour comes through (the fixture's red steps by 90 a frame).
            let red = frame.buffer().get_pixel(280, 280).0[0];
            assert_eq!(red, i as u8 * 90);
        }
        let still = decoded(&made[1].1);
        assert_eq!((still.width(), still.height()), (560, 560));
    }

    #[test]
    fn an_animation_keeps_the_frames_its_bound_allows() {
        // 3,000 × 3,000 pixels a frame: three frames are 27 million, within the bound.
        assert_eq!(frame_budget(3000 * 3000), 3);
        // 4,000 × 3,000: two frames fit (24 million), a third would not.
        assert_eq!(frame_budget(4000 * 3000), 2);
        assert_eq!(frame_budget(100 * 100), 3000);
    }

    #[test]
    fn what_is_not_a_picture_within_bounds_has_no_preview() {
        assert_eq!(probe(b"plain text"), None);
        // A PNG header claiming 20,000 × 20,000 pixels (400 million): refused from the header.
        let mut bomb = png(1, 1);
        bomb[16..20].copy_from_slice(&20_000u32.to_be_bytes());
        bomb[20..24].copy_from_slice(&20_000u32.to_be_bytes());
        assert_eq!(probe(&bomb), None);
        // A header that reads but a body that does not: no thumbnail, no preview.
        let mut broken = png(64, 64);
        broken.truncate(60);
        assert!(make_all(&broken).is_none());
    }

    #[test]
    fn a_sideways_photo_is_measured_and_thumbnailed_upright() {
        // A 40 × 20 JPEG whose EXIF says "rotate 90°": shown 20 wide and 40 tall.
        let picture = RgbImage::from_pixel(40, 20, Rgb([200, 30, 30]));
        let mut jpeg = Cursor::new(Vec::new());
        picture.write_to(&mut jpeg, ImageFormat::Jpeg).unwrap();
        let jpeg = jpeg.into_inner();
        // APP1 "Exif", a little-endian TIFF header, one entry: Orientation (0x0112) = 6.
        let mut tiff = b"II\x2a\x00\x08\x00\x00\x00\x01\x00".to_vec();
        tiff.extend_from_slice(&[0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]);
        let mut app1 = b"Exif\x00\x00".to_vec();
        app1.extend_from_slice(&tiff);
        let mut with_exif = jpeg[..2].to_vec();
        with_exif.extend_from_slice(&[0xFF, 0xE1]);
        with_exif.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
        with_exif.extend_from_slice(&app1);
        with_exif.extend_from_slice(&jpeg[2..]);
        let image = probe(&with_exif).unwrap();
        assert_eq!((image.width, image.height), (20, 40));
        // Turned: encoded again (not the photo's own bytes).
        let made = make(&with_exif, FORMATS[1]).unwrap();
        assert_ne!(made, with_exif);
        let thumb = image::load_from_memory(&made).unwrap();
        assert_eq!((thumb.width(), thumb.height()), (20, 40));
    }
}

//! Uploaded avatar and emoji pictures, and uploaded images with their thumbnails: any bytes
//! are decoded within the bounds on size, dimensions and memory (the avatar bounds, the far
//! smaller emoji bounds, the thumbnail bounds), or refused, and read for animation frames;
//! never a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = chronicle::avatars::is_animated(data);
    if let Ok((small, medium)) = chronicle::avatars::resize_upload(data) {
        assert!(small.starts_with(b"\x89PNG") && medium.starts_with(b"\x89PNG"));
    }
    if let Ok(Some(small)) = chronicle::avatars::prepare_emoji(data) {
        assert!(small.starts_with(b"\x89PNG"));
    }
    if let Ok(still) = chronicle::avatars::still_frame(data) {
        assert!(still.starts_with(b"\x89PNG"));
    }
    if let Some((image, thumbnails)) = chronicle::thumbnails::make_all(data) {
        assert!(image.width > 0 && image.height > 0);
        for (format, webp) in thumbnails {
            // A lossless WebP, or for a JPEG a JPEG.
            let webp_file = webp.starts_with(b"RIFF") && &webp[8..12] == b"WEBP";
            assert!(webp_file || webp.starts_with(b"\xff\xd8\xff"));
            assert!(format.animated == image.animated || !format.animated);
        }
    }
});

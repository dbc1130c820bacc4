//! Uploaded avatar and emoji pictures, and uploaded images with their thumbnails: any bytes
//! are decoded within the bounds on size, dimensions and memory (the avatar bounds, the far
//! smaller emoji bounds, the thumbnail bounds), or refused, and read for animation frames;
//! never a crash.
//! The check itself is `checks::avatar_image` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::avatar_image::check(data));

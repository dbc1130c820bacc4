//! Uploaded avatar pictures: any bytes are decoded within the bounds on size, dimensions and
//! memory, or refused; never a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((small, medium)) = chronicle::avatars::resize_upload(data) {
        assert!(small.starts_with(b"\x89PNG") && medium.starts_with(b"\x89PNG"));
    }
});

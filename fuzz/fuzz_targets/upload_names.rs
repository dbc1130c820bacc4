//! What the server reads from an upload's untrusted parts: its file name, its first bytes, and
//! the upload links in a message's text.
//! The check itself is `checks::upload_names` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::upload_names::check(data));

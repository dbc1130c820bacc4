//! Markdown of messages and descriptions: it renders, and raw HTML never passes through.
//! The check itself is `checks::markdown` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::markdown::check(data));

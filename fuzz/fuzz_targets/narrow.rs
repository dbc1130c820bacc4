//! Narrows, in either form (`[["channel","x"]]` or `[{"operator":...}]`), from any JSON.
//! The check itself is `checks::narrow` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::narrow::check(data));

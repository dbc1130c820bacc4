//! Request parameters: any name and value, read as every kind a handler asks for.
//! The check itself is `checks::params` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::params::check(data));

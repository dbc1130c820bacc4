//! Stored log records: arbitrary bytes, and arbitrary bodies behind a valid checksum; and the
//! same bytes read as a sled frame of records (ADR 0007).
//! The check itself is `checks::log_record` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::log_record::check(data));

//! Mattermost exports (issue 34): any bytes as an mmctl zip, or as a bare import.jsonl (the
//! first byte picks which), are imported or refused with an error, never a crash, and a refused
//! import leaves no data directory.
//! The check itself is `checks::import_mattermost` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::import_mattermost::check(data));

//! Incoming webhook payloads: any JSON, with any of the event headers, through every
//! integration's formatter gives messages, an ignore, or a refusal; never a crash.
//! The first byte picks the integration, the event header and whether `topic` is set.
//! The check itself is `checks::webhooks` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::webhooks::check(data));

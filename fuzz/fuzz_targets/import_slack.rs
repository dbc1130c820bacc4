//! Slack exports (issue 34): any bytes as an export zip are imported or refused with an error,
//! never a crash, and a refused import leaves no data directory; any text converts from
//! mrkdwn. The first byte picks which.
//! The check itself is `checks::import_slack` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::import_slack::check(data));

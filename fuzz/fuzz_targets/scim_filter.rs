//! SCIM filters (`GET /scim/v2/Users?filter=`, `POST /scim/v2/Users/.search`): any text parsed,
//! and what parses evaluated against a user resource. Neither may panic or overflow the stack.
//! The check itself is `checks::scim_filter` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::scim_filter::check(data));

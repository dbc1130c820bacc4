//! JSON Web Tokens (`POST /jwt/fetch_api_key`, `/accounts/login/jwt/`): any bytes as a token,
//! and, to get past the signature, any JSON claims signed with the key.
//! The check itself is `checks::jwt` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::jwt::check(data));

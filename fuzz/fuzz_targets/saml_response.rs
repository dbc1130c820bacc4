//! SAML responses (`POST /complete/saml/`): any bytes as the response's XML, checked against
//! the fixtures' identity provider as the server checks a posted one, and the bounded XML
//! reader with its canonical form on the same bytes. Seeded with pysaml2's signed responses.
//! The check itself is `checks::saml_response` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::saml_response::check(data));

//! Incoming email (the email gateway): any bytes as a message read by the MIME parser, its text
//! trimmed of quotes and signature, its subject made a topic, its bytes as an address; and any
//! bytes as a client of the gateway's SMTP listener. Seeded with tests/fixtures/email.
//! The check itself is `checks::email_gateway` (fuzz/checks.rs), which the test suite also runs.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::email_gateway::check(data));

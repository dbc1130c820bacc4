//! Incoming email (the email gateway): any bytes as a message read by the MIME parser, its text
//! trimmed of quotes and signature, its subject made a topic, its bytes as an address; and any
//! bytes as a client of the gateway's SMTP listener. Seeded with tests/fixtures/email.
#![no_main]

use chronicle::auth::ServerSecret;
use chronicle::notify::gateway::{address, body, listener, read_email};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for prefer_html in [false, true] {
        if let Some(email) = read_email(data, prefer_html) {
            let _ = body::reply_text(&email.text, false, false);
            let _ = body::topic_from_subject(&email.subject);
        }
    }
    let text = String::from_utf8_lossy(data);
    let _ = address::parse(&ServerSecret::generate(), "gateway.test", &text);
    let (_, kept) = listener::converse(data);
    assert!(kept.iter().all(|(raw, _)| raw.len() <= 1024), "the size limit holds");
});

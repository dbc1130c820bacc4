//! SAML responses (`POST /complete/saml/`): any bytes as the response's XML, checked against
//! the fixtures' identity provider as the server checks a posted one, and the bounded XML
//! reader with its canonical form on the same bytes. Seeded with pysaml2's signed responses.
#![no_main]

use chronicle::identity::saml::{check_response_xml, parse_metadata};
use chronicle::identity::xml::{Bounds, Document};
use libfuzzer_sys::fuzz_target;

const METADATA: &str = include_str!("../../tests/fixtures/saml/idp-metadata.xml");
const SP: &str = "https://chat.example.com";
const ACS: &str = "https://chat.example.com/complete/saml/";

fuzz_target!(|data: &[u8]| {
    let meta = parse_metadata(METADATA.as_bytes(), None).expect("the fixture's metadata");
    if let Ok(doc) = Document::parse(data, Bounds::RESPONSE) {
        let _ = doc.exclusive_c14n(doc.root(), None, &["#default".to_owned()]);
    }
    // The fixtures' responses were issued on 2026-11-28 at 22:35 and hold for five minutes.
    let _ = check_response_xml(&meta, SP, ACS, data, "_request-1", 1_795_905_330_000);
});

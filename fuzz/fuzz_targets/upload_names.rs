//! What the server reads from an upload's untrusted parts: its file name, its first bytes, and
//! the upload links in a message's text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = chronicle::uploads::sniff_image(data);
    let text = String::from_utf8_lossy(data);
    let name = chronicle::uploads::sanitize_name(&text);
    assert!(!name.is_empty() && name.len() <= 100);
    assert!(name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)));
    for path in chronicle::projections::attachments::linked_paths(&text) {
        assert!(!path.is_empty());
    }
});

//! SCIM filters (`GET /scim/v2/Users?filter=`, `POST /scim/v2/Users/.search`): any text parsed,
//! and what parses evaluated against a user resource. Neither may panic or overflow the stack.
#![no_main]

use chronicle::identity::scim_filter::{matches, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(filter) = parse(&text) {
        let user = serde_json::json!({
            "id": "7", "userName": "ana@example.com", "active": true,
            "name": {"formatted": "Ana Lima"},
            "emails": [{"value": "ana@example.com", "type": "work"}],
            "meta": {"created": "2026-01-01T00:00:00Z"},
        });
        let _ = matches(&filter, &user);
    }
});

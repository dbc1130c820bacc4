//! Values the server hands out and takes back unchanged (a sign-in's flow in a cookie, the
//! desktop app's login token, a sign-up link): base64url JSON with a MAC under the server's
//! secret over the value and its purpose, so nobody can change one, and one made for a purpose
//! is taken for no other. Readable by whoever holds them, so what goes in is what its holder may
//! know (the browser's own flow, the app's own pad).

use super::AppState;

/// `value` as base64url JSON and its MAC under the server's secret for `purpose`: readable by
/// anyone who holds it, changeable by nobody, and taken for nothing but `purpose` (a sign-up
/// link is no login token).
pub fn sealed<T: serde::Serialize>(state: &AppState, purpose: &str, value: &T) -> String {
    use base64::Engine;
    let json = serde_json::to_vec(value).unwrap_or_default();
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
    let mac = state
        .secret
        .sign_in_flow_mac(&format!("{purpose}\0{payload}"));
    format!("{payload}.{mac}")
}

/// What [`sealed`] sealed for `purpose`, when the MAC holds.
pub fn unsealed<T: serde::de::DeserializeOwned>(
    state: &AppState,
    purpose: &str,
    value: &str,
) -> Option<T> {
    use base64::Engine;
    let (payload, mac) = value.rsplit_once('.')?;
    if payload.len() > 4096
        || !crate::auth::constant_time_eq(
            state
                .secret
                .sign_in_flow_mac(&format!("{purpose}\0{payload}"))
                .as_bytes(),
            mac.as_bytes(),
        )
    {
        return None;
    }
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    serde_json::from_slice(&json).ok()
}

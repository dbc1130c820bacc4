//! The desktop app's sign-in through the system browser (`desktop_flow_otp`), as Zulip's:
//!
//! 1. In the app, a single sign-on button opens the provider's start address; the app's own
//!    window (its `User-Agent` says `ZulipElectron`) gets the "Finish desktop login" page
//!    (`desktop_login.html`), whose script makes a 256-bit AES-GCM key (the app's
//!    `electron_bridge.decrypt_clipboard` when it has one) and opens the same address in the
//!    system browser with the key in hex as `desktop_flow_otp`.
//! 2. The browser signs in with the provider. At the end, instead of a session, it gets a page
//!    holding a login token encrypted with that key (AES-256-GCM, a random 12-byte IV before
//!    the ciphertext, in hex) and a button that copies it.
//! 3. The app decrypts what is copied (or pasted) and opens
//!    `/accounts/login/subdomain/TOKEN`, which signs its window in: the token works once, for
//!    a minute.
//!
//! The token is sealed with the server's secret (the person, a nonce, the expiry), so nothing
//! is stored to check it; its one use is recorded in the log (`SignInTokenSpent`, by the
//! digest of its nonce), so it cannot sign in twice, on any node, after a restart. Only the
//! app, which made the key, can read it off the browser's page.

use super::sealed::{sealed, unsealed};
use super::webclient::{page, redirect, start_browser_session};
use super::AppState;
use crate::ids::UserId;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};

/// How long a login token works. (Zulip's is 15 seconds; a person who pastes by hand needs
/// longer.)
const TOKEN_LIFETIME_MS: i64 = 60_000;

/// A login token's contents.
#[derive(serde::Serialize, serde::Deserialize)]
struct LoginToken {
    user_id: UserId,
    nonce: String,
    /// Milliseconds since the epoch.
    expires_at: i64,
}

/// Whether the request comes from the desktop app's own window.
pub(super) fn from_desktop_app(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|agent| agent.contains("ZulipElectron"))
}

/// The "Finish desktop login" page the app's window gets at a sign-in's start address.
pub(super) fn app_page() -> HttpResponse {
    page("desktop_login.html")
}

/// The key the app chose, from `desktop_flow_otp` (64 hexadecimal digits).
pub fn key_of(otp: &str) -> Option<[u8; 32]> {
    if !crate::auth::is_valid_otp(otp) {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(otp.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

/// `plain` encrypted as the app decrypts it: a random IV, then AES-256-GCM's ciphertext and
/// tag, in hex.
pub fn encrypt_for_app(key: &[u8; 32], plain: &[u8]) -> Option<String> {
    use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
    use ring::rand::{SecureRandom, SystemRandom};
    let mut iv = [0u8; 12];
    SystemRandom::new().fill(&mut iv).ok()?;
    let sealing = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).ok()?);
    let mut data = plain.to_vec();
    sealing
        .seal_in_place_append_tag(Nonce::assume_unique_for_key(iv), Aad::empty(), &mut data)
        .ok()?;
    Some(
        iv.iter()
            .chain(data.iter())
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// The end of a sign-in the desktop app started: the page with the encrypted login token.
pub(super) fn finish(state: &AppState, user_id: UserId, otp: &str) -> HttpResponse {
    let Some(key) = key_of(otp) else {
        return redirect("/login/?error=sso_expired");
    };
    let token = sealed(
        state,
        "desktop-login",
        &LoginToken {
            user_id,
            nonce: crate::auth::new_api_key_nonce(),
            expires_at: crate::time::now_ms() + TOKEN_LIFETIME_MS,
        },
    );
    let Some(data) = encrypt_for_app(&key, token.as_bytes()) else {
        return redirect("/login/?error=sso_unavailable");
    };
    // `data` is hexadecimal digits only: nothing in it needs escaping.
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Back to the app · Chronicle</title>\
         <link rel=\"stylesheet\" href=\"/static/web/css/app.css\">\
         <script type=\"module\" src=\"/static/web/js/desktop_redirect.js\"></script></head>\
         <body class=\"login-page\"><main class=\"login-card\">\
         <h1 class=\"login-brand\">You're almost there</h1>\
         <p class=\"login-lead\">Copy this code and return to the Zulip app: it signs you in \
         there (the app may take it from the clipboard by itself).</p>\
         <input id=\"desktop-data\" class=\"desktop-data\" readonly value=\"{data}\" \
         aria-label=\"Sign-in code for the app\">\
         <button type=\"button\" id=\"desktop-copy\" class=\"primary wide\">Copy</button>\
         <p class=\"hint\" id=\"desktop-copied\" hidden>Copied. Return to the app.</p>\
         <p><a href=\"/login/\">Or use Chronicle in this browser</a></p>\
         </main></body></html>"
    );
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            "Content-Security-Policy",
            super::webclient::CONTENT_SECURITY_POLICY,
        ))
        .insert_header(("X-Frame-Options", "DENY"))
        .insert_header(("Referrer-Policy", "no-referrer"))
        .body(html)
}

/// `GET /accounts/login/subdomain/{token}`: the app's window, signed in by the token the
/// browser's sign-in gave it (once, within its minute).
pub async fn log_in_with_token(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> HttpResponse {
    let ip = super::auth::client_ip(&req, &state);
    // The app's own window navigates here from this server's page (`same-origin`), or is
    // opened on it (`none`). A page of another site that sent a browser here with a token of
    // its own account would sign that browser in as someone else.
    let fetched_from = req
        .headers()
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok());
    if fetched_from.is_some_and(|site| site != "same-origin" && site != "none") {
        return redirect("/login/?error=origin");
    }
    let Some(login) = unsealed::<LoginToken>(&state, "desktop-login", &token) else {
        let refused = Err(crate::error::ApiError::new(
            crate::error::ErrorCode::BadRequest,
            "not a login token of this server",
        ));
        super::auth::audit_sign_in(&state, "desktop_token", "(desktop app)", ip, &refused);
        return redirect("/login/?error=sso_expired");
    };
    let digest = crate::commands::sessions::token_digest("desktop-login", "", &login.nonce);
    let expires_at = login.expires_at;
    let spent = state
        .engine
        .execute(None, move |s, ctx| {
            crate::commands::sessions::spend_token(s, ctx, &digest, expires_at)
        })
        .await
        .map(|_| login.user_id);
    let name = state.engine.read(|s| {
        s.users
            .get(login.user_id)
            .map(|u| u.email.clone())
            .unwrap_or_default()
    });
    super::auth::audit_sign_in(&state, "desktop_token", &name, ip, &spent);
    match spent {
        Ok(user_id) => start_browser_session(&req, &state, user_id).await,
        Err(_) => redirect("/login/?error=sso_expired"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_decrypts_what_the_page_holds() {
        use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
        let otp = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let key = key_of(otp).unwrap();
        assert_eq!(key[1], 0x11);
        let hex = encrypt_for_app(&key, b"the token").unwrap();
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let (iv, sealed) = bytes.split_at(12);
        let opening = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &key).unwrap());
        let mut data = sealed.to_vec();
        let nonce = Nonce::try_assume_unique_for_key(iv).unwrap();
        let plain = opening
            .open_in_place(nonce, Aad::empty(), &mut data)
            .unwrap();
        assert_eq!(plain, b"the token");
        assert!(key_of("xyz").is_none() && key_of(&"0".repeat(63)).is_none());
    }
}

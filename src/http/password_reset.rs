//! `GET|POST /accounts/password/reset/`, `GET /accounts/password/reset/done/` and
//! `GET|POST /accounts/password/reset/{user_id}/{token}/`: a forgotten password, by email, at
//! Zulip's addresses (so the apps' "Forgot your password?" links land here).
//!
//! The link's token is `{issued}-{mac}`, a MAC by the server secret over the account, the time
//! it was issued, its password hash and its address: nothing is stored, the link works for 24
//! hours and once (the hash it was made for changes when it is used). Asking for a reset
//! always answers the same page, whether the address has an account or not, and an address
//! gets at most two emails an hour.

use super::webclient::{page, redirect, same_origin_post};
use super::{AppState, Params};
use crate::ids::UserId;
use actix_web::{web, HttpRequest, HttpResponse};

/// How long a reset link works.
pub const RESET_LINK_LIFETIME_SECS: i64 = 24 * 3600;

/// `GET /accounts/password/reset/`: the form asking for the address.
pub async fn reset_page() -> HttpResponse {
    page("reset.html")
}

/// `GET /accounts/password/reset/done/`: "check your email".
pub async fn reset_done_page() -> HttpResponse {
    page("reset_done.html")
}

/// `POST /accounts/password/reset/` (`email`): sends the link to an active person's address
/// (within the per-address limit), then the same page whatever happened.
pub async fn request_reset(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> HttpResponse {
    if !same_origin_post(&req, &state) {
        return redirect("/accounts/password/reset/?error=origin");
    }
    if !state.identity.password {
        return redirect("/accounts/password/reset/?error=disabled");
    }
    let email = params.str("email").unwrap_or_default();
    let email = email.trim();
    if email.is_empty() {
        return redirect("/accounts/password/reset/?error=missing");
    }
    let key = super::rate_limit::Key::PasswordReset(email.to_lowercase());
    if state.rate_limiter.hit(key).is_ok() {
        send_link(&state, email);
    }
    redirect("/accounts/password/reset/done/")
}

/// Mails the reset link to the active human account `email` names, if there is one.
fn send_link(state: &AppState, email: &str) {
    let now = crate::time::now_ms() / 1000;
    let found = state.engine.read(|s| {
        s.users
            .by_email(email)
            .filter(|u| u.is_active && !u.is_bot())
            .map(|u| {
                let token = state.secret.password_reset_token(
                    u.user_id,
                    now,
                    u.password_hash.as_deref(),
                    &u.email,
                );
                (u.user_id, u.email.clone(), token, s.realm.name.clone())
            })
    });
    let Some((user_id, to, token, realm)) = found else {
        return;
    };
    let url = &state.site.realm_url;
    let link = format!("{url}/accounts/password/reset/{user_id}/{token}/");
    state.send_mail(
        &to,
        &format!("Reset your password for {realm}"),
        &format!(
            "Someone (hopefully you) asked to reset the password of your account {to} on \
             {realm} ({url}).\n\nTo choose a new password, open this link within 24 hours:\n\n\
             {link}\n\nIf you did not ask for this, ignore this email: your password stays as \
             it is.\n"
        ),
        &format!("password-reset-{user_id}"),
    );
}

/// The account a link's `user_id` and `token` open now, with the hash the link was made for.
fn account_of_link(
    state: &AppState,
    user_id: u64,
    token: &str,
) -> Option<(UserId, Option<String>)> {
    let (issued, _) = token.split_once('-')?;
    let issued: i64 = issued.parse().ok()?;
    let now = crate::time::now_ms() / 1000;
    if issued > now + 60 || now - issued > RESET_LINK_LIFETIME_SECS {
        return None;
    }
    let user_id = UserId(user_id);
    state.engine.read(|s| {
        let user = s
            .users
            .get(user_id)
            .filter(|u| u.is_active && !u.is_bot())?;
        let expected = state.secret.password_reset_token(
            user_id,
            issued,
            user.password_hash.as_deref(),
            &user.email,
        );
        crate::auth::constant_time_eq(expected.as_bytes(), token.as_bytes())
            .then(|| (user_id, user.password_hash.clone()))
    })
}

/// `GET /accounts/password/reset/{user_id}/{token}/`: the new-password form, or the way back
/// to asking for a link when this one has expired or been used.
pub async fn confirm_page(
    state: web::Data<AppState>,
    path: web::Path<(u64, String)>,
) -> HttpResponse {
    let (user_id, token) = path.into_inner();
    match account_of_link(&state, user_id, &token) {
        Some(_) => with_no_referrer(page("reset_confirm.html")),
        None => redirect("/accounts/password/reset/?error=expired"),
    }
}

/// `POST /accounts/password/reset/{user_id}/{token}/` (`new_password1`, `new_password2`): the
/// new password, at least 6 characters, typed twice; then the login page.
pub async fn set_password(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(u64, String)>,
    mut params: Params,
) -> HttpResponse {
    let (user_id, token) = path.into_inner();
    let here = format!("/accounts/password/reset/{user_id}/{token}/");
    if !same_origin_post(&req, &state) {
        return redirect(&format!("{here}?error=origin"));
    }
    let ip = super::auth::client_ip(&req, &state);
    let Some((user_id, expected)) = account_of_link(&state, user_id, &token) else {
        let refused = Err(crate::error::ApiError::bad_request("Invalid reset link"));
        super::auth::audit_sign_in(&state, "password_reset", &user_id.to_string(), ip, &refused);
        return redirect("/accounts/password/reset/?error=expired");
    };
    let password = params.str("new_password1").unwrap_or_default();
    if password != params.str("new_password2").unwrap_or_default() {
        return redirect(&format!("{here}?error=mismatch"));
    }
    if password.chars().count() < crate::commands::users::MIN_PASSWORD_LENGTH {
        return redirect(&format!("{here}?error=short"));
    }
    if password.chars().count() > crate::commands::users::MAX_PASSWORD_LENGTH {
        return redirect(&format!("{here}?error=long"));
    }
    let hashed = state
        .password_work
        .run(ip, move || crate::auth::hash_password(&password))
        .await;
    let new_hash = match hashed {
        Ok(Ok(hash)) => hash,
        Ok(Err(_)) | Err(_) => return redirect(&format!("{here}?error=busy")),
    };
    let changed = state
        .engine
        .execute(Some(user_id), move |s, ctx| {
            crate::commands::users::reset_password(s, ctx, expected.clone(), new_hash.clone())
        })
        .await;
    let result = changed.map(|_| user_id);
    super::auth::audit_sign_in(&state, "password_reset", "", ip, &result);
    match result {
        Ok(_) => redirect("/login/?reset=done"),
        Err(_) => redirect("/accounts/password/reset/?error=expired"),
    }
}

/// A page whose address holds a secret: no `Referer` carries it to another site.
fn with_no_referrer(mut response: HttpResponse) -> HttpResponse {
    response.headers_mut().insert(
        actix_web::http::header::REFERRER_POLICY,
        actix_web::http::header::HeaderValue::from_static("no-referrer"),
    );
    response
}

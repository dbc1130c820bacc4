//! Joining without an invitation, when the organization allows it (`invite_required` off), at
//! Zulip's addresses: `GET /register/` asks for an address, `POST /accounts/home/` mails a
//! confirmation link to it (then `GET /accounts/send_confirm/`: "check your email"), and the
//! link (`/accounts/do_confirm/{key}`) opens the form for a name and a password that makes the
//! account and signs the browser in.
//!
//! The link's key is the address and an expiry (24 hours, Zulip's) sealed with the server's
//! secret for this purpose alone, with a nonce: nothing is stored until the account exists,
//! and the link is spent in the commit that makes it (`SignInTokenSpent`), so it makes one
//! account at most. Asking answers the same page
//! whether or not the address has an account (one that has gets an email saying so, with the
//! way to reset its password), and an address gets at most two emails an hour.

use super::sealed::{sealed, unsealed};
use super::webclient::{page, redirect, same_origin_post, start_browser_session};
use super::{AppState, Params};
use crate::auth::{hash_password, new_api_key_nonce};
use crate::commands::users::{NewUser, MIN_PASSWORD_LENGTH};
use actix_web::{web, HttpRequest, HttpResponse};

/// How long a confirmation link works (Zulip's `CONFIRMATION_LINK_DEFAULT_VALIDITY_DAYS`).
const LINK_LIFETIME_MS: i64 = 24 * 3600 * 1000;
const PURPOSE: &str = "sign-up";

/// What a confirmation link's key holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct SignUpLink {
    email: String,
    /// Spent with the account it makes (`SignInTokenSpent`), so a link makes one account at
    /// most, even if its address is freed again within its day.
    nonce: String,
    expires_at: i64,
}

/// `GET /register/`: the form asking for an address, or why there is none to fill in.
pub async fn signup_page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let closed = !state.identity.password || state.engine.read(|s| s.realm.flag("invite_required"));
    if closed && req.query_string().is_empty() {
        let code = if state.identity.password {
            "invite_required"
        } else {
            "disabled"
        };
        return redirect(&format!("/register/?error={code}"));
    }
    page("signup.html")
}

/// `GET /accounts/send_confirm/`: "check your email".
pub async fn sent_page() -> HttpResponse {
    page("signup_sent.html")
}

/// Why open sign-up refuses `email` now, as the page's error code.
fn refusal(state: &AppState, email: &str) -> Option<&'static str> {
    if !state.identity.password {
        return Some("disabled");
    }
    state.engine.read(|s| {
        if s.realm.flag("invite_required") {
            Some("invite_required")
        } else if !crate::commands::users::validate_email(email) {
            Some("invalid")
        } else if crate::commands::realm_domains::email_refusal(s, email).is_some() {
            Some("domain")
        } else {
            None
        }
    })
}

/// `POST /accounts/home/` (`email`): mails the confirmation link (or, to an address that has
/// an account, a note saying so), within the per-address limit; then "check your email".
pub async fn request_link(
    req: HttpRequest,
    state: web::Data<AppState>,
    mut params: Params,
) -> HttpResponse {
    if !same_origin_post(&req, &state) {
        return redirect("/register/?error=origin");
    }
    let email = params.str("email").unwrap_or_default().trim().to_owned();
    if email.is_empty() {
        return redirect("/register/?error=missing");
    }
    if let Some(code) = refusal(&state, &email) {
        return redirect(&format!("/register/?error={code}"));
    }
    let key = super::rate_limit::Key::SignUp(email.to_lowercase());
    if state.rate_limiter.hit(key).is_ok() {
        send_link(&state, &email);
    }
    redirect("/accounts/send_confirm/")
}

fn send_link(state: &AppState, email: &str) {
    let (realm, existing) = state.engine.read(|s| {
        (
            s.realm.name.clone(),
            s.users.by_email(email).map(|u| u.email.clone()),
        )
    });
    let url = &state.site.realm_url;
    let (subject, body) = match existing {
        Some(address) => (
            format!("You already have an account on {realm}"),
            format!(
                "Someone (hopefully you) asked to sign up to {realm} ({url}) with {address}, \
                 which already has an account there.\n\nLog in at {url}/login/ , or choose a \
                 new password at {url}/accounts/password/reset/ .\n"
            ),
        ),
        None => {
            let key = sealed(
                state,
                PURPOSE,
                &SignUpLink {
                    email: email.to_owned(),
                    nonce: new_api_key_nonce(),
                    expires_at: crate::time::now_ms() + LINK_LIFETIME_MS,
                },
            );
            (
                format!("Activate your account on {realm}"),
                format!(
                    "Someone (hopefully you) asked to sign up to {realm} ({url}) with this \
                     address.\n\nTo choose your name and password, open this link within 24 \
                     hours:\n\n{url}/accounts/do_confirm/{key}\n\nIf you did not ask for this, \
                     ignore this email: no account is made.\n"
                ),
            )
        }
    };
    state.send_mail(email, &subject, &body, "sign-up");
}

/// What a link's key confirms, while it works.
fn open_link(state: &AppState, key: &str) -> Option<SignUpLink> {
    let link = unsealed::<SignUpLink>(state, PURPOSE, key)?;
    let digest = link_digest(&link);
    let spent = state.engine.read(|s| s.sessions.token_spent(&digest));
    (link.expires_at > crate::time::now_ms() && !spent).then_some(link)
}

fn link_digest(link: &SignUpLink) -> String {
    crate::commands::sessions::token_digest(PURPOSE, "", &link.nonce)
}

/// `GET /accounts/do_confirm/{key}`: the form for a name and a password.
pub async fn confirm_page(state: web::Data<AppState>, key: web::Path<String>) -> HttpResponse {
    match open_link(&state, &key) {
        Some(link) if refusal(&state, &link.email).is_none() => page("signup_confirm.html"),
        Some(_) => redirect("/register/?error=invite_required"),
        None => redirect("/register/?error=expired"),
    }
}

/// `POST /accounts/do_confirm/{key}` (`full_name`, `password`): the account, then the app.
pub async fn create_account(
    req: HttpRequest,
    state: web::Data<AppState>,
    key: web::Path<String>,
    mut params: Params,
) -> HttpResponse {
    let here = format!("/accounts/do_confirm/{key}");
    if !same_origin_post(&req, &state) {
        return redirect(&format!("{here}?error=origin"));
    }
    let Some(link) = open_link(&state, &key) else {
        return redirect("/register/?error=expired");
    };
    let (digest, expires_at) = (link_digest(&link), link.expires_at);
    let email = link.email;
    let full_name = params.str("full_name").unwrap_or_default();
    let password = params.str("password").unwrap_or_default();
    if let Some(code) = refusal(&state, &email) {
        return redirect(&format!("/register/?error={code}"));
    }
    let problem = state.engine.read(|s| {
        use crate::commands::users::{check_full_name, check_unique_name, email_taken};
        if email_taken(s, &email) {
            Some("taken")
        } else {
            match check_full_name(&full_name) {
                Err(_) => Some("name"),
                Ok(name) => check_unique_name(s, &name, None)
                    .err()
                    .map(|_| "name_taken"),
            }
        }
    });
    if let Some(code) = problem {
        return redirect(&format!("{here}?error={code}"));
    }
    if password.chars().count() < MIN_PASSWORD_LENGTH {
        return redirect(&format!("{here}?error=short"));
    }
    if password.chars().count() > crate::commands::users::MAX_PASSWORD_LENGTH {
        return redirect(&format!("{here}?error=long"));
    }
    let ip = super::auth::client_ip(&req, &state);
    let hashed = match state
        .password_work
        .run(ip, move || hash_password(&password))
        .await
    {
        Ok(Ok(hash)) => hash,
        _ => return redirect(&format!("{here}?error=busy")),
    };
    let user = NewUser {
        email,
        full_name,
        role: crate::events::Role::Member,
        password_hash: Some(hashed),
        api_key_nonce: new_api_key_nonce(),
    };
    let created = state
        .engine
        .execute(None, move |s, ctx| {
            // The link is spent in the commit that makes the account.
            let spent = crate::commands::sessions::spend_token(s, ctx, &digest, expires_at)?;
            let mut made = crate::commands::invitations::sign_up(s, ctx, user.clone())?;
            made.events.splice(0..0, spent.events);
            Ok(made)
        })
        .await;
    match created {
        Ok(done) => start_browser_session(&req, &state, done.value).await,
        // Checked above; only a change in between (the address taken meanwhile, the
        // organization closed) lands here.
        Err(error) => {
            tracing::info!("sign-up refused: {error}");
            redirect(&format!("{here}?error=invalid"))
        }
    }
}

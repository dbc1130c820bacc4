//! A person changes their own address, as in Zulip: `PATCH /settings` with `email` mails a
//! confirmation link to the new address, and opening it
//! (`GET /accounts/confirm_new_email/{key}/`) makes the change and tells the old address.
//!
//! The link's key is the account, the address it had when the link was made, the new one and
//! an expiry (24 hours), sealed with the server's secret for this purpose alone: nothing is
//! stored, and the link works once, since the account's address is no longer the one it was
//! made for. The checks run when the link is asked for and again when it is opened (the
//! organization may have disabled changes, or someone taken the address, meanwhile). A person
//! gets at most two such emails an hour.

use super::sealed::{sealed, unsealed};
use super::webclient::page;
use super::{AppState, Auth};
use crate::error::{ApiError, ApiResult};
use crate::ids::UserId;
use actix_web::{web, HttpResponse};

const PURPOSE: &str = "email-change";
/// How long a confirmation link works (Zulip's confirmation links: a day).
const LINK_LIFETIME_MS: i64 = 24 * 3600 * 1000;

/// What a confirmation link's key holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct ChangeLink {
    user_id: u64,
    from: String,
    to: String,
    expires_at: i64,
}

/// What `PATCH /settings` answers beside success when it mailed a link (Zulip's words).
pub const CHECK_YOUR_EMAIL: &str = "Check your email for a confirmation link.";

/// Checks `email` for the caller and mails the confirmation link to it.
pub fn start(state: &AppState, auth: &Auth, email: &str) -> ApiResult<()> {
    let email = email.trim();
    // A directory keeps its people by their addresses (the LDAP sync matches them so, SCIM
    // writes them): there an address is the directory's to change.
    if state.identity.ldap.is_some() || state.identity.scim.is_some() {
        return Err(ApiError::bad_request(
            "Your address is managed by your organization's directory.",
        ));
    }
    let found = state.engine.read(|s| {
        let me = s.users.get(auth.user_id)?;
        Some((
            crate::commands::users::email_change_refusal(s, me, email),
            me.email.clone(),
            me.full_name.clone(),
            s.realm.name.clone(),
        ))
    });
    let Some((refusal, from, name, realm)) = found else {
        return Err(ApiError::bad_request("Account is deactivated"));
    };
    if let Some(refusal) = refusal {
        return Err(refusal);
    }
    if from == email {
        // Nothing to change: Zulip answers success without a link too.
        return Ok(());
    }
    state
        .rate_limiter
        .hit(super::rate_limit::Key::EmailChange(auth.user_id.0))?;
    let key = sealed(
        state,
        PURPOSE,
        &ChangeLink {
            user_id: auth.user_id.0,
            from: from.clone(),
            to: email.to_owned(),
            expires_at: crate::time::now_ms() + LINK_LIFETIME_MS,
        },
    );
    let url = &state.site.realm_url;
    state.send_mail(
        email,
        &format!("Verify your new email address for {realm}"),
        &format!(
            "{name} asked to change the address of their account on {realm} ({url}) from \
             {from} to this one.\n\nTo confirm it, open this link within 24 hours:\n\n\
             {url}/accounts/confirm_new_email/{key}/\n\nIf you did not ask for this, ignore \
             this email: the address stays as it is.\n"
        ),
        &format!("email-change-{}", auth.user_id.0),
    );
    Ok(())
}

/// `GET /accounts/confirm_new_email/{key}/`: the change, then a page saying so (and an email
/// to the old address); a link that has expired, was used, or whose change is no longer
/// allowed gets the page that says it cannot be used.
pub async fn confirm(state: web::Data<AppState>, key: web::Path<String>) -> HttpResponse {
    let link = unsealed::<ChangeLink>(&state, PURPOSE, &key)
        .filter(|link| link.expires_at > crate::time::now_ms());
    let Some(link) = link else {
        return page("email_change_error.html");
    };
    let user_id = UserId(link.user_id);
    let (from, to) = (link.from.clone(), link.to.clone());
    let changed = state
        .engine
        .execute(Some(user_id), move |s, ctx| {
            crate::commands::users::change_own_email(s, ctx, &from, &to)
        })
        .await;
    if changed.is_err() {
        return page("email_change_error.html");
    }
    let realm = state.engine.read(|s| s.realm.name.clone());
    let url = &state.site.realm_url;
    state.send_mail(
        &link.from,
        &format!("Your email address on {realm} changed"),
        &format!(
            "The address of your account on {realm} ({url}) was changed from {} to {}.\n\nIf \
             you did not make this change, tell your organization's administrators at once.\n",
            link.from, link.to
        ),
        &format!("email-changed-{}", link.user_id),
    );
    page("email_changed.html")
}

//! One-click unsubscribing from notification emails, at Zulip's address
//! (`/accounts/unsubscribe/{kind}/{key}`): `GET` from the link in an email, `POST` from a mail
//! reader's unsubscribe button (`List-Unsubscribe-Post`, RFC 8058). The key is made for one
//! person and one kind of email under the server's secret and kept nowhere
//! (`ServerSecret::unsubscribe_key`); no sign-in is needed, as in Zulip.

use super::webclient::{page, redirect};
use super::AppState;
use actix_web::{web, HttpResponse};

/// Switches the emails off, then shows that it did (or that the link is not valid).
pub async fn unsubscribe(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> HttpResponse {
    let (kind, key) = path.into_inner();
    let owner = crate::commands::notifications::unsubscribe_setting(&kind)
        .and_then(|_| state.secret.unsubscribe_key_owner(&key, &kind));
    let Some(user) = owner else {
        return page("unsubscribe_error.html");
    };
    let done = state
        .engine
        .execute(Some(user), move |s, _| {
            crate::commands::notifications::unsubscribe(s, user, &kind)
        })
        .await;
    match done {
        Ok(_) => redirect("/accounts/unsubscribe/done/"),
        Err(error) => {
            tracing::warn!(%error, user = user.0, "unsubscribing failed");
            page("unsubscribe_error.html")
        }
    }
}

/// Where a successful unsubscribe lands.
pub async fn done_page() -> HttpResponse {
    page("unsubscribe_done.html")
}

//! Invitations: `POST /invites`, `POST /invites/multiuse`, `GET /invites`,
//! `DELETE /invites/{invite_id}`, `POST /invites/{invite_id}/resend`,
//! `DELETE /invites/multiuse/{invite_id}`; the emails (written to the outbox in the data
//! directory); and the registration page their links open (`/join/{key}/`).

use super::{path_id, AppState, Auth, Params};
use crate::auth::{hash_password, new_api_key_nonce};
use crate::commands::invitations::{
    invitation_failed, invitation_for_key, manages, split_emails, Grants,
};
use crate::commands::users::{NewUser, MIN_PASSWORD_LENGTH};
use crate::error::{ApiError, ApiResult};
use crate::events::Role;
use crate::ids::{ChannelId, GroupId, InviteId};
use crate::markdown::escape_html;
use crate::projections::invitations::Invitation;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

/// Zulip's `INVITATION_LINK_VALIDITY_MINUTES`.
pub const DEFAULT_VALIDITY_MINUTES: u64 = 14_400;

fn link(state: &AppState, invite: &Invitation) -> String {
    format!(
        "{}/join/{}/",
        state.site.realm_url,
        state.secret.invitation_key(invite.id.0, &invite.link_nonce)
    )
}

/// The parameters `POST /invites` and `POST /invites/multiuse` share.
fn read_grants(params: &mut Params, streams_required: bool) -> ApiResult<Grants> {
    let invite_as = match params.int::<u16>("invite_as")? {
        None => Role::Member,
        Some(code) => Role::from_code(code).ok_or_else(|| {
            ApiError::bad_request(
                "Invalid invite_as: Value error, Not in the list of possible values",
            )
        })?,
    };
    let stream_ids: Option<Vec<u64>> = params.json("stream_ids")?;
    if streams_required && stream_ids.is_none() {
        return Err(ApiError::missing("stream_ids"));
    }
    let group_ids: Vec<u64> = params.json("group_ids")?.unwrap_or_default();
    // A number of minutes, or null for an invitation that never expires.
    let expires_in_minutes = match params.str("invite_expires_in_minutes") {
        None => Some(DEFAULT_VALIDITY_MINUTES),
        Some(raw) if raw.trim() == "null" => None,
        Some(raw) => Some(
            raw.trim()
                .parse::<u64>()
                .map_err(|_| ApiError::invalid("invite_expires_in_minutes", &raw))?,
        ),
    };
    let welcome = match params.str("welcome_message_custom_text") {
        Some(raw) if raw.trim() == "null" => None,
        other => other,
    };
    Ok(Grants {
        invite_as,
        stream_ids: stream_ids
            .unwrap_or_default()
            .into_iter()
            .map(ChannelId)
            .collect(),
        group_ids: group_ids.into_iter().map(GroupId).collect(),
        include_realm_default_subscriptions: params
            .bool("include_realm_default_subscriptions")?
            .unwrap_or(false),
        notify_referrer_on_join: params.bool("notify_referrer_on_join")?.unwrap_or(true),
        welcome_message_custom_text: welcome,
        expires_in_minutes,
    })
}

/// Writes an invitation email to the outbox (`DATA_DIR/outbox/`, one file per email): the
/// delivery Chronicle has, which an administrator reads or forwards. A failure is logged; the
/// invitation exists anyway and can be resent.
fn write_email(state: &AppState, invite: &Invitation, inviter: &str) {
    let Some(to) = &invite.email else {
        return;
    };
    let realm = state.engine.read(|s| s.realm.name.clone());
    let expiry = match invite.spec.expires_at_ms {
        Some(at) => format!("The link works until {}.", crate::time::iso8601_ms(at)),
        None => "The link does not expire.".to_owned(),
    };
    let body = format!(
        "{inviter} invited you to join {realm}, a Zulip organization.\n\n\
         Create your account here:\n{}\n\n{expiry}\n",
        link(state, invite)
    );
    state.send_mail(
        to,
        &format!("{inviter} invited you to join {realm}"),
        &body,
        &format!("invite-{}", invite.id),
    );
}

fn inviter_name(state: &AppState, auth: &Auth) -> String {
    state.engine.read(|s| {
        s.users
            .get(auth.user_id)
            .map(|u| u.full_name.clone())
            .unwrap_or_default()
    })
}

/// `POST /invites`.
pub async fn invite_users(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let emails = split_emails(&params.required_str("invitee_emails")?);
    let grants = read_grants(&mut params, true)?;
    let nonces: Vec<String> = emails.iter().map(|_| new_api_key_nonce()).collect();
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::invitations::invite_users(
                s,
                ctx,
                emails.clone(),
                grants.clone(),
                nonces.clone(),
            )
        })
        .await?;
    let outcome = committed.value;
    let inviter = inviter_name(&state, &auth);
    for (id, _) in &outcome.sent {
        if let Some(invite) = state.engine.read(|s| s.invitations.get(*id).cloned()) {
            write_email(&state, &invite, &inviter);
        }
    }
    if !outcome.skipped.is_empty() {
        let sent = !outcome.sent.is_empty();
        let msg = if sent {
            "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!"
        } else {
            "We weren't able to invite anyone."
        };
        return Err(invitation_failed(msg, &outcome.skipped, sent));
    }
    Ok(params.success(json!({})))
}

/// `POST /invites/multiuse`.
pub async fn create_multiuse_invite(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let grants = read_grants(&mut params, false)?;
    let nonce = new_api_key_nonce();
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::invitations::create_multiuse_invite(
                s,
                ctx,
                grants.clone(),
                nonce.clone(),
            )
        })
        .await?;
    let invite = state
        .engine
        .read(|s| s.invitations.get(committed.value).cloned())
        .ok_or_else(|| ApiError::internal("new invitation missing"))?;
    Ok(params.success(json!({ "invite_link": link(&state, &invite) })))
}

/// `GET /invites`: the valid invitations the caller manages (administrators: all).
pub async fn get_invites(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let now = crate::time::now_ms();
    let invites = state.engine.read(|s| {
        let ctx = crate::commands::Ctx {
            now_ms: now,
            actor: Some(auth.user_id),
        };
        let me = crate::commands::users::human_member(s, &ctx)?;
        Ok::<Vec<Value>, ApiError>(
            s.invitations
                .iter()
                .filter(|i| i.is_valid(now) && manages(me, i))
                .map(|i| {
                    let mut entry = json!({
                        "id": i.id.0,
                        "invited_by_user_id": i.invited_by.map(|u| u.0),
                        "invited": i.invited_ms / 1000,
                        "expiry_date": i.spec.expires_at_ms.map(|at| at / 1000),
                        "invited_as": i.spec.invite_as.code(),
                        "is_multiuse": i.is_multiuse(),
                        "notify_referrer_on_join": i.spec.notify_referrer_on_join,
                    });
                    match &i.email {
                        Some(email) => entry["email"] = json!(email),
                        None => {
                            entry["link_url"] = json!(link(&state, i));
                            if let Value::Object(map) = &mut entry {
                                map.remove("notify_referrer_on_join");
                            }
                        }
                    }
                    entry
                })
                .collect(),
        )
    })?;
    Ok(params.success(json!({ "invites": invites })))
}

async fn revoke(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
    multiuse: bool,
) -> ApiResult<HttpResponse> {
    let id = InviteId(path_id(&req, "invite_id")?);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::invitations::revoke_invite(s, ctx, id, multiuse)
        })
        .await
}

/// `DELETE /invites/{invite_id}`.
pub async fn revoke_user_invite(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    revoke(state, auth, req, params, false).await
}

/// `DELETE /invites/multiuse/{invite_id}`.
pub async fn revoke_multiuse_invite(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    revoke(state, auth, req, params, true).await
}

/// `POST /invites/{invite_id}/resend`.
pub async fn resend_invite(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = InviteId(path_id(&req, "invite_id")?);
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::invitations::resend_invite(s, ctx, id)
        })
        .await?;
    if let Some(invite) = state.engine.read(|s| s.invitations.get(id).cloned()) {
        write_email(&state, &invite, &inviter_name(&state, &auth));
    }
    Ok(params.success(json!({})))
}

/// A small HTML page.
fn page(title: &str, body: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .body(format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title>\
             <style>body{{font-family:sans-serif;max-width:34em;margin:3em auto;padding:0 1em}}\
             label{{display:block;margin:.8em 0 .2em}}input{{width:100%;padding:.4em}}\
             button{{margin-top:1em;padding:.5em 1.2em}}.error{{color:#b00}}\
             code,pre{{background:#f4f4f4;padding:.1em .3em}}</style></head>\
             <body><h1>{title}</h1>{body}</body></html>",
            title = escape_html(title)
        ))
}

fn invalid_link_page() -> HttpResponse {
    let mut response = page(
        "Invitation link not valid",
        "<p>Whoops. The confirmation link has expired or been deactivated.</p>\
         <p>Please contact your organization administrator for a new link.</p>",
    );
    *response.status_mut() = actix_web::http::StatusCode::NOT_FOUND;
    response
}

fn form(realm: &str, invite: &Invitation, error: Option<&str>, name: &str, email: &str) -> String {
    let error = error
        .map(|e| format!("<p class=\"error\">{}</p>", escape_html(e)))
        .unwrap_or_default();
    let email_field = match &invite.email {
        Some(address) => format!(
            "<p>Your account: <strong>{}</strong></p>",
            escape_html(address)
        ),
        None => format!(
            "<label for=\"email\">Email</label><input id=\"email\" name=\"email\" type=\"email\" \
             required value=\"{}\">",
            escape_html(email)
        ),
    };
    format!(
        "<p>You were invited to join <strong>{}</strong>.</p>{error}\
         <form method=\"post\">{email_field}\
         <label for=\"full_name\">Full name</label>\
         <input id=\"full_name\" name=\"full_name\" required value=\"{}\">\
         <label for=\"password\">Password</label>\
         <input id=\"password\" name=\"password\" type=\"password\" required minlength=\"{MIN_PASSWORD_LENGTH}\">\
         <button type=\"submit\">Create account</button></form>",
        escape_html(realm),
        escape_html(name)
    )
}

fn open_invitation(state: &AppState, req: &HttpRequest) -> Option<Invitation> {
    let key = req.match_info().get("key").unwrap_or_default().to_owned();
    let now = crate::time::now_ms();
    state.engine.read(|s| {
        invitation_for_key(s, &key, now, |i| {
            state.secret.invitation_key(i.id.0, &i.link_nonce)
        })
        .ok()
        .cloned()
    })
}

/// `GET /join/{key}/`: the registration form of an invitation.
pub async fn registration_form(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let Some(invite) = open_invitation(&state, &req) else {
        return invalid_link_page();
    };
    let realm = state.engine.read(|s| s.realm.name.clone());
    page(
        &format!("Join {realm}"),
        &form(&realm, &invite, None, "", ""),
    )
}

/// `POST /join/{key}/`: creates the account the invitation grants, then tells the new user how
/// to connect a client.
pub async fn register_account(
    state: web::Data<AppState>,
    req: HttpRequest,
    mut params: Params,
) -> HttpResponse {
    let Some(invite) = open_invitation(&state, &req) else {
        return invalid_link_page();
    };
    let realm = state.engine.read(|s| s.realm.name.clone());
    let full_name = params.str("full_name").unwrap_or_default();
    let password = params.str("password").unwrap_or_default();
    let email = invite
        .email
        .clone()
        .or_else(|| params.str("email"))
        .unwrap_or_default()
        .trim()
        .to_owned();
    let retry = |error: &str| {
        let mut response = page(
            &format!("Join {realm}"),
            &form(&realm, &invite, Some(error), &full_name, &email),
        );
        *response.status_mut() = actix_web::http::StatusCode::BAD_REQUEST;
        response
    };
    if password.chars().count() < MIN_PASSWORD_LENGTH {
        return retry("The password is too weak.");
    }
    // argon2id is CPU-heavy: on the blocking pool, within the bounds on password work.
    let ip = super::auth::client_ip(&req, &state);
    let hashed = match state
        .password_work
        .run(ip, move || hash_password(&password))
        .await
    {
        Ok(Ok(hash)) => hash,
        _ => return retry("The account could not be created; please try again."),
    };
    let nonce = new_api_key_nonce();
    let user = NewUser {
        email: email.clone(),
        full_name: full_name.clone(),
        role: invite.spec.invite_as,
        password_hash: Some(hashed),
        api_key_nonce: nonce.clone(),
    };
    let invite_id = invite.id;
    let created = state
        .engine
        .execute(None, move |s, ctx| {
            crate::commands::invitations::accept_invitation(s, ctx, invite_id, user.clone())
        })
        .await;
    let user_id = match created {
        Ok(committed) => committed.value,
        Err(error) => {
            let msg = error.body()["msg"]
                .as_str()
                .unwrap_or("Invalid request")
                .to_owned();
            return retry(&msg);
        }
    };
    let site = escape_html(&state.site.realm_url);
    let zuliprc = format!(
        "[api]\nemail={}\nkey={}\nsite={}\n",
        email,
        state.secret.api_key(user_id, &nonce),
        state.site.realm_url
    );
    page(
        &format!("Welcome to {realm}"),
        &format!(
            "<p>Your account <strong>{}</strong> is ready.</p>\
             <p><a href=\"/login/\">Log in to the web client</a> with your email and password.</p>\
             <p>Or connect a Zulip client (the mobile and desktop apps, or <code>zulip-term</code>) to \
             <code>{site}</code> and log in with your email and password.</p>\
             <p>For the terminal client and scripts, save this as <code>~/.zuliprc</code> (it holds \
             your API key: keep it private):</p><pre>{}</pre>",
            escape_html(&email),
            escape_html(&zuliprc)
        ),
    )
}

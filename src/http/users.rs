//! Accounts: `GET /users`, `GET /users/{user_id}`, `GET /users/{email}`, `GET /users/me`,
//! `POST /users`, `PATCH /users/{user_id}`, `DELETE /users/{user_id}`,
//! `POST /users/{user_id}/reactivate`.

use super::profile_fields::parse_profile_data;
use super::{path_id, AppState, Auth, Params, Site};
use crate::auth::{hash_password, new_api_key_nonce, verify_password};
use crate::commands::users::{DeactivationActions, NewUser, MIN_PASSWORD_LENGTH};
use crate::error::{ApiError, ApiResult};
use crate::events::Role;
use crate::ids::UserId;
use crate::projections::{Projections, User};
use crate::render::fields::JsonBuf;
use crate::render::realm::profile_data_json;
use crate::render::users::avatar_url;
use crate::render::users::email_visible;
use crate::render::users::placeholder_email;
use crate::render::users::{user_json, UserShape, Viewer};
use crate::time::iso8601_ms;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// The options `GET /users` and `GET /users/{user_id|email}` share.
fn user_query_options(params: &mut Params) -> ApiResult<bool> {
    // Chronicle never points at Gravatar, so `avatar_url` is always set and
    // `client_gravatar`/`client_external_avatar` change nothing; they are still validated.
    params.bool("client_gravatar")?;
    params.bool("client_external_avatar")?;
    Ok(params
        .bool("include_custom_profile_fields")?
        .unwrap_or(false))
}

/// How many people `GET /users` writes out per hold of the read state.
const USERS_PER_READ: usize = 256;

/// `GET /users`: every account of the organization, bots and deactivated ones included (with
/// `is_active` false), or only those named by `user_ids`.
pub async fn get_users(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let with_profile = user_query_options(&mut params)?;
    let wanted: Option<Vec<u64>> = params.json("user_ids")?;
    // As in Zulip, ids that name no account are left out rather than refused.
    let ids: Vec<UserId> = match wanted {
        None => state
            .engine
            .read(|s| s.users.members().map(|u| u.user_id).collect()),
        Some(ids) => ids
            .into_iter()
            .map(UserId)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    // A few hundred people per hold of the read state: a list of tens of thousands takes
    // a tenth of a second to write out the first time, and the writer (then every reader
    // queued behind it) must not wait that long. Each person is written whole from one state,
    // from the text kept for them since they last changed (`UserCards`, as `/register` does).
    let shape = UserShape {
        profile_data: with_profile,
        is_active: true,
    };
    let mut parts = Vec::with_capacity(ids.len().div_ceil(USERS_PER_READ));
    for part in ids.chunks(USERS_PER_READ) {
        let text = state.engine.read(|s| {
            let viewer = s
                .users
                .get(auth.user_id)
                .ok_or_else(|| ApiError::internal("authenticated user missing"))?;
            let users = part
                .iter()
                .filter_map(|id| s.users.get(*id).filter(|u| !u.is_system_bot()));
            let mut text = JsonBuf::with_capacity(part.len() * 512);
            let viewer = Viewer::new(s, viewer);
            state
                .site
                .cards
                .write(&mut text, s, &state.site, &viewer, users, shape);
            Ok::<JsonBuf, ApiError>(text)
        })?;
        if text.failed() {
            return Err(ApiError::internal("a user could not be written"));
        }
        parts.push(text);
    }
    let size = parts.iter().map(JsonBuf::len).sum::<usize>() + 128;
    params.success_with(size, |o| {
        // Each part is an array: their items joined make the one list.
        o.field_with("members", |out| {
            let items = parts.iter().map(JsonBuf::as_bytes).filter(|p| p.len() > 2);
            out.array(items, |out, part| out.text(&part[1..part.len() - 1]));
        })
    })
}

/// `GET /users/{user_id}` and `GET /users/{email}`: one account. An email finds the account
/// only when the caller may see that real address; the `user{id}@{host}` placeholder always
/// works.
pub async fn get_user(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let with_profile = user_query_options(&mut params)?;
    let key = req
        .match_info()
        .get("user_id")
        .unwrap_or_default()
        .to_owned();
    let user = state.engine.read(|s| {
        let viewer = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("authenticated user missing"))?;
        let found = find_user(s, &state.site, viewer, &key);
        found
            .filter(|u| !u.is_system_bot())
            .map(|u| user_json(s, &state.site, viewer, u, with_profile))
            .ok_or_else(|| ApiError::bad_request("No such user"))
    })?;
    Ok(params.success(json!({ "user": user })))
}

/// The user a path segment names: an id, a real address the viewer may see, or the
/// `user{id}@{host}` placeholder (which always works).
pub fn find_user<'a>(
    s: &'a Projections,
    site: &Site,
    viewer: &User,
    key: &str,
) -> Option<&'a User> {
    match key.parse::<u64>() {
        Ok(id) => s.users.get(UserId(id)),
        Err(_) => s
            .users
            .by_email(key)
            .filter(|u| email_visible(s, viewer, u))
            .or_else(|| {
                // `user{id}@{host}`: the id is in the address, the rest must match.
                let id = key.strip_prefix("user")?.split('@').next()?.parse().ok()?;
                s.users
                    .get(UserId(id))
                    .filter(|u| placeholder_email(site, u).eq_ignore_ascii_case(key))
            }),
    }
}

/// `GET /users/me`.
pub async fn get_own_user(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let body = state.engine.read(|s| {
        let user = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("authenticated user missing"))?;
        Ok::<Value, ApiError>(json!({
            "avatar_url": avatar_url(&state.site, user),
            "avatar_version": user.avatar_version,
            "email": user.email,
            "delivery_email": user.email,
            "full_name": user.full_name,
            "is_admin": user.role.is_admin(),
            "is_owner": user.role == Role::Owner,
            "is_guest": user.role == Role::Guest,
            "role": user.role.code(),
            "is_bot": user.is_bot(),
            "is_active": user.is_active,
            "timezone": user.timezone,
            "date_joined": iso8601_ms(user.date_joined_ms),
            "max_message_id": s
                .messages
                .newest_held(user.user_id)
                .map_or(-1, |id| id.0 as i64),
            "user_id": user.user_id.0,
            "profile_data": profile_data_json(s, user.user_id),
        }))
    })?;
    Ok(params.success(body))
}

/// `POST /users`: an administrator with `can_create_users` creates a member account.
pub async fn create_user(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let email = params.required_str("email")?;
    let password = params.required_str("password")?;
    let full_name = params.required_str("full_name")?;
    if password.chars().count() < MIN_PASSWORD_LENGTH {
        return Err(ApiError::bad_request("The password is too weak."));
    }
    if password.chars().count() > crate::commands::users::MAX_PASSWORD_LENGTH {
        return Err(ApiError::bad_request("The password is too long."));
    }
    // argon2id is CPU-heavy: on the blocking pool, one per core at a time.
    let password_hash = state
        .password_work
        .run(None, move || hash_password(&password))
        .await?
        .map_err(ApiError::internal)?;
    let user = NewUser {
        email: email.trim().to_owned(),
        full_name,
        role: Role::Member,
        password_hash: Some(password_hash),
        api_key_nonce: new_api_key_nonce(),
    };
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::users::create_user(s, ctx, user.clone())
        })
        .await?;
    Ok(params.success(json!({"user_id": committed.value.0})))
}

/// `DELETE /users/me`: the caller deactivates their own account; their keys and sessions stop
/// working with it.
pub async fn deactivate_own_user(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    state
        .engine
        .execute(Some(auth.user_id), |s, ctx| {
            crate::commands::users::deactivate_own_account(s, ctx)
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `DELETE /users/{user_id}`.
pub async fn deactivate_user(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let target = UserId(path_id(&req, "user_id")?);
    let comment = params.str("deactivation_notification_comment");
    if comment.as_ref().is_some_and(|c| c.chars().count() > 2000) {
        return Err(ApiError::bad_request(
            "deactivation_notification_comment is too long (limit: 2000 characters)",
        ));
    }
    let actions: DeactivationActions = params.json("actions")?.unwrap_or_default();
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::users::deactivate_user(s, ctx, target, actions)
        })
        .await?;
    // With a comment, Zulip emails the person that their account was deactivated.
    if let Some(comment) = comment {
        let (to, realm) = state.engine.read(|s| {
            (
                s.users
                    .get(target)
                    .map(|u| u.email.clone())
                    .unwrap_or_default(),
                s.realm.name.clone(),
            )
        });
        state.send_mail(
            &to,
            &format!("Notification of account deactivation on {realm}"),
            &format!(
                "Your account on {realm} has been deactivated. A note from the administrator:\n\n{comment}\n"
            ),
            &format!("deactivation-{target}"),
        );
    }
    Ok(params.success(json!({})))
}

/// `PATCH /users/{user_id}`: `full_name`, `role` and `profile_data` (administrators).
pub async fn update_user(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    // By id, or by address (Zulip 10's `PATCH /users/{email}`, feature level 313).
    let key = req.match_info().get("user_id").unwrap_or_default();
    let target = match key.parse::<u64>() {
        Ok(id) => UserId(id),
        Err(_) => state.engine.read(|s| {
            let viewer = s
                .users
                .get(auth.user_id)
                .ok_or_else(|| ApiError::internal("authenticated user missing"))?;
            find_user(s, &state.site, viewer, key)
                .filter(|u| !u.is_system_bot())
                .map(|u| u.user_id)
                .ok_or_else(|| ApiError::bad_request("No such user"))
        })?,
    };
    let full_name = params.str("full_name");
    let role = match params.int::<u16>("role")? {
        None => None,
        Some(code) => Some(
            Role::from_code(code)
                .ok_or_else(|| ApiError::bad_request("Invalid role").with("var_name", "role"))?,
        ),
    };
    let profile_data = parse_profile_data(&mut params, "profile_data")?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::users::update_user(
                s,
                ctx,
                target,
                full_name.clone(),
                role,
                profile_data.clone(),
            )
        })
        .await
}

/// `POST /users/{user_id}/reactivate`.
pub async fn reactivate_user(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let target = UserId(path_id(&req, "user_id")?);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::users::reactivate_user(s, ctx, target)
        })
        .await
}

/// `PATCH /settings`: the caller's own `full_name`, a new password given with the old one, the
/// time zone and the stored display, notification and privacy settings.
pub async fn update_settings(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let full_name = params.str("full_name");
    let old_password = params.str("old_password");
    let new_password = params.str("new_password");
    let password = match (old_password, new_password) {
        (None, None) => None,
        (None, Some(_)) => return Err(ApiError::missing("old_password")),
        (Some(_), None) => return Err(ApiError::missing("new_password")),
        (Some(old), Some(new)) => {
            if new.chars().count() < MIN_PASSWORD_LENGTH {
                return Err(ApiError::bad_request("New password is too weak!"));
            }
            if new.chars().count() > crate::commands::users::MAX_PASSWORD_LENGTH {
                return Err(ApiError::bad_request("New password is too long!"));
            }
            let current = state.engine.read(|s| {
                s.users
                    .get(auth.user_id)
                    .and_then(|u| u.password_hash.clone())
            });
            // argon2id twice (check, then hash): on the blocking pool, never on an async worker.
            let checked = current.clone();
            let outcome = state
                .password_work
                .run(None, move || {
                    let matches = checked.as_deref().is_some_and(|h| verify_password(h, &old));
                    matches.then(|| hash_password(&new))
                })
                .await?;
            match outcome {
                None => return Err(ApiError::bad_request("Wrong password!")),
                Some(hashed) => Some((hashed.map_err(ApiError::internal)?, current)),
            }
        }
    };
    let settings = read_user_settings(&mut params, |_| true)?;
    let timezone = params.str("timezone");
    // A new address is confirmed from itself: here it is checked and the link mailed.
    let email = params.str("email");
    if let Some(email) = &email {
        super::email_change::start(&state, &auth, email)?;
    }
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::users::update_own_settings(
                s,
                ctx,
                full_name.clone(),
                password.clone(),
                settings.clone(),
                timezone.clone(),
            )
        })
        .await?;
    let reply = match email {
        Some(_) => json!({"account_email": super::email_change::CHECK_YOUR_EMAIL}),
        None => json!({}),
    };
    Ok(params.success(reply))
}

/// The stored settings a request names, among those `wanted` takes, parsed by the kind of each
/// (`PATCH /settings`, `PATCH /realm/user_settings_defaults`).
pub fn read_user_settings(
    params: &mut Params,
    wanted: fn(&str) -> bool,
) -> ApiResult<Vec<(&'static str, crate::events::RealmValue)>> {
    use crate::events::RealmValue;
    use crate::projections::user_settings::{Kind, SETTINGS};
    let mut out = Vec::new();
    for setting in SETTINGS.iter().filter(|s| wanted(s.name)) {
        let value = match setting.kind {
            Kind::Bool => params.bool(setting.name)?.map(RealmValue::Bool),
            Kind::IntIn(_) | Kind::IntRange(..) => {
                params.int::<i64>(setting.name)?.map(RealmValue::Int)
            }
            Kind::TextIn(_) => params.str(setting.name).map(RealmValue::Text),
        };
        if let Some(value) = value {
            out.push((setting.name, value));
        }
    }
    Ok(out)
}

/// `POST /users/me/muted_users/{muted_user_id}`.
pub async fn mute_user(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let muted =
        UserId(path_id(&req, "muted_user_id").map_err(|_| ApiError::bad_request("No such user"))?);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::mutes::mute_user(s, ctx, muted)
        })
        .await
}

/// `DELETE /users/me/muted_users/{muted_user_id}`.
pub async fn unmute_user(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let muted =
        UserId(path_id(&req, "muted_user_id").map_err(|_| ApiError::bad_request("No such user"))?);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::mutes::unmute_user(s, ctx, muted)
        })
        .await
}

/// `GET /users/me/alert_words`.
pub async fn get_alert_words(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let words = state.engine.read(|s| s.alert_words.json(auth.user_id));
    Ok(params.success(json!({ "alert_words": words })))
}

/// `POST`/`DELETE /users/me/alert_words`: `alert_words`, a JSON list; answers the caller's
/// words after the change.
async fn change_alert_words(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
    add: bool,
) -> ApiResult<HttpResponse> {
    let words: Vec<String> = params
        .json("alert_words")?
        .ok_or_else(|| ApiError::missing("alert_words"))?;
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            if add {
                crate::commands::mutes::add_alert_words(s, ctx, words.clone())
            } else {
                crate::commands::mutes::remove_alert_words(s, ctx, words.clone())
            }
        })
        .await?;
    let words = state.engine.read(|s| s.alert_words.json(auth.user_id));
    Ok(params.success(json!({ "alert_words": words })))
}

/// `POST /users/me/alert_words`.
pub async fn add_alert_words(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    change_alert_words(state, auth, params, true).await
}

/// `DELETE /users/me/alert_words`.
pub async fn remove_alert_words(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    change_alert_words(state, auth, params, false).await
}

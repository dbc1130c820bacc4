//! Bots: `POST /bots`, `GET /bots`, `DELETE /bots/{bot_id}`, their API keys, `/bot_storage`,
//! and the bot object of `realm_bots` and `realm_bot` events.

use super::{path_id, AppState, Auth, Params};
use crate::auth::new_api_key_nonce;
use crate::commands::is_http_url;
use crate::commands::users::{human_member, NewBot};
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::BotService;
use crate::events::{GENERIC_BOT, OUTGOING_WEBHOOK_BOT};
use crate::ids::UserId;
use crate::render::users::avatar_url;
use crate::render::users::email_domain;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

/// `POST /bots`.
pub async fn create_bot(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let full_name = params.required_str("full_name")?;
    let short_name = params.required_str("short_name")?.trim().to_owned();
    let bot_type = params.int::<u8>("bot_type")?.unwrap_or(GENERIC_BOT);
    let payload_url: Option<String> = params.json("payload_url")?;
    let interface = params.int::<u8>("interface_type")?.unwrap_or(1);
    let service_name = params.str("service_name");
    let default_sending_stream = params.str("default_sending_stream");
    let default_events_register_stream = params.str("default_events_register_stream");
    let default_all_public_streams = params.bool("default_all_public_streams")?;
    if short_name.is_empty()
        || short_name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '@' | '<' | '>' | ','))
    {
        return Err(ApiError::bad_request("Bad name or username"));
    }
    if !matches!(interface, 1 | 2) {
        return Err(ApiError::bad_request("Invalid interface type"));
    }
    let service = if bot_type == OUTGOING_WEBHOOK_BOT {
        let url = payload_url.unwrap_or_default();
        if !is_http_url(&url) {
            return Err(ApiError::bad_request("payload_url is not a URL"));
        }
        Some(BotService {
            name: service_name.unwrap_or_else(|| short_name.clone()),
            base_url: url,
            interface,
        })
    } else {
        None
    };
    let bot = NewBot {
        email: format!("{short_name}-bot@{}", email_domain(&state.site)),
        full_name,
        bot_type,
        api_key_nonce: new_api_key_nonce(),
        default_sending_stream,
        default_events_register_stream,
        default_all_public_streams: default_all_public_streams.unwrap_or(false),
        service,
    };
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::users::create_bot(s, ctx, bot.clone())
        })
        .await?;
    let bot_id = committed.value;
    let body = state.engine.read(|s| {
        let bot = s
            .users
            .get(bot_id)
            .ok_or_else(|| ApiError::internal("new bot missing"))?;
        let mut body = json!({
            "user_id": bot_id.0,
            "api_key": state.secret.api_key(bot_id, &bot.api_key_nonce),
            "avatar_url": avatar_url(&state.site, bot),
        });
        for (key, value) in crate::render::users::bot_defaults(s, bot) {
            body[key] = value;
        }
        Ok::<Value, ApiError>(body)
    })?;
    Ok(params.success(body))
}

/// `GET /bots`: the caller's own active bots.
pub async fn get_bots(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let bots = state.engine.read(|s| {
        let ctx = Ctx {
            now_ms: 0,
            actor: Some(auth.user_id),
        };
        let me = human_member(s, &ctx)?;
        Ok::<Vec<Value>, ApiError>(
            s.users
                .bots_of(me.user_id)
                .filter(|b| b.is_active)
                .map(|bot| {
                    let mut entry = json!({
                        "username": bot.email,
                        "full_name": bot.full_name,
                        "api_key": state.secret.api_key(bot.user_id, &bot.api_key_nonce),
                        "avatar_url": avatar_url(&state.site, bot),
                    });
                    for (key, value) in crate::render::users::bot_defaults(s, bot) {
                        entry[key] = value;
                    }
                    entry
                })
                .collect(),
        )
    })?;
    Ok(params.success(json!({ "bots": bots })))
}

/// `DELETE /bots/{bot_id}`: deactivates a bot (its owner or an administrator).
pub async fn deactivate_bot(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let target = UserId(path_id(&req, "bot_id")?);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::users::deactivate_bot(s, ctx, target)
        })
        .await
}

/// `PATCH /bots/{bot_id}`: the bot as it is after the change.
pub async fn update_bot(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let target = UserId(path_id(&req, "bot_id")?);
    let role = match params.int::<u16>("role")? {
        None => None,
        Some(code) => Some(
            crate::events::Role::from_code(code)
                .ok_or_else(|| ApiError::bad_request("Invalid role").with("var_name", "role"))?,
        ),
    };
    // An empty name clears a default channel.
    let channel = |name: Option<String>| name.map(|n| Some(n).filter(|n| !n.is_empty()));
    let edit = crate::commands::users::BotEdit {
        full_name: params.str("full_name"),
        role,
        owner_id: params.int::<u64>("bot_owner_id")?.map(UserId),
        default_sending_stream: channel(params.str("default_sending_stream")),
        default_events_register_stream: channel(params.str("default_events_register_stream")),
        default_all_public_streams: params.bool("default_all_public_streams")?,
        service_payload_url: params.json("service_payload_url")?,
        service_interface: params.int::<u8>("service_interface")?,
        avatar: None,
    };
    let files = params.take_files();
    let avatar = match files.len() {
        0 => None,
        1 => Some(super::avatars::uploaded_avatar(&state, files).await?),
        _ => {
            return Err(ApiError::bad_request(
                "You may only upload one file at a time",
            ))
        }
    };
    let edit = crate::commands::users::BotEdit { avatar, ..edit };
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::users::update_bot(s, ctx, target, edit.clone())
        })
        .await?;
    let body = state.engine.read(|s| {
        let bot = s
            .users
            .get(target)
            .ok_or_else(|| ApiError::internal("bot missing"))?;
        let service = bot.bot.as_deref().and_then(|c| c.services.first());
        let mut body = json!({
            "full_name": bot.full_name,
            "avatar_url": avatar_url(&state.site, bot),
            "service_interface": service.map(|s| s.interface),
            "service_payload_url": service.map(|s| s.base_url.clone()),
            "config_data": {},
        });
        for (key, value) in crate::render::users::bot_defaults(s, bot) {
            body[key] = value;
        }
        if let Some(owner) = bot.bot_owner_id.and_then(|o| s.users.get(o)) {
            body["bot_owner"] = json!(owner.email);
        }
        Ok::<Value, ApiError>(body)
    })?;
    Ok(params.success(body))
}

/// `POST /bots/{bot_id}/api_key/regenerate`: the bot's new key (its old one stops working).
pub async fn regenerate_bot_key(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let target = UserId(path_id(&req, "bot_id")?);
    let nonce = new_api_key_nonce();
    let for_key = nonce.clone();
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::users::regenerate_bot_key(s, ctx, target, nonce.clone())
        })
        .await?;
    Ok(params.success(json!({ "api_key": state.secret.api_key(target, &for_key) })))
}

/// `GET /bots/{bot_id}/api_key`: the key of a bot the caller manages.
pub async fn get_bot_key(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let target = UserId(path_id(&req, "bot_id")?);
    let key = state.engine.read(|s| {
        let ctx = Ctx {
            now_ms: 0,
            actor: Some(auth.user_id),
        };
        crate::commands::users::managed_bot(s, &ctx, target)
            .map(|bot| state.secret.api_key(target, &bot.api_key_nonce))
    })?;
    Ok(params.success(json!({ "api_key": key })))
}

/// `PUT /bot_storage`: `storage` is a JSON object of text values.
pub async fn update_storage(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let entries: std::collections::BTreeMap<String, String> = params
        .json("storage")?
        .ok_or_else(|| ApiError::missing("storage"))?;
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::storage::set_storage(s, ctx, entries.clone())
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `GET /bot_storage`: the values of `keys` (a JSON list; every key when absent).
pub async fn get_storage(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let keys: Option<Vec<String>> = params.json("keys")?;
    let storage = state.engine.read(|s| {
        let stored = s.bot_storage.of(auth.user_id);
        match keys {
            None => Ok(json!(stored.cloned().unwrap_or_default())),
            Some(keys) => keys
                .into_iter()
                .map(|key| match stored.and_then(|m| m.get(&key)) {
                    Some(value) => Ok((key, json!(value))),
                    None => Err(ApiError::bad_request("Key does not exist.")),
                })
                .collect::<ApiResult<serde_json::Map<_, _>>>()
                .map(serde_json::Value::Object),
        }
    })?;
    Ok(params.success(json!({ "storage": storage })))
}

/// `DELETE /bot_storage`: removes `keys` (a JSON list; every key when absent).
pub async fn remove_storage(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let keys: Option<Vec<String>> = params.json("keys")?;
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::storage::remove_storage(s, ctx, keys.clone())
        })
        .await?;
    Ok(params.success(json!({})))
}

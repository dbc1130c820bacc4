//! Bots: `POST /bots`, `GET /bots`, `DELETE /bots/{bot_id}`, and the bot object of `realm_bots`
//! and `realm_bot` events.

use super::users::{avatar_url, email_domain};
use super::{path_id, AppState, Auth, Params, Site};
use crate::auth::{new_api_key_nonce, ServerSecret};
use crate::commands::is_http_url;
use crate::commands::users::{human_member, NewBot, GENERIC_BOT, OUTGOING_WEBHOOK_BOT};
use crate::engine::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::BotService;
use crate::ids::{ChannelId, UserId};
use crate::projections::{Projections, User};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

fn channel_name(state: &Projections, id: Option<ChannelId>) -> Value {
    id.and_then(|id| state.channels.get(id))
        .map_or(Value::Null, |c| json!(c.name))
}

/// The three default-channel fields every bot shape carries.
fn defaults(state: &Projections, bot: &User) -> [(&'static str, Value); 3] {
    let config = bot.bot.as_deref();
    [
        (
            "default_sending_stream",
            channel_name(state, config.and_then(|c| c.default_sending_stream)),
        ),
        (
            "default_events_register_stream",
            channel_name(state, config.and_then(|c| c.default_events_register_stream)),
        ),
        (
            "default_all_public_streams",
            json!(config.is_some_and(|c| c.default_all_public_streams)),
        ),
    ]
}

/// The token an outgoing webhook bot's service sends along, derived like API keys so that
/// no secret is stored in the log.
pub fn service_token(secret: &ServerSecret, bot: &User) -> String {
    secret.api_key(bot.user_id, &format!("service:{}", bot.api_key_nonce))
}

/// A bot as `/register`'s `realm_bots` and `realm_bot` `add` events show it to its owner and
/// to administrators (the API key included, as Zulip does).
pub fn bot_json(state: &Projections, site: &Site, secret: &ServerSecret, bot: &User) -> Value {
    let mut map = serde_json::Map::new();
    map.insert("email".into(), json!(bot.email));
    map.insert("user_id".into(), json!(bot.user_id.0));
    map.insert("bot_type".into(), json!(bot.bot_type));
    map.insert("full_name".into(), json!(bot.full_name));
    map.insert("is_active".into(), json!(bot.is_active));
    map.insert(
        "api_key".into(),
        json!(secret.api_key(bot.user_id, &bot.api_key_nonce)),
    );
    map.insert("avatar_url".into(), json!(avatar_url(site, bot)));
    for (key, value) in defaults(state, bot) {
        map.insert(key.into(), value);
    }
    let services: Vec<Value> = bot
        .bot
        .iter()
        .flat_map(|c| c.services.iter())
        .map(|s| {
            json!({"base_url": s.base_url, "interface": s.interface, "token": service_token(secret, bot)})
        })
        .collect();
    map.insert("services".into(), Value::Array(services));
    if let Some(owner) = bot.bot_owner_id {
        map.insert("owner_id".into(), json!(owner.0));
    }
    Value::Object(map)
}

/// Who hears about a bot (`realm_bot` events, `realm_bots`): its owner, and active human
/// administrators unless one of its default channels is private.
pub fn bot_audience(state: &Projections, bot: &User) -> Vec<UserId> {
    let config = bot.bot.as_deref();
    let private = config
        .into_iter()
        .flat_map(|c| [c.default_sending_stream, c.default_events_register_stream])
        .flatten()
        .filter_map(|id| state.channels.get(id))
        .any(|c| c.invite_only);
    let mut audience: Vec<UserId> = bot.bot_owner_id.into_iter().collect();
    if !private {
        audience.extend(
            state
                .users
                .iter()
                .filter(|u| u.is_active && !u.is_bot() && u.role.is_admin())
                .map(|u| u.user_id)
                .filter(|id| Some(*id) != bot.bot_owner_id),
        );
    }
    audience
}

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
            crate::commands::users::create_bot(s, ctx, bot)
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
        for (key, value) in defaults(s, bot) {
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
                    for (key, value) in defaults(s, bot) {
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
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::users::deactivate_bot(s, ctx, target)
        })
        .await?;
    Ok(params.success(json!({})))
}

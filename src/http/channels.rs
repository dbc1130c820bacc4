//! Channels: `POST /channels/create`, `GET /streams`, `GET|PATCH|DELETE /streams/{stream_id}`,
//! `GET /streams/{stream_id}/members`, `GET /get_stream_id`, `GET /users/me/{stream_id}/topics`,
//! and the JSON forms of channels and subscriptions.

use super::wire::parse_group_setting;
use super::{path_id, AppState, Auth, Params};
use crate::commands::channels::{visible_channel, ChannelSpec, Retention};
use crate::error::{ApiError, ApiResult};
use crate::events::{ChannelChange, ChannelPermissions, GroupSetting, TopicsPolicy};
use crate::ids::{ChannelId, FolderId, GroupId, UserId};
use crate::projections::access;
use crate::projections::Access;
use crate::projections::{Channel, Projections, User};
use crate::render::channels::channel_json;
use crate::render::channels::visible_subscribers;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

/// Reads the optional group-setting parameters of channel creation.
fn permission_params(params: &mut Params) -> ApiResult<Vec<(String, GroupSetting)>> {
    let mut out = Vec::new();
    for name in ChannelPermissions::NAMES {
        if let Some(value) = params.json::<Value>(name)? {
            out.push(((*name).to_owned(), parse_group_setting(name, &value)?));
        }
    }
    Ok(out)
}

/// The channel settings shared by `POST /channels/create` and `POST /users/me/subscriptions`.
pub fn channel_spec_params(params: &mut Params) -> ApiResult<ChannelSpec> {
    let topics_policy = match params.str("topics_policy") {
        None => None,
        Some(raw) => Some(
            TopicsPolicy::parse(raw.trim().trim_matches('"')).ok_or_else(|| {
                ApiError::bad_request("Invalid topics_policy").with("var_name", "topics_policy")
            })?,
        ),
    };
    Ok(ChannelSpec {
        name: String::new(),
        description: String::new(),
        invite_only: params.bool("invite_only")?.unwrap_or(false),
        is_web_public: params.bool("is_web_public")?.unwrap_or(false),
        history_public_to_subscribers: params.bool("history_public_to_subscribers")?,
        message_retention_days: params
            .str("message_retention_days")
            .map(|raw| Retention::parse(&raw))
            .transpose()?,
        folder_id: params.int::<u64>("folder_id")?.map(FolderId),
        topics_policy,
        is_default: params.bool("is_default_stream")?.unwrap_or(false),
        permissions: permission_params(params)?,
    })
}

/// `POST /channels/create`.
pub async fn create_channel(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let name = params.required_str("name")?;
    let subscribers: Vec<u64> = params
        .json("subscribers")?
        .ok_or_else(|| ApiError::missing("subscribers"))?;
    let description = params.str("description").unwrap_or_default();
    let spec = ChannelSpec {
        name,
        description,
        ..channel_spec_params(&mut params)?
    };
    let announce = params.bool("announce")?.unwrap_or(false);
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::channels::create_channel(
                s,
                ctx,
                spec.clone(),
                subscribers.clone().into_iter().map(UserId).collect(),
                announce,
            )
        })
        .await?;
    Ok(params.success(json!({"id": committed.value.0})))
}

fn me<'a>(state: &'a Projections, auth: &Auth) -> ApiResult<&'a User> {
    state
        .users
        .get(auth.user_id)
        .ok_or_else(|| ApiError::internal("authenticated user missing"))
}

/// `GET /streams`.
pub async fn get_streams(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let include_public = params.bool("include_public")?.unwrap_or(true);
    let include_web_public = params.bool("include_web_public")?.unwrap_or(false);
    let include_subscribed = params.bool("include_subscribed")?.unwrap_or(true);
    let exclude_archived = params.bool("exclude_archived")?.unwrap_or(true);
    let include_all = params.bool("include_all")?.unwrap_or(false)
        | params.bool("include_all_active")?.unwrap_or(false);
    let include_default = params.bool("include_default")?.unwrap_or(false);
    let include_owner_subscribed = params.bool("include_owner_subscribed")?.unwrap_or(false);
    let include_content = params.bool("include_can_access_content")?.unwrap_or(false);
    let streams = state.engine.read(|s| {
        let user = me(s, &auth)?;
        let owner_subscribed = |c: &Channel| {
            include_owner_subscribed
                && user.is_bot()
                && user
                    .bot_owner_id
                    .is_some_and(|o| s.channels.is_subscribed(o, c.id))
        };
        let mut channels: Vec<&Channel> = s
            .channels
            .iter()
            .filter(|c| !(exclude_archived && c.is_archived))
            .filter(|c| access(s, user, c) != Access::None)
            .filter(|c| {
                // `include_all`: every channel the user has metadata access to.
                include_all
                    || include_public && !c.invite_only && user.role != crate::events::Role::Guest
                    || include_web_public && c.is_web_public
                    || include_subscribed && s.channels.is_subscribed(user.user_id, c.id)
                    || include_default && c.is_default
                    || include_content && access(s, user, c) == Access::Content
                    || owner_subscribed(c)
            })
            .collect();
        channels.sort_by(|a, b| a.name.cmp(&b.name));
        Ok::<_, ApiError>(
            channels
                .into_iter()
                .map(|c| {
                    let mut value = channel_json(s, c);
                    if let (true, Value::Object(map)) = (include_default, &mut value) {
                        map.insert("is_default".into(), json!(c.is_default));
                    }
                    value
                })
                .collect::<Vec<_>>(),
        )
    })?;
    Ok(params.success(json!({"streams": streams})))
}

fn channel_id(req: &HttpRequest) -> ApiResult<ChannelId> {
    path_id(req, "stream_id").map(ChannelId)
}

/// `GET /streams/{stream_id}`.
pub async fn get_stream(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = channel_id(&req)?;
    let stream = state.engine.read(|s| {
        let user = me(s, &auth)?;
        visible_channel(s, user, id).map(|c| channel_json(s, c))
    })?;
    Ok(params.success(json!({"stream": stream})))
}

/// `GET /get_stream_id?stream=NAME`.
pub async fn get_stream_id(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let name = params.required_str("stream")?;
    let id = state.engine.read(|s| {
        let user = me(s, &auth)?;
        s.channels
            .by_name(&name)
            .filter(|c| access(s, user, c) == Access::Content)
            .map(|c| c.id.0)
            .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'")))
    })?;
    Ok(params.success(json!({"stream_id": id})))
}

/// `GET /streams/{stream_id}/members`.
pub async fn get_members(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = channel_id(&req)?;
    let subscribers = state.engine.read(|s| {
        let user = me(s, &auth)?;
        let channel = visible_channel(s, user, id)?;
        visible_subscribers(s, user, channel).ok_or_else(|| {
            ApiError::bad_request("Unable to retrieve subscribers for private channel")
        })
    })?;
    Ok(params.success(json!({"subscribers": subscribers})))
}

/// `GET /users/me/{stream_id}/topics`: topics with their newest message id, newest first; the
/// empty topic shows as its display name unless `allow_empty_topic_name`.
pub async fn get_topics(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = channel_id(&req)?;
    let allow_empty = params.bool("allow_empty_topic_name")?.unwrap_or(false);
    let topics = state.engine.read(|s| {
        let user = me(s, &auth)?;
        let channel = visible_channel(s, user, id)?;
        if access(s, user, channel) != Access::Content {
            return Err(ApiError::bad_request("Invalid channel ID"));
        }
        Ok(s.messages
            .topics(id)
            .into_iter()
            .filter(|(_, max_id)| {
                // Protected history: only topics with messages the user received.
                channel.history_public_to_subscribers || s.messages.flags(user.user_id, *max_id).is_some()
            })
            .map(|(name, max_id)| json!({"max_id": max_id.0, "name": crate::render::messages::shown_topic(&name, allow_empty)}))
            .collect::<Vec<_>>())
    })?;
    Ok(params.success(json!({"topics": topics})))
}

/// A `{"new": value, "old": value}` group-setting change (the `old` part is checked).
fn setting_change(
    name: &str,
    value: &Value,
    current: Option<&GroupSetting>,
) -> ApiResult<GroupSetting> {
    let Value::Object(map) = value else {
        return Err(ApiError::bad_request(format!("Invalid {name}")));
    };
    let new = map
        .get("new")
        .ok_or_else(|| ApiError::bad_request(format!("Invalid {name}")))?;
    if let (Some(old), Some(current)) = (map.get("old"), current) {
        if parse_group_setting(name, old)? != *current {
            return Err(ApiError::new(
                crate::error::ErrorCode::ExpectationMismatch,
                "'old' value does not match the expected value.",
            ));
        }
    }
    parse_group_setting(name, new)
}

/// Reads every `can_*_group` change of a PATCH request (shared with user groups).
pub fn permission_changes(
    params: &mut Params,
    names: &[&str],
    current: impl Fn(&str) -> Option<GroupSetting>,
) -> ApiResult<Vec<(String, GroupSetting)>> {
    let mut out = Vec::new();
    for name in names {
        if let Some(value) = params.json::<Value>(name)? {
            out.push((
                (*name).to_owned(),
                setting_change(name, &value, current(name).as_ref())?,
            ));
        }
    }
    Ok(out)
}

/// `PATCH /streams/{stream_id}`.
pub async fn update_stream(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = channel_id(&req)?;
    let current = state.engine.read(|s| {
        let user = me(s, &auth)?;
        visible_channel(s, user, id).cloned()
    })?;
    let mut changes = Vec::new();
    if let Some(name) = params.str("new_name") {
        if name.trim() == current.name {
            return Err(ApiError::bad_request("Channel already has that name."));
        }
        changes.push(ChannelChange::Name(name));
    }
    if let Some(text) = params.str("description") {
        changes.push(ChannelChange::Description(text));
    }
    let is_private = params.bool("is_private")?;
    let is_web_public = params.bool("is_web_public")?;
    let history = params.bool("history_public_to_subscribers")?;
    if is_private.is_some() || is_web_public.is_some() || history.is_some() {
        let invite_only = is_private.unwrap_or(current.invite_only);
        if !invite_only && history == Some(false) {
            return Err(ApiError::bad_request("Invalid parameters"));
        }
        changes.push(ChannelChange::Privacy {
            invite_only,
            history_public_to_subscribers: history.unwrap_or(if invite_only {
                current.history_public_to_subscribers
            } else {
                true
            }),
            is_web_public: is_web_public.unwrap_or(current.is_web_public),
        });
    }
    if let Some(raw) = params.str("message_retention_days") {
        changes.push(ChannelChange::MessageRetentionDays(
            Retention::parse(&raw)?.stored(),
        ));
    }
    if params.has("folder_id") {
        let folder: Option<u64> = params.json("folder_id")?.flatten();
        changes.push(ChannelChange::Folder(folder.map(FolderId)));
    }
    if let Some(raw) = params.str("topics_policy") {
        let policy = TopicsPolicy::parse(raw.trim().trim_matches('"')).ok_or_else(|| {
            ApiError::bad_request("Invalid topics_policy").with("var_name", "topics_policy")
        })?;
        changes.push(ChannelChange::TopicsPolicy(policy));
    }
    if let Some(flag) = params.bool("is_default_stream")? {
        changes.push(ChannelChange::DefaultForNewUsers(flag));
    }
    // Only unarchiving acts here; archiving is `DELETE /streams/{id}`.
    if params.bool("is_archived")? == Some(false) {
        if !current.is_archived {
            return Err(ApiError::bad_request(
                "Channel is not currently deactivated",
            ));
        }
        changes.push(ChannelChange::Archived(false));
    }
    for (setting, value) in permission_changes(&mut params, ChannelPermissions::NAMES, |n| {
        current.permissions.get(n).cloned()
    })? {
        // Setting a value equal to the current one changes nothing.
        if current.permissions.get(&setting) != Some(&value) {
            changes.push(ChannelChange::Permission { setting, value });
        }
    }
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::channels::change_channel(s, ctx, id, changes.clone())
        })
        .await
}

/// `DELETE /streams/{stream_id}`: archives the channel.
pub async fn archive_stream(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = channel_id(&req)?;
    state
        .answer(&auth, params, move |s, ctx| {
            if s.channels.get(id).is_some_and(|c| c.is_archived) {
                return Err(ApiError::bad_request("Channel is already deactivated"));
            }
            crate::commands::channels::change_channel(
                s,
                ctx,
                id,
                vec![ChannelChange::Archived(true)],
            )
        })
        .await
}

/// Group ids of a list parameter.
pub fn group_ids(params: &mut Params, name: &str) -> ApiResult<Vec<GroupId>> {
    Ok(params
        .json::<Vec<u64>>(name)?
        .unwrap_or_default()
        .into_iter()
        .map(GroupId)
        .collect())
}

/// `POST /default_stream_groups/create`: `group_name`, `description`, `stream_names`.
pub async fn create_default_group(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let name = params
        .str("group_name")
        .ok_or_else(|| ApiError::missing("group_name"))?;
    let description = params
        .str("description")
        .ok_or_else(|| ApiError::missing("description"))?;
    let channels: Vec<String> = params
        .json("stream_names")?
        .ok_or_else(|| ApiError::missing("stream_names"))?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::default_groups::create(s, ctx, &name, &description, &channels)
        })
        .await
}

/// `PATCH /default_stream_groups/{group_id}`: `new_group_name`, `new_description`.
pub async fn change_default_group(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let id = path_id(&req, "group_id")?;
    let name = params.str("new_group_name");
    let description = params.str("new_description");
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::default_groups::change(
                s,
                ctx,
                id,
                name.as_deref(),
                description.as_deref(),
            )
        })
        .await
}

/// `PATCH /default_stream_groups/{group_id}/streams`: `op` `add` or `remove`, `stream_names`.
pub async fn change_default_group_channels(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let id = path_id(&req, "group_id")?;
    let add = match params
        .str("op")
        .ok_or_else(|| ApiError::missing("op"))?
        .as_str()
    {
        "add" => true,
        "remove" => false,
        _ => {
            return Err(ApiError::bad_request(
                "Invalid value for \"op\". Specify one of \"add\" or \"remove\".",
            ))
        }
    };
    let channels: Vec<String> = params
        .json("stream_names")?
        .ok_or_else(|| ApiError::missing("stream_names"))?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::default_groups::change_channels(s, ctx, id, add, &channels)
        })
        .await
}

/// `DELETE /default_stream_groups/{group_id}`.
pub async fn remove_default_group(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let id = path_id(&req, "group_id")?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::default_groups::remove(s, ctx, id)
        })
        .await
}

/// `GET /default_streams`: the channels new users are subscribed to.
pub async fn get_default_streams(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let streams = state.engine.read(|s| {
        let user = me(s, &auth)?;
        Ok::<_, ApiError>(
            s.channels
                .iter()
                .filter(|c| c.is_default && !c.is_archived && access(s, user, c) != Access::None)
                .map(|c| channel_json(s, c))
                .collect::<Vec<_>>(),
        )
    })?;
    Ok(params.success(json!({"default_streams": streams})))
}

/// `POST /default_streams` / `DELETE /default_streams` with `stream_id` (administrators).
async fn set_default(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
    default: bool,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let id = ChannelId(params.required_int::<u64>("stream_id")?);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::channels::set_default_channel(s, ctx, id, default)
        })
        .await
}

pub async fn add_default_stream(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    set_default(state, auth, params, true).await
}

pub async fn remove_default_stream(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    set_default(state, auth, params, false).await
}

/// How long `delete_topic` keeps deleting before it answers `complete: false` (Zulip's 50 s):
/// the client asks again for the rest.
const DELETE_TOPIC_TIME: std::time::Duration = std::time::Duration::from_secs(50);

/// `POST /streams/{stream_id}/delete_topic`: deletes the topic's messages in bounded steps,
/// each durable on its own.
pub async fn delete_topic(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let channel = ChannelId(
        path_id(&req, "stream_id").map_err(|_| ApiError::bad_request("Invalid channel ID"))?,
    );
    let topic = crate::projections::messages::topic_param(&params.required_str("topic_name")?);
    let started = std::time::Instant::now();
    loop {
        if started.elapsed() >= DELETE_TOPIC_TIME {
            return Ok(params.success(json!({"complete": false})));
        }
        let step_topic = topic.clone();
        let deleted = state
            .engine
            .execute(Some(auth.user_id), move |s, ctx| {
                crate::commands::delete::delete_topic_step(s, ctx, channel, &step_topic)
            })
            .await?;
        if deleted.value == 0 {
            return Ok(params.success(json!({"complete": true})));
        }
    }
}

/// `GET /streams/{stream_id}/email_address` (`sender_id`): the channel's address at the email
/// gateway, posting as the email gateway bot (no `sender_id`, or the bot's), the caller, or a
/// bot the caller administers; for a channel the caller may post in (Zulip's rules). Without a
/// gateway configured there is none.
pub async fn get_email_address(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let channel = ChannelId(
        path_id(&req, "stream_id").map_err(|_| ApiError::bad_request("Invalid channel ID"))?,
    );
    let sender_id: Option<u64> = params.int("sender_id")?;
    let address = state.engine.read(|s| {
        let me = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("user missing"))?;
        let found = s
            .channels
            .get(channel)
            .filter(|c| access(s, me, c) != Access::None)
            .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?;
        let Some(domain) = &state.email_gateway_domain else {
            return Err(ApiError::bad_request(
                "This server does not receive email, so channels have no email address.",
            ));
        };
        crate::commands::messages::check_may_post(s, me, found)?;
        let gateway_bot = s
            .users
            .system_bot(crate::commands::email_gateway::EMAIL_GATEWAY_BOT_EMAIL)
            .map(|u| u.user_id.0);
        let sender = match sender_id {
            None => crate::notify::gateway::address::GATEWAY_BOT,
            Some(id) if Some(id) == gateway_bot => crate::notify::gateway::address::GATEWAY_BOT,
            Some(id) if id == me.user_id.0 => me.user_id,
            Some(id) => {
                let bot = s
                    .users
                    .get(crate::ids::UserId(id))
                    .filter(|u| u.is_active && u.is_bot() && !u.is_system_bot())
                    .filter(|u| u.bot_owner_id == Some(me.user_id) || me.role.is_admin())
                    .ok_or_else(|| ApiError::bad_request("Invalid bot"))?;
                bot.user_id
            }
        };
        Ok(crate::notify::gateway::address::channel_address(
            &state.secret,
            domain,
            &found.name,
            channel,
            me.user_id,
            sender,
            true,
        ))
    })?;
    Ok(params.success(json!({"email": address})))
}

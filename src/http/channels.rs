//! Channels: `POST /channels/create`, `GET /streams`, `GET|PATCH|DELETE /streams/{stream_id}`,
//! `GET /streams/{stream_id}/members`, `GET /get_stream_id`, `GET /users/me/{stream_id}/topics`,
//! and the JSON forms of channels and subscriptions.

use super::wire::{parse_group_setting, render_group_setting};
use super::{path_id, AppState, Auth, Params};
use crate::commands::channels::{access, visible_channel, Access, ChannelSpec, Retention};
use crate::error::{ApiError, ApiResult};
use crate::events::{ChannelChange, ChannelPermissions, GroupSetting, SystemGroup, TopicsPolicy};
use crate::ids::{ChannelId, FolderId, GroupId, UserId};
use crate::projections::{Channel, Projections, Subscription, User};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};

/// Zulip's deprecated `stream_post_policy`, derived from `can_send_message_group`.
fn stream_post_policy(state: &Projections, channel: &Channel) -> u8 {
    let is = |kind| channel.permissions.can_send_message_group == state.groups.system_setting(kind);
    if is(SystemGroup::Administrators) {
        2
    } else if is(SystemGroup::FullMembers) {
        3
    } else if is(SystemGroup::Moderators) {
        4
    } else {
        1
    }
}

fn permissions_into(map: &mut Map<String, Value>, permissions: &ChannelPermissions) {
    for name in ChannelPermissions::NAMES {
        if let Some(setting) = permissions.get(name) {
            map.insert((*name).to_owned(), render_group_setting(setting));
        }
    }
}

/// A channel as `GET /streams` and `stream` events send it.
pub fn channel_json(state: &Projections, channel: &Channel) -> Value {
    let policy = stream_post_policy(state, channel);
    let mut map = Map::new();
    let mut put = |k: &str, v: Value| {
        map.insert(k.to_owned(), v);
    };
    put("stream_id", json!(channel.id.0));
    put("name", json!(channel.name));
    put("is_archived", json!(channel.is_archived));
    put("description", json!(channel.description));
    put("date_created", json!(channel.date_created_ms / 1000));
    put("creator_id", json!(channel.creator_id));
    put("invite_only", json!(channel.invite_only));
    put("rendered_description", json!(channel.rendered_description));
    put("is_web_public", json!(channel.is_web_public));
    put("stream_post_policy", json!(policy));
    put(
        "message_retention_days",
        json!(channel.message_retention_days),
    );
    put(
        "history_public_to_subscribers",
        json!(channel.history_public_to_subscribers),
    );
    put("topics_policy", json!(channel.topics_policy.as_str()));
    put(
        "first_message_id",
        json!(first_message_id(state, channel.id)),
    );
    put("folder_id", json!(channel.folder_id));
    let (weekly_traffic, recently_active) = activity(state, channel);
    put("is_recently_active", json!(recently_active));
    put("is_announcement_only", json!(policy == 2));
    permissions_into(&mut map, &channel.permissions);
    map.insert("stream_weekly_traffic".into(), weekly_traffic);
    map.insert(
        "subscriber_count".into(),
        json!(subscriber_count(state, channel)),
    );
    Value::Object(map)
}

const DAY_SECS: i64 = 86_400;

/// Zulip's `stream_weekly_traffic` and `is_recently_active` for `channel` now: the average
/// number of messages a week over the last four weeks (null for channels younger than a week;
/// at least 1 when there was any traffic; two significant digits), and whether the channel is
/// younger than 180 days or had a message in the last 180 days.
fn activity(state: &Projections, channel: &Channel) -> (Value, bool) {
    activity_at(state, channel, crate::time::now_ms() / 1000)
}

fn activity_at(state: &Projections, channel: &Channel, now: i64) -> (Value, bool) {
    let age_days = (now - channel.date_created_ms / 1000) / DAY_SECS;
    let timestamps = || {
        state
            .messages
            .in_channel(channel.id)
            .into_iter()
            .flatten()
            .rev()
            .filter_map(|id| state.messages.get(*id))
            .map(|m| m.timestamp)
    };
    let recent = age_days < 180
        || timestamps()
            .next()
            .is_some_and(|t| now - t < 180 * DAY_SECS);
    if age_days < 7 {
        return (Value::Null, recent);
    }
    // Newest first, so the walk stops at the first message older than four weeks.
    let count = timestamps().take_while(|t| now - t < 28 * DAY_SECS).count() as i64;
    let mut weekly = if age_days < 28 {
        count * 7 / age_days
    } else {
        count / 4
    };
    if weekly == 0 && count > 0 {
        weekly = 1;
    }
    (json!(round_significant(weekly, 2)), recent)
}

/// `n` rounded to `digits` significant digits (1234 → 1200).
fn round_significant(n: i64, digits: u32) -> i64 {
    let magnitude = n.abs().checked_ilog10().unwrap_or(0) + 1;
    if magnitude <= digits {
        return n;
    }
    let unit = 10_i64.pow(magnitude - digits);
    (n + unit / 2) / unit * unit
}

/// The channel's oldest message id (null in JSON without messages).
pub fn first_message_id(state: &Projections, channel: ChannelId) -> Option<u64> {
    state
        .messages
        .in_channel(channel)
        .and_then(|ids| ids.first())
        .map(|id| id.0)
}

/// Active, non-deactivated subscribers, bots included.
fn subscriber_count(state: &Projections, channel: &Channel) -> usize {
    channel
        .subscribers
        .iter()
        .filter(|u| state.users.get(**u).is_some_and(|u| u.is_active))
        .count()
}

/// Subscribers a user may see: all of them where the user can reach the content.
pub fn visible_subscribers(
    state: &Projections,
    user: &User,
    channel: &Channel,
) -> Option<Vec<u64>> {
    (access(state, user, channel) == Access::Content || user.role.is_admin()).then(|| {
        channel
            .subscribers
            .iter()
            .filter(|u| state.users.get(**u).is_some_and(|u| u.is_active))
            .map(|u| u.0)
            .collect()
    })
}

/// A subscription as `GET /users/me/subscriptions` and `subscription` events send it.
/// A subscription's notification settings with the user setting each one falls back to.
pub const NOTIFICATION_DEFAULTS: [(&str, &str); 5] = [
    (
        "desktop_notifications",
        "enable_stream_desktop_notifications",
    ),
    ("email_notifications", "enable_stream_email_notifications"),
    ("push_notifications", "enable_stream_push_notifications"),
    (
        "audible_notifications",
        "enable_stream_audible_notifications",
    ),
    ("wildcard_mentions_notify", "wildcard_mentions_notify"),
];

/// For clients without `notification_settings_null`: a subscription's notification settings
/// that follow the user's defaults (null) are shown as those defaults, as Zulip does.
pub fn fill_notification_defaults(state: &Projections, user: UserId, subscription: &mut Value) {
    for (field, setting) in NOTIFICATION_DEFAULTS {
        if subscription.get(field).is_some_and(Value::is_null) {
            subscription[field] = crate::projections::user_settings::value_json(
                &state.user_settings.get(user, setting),
            );
        }
    }
}

pub fn subscription_json(
    state: &Projections,
    user: &User,
    channel: &Channel,
    sub: &Subscription,
    include_subscribers: bool,
) -> Value {
    let policy = stream_post_policy(state, channel);
    let mut map = Map::new();
    let mut put = |k: &str, v: Value| {
        map.insert(k.to_owned(), v);
    };
    put("stream_id", json!(channel.id.0));
    put("name", json!(channel.name));
    put("description", json!(channel.description));
    put("rendered_description", json!(channel.rendered_description));
    put("date_created", json!(channel.date_created_ms / 1000));
    put("creator_id", json!(channel.creator_id));
    put("invite_only", json!(channel.invite_only));
    if include_subscribers {
        put(
            "subscribers",
            json!(visible_subscribers(state, user, channel).unwrap_or_default()),
        );
    }
    put("desktop_notifications", json!(sub.desktop_notifications));
    put("email_notifications", json!(sub.email_notifications));
    put(
        "wildcard_mentions_notify",
        json!(sub.wildcard_mentions_notify),
    );
    put("push_notifications", json!(sub.push_notifications));
    put("audible_notifications", json!(sub.audible_notifications));
    put("pin_to_top", json!(sub.pin_to_top));
    put("is_muted", json!(sub.is_muted));
    put("in_home_view", json!(!sub.is_muted));
    put("is_announcement_only", json!(policy == 2));
    put("is_web_public", json!(channel.is_web_public));
    put("color", json!(sub.color));
    put("stream_post_policy", json!(policy));
    put(
        "message_retention_days",
        json!(channel.message_retention_days),
    );
    put(
        "history_public_to_subscribers",
        json!(channel.history_public_to_subscribers),
    );
    put(
        "first_message_id",
        json!(first_message_id(state, channel.id)),
    );
    put("folder_id", json!(channel.folder_id));
    put("topics_policy", json!(channel.topics_policy.as_str()));
    let (weekly_traffic, recently_active) = activity(state, channel);
    put("is_recently_active", json!(recently_active));
    put("stream_weekly_traffic", weekly_traffic);
    permissions_into(&mut map, &channel.permissions);
    map.insert("is_archived".into(), json!(channel.is_archived));
    map.insert(
        "subscriber_count".into(),
        json!(subscriber_count(state, channel)),
    );
    Value::Object(map)
}

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
                spec,
                subscribers.into_iter().map(UserId).collect(),
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
            .map(|(name, max_id)| json!({"max_id": max_id.0, "name": super::messages::shown_topic(&name, allow_empty)}))
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
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::channels::change_channel(s, ctx, id, changes)
        })
        .await?;
    Ok(params.success(json!({})))
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
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
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
        .await?;
    Ok(params.success(json!({})))
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
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::channels::set_default_channel(s, ctx, id, default)
        })
        .await?;
    Ok(params.success(json!({})))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::channels::{create_channel, ChannelSpec};
    use crate::commands::messages::{send_message, ChannelRef, Destination};
    use crate::commands::users::{create_realm, NewUser};
    use crate::engine::Ctx;
    use crate::events::{Envelope, Event, Role, SCHEMA_VERSION};
    use crate::ids::{ChannelId, UserId};

    const DAY_MS: i64 = DAY_SECS * 1000;

    fn fold(state: &mut Projections, at: i64, events: Vec<Event>) {
        for event in events {
            let env = Envelope {
                seq: state.seq.next(),
                at,
                actor: None,
                schema_version: SCHEMA_VERSION,
                event,
            };
            state.apply(&env);
        }
    }

    /// A channel created on day 0 with one message on each of `days`.
    fn channel_with_messages(days: &[i64]) -> Projections {
        let mut state = Projections::default();
        let owner = NewUser {
            email: "o@example.com".into(),
            full_name: "O".into(),
            role: Role::Owner,
            password_hash: None,
            api_key_nonce: "n".into(),
        };
        let (events, _) = create_realm(&state, "Org", "", owner).unwrap();
        fold(&mut state, 0, events);
        let ctx = |at| Ctx {
            now_ms: at,
            actor: Some(UserId(1)),
        };
        let spec = ChannelSpec {
            name: "c".into(),
            ..ChannelSpec::default()
        };
        let (events, _) = create_channel(&state, &ctx(0), spec, vec![UserId(1)], false).unwrap();
        fold(&mut state, 0, events);
        for day in days {
            let to = Destination::Channel {
                channel: ChannelRef::Id(ChannelId(1)),
                topic: "t".into(),
            };
            let at = day * DAY_MS;
            let (events, _) = send_message(&state, &ctx(at), to, "hi", "test", None).unwrap();
            fold(&mut state, at, events);
        }
        state
    }

    fn at_day(state: &Projections, day: i64) -> (Value, bool) {
        let channel = state.channels.get(ChannelId(1)).unwrap();
        activity_at(state, channel, day * DAY_SECS)
    }

    #[test]
    fn weekly_traffic_and_recent_activity_follow_zulip() {
        // Too young to estimate; active because new.
        assert_eq!(
            at_day(&channel_with_messages(&[1, 2]), 3),
            (Value::Null, true)
        );
        // Two weeks old with 6 messages: 6 * 7 / 14 = 3 a week.
        let state = channel_with_messages(&[1, 2, 3, 10, 11, 12]);
        assert_eq!(at_day(&state, 14), (json!(3), true));
        // Past four weeks: only the last 28 days count, divided by 4; some traffic is at least 1.
        assert_eq!(at_day(&state, 39), (json!(1), true));
        assert_eq!(at_day(&state, 100), (json!(0), true));
        // Inactive after 180 days without messages (and older than 180 days).
        assert_eq!(at_day(&state, 200), (json!(0), false));
        assert_eq!(round_significant(1234, 2), 1200);
        assert_eq!(round_significant(1250, 2), 1300);
        assert_eq!(round_significant(99, 2), 99);
    }
}

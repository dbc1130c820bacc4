//! Subscriptions and topic visibility: `GET|POST|DELETE /users/me/subscriptions`,
//! `PATCH /users/me/subscriptions/{stream_id}`, `POST /users/me/subscriptions/properties`,
//! `POST /user_topics`, `PATCH /users/me/subscriptions/muted_topics`.

use super::channels::channel_spec_params;
use super::{path_id, AppState, Auth, Params};
use crate::commands::channels::{
    parse_subscription_property, ChannelSpec, ChannelWanted, SubscribeNotices,
};
use crate::commands::Decision;
use crate::error::{ApiError, ApiResult};
use crate::events::SubscriptionProperty;
use crate::events::TopicPolicy;
use crate::ids::{ChannelId, UserId};
use crate::projections::messages::topic_param;
use crate::projections::Projections;
use crate::render::channels::subscription_json;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// `GET /users/me/subscriptions`.
pub async fn get_subscriptions(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let include = match params
        .str("include_subscribers")
        .as_deref()
        .map(|v| v.trim().trim_matches('"'))
    {
        None | Some("false") => false,
        // Partial lists are optional for the server; below 250 subscribers they are full anyway.
        Some("true") | Some("partial") => true,
        Some(other) => {
            return Err(ApiError::invalid("include_subscribers", other));
        }
    };
    let subscriptions = state.engine.read(|s| {
        let user = s
            .users
            .get(auth.user_id)
            .ok_or_else(|| ApiError::internal("user missing"))?;
        Ok::<_, ApiError>(
            s.channels
                .subscriptions_of(user.user_id)
                .filter(|(_, sub)| sub.active)
                .filter_map(|(id, sub)| {
                    s.channels
                        .get(id)
                        .map(|c| subscription_json(s, user, c, sub, include))
                })
                .collect::<Vec<_>>(),
        )
    })?;
    Ok(params.success(json!({"subscriptions": subscriptions})))
}

#[derive(Deserialize)]
struct ChannelRequest {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    color: Option<Value>,
}

impl ChannelRequest {
    /// The request checked: a color must be a hex color code.
    fn wanted(self) -> ApiResult<ChannelWanted> {
        let color = match self.color {
            None => None,
            Some(value) => match parse_subscription_property("color", &value)? {
                SubscriptionProperty::Color(color) => Some(color),
                _ => None,
            },
        };
        Ok(ChannelWanted {
            name: self.name,
            description: self.description.unwrap_or_default(),
            color,
        })
    }
}

/// `principals` as ids or emails.
fn principals(state: &Projections, params: &mut Params) -> ApiResult<Option<Vec<UserId>>> {
    let Some(values) = params.json::<Vec<Value>>("principals")? else {
        return Ok(None);
    };
    values
        .iter()
        .map(|v| match v {
            Value::Number(n) => n
                .as_u64()
                .map(UserId)
                .ok_or_else(|| ApiError::bad_request("No such user")),
            Value::String(email) => state
                .users
                .by_email(email)
                .map(|u| u.user_id)
                .ok_or_else(|| ApiError::bad_request("No such user")),
            _ => Err(ApiError::bad_request("No such user")),
        })
        .collect::<ApiResult<Vec<_>>>()
        .map(Some)
}

fn by_user(map: std::collections::BTreeMap<UserId, Vec<String>>) -> Value {
    Value::Object(
        map.into_iter()
            .map(|(k, v)| (k.0.to_string(), json!(v)))
            .collect::<Map<_, _>>(),
    )
}

/// `POST /users/me/subscriptions`: subscribe (and create channels the legacy way).
pub async fn subscribe(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let requested: Vec<ChannelRequest> = params
        .json("subscriptions")?
        .ok_or_else(|| ApiError::missing("subscriptions"))?;
    let principals = state.engine.read(|s| principals(s, &mut params))?;
    let fatal = params.bool("authorization_errors_fatal")?.unwrap_or(true);
    let template: ChannelSpec = channel_spec_params(&mut params)?;
    let notify = SubscribeNotices {
        announce: params.bool("announce")?.unwrap_or(false),
        notify_subscribed: params
            .bool("send_new_subscription_messages")?
            .unwrap_or(true),
    };
    let channels = requested
        .into_iter()
        .map(ChannelRequest::wanted)
        .collect::<ApiResult<Vec<_>>>()?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::channels::subscribe(
                s,
                ctx,
                channels.clone(),
                principals.clone(),
                template.clone(),
                fatal,
                notify,
            )
        })
        .await?;
    let outcome = committed.value;
    let mut body = json!({
        "subscribed": by_user(outcome.subscribed),
        "already_subscribed": by_user(outcome.already_subscribed),
    });
    if !fatal {
        body["unauthorized"] = json!(outcome.unauthorized);
    }
    if notify.notify_subscribed {
        body["new_subscription_messages_sent"] = json!(outcome.new_subscription_messages_sent);
    }
    Ok(params.success(body))
}

/// `DELETE /users/me/subscriptions`.
pub async fn unsubscribe(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let names: Vec<String> = params
        .json("subscriptions")?
        .ok_or_else(|| ApiError::missing("subscriptions"))?;
    let principals = state.engine.read(|s| principals(s, &mut params))?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::channels::unsubscribe(s, ctx, names.clone(), principals.clone())
        })
        .await?;
    let outcome = committed.value;
    Ok(params.success(json!({"removed": outcome.removed, "not_removed": outcome.not_removed})))
}

/// `PATCH /users/me/subscriptions`: the caller joins the channels of `add` (created if missing,
/// as `POST` does) and leaves those of `delete`, all or nothing.
pub async fn update_subscriptions(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let add = params
        .json::<Vec<ChannelRequest>>("add")?
        .unwrap_or_default()
        .into_iter()
        .map(ChannelRequest::wanted)
        .collect::<ApiResult<Vec<_>>>()?;
    let delete: Vec<String> = params.json("delete")?.unwrap_or_default();
    let template: ChannelSpec = channel_spec_params(&mut params)?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::channels::update_subscriptions(
                s,
                ctx,
                add.clone(),
                delete.clone(),
                template.clone(),
            )
        })
        .await?;
    let (joined, left) = committed.value;
    Ok(params.success(json!({
        "subscribed": by_user(joined.subscribed),
        "already_subscribed": by_user(joined.already_subscribed),
        "removed": left.removed,
        "not_removed": left.not_removed,
    })))
}

/// A property value: JSON when it parses as JSON, else the raw string (a color such as
/// `#abcdef` arrives unquoted).
fn property_value(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// `PATCH /users/me/subscriptions/{stream_id}`.
pub async fn update_subscription(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let channel = ChannelId(path_id(&req, "stream_id")?);
    let property = params.required_str("property")?;
    let value = property_value(&params.required_str("value")?);
    let parsed = parse_subscription_property(&property, &value)?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::channels::set_subscription_properties(
                s,
                ctx,
                vec![(channel, parsed.clone())],
            )
        })
        .await
}

#[derive(Deserialize)]
struct PropertyChange {
    stream_id: u64,
    property: String,
    value: Value,
}

/// `POST /users/me/subscriptions/properties`.
pub async fn update_subscription_properties(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let data: Vec<Value> = params
        .json("subscription_data")?
        .ok_or_else(|| ApiError::missing("subscription_data"))?;
    let mut changes = Vec::new();
    for (index, item) in data.iter().enumerate() {
        let change: PropertyChange = serde_json::from_value(item.clone()).map_err(|_| {
            ApiError::invalid(&format!("subscription_data[{index}]"), &item.to_string())
        })?;
        let parsed = parse_subscription_property(&change.property, &change.value).map_err(|e| {
            match e.body()["msg"].as_str() {
                Some(msg) if msg.ends_with("valid hex color code") => ApiError::bad_request(
                    format!("Invalid subscription_data[{index}]: Value error, {msg}"),
                ),
                _ => e,
            }
        })?;
        changes.push((ChannelId(change.stream_id), parsed));
    }
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::channels::set_subscription_properties(s, ctx, changes.clone())
        })
        .await
}

/// `POST /user_topics`.
pub async fn update_user_topic(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let channel = ChannelId(params.required_int::<u64>("stream_id")?);
    let topic = topic_param(&params.required_str("topic")?);
    let policy: i64 = params.required_int("visibility_policy")?;
    let policy = u8::try_from(policy)
        .ok()
        .and_then(TopicPolicy::from_code)
        .ok_or_else(|| {
            ApiError::bad_request("Invalid visibility_policy").with("var_name", "visibility_policy")
        })?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::channels::set_topic_visibility(s, ctx, channel, topic.clone(), policy)
        })
        .await
}

/// `PATCH /users/me/subscriptions/muted_topics` (deprecated): mute or unmute by channel id or
/// name; repeating the current state is not an error (feature level 169).
pub async fn update_muted_topic(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let by_id = params.int::<u64>("stream_id")?;
    let by_name = params.str("stream");
    let topic = topic_param(&params.required_str("topic")?);
    let op = params.required_str("op")?;
    let channel = match (by_id, by_name) {
        (Some(_), Some(_)) => {
            let parameters = "stream_id, stream";
            return Err(ApiError::bad_request(format!(
                "Unsupported parameter combination: {parameters}"
            ))
            .with("parameters", parameters));
        }
        (None, None) => return Err(ApiError::missing("stream_id")),
        (Some(id), None) => ChannelId(id),
        (None, Some(name)) => state.engine.read(|s| {
            s.channels
                .by_name(&name)
                .map(|c| c.id)
                .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'")))
        })?,
    };
    let policy = match op.as_str() {
        "add" => TopicPolicy::Muted,
        "remove" => TopicPolicy::None,
        other => return Err(ApiError::invalid("op", other)),
    };
    state
        .answer(&auth, params, move |s, ctx| {
            let me = crate::commands::actor(s, ctx)?;
            // This legacy endpoint mutes only in channels the caller is subscribed to.
            if policy == TopicPolicy::Muted {
                crate::commands::channels::visible_channel(s, me, channel)?;
                if !s.channels.is_subscribed(me.user_id, channel) {
                    return Err(ApiError::bad_request(format!(
                        "Not subscribed to channel ID {channel}"
                    )));
                }
            }
            if policy == TopicPolicy::None {
                if s.channels.get(channel).is_none() {
                    return Err(ApiError::bad_request("Topic is not muted"));
                }
                // Unmuting a topic that is not muted changes nothing (feature level 169).
                if s.user_topics.policy(me.user_id, channel, &topic) != TopicPolicy::Muted {
                    return Ok(Decision::events(Vec::new()));
                }
            }
            crate::commands::channels::set_topic_visibility(s, ctx, channel, topic.clone(), policy)
        })
        .await
}

/// `GET /users/{user_id}/subscriptions/{stream_id}`: whether a user is subscribed to a channel
/// the caller can see.
pub async fn get_subscription_status(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let user_id = UserId(path_id(&req, "user_id")?);
    let channel_id = ChannelId(path_id(&req, "stream_id")?);
    let subscribed = state.engine.read(|s| {
        let (me, user) = caller_and_user(s, &auth, user_id)?;
        let channel = crate::commands::channels::visible_channel(s, me, channel_id)?;
        Ok::<bool, ApiError>(s.channels.is_subscribed(user.user_id, channel.id))
    })?;
    Ok(params.success(json!({ "is_subscribed": subscribed })))
}

/// `GET /users/{user_id}/channels` (Zulip 12, feature level 440): the ids of the channels a
/// user is subscribed to, of those whose subscribers the caller may see (an administrator sees
/// them all), ascending.
pub async fn get_user_channels(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let user_id =
        UserId(path_id(&req, "user_id").map_err(|_| ApiError::bad_request("No such user"))?);
    let ids = state.engine.read(|s| {
        let (me, user) = caller_and_user(s, &auth, user_id)?;
        let ids: Vec<u64> = s
            .channels
            .subscriptions_of(user.user_id)
            .filter(|(_, subscription)| subscription.active)
            .filter_map(|(id, _)| s.channels.get(id))
            .filter(|channel| {
                crate::render::channels::visible_subscribers(s, me, channel).is_some()
            })
            .map(|channel| channel.id.0)
            .collect();
        Ok::<_, ApiError>(ids)
    })?;
    Ok(params.success(json!({ "subscribed_channel_ids": ids })))
}

/// The caller, and the person a path names ("No such user" for nobody or a system bot).
fn caller_and_user<'a>(
    s: &'a crate::projections::Projections,
    auth: &Auth,
    user_id: UserId,
) -> ApiResult<(&'a crate::projections::User, &'a crate::projections::User)> {
    let me = s
        .users
        .get(auth.user_id)
        .ok_or_else(|| ApiError::internal("authenticated user missing"))?;
    let user = s
        .users
        .get(user_id)
        .filter(|u| !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    Ok((me, user))
}

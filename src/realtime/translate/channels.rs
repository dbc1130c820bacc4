//! `stream`, `subscription`, `default_streams` and `channel_folder` events.

use super::audience::{active, channel_audience, channel_update, peer_audience, to_all};
use super::event::{ClientEvent, Deliveries, Variants};
use crate::events::{ChannelChange, NewSubscription, SubscriptionProperty};
use crate::ids::{ChannelId, FolderId, UserId};
use crate::projections::{access, Access, Folders, Projections, User};
use crate::render::channels::{channel_json, default_channel_ids, subscription_json};
use crate::render::groups::render_group_setting;
use serde_json::{json, Value};

/// `stream` `create` for those who may see the new channel.
pub fn channel_created(state: &Projections, channel_id: ChannelId) -> Deliveries {
    let Some(channel) = state.channels.get(channel_id) else {
        return Deliveries::new();
    };
    let event =
        json!({"type": "stream", "op": "create", "streams": [channel_json(state, channel)]});
    channel_audience(state, channel)
        .map(|u| (u.user_id, event.clone()))
        .collect()
}

/// The `stream` `update` (or `default_streams`) a change of a channel's settings means.
pub fn channel_changed(
    state: &Projections,
    channel_id: ChannelId,
    change: &ChannelChange,
) -> Deliveries {
    let update = |property: &str, value: Value| {
        channel_update(state, channel_id, property, value, json!({}))
    };
    match change {
        ChannelChange::Name(name) => {
            // Zulip names the channel by its old name in the rename event.
            let old = state
                .channels
                .get(channel_id)
                .and_then(|c| c.previous_name.clone());
            channel_update(state, channel_id, "name", json!(name), json!({"name": old}))
        }
        ChannelChange::Description(_) => {
            let Some(c) = state.channels.get(channel_id) else {
                return Deliveries::new();
            };
            channel_update(
                state,
                channel_id,
                "description",
                json!(c.description),
                json!({"rendered_description": c.rendered_description}),
            )
        }
        ChannelChange::Privacy {
            invite_only,
            history_public_to_subscribers,
            is_web_public,
        } => privacy_changed(
            state,
            channel_id,
            *invite_only,
            json!({"history_public_to_subscribers": history_public_to_subscribers, "is_web_public": is_web_public}),
        ),
        ChannelChange::MessageRetentionDays(days) => update("message_retention_days", json!(days)),
        ChannelChange::Folder(folder) => update("folder_id", json!(folder)),
        ChannelChange::TopicsPolicy(policy) => update("topics_policy", json!(policy.as_str())),
        ChannelChange::Permission { setting, value } => {
            update(setting, render_group_setting(value))
        }
        ChannelChange::Archived(flag) => {
            // Clients without the `archived_channels` capability see a deletion (or a
            // creation when unarchived) instead.
            let stream = state
                .channels
                .get(channel_id)
                .map(|c| channel_json(state, c));
            update("is_archived", json!(flag))
                .into_iter()
                .map(|event| ClientEvent {
                    variants: Variants {
                        archived_channel: stream.clone(),
                        ..Variants::default()
                    },
                    ..event
                })
                .collect()
        }
        ChannelChange::DefaultForNewUsers(_) => to_all(
            state,
            json!({"type": "default_streams", "default_streams": default_channel_ids(state)}),
        ),
    }
}

/// A change of `invite_only`: an `update` for those who saw the channel before, and a
/// `create` or `delete` for those who start or stop seeing it.
fn privacy_changed(
    state: &Projections,
    channel_id: ChannelId,
    invite_only: bool,
    extra: Value,
) -> Deliveries {
    let Some(channel) = state.channels.get(channel_id) else {
        return Deliveries::new();
    };
    // Who could see the channel before the change: judged on the channel as it was.
    let mut before = channel.clone();
    before.invite_only = !invite_only;
    let saw = |u: &User| access(state, u, &before) != Access::None;
    let sees = |u: &User| access(state, u, channel) != Access::None;
    let stream = channel_json(state, channel);
    let mut out: Deliveries =
        channel_update(state, channel_id, "invite_only", json!(invite_only), extra)
            .into_iter()
            .filter(|e| state.users.get(e.user_id).is_some_and(saw))
            .collect();
    for user in active(state) {
        if sees(user) && !saw(user) {
            out.push((
                user.user_id,
                json!({"type": "stream", "op": "create", "streams": [stream]}),
            ));
        } else if saw(user) && !sees(user) {
            out.push((user.user_id, json!({"type": "stream", "op": "delete", "streams": [stream], "stream_ids": [channel_id.0]})));
        }
    }
    out
}

/// `subscription` `add` for the new subscribers and `peer_add` for those who see subscribers.
pub fn subscribed(
    state: &Projections,
    channel_id: ChannelId,
    subscriptions: &[NewSubscription],
) -> Deliveries {
    let Some(channel) = state.channels.get(channel_id) else {
        return Deliveries::new();
    };
    let new: Vec<UserId> = subscriptions.iter().map(|s| s.user_id).collect();
    let mut out = Deliveries::new();
    for user_id in &new {
        let (Some(user), Some(sub)) = (
            state.users.get(*user_id),
            state.channels.subscription(*user_id, channel_id),
        ) else {
            continue;
        };
        out.push((*user_id, json!({"type": "subscription", "op": "add", "subscriptions": [subscription_json(state, user, channel, sub, true)]})));
    }
    let peer = json!({"type": "subscription", "op": "peer_add", "stream_ids": [channel_id.0], "user_ids": new});
    out.extend(
        peer_audience(state, channel)
            .filter(|u| !new.contains(&u.user_id))
            .map(|u| (u.user_id, peer.clone())),
    );
    out
}

/// `subscription` `remove` for those who left and `peer_remove` for those who see subscribers.
pub fn unsubscribed(state: &Projections, channel_id: ChannelId, user_ids: &[UserId]) -> Deliveries {
    let Some(channel) = state.channels.get(channel_id) else {
        return Deliveries::new();
    };
    let mut out: Deliveries = user_ids
        .iter()
        .map(|u| (*u, json!({"type": "subscription", "op": "remove", "subscriptions": [{"name": channel.name, "stream_id": channel_id.0}]})))
        .collect();
    let peer = json!({"type": "subscription", "op": "peer_remove", "stream_ids": [channel_id.0], "user_ids": user_ids});
    out.extend(
        peer_audience(state, channel)
            .filter(|u| !user_ids.contains(&u.user_id))
            .map(|u| (u.user_id, peer.clone())),
    );
    out
}

/// `subscription` `update`, to the subscriber alone.
pub fn subscription_changed(
    user_id: UserId,
    channel_id: ChannelId,
    property: &SubscriptionProperty,
) -> Deliveries {
    let update = |property: &str, value: Value| {
        (
            user_id,
            json!({"type": "subscription", "op": "update", "stream_id": channel_id.0, "property": property, "value": value}),
        )
    };
    let events = match property {
        // Muting sends both the legacy and the current property, legacy first.
        SubscriptionProperty::IsMuted(muted) => vec![
            update("in_home_view", json!(!muted)),
            update("is_muted", json!(muted)),
        ],
        SubscriptionProperty::Color(c) => vec![update("color", json!(c))],
        SubscriptionProperty::PinToTop(v) => vec![update("pin_to_top", json!(v))],
        SubscriptionProperty::DesktopNotifications(v) => {
            vec![update("desktop_notifications", json!(v))]
        }
        SubscriptionProperty::AudibleNotifications(v) => {
            vec![update("audible_notifications", json!(v))]
        }
        SubscriptionProperty::PushNotifications(v) => vec![update("push_notifications", json!(v))],
        SubscriptionProperty::EmailNotifications(v) => {
            vec![update("email_notifications", json!(v))]
        }
        SubscriptionProperty::WildcardMentionsNotify(v) => {
            vec![update("wildcard_mentions_notify", json!(v))]
        }
    };
    events.into()
}

/// `channel_folder` `add`.
pub fn folder_created(state: &Projections, folder_id: FolderId) -> Deliveries {
    let Some(folder) = state.folders.get(folder_id) else {
        return Deliveries::new();
    };
    to_all(
        state,
        json!({"type": "channel_folder", "op": "add", "channel_folder": Folders::to_json(folder)}),
    )
}

/// `channel_folder` `update`, one per changed property.
pub fn folder_changed(
    state: &Projections,
    folder_id: FolderId,
    name: Option<&String>,
    description_changed: bool,
    is_archived: Option<bool>,
) -> Deliveries {
    let mut out = Deliveries::new();
    let mut update = |data: Value| {
        out.extend(to_all(state, json!({"type": "channel_folder", "op": "update", "channel_folder_id": folder_id.0, "data": data})));
    };
    if let Some(name) = name {
        update(json!({"name": name}));
    }
    if description_changed {
        if let Some(folder) = state.folders.get(folder_id) {
            update(
                json!({"description": folder.description, "rendered_description": folder.rendered_description}),
            );
        }
    }
    if let Some(flag) = is_archived {
        update(json!({"is_archived": flag}));
    }
    out
}

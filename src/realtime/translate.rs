//! From a durable event to the Zulip client events it implies, per recipient.

use crate::auth::ServerSecret;
use crate::events::{
    ChannelChange, Envelope, Event, GroupChange, Recipient, SubscriptionProperty, TypingTarget,
    UserChange,
};
use crate::ids::{ChannelId, UserId};
use crate::projections::realm::{self, ClientEvent};
use crate::projections::{access, Access};
use crate::projections::{Channel, Folders, Projections, User};
use crate::render::channels::{channel_json, subscription_json};
use crate::render::groups::group_json;
use crate::render::groups::render_group_setting;
use crate::render::messages::{message_flags, message_json};
use crate::render::realm::fields_json;
use crate::render::realm::realm_setting_json;
use crate::render::users::shown_email;
use crate::render::users::user_json;
use crate::render::users::{bot_audience, bot_json};
use crate::render::Site;
use serde_json::{json, Value};

/// Active accounts.
fn active(state: &Projections) -> impl Iterator<Item = &User> {
    state.users.iter().filter(|u| u.is_active)
}

/// Zulip's `USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS`: larger organizations get no
/// `presence` events (their clients poll).
const PRESENCE_EVENT_USER_LIMIT: usize = 100;

/// Active users who have not turned typing notifications off (`receives_typing_notifications`).
fn receives_typing(state: &Projections, user: &User) -> bool {
    user.is_active
        && state
            .user_settings
            .get(user.user_id, "receives_typing_notifications")
            != crate::events::RealmValue::Bool(false)
}

fn to_all(state: &Projections, event: Value) -> Vec<(UserId, Value)> {
    active(state).map(|u| (u.user_id, event.clone())).collect()
}

/// `user_group` `add_members` for the system groups `user`'s role puts them in directly and,
/// when `changed` (the role changed; the old one is not in the event), `remove_members` for
/// the other role groups, which clients take as a no-op where the user was not a member.
fn role_group_events(state: &Projections, user: &User, changed: bool) -> Vec<(UserId, Value)> {
    use crate::events::SystemGroup;
    use crate::projections::groups::system_direct_member;
    let mut out = Vec::new();
    // Nobody and Internet have no direct members by role.
    let role_groups = SystemGroup::ALL
        .into_iter()
        .filter(|k| !matches!(k, SystemGroup::Nobody | SystemGroup::Internet));
    for kind in role_groups {
        let Some(group_id) = state.groups.system(kind) else {
            continue;
        };
        let member = system_direct_member(kind, user.role);
        if !member && !changed {
            continue;
        }
        let op = if member {
            "add_members"
        } else {
            "remove_members"
        };
        out.extend(to_all(
            state,
            json!({"type": "user_group", "op": op, "group_id": group_id.0, "user_ids": [user.user_id.0]}),
        ));
    }
    out
}

/// `peer_add` for the channels a reactivated user is subscribed to and `add_members` for the
/// groups they are a direct member of.
fn reactivation_events(state: &Projections, user_id: UserId) -> Vec<(UserId, Value)> {
    let mut out = Vec::new();
    for (channel_id, sub) in state.channels.subscriptions_of(user_id) {
        let Some(channel) = state.channels.get(channel_id).filter(|_| sub.active) else {
            continue;
        };
        let peer = json!({"type": "subscription", "op": "peer_add", "stream_ids": [channel_id.0], "user_ids": [user_id.0]});
        out.extend(
            peer_audience(state, channel)
                .filter(|u| u.user_id != user_id)
                .map(|u| (u.user_id, peer.clone())),
        );
    }
    // Deactivated groups are not in every client's list; their members are not news.
    for group in state.groups.iter().filter(|g| !g.deactivated) {
        if state
            .groups
            .direct_members(group, &state.users)
            .contains(&user_id)
        {
            out.extend(to_all(
                state,
                json!({"type": "user_group", "op": "add_members", "group_id": group.id.0, "user_ids": [user_id.0]}),
            ));
        }
    }
    out
}

/// Users who may see a channel exist (its `stream` events).
fn channel_audience<'a>(
    state: &'a Projections,
    channel: &'a Channel,
) -> impl Iterator<Item = &'a User> + 'a {
    active(state).filter(move |u| access(state, u, channel) != Access::None)
}

/// Users who learn about a channel's subscribers (`peer_add` / `peer_remove`): those who can
/// reach its content, and administrators.
fn peer_audience<'a>(
    state: &'a Projections,
    channel: &'a Channel,
) -> impl Iterator<Item = &'a User> + 'a {
    active(state).filter(move |u| access(state, u, channel) == Access::Content || u.role.is_admin())
}

fn realm_user_update(state: &Projections, user_id: UserId, person: Value) -> Vec<(UserId, Value)> {
    let mut person = person;
    person["user_id"] = json!(user_id.0);
    to_all(
        state,
        json!({"type": "realm_user", "op": "update", "person": person}),
    )
}

fn channel_update(
    state: &Projections,
    channel_id: ChannelId,
    property: &str,
    value: Value,
    extra: Value,
) -> Vec<(UserId, Value)> {
    let Some(channel) = state.channels.get(channel_id) else {
        return Vec::new();
    };
    let mut event = json!({
        "type": "stream", "op": "update", "stream_id": channel_id.0, "name": channel.name,
        "property": property, "value": value,
    });
    if let (Value::Object(map), Value::Object(more)) = (&mut event, extra) {
        map.extend(more);
    }
    channel_audience(state, channel)
        .map(|u| (u.user_id, event.clone()))
        .collect()
}

/// A `first_message_id` update when the oldest message of the channel changed: `arrived`
/// messages came in (it changed if one of them is the oldest now) and `left` ones went out
/// (it changed if one was older than the oldest now, or none is left).
fn first_message_changes(
    state: &Projections,
    channel_id: ChannelId,
    arrived: &[crate::ids::MessageId],
    left: &[crate::ids::MessageId],
) -> Vec<(UserId, Value)> {
    let first = crate::render::channels::first_message_id(state, channel_id);
    let came_first = first.is_some_and(|f| arrived.iter().any(|id| id.0 == f));
    let left_first = left
        .iter()
        .map(|id| id.0)
        .min()
        .is_some_and(|oldest_gone| first.is_none_or(|f| oldest_gone < f));
    if !came_first && !left_first {
        return Vec::new();
    }
    channel_update(
        state,
        channel_id,
        "first_message_id",
        json!(first),
        json!({}),
    )
}

/// The `message` event of `message` for `viewer`, with the raw forms `Queues::publish` picks
/// from per queue (Markdown or HTML, the empty topic) and strips.
pub fn message_event(
    state: &Projections,
    site: &Site,
    viewer: &User,
    message: &crate::projections::Message,
) -> Value {
    let mut json = message_json(state, site, viewer, message, true, false);
    json["_raw_content"] = json!(&*message.content);
    json["_raw_topic"] = json!(message.topic());
    let flags = message_flags(state, viewer.user_id, message.id);
    json!({"type": "message", "message": json, "flags": flags})
}

/// The client events of one durable event, each with the user it is for. `state` is the
/// state right after the event's batch.
pub fn client_events(
    state: &Projections,
    site: &Site,
    secret: &ServerSecret,
    env: &Envelope,
) -> Vec<(UserId, Value)> {
    match &env.event {
        Event::CustomEmojiAdded { .. } | Event::CustomEmojiDeactivated { .. } => to_all(
            state,
            json!({"type": "realm_emoji", "op": "update", "realm_emoji": crate::render::realm::realm_emoji_json(state)}),
        ),
        Event::PresenceUpdated { user_id, .. } => {
            // Zulip tells everyone only when someone comes (back) online; clients learn the
            // rest by polling `POST /users/me/presence`.
            let (Some(user), Some(presence)) =
                (state.users.get(*user_id), state.presence.get(*user_id))
            else {
                return Vec::new();
            };
            // Zulip sends none in organizations past USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS.
            let large = active(state).nth(PRESENCE_EVENT_USER_LIMIT).is_some();
            if large
                || !presence.came_online
                || !crate::projections::shares_presence(state, *user_id)
            {
                return Vec::new();
            }
            let (status, timestamp) = crate::render::presence::legacy_status(presence);
            let client = json!({"client": "website", "status": status, "timestamp": timestamp, "pushable": false});
            let modern = json!({"presences": {user_id.0.to_string(): crate::render::presence::modern_json(presence, user)}});
            active(state)
                .map(|viewer| {
                    (
                        viewer.user_id,
                        json!({
                            "type": "presence",
                            "user_id": user_id.0,
                            "email": shown_email(state, site, viewer, user),
                            "server_timestamp": env.at as f64 / 1000.0,
                            "presence": {"website": client},
                            "_modern": modern,
                        }),
                    )
                })
                .collect()
        }
        Event::SubmessageAdded {
            submessage_id,
            message_id,
            sender_id,
            msg_type,
            content,
        } => {
            let event = json!({
                "type": "submessage", "msg_type": msg_type, "message_id": message_id.0,
                "submessage_id": submessage_id, "sender_id": sender_id.0, "content": content,
            });
            active_holders(state, *message_id)
                .into_iter()
                .map(|u| (u.user_id, event.clone()))
                .collect()
        }
        Event::UserSettingChanged {
            user_id,
            name,
            value,
        } => {
            let value = crate::projections::user_settings::value_json(value);
            vec![(
                *user_id,
                json!({"type": "user_settings", "op": "update", "property": name, "value": value}),
            )]
        }
        Event::RealmCreated { .. }
        | Event::LogErased { .. }
        | Event::ApiKeyRegenerated { .. }
        | Event::PasswordChanged { .. } => Vec::new(),
        Event::InvitationResent { .. } => Vec::new(),
        Event::InvitationCreated { invite_id, .. }
        | Event::InvitationRevoked { invite_id }
        | Event::InvitationAccepted { invite_id, .. } => {
            // Those who manage invitations: administrators, and the inviter.
            let inviter = state.invitations.get(*invite_id).and_then(|i| i.invited_by);
            active(state)
                .filter(|u| u.role.is_admin() || Some(u.user_id) == inviter)
                .map(|u| (u.user_id, json!({"type": "invites_changed"})))
                .collect()
        }
        Event::LinkifierAdded { .. }
        | Event::LinkifierChanged { .. }
        | Event::LinkifierRemoved { .. }
        | Event::LinkifiersReordered { .. } => to_all(
            state,
            json!({"type": "realm_linkifiers", "realm_linkifiers": crate::render::realm::linkifiers_json(state)}),
        ),
        Event::CustomProfileFieldCreated { .. }
        | Event::CustomProfileFieldChanged { .. }
        | Event::CustomProfileFieldDeleted { .. }
        | Event::CustomProfileFieldsReordered { .. } => to_all(
            state,
            json!({"type": "custom_profile_fields", "fields": fields_json(state)}),
        ),
        Event::ProfileDataSet {
            user_id,
            field_id,
            value,
            rendered_value,
        } => {
            let mut field = json!({"id": field_id.0, "value": value});
            if let Some(html) = rendered_value {
                field["rendered_value"] = json!(html);
            }
            realm_user_update(state, *user_id, json!({"custom_profile_field": field}))
        }
        Event::RealmSettingChanged { name, .. } => {
            let value = realm_setting_json(state, name);
            let event = match realm::setting(name).map(|s| s.event) {
                Some(ClientEvent::UpdateDict) => {
                    json!({"type": "realm", "op": "update_dict", "property": "default", "data": {name.as_str(): value}})
                }
                _ => json!({"type": "realm", "op": "update", "property": name, "value": value}),
            };
            to_all(state, event)
        }
        Event::UserCreated { user_id, .. } => {
            // The server's own bots are not members (clients list them as cross-realm bots).
            let Some(user) = state.users.get(*user_id).filter(|u| !u.is_system_bot()) else {
                return Vec::new();
            };
            let mut out: Vec<(UserId, Value)> = active(state)
                .map(|viewer| {
                    (viewer.user_id, json!({"type": "realm_user", "op": "add", "person": user_json(state, site, viewer, user, true)}))
                })
                .collect();
            // Zulip puts a new account in its role's system groups and says so.
            out.extend(role_group_events(state, user, false));
            if user.is_bot() {
                let event = json!({"type": "realm_bot", "op": "add", "bot": bot_json(state, site, secret, user)});
                out.extend(
                    bot_audience(state, user)
                        .into_iter()
                        .map(|id| (id, event.clone())),
                );
            }
            out
        }
        Event::UserDeactivated { user_id } | Event::UserReactivated { user_id } => {
            let is_active = matches!(env.event, Event::UserReactivated { .. });
            let mut out = realm_user_update(state, *user_id, json!({"is_active": is_active}));
            // Clients drop a deactivated user from subscriber and member lists themselves (as
            // Zulip's do); a reactivated one is given back to them.
            if is_active {
                out.extend(reactivation_events(state, *user_id));
            }
            if let Some(bot) = state.users.get(*user_id).filter(|u| u.is_bot()) {
                let event = json!({"type": "realm_bot", "op": "update", "bot": {"user_id": user_id.0, "is_active": is_active}});
                out.extend(
                    bot_audience(state, bot)
                        .into_iter()
                        .map(|id| (id, event.clone())),
                );
            }
            out
        }
        Event::UserChanged { user_id, change } => match change {
            UserChange::FullName(name) => {
                realm_user_update(state, *user_id, json!({"full_name": name}))
            }
            UserChange::Role(role) => {
                let mut out = realm_user_update(state, *user_id, json!({"role": role.code()}));
                if let Some(user) = state.users.get(*user_id).filter(|u| u.is_active) {
                    out.extend(role_group_events(state, user, true));
                }
                out
            }
        },
        Event::UserGroupCreated {
            group_id, system, ..
        } => {
            if system.is_some() {
                return Vec::new();
            }
            let Some(group) = state.groups.get(*group_id) else {
                return Vec::new();
            };
            to_all(
                state,
                json!({"type": "user_group", "op": "add", "group": group_json(state, group)}),
            )
        }
        Event::UserGroupMembersChanged {
            group_id,
            added,
            removed,
        } => {
            let mut out = Vec::new();
            if !added.is_empty() {
                out.extend(to_all(state, json!({"type": "user_group", "op": "add_members", "group_id": group_id.0, "user_ids": added})));
            }
            if !removed.is_empty() {
                out.extend(to_all(state, json!({"type": "user_group", "op": "remove_members", "group_id": group_id.0, "user_ids": removed})));
            }
            out
        }
        Event::UserGroupSubgroupsChanged {
            group_id,
            added,
            removed,
        } => {
            let mut out = Vec::new();
            if !added.is_empty() {
                out.extend(to_all(state, json!({"type": "user_group", "op": "add_subgroups", "group_id": group_id.0, "direct_subgroup_ids": added})));
            }
            if !removed.is_empty() {
                out.extend(to_all(state, json!({"type": "user_group", "op": "remove_subgroups", "group_id": group_id.0, "direct_subgroup_ids": removed})));
            }
            out
        }
        Event::UserGroupChanged { group_id, change } => {
            let data = match change {
                GroupChange::Name(name) => json!({"name": name}),
                GroupChange::Description(text) => json!({"description": text}),
                GroupChange::Permission { setting, value } => {
                    json!({ setting.as_str(): render_group_setting(value) })
                }
                GroupChange::Deactivated(flag) => json!({"deactivated": flag}),
            };
            to_all(
                state,
                json!({"type": "user_group", "op": "update", "group_id": group_id.0, "data": data}),
            )
        }
        Event::ChannelCreated { channel_id, .. } => {
            let Some(channel) = state.channels.get(*channel_id) else {
                return Vec::new();
            };
            let event = json!({"type": "stream", "op": "create", "streams": [channel_json(state, channel)]});
            channel_audience(state, channel)
                .map(|u| (u.user_id, event.clone()))
                .collect()
        }
        Event::ChannelChanged { channel_id, change } => match change {
            ChannelChange::Name(name) => {
                // Zulip names the channel by its old name in the rename event.
                let old = state
                    .channels
                    .get(*channel_id)
                    .and_then(|c| c.previous_name.clone());
                channel_update(
                    state,
                    *channel_id,
                    "name",
                    json!(name),
                    json!({"name": old}),
                )
            }
            ChannelChange::Description(_) => {
                let Some(c) = state.channels.get(*channel_id) else {
                    return Vec::new();
                };
                channel_update(
                    state,
                    *channel_id,
                    "description",
                    json!(c.description),
                    json!({"rendered_description": c.rendered_description}),
                )
            }
            ChannelChange::Privacy {
                invite_only,
                history_public_to_subscribers,
                is_web_public,
            } => {
                let Some(channel) = state.channels.get(*channel_id) else {
                    return Vec::new();
                };
                // Who could see the channel before the change: judged on the channel as it was.
                let mut before = channel.clone();
                before.invite_only = !invite_only;
                let saw = |u: &User| access(state, u, &before) != Access::None;
                let sees = |u: &User| access(state, u, channel) != Access::None;
                let stream = channel_json(state, channel);
                let mut out: Vec<(UserId, Value)> = channel_update(
                    state,
                    *channel_id,
                    "invite_only",
                    json!(invite_only),
                    json!({"history_public_to_subscribers": history_public_to_subscribers, "is_web_public": is_web_public}),
                )
                .into_iter()
                .filter(|(id, _)| state.users.get(*id).is_some_and(saw))
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
            ChannelChange::MessageRetentionDays(days) => channel_update(
                state,
                *channel_id,
                "message_retention_days",
                json!(days),
                json!({}),
            ),
            ChannelChange::Folder(folder) => {
                channel_update(state, *channel_id, "folder_id", json!(folder), json!({}))
            }
            ChannelChange::TopicsPolicy(policy) => channel_update(
                state,
                *channel_id,
                "topics_policy",
                json!(policy.as_str()),
                json!({}),
            ),
            ChannelChange::Permission { setting, value } => channel_update(
                state,
                *channel_id,
                setting,
                render_group_setting(value),
                json!({}),
            ),
            ChannelChange::Archived(flag) => {
                // Clients without the `archived_channels` capability see a deletion (or a
                // creation when unarchived) instead: `realtime::adapt` swaps it in.
                let stream = state
                    .channels
                    .get(*channel_id)
                    .map(|c| channel_json(state, c));
                channel_update(
                    state,
                    *channel_id,
                    "is_archived",
                    json!(flag),
                    json!({"_stream": stream}),
                )
            }
            ChannelChange::DefaultForNewUsers(_) => {
                let defaults: Vec<Value> = state
                    .channels
                    .iter()
                    .filter(|c| c.is_default && !c.is_archived)
                    .map(|c| channel_json(state, c))
                    .collect();
                to_all(
                    state,
                    json!({"type": "default_streams", "default_streams": defaults}),
                )
            }
        },
        Event::Subscribed {
            channel_id,
            subscriptions,
        } => {
            let Some(channel) = state.channels.get(*channel_id) else {
                return Vec::new();
            };
            let new: Vec<UserId> = subscriptions.iter().map(|s| s.user_id).collect();
            let mut out = Vec::new();
            for user_id in &new {
                let (Some(user), Some(sub)) = (
                    state.users.get(*user_id),
                    state.channels.subscription(*user_id, *channel_id),
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
        Event::Unsubscribed {
            channel_id,
            user_ids,
        } => {
            let Some(channel) = state.channels.get(*channel_id) else {
                return Vec::new();
            };
            let mut out: Vec<(UserId, Value)> = user_ids
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
        Event::SubscriptionPropertyChanged {
            user_id,
            channel_id,
            property,
        } => {
            let update = |property: &str, value: Value| {
                (
                    *user_id,
                    json!({"type": "subscription", "op": "update", "stream_id": channel_id.0, "property": property, "value": value}),
                )
            };
            match property {
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
                SubscriptionProperty::PushNotifications(v) => {
                    vec![update("push_notifications", json!(v))]
                }
                SubscriptionProperty::EmailNotifications(v) => {
                    vec![update("email_notifications", json!(v))]
                }
                SubscriptionProperty::WildcardMentionsNotify(v) => {
                    vec![update("wildcard_mentions_notify", json!(v))]
                }
            }
        }
        Event::ChannelFolderCreated { folder_id, .. } => {
            let Some(folder) = state.folders.get(*folder_id) else {
                return Vec::new();
            };
            to_all(
                state,
                json!({"type": "channel_folder", "op": "add", "channel_folder": Folders::to_json(folder)}),
            )
        }
        Event::ChannelFolderChanged {
            folder_id,
            name,
            description,
            is_archived,
        } => {
            let mut out = Vec::new();
            let mut update = |data: Value| {
                out.extend(to_all(state, json!({"type": "channel_folder", "op": "update", "channel_folder_id": folder_id.0, "data": data})));
            };
            if let Some(name) = name {
                update(json!({"name": name}));
            }
            if description.is_some() {
                if let Some(folder) = state.folders.get(*folder_id) {
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
        Event::ChannelFoldersReordered { order } => to_all(
            state,
            json!({"type": "channel_folder", "op": "reorder", "order": order}),
        ),
        Event::MessageSent {
            message_id,
            sender_id,
            recipient,
            sender_queue,
            ..
        } => {
            let Some(message) = state.messages.get(*message_id) else {
                return Vec::new();
            };
            let mut recipients: Vec<UserId> = match recipient {
                Recipient::Channel { channel_id, .. } => state
                    .channels
                    .get(*channel_id)
                    .map(|c| c.subscribers.iter().copied().collect())
                    .unwrap_or_default(),
                Recipient::Direct { user_ids } => user_ids.clone(),
            };
            if !recipients.contains(sender_id) {
                recipients.push(*sender_id);
            }
            let first = match recipient {
                Recipient::Channel { channel_id, .. } => {
                    first_message_changes(state, *channel_id, &[*message_id], &[])
                }
                Recipient::Direct { .. } => Vec::new(),
            };
            let mut out: Vec<(UserId, Value)> = recipients
                .into_iter()
                .filter_map(|user_id| {
                    let viewer = state.users.get(user_id).filter(|u| u.is_active)?;
                    let mut event = message_event(state, site, viewer, message);
                    if let Some(origin) = sender_queue.as_deref().filter(|_| user_id == *sender_id)
                    {
                        // `Queues::publish` gives it to the sending queue only.
                        event["_sender_queue"] = json!(origin.queue_id);
                        event["_local_id"] = json!(origin.local_id);
                    }
                    Some((user_id, event))
                })
                .collect();
            out.extend(first);
            out
        }
        Event::MessageFlagsChanged {
            user_id,
            flag,
            add,
            message_ids,
        } => {
            let op = if *add { "add" } else { "remove" };
            let mut event = json!({
                "type": "update_message_flags", "op": op, "operation": op, "flag": flag.as_str(),
                "messages": message_ids, "all": false,
            });
            if !*add && *flag == crate::events::MessageFlag::Read {
                let details: serde_json::Map<String, Value> = message_ids
                    .iter()
                    .filter_map(|id| state.messages.get(*id))
                    .map(|m| {
                        let detail = match &m.recipient {
                            Recipient::Channel { channel_id, topic } => {
                                json!({"type": "stream", "stream_id": channel_id.0, "topic": topic})
                            }
                            Recipient::Direct { user_ids } => json!({
                                "type": "private",
                                "user_ids": user_ids.iter().filter(|u| *u != user_id).collect::<Vec<_>>(),
                            }),
                        };
                        (m.id.0.to_string(), detail)
                    })
                    .collect();
                event["message_details"] = Value::Object(details);
            }
            vec![(*user_id, event)]
        }
        Event::ReactionAdded {
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        }
        | Event::ReactionRemoved {
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        } => {
            let op = if matches!(env.event, Event::ReactionAdded { .. }) {
                "add"
            } else {
                "remove"
            };
            reaction_events(
                state,
                site,
                *message_id,
                *user_id,
                json!({"op": op, "emoji_name": emoji_name, "emoji_code": emoji_code, "reaction_type": reaction_type.as_str()}),
            )
        }
        Event::MessageEdited {
            message_id,
            user_id,
            content,
            moved,
        } => update_message_events(
            state,
            env,
            *message_id,
            *user_id,
            content.is_some(),
            moved.as_deref(),
        ),
        Event::MessagesDeleted {
            message_ids,
            recipient,
            holders,
        } => {
            let mut event = json!({"type": "delete_message", "message_ids": message_ids});
            match recipient {
                Recipient::Channel { channel_id, topic } => {
                    event["message_type"] = json!("stream");
                    event["stream_id"] = json!(channel_id.0);
                    event["topic"] = json!(crate::render::messages::shown_topic(topic, false));
                    event["_raw_topic"] = json!(topic);
                }
                Recipient::Direct { .. } => event["message_type"] = json!("private"),
            }
            let mut out: Vec<(UserId, Value)> = holders
                .iter()
                .filter(|id| state.users.get(**id).is_some_and(|u| u.is_active))
                .map(|id| (*id, event.clone()))
                .collect();
            if let Recipient::Channel { channel_id, .. } = recipient {
                out.extend(first_message_changes(state, *channel_id, &[], message_ids));
            }
            out
        }
        Event::TypingStarted { user_id, target } | Event::TypingStopped { user_id, target } => {
            let op = if matches!(env.event, Event::TypingStarted { .. }) {
                "start"
            } else {
                "stop"
            };
            let Some(sender) = state.users.get(*user_id) else {
                return Vec::new();
            };
            let person = |viewer: &User, u: &User| json!({"user_id": u.user_id.0, "email": shown_email(state, site, viewer, u)});
            match target {
                TypingTarget::Direct { user_ids } => user_ids
                    .iter()
                    .filter_map(|id| state.users.get(*id).filter(|u| receives_typing(state, u)))
                    .map(|viewer| {
                        let recipients: Vec<Value> = user_ids
                            .iter()
                            .filter_map(|id| state.users.get(*id))
                            .map(|u| person(viewer, u))
                            .collect();
                        (
                            viewer.user_id,
                            json!({
                                "type": "typing", "op": op, "message_type": "direct",
                                "sender": person(viewer, sender), "recipients": recipients,
                            }),
                        )
                    })
                    .collect(),
                TypingTarget::Channel { channel_id, topic } => {
                    let Some(channel) = state.channels.get(*channel_id) else {
                        return Vec::new();
                    };
                    // Zulip sends nothing for channels with more than 100 subscribers.
                    if channel.subscribers.len() > 100 {
                        return Vec::new();
                    }
                    channel
                        .subscribers
                        .iter()
                        .filter_map(|id| state.users.get(*id).filter(|u| receives_typing(state, u)))
                        .map(|viewer| {
                            (viewer.user_id, json!({
                                "type": "typing", "op": op, "message_type": "stream",
                                "sender": person(viewer, sender), "stream_id": channel_id.0,
                                "topic": crate::render::messages::shown_topic(topic, false), "_raw_topic": topic,
                            }))
                        })
                        .collect()
                }
            }
        }
        Event::TopicVisibilitySet {
            user_id,
            channel_id,
            topic,
            policy,
        } => {
            let muted: Vec<Value> = state
                .user_topics
                .of(*user_id)
                .filter(|(_, t)| t.policy == 1)
                .filter_map(|(c, t)| {
                    state
                        .channels
                        .get(c)
                        .map(|channel| json!([channel.name, t.topic, t.last_updated]))
                })
                .collect();
            vec![
                (
                    *user_id,
                    json!({"type": "muted_topics", "muted_topics": muted}),
                ),
                (
                    *user_id,
                    json!({
                        "type": "user_topic", "stream_id": channel_id.0,
                        "topic_name": crate::render::messages::shown_topic(topic, false),
                        "_raw": {"topic_name": topic},
                        "last_updated": env.at / 1000, "visibility_policy": policy.code(),
                    }),
                ),
            ]
        }
    }
}

/// Users holding a copy of a message, active ones only.
fn active_holders(state: &Projections, message: crate::ids::MessageId) -> Vec<&User> {
    state
        .messages
        .holders(message)
        .into_iter()
        .filter_map(|id| state.users.get(id).filter(|u| u.is_active))
        .collect()
}

/// A `reaction` event for everyone holding a copy of the message.
fn reaction_events(
    state: &Projections,
    site: &Site,
    message_id: crate::ids::MessageId,
    user_id: UserId,
    body: Value,
) -> Vec<(UserId, Value)> {
    let Some(reactor) = state.users.get(user_id) else {
        return Vec::new();
    };
    active_holders(state, message_id)
        .into_iter()
        .map(|viewer| {
            let mut event = json!({
                "type": "reaction", "message_id": message_id.0, "user_id": user_id.0,
                "user": {
                    "user_id": user_id.0, "email": shown_email(state, site, viewer, reactor),
                    "full_name": reactor.full_name,
                },
            });
            if let (Value::Object(map), Value::Object(more)) = (&mut event, body.clone()) {
                map.extend(more);
            }
            (viewer.user_id, event)
        })
        .collect()
}

/// `update_message` events for an edit, to everyone holding a copy of the edited message, and
/// `delete_message` events to those a move to another channel took it from.
fn update_message_events(
    state: &Projections,
    env: &Envelope,
    message_id: crate::ids::MessageId,
    editor: UserId,
    content_changed: bool,
    moved: Option<&crate::events::MessageMove>,
) -> Vec<(UserId, Value)> {
    let Some(message) = state.messages.get(message_id) else {
        return Vec::new();
    };
    let Some(edit) = message.edits().last() else {
        return Vec::new();
    };
    let message_ids: Vec<u64> = match moved {
        Some(m) => m.message_ids.iter().map(|id| id.0).collect(),
        None => vec![message_id.0],
    };
    let mut event = json!({
        "type": "update_message", "user_id": editor.0, "edit_timestamp": env.at / 1000,
        "message_id": message_id.0, "message_ids": message_ids, "rendering_only": false,
    });
    // The channel the message was in before this edit.
    let orig_channel = edit.prev_channel.or(message.channel());
    if let Some(channel) = orig_channel.and_then(|c| state.channels.get(c)) {
        event["stream_id"] = json!(channel.id.0);
        event["stream_name"] = json!(channel.name);
    }
    if content_changed {
        // A content edit and a move are one event but two history entries: the content is the
        // one before the last (a content edit is recorded first).
        let content_edit = message
            .edits()
            .iter()
            .rev()
            .find(|e| e.prev_content.is_some());
        if let Some((raw, html)) = content_edit.and_then(|e| e.prev_content.as_ref()) {
            event["orig_content"] = json!(&**raw);
            event["orig_rendered_content"] = json!(&**html);
        }
        event["content"] = json!(&*message.content);
        event["rendered_content"] = json!(&*message.rendered_content);
        event["is_me_message"] = json!(message.is_me_message);
    }
    if let Some(moved) = moved {
        event["propagate_mode"] = json!(moved.propagate_mode.as_str());
        if let Some(channel) = moved.new_channel_id {
            event["new_stream_id"] = json!(channel.0);
        }
        if moved.new_topic.is_some() {
            let orig = edit.prev_topic.clone().unwrap_or_default();
            event["orig_subject"] = json!(crate::render::messages::shown_topic(&orig, false));
            event["subject"] = json!(crate::render::messages::shown_topic(message.topic(), false));
            // Clients with `empty_topic_name` get the topics as they are.
            event["_raw"] = json!({"orig_subject": orig, "subject": message.topic()});
            event["topic_links"] =
                crate::render::messages::topic_links_json(state, message.topic());
        }
    }
    // Everyone holding a copy of a moved message hears of the move, not only those holding
    // the edited one: their unread counts and topics change too.
    let audience: Vec<&User> = match moved {
        Some(m) => state
            .messages
            .holders_of_any(&m.message_ids)
            .into_iter()
            .filter_map(|id| state.users.get(id).filter(|u| u.is_active))
            .collect(),
        None => active_holders(state, message_id),
    };
    let mut out: Vec<(UserId, Value)> = audience
        .into_iter()
        .map(|viewer| {
            let mut event = event.clone();
            event["flags"] = json!(message_flags(state, viewer.user_id, message_id));
            // The edited text only to those holding the edited message (a later joiner of a
            // channel without public history may hold only other moved messages).
            if state.messages.flags(viewer.user_id, message_id).is_none() {
                if let Some(map) = event.as_object_mut() {
                    for key in [
                        "content",
                        "rendered_content",
                        "orig_content",
                        "orig_rendered_content",
                        "is_me_message",
                    ] {
                        map.remove(key);
                    }
                }
            }
            (viewer.user_id, event)
        })
        .collect();
    // A move to a channel someone cannot read takes the messages away from them.
    if let Some(moved) = moved.filter(|m| m.new_channel_id.is_some()) {
        let told: std::collections::HashSet<UserId> = out.iter().map(|(u, _)| *u).collect();
        if let Some(old) = orig_channel.and_then(|c| state.channels.get(c)) {
            let event = json!({
                "type": "delete_message", "message_type": "stream", "stream_id": old.id.0,
                "topic": crate::render::messages::shown_topic(edit.prev_topic.as_deref().unwrap_or(message.topic()), false),
                "_raw_topic": edit.prev_topic.as_deref().unwrap_or(message.topic()),
                "message_ids": moved.message_ids,
            });
            out.extend(
                old.subscribers
                    .iter()
                    .filter(|u| !told.contains(u))
                    .filter(|u| state.users.get(**u).is_some_and(|u| u.is_active))
                    .map(|u| (*u, event.clone())),
            );
        }
    }
    // A move between channels can change which message is oldest in either (after the
    // deletions above, which count who was told of the move itself).
    if let (Some(moved), Some(old)) = (moved, orig_channel) {
        if let Some(new) = moved.new_channel_id.filter(|new| *new != old) {
            out.extend(first_message_changes(state, old, &[], &moved.message_ids));
            out.extend(first_message_changes(state, new, &moved.message_ids, &[]));
        }
    }
    out
}

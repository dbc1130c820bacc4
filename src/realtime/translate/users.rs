//! Events about people: accounts, roles, bots, profile data, personal settings and presence.

use super::audience::{active, peer_audience, realm_user_update, to_all};
use super::event::{ClientEvent, Deliveries, Variants};
use crate::auth::ServerSecret;
use crate::events::{RealmValue, SystemGroup, UserChange};
use crate::ids::{FieldId, UserId};
use crate::projections::groups::system_direct_member;
use crate::projections::{shares_presence, Projections, User};
use crate::render::presence::{legacy_status, modern_json};
use crate::render::users::{bot_audience, bot_json, shown_email, user_json};
use crate::render::Site;
use serde_json::json;

/// Zulip's `USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS`: larger organizations get no
/// `presence` events (their clients poll).
const PRESENCE_EVENT_USER_LIMIT: usize = 100;

/// `realm_user` `add` for everyone, the new account's role groups, and `realm_bot` `add` for
/// those who manage a new bot.
pub fn user_created(
    state: &Projections,
    site: &Site,
    secret: &ServerSecret,
    user_id: UserId,
) -> Deliveries {
    // The server's own bots are not members (clients list them as cross-realm bots).
    let Some(user) = state.users.get(user_id).filter(|u| !u.is_system_bot()) else {
        return Deliveries::new();
    };
    let mut out: Deliveries = active(state)
        .map(|viewer| {
            (viewer.user_id, json!({"type": "realm_user", "op": "add", "person": user_json(state, site, viewer, user, true)}))
        })
        .collect();
    // Zulip puts a new account in its role's system groups and says so.
    out.extend(role_group_events(state, user, false));
    if !user.is_bot() {
        out.extend(export_consent(state, user_id));
    }
    if user.is_bot() {
        let event =
            json!({"type": "realm_bot", "op": "add", "bot": bot_json(state, site, secret, user)});
        out.extend(
            bot_audience(state, user)
                .into_iter()
                .map(|id| (id, event.clone())),
        );
    }
    out
}

/// `realm_user` `update` of `is_active`; a reactivated user is given back to subscriber and
/// member lists; bots' managers get `realm_bot` `update`.
pub fn activity_changed(state: &Projections, user_id: UserId, is_active: bool) -> Deliveries {
    let mut out = realm_user_update(state, user_id, json!({"is_active": is_active}));
    // Clients drop a deactivated user from subscriber and member lists themselves (as
    // Zulip's do); a reactivated one is given back to them.
    if is_active {
        out.extend(reactivation_events(state, user_id));
        if state.users.get(user_id).is_some_and(|u| !u.is_bot()) {
            out.extend(export_consent(state, user_id));
        }
    }
    if let Some(bot) = state.users.get(user_id).filter(|u| u.is_bot()) {
        let event = json!({"type": "realm_bot", "op": "update", "bot": {"user_id": user_id.0, "is_active": is_active}});
        out.extend(
            bot_audience(state, bot)
                .into_iter()
                .map(|id| (id, event.clone())),
        );
    }
    out
}

/// A name or role change; a role change also moves the user between role groups.
pub fn user_changed(state: &Projections, user_id: UserId, change: &UserChange) -> Deliveries {
    match change {
        UserChange::FullName(name) => realm_user_update(state, user_id, json!({"full_name": name})),
        UserChange::Role(role) => {
            let mut out = realm_user_update(state, user_id, json!({"role": role.code()}));
            if let Some(user) = state.users.get(user_id).filter(|u| u.is_active) {
                out.extend(role_group_events(state, user, true));
            }
            out
        }
    }
}

/// `realm_user` `update`s of a new address, as Zulip's `do_change_user_delivery_email`:
/// `delivery_email`, and `new_email` (the `email` field), to each person who sees the address.
pub fn email_changed(state: &Projections, user_id: UserId) -> Deliveries {
    let Some(user) = state.users.get(user_id) else {
        return Deliveries::new();
    };
    let mut out = Deliveries::new();
    for viewer in active(state).filter(|v| crate::render::users::email_visible(state, v, user)) {
        for field in ["delivery_email", "new_email"] {
            out.push((
                viewer.user_id,
                json!({"type": "realm_user", "op": "update",
                       "person": {"user_id": user_id.0, field: user.email}}),
            ));
        }
    }
    out
}

/// `realm_user` `update` of one custom profile field.
pub fn profile_data_set(
    state: &Projections,
    user_id: UserId,
    field_id: FieldId,
    value: Option<&String>,
    rendered_value: Option<&str>,
) -> Deliveries {
    let mut field = json!({"id": field_id.0, "value": value});
    if let Some(html) = rendered_value {
        field["rendered_value"] = json!(html);
    }
    realm_user_update(state, user_id, json!({"custom_profile_field": field}))
}

/// `user_settings` `update`, to the user alone.
/// `realm_user` `update` with the new avatar, for everyone.
pub fn avatar_changed(state: &Projections, site: &Site, user_id: UserId) -> Deliveries {
    let Some(user) = state.users.get(user_id) else {
        return Deliveries::new();
    };
    realm_user_update(
        state,
        user_id,
        json!({
            "avatar_source": crate::render::users::avatar_source(user),
            "avatar_url": crate::render::users::avatar_url(site, user),
            "avatar_url_medium": crate::render::users::avatar_url_medium(site, user),
            "avatar_version": user.avatar_version,
        }),
    )
}

/// `user_status` for every active account: the parts of the status that the request set.
pub fn status_set(
    state: &Projections,
    user_id: UserId,
    away: Option<bool>,
    status_text: Option<&str>,
    emoji: Option<&crate::events::StatusEmoji>,
) -> Deliveries {
    let mut event = json!({"type": "user_status", "user_id": user_id.0});
    if let Some(away) = away {
        event["away"] = json!(away);
    }
    if let Some(text) = status_text {
        event["status_text"] = json!(text);
    }
    if let Some(emoji) = emoji {
        event["emoji_name"] = json!(emoji.emoji_name);
        event["emoji_code"] = json!(emoji.emoji_code);
        event["reaction_type"] = json!(emoji.reaction_type.as_str());
    }
    to_all(state, event)
}

pub fn setting_changed(
    state: &Projections,
    user_id: UserId,
    name: &str,
    value: &RealmValue,
) -> Deliveries {
    let shown = crate::projections::user_settings::value_json(value);
    let mut event =
        json!({"type": "user_settings", "op": "update", "property": name, "value": shown});
    if let ("default_language", RealmValue::Text(code)) = (name, value) {
        event["language_name"] = json!(crate::projections::user_settings::language_name(code));
    }
    let mut out = Deliveries::from(vec![(user_id, event)]);
    // Everyone sees a user's time zone (`realm_user` `update`).
    if name == "timezone" {
        out.extend(realm_user_update(
            state,
            user_id,
            json!({"timezone": shown}),
        ));
    }
    if name == "allow_private_data_export" {
        out.extend(export_consent(state, user_id));
    }
    out
}

/// `realm_export_consent`: administrators follow who consents to an export of their private
/// data, when it changes and (as the other events do not say it) when an account is created or
/// reactivated.
fn export_consent(state: &Projections, user_id: UserId) -> Deliveries {
    let consented = state.user_settings.consents_to_export(user_id);
    let event =
        json!({"type": "realm_export_consent", "user_id": user_id.0, "consented": consented});
    active(state)
        .filter(|u| u.role.is_admin())
        .map(|u| (u.user_id, event.clone()))
        .collect()
}

/// `presence`: Zulip tells everyone only when someone comes (back) online; clients learn the
/// rest by polling `POST /users/me/presence`.
pub fn presence_updated(state: &Projections, site: &Site, at: i64, user_id: UserId) -> Deliveries {
    let (Some(user), Some(presence)) = (state.users.get(user_id), state.presence.get(user_id))
    else {
        return Deliveries::new();
    };
    // Zulip sends none in organizations past USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS.
    let large = active(state).nth(PRESENCE_EVENT_USER_LIMIT).is_some();
    if large || !presence.came_online || !shares_presence(state, user_id) {
        return Deliveries::new();
    }
    let (status, timestamp) = legacy_status(presence);
    let client =
        json!({"client": "website", "status": status, "timestamp": timestamp, "pushable": false});
    let simplified = json!({
        "type": "presence",
        "presences": {user_id.0.to_string(): modern_json(presence, user)},
    });
    active(state)
        .map(|viewer| ClientEvent {
            user_id: viewer.user_id,
            body: json!({
                "type": "presence",
                "user_id": user_id.0,
                "email": shown_email(state, site, viewer, user),
                "server_timestamp": at as f64 / 1000.0,
                "presence": {"website": client},
            }),
            variants: Variants {
                simplified_presence: Some(simplified.clone()),
                ..Variants::default()
            },
        })
        .collect()
}

/// `user_group` `add_members` for the system groups `user`'s role puts them in directly and,
/// when `changed` (the role changed; the old one is not in the event), `remove_members` for
/// the other role groups, which clients take as a no-op where the user was not a member.
fn role_group_events(state: &Projections, user: &User, changed: bool) -> Deliveries {
    let mut out = Deliveries::new();
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
fn reactivation_events(state: &Projections, user_id: UserId) -> Deliveries {
    let mut out = Deliveries::new();
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

/// A bot's configuration changed: `realm_bot` `update` of the field for those who manage it;
/// a new owner is told to everyone (`realm_user` `update`), and the bot moves from the old
/// owner's list to the new one's (administrators keep it).
pub fn bot_changed(
    state: &Projections,
    site: &Site,
    secret: &ServerSecret,
    user_id: UserId,
    change: &crate::events::BotChange,
) -> Deliveries {
    use crate::events::BotChange;
    let Some(bot) = state.users.get(user_id) else {
        return Deliveries::new();
    };
    let defaults = crate::render::users::bot_defaults(state, bot);
    let field = |name: &str| {
        defaults
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    };
    let update = |data: serde_json::Value| {
        let mut bot_data = data;
        bot_data["user_id"] = json!(user_id.0);
        let event = json!({"type": "realm_bot", "op": "update", "bot": bot_data});
        Deliveries::from(
            bot_audience(state, bot)
                .into_iter()
                .map(|id| (id, event.clone()))
                .collect::<Vec<_>>(),
        )
    };
    match change {
        BotChange::DefaultSendingStream(_) => {
            update(json!({"default_sending_stream": field("default_sending_stream")}))
        }
        BotChange::DefaultEventsRegisterStream(_) => update(
            json!({"default_events_register_stream": field("default_events_register_stream")}),
        ),
        BotChange::DefaultAllPublicStreams(all) => {
            update(json!({"default_all_public_streams": all}))
        }
        BotChange::Service { .. } => {
            let full = bot_json(state, site, secret, bot);
            update(json!({"services": full["services"]}))
        }
        BotChange::Owner { owner_id, previous } => {
            let mut out = realm_user_update(state, user_id, json!({"bot_owner_id": owner_id.0}));
            let managers = bot_audience(state, bot);
            if let Some(previous) = previous.filter(|p| !managers.contains(p)) {
                out.push((
                    previous,
                    json!({"type": "realm_bot", "op": "delete", "bot": {"user_id": user_id.0}}),
                ));
            }
            // An administrator already had the bot in their list.
            let owner_is_admin = state
                .users
                .get(*owner_id)
                .is_some_and(|u| u.role.is_admin());
            if !owner_is_admin {
                out.push((
                    *owner_id,
                    json!({"type": "realm_bot", "op": "add", "bot": bot_json(state, site, secret, bot)}),
                ));
            }
            out
        }
    }
}

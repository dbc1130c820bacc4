//! Who hears of what: the audiences the translators share, and the events several areas send
//! (`realm_user` updates, `stream` updates).

use super::event::Deliveries;
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::{access, Access, Channel, Projections, User};
use crate::render::channels::first_message_id;
use serde_json::{json, Value};

/// Active accounts.
pub fn active(state: &Projections) -> impl Iterator<Item = &User> {
    state.users.iter().filter(|u| u.is_active)
}

/// The same event for every active account.
pub fn to_all(state: &Projections, event: Value) -> Deliveries {
    active(state).map(|u| (u.user_id, event.clone())).collect()
}

/// Users who may see a channel exist (its `stream` events).
pub fn channel_audience<'a>(
    state: &'a Projections,
    channel: &'a Channel,
) -> impl Iterator<Item = &'a User> + 'a {
    active(state).filter(move |u| access(state, u, channel) != Access::None)
}

/// Users who learn about a channel's subscribers (`peer_add` / `peer_remove`): those who can
/// reach its content, and administrators.
pub fn peer_audience<'a>(
    state: &'a Projections,
    channel: &'a Channel,
) -> impl Iterator<Item = &'a User> + 'a {
    active(state).filter(move |u| access(state, u, channel) == Access::Content || u.role.is_admin())
}

/// Users holding a copy of a message, active ones only.
pub fn active_holders(state: &Projections, message: MessageId) -> Vec<&User> {
    state
        .messages
        .holders(message)
        .into_iter()
        .filter_map(|id| state.users.get(id).filter(|u| u.is_active))
        .collect()
}

/// A `realm_user` `update` of `person`'s fields for everyone.
pub fn realm_user_update(state: &Projections, user_id: UserId, person: Value) -> Deliveries {
    let mut person = person;
    person["user_id"] = json!(user_id.0);
    to_all(
        state,
        json!({"type": "realm_user", "op": "update", "person": person}),
    )
}

/// A `stream` `update` of one property (with `extra` fields) for everyone who sees the channel.
pub fn channel_update(
    state: &Projections,
    channel_id: ChannelId,
    property: &str,
    value: Value,
    extra: Value,
) -> Deliveries {
    let Some(channel) = state.channels.get(channel_id) else {
        return Deliveries::new();
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
pub fn first_message_changes(
    state: &Projections,
    channel_id: ChannelId,
    arrived: &[MessageId],
    left: &[MessageId],
) -> Deliveries {
    let first = first_message_id(state, channel_id);
    let came_first = first.is_some_and(|f| arrived.iter().any(|id| id.0 == f));
    let left_first = left
        .iter()
        .map(|id| id.0)
        .min()
        .is_some_and(|oldest_gone| first.is_none_or(|f| oldest_gone < f));
    if !came_first && !left_first {
        return Deliveries::new();
    }
    channel_update(
        state,
        channel_id,
        "first_message_id",
        json!(first),
        json!({}),
    )
}

//! Channels and subscriptions as clients see them: `GET /streams`, `stream` and `subscription`
//! events, `/register`'s `subscriptions`, `unsubscribed` and `never_subscribed`.

use super::fields::Fields;
use super::groups::render_group_setting;
use crate::events::{ChannelPermissions, SystemGroup};
use crate::ids::{ChannelId, UserId};
use crate::projections::access;
use crate::projections::{Access, Channel, Projections, Subscription, User};
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

fn permissions_into(out: &mut impl Fields, permissions: &ChannelPermissions) {
    for name in ChannelPermissions::NAMES {
        if let Some(setting) = permissions.get(name) {
            out.field(name, &render_group_setting(setting));
        }
    }
}

/// A channel as `GET /streams` and `stream` events send it.
pub fn channel_json(state: &Projections, channel: &Channel) -> Value {
    let mut map = Map::new();
    channel_fields(&mut map, state, channel);
    Value::Object(map)
}

/// The fields of [`channel_json`], written into `out`.
pub fn channel_fields(out: &mut impl Fields, state: &Projections, channel: &Channel) {
    let policy = stream_post_policy(state, channel);
    out.field("stream_id", &channel.id.0);
    out.field("name", &channel.name);
    out.field("is_archived", &channel.is_archived);
    out.field("description", &channel.description);
    out.field("date_created", &(channel.date_created_ms / 1000));
    out.field("creator_id", &channel.creator_id);
    out.field("invite_only", &channel.invite_only);
    out.field("rendered_description", &channel.rendered_description);
    out.field("is_web_public", &channel.is_web_public);
    out.field("stream_post_policy", &policy);
    out.field("message_retention_days", &channel.message_retention_days);
    out.field(
        "history_public_to_subscribers",
        &channel.history_public_to_subscribers,
    );
    out.field("topics_policy", channel.topics_policy.as_str());
    out.field("first_message_id", &first_message_id(state, channel.id));
    out.field("folder_id", &channel.folder_id);
    let (weekly_traffic, recently_active) = activity(state, channel);
    out.field("is_recently_active", &recently_active);
    out.field("is_announcement_only", &(policy == 2));
    permissions_into(out, &channel.permissions);
    out.field("stream_weekly_traffic", &weekly_traffic);
    out.field("subscriber_count", &subscriber_count(state, channel));
}

const DAY_SECS: i64 = 86_400;

/// Zulip's `stream_weekly_traffic` and `is_recently_active` for `channel` now: the average
/// number of messages a week over the last four weeks (null for channels younger than a week;
/// at least 1 when there was any traffic; two significant digits), and whether the channel is
/// younger than 180 days or had a message in the last 180 days.
fn activity(state: &Projections, channel: &Channel) -> (Option<i64>, bool) {
    activity_at(state, channel, crate::time::now_ms() / 1000)
}

fn activity_at(state: &Projections, channel: &Channel, now: i64) -> (Option<i64>, bool) {
    let age_days = (now - channel.date_created_ms / 1000) / DAY_SECS;
    // A channel's ids ascend, and so do their timestamps (the engine's clock never goes
    // back), so the messages of the last four weeks are found by a binary search.
    let ids = state
        .messages
        .in_channel(channel.id)
        .map_or(&[][..], |ids| ids.as_slice());
    let time =
        |id: &crate::ids::MessageId| state.messages.get(*id).map_or(i64::MIN, |m| m.timestamp);
    let newest = ids
        .iter()
        .rev()
        .find_map(|id| state.messages.get(*id))
        .map(|m| m.timestamp);
    let recent = age_days < 180 || newest.is_some_and(|t| now - t < 180 * DAY_SECS);
    if age_days < 7 {
        return (None, recent);
    }
    // A channel quiet for four weeks (most, in a large organization) needs no search.
    let older = if newest.is_none_or(|t| now - t >= 28 * DAY_SECS) {
        ids.len()
    } else {
        ids.partition_point(|id| now - time(id) >= 28 * DAY_SECS)
    };
    let count = (ids.len() - older) as i64;
    let mut weekly = if age_days < 28 {
        count * 7 / age_days
    } else {
        count / 4
    };
    if weekly == 0 && count > 0 {
        weekly = 1;
    }
    (Some(round_significant(weekly, 2)), recent)
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
    state.users.active_among(&channel.subscribers)
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
            .filter(|u| state.users.is_active(**u))
            .map(|u| u.0)
            .collect()
    })
}

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

/// A subscription as `GET /users/me/subscriptions` and `subscription` events send it.
pub fn subscription_json(
    state: &Projections,
    user: &User,
    channel: &Channel,
    sub: &Subscription,
    include_subscribers: bool,
) -> Value {
    let mut map = Map::new();
    let shape = SubscriptionShape {
        include_subscribers,
        fill_defaults: false,
    };
    subscription_fields(&mut map, state, user, channel, sub, shape);
    Value::Object(map)
}

/// Which optional parts a subscription object carries.
#[derive(Debug, Clone, Copy)]
pub struct SubscriptionShape {
    /// `subscribers`.
    pub include_subscribers: bool,
    /// Notification settings that follow the user's defaults shown as those defaults, for
    /// clients without `notification_settings_null` (see [`fill_notification_defaults`]).
    pub fill_defaults: bool,
}

/// The fields of [`subscription_json`], written into `out`.
pub fn subscription_fields(
    out: &mut impl Fields,
    state: &Projections,
    user: &User,
    channel: &Channel,
    sub: &Subscription,
    shape: SubscriptionShape,
) {
    let policy = stream_post_policy(state, channel);
    out.field("stream_id", &channel.id.0);
    out.field("name", &channel.name);
    out.field("description", &channel.description);
    out.field("rendered_description", &channel.rendered_description);
    out.field("date_created", &(channel.date_created_ms / 1000));
    out.field("creator_id", &channel.creator_id);
    out.field("invite_only", &channel.invite_only);
    if shape.include_subscribers {
        out.field(
            "subscribers",
            &visible_subscribers(state, user, channel).unwrap_or_default(),
        );
    }
    let notification = |out: &mut _, field: &str, value: Option<bool>| {
        let setting = NOTIFICATION_DEFAULTS
            .iter()
            .find(|(name, _)| *name == field)
            .map(|(_, setting)| *setting);
        match (value, setting) {
            (None, Some(setting)) if shape.fill_defaults => Fields::field(
                out,
                field,
                &crate::projections::user_settings::value_json(
                    &state.user_settings.get(user.user_id, setting),
                ),
            ),
            _ => Fields::field(out, field, &value),
        }
    };
    notification(out, "desktop_notifications", sub.desktop_notifications);
    notification(out, "email_notifications", sub.email_notifications);
    notification(
        out,
        "wildcard_mentions_notify",
        sub.wildcard_mentions_notify,
    );
    notification(out, "push_notifications", sub.push_notifications);
    notification(out, "audible_notifications", sub.audible_notifications);
    out.field("pin_to_top", &sub.pin_to_top);
    out.field("is_muted", &sub.is_muted);
    out.field("in_home_view", &!sub.is_muted);
    out.field("is_announcement_only", &(policy == 2));
    out.field("is_web_public", &channel.is_web_public);
    out.field("color", &sub.color);
    out.field("stream_post_policy", &policy);
    out.field("message_retention_days", &channel.message_retention_days);
    out.field(
        "history_public_to_subscribers",
        &channel.history_public_to_subscribers,
    );
    out.field("first_message_id", &first_message_id(state, channel.id));
    out.field("folder_id", &channel.folder_id);
    out.field("topics_policy", channel.topics_policy.as_str());
    let (weekly_traffic, recently_active) = activity(state, channel);
    out.field("is_recently_active", &recently_active);
    out.field("stream_weekly_traffic", &weekly_traffic);
    permissions_into(out, &channel.permissions);
    out.field("is_archived", &channel.is_archived);
    out.field("subscriber_count", &subscriber_count(state, channel));
}

/// The ids of the default channels (`realm_default_streams`, the `default_streams` event).
pub fn default_channel_ids(state: &Projections) -> Value {
    state
        .channels
        .iter()
        .filter(|c| c.is_default && !c.is_archived)
        .map(|c| json!(c.id.0))
        .collect()
}

/// The default channel groups as Zulip lists them (`realm_default_stream_groups`, the
/// `default_stream_groups` event): by name, each with its channels' ids by channel name.
pub fn default_groups_json(state: &Projections) -> Value {
    let mut groups: Vec<_> = state.channels.default_groups().collect();
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    groups
        .into_iter()
        .map(|g| {
            let mut channels: Vec<_> = g
                .channel_ids
                .iter()
                .filter_map(|id| state.channels.get(*id))
                .collect();
            channels.sort_by(|a, b| a.name.cmp(&b.name));
            json!({
                "name": g.name,
                "id": g.id,
                "description": g.description,
                "streams": channels.iter().map(|c| c.id.0).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// The legacy `muted_topics` list of a user: `[channel name, topic, last updated]` for each
/// muted topic.
pub fn muted_topics_json(state: &Projections, user: UserId) -> Value {
    state
        .user_topics
        .of(user)
        .filter(|(_, t)| t.policy == crate::events::TopicPolicy::Muted)
        .filter_map(|(c, t)| {
            state
                .channels
                .get(c)
                .map(|channel| json!([channel.name, t.topic, t.last_updated]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{Given, OWNER};

    const DAY_MS: i64 = DAY_SECS * 1000;

    #[test]
    fn deactivated_subscribers_are_not_counted_before_or_after_a_snapshot() {
        use crate::events::{Event, Role};
        let mut given = Given::org();
        let (a, b) = (
            given.user("a@example.com", Role::Member),
            given.user("b@example.com", Role::Member),
        );
        let channel = given.channel("c", &[OWNER, a, b]);
        let count = |state: &Projections| {
            let channel = state.channels.get(channel).map(|c| channel_json(state, c));
            channel.map(|c| c["subscriber_count"].clone())
        };
        assert_eq!(count(&given.state), Some(serde_json::json!(3)));
        given.fold(vec![Event::UserDeactivated { user_id: a }]);
        assert_eq!(count(&given.state), Some(serde_json::json!(2)));
        let bytes = rmp_serde::to_vec(&given.state).unwrap_or_default();
        let mut restored: Projections =
            rmp_serde::from_slice(&bytes).unwrap_or_else(|e| panic!("not decoded: {e}"));
        restored.restore_derived_and_digest();
        assert_eq!(count(&restored), Some(serde_json::json!(2)));
        assert!(!restored.users.is_active(a) && restored.users.is_active(b));
        given.fold(vec![Event::UserReactivated { user_id: a }]);
        assert_eq!(count(&given.state), Some(serde_json::json!(3)));
    }

    /// A channel created on day 0 with one message on each of `days`.
    fn channel_with_messages(days: &[i64]) -> Projections {
        let mut given = Given::org();
        let channel = given.channel("c", &[OWNER]);
        for day in days {
            given.at(day * DAY_MS).message(OWNER, channel, "t", "hi");
        }
        given.state
    }

    fn at_day(state: &Projections, day: i64) -> (Option<i64>, bool) {
        let channel = state.channels.get(ChannelId(1)).unwrap();
        activity_at(state, channel, day * DAY_SECS)
    }
    #[test]
    fn weekly_traffic_and_recent_activity_follow_zulip() {
        // Too young to estimate; active because new.
        assert_eq!(at_day(&channel_with_messages(&[1, 2]), 3), (None, true));
        // Two weeks old with 6 messages: 6 * 7 / 14 = 3 a week.
        let state = channel_with_messages(&[1, 2, 3, 10, 11, 12]);
        assert_eq!(at_day(&state, 14), (Some(3), true));
        // Past four weeks: only the last 28 days count, divided by 4; some traffic is at least 1.
        assert_eq!(at_day(&state, 39), (Some(1), true));
        assert_eq!(at_day(&state, 100), (Some(0), true));
        // Inactive after 180 days without messages (and older than 180 days).
        assert_eq!(at_day(&state, 200), (Some(0), false));
        assert_eq!(round_significant(1234, 2), 1200);
        assert_eq!(round_significant(1250, 2), 1300);
        assert_eq!(round_significant(99, 2), 99);
    }

    #[test]
    fn a_subscription_written_to_bytes_equals_its_map_with_defaults_filled() {
        let state = channel_with_messages(&[1, 2]);
        let channel = state.channels.get(ChannelId(1)).unwrap();
        let owner = state.users.get(OWNER).unwrap();
        let sub = state.channels.subscription(OWNER, channel.id).unwrap();
        for fill_defaults in [false, true] {
            let mut expected = subscription_json(&state, owner, channel, sub, true);
            if fill_defaults {
                fill_notification_defaults(&state, OWNER, &mut expected);
            }
            let shape = SubscriptionShape {
                include_subscribers: true,
                fill_defaults,
            };
            let mut buf = super::super::fields::JsonBuf::default();
            buf.object(|o| subscription_fields(o, &state, owner, channel, sub, shape));
            let bytes = buf.into_bytes().unwrap();
            // Same keys, same values, same order.
            assert_eq!(bytes, serde_json::to_vec(&expected).unwrap());
            let filled = expected["desktop_notifications"].is_boolean();
            assert_eq!(filled, fill_defaults, "{expected}");
        }
    }
}

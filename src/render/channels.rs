//! Channels and subscriptions as clients see them: `GET /streams`, `stream` and `subscription`
//! events, `/register`'s `subscriptions`, `unsubscribed` and `never_subscribed`.

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

/// The default channels for new users, as `/register`'s `default_streams` and the
/// `default_streams` event list them.
pub fn default_channels_json(state: &Projections) -> Value {
    state
        .channels
        .iter()
        .filter(|c| c.is_default && !c.is_archived)
        .map(|c| channel_json(state, c))
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

    /// A channel created on day 0 with one message on each of `days`.
    fn channel_with_messages(days: &[i64]) -> Projections {
        let mut given = Given::org();
        let channel = given.channel("c", &[OWNER]);
        for day in days {
            given.at(day * DAY_MS).message(OWNER, channel, "t", "hi");
        }
        given.state
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

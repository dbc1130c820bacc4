//! Deleting messages, by request or when their retention period has passed.

use super::actor;
use super::Decision;
use super::{allowed_here, past_limit};
use crate::commands::messages::readable;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, Recipient};
use crate::ids::{MessageId, UserId};
use crate::projections::Address;
use crate::projections::{Message, Projections};
use std::collections::{BTreeMap, BTreeSet};

/// `DELETE /messages/{id}`.
pub fn delete_message(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let channel = message.channel().and_then(|id| state.channels.get(id));
    let may_delete_any = allowed_here(
        state,
        me,
        "can_delete_any_message_group",
        channel.map(|c| &c.permissions.can_delete_any_message_group),
    );
    if !may_delete_any {
        let may_delete_own = message.sender_id == me.user_id
            && allowed_here(
                state,
                me,
                "can_delete_own_message_group",
                channel.map(|c| &c.permissions.can_delete_own_message_group),
            );
        if !may_delete_own {
            return Err(ApiError::bad_request(
                "You don't have permission to delete this message",
            ));
        }
        if past_limit(
            state,
            "message_content_delete_limit_seconds",
            message.timestamp,
            ctx.now_ms / 1000,
        ) {
            return Err(ApiError::bad_request(
                "The time limit for deleting this message has passed",
            ));
        }
    }
    Ok(Decision::events(vec![deletion(state, &[message])]))
}

const DAY_SECS: i64 = 86_400;

/// The retention job: deletes messages older than their retention period as of `ctx.now_ms`
/// (a channel's `message_retention_days`, or the organization's when it inherits; direct
/// messages by the organization's), at most `limit` at a time, one deletion per conversation.
/// Returns how many it deleted; the job runs it again until that is 0.
pub fn expire_messages(state: &Projections, ctx: &Ctx, limit: usize) -> ApiResult<Decision<usize>> {
    let now = ctx.now_ms / 1000;
    let days = |value: Option<i64>| value.filter(|d| *d > 0);
    let realm_days = days(match state.realm.value("message_retention_days") {
        crate::events::RealmValue::Int(n) => Some(n),
        _ => None,
    });
    // (cutoff in seconds, the messages of one conversation in id order)
    let mut sources: Vec<(i64, &crate::projections::id_set::IdSet)> = Vec::new();
    for channel in state.channels.iter() {
        let retention = match channel.message_retention_days {
            None => realm_days,
            Some(n) => days(Some(i64::from(n))),
        };
        if let (Some(d), Some(ids)) = (retention, state.messages.in_channel(channel.id)) {
            sources.push((now.saturating_sub(d.saturating_mul(DAY_SECS)), ids));
        }
    }
    if let Some(d) = realm_days {
        let cutoff = now.saturating_sub(d.saturating_mul(DAY_SECS));
        sources.extend(state.messages.conversations().map(|ids| (cutoff, ids)));
    }
    let mut groups: BTreeMap<String, Vec<&Message>> = BTreeMap::new();
    let mut taken = 0;
    'sources: for (cutoff, ids) in sources {
        for id in ids {
            let Some(message) = state.messages.get(*id) else {
                continue;
            };
            if message.timestamp >= cutoff {
                break;
            }
            if taken == limit {
                break 'sources;
            }
            let key = match &message.recipient {
                Address::Channel { channel_id, topic } => {
                    format!(
                        "c{channel_id}/{}",
                        crate::projections::user_topics::topic_key(topic)
                    )
                }
                Address::Direct { user_ids } => format!("d{user_ids:?}"),
            };
            groups.entry(key).or_default().push(message);
            taken += 1;
        }
    }
    let events = groups
        .values()
        .map(|messages| deletion(state, messages))
        .collect();
    Ok(Decision::new(events, taken))
}

/// The deletion of some messages of one conversation, with everyone to tell: the users holding
/// a copy and, for channel messages, the channel's subscribers.
pub fn deletion(state: &Projections, messages: &[&Message]) -> Event {
    let mut holders: BTreeSet<UserId> = BTreeSet::new();
    for message in messages {
        holders.extend(state.messages.holders(message.id));
        if let Some(channel) = message.channel().and_then(|id| state.channels.get(id)) {
            holders.extend(channel.subscribers.iter().copied());
        }
    }
    let mut message_ids: Vec<MessageId> = messages.iter().map(|m| m.id).collect();
    message_ids.sort();
    Event::MessagesDeleted {
        message_ids,
        recipient: messages
            .first()
            .map(|m| m.recipient.to_recipient())
            .unwrap_or(Recipient::Direct {
                user_ids: Vec::new(),
            }),
        holders: holders.into_iter().collect(),
    }
}

/// Messages one `delete_topic` step deletes (one deletion event, newest first), so that a
/// huge topic is deleted in bounded steps, each durable on its own, as Zulip does.
pub const TOPIC_DELETION_BATCH: usize = 1_000;

/// One step of `POST /streams/{id}/delete_topic`: up to `TOPIC_DELETION_BATCH` of the topic's
/// newest messages the caller can read, for those who may delete any message in the channel.
/// Answers how many it deleted (0: the topic is empty).
pub fn delete_topic_step(
    state: &Projections,
    ctx: &Ctx,
    channel_id: crate::ids::ChannelId,
    topic: &str,
) -> ApiResult<Decision<usize>> {
    let me = actor(state, ctx)?;
    let channel = state
        .channels
        .get(channel_id)
        .filter(|c| crate::projections::access(state, me, c) != crate::projections::Access::None)
        .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?;
    let may_delete_any = allowed_here(
        state,
        me,
        "can_delete_any_message_group",
        Some(&channel.permissions.can_delete_any_message_group),
    );
    if !may_delete_any {
        return Err(ApiError::bad_request(
            "Must be an organization administrator",
        ));
    }
    let batch: Vec<&Message> = state
        .messages
        .in_topic(channel_id, topic)
        .into_iter()
        .flat_map(|ids| ids.iter().rev())
        .filter_map(|id| state.messages.get(*id))
        .filter(|m| crate::projections::can_read(state, me, m))
        .take(TOPIC_DELETION_BATCH)
        .collect();
    if batch.is_empty() {
        return Ok(Decision::new(Vec::new(), 0));
    }
    let count = batch.len();
    Ok(Decision::new(vec![deletion(state, &batch)], count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, Given, OWNER};
    use crate::events::{ChannelChange, RealmValue, Role};

    const DAY_MS: i64 = 86_400_000;
    const SENT_MS: i64 = 1_000_000_000;

    /// Alice in #general with one message sent at `SENT_MS`.
    fn alice_said_hi() -> (Given, UserId, MessageId) {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let general = given.channel("general", &[alice]);
        let hi = given.at(SENT_MS).message(alice, general, "t", "hi");
        (given, alice, hi)
    }

    #[test]
    fn a_topic_is_deleted_in_bounded_steps_newest_first() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let general = given.channel("general", &[alice]);
        let first = given.message(alice, general, "big", "first");
        for _ in 0..TOPIC_DELETION_BATCH {
            given.message(alice, general, "big", "more");
        }
        let other = given.message(alice, general, "other", "stays");
        let err = given.refused(alice, |s, c| delete_topic_step(s, c, general, "big"));
        assert_eq!(msg(&err), "Must be an organization administrator");
        let step =
            |given: &mut Given| given.ok(OWNER, |s, c| delete_topic_step(s, c, general, "BIG"));
        assert_eq!(step(&mut given), TOPIC_DELETION_BATCH);
        // The oldest is what is left.
        assert!(given.state.messages.get(first).is_some());
        assert_eq!(step(&mut given), 1);
        assert!(given.state.messages.get(first).is_none());
        assert_eq!(step(&mut given), 0);
        assert!(given.state.messages.get(other).is_some());
    }

    #[test]
    fn retention_deletes_what_outlived_its_period() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let general = given.channel("general", &[alice]);
        let old = given.at(SENT_MS).message(alice, general, "t", "old");
        let dm = given.direct(alice, &[OWNER], "dm");
        let new = given
            .at(SENT_MS + 8 * DAY_MS)
            .message(alice, general, "t", "new");
        given.at(SENT_MS + 9 * DAY_MS);
        // Nothing expires while everything is kept forever (the default).
        let decided = given.decided(OWNER, |s, c| expire_messages(s, c, 1000));
        assert_eq!((decided.events.len(), decided.reply), (0, 0));
        // A channel keeping five days loses the nine-day-old message, not the one-day-old one;
        // direct messages follow the organization, which still keeps everything.
        given.fold(vec![Event::ChannelChanged {
            channel_id: general,
            change: ChannelChange::MessageRetentionDays(Some(5)),
        }]);
        assert_eq!(given.ok(OWNER, |s, c| expire_messages(s, c, 1000)), 1);
        assert!(given.state.messages.get(old).is_none());
        assert!(given.state.messages.get(dm).is_some());
        assert!(given.state.messages.get(new).is_some());
        // An organization keeping a week takes the direct message; the channel's own
        // "forever" wins over it.
        given.fold(vec![
            Event::RealmSettingChanged {
                name: "message_retention_days".into(),
                value: RealmValue::Int(7),
            },
            Event::ChannelChanged {
                channel_id: general,
                change: ChannelChange::MessageRetentionDays(Some(-1)),
            },
        ]);
        given.at(SENT_MS + 39 * DAY_MS);
        assert_eq!(given.ok(OWNER, |s, c| expire_messages(s, c, 1)), 1);
        assert!(given.state.messages.get(dm).is_none());
        assert!(given.state.messages.get(new).is_some());
    }

    #[test]
    fn deletions_have_a_time_limit_except_for_administrators() {
        let (mut given, alice, hi) = alice_said_hi();
        // Ten minutes plus Zulip's grace period, and not a second more.
        let last_moment = SENT_MS + 10 * 60_000 + 20_000;
        given
            .at(last_moment)
            .decided(alice, |s, c| delete_message(s, c, hi));
        let late = given
            .at(last_moment + 1_000)
            .refused(alice, |s, c| delete_message(s, c, hi));
        assert_eq!(
            msg(&late),
            "The time limit for deleting this message has passed"
        );
        // Administrators delete any message, at any time; its holders are told.
        let decided = given.decided(OWNER, |s, c| delete_message(s, c, hi));
        assert!(matches!(
            &decided.events[..],
            [Event::MessagesDeleted { message_ids, holders, .. }]
                if message_ids == &[hi] && holders == &[alice]
        ));
    }

    #[test]
    fn others_messages_and_unknown_ones_cannot_be_deleted() {
        let (mut given, alice, hi) = alice_said_hi();
        let bob = given.user("bob@example.com", Role::Member);
        let err = given.refused(bob, |s, c| delete_message(s, c, hi));
        assert_eq!(
            msg(&err),
            "You don't have permission to delete this message"
        );
        let err = given.refused(alice, |s, c| delete_message(s, c, MessageId(99)));
        assert_eq!(msg(&err), "Invalid message(s)");
        // Once deleted, it is gone for its sender too.
        given.ok(alice, |s, c| delete_message(s, c, hi));
        let err = given.refused(alice, |s, c| delete_message(s, c, hi));
        assert_eq!(msg(&err), "Invalid message(s)");
    }
}

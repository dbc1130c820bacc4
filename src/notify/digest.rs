//! The weekly digest, by Zulip's rules (`zerver/lib/digest.py`): on the organization's
//! `digest_weekday` from 18:00 UTC, to each active person with `enable_digest_emails` who has
//! not been around for five days, the busiest conversations of their unmuted channels and the
//! channels created meanwhile; none when there is nothing to tell.

use crate::events::{RealmValue, TopicPolicy};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::{Channel, Projections};
use std::collections::{BTreeSet, HashMap};

/// Zulip's `DIGEST_CUTOFF`: away this long, and the digest covers this long.
pub const CUTOFF_MS: i64 = 5 * 24 * 3600 * 1000;
/// The hour (UTC) digests go out on the day, as Zulip's cron job.
const HOUR_UTC: i64 = 18;
/// Zulip's `MAX_HOT_TOPICS_TO_BE_INCLUDED_IN_DIGEST`.
pub const MAX_HOT_TOPICS: usize = 4;
/// Sample messages shown of each conversation.
pub const SAMPLES: usize = 2;

/// One of the busiest conversations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotTopic {
    pub channel: ChannelId,
    pub topic: String,
    /// Human senders, sorted by name.
    pub senders: Vec<String>,
    /// Messages by people (not bots) in the period.
    pub count: usize,
    /// The first messages of the period, oldest first.
    pub samples: Vec<MessageId>,
}

/// What a person's digest tells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Digest {
    pub hot: Vec<HotTopic>,
    pub new_channels: Vec<ChannelId>,
    /// With message content hidden: how many messages came, instead of the conversations.
    pub new_messages: usize,
    pub content_hidden: bool,
}

impl Digest {
    /// Zulip's `enough_traffic`.
    pub fn worth_sending(&self) -> bool {
        !self.new_channels.is_empty()
            || if self.content_hidden {
                self.new_messages > 0
            } else {
                !self.hot.is_empty()
            }
    }
}

/// Whether digests go out at `now_ms`: the organization's switch, its weekday, from 18:00 UTC.
pub fn digest_time(state: &Projections, now_ms: i64) -> bool {
    if !state.realm.flag("digest_emails_enabled") {
        return false;
    }
    let weekday = match state.realm.value("digest_weekday") {
        RealmValue::Int(n) => n,
        _ => 1,
    };
    let days = now_ms.div_euclid(86_400_000);
    // 1970-01-01 was a Thursday (3, counting from Monday as 0).
    (days + 3).rem_euclid(7) == weekday && now_ms.rem_euclid(86_400_000) >= HOUR_UTC * 3_600_000
}

/// The people due a digest at `now_ms`: active people (not bots) who want one, away for five
/// days (no client report since), and not sent one in the last six days.
pub fn recipients(state: &Projections, now_ms: i64) -> Vec<UserId> {
    let cutoff = now_ms - CUTOFF_MS;
    state
        .users
        .members()
        .filter(|u| u.is_active && !u.is_bot())
        .filter(|u| state.user_settings.flag(u.user_id, "enable_digest_emails"))
        .filter(|u| {
            state
                .presence
                .get(u.user_id)
                .is_none_or(|p| p.last_connected_ms < cutoff)
        })
        .filter(|u| {
            state
                .notices
                .last_digest(u.user_id)
                .is_none_or(|at| at < now_ms - 6 * 24 * 3600 * 1000)
        })
        .map(|u| u.user_id)
        .collect()
}

/// `user`'s digest of what came since `since_ms`.
pub fn digest_of(state: &Projections, user: UserId, since_ms: i64) -> Digest {
    let Some(person) = state.users.get(user) else {
        return Digest::default();
    };
    let since_secs = since_ms / 1000;
    let content_hidden = !(state
        .user_settings
        .flag(user, "message_content_in_email_notifications")
        && state
            .realm
            .flag("message_content_allowed_in_email_notifications"));
    let new_channels = state
        .channels
        .iter()
        .filter(|c| !c.is_archived && c.date_created_ms >= since_ms)
        .filter(|c| {
            if person.role == crate::events::Role::Guest {
                c.is_web_public
            } else {
                !c.invite_only
            }
        })
        .map(|c| c.id)
        .collect();
    let mut topics: HashMap<(ChannelId, String), HotTopic> = HashMap::new();
    let mut senders: HashMap<(ChannelId, String), BTreeSet<String>> = HashMap::new();
    let mut new_messages = 0;
    let channels: Vec<&Channel> = state
        .channels
        .iter()
        .filter(|c| !c.is_archived && c.date_created_ms < since_ms)
        .filter(|c| {
            state
                .channels
                .subscription(user, c.id)
                .is_some_and(|s| s.active && !s.is_muted)
        })
        .collect();
    for channel in channels {
        let Some(ids) = state.messages.in_channel(channel.id) else {
            continue;
        };
        // Newest first, back to the period's start.
        for id in ids.iter().rev() {
            let Some(message) = state.messages.get(*id) else {
                continue;
            };
            if message.timestamp < since_secs {
                break;
            }
            let topic = message.topic();
            if state.user_topics.policy(user, channel.id, topic) == TopicPolicy::Muted {
                continue;
            }
            let Some(sender) = state.users.get(message.sender_id) else {
                continue;
            };
            let key = (
                channel.id,
                crate::projections::user_topics::topic_key(topic),
            );
            let entry = topics.entry(key.clone()).or_insert_with(|| HotTopic {
                channel: channel.id,
                topic: topic.to_owned(),
                senders: Vec::new(),
                count: 0,
                samples: Vec::new(),
            });
            // Walking backwards: the oldest messages end up as the samples.
            entry.samples.insert(0, message.id);
            entry.samples.truncate(SAMPLES);
            if !sender.is_bot() {
                entry.count += 1;
                new_messages += 1;
                senders
                    .entry(key)
                    .or_default()
                    .insert(sender.full_name.clone());
            }
        }
    }
    for (key, names) in senders {
        if let Some(topic) = topics.get_mut(&key) {
            topic.senders = names.into_iter().collect();
        }
    }
    let mut all: Vec<HotTopic> = topics.into_values().filter(|t| t.count > 0).collect();
    // Zulip's choice: the two with the most people talking, then the most messages.
    all.sort_by(|a, b| {
        (b.senders.len(), b.count, &a.topic).cmp(&(a.senders.len(), a.count, &b.topic))
    });
    let mut hot: Vec<HotTopic> = all.iter().take(2).cloned().collect();
    let mut rest: Vec<HotTopic> = all.into_iter().skip(2).collect();
    rest.sort_by(|a, b| (b.count, &a.topic).cmp(&(a.count, &b.topic)));
    hot.extend(
        rest.into_iter()
            .take(MAX_HOT_TOPICS - hot.len().min(MAX_HOT_TOPICS)),
    );
    Digest {
        hot: if content_hidden { Vec::new() } else { hot },
        new_channels,
        new_messages,
        content_hidden,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::Given;
    use crate::events::{Event, Role};

    #[test]
    fn the_busiest_conversations_of_unmuted_channels_and_the_new_channels() {
        let mut given = Given::org();
        given.at(1_000_000_000);
        let ada = given.user("ada@example.com", Role::Member);
        let ben = given.user("ben@example.com", Role::Member);
        let cy = given.user("cy@example.com", Role::Member);
        let dora = given.user("dora@example.com", Role::Member);
        let general = given.channel("general", &[ada, ben, cy, dora]);
        let quiet = given.channel("quiet", &[ada, ben, dora]);
        given.at(1_000_000_000 + CUTOFF_MS);
        let since = 1_000_000_000 + CUTOFF_MS - 1;
        let new = given.channel("brand-new", &[ben]);
        for (who, topic) in [
            (ben, "many people"),
            (cy, "many people"),
            (ben, "chatty"),
            (ben, "chatty"),
            (ben, "chatty"),
            (cy, "small"),
        ] {
            given.message(who, general, topic, "words");
        }
        given.message(ben, quiet, "muted away", "hidden");
        given.fold(vec![Event::SubscriptionPropertyChanged {
            user_id: dora,
            channel_id: quiet,
            property: crate::events::SubscriptionProperty::IsMuted(true),
        }]);
        let digest = digest_of(&given.state, dora, since);
        let names: Vec<&str> = digest.hot.iter().map(|t| t.topic.as_str()).collect();
        assert_eq!(names, ["many people", "chatty", "small"]);
        assert_eq!(digest.hot[0].senders, ["ben", "cy"]);
        assert_eq!(digest.hot[1].count, 3);
        assert_eq!(digest.hot[1].samples.len(), SAMPLES);
        assert_eq!(digest.new_channels, vec![new]);
        assert!(digest.worth_sending());
        // Nothing new since later: nothing to send.
        assert!(!digest_of(&given.state, dora, since + CUTOFF_MS).worth_sending());
    }

    #[test]
    fn digests_go_out_on_the_weekday_from_six_in_the_evening_to_people_away() {
        let mut given = Given::org();
        let ada = given.user("ada@example.com", Role::Member);
        // Tuesday 2026-12-01, 18:00 UTC.
        let tuesday_evening = 1_796_148_000_000;
        assert!(
            !digest_time(&given.state, tuesday_evening),
            "off by default"
        );
        given.fold(vec![Event::RealmSettingChanged {
            name: "digest_emails_enabled".into(),
            value: RealmValue::Bool(true),
        }]);
        assert!(digest_time(&given.state, tuesday_evening));
        assert!(
            !digest_time(&given.state, tuesday_evening - 3_600_000),
            "17:00"
        );
        assert!(
            !digest_time(&given.state, tuesday_evening + 86_400_000),
            "Wednesday"
        );
        assert!(recipients(&given.state, tuesday_evening).contains(&ada));
        given.at(tuesday_evening - 1000);
        given.fold(vec![Event::PresenceUpdated {
            user_id: ada,
            active: true,
        }]);
        assert!(
            !recipients(&given.state, tuesday_evening).contains(&ada),
            "around lately"
        );
    }
}

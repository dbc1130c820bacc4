//! Who is told about a message by email, and why: Zulip's rules
//! (`zerver/lib/notification_data.py`, and the user id sets `message_send.py` computes), over
//! the projections. Whether the person is away from every client is the caller's to say.

use crate::events::{NoticeTrigger, TopicPolicy};
use crate::ids::{ChannelId, UserId};
use crate::projections::message::flags;
use crate::projections::{Address, Message, Projections};
use std::collections::{BTreeSet, HashMap};

/// How a person is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Medium {
    Email,
    Push,
}

impl Medium {
    /// The person's switch for direct messages, mentions and wildcard mentions.
    fn offline_setting(self) -> &'static str {
        match self {
            Medium::Email => "enable_offline_email_notifications",
            Medium::Push => "enable_offline_push_notifications",
        }
    }

    fn followed_setting(self) -> &'static str {
        match self {
            Medium::Email => "enable_followed_topic_email_notifications",
            Medium::Push => "enable_followed_topic_push_notifications",
        }
    }

    fn channel_setting(self) -> &'static str {
        match self {
            Medium::Email => "enable_stream_email_notifications",
            Medium::Push => "enable_stream_push_notifications",
        }
    }
}

/// Why `user` would be emailed about `message` by their settings (see [`trigger`]).
pub fn email_trigger(
    state: &Projections,
    message: &Message,
    user: UserId,
) -> Option<NoticeTrigger> {
    trigger(state, message, user, Medium::Email)
}

/// Why `user` would be told about `message` by `medium`, by their settings, in Zulip's order
/// of precedence; `None` when nothing of theirs asks for it. Never for their own messages, for
/// a sender they muted, for bots or deactivated people, for a message they already read, or for
/// Welcome Bot's greeting (sent as the person joins, where they are; an email about it would be
/// noise).
pub fn trigger(
    state: &Projections,
    message: &Message,
    user: UserId,
    medium: Medium,
) -> Option<NoticeTrigger> {
    if user == message.sender_id || state.mutes.mutes(user, message.sender_id) {
        return None;
    }
    let person = state.users.get(user)?;
    if !person.is_active || person.is_bot() {
        return None;
    }
    let from_welcome_bot = state.users.get(message.sender_id).is_some_and(|s| {
        s.is_system_bot() && s.email == crate::commands::notices::WELCOME_BOT_EMAIL
    });
    if from_welcome_bot {
        return None;
    }
    let bits = state.messages.flags(user, message.id)?;
    if bits & flags::READ != 0 {
        return None;
    }
    let settings = &state.user_settings;
    let offline = settings.flag(user, medium.offline_setting());
    let (channel_id, topic) = match &message.recipient {
        Address::Direct { .. } => return offline.then_some(NoticeTrigger::DirectMessage),
        Address::Channel { channel_id, topic } => (*channel_id, &**topic),
    };
    if offline && bits & flags::MENTIONED != 0 {
        return Some(NoticeTrigger::Mentioned);
    }
    let subscription = state.channels.subscription(user, channel_id);
    let policy = state.user_topics.policy(user, channel_id, topic);
    let followed = policy == TopicPolicy::Followed;
    // A muted topic, or a muted channel whose topic was not unmuted, is quiet (for wildcard
    // mentions and channel-wide notifications; a followed topic speaks for itself).
    let quiet = policy == TopicPolicy::Muted
        || (subscription.is_some_and(|s| s.is_muted) && policy != TopicPolicy::Unmuted);
    let topic_wildcard = bits & flags::TOPIC_WILDCARD != 0;
    let stream_wildcard = bits & flags::STREAM_WILDCARD != 0;
    if offline && (topic_wildcard || stream_wildcard) {
        if followed && settings.flag(user, "enable_followed_topic_wildcard_mentions_notify") {
            return Some(if topic_wildcard {
                NoticeTrigger::TopicWildcardMentionedInFollowedTopic
            } else {
                NoticeTrigger::StreamWildcardMentionedInFollowedTopic
            });
        }
        let wildcard_notify = subscription
            .and_then(|s| s.wildcard_mentions_notify)
            .unwrap_or_else(|| settings.flag(user, "wildcard_mentions_notify"));
        if wildcard_notify && !quiet {
            return Some(if topic_wildcard {
                NoticeTrigger::TopicWildcardMentioned
            } else {
                NoticeTrigger::StreamWildcardMentioned
            });
        }
    }
    if followed && settings.flag(user, medium.followed_setting()) {
        return Some(match medium {
            Medium::Email => NoticeTrigger::FollowedTopicEmailNotify,
            Medium::Push => NoticeTrigger::FollowedTopicPushNotify,
        });
    }
    if !quiet && channel_on(state, user, channel_id, medium) {
        return Some(match medium {
            Medium::Email => NoticeTrigger::StreamEmailNotify,
            Medium::Push => NoticeTrigger::StreamPushNotify,
        });
    }
    None
}

/// Whether `user` asked to be told by `medium` about every message of `channel_id`: the
/// subscription's own choice, else their default for channels.
fn channel_on(state: &Projections, user: UserId, channel_id: ChannelId, medium: Medium) -> bool {
    state
        .channels
        .subscription(user, channel_id)
        .filter(|s| s.active)
        .is_some_and(|s| {
            let own = match medium {
                Medium::Email => s.email_notifications,
                Medium::Push => s.push_notifications,
            };
            own.unwrap_or_else(|| state.user_settings.flag(user, medium.channel_setting()))
        })
}

/// The people a message might concern, to be checked one by one with [`trigger`]: the
/// other participants of a direct message; for a channel message, those it mentions or whose
/// alert words it holds, everyone subscribed when it mentions them all, the topic's followers,
/// and those who want email or pushes about the whole channel. The last is kept per channel in `cache`,
/// which the caller empties when subscriptions or settings change.
pub fn candidates(
    state: &Projections,
    message: &Message,
    cache: &mut HashMap<ChannelId, Vec<UserId>>,
) -> BTreeSet<UserId> {
    let mut out = BTreeSet::new();
    match &message.recipient {
        Address::Direct { user_ids } => out.extend(user_ids.iter().copied()),
        Address::Channel { channel_id, topic } => {
            out.extend(message.mentioned.iter().copied());
            if let Some(extra) = &message.extra {
                out.extend(extra.alerted.iter().copied());
            }
            let channel = state.channels.get(*channel_id);
            if message.wildcards != 0 {
                out.extend(
                    channel
                        .into_iter()
                        .flat_map(|c| c.subscribers.iter().copied()),
                );
            }
            out.extend(
                state
                    .user_topics
                    .on_topic(*channel_id, topic)
                    .into_iter()
                    .filter(|(_, policy)| *policy == TopicPolicy::Followed)
                    .map(|(user, _)| user),
            );
            let watchers = cache.entry(*channel_id).or_insert_with(|| {
                channel
                    .into_iter()
                    .flat_map(|c| c.subscribers.iter().copied())
                    .filter(|user| {
                        channel_on(state, *user, *channel_id, Medium::Email)
                            || channel_on(state, *user, *channel_id, Medium::Push)
                    })
                    .collect()
            });
            out.extend(watchers.iter().copied());
        }
    }
    out.remove(&message.sender_id);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::Given;
    use crate::events::{Event, RealmValue, Role, SubscriptionProperty};
    use NoticeTrigger::*;

    /// Alice, Bob and a channel they share, and what reaches Bob by email for each message.
    struct World {
        given: Given,
        alice: UserId,
        bob: UserId,
        general: ChannelId,
    }

    fn world() -> World {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let bob = given.user("bob@example.com", Role::Member);
        let general = given.channel("general", &[alice, bob]);
        World {
            given,
            alice,
            bob,
            general,
        }
    }

    impl World {
        fn bob_mailed(&mut self, topic: &str, text: &str) -> Option<NoticeTrigger> {
            let id = self.given.message(self.alice, self.general, topic, text);
            let state = &self.given.state;
            let message = state.messages.get(id).unwrap();
            let mut cache = HashMap::new();
            let candidate = candidates(state, message, &mut cache).contains(&self.bob);
            let trigger = email_trigger(state, message, self.bob);
            // Whoever the rules would mail is among the candidates.
            assert!(
                trigger.is_none() || candidate,
                "{trigger:?} for a non-candidate"
            );
            trigger
        }

        fn setting(&mut self, name: &str, on: bool) {
            let bob = self.bob;
            self.given.fold(vec![Event::UserSettingChanged {
                user_id: bob,
                name: name.into(),
                value: RealmValue::Bool(on),
            }]);
        }

        fn topic(&mut self, topic: &str, policy: TopicPolicy) {
            let (bob, general) = (self.bob, self.general);
            self.given.fold(vec![Event::TopicVisibilitySet {
                user_id: bob,
                channel_id: general,
                topic: topic.into(),
                policy,
            }]);
        }

        fn subscription(&mut self, property: SubscriptionProperty) {
            let (bob, general) = (self.bob, self.general);
            self.given.fold(vec![Event::SubscriptionPropertyChanged {
                user_id: bob,
                channel_id: general,
                property,
            }]);
        }
    }

    #[test]
    fn direct_messages_and_mentions_by_zulips_rules() {
        let mut w = world();
        let (alice, bob) = (w.alice, w.bob);
        let dm = w.given.direct(alice, &[bob], "hi");
        let state = &w.given.state;
        let message = state.messages.get(dm).unwrap();
        assert_eq!(email_trigger(state, message, bob), Some(DirectMessage));
        assert_eq!(
            email_trigger(state, message, alice),
            None,
            "never one's own"
        );
        assert_eq!(w.bob_mailed("t", "plain"), None);
        assert_eq!(w.bob_mailed("t", "hey @**bob**"), Some(Mentioned));
        // A personal mention reaches through a muted topic.
        w.topic("quiet", TopicPolicy::Muted);
        assert_eq!(w.bob_mailed("quiet", "hey @**bob**"), Some(Mentioned));
        // The switch for direct messages and mentions.
        w.setting("enable_offline_email_notifications", false);
        assert_eq!(w.bob_mailed("t", "hey @**bob**"), None);
        let dm = w.given.direct(alice, &[bob], "again");
        let state = &w.given.state;
        assert_eq!(
            email_trigger(state, state.messages.get(dm).unwrap(), bob),
            None
        );
    }

    #[test]
    fn wildcard_mentions_follow_the_subscription_then_the_person_and_muting() {
        let mut w = world();
        assert_eq!(
            w.bob_mailed("t", "@**all** look"),
            Some(StreamWildcardMentioned)
        );
        w.subscription(SubscriptionProperty::WildcardMentionsNotify(Some(false)));
        assert_eq!(w.bob_mailed("t", "@**all** look"), None);
        w.subscription(SubscriptionProperty::WildcardMentionsNotify(None));
        w.setting("wildcard_mentions_notify", false);
        assert_eq!(w.bob_mailed("t", "@**all** look"), None);
        w.setting("wildcard_mentions_notify", true);
        // A muted channel is quiet unless the topic was unmuted; a followed topic speaks.
        w.subscription(SubscriptionProperty::IsMuted(true));
        assert_eq!(w.bob_mailed("t", "@**all** look"), None);
        w.topic("open", TopicPolicy::Unmuted);
        assert_eq!(
            w.bob_mailed("open", "@**all** look"),
            Some(StreamWildcardMentioned)
        );
        w.topic("mine", TopicPolicy::Followed);
        assert_eq!(
            w.bob_mailed("mine", "@**all** look"),
            Some(StreamWildcardMentionedInFollowedTopic)
        );
        assert_eq!(
            w.bob_mailed("mine", "plain"),
            Some(FollowedTopicEmailNotify)
        );
        w.setting("enable_followed_topic_email_notifications", false);
        assert_eq!(w.bob_mailed("mine", "plain"), None);
    }

    #[test]
    fn channel_email_by_subscription_or_default_not_in_muted_topics() {
        let mut w = world();
        assert_eq!(w.bob_mailed("t", "plain"), None);
        w.setting("enable_stream_email_notifications", true);
        assert_eq!(w.bob_mailed("t", "plain"), Some(StreamEmailNotify));
        w.subscription(SubscriptionProperty::EmailNotifications(Some(false)));
        assert_eq!(w.bob_mailed("t", "plain"), None);
        w.subscription(SubscriptionProperty::EmailNotifications(Some(true)));
        w.setting("enable_stream_email_notifications", false);
        assert_eq!(w.bob_mailed("t", "plain"), Some(StreamEmailNotify));
        w.topic("quiet", TopicPolicy::Muted);
        assert_eq!(w.bob_mailed("quiet", "plain"), None);
    }

    #[test]
    fn nothing_from_a_muted_sender_or_to_a_bot_or_for_a_read_message() {
        let mut w = world();
        let (alice, bob) = (w.alice, w.bob);
        w.given.fold(vec![Event::UserMuted {
            user_id: bob,
            muted_user_id: alice,
        }]);
        assert_eq!(w.bob_mailed("t", "hey @**bob**"), None);
        w.given.fold(vec![Event::UserUnmuted {
            user_id: bob,
            muted_user_id: alice,
        }]);
        let id = w.given.message(alice, w.general, "t", "hey @**bob**");
        w.given.fold(vec![Event::MessageFlagsChanged {
            user_id: bob,
            flag: crate::events::MessageFlag::Read,
            add: true,
            message_ids: vec![id],
        }]);
        let state = &w.given.state;
        assert_eq!(
            email_trigger(state, state.messages.get(id).unwrap(), bob),
            None
        );
    }
}

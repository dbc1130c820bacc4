//! Per-user topic visibility policies (muted, unmuted, followed).

use crate::events::{Envelope, Event, TopicPolicy};
use crate::ids::{ChannelId, UserId};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One user's policy for one topic.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct UserTopic {
    /// The topic as the user last wrote it (topics match case-insensitively).
    pub topic: String,
    pub policy: TopicPolicy,
    /// Seconds since the epoch.
    pub last_updated: i64,
}

/// Policies of every user; policy 0 (none) is the absence of an entry.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct UserTopics {
    by_user: BTreeMap<UserId, BTreeMap<(ChannelId, String), UserTopic>>,
}

/// Topics are compared case-insensitively.
pub fn topic_key(topic: &str) -> String {
    topic.to_lowercase()
}

impl UserTopics {
    /// A user's policies, ordered by channel and topic.
    pub fn of(&self, user: UserId) -> impl Iterator<Item = (ChannelId, &UserTopic)> {
        self.by_user
            .get(&user)
            .into_iter()
            .flat_map(|topics| topics.iter().map(|((channel, _), t)| (*channel, t)))
    }

    /// The users with a policy for one topic, and their policies.
    pub fn on_topic(&self, channel: ChannelId, topic: &str) -> Vec<(UserId, TopicPolicy)> {
        let key = (channel, topic_key(topic));
        self.by_user
            .iter()
            .filter_map(|(user, topics)| topics.get(&key).map(|t| (*user, t.policy)))
            .collect()
    }

    /// The policy of one topic for one user (`None` when none is set).
    pub fn policy(&self, user: UserId, channel: ChannelId, topic: &str) -> TopicPolicy {
        self.by_user
            .get(&user)
            .and_then(|topics| topics.get(&(channel, topic_key(topic))))
            .map_or(TopicPolicy::None, |t| t.policy)
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::TopicVisibilitySet {
                user_id,
                channel_id,
                topic,
                policy,
            } => {
                let topics = self.by_user.entry(*user_id).or_default();
                let key = (*channel_id, topic_key(topic));
                if *policy == TopicPolicy::None {
                    topics.remove(&key);
                } else {
                    topics.insert(
                        key,
                        UserTopic {
                            topic: topic.clone(),
                            policy: *policy,
                            last_updated: env.at / 1000,
                        },
                    );
                }
            }
            Event::RealmCreated { .. }
            | Event::CustomEmojiAdded { .. }
            | Event::CustomEmojiDeactivated { .. }
            | Event::PresenceUpdated { .. }
            | Event::UserSettingChanged { .. }
            | Event::SubmessageAdded { .. }
            | Event::UserStatusSet { .. }
            | Event::BotStorageSet { .. }
            | Event::BotStorageRemoved { .. }
            | Event::AttachmentUploaded { .. }
            | Event::AttachmentDeleted { .. }
            | Event::ScheduledMessageSaved { .. }
            | Event::ScheduledMessageFailed { .. }
            | Event::ScheduledMessageRemoved { .. }
            | Event::NavigationViewAdded { .. }
            | Event::NavigationViewChanged { .. }
            | Event::NavigationViewRemoved { .. }
            | Event::BotChanged { .. }
            | Event::ClientDeviceRegistered { .. }
            | Event::ClientDeviceRemoved { .. }
            | Event::SessionStarted { .. }
            | Event::SessionEnded { .. }
            | Event::TwoFactorChanged { .. }
            | Event::SignInTokenSpent { .. }
            | Event::NoticesRecorded { .. }
            | Event::NoticesSettled { .. }
            | Event::EmailQueued { .. }
            | Event::EmailSent { .. }
            | Event::EmailFailed { .. }
            | Event::PushDeviceChanged { .. }
            | Event::PushQueued { .. }
            | Event::PushSent { .. }
            | Event::PushFailed { .. }
            | Event::PushTestSent { .. }
            | Event::ClockWentBack { .. }
            | Event::UserEmailChanged { .. }
            | Event::DraftsSaved { .. }
            | Event::DraftRemoved { .. }
            | Event::SavedSnippetSaved { .. }
            | Event::SavedSnippetRemoved { .. }
            | Event::UserMuted { .. }
            | Event::AlertWordsAdded { .. }
            | Event::RealmDomainAdded { .. }
            | Event::RealmDomainChanged { .. }
            | Event::RealmDomainRemoved { .. }
            | Event::AlertWordsRemoved { .. }
            | Event::AvatarSet { .. }
            | Event::UserUnmuted { .. }
            | Event::LogErased { .. }
            | Event::ImportStarted { .. }
            | Event::ImportFinished { .. }
            | Event::RealmExported { .. }
            | Event::RealmExportDeleted { .. }
            | Event::Imported { .. }
            | Event::MessagesReadThrough { .. }
            | Event::RealmSettingChanged { .. }
            | Event::InvitationCreated { .. }
            | Event::InvitationResent { .. }
            | Event::InvitationRevoked { .. }
            | Event::InvitationAccepted { .. }
            | Event::CustomProfileFieldCreated { .. }
            | Event::CustomProfileFieldChanged { .. }
            | Event::CustomProfileFieldDeleted { .. }
            | Event::CustomProfileFieldsReordered { .. }
            | Event::ProfileDataSet { .. }
            | Event::LinkifierAdded { .. }
            | Event::LinkifierChanged { .. }
            | Event::LinkifierRemoved { .. }
            | Event::LinkifiersReordered { .. }
            | Event::UserCreated { .. }
            | Event::ApiKeyRegenerated { .. }
            | Event::PasswordChanged { .. }
            | Event::UserDeactivated { .. }
            | Event::UserReactivated { .. }
            | Event::UserChanged { .. }
            | Event::UserGroupCreated { .. }
            | Event::UserGroupMembersChanged { .. }
            | Event::UserGroupSubgroupsChanged { .. }
            | Event::UserGroupChanged { .. }
            | Event::ChannelCreated { .. }
            | Event::ChannelChanged { .. }
            | Event::Subscribed { .. }
            | Event::Unsubscribed { .. }
            | Event::SubscriptionPropertyChanged { .. }
            | Event::ChannelFolderCreated { .. }
            | Event::ChannelFolderChanged { .. }
            | Event::ChannelFoldersReordered { .. }
            | Event::MessageSent { .. }
            | Event::MessageFlagsChanged { .. }
            | Event::ReactionAdded { .. }
            | Event::ReactionRemoved { .. }
            | Event::MessageEdited { .. }
            | Event::MessagesDeleted { .. }
            | Event::TypingStarted { .. }
            | Event::TypingStopped { .. }
            | Event::EditTyping { .. }
            | Event::PlaygroundAdded { .. }
            | Event::PlaygroundRemoved { .. }
            | Event::RealmUserDefaultChanged { .. }
            | Event::DefaultChannelGroupSaved { .. }
            | Event::DefaultChannelGroupRemoved { .. }
            | Event::RealmImageSet { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        let mut out = Vec::new();
        for (user, topics) in &self.by_user {
            for ((channel, _), t) in topics {
                out.push(json!({
                    "user_id": user.0, "stream_id": channel.0, "topic_name": t.topic,
                    "visibility_policy": t.policy.code(), "last_updated": t.last_updated,
                }));
            }
        }
        Value::Array(out)
    }
}

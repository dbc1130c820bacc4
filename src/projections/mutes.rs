//! Muted users (`/users/me/muted_users`): whom each user muted, and since when.

use crate::events::{Envelope, Event};
use crate::ids::UserId;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Every user's muted users, with the time each was muted (seconds).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Mutes {
    by_user: BTreeMap<UserId, BTreeMap<UserId, i64>>,
}

impl Mutes {
    /// Whom `user` muted, ascending, with the time (seconds).
    pub fn of(&self, user: UserId) -> impl Iterator<Item = (UserId, i64)> + '_ {
        self.by_user
            .get(&user)
            .into_iter()
            .flatten()
            .map(|(id, at)| (*id, *at))
    }

    /// Users who muted `user`, ascending.
    pub fn muters_of(&self, user: UserId) -> impl Iterator<Item = UserId> + '_ {
        self.by_user
            .iter()
            .filter(move |(_, muted)| muted.contains_key(&user))
            .map(|(muter, _)| *muter)
    }

    pub fn mutes(&self, user: UserId, other: UserId) -> bool {
        self.by_user
            .get(&user)
            .is_some_and(|muted| muted.contains_key(&other))
    }

    /// Zulip's `muted_users` list: `[{id, timestamp}]`.
    pub fn json(&self, user: UserId) -> Value {
        Value::Array(
            self.of(user)
                .map(|(id, at)| json!({"id": id.0, "timestamp": at}))
                .collect(),
        )
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::UserMuted {
                user_id,
                muted_user_id,
            } => {
                self.by_user
                    .entry(*user_id)
                    .or_default()
                    .insert(*muted_user_id, env.at / 1000);
            }
            Event::UserUnmuted {
                user_id,
                muted_user_id,
            } => {
                if let Some(muted) = self.by_user.get_mut(user_id) {
                    muted.remove(muted_user_id);
                    if muted.is_empty() {
                        self.by_user.remove(user_id);
                    }
                }
            }
            Event::RealmCreated { .. }
            | Event::AlertWordsAdded { .. }
            | Event::RealmDomainAdded { .. }
            | Event::RealmDomainChanged { .. }
            | Event::RealmDomainRemoved { .. }
            | Event::AlertWordsRemoved { .. }
            | Event::AvatarSet { .. }
            | Event::BotStorageSet { .. }
            | Event::BotStorageRemoved { .. }
            | Event::UserStatusSet { .. }
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
            | Event::RealmSettingChanged { .. }
            | Event::CustomProfileFieldCreated { .. }
            | Event::CustomProfileFieldChanged { .. }
            | Event::CustomProfileFieldDeleted { .. }
            | Event::CustomProfileFieldsReordered { .. }
            | Event::ProfileDataSet { .. }
            | Event::InvitationCreated { .. }
            | Event::InvitationResent { .. }
            | Event::InvitationRevoked { .. }
            | Event::InvitationAccepted { .. }
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
            | Event::TopicVisibilitySet { .. }
            | Event::MessageSent { .. }
            | Event::TypingStarted { .. }
            | Event::TypingStopped { .. }
            | Event::EditTyping { .. }
            | Event::PlaygroundAdded { .. }
            | Event::PlaygroundRemoved { .. }
            | Event::RealmUserDefaultChanged { .. }
            | Event::DefaultChannelGroupSaved { .. }
            | Event::DefaultChannelGroupRemoved { .. }
            | Event::RealmImageSet { .. }
            | Event::MessageFlagsChanged { .. }
            | Event::ReactionAdded { .. }
            | Event::ReactionRemoved { .. }
            | Event::MessageEdited { .. }
            | Event::MessagesDeleted { .. }
            | Event::CustomEmojiAdded { .. }
            | Event::CustomEmojiDeactivated { .. }
            | Event::UserSettingChanged { .. }
            | Event::SubmessageAdded { .. }
            | Event::PresenceUpdated { .. }
            | Event::LogErased { .. }
            | Event::ImportStarted { .. }
            | Event::ImportFinished { .. }
            | Event::RealmExported { .. }
            | Event::RealmExportDeleted { .. }
            | Event::Imported { .. }
            | Event::MessagesReadThrough { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        Value::Object(
            self.by_user
                .keys()
                .map(|user| (user.0.to_string(), self.json(*user)))
                .collect(),
        )
    }
}

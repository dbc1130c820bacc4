//! Bot storage (`/bot_storage`): text values under keys, one store per user, which the official
//! bots package keeps its bots' state in.

use crate::events::{Envelope, Event};
use crate::ids::UserId;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Zulip's `USER_STATE_SIZE_LIMIT`: the characters of keys and values one user may store.
pub const STORAGE_SIZE_LIMIT: usize = 10_000_000;

/// Every user's stored entries.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct BotStorage {
    by_user: BTreeMap<UserId, BTreeMap<String, String>>,
}

/// The characters one entry counts for, as Zulip counts them.
pub fn entry_size(key: &str, value: &str) -> usize {
    key.chars().count() + value.chars().count()
}

impl BotStorage {
    /// One user's entries, in key order.
    pub fn of(&self, user: UserId) -> Option<&BTreeMap<String, String>> {
        self.by_user.get(&user)
    }

    /// What one user's entries count for against `STORAGE_SIZE_LIMIT`.
    pub fn size_of(&self, user: UserId) -> usize {
        self.of(user).map_or(0, |entries| {
            entries.iter().map(|(k, v)| entry_size(k, v)).sum()
        })
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::BotStorageSet { user_id, entries } => {
                let mine = self.by_user.entry(*user_id).or_default();
                for (key, value) in entries {
                    mine.insert(key.clone(), value.clone());
                }
            }
            Event::BotStorageRemoved { user_id, keys } => {
                if let Some(mine) = self.by_user.get_mut(user_id) {
                    for key in keys {
                        mine.remove(key);
                    }
                    if mine.is_empty() {
                        self.by_user.remove(user_id);
                    }
                }
            }
            Event::RealmCreated { .. }
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
            | Event::UserMuted { .. }
            | Event::AlertWordsAdded { .. }
            | Event::RealmDomainAdded { .. }
            | Event::RealmDomainChanged { .. }
            | Event::RealmDomainRemoved { .. }
            | Event::AlertWordsRemoved { .. }
            | Event::AvatarSet { .. }
            | Event::UserUnmuted { .. }
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

    /// Every user's entries (the admin dump; values are the bots' own state, not credentials).
    pub fn dump(&self) -> Value {
        Value::Object(
            self.by_user
                .iter()
                .map(|(id, entries)| (id.0.to_string(), json!(entries)))
                .collect(),
        )
    }
}

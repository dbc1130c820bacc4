//! User statuses (`POST /users/me/status`): a short text, an emoji and the legacy "away" flag.

use crate::events::{Envelope, Event, StatusEmoji};
use crate::ids::UserId;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// One user's status; a user without one has no entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UserStatus {
    pub away: bool,
    pub status_text: String,
    /// `None`: no emoji.
    pub emoji: Option<StatusEmoji>,
}

impl UserStatus {
    /// Zulip's form: only the parts that are set (`away` only when true).
    pub fn json(&self) -> Value {
        let mut out = Map::new();
        if self.away {
            out.insert("away".into(), json!(true));
        }
        if !self.status_text.is_empty() {
            out.insert("status_text".into(), json!(self.status_text));
        }
        if let Some(emoji) = &self.emoji {
            out.insert("emoji_name".into(), json!(emoji.emoji_name));
            out.insert("emoji_code".into(), json!(emoji.emoji_code));
            out.insert("reaction_type".into(), json!(emoji.reaction_type.as_str()));
        }
        Value::Object(out)
    }
}

/// Every user's status.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct UserStatuses {
    by_user: BTreeMap<UserId, UserStatus>,
}

impl UserStatuses {
    pub fn get(&self, user: UserId) -> Option<&UserStatus> {
        self.by_user.get(&user)
    }

    pub fn iter(&self) -> impl Iterator<Item = (UserId, &UserStatus)> {
        self.by_user.iter().map(|(id, s)| (*id, s))
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::UserStatusSet {
                user_id,
                away,
                status_text,
                emoji,
            } => {
                let status = self.by_user.entry(*user_id).or_default();
                if let Some(away) = away {
                    status.away = *away;
                }
                if let Some(text) = status_text {
                    status.status_text = text.clone();
                }
                if let Some(emoji) = emoji {
                    status.emoji = (!emoji.emoji_name.is_empty()).then(|| emoji.clone());
                }
                if *status == UserStatus::default() {
                    self.by_user.remove(user_id);
                }
            }
            Event::RealmCreated { .. }
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
            | Event::MessagesReadThrough { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        Value::Object(
            self.by_user
                .iter()
                .map(|(id, status)| (id.0.to_string(), status.json()))
                .collect(),
        )
    }
}

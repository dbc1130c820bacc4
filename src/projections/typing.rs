//! Who is typing where, until when. A start is forgotten after Zulip's start-expiry period
//! (45 s) unless renewed; a stop removes it at once.

use crate::events::{Envelope, Event, TypingTarget};
use crate::ids::UserId;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `server_typing_started_expiry_period_milliseconds`.
pub const TYPING_STARTED_EXPIRY_MS: i64 = 45_000;

/// Typing indicators, keyed by typist and place, with their expiry (ms since the epoch).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Typing {
    active: BTreeMap<(UserId, String), (TypingTarget, i64)>,
}

fn key(target: &TypingTarget) -> String {
    serde_json::to_string(target).unwrap_or_default()
}

impl Typing {
    /// Indicators still alive at `now_ms`.
    pub fn active_at(&self, now_ms: i64) -> impl Iterator<Item = (UserId, &TypingTarget)> {
        self.active
            .iter()
            .filter(move |(_, (_, expires))| *expires > now_ms)
            .map(|((user, _), (target, _))| (*user, target))
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::TypingStarted { user_id, target } => {
                // Expired entries are dropped as new ones arrive, so the map stays small.
                self.active.retain(|_, (_, expires)| *expires > env.at);
                self.active.insert(
                    (*user_id, key(target)),
                    (target.clone(), env.at + TYPING_STARTED_EXPIRY_MS),
                );
            }
            Event::TypingStopped { user_id, target } => {
                self.active.remove(&(*user_id, key(target)));
            }
            // Editing is shown to those who would see the edit, and not remembered.
            Event::EditTyping { .. }
            | Event::PlaygroundAdded { .. }
            | Event::PlaygroundRemoved { .. }
            | Event::RealmUserDefaultChanged { .. }
            | Event::DefaultChannelGroupSaved { .. }
            | Event::DefaultChannelGroupRemoved { .. }
            | Event::RealmImageSet { .. }
            | Event::RealmCreated { .. }
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
            | Event::TopicVisibilitySet { .. }
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
            | Event::MessagesReadThrough { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        Value::Array(
            self.active
                .iter()
                .map(|((user, _), (target, expires))| {
                    json!({"user_id": user.0, "target": serde_json::to_value(target).unwrap_or(Value::Null), "expires_ms": expires})
                })
                .collect(),
        )
    }
}

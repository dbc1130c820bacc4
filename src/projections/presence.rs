//! Presence: when each user was last connected and last active, as clients reported it.
//!
//! The update id Zulip's presence protocol hands to clients (`presence_last_update_id`) is the
//! seq of the user's latest `PresenceUpdated` event: it only grows, and a client that passes it
//! back gets exactly the users updated since.

use crate::events::{Envelope, Event};
use crate::ids::{Seq, UserId};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One user's presence. Times are milliseconds since the UNIX epoch (the envelopes').
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UserPresence {
    /// The last report of any kind (Zulip's `idle_timestamp`).
    pub last_connected_ms: i64,
    /// The last report of an active user, if any (Zulip's `active_timestamp`).
    pub last_active_ms: Option<i64>,
    /// The seq of the event that last changed this entry.
    pub update_id: Seq,
    /// Whether that event brought the user (back) online: an active report with no report
    /// within the offline threshold before it, or active again after being only idle that long.
    /// Zulip tells every client about exactly these updates.
    pub came_online: bool,
}

/// Zulip's `OFFLINE_THRESHOLD_SECS` (200 s): without a report for this long, a user is offline.
pub const OFFLINE_THRESHOLD_MS: i64 = 200_000;

/// Every user's presence.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Presence {
    by_user: BTreeMap<UserId, UserPresence>,
    last_update_id: Seq,
}

impl Presence {
    pub fn get(&self, user: UserId) -> Option<&UserPresence> {
        self.by_user.get(&user)
    }

    pub fn iter(&self) -> impl Iterator<Item = (UserId, &UserPresence)> {
        self.by_user.iter().map(|(id, p)| (*id, p))
    }

    /// The newest update id (0 before any presence was reported).
    pub fn last_update_id(&self) -> Seq {
        self.last_update_id
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::PresenceUpdated { user_id, active } => {
                let stale = |t: Option<i64>| t.is_none_or(|t| env.at - t > OFFLINE_THRESHOLD_MS);
                let previous = self.by_user.get(user_id);
                // Only an active report announces a user, as in Zulip.
                let came_online = *active
                    && (stale(previous.map(|p| p.last_connected_ms))
                        || stale(previous.and_then(|p| p.last_active_ms)));
                let entry = self.by_user.entry(*user_id).or_insert(UserPresence {
                    last_connected_ms: env.at,
                    last_active_ms: None,
                    update_id: env.seq,
                    came_online,
                });
                entry.came_online = came_online;
                entry.last_connected_ms = env.at;
                if *active {
                    entry.last_active_ms = Some(env.at);
                }
                entry.update_id = env.seq;
                self.last_update_id = env.seq;
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
        Value::Object(
            self.by_user
                .iter()
                .map(|(id, p)| {
                    (
                        id.0.to_string(),
                        json!({
                            "last_connected_ms": p.last_connected_ms,
                            "last_active_ms": p.last_active_ms,
                            "update_id": p.update_id.0,
                        }),
                    )
                })
                .collect(),
        )
    }
}

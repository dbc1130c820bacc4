//! Client devices (`/register_client_device`): the devices each user's clients registered,
//! which push notifications are tied to once a push service is configured.

use crate::events::{Envelope, Event};
use crate::ids::UserId;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Every user's registered devices.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Devices {
    by_user: BTreeMap<UserId, BTreeSet<u64>>,
    /// The highest device id ever given (ids are never reused).
    last_id: u64,
}

impl Devices {
    pub fn next_id(&self) -> u64 {
        self.last_id + 1
    }

    pub fn has(&self, user: UserId, device: u64) -> bool {
        self.by_user
            .get(&user)
            .is_some_and(|devices| devices.contains(&device))
    }

    /// Zulip's `devices` object for `user`: by device id, with no push registration (no push
    /// service is configured).
    pub fn json(&self, user: UserId) -> Value {
        let mut out = Map::new();
        for id in self.by_user.get(&user).into_iter().flatten() {
            out.insert(id.to_string(), device_json());
        }
        Value::Object(out)
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::ClientDeviceRegistered { user_id, device_id } => {
                self.last_id = self.last_id.max(*device_id);
                self.by_user.entry(*user_id).or_default().insert(*device_id);
            }
            Event::ClientDeviceRemoved { user_id, device_id } => {
                if let Some(devices) = self.by_user.get_mut(user_id) {
                    devices.remove(device_id);
                    if devices.is_empty() {
                        self.by_user.remove(user_id);
                    }
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
            | Event::MessageFlagsChanged { .. }
            | Event::ReactionAdded { .. }
            | Event::ReactionRemoved { .. }
            | Event::MessageEdited { .. }
            | Event::MessagesDeleted { .. }
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
            | Event::SessionStarted { .. }
            | Event::SessionEnded { .. }
            | Event::TwoFactorChanged { .. }
            | Event::SignInTokenSpent { .. }
            | Event::NoticesRecorded { .. }
            | Event::NoticesSettled { .. }
            | Event::EmailQueued { .. }
            | Event::EmailSent { .. }
            | Event::EmailFailed { .. }
            | Event::UserEmailChanged { .. }
            | Event::LogErased { .. }
            | Event::ImportStarted { .. }
            | Event::ImportFinished { .. }
            | Event::RealmExported { .. }
            | Event::RealmExportDeleted { .. }
            | Event::Imported { .. }
            | Event::MessagesReadThrough { .. } => {}
        }
    }

    /// Every user's device ids (the admin dump).
    pub fn dump(&self) -> Value {
        Value::Object(
            self.by_user
                .iter()
                .map(|(user, devices)| (user.0.to_string(), json!(devices)))
                .collect(),
        )
    }
}

/// A device with nothing registered for push: Zulip's `devices` entry fields, all null.
pub fn device_json() -> Value {
    json!({
        "push_key_id": null,
        "push_token_id": null,
        "pending_push_token_id": null,
        "push_token_last_updated_timestamp": null,
        "push_registration_error_code": null,
    })
}

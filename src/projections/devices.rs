//! Client devices (`/register_client_device`): the devices each user's clients registered,
//! which push notifications are tied to once a push service is configured.

use crate::events::{Envelope, Event, PushChange};
use crate::ids::UserId;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Every user's registered devices.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Devices {
    by_user: BTreeMap<UserId, BTreeSet<u64>>,
    /// The highest device id ever given (ids are never reused).
    last_id: u64,
    /// Devices' push registrations (absent from snapshots written before push existed).
    #[serde(default)]
    push: BTreeMap<(UserId, u64), PushDevice>,
}

/// A device's push registration, as Zulip's `Device` keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PushDevice {
    pub push_key_id: Option<u32>,
    /// The app's key sealed under the server secret (`notify::push::seal`).
    pub sealed_push_key: Option<String>,
    pub token_kind: Option<String>,
    /// Registered with the service.
    pub push_token_id: Option<i64>,
    /// Being registered.
    pub pending_push_token_id: Option<i64>,
    /// Seconds.
    pub push_token_last_updated_timestamp: Option<i64>,
    pub push_registration_error_code: Option<String>,
    /// What the service is to be sent while `pending_push_token_id` is set and no error:
    /// `(encrypted_push_registration, bouncer_public_key)`.
    pub registration: Option<(String, String)>,
}

/// A token id as Zulip's API writes it: standard base64 of its 8 big-endian bytes.
pub fn token_id_text(id: i64) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(id.to_be_bytes())
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

    /// Zulip's `devices` object for `user`: by device id, with each one's push registration.
    pub fn json(&self, user: UserId) -> Value {
        let mut out = Map::new();
        for id in self.by_user.get(&user).into_iter().flatten() {
            let entry = match self.push.get(&(user, *id)) {
                Some(push) => push_json(push),
                None => device_json(),
            };
            out.insert(id.to_string(), entry);
        }
        Value::Object(out)
    }

    /// A device's push registration, if it has one.
    pub fn push(&self, user: UserId, device: u64) -> Option<&PushDevice> {
        self.push.get(&(user, device))
    }

    /// The devices registered with the push service of `user` (ready to receive pushes).
    pub fn active_push(&self, user: UserId) -> impl Iterator<Item = (u64, &PushDevice)> + '_ {
        self.push
            .range((user, 0)..=(user, u64::MAX))
            .filter(|(_, p)| p.push_token_id.is_some() && p.sealed_push_key.is_some())
            .map(|((_, device), p)| (*device, p))
    }

    /// Whether `user` has a device that can receive pushes.
    pub fn has_active_push(&self, user: UserId) -> bool {
        self.active_push(user).next().is_some()
    }

    /// Devices whose token is waiting to be registered with the service.
    pub fn pending_registrations(&self) -> impl Iterator<Item = (UserId, u64, &PushDevice)> + '_ {
        self.push
            .iter()
            .filter(|(_, p)| {
                p.pending_push_token_id.is_some()
                    && p.push_registration_error_code.is_none()
                    && p.registration.is_some()
            })
            .map(|((user, device), p)| (*user, *device, p))
    }

    fn apply_push(&mut self, at: i64, user: UserId, device: u64, change: &PushChange) {
        let entry = self.push.entry((user, device)).or_default();
        match change {
            PushChange::KeySet {
                push_key_id,
                sealed_push_key,
            } => {
                entry.push_key_id = Some(*push_key_id);
                entry.sealed_push_key = Some(sealed_push_key.clone());
            }
            PushChange::TokenRequested {
                token_kind,
                token_id,
                encrypted_push_registration,
                bouncer_public_key,
            } => {
                entry.token_kind = Some(token_kind.clone());
                entry.pending_push_token_id = Some(*token_id);
                entry.push_token_last_updated_timestamp = Some(at / 1000);
                entry.push_registration_error_code = None;
                entry.registration = Some((
                    encrypted_push_registration.clone(),
                    bouncer_public_key.clone(),
                ));
            }
            PushChange::TokenAccepted { token_id } => {
                if entry.pending_push_token_id == Some(*token_id) {
                    entry.push_token_id = Some(*token_id);
                    entry.pending_push_token_id = None;
                    entry.registration = None;
                }
            }
            PushChange::TokenRefused { error_code } => {
                entry.push_registration_error_code = Some(error_code.clone());
                entry.registration = None;
            }
            PushChange::TokenDropped { token_id } => {
                if entry.push_token_id == Some(*token_id) {
                    entry.push_token_id = None;
                }
            }
        }
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::ClientDeviceRegistered { user_id, device_id } => {
                self.last_id = self.last_id.max(*device_id);
                self.by_user.entry(*user_id).or_default().insert(*device_id);
            }
            Event::PushDeviceChanged {
                user_id,
                device_id,
                change,
            } => self.apply_push(env.at, *user_id, *device_id, change),
            Event::ClientDeviceRemoved { user_id, device_id } => {
                self.push.remove(&(*user_id, *device_id));
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
            | Event::PushQueued { .. }
            | Event::PushSent { .. }
            | Event::PushFailed { .. }
            | Event::PushTestSent { .. }
            | Event::ClockWentBack { .. }
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

    /// Devices' push registrations (the admin dump's `push_devices`, `None` while there is
    /// none so that older dumps keep their shape): ids and states, never a key.
    pub fn push_dump(&self) -> Option<Value> {
        if self.push.is_empty() {
            return None;
        }
        Some(Value::Object(
            self.push
                .iter()
                .map(|((user, device), p)| (format!("{}/{device}", user.0), push_json(p)))
                .collect(),
        ))
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

/// A device's `devices` entry.
pub fn push_json(push: &PushDevice) -> Value {
    json!({
        "push_key_id": push.push_key_id,
        "push_token_id": push.push_token_id.map(token_id_text),
        "pending_push_token_id": push.pending_push_token_id.map(token_id_text),
        "push_token_last_updated_timestamp": push.push_token_last_updated_timestamp,
        "push_registration_error_code": push.push_registration_error_code,
    })
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

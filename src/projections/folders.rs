//! Channel folders.

use crate::events::{Envelope, Event};
use crate::ids::{FolderId, UserId};
use crate::markdown::render_description;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One channel folder.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Folder {
    pub id: FolderId,
    pub name: String,
    pub description: String,
    pub rendered_description: String,
    /// Position in the organization's folder list (new folders go last: order = id).
    pub order: u64,
    pub is_archived: bool,
    pub date_created_ms: i64,
    pub creator_id: Option<UserId>,
}

/// All channel folders.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Folders {
    by_id: BTreeMap<FolderId, Folder>,
}

impl Folders {
    pub fn get(&self, id: FolderId) -> Option<&Folder> {
        self.by_id.get(&id)
    }

    /// Folders sorted by `order`, then id.
    pub fn ordered(&self) -> Vec<&Folder> {
        let mut folders: Vec<&Folder> = self.by_id.values().collect();
        folders.sort_by_key(|f| (f.order, f.id));
        folders
    }

    pub fn max_id(&self) -> FolderId {
        self.by_id
            .keys()
            .next_back()
            .copied()
            .unwrap_or(FolderId(0))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Folder> {
        self.by_id.values()
    }

    /// Wire form, as `GET /channel_folders` and `channel_folder` events send it.
    pub fn to_json(folder: &Folder) -> Value {
        json!({
            "id": folder.id.0,
            "name": folder.name,
            "description": folder.description,
            "rendered_description": folder.rendered_description,
            "order": folder.order,
            "date_created": folder.date_created_ms / 1000,
            "creator_id": folder.creator_id,
            "is_archived": folder.is_archived,
        })
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::ChannelFolderCreated {
                folder_id,
                name,
                description,
            } => {
                self.by_id.insert(
                    *folder_id,
                    Folder {
                        id: *folder_id,
                        name: name.clone(),
                        description: description.clone(),
                        rendered_description: render_description(description),
                        order: folder_id.0,
                        is_archived: false,
                        date_created_ms: env.at,
                        creator_id: env.actor,
                    },
                );
            }
            Event::ChannelFolderChanged {
                folder_id,
                name,
                description,
                is_archived,
            } => {
                let Some(folder) = self.by_id.get_mut(folder_id) else {
                    return;
                };
                if let Some(name) = name {
                    folder.name = name.clone();
                }
                if let Some(text) = description {
                    folder.description = text.clone();
                    folder.rendered_description = render_description(text);
                }
                if let Some(flag) = is_archived {
                    folder.is_archived = *flag;
                }
            }
            Event::ChannelFoldersReordered { order } => {
                for (position, id) in order.iter().enumerate() {
                    if let Some(folder) = self.by_id.get_mut(id) {
                        folder.order = position as u64;
                    }
                }
            }
            Event::RealmCreated { .. }
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
            | Event::MessagesReadThrough { .. }
            | Event::TypingStarted { .. }
            | Event::TypingStopped { .. }
            | Event::EditTyping { .. }
            | Event::PlaygroundAdded { .. }
            | Event::PlaygroundRemoved { .. }
            | Event::RealmUserDefaultChanged { .. }
            | Event::DefaultChannelGroupSaved { .. }
            | Event::DefaultChannelGroupRemoved { .. }
            | Event::RealmImageSet { .. }
            | Event::MessageSent { .. }
            | Event::MessageFlagsChanged { .. }
            | Event::ReactionAdded { .. }
            | Event::ReactionRemoved { .. }
            | Event::MessageEdited { .. }
            | Event::MessagesDeleted { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        Value::Array(self.ordered().into_iter().map(Folders::to_json).collect())
    }
}

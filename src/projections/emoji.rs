//! Custom emoji: the organization's uploaded images, by id, deactivated ones included (old
//! messages and reactions still show them).

use crate::events::{Envelope, Event, ImageBytes};
use crate::ids::{EmojiId, UserId};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One custom emoji.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CustomEmoji {
    pub id: EmojiId,
    pub name: String,
    pub author_id: Option<UserId>,
    pub content_type: String,
    pub image: ImageBytes,
    pub deactivated: bool,
    /// Whether the image is animated (read from its bytes when folded): such emoji also have a
    /// still image (`still_url`).
    #[serde(default)]
    pub animated: bool,
}

impl CustomEmoji {
    /// The image's file name under `/user_avatars/{realm}/emoji/images/`: the id and the
    /// extension of its type, as Zulip names uploaded emoji.
    pub fn file_name(&self) -> String {
        let extension = match self.content_type.as_str() {
            "image/gif" => "gif",
            "image/jpeg" => "jpeg",
            "image/webp" => "webp",
            _ => "png",
        };
        format!("{}.{extension}", self.id)
    }
}

/// Every custom emoji the organization ever had.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct CustomEmojis {
    by_id: BTreeMap<EmojiId, CustomEmoji>,
    /// Active emoji by name (names are unique among them): rendering looks each `:name:` up.
    active: BTreeMap<String, EmojiId>,
    max_id: EmojiId,
}

impl CustomEmojis {
    pub fn get(&self, id: EmojiId) -> Option<&CustomEmoji> {
        self.by_id.get(&id)
    }

    pub fn max_id(&self) -> EmojiId {
        self.max_id
    }

    pub fn iter(&self) -> impl Iterator<Item = &CustomEmoji> {
        self.by_id.values()
    }

    /// The active emoji of that name (at most one: names are unique among active emoji).
    pub fn active_named(&self, name: &str) -> Option<&CustomEmoji> {
        self.active.get(name).and_then(|id| self.by_id.get(id))
    }

    /// The emoji whose image file this is (`{id}.{extension}`).
    /// The animated emoji whose still image is `file` (`{id}.png`).
    pub fn by_still_name(&self, file: &str) -> Option<&CustomEmoji> {
        let id = file.strip_suffix(".png")?.parse::<u64>().ok()?;
        self.get(EmojiId(id)).filter(|e| e.animated)
    }

    pub fn by_file_name(&self, file: &str) -> Option<&CustomEmoji> {
        let id = file.split('.').next()?.parse::<u64>().ok()?;
        self.get(EmojiId(id)).filter(|e| e.file_name() == file)
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::CustomEmojiAdded {
                emoji_id,
                name,
                content_type,
                image,
            } => {
                self.max_id = self.max_id.max(*emoji_id);
                self.active.insert(name.clone(), *emoji_id);
                self.by_id.insert(
                    *emoji_id,
                    CustomEmoji {
                        id: *emoji_id,
                        name: name.clone(),
                        author_id: env.actor,
                        content_type: content_type.clone(),
                        image: image.clone(),
                        deactivated: false,
                        animated: crate::avatars::is_animated(&image.0),
                    },
                );
            }
            Event::CustomEmojiDeactivated { emoji_id } => {
                if let Some(emoji) = self.by_id.get_mut(emoji_id) {
                    emoji.deactivated = true;
                    if self.active.get(&emoji.name) == Some(emoji_id) {
                        self.active.remove(&emoji.name);
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

    /// The dump shows each image by size and digest, never its bytes.
    pub fn dump(&self) -> Value {
        Value::Array(
            self.by_id
                .values()
                .map(|e| {
                    json!({
                        "id": e.id.0,
                        "name": e.name,
                        "author_id": e.author_id.map(|a| a.0),
                        "content_type": e.content_type,
                        "bytes": e.image.0.len(),
                        "sha256": e.image.sha256(),
                        "deactivated": e.deactivated,
                    })
                })
                .collect(),
        )
    }
}

/// Chronicle serves one organization; its id in upload paths is 1, as on a fresh Zulip server.
pub const REALM_ID: u64 = 1;

/// Where an emoji's image is served (relative to the organization's URL, as Zulip sends it).
pub fn source_url(emoji: &CustomEmoji) -> String {
    format!(
        "/user_avatars/{REALM_ID}/emoji/images/{}",
        emoji.file_name()
    )
}

/// The still image of an animated emoji, relative to the server (Zulip's `still_url`).
pub fn still_url(emoji: &CustomEmoji) -> String {
    format!(
        "/user_avatars/{REALM_ID}/emoji/images/still/{}.png",
        emoji.id
    )
}

//! Uploaded files (`POST /user_uploads`): who uploaded what, and which messages link it.
//!
//! The bytes are not state: they live in the data directory's `uploads/` (see `crate::uploads`),
//! named by the SHA-256 the event records. A message links an upload when its content contains
//! the upload's `/user_uploads/{path_id}` and its sender uploaded it (Zulip's "claimed"
//! attachments); the links are found again from the content on every fold, so a replay finds
//! the same ones.

use crate::events::{Envelope, Event};
use crate::ids::{AttachmentId, MessageId, UserId};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// The path prefix of an upload's link.
pub const UPLOAD_PREFIX: &str = "/user_uploads/";

/// One uploaded file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Attachment {
    pub id: AttachmentId,
    pub owner_id: UserId,
    pub path_id: String,
    pub name: String,
    pub size: u64,
    pub sha256: String,
    pub content_type: String,
    /// An image's preview facts (`crate::thumbnails`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::events::UploadedImage>,
    /// Milliseconds since the epoch.
    pub created_ms: i64,
    /// Messages that link it, ascending.
    pub messages: Vec<MessageId>,
}

impl Attachment {
    pub fn is_image(&self) -> bool {
        self.content_type.starts_with("image/")
    }
}

/// Every upload, by id and by path.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Attachments {
    by_id: BTreeMap<AttachmentId, Attachment>,
    by_path: HashMap<String, AttachmentId>,
    /// The uploads each message links (only messages that link some).
    of_message: HashMap<MessageId, Vec<AttachmentId>>,
    next_id: u64,
}

/// The `path_id`s a text links: what follows each `/user_uploads/` up to the end of the link
/// (a space, a bracket, a quote or the end of the text).
pub fn linked_paths(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices(UPLOAD_PREFIX)
        .filter_map(move |(at, _)| {
            let rest = &text[at + UPLOAD_PREFIX.len()..];
            let end = rest
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, ')' | ']' | '"' | '\'' | '<' | '>' | ',')
                })
                .unwrap_or(rest.len());
            let path = &rest[..end];
            (!path.is_empty()).then_some(path)
        })
}

impl Attachments {
    pub fn get(&self, id: AttachmentId) -> Option<&Attachment> {
        self.by_id.get(&id)
    }

    pub fn by_path(&self, path_id: &str) -> Option<&Attachment> {
        self.by_path.get(path_id).and_then(|id| self.by_id.get(id))
    }

    /// The id the next upload gets.
    pub fn next_id(&self) -> AttachmentId {
        AttachmentId(self.next_id.max(1))
    }

    /// One user's uploads, oldest first.
    pub fn owned_by(&self, user: UserId) -> impl Iterator<Item = &Attachment> {
        self.by_id.values().filter(move |a| a.owner_id == user)
    }

    /// Bytes of every upload: the organization's quota counts these, and Zulip's
    /// `upload_space_used` is this sum.
    pub fn total_bytes(&self) -> u64 {
        self.by_id.values().map(|a| a.size).sum()
    }

    /// The uploads a message links.
    pub fn of_message(&self, message: MessageId) -> impl Iterator<Item = &Attachment> {
        self.of_message
            .get(&message)
            .into_iter()
            .flatten()
            .filter_map(|id| self.by_id.get(id))
    }

    /// Whether another upload holds the same bytes (so a deletion keeps the file).
    pub fn bytes_shared(&self, id: AttachmentId, sha256: &str) -> bool {
        self.by_id
            .values()
            .any(|a| a.id != id && a.sha256 == sha256)
    }

    /// Every file hash still in use.
    pub fn hashes(&self) -> impl Iterator<Item = &str> {
        self.by_id.values().map(|a| a.sha256.as_str())
    }

    fn unlink_message(&mut self, message: MessageId) {
        for id in self.of_message.remove(&message).unwrap_or_default() {
            if let Some(a) = self.by_id.get_mut(&id) {
                a.messages.retain(|m| *m != message);
            }
        }
    }

    fn link_message(&mut self, message: MessageId, sender: UserId, content: &str) {
        self.unlink_message(message);
        if !content.contains(UPLOAD_PREFIX) {
            return;
        }
        let mut linked = Vec::new();
        for path in linked_paths(content) {
            let Some(&id) = self.by_path.get(path) else {
                continue;
            };
            let Some(a) = self.by_id.get_mut(&id) else {
                continue;
            };
            if a.owner_id != sender || linked.contains(&id) {
                continue;
            }
            if let Err(at) = a.messages.binary_search(&message) {
                a.messages.insert(at, message);
            }
            linked.push(id);
        }
        if !linked.is_empty() {
            self.of_message.insert(message, linked);
        }
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::AttachmentUploaded {
                attachment_id,
                owner_id,
                path_id,
                name,
                size,
                sha256,
                content_type,
                image,
            } => {
                self.next_id = self.next_id.max(attachment_id.0 + 1);
                self.by_path.insert(path_id.clone(), *attachment_id);
                self.by_id.insert(
                    *attachment_id,
                    Attachment {
                        id: *attachment_id,
                        owner_id: *owner_id,
                        path_id: path_id.clone(),
                        name: name.clone(),
                        size: *size,
                        sha256: sha256.clone(),
                        content_type: content_type.clone(),
                        image: *image,
                        created_ms: env.at,
                        messages: Vec::new(),
                    },
                );
            }
            Event::AttachmentDeleted { attachment_id, .. } => {
                if let Some(a) = self.by_id.remove(attachment_id) {
                    self.by_path.remove(&a.path_id);
                    for message in a.messages {
                        if let Some(ids) = self.of_message.get_mut(&message) {
                            ids.retain(|id| id != attachment_id);
                            if ids.is_empty() {
                                self.of_message.remove(&message);
                            }
                        }
                    }
                }
            }
            Event::MessageSent {
                message_id,
                sender_id,
                content,
                ..
            } => {
                if !self.by_id.is_empty() {
                    self.link_message(*message_id, *sender_id, content);
                }
            }
            Event::MessageEdited {
                message_id,
                user_id,
                content: Some(edited),
                ..
            } => {
                if !self.by_id.is_empty() {
                    self.link_message(*message_id, *user_id, &edited.content);
                }
            }
            Event::MessageEdited { content: None, .. } => {}
            Event::MessagesDeleted { message_ids, .. } => {
                for id in message_ids {
                    self.unlink_message(*id);
                }
            }
            Event::RealmCreated { .. }
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
            | Event::BotStorageSet { .. }
            | Event::BotStorageRemoved { .. }
            | Event::UserStatusSet { .. }
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

    /// Every upload (the admin dump: names, sizes and hashes, never the bytes).
    pub fn dump(&self) -> Value {
        Value::Array(
            self.by_id
                .values()
                .map(|a| {
                    json!({
                        "id": a.id.0,
                        "owner_id": a.owner_id.0,
                        "path_id": a.path_id,
                        "name": a.name,
                        "size": a.size,
                        "sha256": a.sha256,
                        "content_type": a.content_type,
                        "created_ms": a.created_ms,
                        "messages": a.messages.iter().map(|m| m.0).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_found_in_markdown_and_html() {
        let text = "see [a.png](/user_uploads/1/ab/a.png) and /user_uploads/1/cd/b.txt, \
                    <a href=\"/user_uploads/1/ef/c.pdf\">c</a>";
        let found: Vec<&str> = linked_paths(text).collect();
        assert_eq!(found, vec!["1/ab/a.png", "1/cd/b.txt", "1/ef/c.pdf"]);
    }
}

//! Drafts (`/drafts`) and saved snippets (`/saved_snippets`): text a user keeps on the server so
//! that all their clients have it.

use crate::events::{Draft, Envelope, Event};
use crate::ids::UserId;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A saved snippet.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Snippet {
    pub title: String,
    pub content: String,
    /// Seconds.
    pub date_created: i64,
}

/// Every user's drafts and snippets, by id (ids are per server, never reused).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Drafts {
    drafts: BTreeMap<UserId, BTreeMap<u64, Draft>>,
    snippets: BTreeMap<UserId, BTreeMap<u64, Snippet>>,
    last_draft: u64,
    last_snippet: u64,
}

impl Drafts {
    pub fn next_draft_id(&self) -> u64 {
        self.last_draft + 1
    }

    pub fn next_snippet_id(&self) -> u64 {
        self.last_snippet + 1
    }

    pub fn draft(&self, user: UserId, id: u64) -> Option<&Draft> {
        self.drafts.get(&user)?.get(&id)
    }

    pub fn snippet(&self, user: UserId, id: u64) -> Option<&Snippet> {
        self.snippets.get(&user)?.get(&id)
    }

    /// Zulip's draft list: the most recently edited first.
    pub fn drafts_json(&self, user: UserId) -> Vec<Value> {
        let mut mine: Vec<(&u64, &Draft)> = self.drafts.get(&user).into_iter().flatten().collect();
        mine.sort_by_key(|(id, d)| (std::cmp::Reverse(d.timestamp), std::cmp::Reverse(**id)));
        mine.into_iter().map(|(id, d)| draft_json(*id, d)).collect()
    }

    /// Zulip's saved snippet list, oldest first.
    pub fn snippets_json(&self, user: UserId) -> Vec<Value> {
        self.snippets
            .get(&user)
            .into_iter()
            .flatten()
            .map(|(id, s)| snippet_json(*id, s))
            .collect()
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::DraftsSaved {
                user_id, drafts, ..
            } => {
                let mine = self.drafts.entry(*user_id).or_default();
                for (id, draft) in drafts {
                    self.last_draft = self.last_draft.max(*id);
                    mine.insert(*id, draft.clone());
                }
            }
            Event::DraftRemoved { user_id, draft_id } => {
                if let Some(mine) = self.drafts.get_mut(user_id) {
                    mine.remove(draft_id);
                    if mine.is_empty() {
                        self.drafts.remove(user_id);
                    }
                }
            }
            Event::SavedSnippetSaved {
                user_id,
                snippet_id,
                title,
                content,
                ..
            } => {
                self.last_snippet = self.last_snippet.max(*snippet_id);
                let mine = self.snippets.entry(*user_id).or_default();
                let date_created = mine
                    .get(snippet_id)
                    .map_or(env.at / 1000, |old| old.date_created);
                mine.insert(
                    *snippet_id,
                    Snippet {
                        title: title.clone(),
                        content: content.clone(),
                        date_created,
                    },
                );
            }
            Event::SavedSnippetRemoved {
                user_id,
                snippet_id,
            } => {
                if let Some(mine) = self.snippets.get_mut(user_id) {
                    mine.remove(snippet_id);
                    if mine.is_empty() {
                        self.snippets.remove(user_id);
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

    /// Every user's drafts and snippets (the admin dump).
    pub fn dump(&self) -> (Value, Value) {
        (
            Value::Object(
                self.drafts
                    .keys()
                    .map(|u| (u.0.to_string(), json!(self.drafts_json(*u))))
                    .collect(),
            ),
            Value::Object(
                self.snippets
                    .keys()
                    .map(|u| (u.0.to_string(), json!(self.snippets_json(*u))))
                    .collect(),
            ),
        )
    }
}

/// Zulip's draft object.
pub fn draft_json(id: u64, draft: &Draft) -> Value {
    json!({
        "id": id,
        "type": draft.kind,
        "to": draft.to,
        "topic": draft.topic,
        "content": draft.content,
        "timestamp": draft.timestamp,
    })
}

/// Zulip's saved snippet object.
pub fn snippet_json(id: u64, snippet: &Snippet) -> Value {
    json!({
        "id": id,
        "title": snippet.title,
        "content": snippet.content,
        "date_created": snippet.date_created,
    })
}

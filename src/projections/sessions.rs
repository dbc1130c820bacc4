//! Web sessions (`POST /login/`): who is signed in to the web client, from which browser, until
//! when. The cookie a browser holds is a session's id with a MAC under the server secret
//! (`ServerSecret::session_mac`), so this area holds nothing that lets anyone in.

use crate::events::{Envelope, Event};
use crate::ids::UserId;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One browser's session.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Session {
    pub user_id: UserId,
    /// Milliseconds since the epoch.
    pub started_at: i64,
    pub expires_at: i64,
    /// What the browser said it is (its `User-Agent`, shortened).
    pub client: String,
}

/// Every live web session, by id.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Sessions {
    by_id: BTreeMap<String, Session>,
}

impl Sessions {
    /// The session `id`, if it has not ended. Whether it has expired is the caller's question
    /// (it depends on the clock, which `apply` never reads).
    pub fn get(&self, id: &str) -> Option<&Session> {
        self.by_id.get(id)
    }

    /// `user`'s sessions, by id.
    pub fn of_user(&self, user: UserId) -> impl Iterator<Item = (&str, &Session)> {
        self.by_id
            .iter()
            .filter(move |(_, s)| s.user_id == user)
            .map(|(id, s)| (id.as_str(), s))
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::SessionStarted {
                user_id,
                session_id,
                expires_at,
                client,
            } => {
                // Sessions that expired by now are forgotten as new ones start, so the area
                // holds about one entry per signed-in browser.
                self.by_id.retain(|_, s| s.expires_at > env.at);
                self.by_id.insert(
                    session_id.clone(),
                    Session {
                        user_id: *user_id,
                        started_at: env.at,
                        expires_at: *expires_at,
                        client: client.clone(),
                    },
                );
            }
            Event::SessionEnded { session_id, .. } => {
                self.by_id.remove(session_id);
            }
            // A deactivated account is signed out everywhere, and a new password signs out
            // every browser that knew the old one (as Zulip and Django do).
            Event::UserDeactivated { user_id } | Event::PasswordChanged { user_id, .. } => {
                self.by_id.retain(|_, s| s.user_id != *user_id);
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
            | Event::ClientDeviceRegistered { .. }
            | Event::ClientDeviceRemoved { .. }
            | Event::LogErased { .. }
            | Event::ImportStarted { .. }
            | Event::ImportFinished { .. }
            | Event::RealmExported { .. }
            | Event::RealmExportDeleted { .. }
            | Event::Imported { .. }
            | Event::MessagesReadThrough { .. } => {}
        }
    }

    /// Every session: its user, times and browser (the admin dump; ids are not secrets).
    pub fn dump(&self) -> Value {
        Value::Object(
            self.by_id
                .iter()
                .map(|(id, s)| {
                    let session = json!({
                        "user_id": s.user_id.0,
                        "started_at": s.started_at,
                        "expires_at": s.expires_at,
                        "client": s.client,
                    });
                    (id.clone(), session)
                })
                .collect(),
        )
    }
}

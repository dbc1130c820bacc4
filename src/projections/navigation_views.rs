//! Navigation views (`/navigation_views`): which views of the left sidebar each user pinned,
//! and the custom views they named.

use crate::events::{Envelope, Event};
use crate::ids::UserId;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One user's view: pinned or not, and its name (built-in views have none).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NavigationView {
    pub is_pinned: bool,
    pub name: Option<String>,
}

/// Every user's views, by fragment, in the order they were first saved.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct NavigationViews {
    by_user: BTreeMap<UserId, Vec<(String, NavigationView)>>,
}

impl NavigationViews {
    pub fn get(&self, user: UserId, fragment: &str) -> Option<&NavigationView> {
        self.by_user
            .get(&user)?
            .iter()
            .find(|(f, _)| f == fragment)
            .map(|(_, v)| v)
    }

    /// Whether `user` has a custom view named `name`.
    pub fn has_name(&self, user: UserId, name: &str) -> bool {
        self.by_user
            .get(&user)
            .is_some_and(|views| views.iter().any(|(_, v)| v.name.as_deref() == Some(name)))
    }

    /// Zulip's `navigation_views` list for `user`.
    pub fn json(&self, user: UserId) -> Value {
        Value::Array(
            self.by_user
                .get(&user)
                .into_iter()
                .flatten()
                .map(|(fragment, view)| view_json(fragment, view))
                .collect(),
        )
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::NavigationViewAdded {
                user_id,
                fragment,
                is_pinned,
                name,
            } => {
                let view = NavigationView {
                    is_pinned: *is_pinned,
                    name: name.clone(),
                };
                self.by_user
                    .entry(*user_id)
                    .or_default()
                    .push((fragment.clone(), view));
            }
            Event::NavigationViewChanged {
                user_id,
                fragment,
                is_pinned,
                name,
            } => {
                let view = self
                    .by_user
                    .get_mut(user_id)
                    .and_then(|mine| mine.iter_mut().find(|(f, _)| f == fragment));
                if let Some((_, view)) = view {
                    if let Some(pinned) = is_pinned {
                        view.is_pinned = *pinned;
                    }
                    if name.is_some() {
                        view.name = name.clone();
                    }
                }
            }
            Event::NavigationViewRemoved { user_id, fragment } => {
                if let Some(mine) = self.by_user.get_mut(user_id) {
                    mine.retain(|(f, _)| f != fragment);
                    if mine.is_empty() {
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

    /// Every user's views (the admin dump).
    pub fn dump(&self) -> Value {
        Value::Object(
            self.by_user
                .keys()
                .map(|id| (id.0.to_string(), self.json(*id)))
                .collect(),
        )
    }
}

/// Zulip's navigation view object.
pub fn view_json(fragment: &str, view: &NavigationView) -> Value {
    json!({"fragment": fragment, "is_pinned": view.is_pinned, "name": view.name})
}

//! Alert words (`/users/me/alert_words`): words that make a message count for a user as if it
//! mentioned them (the `has_alert_word` flag, `is:alerted`).

use crate::events::{Envelope, Event};
use crate::ids::UserId;
use serde_json::Value;
use std::collections::BTreeMap;

/// Zulip's longest alert word.
pub const MAX_ALERT_WORD_LENGTH: usize = 100;

/// The most alert words one person may have: every message to them is searched for each, on
/// the path that writes it. Zulip sets no number; a thousand is more than anyone keeps.
pub const MAX_ALERT_WORDS: usize = 1000;

/// Every user's alert words, as typed, in the order added.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct AlertWords {
    by_user: BTreeMap<UserId, Vec<String>>,
}

/// Whether `text` (lower-cased) contains `word` (lower-cased) as a whole word: not preceded or
/// followed by a letter, digit or underscore.
pub fn contains_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let inner = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(inner) && !after.is_some_and(inner)
    })
}

impl AlertWords {
    /// One user's words.
    pub fn of(&self, user: UserId) -> &[String] {
        self.by_user.get(&user).map_or(&[], Vec::as_slice)
    }

    /// The users among `recipients` (never `sender`) one of whose words `content` contains;
    /// the content is lower-cased once, and only when someone has words.
    pub fn alerted(
        &self,
        content: &str,
        sender: UserId,
        recipients: impl Fn(UserId) -> bool,
    ) -> Vec<UserId> {
        let mut text = None;
        self.by_user
            .iter()
            .filter(|(user, _)| **user != sender && recipients(**user))
            .filter(|(_, words)| {
                let text: &String = text.get_or_insert_with(|| content.to_lowercase());
                words.iter().any(|w| contains_word(text, &w.to_lowercase()))
            })
            .map(|(user, _)| *user)
            .collect()
    }

    pub fn json(&self, user: UserId) -> Value {
        Value::from(self.of(user).to_vec())
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::AlertWordsAdded { user_id, words } => {
                self.by_user
                    .entry(*user_id)
                    .or_default()
                    .extend(words.iter().cloned());
            }
            Event::AlertWordsRemoved { user_id, words } => {
                if let Some(mine) = self.by_user.get_mut(user_id) {
                    let gone: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
                    mine.retain(|w| !gone.contains(&w.to_lowercase()));
                    if mine.is_empty() {
                        self.by_user.remove(user_id);
                    }
                }
            }
            Event::RealmCreated { .. }
            | Event::UserMuted { .. }
            | Event::UserUnmuted { .. }
            | Event::AvatarSet { .. }
            | Event::BotStorageSet { .. }
            | Event::BotStorageRemoved { .. }
            | Event::UserStatusSet { .. }
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
            | Event::RealmDomainAdded { .. }
            | Event::RealmDomainChanged { .. }
            | Event::RealmDomainRemoved { .. }
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

    pub fn dump(&self) -> Value {
        Value::Object(
            self.by_user
                .keys()
                .map(|user| (user.0.to_string(), self.json(*user)))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_match_whole_words_only() {
        assert!(contains_word("the build is broken", "build"));
        assert!(contains_word("build: red", "build"));
        assert!(contains_word("ci/build!", "build"));
        assert!(!contains_word("rebuild it", "build"));
        assert!(!contains_word("builds", "build"));
        assert!(!contains_word("my_build", "build"));
        assert!(contains_word("on-call tonight", "on-call"));
        assert!(!contains_word("anything", ""));
    }
}

//! Web sessions (`POST /login/`): who is signed in to the web client, from which browser, until
//! when. The cookie a browser holds is a session's id with a MAC under the server secret
//! (`ServerSecret::session_mac`), so this area holds nothing that lets anyone in.

use crate::events::{Envelope, Event, TwoFactorChange};
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

/// Backup codes issued at a time (django-two-factor-auth's number).
pub const BACKUP_CODES: usize = 10;

/// What checking a code needs to know of a person's enrolment (`identity::two_factor`).
#[derive(Debug, Clone, Copy)]
pub struct Enrolment<'a> {
    pub key_nonce: &'a str,
    /// Absent: no backup codes were issued yet.
    pub backup_nonce: Option<&'a str>,
    /// Bit `i` set: backup code `i` was used.
    pub backup_used: u16,
    /// The newest step whose code was accepted (codes of it and earlier steps are refused).
    pub last_step: u64,
}

/// A person's two-factor enrolment (`identity::two_factor` checks codes against it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TwoFactor {
    pub key_nonce: String,
    pub backup_nonce: Option<String>,
    /// Bit `i` set: backup code `i` was used.
    pub backup_used: u16,
    /// The newest step whose code was accepted.
    pub last_step: u64,
    /// Milliseconds since the epoch.
    pub enabled_at: i64,
}

impl TwoFactor {
    pub fn enrolment(&self) -> Enrolment<'_> {
        Enrolment {
            key_nonce: &self.key_nonce,
            backup_nonce: self.backup_nonce.as_deref(),
            backup_used: self.backup_used,
            last_step: self.last_step,
        }
    }

    /// Backup codes not used yet.
    pub fn backup_codes_left(&self) -> usize {
        if self.backup_nonce.is_none() {
            return 0;
        }
        BACKUP_CODES - self.backup_used.count_ones() as usize
    }
}

/// Every live web session, by id, and who signs in with a second factor.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Sessions {
    by_id: BTreeMap<String, Session>,
    /// Absent from snapshots written before two-factor authentication existed (none then).
    #[serde(default)]
    two_factor: BTreeMap<UserId, TwoFactor>,
    /// Single-use proofs already used to sign in (SAML assertions, desktop login tokens), by
    /// digest, until they expire (ms).
    #[serde(default)]
    spent: BTreeMap<String, i64>,
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

    /// Whether the single-use proof named by `digest` was used already.
    pub fn token_spent(&self, digest: &str) -> bool {
        self.spent.contains_key(digest)
    }

    /// The spent proofs still remembered, for the dump (absent when none).
    pub fn spent_dump(&self) -> Option<Value> {
        (!self.spent.is_empty()).then(|| {
            Value::Array(
                self.spent
                    .iter()
                    .map(|(digest, expires_at)| json!({"digest": digest, "expires_at": expires_at}))
                    .collect(),
            )
        })
    }

    /// `user`'s two-factor enrolment, if they have one.
    pub fn two_factor(&self, user: UserId) -> Option<&TwoFactor> {
        self.two_factor.get(&user)
    }

    fn apply_two_factor(&mut self, at: i64, user: UserId, change: &TwoFactorChange) {
        match change {
            TwoFactorChange::Enabled {
                key_nonce,
                backup_nonce,
                step,
            } => {
                self.two_factor.insert(
                    user,
                    TwoFactor {
                        key_nonce: key_nonce.clone(),
                        backup_nonce: backup_nonce.clone(),
                        backup_used: 0,
                        last_step: *step,
                        enabled_at: at,
                    },
                );
            }
            TwoFactorChange::Disabled { .. } => {
                self.two_factor.remove(&user);
            }
            change => {
                let Some(enrolment) = self.two_factor.get_mut(&user) else {
                    return;
                };
                match change {
                    TwoFactorChange::CodeUsed { step } => {
                        enrolment.last_step = enrolment.last_step.max(*step);
                    }
                    TwoFactorChange::BackupCodeUsed { index } => {
                        enrolment.backup_used |= 1u16.checked_shl(u32::from(*index)).unwrap_or(0);
                    }
                    TwoFactorChange::BackupCodesIssued { backup_nonce } => {
                        enrolment.backup_nonce = Some(backup_nonce.clone());
                        enrolment.backup_used = 0;
                    }
                    TwoFactorChange::Enabled { .. } | TwoFactorChange::Disabled { .. } => {}
                }
            }
        }
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::TwoFactorChanged { user_id, change } => {
                self.apply_two_factor(env.at, *user_id, change);
            }
            Event::SignInTokenSpent { digest, expires_at } => {
                // Proofs that expired by now are refused for that reason alone.
                self.spent.retain(|_, until| *until > env.at);
                self.spent.insert(digest.clone(), *expires_at);
            }
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
            | Event::UserEmailChanged { .. }
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
            | Event::ClientDeviceRegistered { .. }
            | Event::ClientDeviceRemoved { .. }
            | Event::LogErased { .. }
            | Event::ImportStarted { .. }
            | Event::ImportFinished { .. }
            | Event::RealmExported { .. }
            | Event::RealmExportDeleted { .. }
            | Event::Imported { .. }
            | Event::MessagesReadThrough { .. }
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
            | Event::ClockWentBack { .. } => {}
        }
    }

    /// Who has two-factor authentication, for the dump (`None` when nobody does, so that
    /// dumps of older logs keep their shape). No nonce: what they derive is nobody's business.
    pub fn two_factor_dump(&self) -> Option<Value> {
        if self.two_factor.is_empty() {
            return None;
        }
        Some(Value::Object(
            self.two_factor
                .iter()
                .map(|(user, t)| {
                    let entry = json!({
                        "enabled_at": t.enabled_at,
                        "backup_codes_left": t.backup_codes_left(),
                        "last_step": t.last_step,
                    });
                    (user.0.to_string(), entry)
                })
                .collect(),
        ))
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

//! Invitations: by email, or reusable links, with what they grant and where they stand.

use crate::events::{Envelope, Event, InvitationSpec};
use crate::ids::{InviteId, UserId};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Where an invitation stands (expiry is separate: it depends on the time of asking).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum InviteStatus {
    Pending,
    /// An email invitation whose account exists (reusable links are never used up).
    Used,
    Revoked,
}

/// One invitation.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Invitation {
    pub id: InviteId,
    /// `None` for a reusable link.
    pub email: Option<String>,
    pub invited_by: Option<UserId>,
    /// Milliseconds since the epoch.
    pub invited_ms: i64,
    pub spec: InvitationSpec,
    /// Secret-derived: the link key comes from it and the server secret. Never dumped.
    pub link_nonce: String,
    pub status: InviteStatus,
    /// Accounts created through it.
    pub accepted_by: Vec<UserId>,
}

impl Invitation {
    pub fn is_multiuse(&self) -> bool {
        self.email.is_none()
    }

    /// Pending and not expired at `now_ms`.
    pub fn is_valid(&self, now_ms: i64) -> bool {
        self.status == InviteStatus::Pending && self.spec.expires_at_ms.is_none_or(|at| now_ms < at)
    }
}

/// All invitations.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Invitations {
    by_id: BTreeMap<InviteId, Invitation>,
}

impl Invitations {
    pub fn get(&self, id: InviteId) -> Option<&Invitation> {
        self.by_id.get(&id)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Invitation> {
        self.by_id.values()
    }

    pub fn max_id(&self) -> InviteId {
        self.by_id.keys().next_back().copied().unwrap_or_default()
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::InvitationCreated {
                invite_id,
                email,
                spec,
                link_nonce,
            } => {
                self.by_id.insert(
                    *invite_id,
                    Invitation {
                        id: *invite_id,
                        email: email.clone(),
                        invited_by: env.actor,
                        invited_ms: env.at,
                        spec: (**spec).clone(),
                        link_nonce: link_nonce.clone(),
                        status: InviteStatus::Pending,
                        accepted_by: Vec::new(),
                    },
                );
            }
            // Nothing changes: the same link was sent again.
            Event::InvitationResent { .. } => {}
            Event::InvitationRevoked { invite_id } => {
                if let Some(invite) = self.by_id.get_mut(invite_id) {
                    invite.status = InviteStatus::Revoked;
                }
            }
            Event::InvitationAccepted { invite_id, user_id } => {
                let Some(invite) = self.by_id.get_mut(invite_id) else {
                    return;
                };
                invite.accepted_by.push(*user_id);
                if invite.is_multiuse() {
                    return;
                }
                invite.status = InviteStatus::Used;
                // Other pending invitations of the same address are spent too.
                let email = invite.email.clone();
                for other in self.by_id.values_mut() {
                    let same = other.email.is_some()
                        && other.email.as_deref().map(str::to_lowercase)
                            == email.as_deref().map(str::to_lowercase);
                    if same && other.status == InviteStatus::Pending {
                        other.status = InviteStatus::Revoked;
                    }
                }
            }
            Event::RealmCreated { .. }
            | Event::RealmSettingChanged { .. }
            | Event::LinkifierAdded { .. }
            | Event::LinkifierChanged { .. }
            | Event::LinkifierRemoved { .. }
            | Event::LinkifiersReordered { .. }
            | Event::CustomProfileFieldCreated { .. }
            | Event::CustomProfileFieldChanged { .. }
            | Event::CustomProfileFieldDeleted { .. }
            | Event::CustomProfileFieldsReordered { .. }
            | Event::ProfileDataSet { .. }
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
        Value::Array(
            self.by_id
                .values()
                .map(|i| {
                    json!({
                        "id": i.id.0,
                        "email": i.email,
                        "invited_by": i.invited_by.map(|u| u.0),
                        "invited_ms": i.invited_ms,
                        "spec": i.spec,
                        "status": format!("{:?}", i.status),
                        "accepted_by": i.accepted_by.iter().map(|u| u.0).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        )
    }
}

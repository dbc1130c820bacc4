//! What the notifier owes people away from their clients: notices of messages that fall due
//! for a missed-message email, and emails queued but not yet taken by the mail relay. Both come
//! from durable events (`NoticesRecorded`, `EmailQueued`, ...), so a restart neither forgets
//! what was due nor sends again what was sent (`notify` decides and delivers).

use crate::events::{Envelope, Event, NoticeTrigger, QueuedMail, QueuedPush};
use crate::ids::{MessageId, UserId};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One pending notice of a person's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pending {
    pub message_id: MessageId,
    pub trigger: NoticeTrigger,
    /// Milliseconds since the epoch.
    pub due_at: i64,
}

/// An email queued and not yet sent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Outgoing {
    pub mail_id: u64,
    pub user_id: UserId,
    pub mail: QueuedMail,
    /// When it was queued (ms).
    pub queued_at: i64,
}

/// The notifier's durable state.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Notices {
    pending: BTreeMap<UserId, Vec<Pending>>,
    /// Each person's earliest due time, by time: who falls due next.
    by_due: BTreeSet<(i64, UserId)>,
    /// The newest message the notifier considered.
    through: MessageId,
    outgoing: BTreeMap<u64, Outgoing>,
    /// The highest mail id ever given (ids are never reused).
    last_mail_id: u64,
    sent: u64,
    failed: u64,
    /// When each person's last digest was queued (ms).
    #[serde(default)]
    last_digest: BTreeMap<UserId, i64>,
    /// Pushes queued and not yet sent.
    #[serde(default)]
    pushes: BTreeMap<u64, OutgoingPush>,
    #[serde(default)]
    last_push_id: u64,
    /// The messages each person was pushed about and has not had taken away (Zulip's
    /// `active_mobile_push_notification` flag).
    #[serde(default)]
    pushed: BTreeMap<UserId, BTreeSet<MessageId>>,
    #[serde(default)]
    pushes_sent: u64,
}

/// A push queued and not yet sent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutgoingPush {
    pub push_id: u64,
    pub user_id: UserId,
    pub push: QueuedPush,
    /// When it was queued (ms).
    pub queued_at: i64,
}

impl Notices {
    /// The newest message the notifier has considered.
    pub fn through(&self) -> MessageId {
        self.through
    }

    pub fn next_mail_id(&self) -> u64 {
        self.last_mail_id + 1
    }

    /// People with a notice due at `now_ms` or earlier, the longest due first.
    pub fn due_users(&self, now_ms: i64) -> Vec<UserId> {
        self.by_due
            .iter()
            .take_while(|(due, _)| *due <= now_ms)
            .map(|(_, user)| *user)
            .collect()
    }

    /// When the next notice falls due (ms), if any is pending.
    pub fn next_due(&self) -> Option<i64> {
        self.by_due.first().map(|(due, _)| *due)
    }

    /// A person's pending notices, oldest message first.
    pub fn pending_of(&self, user: UserId) -> &[Pending] {
        self.pending.get(&user).map_or(&[], Vec::as_slice)
    }

    /// Emails queued and not yet sent, oldest first.
    pub fn outgoing(&self) -> impl Iterator<Item = &Outgoing> {
        self.outgoing.values()
    }

    pub fn outgoing_mail(&self, mail_id: u64) -> Option<&Outgoing> {
        self.outgoing.get(&mail_id)
    }

    /// When `user`'s last digest was queued (ms).
    pub fn last_digest(&self, user: UserId) -> Option<i64> {
        self.last_digest.get(&user).copied()
    }

    pub fn next_push_id(&self) -> u64 {
        self.last_push_id + 1
    }

    /// Pushes queued and not yet sent, oldest first.
    pub fn outgoing_pushes(&self) -> impl Iterator<Item = &OutgoingPush> {
        self.pushes.values()
    }

    pub fn outgoing_push(&self, push_id: u64) -> Option<&OutgoingPush> {
        self.pushes.get(&push_id)
    }

    /// The messages `user` holds a push notification about.
    pub fn pushed(&self, user: UserId) -> impl Iterator<Item = MessageId> + '_ {
        self.pushed.get(&user).into_iter().flatten().copied()
    }

    /// Emails sent and given up on since the log began.
    pub fn totals(&self) -> (u64, u64) {
        (self.sent, self.failed)
    }

    fn reindex(&mut self, user: UserId, before: Option<i64>) {
        if let Some(due) = before {
            self.by_due.remove(&(due, user));
        }
        match self.pending.get(&user) {
            Some(list) if !list.is_empty() => {
                let first = list.iter().map(|p| p.due_at).min().unwrap_or(0);
                self.by_due.insert((first, user));
            }
            _ => {
                self.pending.remove(&user);
            }
        }
    }

    fn earliest(&self, user: UserId) -> Option<i64> {
        self.pending
            .get(&user)
            .and_then(|list| list.iter().map(|p| p.due_at).min())
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::NoticesRecorded { notices, through } => {
                self.through = self.through.max(*through);
                let users: BTreeSet<UserId> = notices.iter().map(|n| n.user_id).collect();
                let before: Vec<(UserId, Option<i64>)> =
                    users.iter().map(|u| (*u, self.earliest(*u))).collect();
                for notice in notices {
                    let list = self.pending.entry(notice.user_id).or_default();
                    // One notice per message: the first reason found stands.
                    if !list.iter().any(|p| p.message_id == notice.message_id) {
                        list.push(Pending {
                            message_id: notice.message_id,
                            trigger: notice.trigger,
                            due_at: notice.due_at,
                        });
                    }
                }
                for (user, earliest) in before {
                    if let Some(list) = self.pending.get_mut(&user) {
                        list.sort_by_key(|p| p.message_id);
                    }
                    self.reindex(user, earliest);
                }
            }
            Event::NoticesSettled {
                user_id,
                message_ids,
            } => {
                let earliest = self.earliest(*user_id);
                if let Some(list) = self.pending.get_mut(user_id) {
                    let settled: BTreeSet<MessageId> = message_ids.iter().copied().collect();
                    list.retain(|p| !settled.contains(&p.message_id));
                }
                self.reindex(*user_id, earliest);
            }
            Event::EmailQueued {
                mail_id,
                user_id,
                mail,
            } => {
                self.last_mail_id = self.last_mail_id.max(*mail_id);
                if matches!(mail, QueuedMail::Digest { .. }) {
                    self.last_digest.insert(*user_id, env.at);
                }
                self.outgoing.insert(
                    *mail_id,
                    Outgoing {
                        mail_id: *mail_id,
                        user_id: *user_id,
                        mail: mail.clone(),
                        queued_at: env.at,
                    },
                );
            }
            Event::PushQueued {
                push_id,
                user_id,
                push,
            } => {
                self.last_push_id = self.last_push_id.max(*push_id);
                match push {
                    QueuedPush::Message { message_id, .. } => {
                        self.pushed.entry(*user_id).or_default().insert(*message_id);
                    }
                    QueuedPush::Remove { message_ids } => {
                        if let Some(set) = self.pushed.get_mut(user_id) {
                            for id in message_ids {
                                set.remove(id);
                            }
                            if set.is_empty() {
                                self.pushed.remove(user_id);
                            }
                        }
                    }
                }
                self.pushes.insert(
                    *push_id,
                    OutgoingPush {
                        push_id: *push_id,
                        user_id: *user_id,
                        push: push.clone(),
                        queued_at: env.at,
                    },
                );
            }
            Event::PushSent { push_id, .. } => {
                if self.pushes.remove(push_id).is_some() {
                    self.pushes_sent += 1;
                }
            }
            Event::PushFailed { push_id, .. } => {
                self.pushes.remove(push_id);
            }
            Event::EmailSent { mail_id } => {
                if self.outgoing.remove(mail_id).is_some() {
                    self.sent += 1;
                }
            }
            Event::EmailFailed { mail_id, .. } => {
                if self.outgoing.remove(mail_id).is_some() {
                    self.failed += 1;
                }
            }
            Event::PushDeviceChanged { .. }
            | Event::PushTestSent { .. }
            | Event::ClockWentBack { .. }
            | Event::RealmCreated { .. }
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

    /// The admin dump's `notifications` area, `None` while nothing was ever noticed or mailed
    /// (so that dumps of older logs keep their shape). Ids, triggers and times only.
    pub fn dump(&self) -> Option<Value> {
        if self.through == MessageId(0) && self.last_mail_id == 0 && self.last_push_id == 0 {
            return None;
        }
        let pending: serde_json::Map<String, Value> = self
            .pending
            .iter()
            .map(|(user, list)| {
                (
                    user.0.to_string(),
                    Value::Array(
                        list.iter()
                            .map(|p| {
                                json!({
                                    "message_id": p.message_id.0,
                                    "trigger": p.trigger,
                                    "due_at": p.due_at,
                                })
                            })
                            .collect(),
                    ),
                )
            })
            .collect();
        let outgoing: Vec<Value> = self
            .outgoing
            .values()
            .map(|o| {
                json!({
                    "mail_id": o.mail_id,
                    "user_id": o.user_id.0,
                    "mail": o.mail,
                    "queued_at": o.queued_at,
                })
            })
            .collect();
        Some(json!({
            "considered_through_message_id": self.through.0,
            "pending": pending,
            "queued_emails": outgoing,
            "emails_sent": self.sent,
            "emails_given_up": self.failed,
            "queued_pushes": self.pushes.values().map(|p| json!({
                "push_id": p.push_id,
                "user_id": p.user_id.0,
                "push": p.push,
                "queued_at": p.queued_at,
            })).collect::<Vec<_>>(),
            "pushes_sent": self.pushes_sent,
        }))
    }
}

//! Scheduled messages and message reminders (`/scheduled_messages`, `/reminders`): messages a
//! user saved to be sent later, until they are sent or deleted. A reminder is a scheduled
//! direct message to its sender from the notification bot about another message.

use crate::events::{Envelope, Event, Recipient};
use crate::ids::{MessageId, ScheduledMessageId, UserId};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One scheduled message or reminder, as last saved.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScheduledMessage {
    pub id: ScheduledMessageId,
    pub sender_id: UserId,
    pub recipient: Recipient,
    pub content: String,
    pub rendered_content: String,
    /// Seconds since the epoch.
    pub deliver_at: i64,
    pub read_by_sender: Option<bool>,
    pub reminder_for: Option<MessageId>,
    /// Why the last attempt to send it failed; `None` until one did.
    pub failure: Option<String>,
    /// The client that scheduled it (empty for reminders).
    #[serde(default)]
    pub client: String,
}

impl ScheduledMessage {
    /// Zulip's `to`: the channel id, or the other participants of a direct message (the sender
    /// alone for a message to oneself).
    pub fn to_json(&self) -> Value {
        match &self.recipient {
            Recipient::Channel { channel_id, .. } => json!(channel_id.0),
            Recipient::Direct { user_ids } => {
                let others: Vec<u64> = user_ids
                    .iter()
                    .filter(|u| **u != self.sender_id)
                    .map(|u| u.0)
                    .collect();
                if others.is_empty() {
                    json!([self.sender_id.0])
                } else {
                    json!(others)
                }
            }
        }
    }

    /// Zulip's scheduled-message object (`GET /scheduled_messages`, events).
    pub fn json(&self) -> Value {
        let mut out = Map::new();
        out.insert("scheduled_message_id".into(), json!(self.id.0));
        match &self.recipient {
            Recipient::Channel { topic, .. } => {
                out.insert("type".into(), json!("stream"));
                out.insert("topic".into(), json!(topic));
            }
            Recipient::Direct { .. } => {
                out.insert("type".into(), json!("private"));
            }
        }
        out.insert("to".into(), self.to_json());
        out.insert("content".into(), json!(self.content));
        out.insert("rendered_content".into(), json!(self.rendered_content));
        out.insert(
            "scheduled_delivery_timestamp".into(),
            json!(self.deliver_at),
        );
        out.insert("failed".into(), json!(self.failure.is_some()));
        Value::Object(out)
    }
}

/// Every undelivered scheduled message and reminder.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Scheduled {
    by_id: BTreeMap<ScheduledMessageId, ScheduledMessage>,
    /// The ones still to try, by time: what the delivery job looks at.
    due: BTreeSet<(i64, ScheduledMessageId)>,
    /// The highest id ever given (ids are never reused).
    last_id: u64,
}

impl Scheduled {
    pub fn get(&self, id: ScheduledMessageId) -> Option<&ScheduledMessage> {
        self.by_id.get(&id)
    }

    /// The id the next saved message gets.
    pub fn next_id(&self) -> ScheduledMessageId {
        ScheduledMessageId(self.last_id + 1)
    }

    /// `user`'s scheduled messages (`reminders: false`) or reminders, by delivery time.
    pub fn of(&self, user: UserId, reminders: bool) -> Vec<&ScheduledMessage> {
        let mut mine: Vec<&ScheduledMessage> = self
            .by_id
            .values()
            .filter(|s| s.sender_id == user && s.reminder_for.is_some() == reminders)
            .collect();
        mine.sort_by_key(|s| (s.deliver_at, s.id));
        mine
    }

    /// The earliest time something is to be sent (seconds), if anything is.
    pub fn next_due(&self) -> Option<i64> {
        self.due.first().map(|(at, _)| *at)
    }

    /// Everything due at `now` (seconds), earliest first.
    pub fn due_at(&self, now: i64) -> Vec<ScheduledMessageId> {
        self.due
            .iter()
            .take_while(|(at, _)| *at <= now)
            .map(|(_, id)| *id)
            .collect()
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::ScheduledMessageSaved {
                scheduled_message_id: id,
                sender_id,
                recipient,
                content,
                rendered_content,
                deliver_at,
                read_by_sender,
                reminder_for,
                client,
                ..
            } => {
                if let Some(old) = self.by_id.get(id) {
                    self.due.remove(&(old.deliver_at, *id));
                }
                self.last_id = self.last_id.max(id.0);
                self.due.insert((*deliver_at, *id));
                self.by_id.insert(
                    *id,
                    ScheduledMessage {
                        id: *id,
                        sender_id: *sender_id,
                        recipient: recipient.clone(),
                        content: content.clone(),
                        rendered_content: rendered_content.clone(),
                        deliver_at: *deliver_at,
                        read_by_sender: *read_by_sender,
                        reminder_for: *reminder_for,
                        failure: None,
                        client: client.clone(),
                    },
                );
            }
            Event::ScheduledMessageFailed {
                scheduled_message_id: id,
                reason,
                ..
            } => {
                if let Some(s) = self.by_id.get_mut(id) {
                    self.due.remove(&(s.deliver_at, *id));
                    s.failure = Some(reason.clone());
                }
            }
            Event::ScheduledMessageRemoved {
                scheduled_message_id: id,
                ..
            } => {
                if let Some(s) = self.by_id.remove(id) {
                    self.due.remove(&(s.deliver_at, *id));
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

    /// Every scheduled message and reminder, by id (the admin dump).
    pub fn dump(&self) -> Value {
        Value::Object(
            self.by_id
                .values()
                .map(|s| {
                    let mut entry = s.json();
                    entry["sender_id"] = json!(s.sender_id.0);
                    if let Some(reason) = &s.failure {
                        entry["failure"] = json!(reason);
                    }
                    if let Some(target) = s.reminder_for {
                        entry["reminder_for"] = json!(target.0);
                    }
                    if let Some(read) = s.read_by_sender {
                        entry["read_by_sender"] = json!(read);
                    }
                    (s.id.0.to_string(), entry)
                })
                .collect(),
        )
    }
}

//! Channels and subscriptions.

use crate::events::{
    ChannelChange, ChannelPermissions, Envelope, Event, SubscriptionProperty, TopicsPolicy,
};
use crate::ids::{ChannelId, FolderId, UserId};
use crate::markdown::render_description;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One channel.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Channel {
    pub id: ChannelId,
    pub name: String,
    pub description: String,
    pub rendered_description: String,
    pub invite_only: bool,
    pub is_web_public: bool,
    pub history_public_to_subscribers: bool,
    pub message_retention_days: Option<i32>,
    pub folder_id: Option<FolderId>,
    pub topics_policy: TopicsPolicy,
    pub is_default: bool,
    pub is_archived: bool,
    pub permissions: ChannelPermissions,
    pub date_created_ms: i64,
    pub creator_id: Option<UserId>,
    /// Users currently subscribed.
    pub subscribers: BTreeSet<UserId>,
    /// The name before the last rename: Zulip's rename event names the channel by it.
    pub previous_name: Option<String>,
}

/// One user's subscription to one channel. Kept after unsubscribing (`active` false), as Zulip
/// does, so that `unsubscribed` and a later re-subscription keep the user's settings.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Subscription {
    pub active: bool,
    pub color: String,
    pub is_muted: bool,
    pub pin_to_top: bool,
    pub desktop_notifications: Option<bool>,
    pub audible_notifications: Option<bool>,
    pub push_notifications: Option<bool>,
    pub email_notifications: Option<bool>,
    pub wildcard_mentions_notify: Option<bool>,
}

/// A default channel group: channels offered together to people who join.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DefaultGroup {
    pub id: u64,
    pub name: String,
    pub description: String,
    pub channel_ids: Vec<ChannelId>,
}

/// All channels and subscriptions.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Channels {
    by_id: BTreeMap<ChannelId, Channel>,
    by_name: HashMap<String, ChannelId>,
    subscriptions: BTreeMap<(UserId, ChannelId), Subscription>,
    /// Default channel groups by id, and the highest id given. Absent from snapshots written
    /// before they existed.
    #[serde(default)]
    default_groups: BTreeMap<u64, DefaultGroup>,
    #[serde(default)]
    highest_default_group_id: u64,
}

/// Channel names are unique case-insensitively.
pub fn channel_key(name: &str) -> String {
    name.trim().to_lowercase()
}

impl Channels {
    pub fn get(&self, id: ChannelId) -> Option<&Channel> {
        self.by_id.get(&id)
    }

    pub fn by_name(&self, name: &str) -> Option<&Channel> {
        self.by_name
            .get(&channel_key(name))
            .and_then(|id| self.by_id.get(id))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Channel> {
        self.by_id.values()
    }

    /// The default channel groups, by id.
    pub fn default_groups(&self) -> impl Iterator<Item = &DefaultGroup> {
        self.default_groups.values()
    }

    pub fn default_group(&self, id: u64) -> Option<&DefaultGroup> {
        self.default_groups.get(&id)
    }

    /// The id the next default channel group gets.
    pub fn next_default_group_id(&self) -> u64 {
        self.highest_default_group_id + 1
    }

    pub fn max_id(&self) -> ChannelId {
        self.by_id
            .keys()
            .next_back()
            .copied()
            .unwrap_or(ChannelId(0))
    }

    /// A user's subscription record (active or not).
    pub fn subscription(&self, user: UserId, channel: ChannelId) -> Option<&Subscription> {
        self.subscriptions.get(&(user, channel))
    }

    pub fn is_subscribed(&self, user: UserId, channel: ChannelId) -> bool {
        self.subscription(user, channel).is_some_and(|s| s.active)
    }

    /// Every subscription record of a user, active or not, by channel id.
    pub fn subscriptions_of(
        &self,
        user: UserId,
    ) -> impl Iterator<Item = (ChannelId, &Subscription)> {
        self.subscriptions
            .range((user, ChannelId(0))..=(user, ChannelId(u64::MAX)))
            .map(|((_, channel), sub)| (*channel, sub))
    }

    /// Number of channels a user was ever subscribed to (drives color choice).
    pub fn subscription_count(&self, user: UserId) -> usize {
        self.subscriptions_of(user).count()
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::ChannelCreated { .. } => self.channel_created(env),
            Event::ChannelChanged { .. } => self.channel_changed(env),
            Event::DefaultChannelGroupSaved {
                group_id,
                name,
                description,
                channel_ids,
            } => {
                self.highest_default_group_id = self.highest_default_group_id.max(*group_id);
                self.default_groups.insert(
                    *group_id,
                    DefaultGroup {
                        id: *group_id,
                        name: name.clone(),
                        description: description.clone(),
                        channel_ids: channel_ids.clone(),
                    },
                );
            }
            Event::DefaultChannelGroupRemoved { group_id } => {
                self.default_groups.remove(group_id);
            }
            Event::Subscribed {
                channel_id,
                subscriptions,
            } => {
                let Some(channel) = self.by_id.get_mut(channel_id) else {
                    return;
                };
                for new in subscriptions {
                    channel.subscribers.insert(new.user_id);
                    self.subscriptions
                        .entry((new.user_id, *channel_id))
                        .and_modify(|s| s.active = true)
                        .or_insert_with(|| Subscription {
                            active: true,
                            color: new.color.clone(),
                            is_muted: false,
                            pin_to_top: false,
                            desktop_notifications: None,
                            audible_notifications: None,
                            push_notifications: None,
                            email_notifications: None,
                            wildcard_mentions_notify: None,
                        });
                }
            }
            Event::Unsubscribed {
                channel_id,
                user_ids,
            } => {
                if let Some(channel) = self.by_id.get_mut(channel_id) {
                    for user in user_ids {
                        channel.subscribers.remove(user);
                        if let Some(sub) = self.subscriptions.get_mut(&(*user, *channel_id)) {
                            sub.active = false;
                        }
                    }
                }
            }
            Event::SubscriptionPropertyChanged {
                user_id,
                channel_id,
                property,
            } => {
                let Some(sub) = self.subscriptions.get_mut(&(*user_id, *channel_id)) else {
                    return;
                };
                match property {
                    SubscriptionProperty::Color(c) => sub.color = c.clone(),
                    SubscriptionProperty::IsMuted(v) => sub.is_muted = *v,
                    SubscriptionProperty::PinToTop(v) => sub.pin_to_top = *v,
                    SubscriptionProperty::DesktopNotifications(v) => sub.desktop_notifications = *v,
                    SubscriptionProperty::AudibleNotifications(v) => sub.audible_notifications = *v,
                    SubscriptionProperty::PushNotifications(v) => sub.push_notifications = *v,
                    SubscriptionProperty::EmailNotifications(v) => sub.email_notifications = *v,
                    SubscriptionProperty::WildcardMentionsNotify(v) => {
                        sub.wildcard_mentions_notify = *v
                    }
                }
            }
            Event::RealmCreated { .. }
            | Event::RealmSettingChanged { .. }
            | Event::InvitationCreated { .. }
            | Event::InvitationResent { .. }
            | Event::InvitationRevoked { .. }
            | Event::InvitationAccepted { .. }
            | Event::CustomProfileFieldCreated { .. }
            | Event::CustomProfileFieldChanged { .. }
            | Event::CustomProfileFieldDeleted { .. }
            | Event::CustomProfileFieldsReordered { .. }
            | Event::ProfileDataSet { .. }
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
            | Event::RealmImageSet { .. }
            | Event::MessageSent { .. }
            | Event::MessageFlagsChanged { .. }
            | Event::ReactionAdded { .. }
            | Event::ReactionRemoved { .. }
            | Event::MessageEdited { .. }
            | Event::MessagesDeleted { .. } => {}
        }
    }

    /// Adds a new channel with its initial subscribers.
    fn channel_created(&mut self, env: &Envelope) {
        let Event::ChannelCreated {
            channel_id,
            name,
            description,
            invite_only,
            is_web_public,
            history_public_to_subscribers,
            message_retention_days,
            folder_id,
            topics_policy,
            is_default,
            permissions,
        } = &env.event
        else {
            return;
        };
        self.by_name.insert(channel_key(name), *channel_id);
        self.by_id.insert(
            *channel_id,
            Channel {
                id: *channel_id,
                name: name.clone(),
                description: description.clone(),
                rendered_description: render_description(description),
                invite_only: *invite_only,
                is_web_public: *is_web_public,
                history_public_to_subscribers: *history_public_to_subscribers,
                message_retention_days: *message_retention_days,
                folder_id: *folder_id,
                topics_policy: *topics_policy,
                is_default: *is_default,
                is_archived: false,
                permissions: (**permissions).clone(),
                date_created_ms: env.at,
                creator_id: env.actor,
                subscribers: BTreeSet::new(),
                previous_name: None,
            },
        );
    }

    /// Applies one change of a channel's settings.
    fn channel_changed(&mut self, env: &Envelope) {
        let Event::ChannelChanged { channel_id, change } = &env.event else {
            return;
        };
        let Some(channel) = self.by_id.get_mut(channel_id) else {
            return;
        };
        match change {
            ChannelChange::Name(name) => {
                self.by_name.remove(&channel_key(&channel.name));
                self.by_name.insert(channel_key(name), *channel_id);
                channel.previous_name = Some(std::mem::replace(&mut channel.name, name.clone()));
            }
            ChannelChange::Description(text) => {
                channel.description = text.clone();
                channel.rendered_description = render_description(text);
            }
            ChannelChange::Privacy {
                invite_only,
                history_public_to_subscribers,
                is_web_public,
            } => {
                channel.invite_only = *invite_only;
                channel.history_public_to_subscribers = *history_public_to_subscribers;
                channel.is_web_public = *is_web_public;
            }
            ChannelChange::MessageRetentionDays(days) => channel.message_retention_days = *days,
            ChannelChange::Folder(folder) => channel.folder_id = *folder,
            ChannelChange::TopicsPolicy(policy) => channel.topics_policy = *policy,
            ChannelChange::Permission { setting, value } => {
                if let Some(slot) = channel.permissions.get_mut(setting) {
                    *slot = value.clone();
                }
            }
            ChannelChange::Archived(flag) => channel.is_archived = *flag,
            ChannelChange::DefaultForNewUsers(flag) => channel.is_default = *flag,
        }
    }

    pub fn dump(&self) -> Value {
        let channels: Vec<Value> = self
            .by_id
            .values()
            .map(|c| {
                json!({
                    "stream_id": c.id.0,
                    "name": c.name,
                    "description": c.description,
                    "invite_only": c.invite_only,
                    "is_web_public": c.is_web_public,
                    "history_public_to_subscribers": c.history_public_to_subscribers,
                    "message_retention_days": c.message_retention_days,
                    "folder_id": c.folder_id,
                    "topics_policy": c.topics_policy.as_str(),
                    "is_default": c.is_default,
                    "is_archived": c.is_archived,
                    "permissions": serde_json::to_value(&c.permissions).unwrap_or(Value::Null),
                    "date_created_ms": c.date_created_ms,
                    "creator_id": c.creator_id,
                    "subscribers": c.subscribers,
                })
            })
            .collect();
        let subscriptions: Vec<Value> = self
            .subscriptions
            .iter()
            .map(|((user, channel), s)| {
                json!({
                    "user_id": user.0, "stream_id": channel.0, "active": s.active,
                    "color": s.color, "is_muted": s.is_muted, "pin_to_top": s.pin_to_top,
                    "desktop_notifications": s.desktop_notifications,
                    "audible_notifications": s.audible_notifications,
                    "push_notifications": s.push_notifications,
                    "email_notifications": s.email_notifications,
                    "wildcard_mentions_notify": s.wildcard_mentions_notify,
                })
            })
            .collect();
        let mut dump = json!({"channels": channels, "subscriptions": subscriptions});
        // Only when there is one, so that dumps of logs without them are unchanged.
        if !self.default_groups.is_empty() {
            dump["default_channel_groups"] = json!(self
                .default_groups
                .values()
                .map(
                    |g| json!({"id": g.id, "name": g.name, "description": g.description,
                               "stream_ids": g.channel_ids})
                )
                .collect::<Vec<_>>());
        }
        dump
    }
}

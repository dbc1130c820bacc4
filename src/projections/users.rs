//! Users and bots, indexed by id and by lower-cased email.

use crate::events::{BotConfig, Envelope, Event, Role, UserChange};
use crate::ids::UserId;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One account as the server knows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct User {
    pub user_id: UserId,
    pub email: String,
    pub full_name: String,
    pub role: Role,
    pub bot_type: Option<u8>,
    pub bot_owner_id: Option<UserId>,
    pub timezone: String,
    /// Milliseconds since the epoch.
    pub date_joined_ms: i64,
    pub is_active: bool,
    pub can_create_users: bool,
    /// argon2id PHC string (secret: never dumped).
    pub password_hash: Option<String>,
    /// Nonce the API key is derived from (secret: never dumped).
    pub api_key_nonce: String,
    pub avatar_version: u64,
    /// An uploaded avatar (`None`: the generated one).
    #[serde(default)]
    pub avatar: Option<crate::events::AvatarImage>,
    /// Bots only: default channels and services.
    pub bot: Option<Box<BotConfig>>,
}

impl User {
    pub fn is_bot(&self) -> bool {
        self.bot_type.is_some()
    }

    /// One of the server's own bots (the notification bot).
    pub fn is_system_bot(&self) -> bool {
        self.bot.as_ref().is_some_and(|b| b.system)
    }
}

/// All accounts.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Users {
    by_id: BTreeMap<UserId, User>,
    by_email: HashMap<String, UserId>,
    /// Deactivated users (usually few), so that counting a channel's active subscribers does
    /// not look each one up. Derived from `by_id`: rebuilt after a snapshot is loaded.
    #[serde(skip)]
    inactive: BTreeSet<UserId>,
    /// Renewed whenever a user changes (see [`super::Stamp`]); not kept in snapshots.
    #[serde(skip)]
    stamp: super::Stamp,
}

/// The key emails are looked up by: Zulip compares addresses case-insensitively.
pub fn email_key(email: &str) -> String {
    email.trim().to_lowercase()
}

impl Users {
    pub fn get(&self, id: UserId) -> Option<&User> {
        self.by_id.get(&id)
    }

    /// Renewed whenever a user changes: what is rendered from them is still right while it is the same.
    pub fn stamp(&self) -> super::Stamp {
        self.stamp
    }

    /// How many of `ids` are active: all of them but the deactivated ones. `ids` must be
    /// existing users, as a channel's subscribers are (commands subscribe no one else; users
    /// are never removed).
    pub fn active_among(&self, ids: &BTreeSet<UserId>) -> usize {
        let inactive = if self.inactive.len() < ids.len() {
            self.inactive.iter().filter(|u| ids.contains(u)).count()
        } else {
            ids.iter().filter(|u| self.inactive.contains(u)).count()
        };
        ids.len() - inactive
    }

    /// Whether `id` is an existing user who was not deactivated.
    pub fn is_active(&self, id: UserId) -> bool {
        !self.inactive.contains(&id) && self.by_id.contains_key(&id)
    }

    /// Rebuilds what a snapshot leaves out.
    pub fn restore_derived(&mut self) {
        self.inactive = self
            .by_id
            .values()
            .filter(|u| !u.is_active)
            .map(|u| u.user_id)
            .collect();
    }

    pub fn by_email(&self, email: &str) -> Option<&User> {
        self.by_email
            .get(&email_key(email))
            .and_then(|id| self.by_id.get(id))
    }

    pub fn iter(&self) -> impl Iterator<Item = &User> {
        self.by_id.values()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The highest user id ever allocated (ids are never reused).
    pub fn max_id(&self) -> UserId {
        self.by_id.keys().next_back().copied().unwrap_or(UserId(0))
    }

    /// The account with this address that is one of the server's own bots.
    pub fn system_bot(&self, email: &str) -> Option<&User> {
        self.by_email(email).filter(|u| u.is_system_bot())
    }

    /// Accounts of the organization proper: everyone but the server's own bots (which Zulip
    /// keeps in another realm and lists as `cross_realm_bots`).
    pub fn members(&self) -> impl Iterator<Item = &User> {
        self.by_id.values().filter(|u| !u.is_system_bot())
    }

    /// Bots owned by `owner`, in creation order.
    pub fn bots_of(&self, owner: UserId) -> impl Iterator<Item = &User> {
        self.by_id
            .values()
            .filter(move |u| u.is_bot() && u.bot_owner_id == Some(owner))
    }

    /// Active owners, for the "only organization owner" rule.
    pub fn active_owner_count(&self) -> usize {
        self.by_id
            .values()
            .filter(|u| u.is_active && u.role == Role::Owner && !u.is_bot())
            .count()
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::UserCreated {
                user_id,
                email,
                full_name,
                role,
                bot_type,
                bot_owner_id,
                timezone,
                can_create_users,
                password_hash,
                api_key_nonce,
                bot,
            } => {
                self.by_email.insert(email_key(email), *user_id);
                self.inactive.remove(user_id);
                self.by_id.insert(
                    *user_id,
                    User {
                        user_id: *user_id,
                        email: email.clone(),
                        full_name: full_name.clone(),
                        role: *role,
                        bot_type: *bot_type,
                        bot_owner_id: *bot_owner_id,
                        timezone: timezone.clone(),
                        date_joined_ms: env.at,
                        is_active: true,
                        can_create_users: *can_create_users,
                        password_hash: password_hash.clone(),
                        api_key_nonce: api_key_nonce.clone(),
                        avatar_version: 1,
                        avatar: None,
                        bot: bot.clone(),
                    },
                );
            }
            Event::UserEmailChanged { user_id, email } => {
                if let Some(user) = self.by_id.get_mut(user_id) {
                    self.by_email.remove(&email_key(&user.email));
                    self.by_email.insert(email_key(email), *user_id);
                    user.email = email.clone();
                }
            }
            Event::ApiKeyRegenerated {
                user_id,
                api_key_nonce,
            } => {
                if let Some(user) = self.by_id.get_mut(user_id) {
                    user.api_key_nonce = api_key_nonce.clone();
                }
            }
            Event::PasswordChanged {
                user_id,
                password_hash,
            } => {
                if let Some(user) = self.by_id.get_mut(user_id) {
                    user.password_hash = Some(password_hash.clone());
                }
            }
            Event::UserDeactivated { user_id } => {
                if let Some(user) = self.by_id.get_mut(user_id) {
                    user.is_active = false;
                    self.inactive.insert(*user_id);
                }
            }
            Event::UserReactivated { user_id } => {
                if let Some(user) = self.by_id.get_mut(user_id) {
                    user.is_active = true;
                    self.inactive.remove(user_id);
                }
            }
            Event::BotChanged { user_id, change } => {
                if let Some(user) = self.by_id.get_mut(user_id) {
                    use crate::events::BotChange;
                    if let BotChange::Owner { owner_id, .. } = change {
                        user.bot_owner_id = Some(*owner_id);
                    }
                    if let Some(config) = user.bot.as_deref_mut() {
                        match change {
                            BotChange::Owner { .. } => {}
                            BotChange::DefaultSendingStream(c) => {
                                config.default_sending_stream = *c
                            }
                            BotChange::DefaultEventsRegisterStream(c) => {
                                config.default_events_register_stream = *c
                            }
                            BotChange::DefaultAllPublicStreams(all) => {
                                config.default_all_public_streams = *all
                            }
                            BotChange::Service {
                                base_url,
                                interface,
                            } => {
                                for service in &mut config.services {
                                    service.base_url = base_url.clone();
                                    service.interface = *interface;
                                }
                            }
                        }
                    }
                }
            }
            Event::UserSettingChanged {
                user_id,
                name,
                value: crate::events::RealmValue::Text(timezone),
            } if name == "timezone" => {
                if let Some(user) = self.by_id.get_mut(user_id) {
                    user.timezone = timezone.clone();
                }
            }
            // Other settings are `user_settings`'s.
            Event::UserSettingChanged { .. } => return,
            Event::AvatarSet { user_id, image } => {
                if let Some(user) = self.by_id.get_mut(user_id) {
                    user.avatar = image.clone();
                    user.avatar_version += 1;
                }
            }
            Event::UserChanged { user_id, change } => {
                if let Some(user) = self.by_id.get_mut(user_id) {
                    match change {
                        UserChange::FullName(name) => user.full_name = name.clone(),
                        UserChange::Role(role) => user.role = *role,
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
            | Event::MessagesDeleted { .. } => return,
        }
        self.stamp.renew();
    }

    pub fn dump(&self) -> Value {
        Value::Array(
            self.by_id
                .values()
                .map(|u| {
                    let mut entry = json!({
                        "user_id": u.user_id.0,
                        "email": u.email,
                        "full_name": u.full_name,
                        "role": u.role.code(),
                        "bot_type": u.bot_type,
                        "bot_owner_id": u.bot_owner_id.map(|id| id.0),
                        "timezone": u.timezone,
                        "date_joined_ms": u.date_joined_ms,
                        "is_active": u.is_active,
                        "can_create_users": u.can_create_users,
                        "has_password": u.password_hash.is_some(),
                        "avatar_version": u.avatar_version,
                    });
                    // Only users with an uploaded avatar have the key.
                    if let Some(avatar) = &u.avatar {
                        entry["avatar"] =
                            json!({"sha256": avatar.sha256, "medium_sha256": avatar.medium_sha256});
                    }
                    // Only bots have the key, so dumps of bot-free logs keep their shape.
                    if let Some(bot) = &u.bot {
                        entry["bot"] = json!(bot);
                    }
                    entry
                })
                .collect(),
        )
    }
}

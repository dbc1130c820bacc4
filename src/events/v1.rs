//! Schema version 1 of the stored events, **frozen**: version-1 records are decoded with these
//! types and upcast (`v2::upcast`). Never change what it decodes: `schema/events-v1.md`
//! documents every variant. Types that version 2 did not change are re-exported by `v2` and
//! live here; a later incompatible change to one of them copies it into the new version first.

use crate::ids::{
    ChannelId, EmojiId, FieldId, FolderId, GroupId, InviteId, LinkifierId, MessageId, UserId,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// An organization-level role. Stored and sent as Zulip's integer (100 owner ... 600 guest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u16", into = "u16")]
pub enum Role {
    Owner,
    Administrator,
    Moderator,
    Member,
    Guest,
}

impl Role {
    pub fn code(self) -> u16 {
        match self {
            Role::Owner => 100,
            Role::Administrator => 200,
            Role::Moderator => 300,
            Role::Member => 400,
            Role::Guest => 600,
        }
    }

    pub fn from_code(code: u16) -> Option<Role> {
        Some(match code {
            100 => Role::Owner,
            200 => Role::Administrator,
            300 => Role::Moderator,
            400 => Role::Member,
            600 => Role::Guest,
            _ => return None,
        })
    }

    /// Owners and administrators.
    pub fn is_admin(self) -> bool {
        matches!(self, Role::Owner | Role::Administrator)
    }
}

impl From<Role> for u16 {
    fn from(role: Role) -> u16 {
        role.code()
    }
}

impl TryFrom<u16> for Role {
    type Error = String;
    fn try_from(code: u16) -> Result<Role, String> {
        Role::from_code(code).ok_or_else(|| format!("unknown role {code}"))
    }
}

/// A permission held by a group: a named group, or an anonymous set of users and groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupSetting {
    Group(GroupId),
    Anonymous {
        direct_members: Vec<UserId>,
        direct_subgroups: Vec<GroupId>,
    },
}

/// The built-in groups every organization has; membership follows roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SystemGroup {
    Owners,
    Administrators,
    Moderators,
    FullMembers,
    Members,
    Everyone,
    Internet,
    Nobody,
}

impl SystemGroup {
    /// Creation order in a new organization.
    pub const ALL: [SystemGroup; 8] = [
        SystemGroup::Nobody,
        SystemGroup::Owners,
        SystemGroup::Administrators,
        SystemGroup::Moderators,
        SystemGroup::FullMembers,
        SystemGroup::Members,
        SystemGroup::Everyone,
        SystemGroup::Internet,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SystemGroup::Owners => "role:owners",
            SystemGroup::Administrators => "role:administrators",
            SystemGroup::Moderators => "role:moderators",
            SystemGroup::FullMembers => "role:fullmembers",
            SystemGroup::Members => "role:members",
            SystemGroup::Everyone => "role:everyone",
            SystemGroup::Internet => "role:internet",
            SystemGroup::Nobody => "role:nobody",
        }
    }
}

/// Declares a set of named group-setting permissions with by-name access, so that API code can
/// loop over them and update one by its wire name.
macro_rules! permission_set {
    ($(#[$doc:meta])* $name:ident { $($field:ident),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        pub struct $name {
            $(pub $field: GroupSetting,)+
        }

        impl $name {
            /// The settings' API names, in documented order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($field)),+];

            pub fn get(&self, name: &str) -> Option<&GroupSetting> {
                match name {
                    $(stringify!($field) => Some(&self.$field),)+
                    _ => None,
                }
            }

            pub fn get_mut(&mut self, name: &str) -> Option<&mut GroupSetting> {
                match name {
                    $(stringify!($field) => Some(&mut self.$field),)+
                    _ => None,
                }
            }
        }
    };
}

permission_set!(
    /// The permission settings of a user group.
    GroupPermissions {
        can_add_members_group,
        can_join_group,
        can_leave_group,
        can_manage_group,
        can_mention_group,
        can_remove_members_group,
    }
);

permission_set!(
    /// The permission settings of a channel.
    ChannelPermissions {
        can_add_subscribers_group,
        can_remove_subscribers_group,
        can_administer_channel_group,
        can_delete_any_message_group,
        can_delete_own_message_group,
        can_move_messages_out_of_channel_group,
        can_move_messages_within_channel_group,
        can_send_message_group,
        can_subscribe_group,
        can_resolve_topics_group,
        can_create_topic_group,
    }
);

/// Where a channel stands on the empty topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TopicsPolicy {
    Inherit,
    AllowEmptyTopic,
    DisableEmptyTopic,
    EmptyTopicOnly,
}

impl TopicsPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            TopicsPolicy::Inherit => "inherit",
            TopicsPolicy::AllowEmptyTopic => "allow_empty_topic",
            TopicsPolicy::DisableEmptyTopic => "disable_empty_topic",
            TopicsPolicy::EmptyTopicOnly => "empty_topic_only",
        }
    }

    pub fn parse(text: &str) -> Option<TopicsPolicy> {
        Some(match text {
            "inherit" => TopicsPolicy::Inherit,
            "allow_empty_topic" => TopicsPolicy::AllowEmptyTopic,
            "disable_empty_topic" => TopicsPolicy::DisableEmptyTopic,
            "empty_topic_only" => TopicsPolicy::EmptyTopicOnly,
            _ => return None,
        })
    }
}

/// One user's new subscription, with the color chosen for them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewSubscription {
    pub user_id: UserId,
    pub color: String,
}

/// A personal setting of one subscription. Notification settings are `None` to inherit the
/// user's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SubscriptionProperty {
    Color(String),
    IsMuted(bool),
    PinToTop(bool),
    DesktopNotifications(Option<bool>),
    AudibleNotifications(Option<bool>),
    PushNotifications(Option<bool>),
    EmailNotifications(Option<bool>),
    WildcardMentionsNotify(Option<bool>),
}

/// A change to a channel's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChannelChange {
    Name(String),
    Description(String),
    Privacy {
        invite_only: bool,
        history_public_to_subscribers: bool,
        is_web_public: bool,
    },
    MessageRetentionDays(Option<i32>),
    Folder(Option<FolderId>),
    TopicsPolicy(TopicsPolicy),
    /// One of the `can_*_group` settings, by its API name.
    Permission {
        setting: String,
        value: GroupSetting,
    },
    Archived(bool),
    DefaultForNewUsers(bool),
}

/// Where a message went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Recipient {
    Channel {
        channel_id: ChannelId,
        topic: String,
    },
    /// Every participant, the sender included, ascending.
    Direct { user_ids: Vec<UserId> },
}

/// The client-side identity of a message being sent: which event queue sent it, and the id the
/// client gave it locally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderQueue {
    pub queue_id: String,
    pub local_id: String,
}

/// The value of an organization setting (`RealmSettingChanged`); which form a setting takes
/// is fixed by its entry in `projections::realm::SETTINGS`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RealmValue {
    Bool(bool),
    Int(i64),
    /// "unlimited" for the time limits.
    Null,
    Text(String),
    Group(GroupSetting),
}

/// What an invitation grants the account created through it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvitationSpec {
    pub invite_as: Role,
    pub stream_ids: Vec<ChannelId>,
    pub group_ids: Vec<GroupId>,
    pub include_realm_default_subscriptions: bool,
    /// Email invitations: tell the inviter when the account is created.
    pub notify_referrer_on_join: bool,
    /// `None`: the organization's default welcome; `Some("")`: no custom welcome.
    pub welcome_message_custom_text: Option<String>,
    /// Milliseconds since the epoch; `None` never expires.
    pub expires_at_ms: Option<i64>,
}

/// A linkifier's definition, whole (creation and every change carry all of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkifierSpec {
    /// A regular expression (RE2 syntax) with named groups.
    pub pattern: String,
    /// An RFC 6570 template whose variables are the pattern's groups.
    pub url_template: String,
    pub example_input: Option<String>,
    pub reverse_template: Option<String>,
    pub alternative_url_templates: Vec<String>,
}

/// One choice of a dropdown profile field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileChoice {
    pub text: String,
    pub order: String,
}

/// The `field_data` of a custom profile field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProfileFieldData {
    /// Types without data.
    None,
    /// Dropdown (type 3): choice key → choice.
    Choices(std::collections::BTreeMap<String, ProfileChoice>),
    /// External account (type 7): `twitter`, `github` or `custom` (with a URL pattern).
    ExternalAccount {
        subtype: String,
        url_pattern: Option<String>,
    },
}

/// A custom profile field's definition, whole (creation and every change carry all of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileFieldSpec {
    pub name: String,
    pub hint: String,
    /// 1 short text, 2 long text, 3 dropdown, 4 date, 5 link, 6 users, 7 external account,
    /// 8 pronouns.
    pub field_type: u8,
    pub field_data: ProfileFieldData,
    pub display_in_profile_summary: bool,
    pub required: bool,
    pub editable_by_user: bool,
    pub use_for_user_matching: bool,
}

/// What a bot account has beyond a user's: the channels it defaults to and, for outgoing
/// webhook bots, the service it calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotConfig {
    pub default_sending_stream: Option<ChannelId>,
    pub default_events_register_stream: Option<ChannelId>,
    pub default_all_public_streams: bool,
    /// Outgoing webhook bots have one service; other bots none.
    pub services: Vec<BotService>,
    /// The server's own bots (the notification bot): no owner, no API access, shown to
    /// clients as `cross_realm_bots`.
    #[serde(default)]
    pub system: bool,
}

/// The endpoint an outgoing webhook bot is reached at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotService {
    /// Zulip's service name (the bot's short name unless given).
    pub name: String,
    pub base_url: String,
    /// 1 Zulip's own format, 2 Slack-compatible.
    pub interface: u8,
}

/// Where someone is typing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TypingTarget {
    /// Every participant, the typist included, ascending.
    Direct { user_ids: Vec<UserId> },
    Channel {
        channel_id: ChannelId,
        topic: String,
    },
}

/// The per-user message flags a user may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MessageFlag {
    Read,
    Starred,
    Collapsed,
}

impl MessageFlag {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageFlag::Read => "read",
            MessageFlag::Starred => "starred",
            MessageFlag::Collapsed => "collapsed",
        }
    }
}

/// The kinds of emoji a reaction can use, as Zulip names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReactionType {
    /// A Unicode emoji; the code is its code point(s) in lowercase hex.
    UnicodeEmoji,
    /// An organization's custom emoji; the code is its id.
    RealmEmoji,
    /// The server's own extra emoji (`zulip`).
    ZulipExtraEmoji,
}

impl ReactionType {
    pub fn as_str(self) -> &'static str {
        match self {
            ReactionType::UnicodeEmoji => "unicode_emoji",
            ReactionType::RealmEmoji => "realm_emoji",
            ReactionType::ZulipExtraEmoji => "zulip_extra_emoji",
        }
    }
}

/// A message's new content after an edit, rendered when edited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditedContent {
    pub content: Arc<str>,
    pub rendered_content: Arc<str>,
    pub is_me_message: bool,
    /// Users mentioned by name in the new content.
    pub mentioned: Vec<UserId>,
    pub stream_wildcard: bool,
    pub topic_wildcard: bool,
}

/// Which messages an edit of a message's topic or channel moves (Zulip's `propagate_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PropagateMode {
    ChangeOne,
    ChangeLater,
    ChangeAll,
}

impl PropagateMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PropagateMode::ChangeOne => "change_one",
            PropagateMode::ChangeLater => "change_later",
            PropagateMode::ChangeAll => "change_all",
        }
    }
}

/// Channel messages moved to another topic and/or channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageMove {
    /// Every moved message, ascending (the edited one included).
    pub message_ids: Vec<MessageId>,
    pub propagate_mode: PropagateMode,
    /// The new topic, when the topic changed.
    pub new_topic: Option<String>,
    /// The new channel, when the channel changed.
    pub new_channel_id: Option<ChannelId>,
}

/// A change to an account's profile or role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum UserChange {
    FullName(String),
    Role(Role),
}

/// A change to a user group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupChange {
    Name(String),
    Description(String),
    /// One of the `can_*_group` settings, by its API name.
    Permission {
        setting: String,
        value: GroupSetting,
    },
    Deactivated(bool),
}

/// Everything that ever happened, in past tense. Each variant carries every non-deterministic
/// input (ids, generated nonces, password hashes); the envelope carries time and actor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// The organization came into being (always the first event of a log).
    RealmCreated { name: String, description: String },
    /// An organization setting changed (`PATCH /realm`); `name` is Zulip's setting name.
    RealmSettingChanged { name: String, value: RealmValue },
    /// An administrator created a custom profile field (`order` = id).
    CustomProfileFieldCreated {
        field_id: FieldId,
        spec: ProfileFieldSpec,
    },
    /// A custom profile field's definition was replaced (its type never changes). Values of
    /// dropdown choices that no longer exist are cleared by `ProfileDataSet` events beside it.
    CustomProfileFieldChanged {
        field_id: FieldId,
        spec: ProfileFieldSpec,
    },
    /// A custom profile field was deleted, with every user's value for it.
    CustomProfileFieldDeleted { field_id: FieldId },
    /// The fields' order was set (every field id, in order).
    CustomProfileFieldsReordered { order: Vec<FieldId> },
    /// A user's value for a field was set (`None` removes it). The users type stores its ids
    /// as JSON text (`"[11]"`), as Zulip does; `rendered_value` is the Markdown rendering for
    /// the text types, made when the value was set.
    ProfileDataSet {
        user_id: UserId,
        field_id: FieldId,
        value: Option<String>,
        rendered_value: Option<String>,
    },
    /// An invitation was made: by email (`email`) or a reusable link (`email` absent). The key
    /// in its link is derived from `link_nonce` with the server secret (never stored); the
    /// nonce is redacted from every dump and listing.
    InvitationCreated {
        invite_id: InviteId,
        email: Option<String>,
        spec: Box<InvitationSpec>,
        link_nonce: String,
    },
    /// An email invitation was sent again (same link, same expiry: kept for the audit log).
    InvitationResent { invite_id: InviteId },
    /// An invitation was revoked: its link no longer works.
    InvitationRevoked { invite_id: InviteId },
    /// Someone created their account through an invitation (the `UserCreated` is beside it).
    InvitationAccepted {
        invite_id: InviteId,
        user_id: UserId,
    },
    /// An administrator added a linkifier (`order` after the others).
    LinkifierAdded {
        linkifier_id: LinkifierId,
        spec: LinkifierSpec,
    },
    /// A linkifier's definition was replaced.
    LinkifierChanged {
        linkifier_id: LinkifierId,
        spec: LinkifierSpec,
    },
    /// A linkifier was removed.
    LinkifierRemoved { linkifier_id: LinkifierId },
    /// The linkifiers' order was set (every id, in order).
    LinkifiersReordered { order: Vec<LinkifierId> },
    /// A human account or a bot was created.
    UserCreated {
        user_id: UserId,
        email: String,
        full_name: String,
        role: Role,
        /// `None` for humans; Zulip's bot type (1 generic, 2 incoming webhook, ...) for bots.
        bot_type: Option<u8>,
        bot_owner_id: Option<UserId>,
        timezone: String,
        /// Zulip's server-granted `can_create_users` permission (the first owner has it).
        can_create_users: bool,
        /// argon2id PHC string; `None` when the account cannot log in with a password.
        /// Redacted from every dump and listing.
        password_hash: Option<String>,
        /// Random nonce from which the API key is derived with the server secret
        /// (the key itself is never stored). Redacted from every dump and listing.
        api_key_nonce: String,
        /// For bots: their default channels and services (absent for humans, and in records
        /// written before bots could be created).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bot: Option<Box<BotConfig>>,
    },
    /// A user changed their password (`PATCH /settings`); the argon2id hash is redacted from
    /// every dump and listing.
    PasswordChanged {
        user_id: UserId,
        password_hash: String,
    },
    /// The user's API key was replaced; the old one stops working at once.
    ApiKeyRegenerated {
        user_id: UserId,
        api_key_nonce: String,
    },
    /// An account was deactivated (it can no longer authenticate).
    UserDeactivated { user_id: UserId },
    /// A deactivated account was reactivated.
    UserReactivated { user_id: UserId },
    /// An account's name or role changed.
    UserChanged { user_id: UserId, change: UserChange },
    /// A user group came into being. System groups (`system` set) take their members from
    /// roles; `members` and `subgroups` are their direct members and subgroups otherwise.
    UserGroupCreated {
        group_id: GroupId,
        name: String,
        description: String,
        system: Option<SystemGroup>,
        members: Vec<UserId>,
        subgroups: Vec<GroupId>,
        permissions: Box<GroupPermissions>,
    },
    /// Direct members of a user-defined group changed.
    UserGroupMembersChanged {
        group_id: GroupId,
        added: Vec<UserId>,
        removed: Vec<UserId>,
    },
    /// Direct subgroups of a user-defined group changed.
    UserGroupSubgroupsChanged {
        group_id: GroupId,
        added: Vec<GroupId>,
        removed: Vec<GroupId>,
    },
    /// A user group's name, description, permission or activity changed.
    UserGroupChanged {
        group_id: GroupId,
        change: GroupChange,
    },
    /// A channel was created (its creator is the envelope's actor).
    ChannelCreated {
        channel_id: ChannelId,
        name: String,
        description: String,
        invite_only: bool,
        is_web_public: bool,
        history_public_to_subscribers: bool,
        /// `None` inherits the organization's setting; `Some(-1)` keeps messages forever.
        message_retention_days: Option<i32>,
        folder_id: Option<FolderId>,
        topics_policy: TopicsPolicy,
        is_default: bool,
        permissions: Box<ChannelPermissions>,
    },
    /// A channel setting changed.
    ChannelChanged {
        channel_id: ChannelId,
        change: ChannelChange,
    },
    /// Users were subscribed to a channel.
    Subscribed {
        channel_id: ChannelId,
        subscriptions: Vec<NewSubscription>,
    },
    /// Users were unsubscribed from a channel.
    Unsubscribed {
        channel_id: ChannelId,
        user_ids: Vec<UserId>,
    },
    /// A user changed a personal setting of one subscription.
    SubscriptionPropertyChanged {
        user_id: UserId,
        channel_id: ChannelId,
        property: SubscriptionProperty,
    },
    /// A channel folder was created.
    ChannelFolderCreated {
        folder_id: FolderId,
        name: String,
        description: String,
    },
    /// A channel folder was renamed, described, archived or unarchived.
    ChannelFolderChanged {
        folder_id: FolderId,
        name: Option<String>,
        description: Option<String>,
        is_archived: Option<bool>,
    },
    /// The order of all channel folders was set.
    ChannelFoldersReordered { order: Vec<FolderId> },
    /// A message was sent. Who receives a copy follows from the state at this point of the log
    /// (the channel's subscribers, or the direct message's participants). The rendering is part
    /// of the event, so a later change of the Markdown rules never changes old messages.
    MessageSent {
        message_id: MessageId,
        sender_id: UserId,
        recipient: Recipient,
        /// Shared (`Arc`) in memory so that the engine's two copies of the state hold one body;
        /// stored as a plain string.
        content: Arc<str>,
        rendered_content: Arc<str>,
        client: Arc<str>,
        is_me_message: bool,
        /// Users mentioned by name (not silently).
        mentioned: Vec<UserId>,
        stream_wildcard: bool,
        topic_wildcard: bool,
        /// The sending client's event queue and its `local_id` for the message, echoed to that
        /// queue as `local_message_id` (absent in records written before it existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sender_queue: Option<Box<SenderQueue>>,
    },
    /// A user added or removed a flag on some of their messages.
    MessageFlagsChanged {
        user_id: UserId,
        flag: MessageFlag,
        add: bool,
        message_ids: Vec<MessageId>,
    },
    /// A user started composing (kept in the audit log by the product owner's wish; the typing
    /// projection forgets it after the start-expiry period).
    TypingStarted {
        user_id: UserId,
        target: TypingTarget,
    },
    /// A user stopped composing.
    TypingStopped {
        user_id: UserId,
        target: TypingTarget,
    },
    /// A user reacted to a message with an emoji.
    ReactionAdded {
        message_id: MessageId,
        user_id: UserId,
        emoji_name: String,
        emoji_code: String,
        reaction_type: ReactionType,
    },
    /// A user took back a reaction (identified by code and type, as in Zulip; the name is the
    /// one the reaction had).
    ReactionRemoved {
        message_id: MessageId,
        user_id: UserId,
        emoji_name: String,
        emoji_code: String,
        reaction_type: ReactionType,
    },
    /// A message's content was edited, and/or messages were moved to another topic or channel.
    /// `message_id` is the message the request named; the editor is `user_id`. Moving to another
    /// channel removes the copies of users who cannot read the new channel and gives its
    /// subscribers read copies, both decided by the state at this point of the log.
    MessageEdited {
        message_id: MessageId,
        user_id: UserId,
        content: Option<Box<EditedContent>>,
        moved: Option<Box<MessageMove>>,
    },
    /// Messages of one conversation (a channel topic, or a direct conversation) were deleted.
    /// `holders` are the users who had a copy (they are told); the fold removes the messages,
    /// their copies and their indexes.
    MessagesDeleted {
        message_ids: Vec<MessageId>,
        recipient: Recipient,
        holders: Vec<UserId>,
    },
    /// A user set their visibility policy for a topic (0 none, 1 muted, 2 unmuted, 3 followed).
    TopicVisibilitySet {
        user_id: UserId,
        channel_id: ChannelId,
        topic: String,
        policy: u8,
    },
    /// Someone uploaded a custom emoji. The image travels in the event, so the log alone
    /// restores it (and an export carries it); listings show its size and digest instead.
    CustomEmojiAdded {
        emoji_id: EmojiId,
        name: String,
        /// `image/png`, `image/gif`, `image/jpeg` or `image/webp`, from the file's magic bytes.
        content_type: String,
        image: ImageBytes,
    },
    /// A custom emoji was deactivated: it stays in old messages and reactions, and its name
    /// may be taken again.
    CustomEmojiDeactivated { emoji_id: EmojiId },
    /// A client reported a user's presence (`active`, or only connected). Pings that change
    /// nothing a client could see are not logged (see `commands::presence`); the time is the
    /// envelope's.
    PresenceUpdated { user_id: UserId, active: bool },
    /// A user attached a submessage (widget data: a vote, a to-do item) to a message.
    SubmessageAdded {
        submessage_id: u64,
        message_id: MessageId,
        sender_id: UserId,
        msg_type: String,
        /// JSON text, checked to parse when added.
        content: String,
    },
    /// A user changed one of their own settings (`PATCH /settings`); `name` is Zulip's name,
    /// one of `projections::user_settings::SETTINGS`.
    UserSettingChanged {
        user_id: UserId,
        name: String,
        value: RealmValue,
    },
}

/// An uploaded image: msgpack `bin` in the log, shared (`Arc`) between the engine's two states,
/// and a short description (size and SHA-256) wherever events are shown as JSON.
#[derive(Clone, PartialEq, Eq)]
pub struct ImageBytes(pub Arc<[u8]>);

impl ImageBytes {
    /// Lowercase hex SHA-256 of the bytes.
    pub fn sha256(&self) -> String {
        use sha2::{Digest, Sha256};
        Sha256::digest(&self.0)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn summary(&self) -> String {
        format!("<{} bytes, sha256 {}>", self.0.len(), self.sha256())
    }
}

impl std::fmt::Debug for ImageBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())
    }
}

impl Serialize for ImageBytes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&self.summary())
        } else {
            serializer.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for ImageBytes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ImageBytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("image bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<ImageBytes, E> {
                Ok(ImageBytes(Arc::from(v)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ImageBytes, A::Error> {
                let mut bytes = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    bytes.push(b);
                }
                Ok(ImageBytes(Arc::from(bytes)))
            }
        }
        deserializer.deserialize_bytes(Visitor)
    }
}

impl Event {
    /// The variant name, as in `schema/events-v1.md`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::RealmCreated { .. } => "RealmCreated",
            Event::RealmSettingChanged { .. } => "RealmSettingChanged",
            Event::CustomProfileFieldCreated { .. } => "CustomProfileFieldCreated",
            Event::CustomProfileFieldChanged { .. } => "CustomProfileFieldChanged",
            Event::CustomProfileFieldDeleted { .. } => "CustomProfileFieldDeleted",
            Event::CustomProfileFieldsReordered { .. } => "CustomProfileFieldsReordered",
            Event::ProfileDataSet { .. } => "ProfileDataSet",
            Event::InvitationCreated { .. } => "InvitationCreated",
            Event::InvitationResent { .. } => "InvitationResent",
            Event::InvitationRevoked { .. } => "InvitationRevoked",
            Event::InvitationAccepted { .. } => "InvitationAccepted",
            Event::LinkifierAdded { .. } => "LinkifierAdded",
            Event::LinkifierChanged { .. } => "LinkifierChanged",
            Event::LinkifierRemoved { .. } => "LinkifierRemoved",
            Event::LinkifiersReordered { .. } => "LinkifiersReordered",
            Event::UserCreated { .. } => "UserCreated",
            Event::ApiKeyRegenerated { .. } => "ApiKeyRegenerated",
            Event::PasswordChanged { .. } => "PasswordChanged",
            Event::UserDeactivated { .. } => "UserDeactivated",
            Event::UserReactivated { .. } => "UserReactivated",
            Event::UserChanged { .. } => "UserChanged",
            Event::UserGroupCreated { .. } => "UserGroupCreated",
            Event::UserGroupMembersChanged { .. } => "UserGroupMembersChanged",
            Event::UserGroupSubgroupsChanged { .. } => "UserGroupSubgroupsChanged",
            Event::UserGroupChanged { .. } => "UserGroupChanged",
            Event::ChannelCreated { .. } => "ChannelCreated",
            Event::ChannelChanged { .. } => "ChannelChanged",
            Event::Subscribed { .. } => "Subscribed",
            Event::Unsubscribed { .. } => "Unsubscribed",
            Event::SubscriptionPropertyChanged { .. } => "SubscriptionPropertyChanged",
            Event::ChannelFolderCreated { .. } => "ChannelFolderCreated",
            Event::ChannelFolderChanged { .. } => "ChannelFolderChanged",
            Event::ChannelFoldersReordered { .. } => "ChannelFoldersReordered",
            Event::TopicVisibilitySet { .. } => "TopicVisibilitySet",
            Event::MessageSent { .. } => "MessageSent",
            Event::TypingStarted { .. } => "TypingStarted",
            Event::TypingStopped { .. } => "TypingStopped",
            Event::MessageFlagsChanged { .. } => "MessageFlagsChanged",
            Event::ReactionAdded { .. } => "ReactionAdded",
            Event::ReactionRemoved { .. } => "ReactionRemoved",
            Event::MessageEdited { .. } => "MessageEdited",
            Event::MessagesDeleted { .. } => "MessagesDeleted",
            Event::CustomEmojiAdded { .. } => "CustomEmojiAdded",
            Event::CustomEmojiDeactivated { .. } => "CustomEmojiDeactivated",
            Event::PresenceUpdated { .. } => "PresenceUpdated",
            Event::UserSettingChanged { .. } => "UserSettingChanged",
            Event::SubmessageAdded { .. } => "SubmessageAdded",
        }
    }
}

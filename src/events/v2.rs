//! Schema version 2 of the stored events: what Chronicle writes now. `schema/events-v2.md`
//! documents the change; `schema/events-v1.md` every variant.
//!
//! Version 2 changed one event: `TopicVisibilitySet.policy` is a named `TopicPolicy` instead of
//! Zulip's number. Every other stored type is version 1's, unchanged (re-exported below).
//! Records of version 1 decode with the frozen types of `v1` and are upcast here, one step, by
//! `upcast`; `replay-fixtures/v1-*` hold version-1 logs that must keep replaying to their dumps.

use super::v1;
use crate::ids::{
    AttachmentId, ChannelId, EmojiId, FieldId, FolderId, GroupId, InviteId, LinkifierId, MessageId,
    ScheduledMessageId, UserId,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub use super::v1::{
    BotConfig, BotService, ChannelChange, ChannelPermissions, EditedContent, GroupChange,
    GroupPermissions, GroupSetting, ImageBytes, InvitationSpec, LinkifierSpec, MessageFlag,
    MessageMove, NewSubscription, ProfileChoice, ProfileFieldData, ProfileFieldSpec, PropagateMode,
    ReactionType, RealmValue, Recipient, Role, SenderQueue, SubscriptionProperty, SystemGroup,
    TopicsPolicy, TypingTarget, UserChange,
};

/// A stored string decoded as an `Arc<str>` in one allocation, from the record's bytes (serde's
/// own `Arc<str>` decodes a `Box<str>` first and copies it). The stored form is unchanged.
fn shared_str<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Arc<str>, D::Error> {
    struct Text;
    impl serde::de::Visitor<'_> for Text {
        type Value = Arc<str>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Arc<str>, E> {
            Ok(Arc::from(text))
        }
    }
    deserializer.deserialize_str(Text)
}

/// A user's visibility policy for a topic. Zulip's API numbers them (`visibility_policy`);
/// the log names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TopicPolicy {
    /// No policy: the topic follows its channel.
    None,
    Muted,
    Unmuted,
    Followed,
}

impl TopicPolicy {
    /// Zulip's number for the policy.
    pub fn code(self) -> u8 {
        match self {
            TopicPolicy::None => 0,
            TopicPolicy::Muted => 1,
            TopicPolicy::Unmuted => 2,
            TopicPolicy::Followed => 3,
        }
    }

    pub fn from_code(code: u8) -> Option<TopicPolicy> {
        Some(match code {
            0 => TopicPolicy::None,
            1 => TopicPolicy::Muted,
            2 => TopicPolicy::Unmuted,
            3 => TopicPolicy::Followed,
            _ => return None,
        })
    }
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
    /// An owner allowed an email domain (trimmed, lowercased; `/realm/domains`), with or without
    /// its subdomains. It restricts who may join only while `emails_restricted_to_domains`.
    RealmDomainAdded {
        domain: String,
        allow_subdomains: bool,
    },
    /// An allowed domain now allows its subdomains, or no longer does.
    RealmDomainChanged {
        domain: String,
        allow_subdomains: bool,
    },
    /// An allowed domain was removed.
    RealmDomainRemoved { domain: String },
    /// An administrator added a code playground (Zulip's `RealmPlayground`): code blocks in
    /// `pygments_language` get a link to `url_template` with the code as `{code}`.
    PlaygroundAdded {
        playground_id: u64,
        name: String,
        pygments_language: String,
        url_template: String,
    },
    /// An administrator removed a code playground.
    PlaygroundRemoved { playground_id: u64 },
    /// An administrator changed the organization's default of a personal setting for the
    /// people who join later (`PATCH /realm/user_settings_defaults`); nobody's own settings
    /// change.
    RealmUserDefaultChanged { name: String, value: RealmValue },
    /// An administrator made or changed a default channel group: the group as it now is (its
    /// channels in the order they were added). Ids are never reused.
    DefaultChannelGroupSaved {
        group_id: u64,
        name: String,
        description: String,
        channel_ids: Vec<ChannelId>,
    },
    /// An administrator removed a default channel group.
    DefaultChannelGroupRemoved { group_id: u64 },
    /// An administrator uploaded one of the organization's pictures (its stored PNG's SHA-256,
    /// already among the uploads) or went back to the default (`None`).
    RealmImageSet {
        image: RealmImage,
        sha256: Option<String>,
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
        #[serde(deserialize_with = "shared_str")]
        content: Arc<str>,
        #[serde(deserialize_with = "shared_str")]
        rendered_content: Arc<str>,
        #[serde(deserialize_with = "shared_str")]
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
        /// Recipients one of whose alert words the content contains (absent before alert words
        /// existed, and when nobody's matched).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        alerted: Vec<UserId>,
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
    /// A user started (`start`) or stopped editing a message's content (Zulip's
    /// `typing_edit_message`; kept like the other typing events, and no state follows from it).
    EditTyping {
        user_id: UserId,
        message_id: MessageId,
        start: bool,
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
        /// With new content: the recipients whose alert words it contains (absent in records
        /// written before alert words existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        alerted: Option<Vec<UserId>>,
    },
    /// Messages of one conversation (a channel topic, or a direct conversation) were deleted.
    /// `holders` are the users who had a copy (they are told); the fold removes the messages,
    /// their copies and their indexes.
    MessagesDeleted {
        message_ids: Vec<MessageId>,
        recipient: Recipient,
        holders: Vec<UserId>,
    },
    /// A user set their visibility policy for a topic. Changed in schema version 2: the policy
    /// is named (`"Muted"`), not Zulip's number (`1`).
    TopicVisibilitySet {
        user_id: UserId,
        channel_id: ChannelId,
        topic: String,
        policy: TopicPolicy,
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
    /// `chronicle erase` rewrote the log so that the content of deleted messages is gone from
    /// it (written at the end of the rewritten log, for the audit trail). `records` are the seqs
    /// whose bodies were rewritten; every record after the first of them was relinked, so
    /// `previous_head` (the hash of the last record before the erasure) is what an earlier
    /// `verify` printed.
    LogErased {
        message_ids: Vec<MessageId>,
        records: Vec<u64>,
        previous_head: String,
    },
    /// `chronicle import-from` began writing an organization from another server's export
    /// into this (new) log. Every event up to `ImportFinished` is the import.
    ImportStarted {
        /// `zulip`, `slack` or `mattermost`.
        source: String,
        /// Hex SHA-256 of the archive (of the export file, or of a directory's files in name
        /// order), so the import can be traced to the bytes it came from.
        archive_sha256: String,
        /// The Chronicle version that imported it.
        chronicle_version: String,
    },
    /// The import ended; what it brought in, by kind of object (`users`, `channels`,
    /// `messages`, ...), and how many objects it skipped (listed in `import-report.json`).
    ImportFinished {
        counts: std::collections::BTreeMap<String, u64>,
        skipped: u64,
    },
    /// An event of the imported history, as it happened at `at` (milliseconds since the
    /// UNIX epoch: the original time of a message, of a channel's or an account's creation, of
    /// a reaction). The envelope's own time is when it was imported. The state folds `event`
    /// as if it had been written at `at`; `last_edit_at` is the time of the last edit of an
    /// imported message whose earlier texts the source did not keep (Slack's `edited`).
    Imported {
        at: i64,
        event: Box<Event>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_edit_at: Option<i64>,
    },
    /// An administrator exported the organization in Zulip's format (`POST /export/realm`);
    /// the tarball is among the uploads, named by its SHA-256 (`export_type`: Zulip's, 1 public
    /// data, 2 with members' consent).
    RealmExported {
        export_id: u64,
        export_type: u8,
        path_id: String,
        size: u64,
        sha256: String,
    },
    /// An administrator deleted a data export (`DELETE /export/realm/{id}`).
    RealmExportDeleted { export_id: u64 },
    /// A user has read every message they hold in one channel or direct conversation up to
    /// `message_id` (written by imports, which carry read state this way instead of listing
    /// every message of every person).
    MessagesReadThrough {
        user_id: UserId,
        place: ReadPlace,
        message_id: MessageId,
    },
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
    /// A user changed their status (`POST /users/me/status`): each part present replaces the
    /// old one; an empty text or an empty emoji name clears that part.
    UserStatusSet {
        user_id: UserId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        away: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status_text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        emoji: Option<StatusEmoji>,
    },
    /// A user (a bot, in practice) stored text values under keys (`PUT /bot_storage`).
    BotStorageSet {
        user_id: UserId,
        entries: std::collections::BTreeMap<String, String>,
    },
    /// A user removed keys from their storage (`DELETE /bot_storage`).
    BotStorageRemoved { user_id: UserId, keys: Vec<String> },
    /// A user uploaded a file (`POST /user_uploads`). The bytes are not in the log: they are in
    /// the data directory's `uploads/`, named by their SHA-256, written and synced before this
    /// event was appended. Messages that link `path_id` are the attachment's messages.
    AttachmentUploaded {
        attachment_id: AttachmentId,
        owner_id: UserId,
        /// `{realm_id}/{random}/{file name}`: the path under `/user_uploads/`.
        path_id: String,
        /// The file name as uploaded (sanitized).
        name: String,
        size: u64,
        /// Hex SHA-256 of the bytes.
        sha256: String,
        content_type: String,
        /// What a message's preview of the image needs, read from the bytes within the
        /// thumbnail bounds when it was uploaded; absent for anything else (and in older
        /// records).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<UploadedImage>,
    },
    /// A user uploaded an avatar (`POST /users/me/avatar`) or went back to the generated one
    /// (`DELETE`, `image: None`). The PNGs are in the data directory's `uploads/`, named by
    /// their SHA-256, written and synced before this event.
    AvatarSet {
        user_id: UserId,
        image: Option<AvatarImage>,
    },
    /// A user added alert words (`POST /users/me/alert_words`), as typed, none already theirs
    /// in any case.
    AlertWordsAdded { user_id: UserId, words: Vec<String> },
    /// A user removed alert words (compared without case).
    AlertWordsRemoved { user_id: UserId, words: Vec<String> },
    /// A user muted another (`POST /users/me/muted_users/{id}`): the other's messages reach them
    /// read (the same batch marks the unread ones they hold as read).
    UserMuted {
        user_id: UserId,
        muted_user_id: UserId,
    },
    /// A user unmuted another.
    UserUnmuted {
        user_id: UserId,
        muted_user_id: UserId,
    },
    /// The owner deleted an uploaded file (`DELETE /attachments/{id}`); its links stop working.
    AttachmentDeleted {
        attachment_id: AttachmentId,
        owner_id: UserId,
    },
    /// A user scheduled a message (`POST /scheduled_messages`) or a reminder (`POST
    /// /reminders`), or replaced one of theirs (`PATCH`): the whole message as it will be sent,
    /// rendered when saved. Saving clears a failed delivery.
    ScheduledMessageSaved {
        scheduled_message_id: ScheduledMessageId,
        sender_id: UserId,
        /// A reminder is a direct message to the sender from the notification bot.
        recipient: Recipient,
        content: String,
        rendered_content: String,
        /// Seconds since the epoch.
        deliver_at: i64,
        /// Whether the sent message starts read for its sender; `None`: Zulip's default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        read_by_sender: Option<bool>,
        /// For a reminder, the message it is about.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reminder_for: Option<MessageId>,
        /// Whether it replaces an existing one (`PATCH`) rather than adds one.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        edit: bool,
        /// The client that scheduled it, which it is sent with (as Zulip's sending client).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        client: String,
    },
    /// A scheduled message could not be sent at its time (`reason` is the error a send would
    /// have answered); it stays, marked failed, until its sender edits or deletes it.
    ScheduledMessageFailed {
        scheduled_message_id: ScheduledMessageId,
        sender_id: UserId,
        reason: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        reminder: bool,
    },
    /// A scheduled message was deleted by its sender (`sent_as: None`) or sent: the
    /// `MessageSent` of `sent_as` is in the same batch.
    ScheduledMessageRemoved {
        scheduled_message_id: ScheduledMessageId,
        sender_id: UserId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sent_as: Option<MessageId>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        reminder: bool,
    },
    /// A user added a navigation view (`POST /navigation_views`): a view of the web app's left
    /// sidebar named by `fragment`. Built-in views have no name.
    NavigationViewAdded {
        user_id: UserId,
        fragment: String,
        is_pinned: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A user changed one of their navigation views (`PATCH`): each part present replaces the
    /// old one.
    NavigationViewChanged {
        user_id: UserId,
        fragment: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_pinned: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A user removed one of their navigation views.
    NavigationViewRemoved { user_id: UserId, fragment: String },
    /// A bot's owner or an administrator changed a bot's configuration (`PATCH /bots/{id}`).
    BotChanged { user_id: UserId, change: BotChange },
    /// A client registered a device (`POST /register_client_device`), which push
    /// notifications will later be tied to.
    ClientDeviceRegistered { user_id: UserId, device_id: u64 },
    /// A client removed its device (`POST /remove_client_device`).
    ClientDeviceRemoved { user_id: UserId, device_id: u64 },
    /// A person signed in to the web client (`POST /login/`). The browser's cookie is this id
    /// with a MAC under the server secret, which the log never holds; `client` is the browser's
    /// own description of itself, for the settings' session list.
    SessionStarted {
        user_id: UserId,
        session_id: String,
        /// Milliseconds since the epoch, decided by the command.
        expires_at: i64,
        client: String,
    },
    /// A web session ended: its person logged out or ended it from the settings.
    SessionEnded { user_id: UserId, session_id: String },
    /// A person's email address changed (by the organization's identity provider, through
    /// SCIM).
    UserEmailChanged { user_id: UserId, email: String },
    /// A person's two-factor authentication changed: enrolled, a code or backup code used,
    /// backup codes issued again, or switched off. The log holds nonces, never a key or a code
    /// (`identity::two_factor`).
    TwoFactorChanged {
        user_id: UserId,
        change: TwoFactorChange,
    },
    /// A single-use proof of identity was used to sign in (a SAML assertion, the desktop
    /// app's login token): any later use is refused until `expires_at` (ms), when it would be
    /// refused anyway. `digest` is the SHA-256 of what names it, in hex; never the proof itself.
    SignInTokenSpent { digest: String, expires_at: i64 },
    /// A user saved drafts (`POST /drafts`, by id) or replaced one (`PATCH /drafts/{id}`), as
    /// the drafts their clients keep in step.
    DraftsSaved {
        user_id: UserId,
        drafts: Vec<(u64, Draft)>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        edit: bool,
    },
    /// A user deleted a draft.
    DraftRemoved { user_id: UserId, draft_id: u64 },
    /// A user saved a snippet (`POST /saved_snippets`) or changed one (`PATCH`).
    SavedSnippetSaved {
        user_id: UserId,
        snippet_id: u64,
        title: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        edit: bool,
    },
    /// A user deleted a saved snippet.
    SavedSnippetRemoved { user_id: UserId, snippet_id: u64 },
    /// The notifier found people away from every client who are to be told about these
    /// messages by email when each notice falls due, if still unread then (Zulip's missed-message
    /// emails). `through` is the newest message it has considered: after a restart, or in a
    /// new lease holder, it goes on from the next one.
    NoticesRecorded {
        notices: Vec<Notice>,
        through: MessageId,
    },
    /// A person's notices about these messages were dealt with: mailed, or dropped because the
    /// messages were read, deleted or are out of their reach by then.
    NoticesSettled {
        user_id: UserId,
        message_ids: Vec<MessageId>,
    },
    /// An email to a person is to be sent. It holds what it is about, never its text: the text
    /// is written from the state when it goes out, so an erased or deleted message is never
    /// mailed.
    EmailQueued {
        mail_id: u64,
        user_id: UserId,
        mail: QueuedMail,
    },
    /// The mail relay took a queued email (or, with none configured, it was written to the
    /// outbox directory).
    EmailSent { mail_id: u64 },
    /// A queued email was given up on: the relay refused it for good, or nothing was left to
    /// say (every message in it deleted meanwhile).
    EmailFailed { mail_id: u64, reason: String },
    /// A client device's push registration changed: by the app (`POST /mobile_push/register`)
    /// or by what the push notification service answered.
    PushDeviceChanged {
        user_id: UserId,
        device_id: u64,
        change: PushChange,
    },
    /// A push notification to a person's devices is to be sent (ids only: the content is
    /// written, and encrypted for each device, when it goes out).
    PushQueued {
        push_id: u64,
        user_id: UserId,
        push: QueuedPush,
    },
    /// The push notification service took a queued push for this many devices.
    PushSent { push_id: u64, devices: u32 },
    /// A queued push was given up on (refused by the service, or no device left).
    PushFailed { push_id: u64, reason: String },
    /// A test notification went to these devices of a person (`/mobile_push/test_notification`).
    PushTestSent {
        user_id: UserId,
        device_ids: Vec<u64>,
    },
    /// The writer found the wall clock behind the log's last time (`wall_ms` < `log_ms`): the
    /// clock stepped back (or the server restarted on a clock behind the log). Events keep the
    /// log's time, which never goes backwards, until the wall clock passes it again; this
    /// records the wall time the writer read, for the audit.
    ClockWentBack { wall_ms: i64, log_ms: i64 },
}

/// A change to a device's push registration (`Event::PushDeviceChanged`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PushChange {
    /// The app's key for this device: its id, and the key sealed under the server's secret
    /// (AES-256-GCM), so the log never holds it in the clear.
    KeySet {
        push_key_id: u32,
        sealed_push_key: String,
    },
    /// The app asked to register a token with the push notification service: its kind
    /// (`fcm`, `apns`), its id (the first 8 bytes of its SHA-256, as a signed integer) and the
    /// registration sealed for the service, passed on as received.
    TokenRequested {
        token_kind: String,
        token_id: i64,
        encrypted_push_registration: String,
        bouncer_public_key: String,
    },
    /// The service registered the token.
    TokenAccepted { token_id: i64 },
    /// The service refused the registration (Zulip's error code).
    TokenRefused { error_code: String },
    /// The service no longer knows the token (its `delete_token_ids`).
    TokenDropped { token_id: i64 },
}

/// What a queued push is (`Event::PushQueued`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueuedPush {
    /// A message to tell of.
    Message {
        message_id: MessageId,
        trigger: NoticeTrigger,
    },
    /// Messages read elsewhere: their notifications are taken away.
    Remove { message_ids: Vec<MessageId> },
}

/// Why a person is told about a message (Zulip's trigger names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeTrigger {
    /// A direct message to them.
    DirectMessage,
    /// They were mentioned by name, or through a group they are in.
    Mentioned,
    TopicWildcardMentioned,
    StreamWildcardMentioned,
    TopicWildcardMentionedInFollowedTopic,
    StreamWildcardMentionedInFollowedTopic,
    /// A message in a topic they follow.
    FollowedTopicEmailNotify,
    /// A message in a channel whose email notifications they turned on.
    StreamEmailNotify,
    /// A message in a topic they follow (push).
    FollowedTopicPushNotify,
    /// A message in a channel whose push notifications they turned on.
    StreamPushNotify,
}

impl NoticeTrigger {
    /// The order in which triggers name an email that gathers several (the most personal
    /// first).
    pub fn rank(self) -> u8 {
        match self {
            NoticeTrigger::DirectMessage => 0,
            NoticeTrigger::Mentioned => 1,
            NoticeTrigger::TopicWildcardMentionedInFollowedTopic => 2,
            NoticeTrigger::StreamWildcardMentionedInFollowedTopic => 3,
            NoticeTrigger::TopicWildcardMentioned => 4,
            NoticeTrigger::StreamWildcardMentioned => 5,
            NoticeTrigger::FollowedTopicEmailNotify | NoticeTrigger::FollowedTopicPushNotify => 6,
            NoticeTrigger::StreamEmailNotify | NoticeTrigger::StreamPushNotify => 7,
        }
    }
}

/// One person to tell about one message, from `due_at` (ms) on. Stored as the array
/// `[user_id, message_id, trigger, due_at]`: a notice is recorded for most direct messages and
/// mentions, and field names would make it twice the size in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "NoticeRecord", into = "NoticeRecord")]
pub struct Notice {
    pub user_id: UserId,
    pub message_id: MessageId,
    pub trigger: NoticeTrigger,
    pub due_at: i64,
}

/// A notice's stored form.
type NoticeRecord = (UserId, MessageId, NoticeTrigger, i64);

impl From<NoticeRecord> for Notice {
    fn from((user_id, message_id, trigger, due_at): NoticeRecord) -> Notice {
        Notice {
            user_id,
            message_id,
            trigger,
            due_at,
        }
    }
}

impl From<Notice> for NoticeRecord {
    fn from(n: Notice) -> NoticeRecord {
        (n.user_id, n.message_id, n.trigger, n.due_at)
    }
}

impl QueuedMail {
    /// Its kind, as unsubscribe links and the outbox's file names say it.
    pub fn kind(&self) -> &'static str {
        match self {
            QueuedMail::MissedMessages { .. } => "missed_messages",
            QueuedMail::LoginAlert { .. } => "login",
            QueuedMail::Digest { .. } => "digest",
        }
    }
}

/// What a queued email is about (`Event::EmailQueued`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueuedMail {
    /// Messages of one conversation the person missed, oldest first.
    MissedMessages {
        message_ids: Vec<MessageId>,
        trigger: NoticeTrigger,
    },
    /// A new sign-in to their account (at the event's time): the client's description of
    /// itself and the address it came from.
    LoginAlert { client: String, address: String },
    /// The weekly digest: what happened since `since` (ms) in their channels.
    Digest { since: i64 },
}

/// One of the organization's pictures: its square icon, its wide logo, and the logo for the
/// dark theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RealmImage {
    Icon,
    Logo,
    NightLogo,
}

/// An uploaded image a message may preview: its size as shown (after its EXIF orientation)
/// and whether it moves (a GIF or WebP of more than one frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadedImage {
    pub width: u32,
    pub height: u32,
    pub animated: bool,
}

/// An uploaded avatar: the hex SHA-256 of its PNG at Zulip's default size (100 px) and at
/// the medium size (500 px).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AvatarImage {
    pub sha256: String,
    pub medium_sha256: String,
}

/// A message draft as Zulip keeps it: `kind` is `"stream"`, `"private"` or `""` (unaddressed),
/// `to` the channel id or the user ids, `timestamp` the last edit (seconds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draft {
    pub kind: String,
    pub to: Vec<u64>,
    pub topic: String,
    pub content: String,
    pub timestamp: i64,
}

/// A change to a bot's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BotChange {
    /// A new owner (an active human user), and the one before.
    Owner {
        owner_id: UserId,
        previous: Option<UserId>,
    },
    DefaultSendingStream(Option<ChannelId>),
    DefaultEventsRegisterStream(Option<ChannelId>),
    DefaultAllPublicStreams(bool),
    /// An outgoing webhook bot's service: its URL and interface (1 Zulip, 2 Slack).
    Service {
        base_url: String,
        interface: u8,
    },
}

/// What changed in a person's two-factor authentication (`Event::TwoFactorChanged`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TwoFactorChange {
    /// Enrolled: the key is derived from `key_nonce` and the server secret, and was confirmed by
    /// the code of `step` (used up by that); backup codes from `backup_nonce`, when issued.
    Enabled {
        key_nonce: String,
        backup_nonce: Option<String>,
        step: u64,
    },
    /// The authenticator's code of `step` signed them in or confirmed a change (codes of this
    /// step and earlier ones are refused from now on).
    CodeUsed { step: u64 },
    /// Backup code `index` was used up.
    BackupCodeUsed { index: u8 },
    /// Ten new backup codes (from `backup_nonce`) replace the earlier ones.
    BackupCodesIssued { backup_nonce: String },
    /// Switched off, by the person or by an administrator (`by`).
    Disabled { by: UserId },
}

/// The emoji of a user status; an empty name is no emoji.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusEmoji {
    pub emoji_name: String,
    pub emoji_code: String,
    pub reaction_type: ReactionType,
}

/// Every variant name (`Event::type_name`), for filters that name event types.
pub const EVENT_TYPES: &[&str] = &[
    "RealmCreated",
    "RealmSettingChanged",
    "CustomProfileFieldCreated",
    "CustomProfileFieldChanged",
    "CustomProfileFieldDeleted",
    "CustomProfileFieldsReordered",
    "ProfileDataSet",
    "InvitationCreated",
    "InvitationResent",
    "InvitationRevoked",
    "InvitationAccepted",
    "RealmDomainAdded",
    "RealmDomainChanged",
    "RealmDomainRemoved",
    "PlaygroundAdded",
    "PlaygroundRemoved",
    "RealmUserDefaultChanged",
    "DefaultChannelGroupSaved",
    "DefaultChannelGroupRemoved",
    "RealmImageSet",
    "LinkifierAdded",
    "LinkifierChanged",
    "LinkifierRemoved",
    "LinkifiersReordered",
    "UserCreated",
    "ApiKeyRegenerated",
    "PasswordChanged",
    "UserDeactivated",
    "UserReactivated",
    "UserChanged",
    "UserGroupCreated",
    "UserGroupMembersChanged",
    "UserGroupSubgroupsChanged",
    "UserGroupChanged",
    "ChannelCreated",
    "ChannelChanged",
    "Subscribed",
    "Unsubscribed",
    "SubscriptionPropertyChanged",
    "ChannelFolderCreated",
    "ChannelFolderChanged",
    "ChannelFoldersReordered",
    "TopicVisibilitySet",
    "MessageSent",
    "TypingStarted",
    "TypingStopped",
    "EditTyping",
    "MessageFlagsChanged",
    "ReactionAdded",
    "ReactionRemoved",
    "MessageEdited",
    "MessagesDeleted",
    "CustomEmojiAdded",
    "CustomEmojiDeactivated",
    "PresenceUpdated",
    "UserSettingChanged",
    "SubmessageAdded",
    "UserStatusSet",
    "BotStorageSet",
    "BotStorageRemoved",
    "AttachmentUploaded",
    "AttachmentDeleted",
    "ScheduledMessageSaved",
    "ScheduledMessageFailed",
    "ScheduledMessageRemoved",
    "NavigationViewAdded",
    "NavigationViewChanged",
    "NavigationViewRemoved",
    "BotChanged",
    "ClientDeviceRegistered",
    "ClientDeviceRemoved",
    "SessionStarted",
    "SessionEnded",
    "TwoFactorChanged",
    "SignInTokenSpent",
    "UserEmailChanged",
    "DraftsSaved",
    "DraftRemoved",
    "SavedSnippetSaved",
    "SavedSnippetRemoved",
    "NoticesRecorded",
    "NoticesSettled",
    "EmailQueued",
    "EmailSent",
    "EmailFailed",
    "PushDeviceChanged",
    "PushQueued",
    "PushSent",
    "PushFailed",
    "PushTestSent",
    "ClockWentBack",
    "UserMuted",
    "AlertWordsAdded",
    "AlertWordsRemoved",
    "AvatarSet",
    "UserUnmuted",
    "LogErased",
    "ImportStarted",
    "ImportFinished",
    "Imported",
    "MessagesReadThrough",
    "RealmExported",
    "RealmExportDeleted",
];

impl Event {
    /// The event itself, or for imported history (`Imported`) the event it carries: what a
    /// reader of the log that looks for one kind of event must look at.
    pub fn inner(&self) -> &Event {
        match self {
            Event::Imported { event, .. } => event.inner(),
            other => other,
        }
    }

    /// [`Event::inner`], by value.
    pub fn into_inner(self) -> Event {
        match self {
            Event::Imported { event, .. } => event.into_inner(),
            other => other,
        }
    }

    /// The variant name, as listed by `GET /admin/events` and in `schema/` (keep `EVENT_TYPES`
    /// in step).
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::RealmCreated { .. } => "RealmCreated",
            Event::RealmSettingChanged { .. } => "RealmSettingChanged",
            Event::RealmDomainAdded { .. } => "RealmDomainAdded",
            Event::RealmDomainChanged { .. } => "RealmDomainChanged",
            Event::RealmDomainRemoved { .. } => "RealmDomainRemoved",
            Event::PlaygroundAdded { .. } => "PlaygroundAdded",
            Event::PlaygroundRemoved { .. } => "PlaygroundRemoved",
            Event::RealmUserDefaultChanged { .. } => "RealmUserDefaultChanged",
            Event::DefaultChannelGroupSaved { .. } => "DefaultChannelGroupSaved",
            Event::DefaultChannelGroupRemoved { .. } => "DefaultChannelGroupRemoved",
            Event::RealmImageSet { .. } => "RealmImageSet",
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
            Event::EditTyping { .. } => "EditTyping",
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
            Event::UserStatusSet { .. } => "UserStatusSet",
            Event::BotStorageSet { .. } => "BotStorageSet",
            Event::BotStorageRemoved { .. } => "BotStorageRemoved",
            Event::AttachmentUploaded { .. } => "AttachmentUploaded",
            Event::AttachmentDeleted { .. } => "AttachmentDeleted",
            Event::ScheduledMessageSaved { .. } => "ScheduledMessageSaved",
            Event::ScheduledMessageFailed { .. } => "ScheduledMessageFailed",
            Event::ScheduledMessageRemoved { .. } => "ScheduledMessageRemoved",
            Event::NavigationViewAdded { .. } => "NavigationViewAdded",
            Event::NavigationViewChanged { .. } => "NavigationViewChanged",
            Event::NavigationViewRemoved { .. } => "NavigationViewRemoved",
            Event::BotChanged { .. } => "BotChanged",
            Event::ClientDeviceRegistered { .. } => "ClientDeviceRegistered",
            Event::ClientDeviceRemoved { .. } => "ClientDeviceRemoved",
            Event::SessionStarted { .. } => "SessionStarted",
            Event::SessionEnded { .. } => "SessionEnded",
            Event::TwoFactorChanged { .. } => "TwoFactorChanged",
            Event::SignInTokenSpent { .. } => "SignInTokenSpent",
            Event::UserEmailChanged { .. } => "UserEmailChanged",
            Event::DraftsSaved { .. } => "DraftsSaved",
            Event::DraftRemoved { .. } => "DraftRemoved",
            Event::SavedSnippetSaved { .. } => "SavedSnippetSaved",
            Event::SavedSnippetRemoved { .. } => "SavedSnippetRemoved",
            Event::NoticesRecorded { .. } => "NoticesRecorded",
            Event::NoticesSettled { .. } => "NoticesSettled",
            Event::EmailQueued { .. } => "EmailQueued",
            Event::EmailSent { .. } => "EmailSent",
            Event::EmailFailed { .. } => "EmailFailed",
            Event::PushDeviceChanged { .. } => "PushDeviceChanged",
            Event::PushQueued { .. } => "PushQueued",
            Event::PushSent { .. } => "PushSent",
            Event::PushFailed { .. } => "PushFailed",
            Event::PushTestSent { .. } => "PushTestSent",
            Event::ClockWentBack { .. } => "ClockWentBack",
            Event::UserMuted { .. } => "UserMuted",
            Event::AlertWordsAdded { .. } => "AlertWordsAdded",
            Event::AlertWordsRemoved { .. } => "AlertWordsRemoved",
            Event::AvatarSet { .. } => "AvatarSet",
            Event::UserUnmuted { .. } => "UserUnmuted",
            Event::LogErased { .. } => "LogErased",
            Event::ImportStarted { .. } => "ImportStarted",
            Event::ImportFinished { .. } => "ImportFinished",
            Event::Imported { .. } => "Imported",
            Event::MessagesReadThrough { .. } => "MessagesReadThrough",
            Event::RealmExported { .. } => "RealmExported",
            Event::RealmExportDeleted { .. } => "RealmExportDeleted",
        }
    }
}

/// Where a read mark applies: a channel, or a direct conversation (every participant,
/// ascending).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadPlace {
    Channel(ChannelId),
    Direct(Vec<UserId>),
}

/// Version 1's event as version 2 has it (the one step of the upcast chain). Fails only for a
/// record no version of Chronicle wrote (a policy number outside Zulip's four).
///
/// Long by the number of events, not by logic: one arm per version 1 event, every field moved
/// by name, so that a reader can check the mapping line by line against the frozen module.
/// Only `TopicVisibilitySet` changes.
pub fn upcast(event: v1::Event) -> Result<Event, String> {
    Ok(match event {
        v1::Event::RealmCreated { name, description } => Event::RealmCreated { name, description },
        v1::Event::RealmSettingChanged { name, value } => {
            Event::RealmSettingChanged { name, value }
        }
        v1::Event::CustomProfileFieldCreated { field_id, spec } => {
            Event::CustomProfileFieldCreated { field_id, spec }
        }
        v1::Event::CustomProfileFieldChanged { field_id, spec } => {
            Event::CustomProfileFieldChanged { field_id, spec }
        }
        v1::Event::CustomProfileFieldDeleted { field_id } => {
            Event::CustomProfileFieldDeleted { field_id }
        }
        v1::Event::CustomProfileFieldsReordered { order } => {
            Event::CustomProfileFieldsReordered { order }
        }
        v1::Event::ProfileDataSet {
            user_id,
            field_id,
            value,
            rendered_value,
        } => Event::ProfileDataSet {
            user_id,
            field_id,
            value,
            rendered_value,
        },
        v1::Event::InvitationCreated {
            invite_id,
            email,
            spec,
            link_nonce,
        } => Event::InvitationCreated {
            invite_id,
            email,
            spec,
            link_nonce,
        },
        v1::Event::InvitationResent { invite_id } => Event::InvitationResent { invite_id },
        v1::Event::InvitationRevoked { invite_id } => Event::InvitationRevoked { invite_id },
        v1::Event::InvitationAccepted { invite_id, user_id } => {
            Event::InvitationAccepted { invite_id, user_id }
        }
        v1::Event::LinkifierAdded { linkifier_id, spec } => {
            Event::LinkifierAdded { linkifier_id, spec }
        }
        v1::Event::LinkifierChanged { linkifier_id, spec } => {
            Event::LinkifierChanged { linkifier_id, spec }
        }
        v1::Event::LinkifierRemoved { linkifier_id } => Event::LinkifierRemoved { linkifier_id },
        v1::Event::LinkifiersReordered { order } => Event::LinkifiersReordered { order },
        v1::Event::UserCreated {
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
        } => Event::UserCreated {
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
        },
        v1::Event::PasswordChanged {
            user_id,
            password_hash,
        } => Event::PasswordChanged {
            user_id,
            password_hash,
        },
        v1::Event::ApiKeyRegenerated {
            user_id,
            api_key_nonce,
        } => Event::ApiKeyRegenerated {
            user_id,
            api_key_nonce,
        },
        v1::Event::UserDeactivated { user_id } => Event::UserDeactivated { user_id },
        v1::Event::UserReactivated { user_id } => Event::UserReactivated { user_id },
        v1::Event::UserChanged { user_id, change } => Event::UserChanged { user_id, change },
        v1::Event::UserGroupCreated {
            group_id,
            name,
            description,
            system,
            members,
            subgroups,
            permissions,
        } => Event::UserGroupCreated {
            group_id,
            name,
            description,
            system,
            members,
            subgroups,
            permissions,
        },
        v1::Event::UserGroupMembersChanged {
            group_id,
            added,
            removed,
        } => Event::UserGroupMembersChanged {
            group_id,
            added,
            removed,
        },
        v1::Event::UserGroupSubgroupsChanged {
            group_id,
            added,
            removed,
        } => Event::UserGroupSubgroupsChanged {
            group_id,
            added,
            removed,
        },
        v1::Event::UserGroupChanged { group_id, change } => {
            Event::UserGroupChanged { group_id, change }
        }
        v1::Event::ChannelCreated {
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
        } => Event::ChannelCreated {
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
        },
        v1::Event::ChannelChanged { channel_id, change } => {
            Event::ChannelChanged { channel_id, change }
        }
        v1::Event::Subscribed {
            channel_id,
            subscriptions,
        } => Event::Subscribed {
            channel_id,
            subscriptions,
        },
        v1::Event::Unsubscribed {
            channel_id,
            user_ids,
        } => Event::Unsubscribed {
            channel_id,
            user_ids,
        },
        v1::Event::SubscriptionPropertyChanged {
            user_id,
            channel_id,
            property,
        } => Event::SubscriptionPropertyChanged {
            user_id,
            channel_id,
            property,
        },
        v1::Event::ChannelFolderCreated {
            folder_id,
            name,
            description,
        } => Event::ChannelFolderCreated {
            folder_id,
            name,
            description,
        },
        v1::Event::ChannelFolderChanged {
            folder_id,
            name,
            description,
            is_archived,
        } => Event::ChannelFolderChanged {
            folder_id,
            name,
            description,
            is_archived,
        },
        v1::Event::ChannelFoldersReordered { order } => Event::ChannelFoldersReordered { order },
        v1::Event::MessageSent {
            message_id,
            sender_id,
            recipient,
            content,
            rendered_content,
            client,
            is_me_message,
            mentioned,
            stream_wildcard,
            topic_wildcard,
            sender_queue,
        } => Event::MessageSent {
            message_id,
            sender_id,
            recipient,
            content,
            rendered_content,
            client,
            is_me_message,
            mentioned,
            stream_wildcard,
            topic_wildcard,
            sender_queue,
            alerted: Vec::new(),
        },
        v1::Event::MessageFlagsChanged {
            user_id,
            flag,
            add,
            message_ids,
        } => Event::MessageFlagsChanged {
            user_id,
            flag,
            add,
            message_ids,
        },
        v1::Event::TypingStarted { user_id, target } => Event::TypingStarted { user_id, target },
        v1::Event::TypingStopped { user_id, target } => Event::TypingStopped { user_id, target },
        v1::Event::ReactionAdded {
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        } => Event::ReactionAdded {
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        },
        v1::Event::ReactionRemoved {
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        } => Event::ReactionRemoved {
            message_id,
            user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        },
        v1::Event::MessageEdited {
            message_id,
            user_id,
            content,
            moved,
        } => Event::MessageEdited {
            message_id,
            user_id,
            content,
            moved,
            alerted: None,
        },
        v1::Event::MessagesDeleted {
            message_ids,
            recipient,
            holders,
        } => Event::MessagesDeleted {
            message_ids,
            recipient,
            holders,
        },
        v1::Event::TopicVisibilitySet {
            user_id,
            channel_id,
            topic,
            policy,
        } => Event::TopicVisibilitySet {
            user_id,
            channel_id,
            topic,
            policy: TopicPolicy::from_code(policy)
                .ok_or_else(|| format!("unknown topic visibility policy {policy}"))?,
        },
        v1::Event::CustomEmojiAdded {
            emoji_id,
            name,
            content_type,
            image,
        } => Event::CustomEmojiAdded {
            emoji_id,
            name,
            content_type,
            image,
        },
        v1::Event::CustomEmojiDeactivated { emoji_id } => {
            Event::CustomEmojiDeactivated { emoji_id }
        }
        v1::Event::PresenceUpdated { user_id, active } => {
            Event::PresenceUpdated { user_id, active }
        }
        v1::Event::SubmessageAdded {
            submessage_id,
            message_id,
            sender_id,
            msg_type,
            content,
        } => Event::SubmessageAdded {
            submessage_id,
            message_id,
            sender_id,
            msg_type,
            content,
        },
        v1::Event::UserSettingChanged {
            user_id,
            name,
            value,
        } => Event::UserSettingChanged {
            user_id,
            name,
            value,
        },
    })
}

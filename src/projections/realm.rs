//! The organization itself and its settings.
//!
//! Settings are table-driven (`SETTINGS`): each has Zulip's name, its form, its default for a
//! new organization, who may change it and how the change reaches clients. The projection keeps
//! only the values that differ from the defaults' origin (every `RealmSettingChanged`), so a
//! setting added later has its default in every older log without a migration.

use crate::events::{Envelope, Event, GroupSetting, RealmValue, SystemGroup};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The form of a setting's value, which decides how `PATCH /realm` parses and checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    /// Free text of at most `max` characters; blank only when `blank` allows it.
    Text {
        max: usize,
        blank: bool,
    },
    /// One of these strings.
    Choice(&'static [&'static str]),
    /// A number of seconds above zero, or `"unlimited"` (null).
    Limit,
    /// One of these numbers.
    Code(&'static [i64]),
    /// A number of days above zero, or `"unlimited"` (stored and shown as -1).
    RetentionDays,
    /// A channel id, or -1 for none.
    Channel,
    /// An http(s) URL, or `"default"` (null): use the server's.
    Url,
    /// A group-setting value. `everyone`: `role:everyone` is acceptable; `nobody` likewise;
    /// `system_only`: only system groups.
    Group {
        everyone: bool,
        nobody: bool,
        system_only: bool,
    },
}

/// A default, in a form that can be written in a `const` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initial {
    Bool(bool),
    Int(i64),
    Text(&'static str),
    Group(SystemGroup),
    /// No value (null).
    Null,
}

/// How clients hear of a change: `realm` `update` (`property`, `value`) or `update_dict`
/// (`property: "default"`, `data: {name: value}`), as Zulip sends each setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientEvent {
    Update,
    UpdateDict,
}

/// One organization setting.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub name: &'static str,
    pub kind: Kind,
    pub default: Initial,
    /// Only owners may change it (administrators get "Must be an organization owner").
    pub owner_only: bool,
    pub event: ClientEvent,
}

const fn plain(name: &'static str, kind: Kind, default: Initial) -> Setting {
    Setting {
        name,
        kind,
        default,
        owner_only: false,
        event: ClientEvent::Update,
    }
}

const fn group(
    name: &'static str,
    default: SystemGroup,
    everyone: bool,
    nobody: bool,
    owner_only: bool,
) -> Setting {
    Setting {
        name,
        kind: Kind::Group {
            everyone,
            nobody,
            system_only: false,
        },
        default: Initial::Group(default),
        owner_only,
        event: ClientEvent::UpdateDict,
    }
}

/// Zulip's `MAX_REALM_NAME_LENGTH` and `MAX_REALM_DESCRIPTION_LENGTH`.
pub const MAX_REALM_NAME_LENGTH: usize = 40;
pub const MAX_REALM_DESCRIPTION_LENGTH: usize = 1000;
/// Zulip's limit on `welcome_message_custom_text` (Unicode code points).
pub const MAX_WELCOME_TEXT_LENGTH: usize = 8000;
/// Zulip's default edit and delete limit (10 minutes) and move limits (a week).
pub const DEFAULT_EDIT_LIMIT_SECS: i64 = 600;
pub const DEFAULT_MOVE_LIMIT_SECS: i64 = 7 * 24 * 3600;

/// Every setting `PATCH /realm` changes and `/register` reports (as `realm_<name>`), with
/// Zulip's defaults for a new organization. Each is read by the server where it has an effect
/// there (edit and move limits, edit history, topics policy, unique names, permissions); the
/// others (guest indicators) only change what clients show.
pub const SETTINGS: &[Setting] = &[
    plain(
        "name",
        Kind::Text {
            max: MAX_REALM_NAME_LENGTH,
            blank: false,
        },
        Initial::Text(""),
    ),
    plain(
        "description",
        Kind::Text {
            max: MAX_REALM_DESCRIPTION_LENGTH,
            blank: true,
        },
        Initial::Text(""),
    ),
    // Welcome Bot's note from the administrators to each new account (none when empty).
    plain(
        "welcome_message_custom_text",
        Kind::Text {
            max: MAX_WELCOME_TEXT_LENGTH,
            blank: true,
        },
        Initial::Text(""),
    ),
    Setting {
        event: ClientEvent::UpdateDict,
        ..plain("allow_message_editing", Kind::Bool, Initial::Bool(true))
    },
    Setting {
        event: ClientEvent::UpdateDict,
        ..plain(
            "message_content_edit_limit_seconds",
            Kind::Limit,
            Initial::Int(DEFAULT_EDIT_LIMIT_SECS),
        )
    },
    plain(
        "message_content_delete_limit_seconds",
        Kind::Limit,
        Initial::Int(DEFAULT_EDIT_LIMIT_SECS),
    ),
    plain(
        "move_messages_within_stream_limit_seconds",
        Kind::Limit,
        Initial::Int(DEFAULT_MOVE_LIMIT_SECS),
    ),
    plain(
        "move_messages_between_streams_limit_seconds",
        Kind::Limit,
        Initial::Int(DEFAULT_MOVE_LIMIT_SECS),
    ),
    plain(
        "message_edit_history_visibility_policy",
        Kind::Choice(&["all", "moves", "none"]),
        Initial::Text("all"),
    ),
    plain(
        "topics_policy",
        Kind::Choice(&["allow_empty_topic", "disable_empty_topic"]),
        Initial::Text("allow_empty_topic"),
    ),
    plain("require_unique_names", Kind::Bool, Initial::Bool(false)),
    // Video calls: the provider (Zulip's ids: 0 none, 1 Jitsi Meet, 4 BigBlueButton, 6
    // Constructor Groups, 7 Nextcloud Talk; only those the server offers are accepted) and the
    // organization's own Jitsi server.
    plain(
        "video_chat_provider",
        Kind::Code(&[0, 1, 2, 3, 4, 5, 6, 7]),
        Initial::Int(1),
    ),
    plain("jitsi_server_url", Kind::Url, Initial::Null),
    // The weekly digest emails to people away for a while, on this weekday (0 Monday ... 6
    // Sunday, in UTC): Zulip's defaults (off for a new organization; Tuesday).
    plain("digest_emails_enabled", Kind::Bool, Initial::Bool(false)),
    plain(
        "digest_weekday",
        Kind::Code(&[0, 1, 2, 3, 4, 5, 6]),
        Initial::Int(1),
    ),
    // Whether missed-message emails may show what the messages say (each person may also
    // hide it for themselves: `message_content_in_email_notifications`).
    plain(
        "message_content_allowed_in_email_notifications",
        Kind::Bool,
        Initial::Bool(true),
    ),
    // Whether joining takes an invitation (Zulip's default for a new organization); off, anyone
    // who proves an address (in the allowed domains) may sign up at `/register/`.
    plain("invite_required", Kind::Bool, Initial::Bool(true)),
    // Accounts only for addresses in the allowed domains (`/realm/domains`); owners decide.
    Setting {
        owner_only: true,
        ..plain(
            "emails_restricted_to_domains",
            Kind::Bool,
            Initial::Bool(false),
        )
    },
    // Zulip turns read receipts on for a new organization that requires invitations, as
    // Chronicle's always does.
    plain("enable_read_receipts", Kind::Bool, Initial::Bool(true)),
    Setting {
        owner_only: true,
        ..plain(
            "message_retention_days",
            Kind::RetentionDays,
            Initial::Int(-1),
        )
    },
    // Who sees real email addresses: 1 everyone, 2 members, 3 administrators, 4 nobody,
    // 5 moderators. (Zulip made this a per-user setting with an organization default; here it
    // is the organization's.)
    plain(
        "email_address_visibility",
        Kind::Code(&[1, 2, 3, 4, 5]),
        Initial::Int(3),
    ),
    plain("name_changes_disabled", Kind::Bool, Initial::Bool(false)),
    // Whether members may change their own address (administrators always may), confirmed from
    // the new address (`PATCH /settings` `email`).
    plain("email_changes_disabled", Kind::Bool, Initial::Bool(false)),
    plain(
        "enable_guest_user_indicator",
        Kind::Bool,
        Initial::Bool(true),
    ),
    plain(
        "enable_guest_user_dm_warning",
        Kind::Bool,
        Initial::Bool(true),
    ),
    plain(
        "new_stream_announcements_stream_id",
        Kind::Channel,
        Initial::Int(-1),
    ),
    plain(
        "signup_announcements_stream_id",
        Kind::Channel,
        Initial::Int(-1),
    ),
    // Where message reports go (a private channel); -1: reporting is off.
    plain(
        "moderation_request_channel_id",
        Kind::Channel,
        Initial::Int(-1),
    ),
    group(
        "can_create_public_channel_group",
        SystemGroup::Members,
        false,
        true,
        false,
    ),
    group(
        "can_create_private_channel_group",
        SystemGroup::Members,
        false,
        true,
        false,
    ),
    Setting {
        kind: Kind::Group {
            everyone: false,
            nobody: true,
            system_only: true,
        },
        ..group(
            "can_create_web_public_channel_group",
            SystemGroup::Owners,
            false,
            true,
            false,
        )
    },
    group(
        "can_add_subscribers_group",
        SystemGroup::Members,
        false,
        true,
        false,
    ),
    // Chronicle's own: who may read the log and the state as of any event through the
    // inspector (`/api/v1/admin/events`, `/projections`, `/diff`), which shows every
    // conversation, direct and private ones included. Owners only unless the owners decide
    // otherwise; every use is recorded in the access audit (`access_audit`).
    group(
        "can_inspect_log_group",
        SystemGroup::Owners,
        false,
        true,
        true,
    ),
    group(
        "can_add_custom_emoji_group",
        SystemGroup::Members,
        false,
        true,
        false,
    ),
    group(
        "can_create_bots_group",
        SystemGroup::Members,
        false,
        true,
        false,
    ),
    group(
        "can_create_write_only_bots_group",
        SystemGroup::Members,
        false,
        true,
        false,
    ),
    group("can_create_groups", SystemGroup::Members, false, true, true),
    group(
        "can_manage_all_groups",
        SystemGroup::Owners,
        false,
        false,
        true,
    ),
    group(
        "can_invite_users_group",
        SystemGroup::Members,
        false,
        true,
        true,
    ),
    group(
        "create_multiuse_invite_group",
        SystemGroup::Administrators,
        false,
        true,
        true,
    ),
    group(
        "can_set_topics_policy_group",
        SystemGroup::Members,
        true,
        true,
        false,
    ),
    // Who may start a direct conversation with people (bots and oneself are always allowed),
    // and who may take part in direct conversations at all: one participant of a conversation
    // must be in it (`commands::messages`).
    group(
        "direct_message_initiator_group",
        SystemGroup::Everyone,
        true,
        true,
        false,
    ),
    group(
        "direct_message_permission_group",
        SystemGroup::Everyone,
        true,
        true,
        false,
    ),
    group(
        "can_delete_any_message_group",
        SystemGroup::Administrators,
        false,
        true,
        false,
    ),
    group(
        "can_delete_own_message_group",
        SystemGroup::Everyone,
        true,
        true,
        false,
    ),
    group(
        "can_move_messages_between_channels_group",
        SystemGroup::Members,
        true,
        true,
        false,
    ),
    group(
        "can_move_messages_between_topics_group",
        SystemGroup::Everyone,
        true,
        true,
        false,
    ),
    group(
        "can_resolve_topics_group",
        SystemGroup::Everyone,
        true,
        true,
        false,
    ),
    // Wildcard mentions in channels of more than 15 subscribers and topics of more than 15
    // participants (`WILDCARD_MENTION_LARGE`).
    group(
        "can_mention_many_users_group",
        SystemGroup::Administrators,
        true,
        true,
        false,
    ),
];

/// Above this many channel subscribers (or topic participants) a wildcard mention needs
/// `can_mention_many_users_group` (Zulip's `WILDCARD_MENTION_THRESHOLD`).
pub const WILDCARD_MENTION_THRESHOLD: usize = 15;

/// The retired `wildcard_mention_policy` enum that older clients (the mobile app among them)
/// still read, derived from `can_mention_many_users_group` as Zulip derives it: the matching
/// value for a system group, and "everyone" (1) for any other group.
pub fn wildcard_mention_policy(system: Option<SystemGroup>) -> i64 {
    match system {
        Some(SystemGroup::Members) => 2,
        Some(SystemGroup::FullMembers) => 3,
        Some(SystemGroup::Administrators) => 5,
        Some(SystemGroup::Nobody) => 6,
        Some(SystemGroup::Moderators) => 7,
        _ => 1,
    }
}

/// The table entry of a setting.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// Organization-wide settings.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Realm {
    /// False until `RealmCreated` has been folded.
    pub exists: bool,
    pub name: String,
    pub description: String,
    /// Creation time, milliseconds since the epoch.
    pub date_created_ms: i64,
    /// Settings changed since creation (the rest have their table default).
    changed: BTreeMap<String, RealmValue>,
    /// Data exports (`POST /export/realm`), by id. Absent from snapshots written before they
    /// existed.
    #[serde(default)]
    pub exports: BTreeMap<u64, RealmExport>,
    /// Allowed email domains and whether each allows its subdomains. Absent from snapshots
    /// written before they existed.
    #[serde(default)]
    pub domains: BTreeMap<String, bool>,
    /// Code playgrounds by id, and the highest id ever given (ids are not reused). Absent from
    /// snapshots written before they existed.
    #[serde(default)]
    pub playgrounds: BTreeMap<u64, Playground>,
    #[serde(default)]
    pub highest_playground_id: u64,
    /// The uploaded icon, logo and dark-theme logo (SHA-256 of each stored PNG); the generated
    /// ones otherwise. Absent from snapshots written before they existed.
    #[serde(default)]
    pub icon: Option<String>,
    #[serde(default)]
    pub logo: Option<String>,
    #[serde(default)]
    pub night_logo: Option<String>,
}

/// A code playground (`/realm/playgrounds`), as `realm_playgrounds` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Playground {
    pub id: u64,
    pub name: String,
    pub pygments_language: String,
    pub url_template: String,
}

/// One data export, as `GET /export/realm` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RealmExport {
    pub id: u64,
    pub acting_user_id: Option<crate::ids::UserId>,
    /// Milliseconds.
    pub export_time_ms: i64,
    pub export_type: u8,
    pub path_id: String,
    pub size: u64,
    pub sha256: String,
    /// Milliseconds, once deleted.
    pub deleted_ms: Option<i64>,
}

impl Realm {
    /// A setting's current value that is not a group setting (those need the groups: see
    /// `Projections::realm_permission`). `name` and `description` answer from their fields.
    /// The stored PNG of one of the organization's pictures, when one was uploaded.
    pub fn image(&self, image: crate::events::RealmImage) -> Option<&str> {
        match image {
            crate::events::RealmImage::Icon => self.icon.as_deref(),
            crate::events::RealmImage::Logo => self.logo.as_deref(),
            crate::events::RealmImage::NightLogo => self.night_logo.as_deref(),
        }
    }

    fn image_mut(&mut self, image: crate::events::RealmImage) -> &mut Option<String> {
        match image {
            crate::events::RealmImage::Icon => &mut self.icon,
            crate::events::RealmImage::Logo => &mut self.logo,
            crate::events::RealmImage::NightLogo => &mut self.night_logo,
        }
    }

    pub fn value(&self, name: &str) -> RealmValue {
        match name {
            "name" => return RealmValue::Text(self.name.clone()),
            "description" => return RealmValue::Text(self.description.clone()),
            _ => {}
        }
        if let Some(value) = self.changed.get(name) {
            return value.clone();
        }
        match setting(name).map(|s| s.default) {
            Some(Initial::Bool(b)) => RealmValue::Bool(b),
            Some(Initial::Int(n)) => RealmValue::Int(n),
            Some(Initial::Text(t)) => RealmValue::Text(t.to_owned()),
            Some(Initial::Group(_)) | Some(Initial::Null) | None => RealmValue::Null,
        }
    }

    /// A changed group setting, if it was changed.
    pub fn changed_group(&self, name: &str) -> Option<&GroupSetting> {
        match self.changed.get(name) {
            Some(RealmValue::Group(setting)) => Some(setting),
            _ => None,
        }
    }

    pub fn flag(&self, name: &str) -> bool {
        matches!(self.value(name), RealmValue::Bool(true))
    }

    /// A time limit in seconds; `None` is unlimited.
    pub fn limit_secs(&self, name: &str) -> Option<i64> {
        match self.value(name) {
            RealmValue::Int(n) => Some(n),
            _ => None,
        }
    }

    /// A channel setting (`-1`, none, is `None`). The channel may since have been archived.
    pub fn channel(&self, name: &str) -> Option<crate::ids::ChannelId> {
        match self.value(name) {
            RealmValue::Int(id) => u64::try_from(id).ok().map(crate::ids::ChannelId),
            _ => None,
        }
    }

    pub fn text(&self, name: &str) -> String {
        match self.value(name) {
            RealmValue::Text(t) => t,
            _ => String::new(),
        }
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::RealmCreated { name, description } => {
                self.exists = true;
                self.name = name.clone();
                self.description = description.clone();
                self.date_created_ms = env.at;
            }
            Event::RealmSettingChanged { name, value } => match (name.as_str(), value) {
                ("name", RealmValue::Text(text)) => self.name = text.clone(),
                ("description", RealmValue::Text(text)) => self.description = text.clone(),
                _ => {
                    self.changed.insert(name.clone(), value.clone());
                }
            },
            Event::RealmExported {
                export_id,
                export_type,
                path_id,
                size,
                sha256,
            } => {
                self.exports.insert(
                    *export_id,
                    RealmExport {
                        id: *export_id,
                        acting_user_id: env.actor,
                        export_time_ms: env.at,
                        export_type: *export_type,
                        path_id: path_id.clone(),
                        size: *size,
                        sha256: sha256.clone(),
                        deleted_ms: None,
                    },
                );
            }
            Event::RealmExportDeleted { export_id } => {
                if let Some(export) = self.exports.get_mut(export_id) {
                    export.deleted_ms = Some(env.at);
                }
            }
            Event::RealmDomainAdded {
                domain,
                allow_subdomains,
            }
            | Event::RealmDomainChanged {
                domain,
                allow_subdomains,
            } => {
                self.domains.insert(domain.clone(), *allow_subdomains);
            }
            Event::RealmDomainRemoved { domain } => {
                self.domains.remove(domain);
            }
            Event::PlaygroundAdded {
                playground_id,
                name,
                pygments_language,
                url_template,
            } => {
                self.highest_playground_id = self.highest_playground_id.max(*playground_id);
                self.playgrounds.insert(
                    *playground_id,
                    Playground {
                        id: *playground_id,
                        name: name.clone(),
                        pygments_language: pygments_language.clone(),
                        url_template: url_template.clone(),
                    },
                );
            }
            Event::PlaygroundRemoved { playground_id } => {
                self.playgrounds.remove(playground_id);
            }
            Event::RealmImageSet { image, sha256 } => {
                *self.image_mut(*image) = sha256.clone();
            }
            Event::InvitationCreated { .. }
            | Event::RealmUserDefaultChanged { .. }
            | Event::DefaultChannelGroupSaved { .. }
            | Event::DefaultChannelGroupRemoved { .. }
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
            | Event::AlertWordsRemoved { .. }
            | Event::AvatarSet { .. }
            | Event::UserUnmuted { .. }
            | Event::LogErased { .. }
            | Event::ImportStarted { .. }
            | Event::ImportFinished { .. }
            | Event::Imported { .. }
            | Event::MessagesReadThrough { .. }
            | Event::TypingStarted { .. }
            | Event::TypingStopped { .. }
            | Event::EditTyping { .. }
            | Event::MessageSent { .. }
            | Event::MessageFlagsChanged { .. }
            | Event::ReactionAdded { .. }
            | Event::ReactionRemoved { .. }
            | Event::MessageEdited { .. }
            | Event::MessagesDeleted { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        let mut dump = json!({
            "exists": self.exists,
            "name": self.name,
            "description": self.description,
            "date_created_ms": self.date_created_ms,
        });
        // Only when something changed, so dumps of older logs keep their shape.
        if !self.changed.is_empty() {
            dump["changed_settings"] = json!(self.changed);
        }
        if !self.exports.is_empty() {
            dump["exports"] = json!(self.exports.values().collect::<Vec<_>>());
        }
        if !self.domains.is_empty() {
            dump["domains"] = json!(self.domains);
        }
        for (name, image) in [
            ("icon", &self.icon),
            ("logo", &self.logo),
            ("night_logo", &self.night_logo),
        ] {
            if let Some(sha256) = image {
                dump[name] = json!(sha256);
            }
        }
        if !self.playgrounds.is_empty() {
            dump["playgrounds"] = json!(self.playgrounds.values().collect::<Vec<_>>());
        }
        dump
    }
}

/// One entry of `/register`'s `server_supported_permission_settings`.
fn permission_config(default: &str, everyone: bool, nobody: bool, system_only: bool) -> Value {
    json!({
        "require_system_group": system_only,
        "allow_internet_group": false,
        "allow_nobody_group": nobody,
        "allow_everyone_group": everyone,
        "default_group_name": default,
        "default_for_system_groups": null,
        "allowed_system_groups": [],
    })
}

/// `/register`'s `server_supported_permission_settings`: the organization's group settings
/// from `SETTINGS`, and the channel and user-group settings with the defaults new channels and
/// groups get (`commands::channels`, `commands::groups`; "the creator" where Zulip names it so).
pub fn supported_permission_settings() -> Value {
    let realm: serde_json::Map<String, Value> = SETTINGS
        .iter()
        .filter_map(|s| match (s.kind, s.default) {
            (
                Kind::Group {
                    everyone,
                    nobody,
                    system_only,
                },
                Initial::Group(default),
            ) => Some((
                s.name.to_owned(),
                permission_config(default.name(), everyone, nobody, system_only),
            )),
            _ => None,
        })
        .collect();
    let stream: serde_json::Map<String, Value> = [
        ("can_add_subscribers_group", "role:nobody", false),
        (
            "can_administer_channel_group",
            "stream_creator_or_nobody",
            false,
        ),
        ("can_create_topic_group", "role:everyone", true),
        ("can_delete_any_message_group", "role:nobody", true),
        ("can_delete_own_message_group", "role:nobody", true),
        (
            "can_move_messages_out_of_channel_group",
            "role:nobody",
            true,
        ),
        (
            "can_move_messages_within_channel_group",
            "role:nobody",
            true,
        ),
        ("can_remove_subscribers_group", "role:administrators", true),
        ("can_resolve_topics_group", "role:nobody", true),
        ("can_send_message_group", "role:everyone", true),
        ("can_subscribe_group", "role:nobody", false),
    ]
    .into_iter()
    .map(|(name, default, everyone)| {
        (
            name.to_owned(),
            permission_config(default, everyone, true, false),
        )
    })
    .collect();
    let group: serde_json::Map<String, Value> = [
        ("can_add_members_group", "group_creator", false),
        ("can_join_group", "role:nobody", false),
        ("can_leave_group", "role:everyone", true),
        ("can_manage_group", "group_creator", false),
        ("can_mention_group", "role:everyone", true),
        ("can_remove_members_group", "role:nobody", false),
    ]
    .into_iter()
    .map(|(name, default, everyone)| {
        (
            name.to_owned(),
            permission_config(default, everyone, true, false),
        )
    })
    .collect();
    json!({"realm": realm, "stream": stream, "group": group})
}

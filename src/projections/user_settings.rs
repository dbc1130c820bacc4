//! Each user's own settings (`PATCH /settings`): display, notification and privacy choices.
//!
//! `SETTINGS` is the table of every setting Chronicle stores: its Zulip name, its default and
//! the values it may take. The projection keeps only values a user changed, so a setting added
//! to the table later has its default in every older log. (Zulip stopped sending the legacy
//! `update_display_settings` / `update_global_notifications` events at feature level 439;
//! Chronicle's level is above it, so changes are announced as `user_settings` only.)

use crate::events::{Envelope, Event, RealmValue};
use crate::ids::UserId;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};

/// The values a setting may take.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Bool,
    /// An integer from this list.
    IntIn(&'static [i64]),
    /// An integer in this inclusive range.
    IntRange(i64, i64),
    /// A string from this list.
    TextIn(&'static [&'static str]),
}

/// One user setting.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub name: &'static str,
    pub kind: Kind,
    pub default: Default,
}

/// A default value (a `const`-friendly form of `RealmValue`).
#[derive(Debug, Clone, Copy)]
pub enum Default {
    Bool(bool),
    Int(i64),
    Text(&'static str),
}

impl Default {
    fn value(self) -> RealmValue {
        match self {
            Default::Bool(b) => RealmValue::Bool(b),
            Default::Int(n) => RealmValue::Int(n),
            Default::Text(t) => RealmValue::Text(t.to_owned()),
        }
    }
}

const fn flag(name: &'static str, default: bool) -> Setting {
    Setting {
        name,
        kind: Kind::Bool,
        default: Default::Bool(default),
    }
}

const fn choice(name: &'static str, values: &'static [i64], default: i64) -> Setting {
    Setting {
        name,
        kind: Kind::IntIn(values),
        default: Default::Int(default),
    }
}

const ONE_TO_THREE: &[i64] = &[1, 2, 3];
const ONE_TO_FOUR: &[i64] = &[1, 2, 3, 4];

/// The languages Zulip's interface is translated into (`default_language`), by code.
pub const LANGUAGE_CODES: &[&str] = &[
    "ar", "be", "bg", "bqi", "ca", "cs", "cy", "da", "de", "en", "en-gb", "eo", "es", "fa", "fi",
    "fr", "gl", "gu", "hi", "hu", "id", "it", "ja", "ko", "lt", "lv", "ml", "mn", "nl", "pl", "pt",
    "pt-br", "pt-pt", "ro", "ru", "si", "sr", "sv", "ta", "tl", "tr", "uk", "vi", "zh-hans",
    "zh-hant", "zh-tw",
];

/// A language's name in that language (the `language_name` of `user_settings` events).
pub fn language_name(code: &str) -> &'static str {
    match code {
        "ar" => "العربية",
        "be" => "Беларуская",
        "bg" => "български",
        "bqi" => "Luri (Bakhtiari)",
        "ca" => "català",
        "cs" => "česky",
        "cy" => "Cymraeg",
        "da" => "Dansk",
        "de" => "Deutsch",
        "en" => "English",
        "en-gb" => "British English",
        "eo" => "Esperanto",
        "es" => "Español",
        "fa" => "فارسی",
        "fi" => "suomi",
        "fr" => "français",
        "gl" => "galego",
        "gu" => "ગુજરાતી",
        "hi" => "हिंदी",
        "hu" => "magyar",
        "id" => "Bahasa Indonesia",
        "it" => "Italiano",
        "ja" => "日本語",
        "ko" => "한국어",
        "lt" => "Lietuviškai",
        "lv" => "latviešu valoda",
        "ml" => "മലയാളം",
        "mn" => "Монгол",
        "nl" => "Nederlands",
        "pl" => "Polski",
        "pt" => "Português",
        "pt-br" => "Português Brasileiro",
        "pt-pt" => "Português - Portugal",
        "ro" => "Română",
        "ru" => "Русский",
        "si" => "සිංහල",
        "sr" => "српски",
        "sv" => "svenska",
        "ta" => "தமிழ்",
        "tl" => "Tagalog",
        "tr" => "Türkçe",
        "uk" => "Українська",
        "vi" => "Tiếng Việt",
        "zh-hans" => "简体中文",
        "zh-hant" => "繁體中文",
        "zh-tw" => "中文 (台灣)",
        _ => "",
    }
}

/// Every stored user setting with Zulip's default.
pub const SETTINGS: &[Setting] = &[
    flag("twenty_four_hour_time", false),
    flag("dense_mode", true),
    choice("web_mark_read_on_scroll_policy", ONE_TO_THREE, 1),
    flag("starred_message_counts", true),
    flag("fluid_layout_width", false),
    flag("high_contrast_mode", false),
    choice("color_scheme", ONE_TO_THREE, 1),
    flag("translate_emoticons", false),
    flag("display_emoji_reaction_users", true),
    Setting {
        name: "default_language",
        kind: Kind::TextIn(LANGUAGE_CODES),
        default: Default::Text("en"),
    },
    Setting {
        name: "web_home_view",
        kind: Kind::TextIn(&["recent_topics", "inbox", "all_messages"]),
        default: Default::Text("inbox"),
    },
    Setting {
        name: "emojiset",
        kind: Kind::TextIn(&["google", "google-blob", "twitter", "text"]),
        default: Default::Text("google"),
    },
    choice("demote_inactive_streams", ONE_TO_THREE, 1),
    choice("user_list_style", ONE_TO_THREE, 2),
    flag("enter_sends", false),
    flag("enable_drafts_synchronization", true),
    flag("enable_stream_desktop_notifications", false),
    flag("enable_stream_email_notifications", false),
    flag("enable_stream_push_notifications", false),
    flag("enable_stream_audible_notifications", false),
    Setting {
        name: "notification_sound",
        kind: Kind::TextIn(&["zulip", "chime", "ding", "none"]),
        default: Default::Text("zulip"),
    },
    flag("enable_desktop_notifications", true),
    flag("enable_sounds", true),
    Setting {
        name: "email_notifications_batching_period_seconds",
        // Zulip's range: more than nothing, at most a week.
        kind: Kind::IntRange(1, 7 * 24 * 3600),
        default: Default::Int(120),
    },
    flag("enable_offline_email_notifications", true),
    flag("enable_offline_push_notifications", true),
    flag("enable_online_push_notifications", true),
    flag("enable_digest_emails", true),
    flag("enable_marketing_emails", true),
    flag("enable_login_emails", true),
    flag("message_content_in_email_notifications", true),
    flag("pm_content_in_desktop_notifications", true),
    flag("wildcard_mentions_notify", true),
    flag("enable_followed_topic_desktop_notifications", true),
    flag("enable_followed_topic_email_notifications", true),
    flag("enable_followed_topic_push_notifications", true),
    flag("enable_followed_topic_audible_notifications", true),
    flag("enable_followed_topic_wildcard_mentions_notify", true),
    choice("desktop_icon_count_display", ONE_TO_FOUR, 1),
    choice("realm_name_in_email_notifications_policy", ONE_TO_THREE, 1),
    choice("automatically_follow_topics_policy", ONE_TO_FOUR, 3),
    choice(
        "automatically_unmute_topics_in_muted_streams_policy",
        ONE_TO_FOUR,
        3,
    ),
    flag("automatically_follow_topics_where_mentioned", true),
    flag("presence_enabled", true),
    flag("send_private_typing_notifications", true),
    flag("send_stream_typing_notifications", true),
    flag("send_read_receipts", true),
    flag("receives_typing_notifications", true),
    flag("allow_private_data_export", false),
    choice("web_channel_default_view", ONE_TO_FOUR, 1),
    Setting {
        name: "web_font_size_px",
        kind: Kind::IntRange(12, 20),
        default: Default::Int(16),
    },
    Setting {
        name: "web_line_height_percent",
        kind: Kind::IntRange(122, 158),
        default: Default::Int(122),
    },
    flag("web_navigate_to_sent_message", true),
    flag("web_suggest_update_timezone", true),
    flag("hide_ai_features", false),
    flag("web_escape_navigates_to_home_view", true),
    flag("left_side_userlist", false),
    Setting {
        name: "web_animate_image_previews",
        kind: Kind::TextIn(&["always", "on_hover", "never"]),
        default: Default::Text("on_hover"),
    },
    choice("web_stream_unreads_count_display_policy", ONE_TO_THREE, 2),
];

/// The settings an organization cannot choose for the people who join it (Zulip's
/// `PATCH /realm/user_settings_defaults` does not take them): each person's language, the emails
/// about their own account, and their consent to exports.
const PERSONAL_ONLY: &[&str] = &[
    "default_language",
    "dense_mode",
    "enable_marketing_emails",
    "enable_login_emails",
    "allow_private_data_export",
];

/// Whether the organization may set a default of this setting for new people.
pub fn has_realm_default(name: &str) -> bool {
    setting(name).is_some() && !PERSONAL_ONLY.contains(&name)
}

/// The choices clients offer beside the settings (`available_notification_sounds`,
/// `emojiset_choices`), in both the user's settings and the organization's defaults.
pub fn add_choices(map: &mut Map<String, Value>) {
    map.insert(
        "available_notification_sounds".into(),
        json!(["chime", "ding", "zulip"]),
    );
    map.insert(
        "emojiset_choices".into(),
        json!([
            {"key": "google", "text": "Google"},
            {"key": "google-blob", "text": "Google blobs"},
            {"key": "twitter", "text": "Twitter"},
            {"key": "text", "text": "Plain text"},
        ]),
    );
}

/// The table entry of a setting.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// Whether a value fits a setting.
pub fn allows(setting: &Setting, value: &RealmValue) -> bool {
    match (setting.kind, value) {
        (Kind::Bool, RealmValue::Bool(_)) => true,
        (Kind::IntIn(values), RealmValue::Int(n)) => values.contains(n),
        (Kind::IntRange(low, high), RealmValue::Int(n)) => (low..=high).contains(n),
        (Kind::TextIn(values), RealmValue::Text(t)) => values.contains(&t.as_str()),
        _ => false,
    }
}

/// A setting's value as JSON.
pub fn value_json(value: &RealmValue) -> Value {
    match value {
        RealmValue::Bool(b) => json!(b),
        RealmValue::Int(n) => json!(n),
        RealmValue::Text(t) => json!(t),
        RealmValue::Null | RealmValue::Group(_) => Value::Null,
    }
}

/// Every user's changed settings, and the organization's defaults for people who join later.
#[derive(Debug, Clone, std::default::Default, serde::Serialize, serde::Deserialize)]
pub struct UserSettings {
    changed: HashMap<UserId, BTreeMap<String, RealmValue>>,
    /// The defaults the organization chose; a new account starts with them.
    /// Absent from snapshots written before they existed.
    #[serde(default)]
    realm_defaults: BTreeMap<String, RealmValue>,
}

impl UserSettings {
    /// A user's value of a setting: as changed, else the default (`Null` for an unknown name).
    pub fn get(&self, user: UserId, name: &str) -> RealmValue {
        if let Some(value) = self.changed.get(&user).and_then(|m| m.get(name)) {
            return value.clone();
        }
        setting(name).map_or(RealmValue::Null, |s| s.default.value())
    }

    /// A user's value of a yes/no setting (false for an unknown name).
    pub fn flag(&self, user: UserId, name: &str) -> bool {
        match self.changed.get(&user).and_then(|m| m.get(name)) {
            Some(value) => *value == RealmValue::Bool(true),
            None => matches!(setting(name).map(|s| s.default), Some(Default::Bool(true))),
        }
    }

    /// A user's value of a numeric setting (0 for an unknown name).
    pub fn int(&self, user: UserId, name: &str) -> i64 {
        match self.get(user, name) {
            RealmValue::Int(n) => n,
            _ => 0,
        }
    }

    /// Whether a user consents to an export of their private data (`allow_private_data_export`,
    /// what Zulip's consent export, `export_type` 2, asks).
    pub fn consents_to_export(&self, user: UserId) -> bool {
        self.get(user, "allow_private_data_export") == RealmValue::Bool(true)
    }

    /// Every setting of a user, in the table's order.
    pub fn all(&self, user: UserId) -> Map<String, Value> {
        SETTINGS
            .iter()
            .map(|s| (s.name.to_owned(), value_json(&self.get(user, s.name))))
            .collect()
    }

    /// The organization's default of a setting for new people.
    pub fn realm_default(&self, name: &str) -> RealmValue {
        if let Some(value) = self.realm_defaults.get(name) {
            return value.clone();
        }
        setting(name).map_or(RealmValue::Null, |s| s.default.value())
    }

    /// `realm_user_settings_defaults` of `/register`: every setting an organization has a
    /// default for, and the choices clients offer.
    pub fn realm_defaults_json(&self) -> Map<String, Value> {
        let mut out: Map<String, Value> = SETTINGS
            .iter()
            .map(|s| (s.name.to_owned(), value_json(&self.realm_default(s.name))))
            .collect();
        add_choices(&mut out);
        out
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            // Kept as the administrators chose it, even when it equals today's table default:
            // a later version's table must not change what a replay gives.
            Event::RealmUserDefaultChanged { name, value } => {
                self.realm_defaults.insert(name.clone(), value.clone());
            }
            // A new account starts from the organization's defaults (Zulip copies its
            // `RealmUserDefault` row into the new user's).
            Event::UserCreated { user_id, .. } if !self.realm_defaults.is_empty() => {
                let mine = self.changed.entry(*user_id).or_default();
                for (name, value) in &self.realm_defaults {
                    mine.entry(name.clone()).or_insert_with(|| value.clone());
                }
            }
            Event::UserSettingChanged {
                user_id,
                name,
                value,
            } => {
                self.changed
                    .entry(*user_id)
                    .or_default()
                    .insert(name.clone(), value.clone());
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
            | Event::MessagesReadThrough { .. } => {}
        }
    }

    /// The organization's defaults that differ from Zulip's, for the dump (`None` when none
    /// does, so dumps of logs without them are unchanged).
    pub fn realm_defaults_dump(&self) -> Option<Value> {
        (!self.realm_defaults.is_empty()).then(|| {
            Value::Object(
                self.realm_defaults
                    .iter()
                    .map(|(k, v)| (k.clone(), value_json(v)))
                    .collect(),
            )
        })
    }

    pub fn dump(&self) -> Value {
        let mut users: Vec<(&UserId, &BTreeMap<String, RealmValue>)> =
            self.changed.iter().collect();
        users.sort_by_key(|(id, _)| **id);
        Value::Object(
            users
                .into_iter()
                .map(|(id, settings)| {
                    let values: Map<String, Value> = settings
                        .iter()
                        .map(|(k, v)| (k.clone(), value_json(v)))
                        .collect();
                    (id.0.to_string(), Value::Object(values))
                })
                .collect(),
        )
    }
}

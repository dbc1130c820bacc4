//! Every Zulip JSON shape, rendered from the projections: users, channels, subscriptions,
//! messages, groups, presence and realm data, with the facts about how the server is reached
//! ([`Site`]) and the version it reports.
//!
//! The HTTP handlers and the real-time translator both render through here, so a shape is
//! written once and a `GET` answer, a `/register` field and an event carrying the same object
//! cannot drift apart. Nothing here reads a request or writes state: each function takes the
//! projections and the viewer and returns JSON.

pub mod attachments;
pub mod channels;
pub mod fields;
pub mod groups;
pub mod messages;
pub mod presence;
pub mod realm;
pub mod users;

/// Facts about how the server is reached.
#[derive(Debug, Clone, Default)]
pub struct Site {
    /// The organization's base URL, e.g. `http://127.0.0.1:9991` (no trailing slash).
    pub realm_url: String,
    pub uploads: UploadLimits,
    /// Users as `/register` lists them, written once and kept while they stay the same.
    pub cards: std::sync::Arc<users::UserCards>,
    /// The ways of signing in the server offers.
    pub sign_in: SignInMethods,
    /// Whether mobile push goes through Zulip's push notification service (`[push]`).
    pub push_enabled: bool,
    /// The video call services configured (`[video_calls]`).
    pub video: VideoCalls,
}

/// The video call services this server offers organizations (`[video_calls]`), as Zulip's
/// `JITSI_SERVER_URL`, `BIG_BLUE_BUTTON_URL`/`BIG_BLUE_BUTTON_SECRET`, `NEXTCLOUD_SERVER` and
/// its Talk account, and `CONSTRUCTOR_GROUPS_URL` and its keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VideoCalls {
    /// The Jitsi Meet server calls are made on unless the organization names its own (none:
    /// Jitsi is not offered).
    pub jitsi_server_url: Option<String>,
    /// A BigBlueButton server: its API base URL (ending in `/`) and shared secret.
    pub big_blue_button: Option<BigBlueButton>,
    /// A Nextcloud server with Talk, and the account calls are made with.
    pub nextcloud_talk: Option<NextcloudTalk>,
    /// Constructor Groups' API, and the server's keys.
    pub constructor_groups: Option<ConstructorGroups>,
}

/// A Nextcloud server with Talk (`video_calls.nextcloud_server`, `nextcloud_talk_username`,
/// `nextcloud_talk_password`).
#[derive(Clone, PartialEq, Eq)]
pub struct NextcloudTalk {
    /// `scheme://host[:port]`: Zulip joins absolute paths to it, so any path is dropped.
    pub origin: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for NextcloudTalk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NextcloudTalk")
            .field("origin", &self.origin)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Constructor Groups (`video_calls.constructor_groups_url`, `..._access_key`,
/// `..._secret_key`).
#[derive(Clone, PartialEq, Eq)]
pub struct ConstructorGroups {
    /// The API URL, without a trailing `/`.
    pub url: String,
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for ConstructorGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConstructorGroups")
            .field("url", &self.url)
            .field("access_key", &"<redacted>")
            .field("secret_key", &"<redacted>")
            .finish()
    }
}

/// A BigBlueButton server (`video_calls.big_blue_button_url`, `..._secret`).
#[derive(Clone, PartialEq, Eq)]
pub struct BigBlueButton {
    pub url: String,
    pub secret: String,
}

impl std::fmt::Debug for BigBlueButton {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BigBlueButton")
            .field("url", &self.url)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Zulip's video call provider ids (`video_chat_provider`).
pub const VIDEO_CHAT_NONE: i64 = 0;
pub const VIDEO_CHAT_JITSI: i64 = 1;
pub const VIDEO_CHAT_BIG_BLUE_BUTTON: i64 = 4;
pub const VIDEO_CHAT_CONSTRUCTOR_GROUPS: i64 = 6;
pub const VIDEO_CHAT_NEXTCLOUD_TALK: i64 = 7;

impl VideoCalls {
    /// The providers an organization may choose: (Zulip's key, name, id).
    pub fn providers(&self) -> Vec<(&'static str, &'static str, i64)> {
        let mut out = vec![("disabled", "None", VIDEO_CHAT_NONE)];
        if self.jitsi_server_url.is_some() {
            out.push(("jitsi_meet", "Jitsi Meet", VIDEO_CHAT_JITSI));
        }
        if self.big_blue_button.is_some() {
            out.push((
                "big_blue_button",
                "BigBlueButton",
                VIDEO_CHAT_BIG_BLUE_BUTTON,
            ));
        }
        if self.constructor_groups.is_some() {
            out.push((
                "constructor_groups",
                "Constructor Groups",
                VIDEO_CHAT_CONSTRUCTOR_GROUPS,
            ));
        }
        if self.nextcloud_talk.is_some() {
            out.push((
                "nextcloud_talk",
                "Nextcloud Talk",
                VIDEO_CHAT_NEXTCLOUD_TALK,
            ));
        }
        out
    }
}

/// The ways of signing in, as `server_settings` and `/register` tell clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInMethods {
    /// An email address and a password Chronicle keeps (Zulip's `Email` backend).
    pub email: bool,
    /// A password checked by the LDAP directory (Zulip's `LDAP` backend).
    pub ldap: bool,
    /// Identity providers the browser is sent to, in the order of their buttons.
    pub external: Vec<ExternalMethod>,
}

/// One entry of `external_authentication_methods`, as Zulip's `ExternalAuthMethodDictT`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExternalMethod {
    /// `oidc:NAME` for an OpenID Connect provider (Zulip's one provider is `oidc:oidc`),
    /// `saml:NAME` for a SAML identity provider.
    pub name: String,
    pub display_name: String,
    pub display_icon: Option<String>,
    pub login_url: String,
    pub signup_url: String,
}

impl Default for SignInMethods {
    fn default() -> Self {
        SignInMethods {
            email: true,
            ldap: false,
            external: Vec::new(),
        }
    }
}

impl SignInMethods {
    /// Zulip's `password_auth_enabled`: some password is asked for.
    pub fn password(&self) -> bool {
        self.email || self.ldap
    }

    /// Whether an OpenID Connect provider is offered.
    pub fn oidc(&self) -> bool {
        self.external.iter().any(|m| m.name.starts_with("oidc:"))
    }

    /// Whether a SAML identity provider is offered.
    pub fn saml(&self) -> bool {
        self.external.iter().any(|m| m.name.starts_with("saml:"))
    }

    /// Zulip's `require_email_format_usernames`: false when the directory takes usernames.
    pub fn email_usernames(&self) -> bool {
        !self.ldap
    }

    /// `realm_authentication_methods`, by Zulip's backend names.
    pub fn realm_methods(&self) -> serde_json::Value {
        let method = |on: bool| serde_json::json!({"enabled": on, "available": on});
        let mut methods = serde_json::json!({"Email": method(self.email)});
        if self.ldap {
            methods["LDAP"] = method(true);
        }
        if self.oidc() {
            methods["OpenID Connect"] = method(true);
        }
        if self.saml() {
            methods["SAML"] = method(true);
        }
        methods
    }
}

/// How much may be uploaded.
#[derive(Debug, Clone, Copy)]
pub struct UploadLimits {
    /// The largest file, in MiB (`max_file_upload_size_mib`; Zulip's default is 25).
    pub max_file_mib: u64,
    /// The organization's total, in MiB (`realm_upload_quota_mib`); `None`: no quota.
    pub quota_mib: Option<u64>,
}

impl Default for UploadLimits {
    fn default() -> Self {
        UploadLimits {
            max_file_mib: 25,
            quota_mib: None,
        }
    }
}

impl UploadLimits {
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_mib * 1024 * 1024
    }

    pub fn quota_bytes(&self) -> Option<u64> {
        self.quota_mib.map(|q| q * 1024 * 1024)
    }
}

/// The Zulip feature level whose behaviour Chronicle implements (see docs/zulip-compat.md).
pub const ZULIP_FEATURE_LEVEL: u32 = 478;
/// Reported as `zulip_version`: the Zulip release line we follow, plus our own version.
pub const ZULIP_VERSION: &str = concat!("12.0-dev+chronicle-", env!("CARGO_PKG_VERSION"));
/// Reported as `zulip_merge_base`.
pub const ZULIP_MERGE_BASE: &str = "12.0-dev";

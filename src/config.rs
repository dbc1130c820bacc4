//! The server's configuration: a TOML file (`serve --config FILE`, or `CHRONICLE_CONFIG`),
//! `CHRONICLE_*` environment variables for single values, and command-line flags, in that
//! order of strength: a flag wins over the environment, the environment over the file, the file
//! over the default.
//!
//! Every setting has a dotted key (`bind`, `limits.requests_per_ip`, `cluster.nats`) listed in
//! [`KEYS`]: the file holds it as that key in its section, the environment as
//! `CHRONICLE_` followed by the key in capitals with `_` for the dot
//! (`CHRONICLE_LIMITS_REQUESTS_PER_IP`); a secret may also come from a file named by
//! `CHRONICLE_..._FILE` (its text, without the final newline). An unknown key or a value of the
//! wrong kind in the file stops start-up with the file's line and column; in the environment,
//! with the variable's name. Other `CHRONICLE_*` variables (the test harness's, the
//! benchmark's) are not settings and are left alone.
//!
//! `chronicle config check` prints the effective configuration, each value with where it came
//! from, secrets redacted.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The operator's settings, every one optional: what one source (the file, the environment,
/// the flags) says. [`Settings::defaults`] says what holds when none does.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Where the log (unless in a cluster), snapshots, uploads and secrets are kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// The address to listen on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// The URL clients use to reach the server, when it is not `http://<bind address>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_url: Option<String>,
    /// The first start's owner and organization name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realm_name: Option<String>,
    /// A projection snapshot every this many events (0: never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_every: Option<u64>,
    /// Also verify the records before the newest snapshot once the server serves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_whole_log: Option<bool>,
    /// Free space (MiB) to keep on the data directory's filesystem: below it writes are
    /// refused until space returns (0: no reserve). Default: the larger of 1 GiB and 1 % of
    /// the filesystem, at most a tenth of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_free_space_mib: Option<u64>,
    /// How log lines are written to standard error: `text` or `json` (one object a line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_format: Option<LogFormat>,
    #[serde(default, skip_serializing_if = "Limits::is_empty")]
    pub limits: Limits,
    #[serde(default, skip_serializing_if = "Uploads::is_empty")]
    pub uploads: Uploads,
    #[serde(default, skip_serializing_if = "Mail::is_empty")]
    pub mail: Mail,
    #[serde(default, skip_serializing_if = "EmailGatewaySettings::is_empty")]
    pub email_gateway: EmailGatewaySettings,
    #[serde(default, skip_serializing_if = "PushSettings::is_empty")]
    pub push: PushSettings,
    #[serde(default, skip_serializing_if = "VideoCallSettings::is_empty")]
    pub video_calls: VideoCallSettings,
    #[serde(default, skip_serializing_if = "Cluster::is_empty")]
    pub cluster: Cluster,
    #[serde(default, skip_serializing_if = "Outgoing::is_empty")]
    pub outgoing: Outgoing,
    #[serde(default, skip_serializing_if = "MetricsSettings::is_empty")]
    pub metrics: MetricsSettings,
    #[serde(default, skip_serializing_if = "AuthSettings::is_empty")]
    pub auth: AuthSettings,
    #[serde(default, skip_serializing_if = "LdapSettings::is_empty")]
    pub ldap: LdapSettings,
    #[serde(default, skip_serializing_if = "JwtSettings::is_empty")]
    pub jwt: JwtSettings,
    #[serde(default, skip_serializing_if = "ScimSettings::is_empty")]
    pub scim: ScimSettings,
    /// `[oidc.NAME]`: OpenID Connect providers, by the name their sign-in URLs carry.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub oidc: std::collections::BTreeMap<String, OidcSettings>,
    /// `[saml.NAME]`: SAML 2.0 identity providers, by the name their sign-in URLs carry.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub saml: std::collections::BTreeMap<String, SamlIdpSettings>,
}

/// How the server writes its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line, with the request's id in its span.
    Json,
}

/// `[limits]`: rate limits and client timeouts.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Authenticated API requests per minute per user (0: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_user: Option<usize>,
    /// Unauthenticated API requests per minute per address (0: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_ip: Option<usize>,
    /// Failed password logins per 30 minutes per username (0: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_logins: Option<usize>,
    /// Password checks one address may have in flight (0: no bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_checks_per_address: Option<usize>,
    /// Seconds a client has to send a request's line and headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_head_timeout_secs: Option<u64>,
    /// Seconds a client has to send a request's body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_body_timeout_secs: Option<u64>,
}

/// `[uploads]`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Uploads {
    /// The largest file a user may upload, in MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_file_mib: Option<u64>,
    /// The most the organization's uploads may take together, in MiB (absent: no quota).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota_mib: Option<u64>,
}

/// `[mail]`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mail {
    /// The SMTP relay: `smtp://HOST[:PORT]` in the clear (a relay on this machine or a trusted
    /// network), `smtp+starttls://HOST[:PORT]` (STARTTLS required, port 587 by default) or
    /// `smtps://HOST[:PORT]` (TLS from the start, port 465); absent: mail goes to
    /// `DATA_DIR/outbox/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smtp_url: Option<String>,
    /// The login at the relay, when it asks for one (over TLS, or to a relay on loopback).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smtp_username: Option<String>,
    /// A secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smtp_password: Option<String>,
    /// The certificate authority (PEM) of a relay whose certificate an organization issued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// The address emails come from (default `noreply@` the server's host name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_address: Option<String>,
}

/// `[email_gateway]`: mail to the gateway's addresses becomes messages (docs/notifications.md).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailGatewaySettings {
    /// Where the gateway's SMTP listener takes mail (`HOST:PORT`); absent: no gateway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// The domain of the gateway's addresses (default: the server's host name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The largest email taken, in MiB (default 25, Zulip's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_message_mib: Option<u64>,
}

/// `[push]`: mobile push notifications through Zulip's push notification service (the
/// "bouncer"), as a self-hosted Zulip server sends them (docs/notifications.md).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushSettings {
    /// The service (default `https://push.zulipchat.com`, Zulip's `ZULIP_SERVICES_URL`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// This server's registration with the service: its UUID (`zulip_org_id`) and key
    /// (`zulip_org_key`, a secret); push is off while either is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zulip_org_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zulip_org_key: Option<String>,
    /// "New message" instead of each notification's text (Zulip's
    /// `PUSH_NOTIFICATION_REDACT_CONTENT`; default off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redact_content: Option<bool>,
}

/// `[video_calls]`: the video call services organizations may choose (docs/operations.md).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoCallSettings {
    /// The Jitsi Meet server (default `https://meet.jit.si`, Zulip's; empty: no Jitsi).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitsi_server_url: Option<String>,
    /// A BigBlueButton server's API base URL (`https://bbb.example.com/bigbluebutton/`) and
    /// its shared secret; BigBlueButton is offered when both are set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub big_blue_button_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub big_blue_button_secret: Option<String>,
    /// A Nextcloud server with Talk (at the root of its host, as Zulip's `NEXTCLOUD_SERVER`),
    /// and the account and app password calls are made with; offered when all three are set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nextcloud_server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nextcloud_talk_username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nextcloud_talk_password: Option<String>,
    /// Constructor Groups: its API URL and the server's access and secret keys; offered when
    /// all three are set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constructor_groups_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constructor_groups_access_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constructor_groups_secret_key: Option<String>,
}

/// `[cluster]`: the log in a NATS JetStream stream.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// Comma-separated `nats://HOST:PORT` URLs; absent: the log is `DATA_DIR/log`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nats: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<usize>,
    /// The URL the other nodes reach this one at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advertise_url: Option<String>,
}

/// `[outgoing]`: requests the server makes to addresses people give it.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outgoing {
    /// Addresses or CIDR ranges reached although private or loopback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
}

/// `[metrics]`: where `GET /metrics` is served.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSettings {
    /// A separate address serving `/metrics` without credentials (loopback, or a management
    /// network).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// A bearer token that opens `/metrics` on the main address (a secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// `[auth]`: which ways of signing in the organization offers besides the directories and
/// providers configured in their own sections.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// Sign-in with an email address and a password kept by Chronicle (Zulip's
    /// `EmailAuthBackend`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<bool>,
    /// Two-factor authentication (authenticator codes and backup codes) for password sign-in:
    /// people may switch it on in their settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub two_factor: Option<bool>,
    /// Owners and administrators must have two-factor authentication to sign in with a
    /// password: one who has none sets it up as part of the web login.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub two_factor_required_for_admins: Option<bool>,
    /// The entity ID Chronicle has at SAML identity providers (default: the server's external
    /// URL); its metadata is at `EXTERNAL_URL/saml/metadata.xml`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saml_sp_entity_id: Option<String>,
}

/// `[ldap]`: sign-in by a bind to an LDAP directory (OpenLDAP, Active Directory, FreeIPA) and
/// the directory sync. Off unless `url` is set.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LdapSettings {
    /// `ldap://HOST[:PORT]` or `ldaps://HOST[:PORT]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Upgrade an `ldap://` connection with StartTLS before anything is sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starttls: Option<bool>,
    /// PEM certificates of the CAs the directory's certificate is checked against (absent:
    /// the system's trusted CAs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// The account Chronicle searches the directory as (absent: an anonymous search).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind_dn: Option<String>,
    /// Its password (a secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind_password: Option<String>,
    /// Where people are searched for (the whole subtree).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_base: Option<String>,
    /// The filter that finds the person who signs in; `{login}` stands for what they typed
    /// (escaped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_filter: Option<String>,
    /// The filter that lists everyone the sync considers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub everyone_filter: Option<String>,
    /// The attribute holding a person's email address, and their full name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email_attr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_attr: Option<String>,
    /// The attribute holding a person's photo (JPEG bytes), made their avatar.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avatar_attr: Option<String>,
    /// Custom profile fields (by name) and the attributes their values come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_fields: Option<std::collections::BTreeMap<String, String>>,
    /// Create the account of a person the directory knows when they first sign in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_users: Option<bool>,
    /// Where groups are searched for (a person's groups: those naming their DN as `member` or
    /// `uniqueMember`, or their `uid` as `memberUid`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_base: Option<String>,
    /// The DNs of the groups whose members are owners, administrators, moderators, guests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moderator_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_group: Option<String>,
    /// Directory groups (by `cn`) kept in step with the user groups of the same name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synced_groups: Option<Vec<String>>,
    /// Seconds between syncs in the server (0: only `chronicle ldap-sync`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_every_secs: Option<u64>,
    /// Deactivate people the directory no longer has (default: when password sign-in is off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deactivate_missing: Option<bool>,
    /// Seconds to wait for the directory's answer to each step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// `[jwt]`: sign-in by a JSON Web Token that the organization's own service signs with a shared
/// key (`POST /jwt/fetch_api_key`, `/accounts/login/jwt/`). Off unless `key` is set.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtSettings {
    /// The shared key (a secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The algorithms tokens may be signed with: HS256, HS384, HS512.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algorithms: Option<Vec<String>>,
}

/// `[scim]`: provisioning by SCIM 2.0 (`/scim/v2`), as Zulip offers it for Okta and Entra ID:
/// the identity provider creates, changes and deactivates accounts. Off unless `token` is set.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScimSettings {
    /// The bearer token the SCIM client sends (a secret; Zulip's `bearer_token`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The client's name, for the server's log lines (Zulip's `scim_client_name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    /// Names as `name.formatted` (true) or as `name.givenName` and `name.familyName` (false,
    /// for Okta), as Zulip's `name_formatted_included`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_formatted_included: Option<bool>,
}

/// `[oidc.NAME]`: one OpenID Connect provider (Keycloak, Authentik, Okta, Entra ID, Google):
/// sign-in by the authorization code flow with PKCE.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcSettings {
    /// The provider's issuer URL (its discovery document is at
    /// `ISSUER/.well-known/openid-configuration`).
    pub issuer: String,
    /// The client registered for Chronicle there (its redirect URI:
    /// `EXTERNAL_URL/complete/oidc/`).
    pub client_id: String,
    /// Its secret (a secret), or a file holding it; neither for a public client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_file: Option<PathBuf>,
    /// The button's words (default: the provider's name) and icon URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_icon: Option<String>,
    /// Scopes asked for besides `openid` (default: `email`, `profile`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Create the account of a person the provider vouches for at their first sign-in
    /// (Zulip's `auto_signup`; default: off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_users: Option<bool>,
    /// Take an address whose ID token has no `email_verified` claim (default: refused). Only
    /// for a provider that gives addresses it checked without saying so: accounts are matched
    /// by address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_unverified_email: Option<bool>,
    /// The ID token claim listing a person's groups (e.g. `groups`), for the roles and the
    /// synced groups below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_claim: Option<String>,
    /// The groups whose members are owners, administrators, moderators, guests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moderator_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_group: Option<String>,
    /// Provider groups kept in step with the user groups of the same name at each sign-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synced_groups: Option<Vec<String>>,
    /// Seconds to wait for each answer of the provider (default: 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// `[saml.NAME]`: one SAML 2.0 identity provider (Okta, Entra ID, ADFS, Keycloak, Authentik,
/// Shibboleth): its metadata from a file or a URL, or its sign-on URL, entity ID and
/// certificate given one by one; and how its attributes map to a person.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamlIdpSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_url: Option<String>,
    /// Its entity ID: which entity of a federation's metadata, or, with `sso_url`, the
    /// provider's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity_id: Option<String>,
    /// Without metadata: its single sign-on URL (HTTP-Redirect binding) and its signing
    /// certificate (PEM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sso_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<PathBuf>,
    /// The button's words (default: the provider's name) and icon URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_icon: Option<String>,
    /// Create the account of a person it vouches for at their first sign-in (default: off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_users: Option<bool>,
    /// The attributes (by `Name` or `FriendlyName`) of the address (default `email`, else an
    /// email-format `NameID`), the given and family names (`first_name`, `last_name`), or the
    /// whole name, and the groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email_attribute: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_name_attribute: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_name_attribute: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_name_attribute: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_attribute: Option<String>,
    /// The groups whose members are owners, administrators, moderators, guests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moderator_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_group: Option<String>,
    /// Provider groups kept in step with the user groups of the same name at each sign-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synced_groups: Option<Vec<String>>,
    /// Seconds to wait for the metadata URL (default: 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

macro_rules! is_empty {
    ($($t:ty),*) => {$(
        impl $t {
            fn is_empty(&self) -> bool {
                *self == <$t>::default()
            }
        }
    )*};
}
is_empty!(
    Limits,
    Uploads,
    Mail,
    EmailGatewaySettings,
    PushSettings,
    VideoCallSettings,
    Cluster,
    Outgoing,
    MetricsSettings,
    AuthSettings,
    LdapSettings,
    JwtSettings,
    ScimSettings
);

/// One setting: its dotted key, and whether its value is a secret (never printed; may come
/// from `CHRONICLE_..._FILE`).
pub struct Key {
    pub name: &'static str,
    pub secret: bool,
}

const fn key(name: &'static str) -> Key {
    Key {
        name,
        secret: false,
    }
}

/// Every setting, in the order `config check` prints them.
pub const KEYS: &[Key] = &[
    key("data_dir"),
    key("bind"),
    key("external_url"),
    key("owner_email"),
    key("realm_name"),
    key("snapshot_every"),
    key("check_whole_log"),
    key("min_free_space_mib"),
    key("log_format"),
    key("limits.requests_per_user"),
    key("limits.requests_per_ip"),
    key("limits.failed_logins"),
    key("limits.password_checks_per_address"),
    key("limits.client_head_timeout_secs"),
    key("limits.client_body_timeout_secs"),
    key("uploads.max_file_mib"),
    key("uploads.quota_mib"),
    key("mail.smtp_url"),
    key("mail.smtp_username"),
    Key {
        name: "mail.smtp_password",
        secret: true,
    },
    key("mail.ca_file"),
    key("mail.from_address"),
    key("email_gateway.listen"),
    key("email_gateway.domain"),
    key("email_gateway.max_message_mib"),
    key("push.url"),
    key("push.zulip_org_id"),
    Key {
        name: "push.zulip_org_key",
        secret: true,
    },
    key("push.redact_content"),
    key("video_calls.jitsi_server_url"),
    key("video_calls.big_blue_button_url"),
    Key {
        name: "video_calls.big_blue_button_secret",
        secret: true,
    },
    key("video_calls.nextcloud_server"),
    key("video_calls.nextcloud_talk_username"),
    Key {
        name: "video_calls.nextcloud_talk_password",
        secret: true,
    },
    key("video_calls.constructor_groups_url"),
    Key {
        name: "video_calls.constructor_groups_access_key",
        secret: true,
    },
    Key {
        name: "video_calls.constructor_groups_secret_key",
        secret: true,
    },
    key("cluster.nats"),
    key("cluster.stream"),
    key("cluster.replicas"),
    key("cluster.advertise_url"),
    key("outgoing.allow"),
    key("metrics.bind"),
    Key {
        name: "metrics.token",
        secret: true,
    },
    key("auth.password"),
    key("auth.two_factor"),
    key("auth.two_factor_required_for_admins"),
    key("auth.saml_sp_entity_id"),
    key("ldap.url"),
    key("ldap.starttls"),
    key("ldap.ca_file"),
    key("ldap.bind_dn"),
    Key {
        name: "ldap.bind_password",
        secret: true,
    },
    key("ldap.user_base"),
    key("ldap.user_filter"),
    key("ldap.everyone_filter"),
    key("ldap.email_attr"),
    key("ldap.name_attr"),
    key("ldap.avatar_attr"),
    key("ldap.profile_fields"),
    key("ldap.create_users"),
    key("ldap.group_base"),
    key("ldap.owner_group"),
    key("ldap.admin_group"),
    key("ldap.moderator_group"),
    key("ldap.guest_group"),
    key("ldap.synced_groups"),
    key("ldap.sync_every_secs"),
    key("ldap.deactivate_missing"),
    key("ldap.timeout_secs"),
    Key {
        name: "jwt.key",
        secret: true,
    },
    key("jwt.algorithms"),
    Key {
        name: "scim.token",
        secret: true,
    },
    key("scim.client_name"),
    key("scim.name_formatted_included"),
];

/// The environment variable of a dotted key.
pub fn env_name(key: &str) -> String {
    format!("CHRONICLE_{}", key.replace('.', "_").to_ascii_uppercase())
}

/// The default snapshot interval: at about 70,000 events/s of fold, a start replays at most
/// a second or two of log after its snapshot.
pub const DEFAULT_SNAPSHOT_EVERY: u64 = 100_000;

/// Zulip's `DEFAULT_RATE_LIMITING_RULES`: authenticated API requests a minute per user,
/// unauthenticated ones a minute per address, failed logins per 30 minutes per username.
pub const DEFAULT_REQUESTS_PER_USER: usize = 200;
pub const DEFAULT_REQUESTS_PER_IP: usize = 100;
pub const DEFAULT_FAILED_LOGINS: usize = 5;
/// Password checks that one address may have in flight at once, by default.
pub const DEFAULT_PASSWORD_CHECKS_PER_ADDRESS: usize = 2;

impl Settings {
    /// What holds when nothing says otherwise.
    pub fn defaults() -> Settings {
        Settings {
            data_dir: Some(PathBuf::from("./data")),
            bind: Some("127.0.0.1:9991".into()),
            external_url: None,
            owner_email: Some("owner@chronicle.local".into()),
            realm_name: Some("Chronicle".into()),
            snapshot_every: Some(DEFAULT_SNAPSHOT_EVERY),
            check_whole_log: Some(false),
            min_free_space_mib: None,
            log_format: Some(LogFormat::Text),
            limits: Limits {
                requests_per_user: Some(DEFAULT_REQUESTS_PER_USER),
                requests_per_ip: Some(DEFAULT_REQUESTS_PER_IP),
                failed_logins: Some(DEFAULT_FAILED_LOGINS),
                password_checks_per_address: Some(DEFAULT_PASSWORD_CHECKS_PER_ADDRESS),
                client_head_timeout_secs: Some(5),
                client_body_timeout_secs: Some(30),
            },
            uploads: Uploads {
                max_file_mib: Some(25),
                quota_mib: None,
            },
            mail: Mail::default(),
            email_gateway: EmailGatewaySettings::default(),
            push: PushSettings::default(),
            video_calls: VideoCallSettings {
                jitsi_server_url: Some("https://meet.jit.si".into()),
                ..VideoCallSettings::default()
            },
            cluster: Cluster {
                nats: None,
                stream: Some("chronicle".into()),
                replicas: Some(3),
                advertise_url: None,
            },
            outgoing: Outgoing {
                allow: Some(Vec::new()),
            },
            metrics: MetricsSettings::default(),
            auth: AuthSettings {
                password: Some(true),
                two_factor: Some(true),
                two_factor_required_for_admins: Some(false),
                saml_sp_entity_id: None,
            },
            ldap: LdapSettings {
                starttls: Some(false),
                user_filter: Some("(|(uid={login})(mail={login}))".into()),
                everyone_filter: Some("(|(objectClass=inetOrgPerson)(objectClass=user))".into()),
                email_attr: Some("mail".into()),
                name_attr: Some("cn".into()),
                avatar_attr: Some("jpegPhoto".into()),
                create_users: Some(true),
                synced_groups: Some(Vec::new()),
                sync_every_secs: Some(3600),
                timeout_secs: Some(5),
                ..LdapSettings::default()
            },
            jwt: JwtSettings {
                key: None,
                algorithms: Some(vec!["HS256".into()]),
            },
            scim: ScimSettings {
                token: None,
                client_name: Some("scim".into()),
                name_formatted_included: Some(true),
            },
            oidc: Default::default(),
            saml: Default::default(),
        }
    }

    fn table(&self) -> toml::Table {
        match toml::Value::try_from(self) {
            Ok(toml::Value::Table(table)) => table,
            _ => toml::Table::new(),
        }
    }
}

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Environment(String),
    Flag,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => write!(f, "default"),
            Source::File(path) => write!(f, "file {}", path.display()),
            Source::Environment(name) => write!(f, "environment {name}"),
            Source::Flag => write!(f, "flag"),
        }
    }
}

/// The configuration in force: every setting's value and where it came from.
#[derive(Debug, Clone)]
pub struct Effective {
    pub settings: Settings,
    sources: Vec<(&'static str, Source)>,
}

/// Reads the file at `path`: its settings, or an error naming the file, the line and the key.
pub fn read_file(path: &Path) -> Result<Settings, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the configuration file {}: {e}", path.display()))?;
    toml::from_str::<Settings>(&text).map_err(|e| {
        format!(
            "configuration file {}: {}",
            path.display(),
            e.to_string().trim_end()
        )
    })
}

/// The settings the environment gives (`get` reads a variable), each checked on its own so
/// that an error names the variable.
pub fn read_environment(get: &dyn Fn(&str) -> Option<String>) -> Result<Settings, String> {
    let mut merged = toml::Table::new();
    for key in KEYS {
        let name = env_name(key.name);
        let text = match (get(&name), key.secret) {
            (Some(text), _) => text,
            (None, true) => match get(&format!("{name}_FILE")) {
                Some(path) => std::fs::read_to_string(&path)
                    .map_err(|e| format!("{name}_FILE: cannot read {path}: {e}"))?
                    .trim_end_matches(['\n', '\r'])
                    .to_owned(),
                None => continue,
            },
            (None, false) => continue,
        };
        // A value is read as TOML (a number, a boolean, a list) when it parses as one, else as
        // text: `CHRONICLE_BIND=0.0.0.0:80` needs no quotes.
        let value = toml::from_str::<toml::Table>(&format!("v = {text}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or(toml::Value::String(text));
        let mut one = toml::Table::new();
        insert(&mut one, key.name, value);
        toml::Value::Table(one.clone())
            .try_into::<Settings>()
            .map_err(|e| format!("{name}: {}", e.to_string().trim_end()))?;
        merge(&mut merged, one);
    }
    toml::Value::Table(merged)
        .try_into::<Settings>()
        .map_err(|e| format!("environment: {e}"))
}

fn insert(table: &mut toml::Table, dotted: &str, value: toml::Value) {
    match dotted.split_once('.') {
        None => {
            table.insert(dotted.to_owned(), value);
        }
        Some((section, rest)) => {
            let inner = table
                .entry(section.to_owned())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if let toml::Value::Table(inner) = inner {
                insert(inner, rest, value);
            }
        }
    }
}

fn lookup<'t>(table: &'t toml::Table, dotted: &str) -> Option<&'t toml::Value> {
    match dotted.split_once('.') {
        None => table.get(dotted),
        Some((section, rest)) => lookup(table.get(section)?.as_table()?, rest),
    }
}

/// `over`'s values replace `base`'s, section by section.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (name, value) in over {
        match (base.get_mut(&name), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(over_inner)) => {
                merge(inner, over_inner)
            }
            (_, value) => {
                base.insert(name, value);
            }
        }
    }
}

/// Names the source of a key's value in one layer.
type SourceOf = Box<dyn Fn(&str) -> Source>;

/// The configuration in force: `flags` over the environment over the file over the defaults.
/// The file is `file` when given, else the one `CHRONICLE_CONFIG` names, else none.
pub fn resolve(
    flags: &Settings,
    file: Option<&Path>,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Effective, String> {
    let file_path = file
        .map(Path::to_path_buf)
        .or_else(|| get("CHRONICLE_CONFIG").map(PathBuf::from));
    let layers: Vec<(toml::Table, SourceOf)> = vec![
        (Settings::defaults().table(), Box::new(|_| Source::Default)),
        match &file_path {
            Some(path) => {
                let path = path.clone();
                (
                    read_file(&path)?.table(),
                    Box::new(move |_| Source::File(path.clone())),
                )
            }
            None => (toml::Table::new(), Box::new(|_| Source::Default)),
        },
        (
            read_environment(get)?.table(),
            Box::new(|key| Source::Environment(env_name(key))),
        ),
        (flags.table(), Box::new(|_| Source::Flag)),
    ];
    let mut merged = toml::Table::new();
    let mut sources: Vec<(&'static str, Source)> =
        KEYS.iter().map(|k| (k.name, Source::Default)).collect();
    for (table, source) in layers {
        for (name, from) in sources.iter_mut() {
            if lookup(&table, name).is_some() {
                *from = source(name);
            }
        }
        merge(&mut merged, table);
    }
    let settings = toml::Value::Table(merged)
        .try_into::<Settings>()
        .map_err(|e| format!("configuration: {e}"))?;
    Ok(Effective { settings, sources })
}

impl Effective {
    /// Where `key`'s value came from.
    pub fn source(&self, key: &str) -> Option<&Source> {
        self.sources.iter().find(|(k, _)| *k == key).map(|(_, s)| s)
    }

    /// The configuration as TOML lines, `key = value  # source`, secrets redacted and unset
    /// values commented out.
    pub fn report(&self) -> String {
        let table = self.settings.table();
        let mut out = String::new();
        let mut section = "";
        for key in KEYS {
            let (this_section, name) = key.name.split_once('.').unwrap_or(("", key.name));
            if this_section != section {
                out.push_str(&format!("\n[{this_section}]\n"));
                section = this_section;
            }
            let source = self
                .source(key.name)
                .map_or_else(|| "default".to_owned(), ToString::to_string);
            match lookup(&table, key.name) {
                Some(_) if key.secret => {
                    out.push_str(&format!("{name} = \"[redacted]\"  # {source}\n"))
                }
                Some(value) => out.push_str(&format!("{name} = {value}  # {source}\n")),
                None => out.push_str(&format!("# {name} is not set\n")),
            }
        }
        // OpenID Connect providers, each its own section, the client secret redacted.
        for (name, provider) in &self.settings.oidc {
            let mut shown = provider.clone();
            if shown.client_secret.is_some() {
                shown.client_secret = Some("[redacted]".into());
            }
            let mut section = toml::Table::new();
            section.insert(
                "oidc".into(),
                toml::Value::Table(toml::Table::from_iter([(
                    name.clone(),
                    toml::Value::try_from(&shown).unwrap_or(toml::Value::Table(Default::default())),
                )])),
            );
            out.push('\n');
            out.push_str(&toml::to_string(&section).unwrap_or_default());
        }
        // SAML identity providers (nothing of theirs is secret: certificates are public).
        if !self.settings.saml.is_empty() {
            let mut section = toml::Table::new();
            section.insert(
                "saml".into(),
                toml::Value::try_from(&self.settings.saml)
                    .unwrap_or(toml::Value::Table(Default::default())),
            );
            out.push('\n');
            out.push_str(&toml::to_string(&section).unwrap_or_default());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chronicle.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_file_which_beats_the_default() {
        let (_dir, path) = file(
            "bind = \"0.0.0.0:8000\"\nrealm_name = \"From file\"\n[limits]\nrequests_per_ip = 7\nrequests_per_user = 9\n",
        );
        let flags = Settings {
            bind: Some("127.0.0.1:1".into()),
            ..Settings::default()
        };
        let got = resolve(
            &flags,
            Some(&path),
            &env(&[
                ("CHRONICLE_LIMITS_REQUESTS_PER_IP", "11"),
                ("CHRONICLE_BIND", "10.0.0.1:2"),
                ("CHRONICLE_BIN", "/not/a/setting"),
            ]),
        )
        .unwrap();
        let s = &got.settings;
        assert_eq!(s.bind.as_deref(), Some("127.0.0.1:1"));
        assert_eq!(s.limits.requests_per_ip, Some(11));
        assert_eq!(s.limits.requests_per_user, Some(9));
        assert_eq!(s.realm_name.as_deref(), Some("From file"));
        assert_eq!(s.owner_email.as_deref(), Some("owner@chronicle.local"));
        assert_eq!(got.source("bind"), Some(&Source::Flag));
        assert_eq!(
            got.source("limits.requests_per_ip"),
            Some(&Source::Environment(
                "CHRONICLE_LIMITS_REQUESTS_PER_IP".into()
            ))
        );
        assert_eq!(got.source("realm_name"), Some(&Source::File(path.clone())));
        assert_eq!(got.source("owner_email"), Some(&Source::Default));
        let report = got.report();
        assert!(
            report.contains("bind = \"127.0.0.1:1\"  # flag"),
            "{report}"
        );
        assert!(
            report.contains("[limits]\nrequests_per_user = 9  # file"),
            "{report}"
        );
        assert!(report.contains("# external_url is not set"), "{report}");
        // A secret is never printed, and may come from a file named in the environment.
        let secret_dir = tempfile::tempdir().unwrap();
        let token_file = secret_dir.path().join("token");
        std::fs::write(&token_file, "s3cret-token\n").unwrap();
        let token_path = token_file.display().to_string();
        let got = resolve(
            &Settings::default(),
            None,
            &env(&[("CHRONICLE_METRICS_TOKEN_FILE", &token_path)]),
        )
        .unwrap();
        assert_eq!(got.settings.metrics.token.as_deref(), Some("s3cret-token"));
        let report = got.report();
        assert!(!report.contains("s3cret"), "{report}");
        assert!(
            report.contains("token = \"[redacted]\"  # environment CHRONICLE_METRICS_TOKEN"),
            "{report}"
        );
        // CHRONICLE_CONFIG names the file when no flag does.
        let path_text = path.display().to_string();
        let got = resolve(
            &Settings::default(),
            None,
            &env(&[("CHRONICLE_CONFIG", &path_text)]),
        )
        .unwrap();
        assert_eq!(got.settings.bind.as_deref(), Some("0.0.0.0:8000"));
    }

    #[test]
    fn an_unknown_key_or_a_bad_value_is_named_with_its_line() {
        let (_dir, path) = file("bind = \"x\"\n\n[limits]\nrequest_per_ip = 3\n");
        let error = resolve(&Settings::default(), Some(&path), &env(&[])).unwrap_err();
        assert!(error.contains("line 4"), "{error}");
        assert!(error.contains("request_per_ip"), "{error}");
        assert!(error.contains(&path.display().to_string()), "{error}");
        let (_dir, path) = file("snapshot_every = \"often\"\n");
        let error = resolve(&Settings::default(), Some(&path), &env(&[])).unwrap_err();
        assert!(
            error.contains("line 1") && error.contains("snapshot_every"),
            "{error}"
        );
        let (_dir, path) = file("[nonsense]\nx = 1\n");
        let error = resolve(&Settings::default(), Some(&path), &env(&[])).unwrap_err();
        assert!(
            error.contains("line 1") && error.contains("nonsense"),
            "{error}"
        );
        let error = resolve(
            &Settings::default(),
            None,
            &env(&[("CHRONICLE_UPLOADS_MAX_FILE_MIB", "lots")]),
        )
        .unwrap_err();
        assert!(
            error.starts_with("CHRONICLE_UPLOADS_MAX_FILE_MIB:"),
            "{error}"
        );
        let error = resolve(
            &Settings::default(),
            Some(Path::new("/no/such/chronicle.toml")),
            &env(&[]),
        )
        .unwrap_err();
        assert!(error.contains("/no/such/chronicle.toml"), "{error}");
    }

    #[test]
    fn an_identity_providers_secret_is_redacted_and_a_bad_key_named() {
        let (_dir, path) = file(
            "[oidc.corp]\nissuer = \"https://sso.example.com\"\nclient_id = \"chat\"\nclient_secret = \"oidc-s3cret\"\n",
        );
        let got = resolve(&Settings::default(), Some(&path), &env(&[])).unwrap();
        assert_eq!(
            got.settings.oidc["corp"].client_secret.as_deref(),
            Some("oidc-s3cret")
        );
        let report = got.report();
        assert!(report.contains("[oidc.corp]"), "{report}");
        assert!(
            report.contains("client_secret = \"[redacted]\""),
            "{report}"
        );
        assert!(!report.contains("oidc-s3cret"), "{report}");
        let (_dir, path) = file("[oidc.corp]\nissuer = \"https://sso.example.com\"\nclient_id = \"chat\"\nclient_sercet = \"x\"\n");
        let error = read_file(&path).unwrap_err();
        assert!(
            error.contains("client_sercet") && error.contains("line 4"),
            "{error}"
        );
    }

    #[test]
    fn every_key_is_a_setting_and_the_example_file_sets_them_all() {
        let example = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/chronicle.example.toml"),
        )
        .unwrap();
        // The example's settings are commented out; uncommented, they parse.
        let uncommented: String = example
            .lines()
            .map(|l| {
                l.strip_prefix("# ")
                    .filter(|r| r.contains(" = ") || (r.starts_with('[') && r.ends_with(']')))
                    .unwrap_or(l)
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let parsed: Settings = toml::from_str(&uncommented).unwrap();
        let table = parsed.table();
        for key in KEYS {
            assert!(
                lookup(&table, key.name).is_some(),
                "the example lacks {}",
                key.name
            );
            let mut one = toml::Table::new();
            insert(
                &mut one,
                key.name,
                lookup(&table, key.name).unwrap().clone(),
            );
            assert!(
                toml::Value::Table(one).try_into::<Settings>().is_ok(),
                "{}",
                key.name
            );
        }
        // The provider example is a whole provider.
        assert_eq!(parsed.oidc["keycloak"].client_id, "chronicle");
        // And the file as shipped (all commented out) is the defaults.
        let shipped: Settings = toml::from_str(&example).unwrap();
        assert_eq!(shipped, Settings::default());
    }
}

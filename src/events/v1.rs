//! Schema version 1 of the stored events. `schema/events-v1.md` documents every variant.
//!
//! Names of variants and fields are a storage contract: a change means freezing this file,
//! adding `v2.rs` and an upcast, and a fixture of v1 bytes in `replay-fixtures/`.

use crate::ids::UserId;
use serde::{Deserialize, Serialize};

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

/// Everything that ever happened, in past tense. Each variant carries every non-deterministic
/// input (ids, generated nonces, password hashes); the envelope carries time and actor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// The organization came into being (always the first event of a log).
    RealmCreated { name: String, description: String },
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
}

impl Event {
    /// The variant name, as listed by `GET /admin/events` and in `schema/`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::RealmCreated { .. } => "RealmCreated",
            Event::UserCreated { .. } => "UserCreated",
            Event::ApiKeyRegenerated { .. } => "ApiKeyRegenerated",
            Event::UserDeactivated { .. } => "UserDeactivated",
            Event::UserReactivated { .. } => "UserReactivated",
        }
    }
}

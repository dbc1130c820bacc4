//! How people prove who they are, besides the passwords Chronicle keeps: the organization's
//! directory, a JSON Web Token its own service signs, an OpenID Connect provider, or a SAML 2.0
//! identity provider. Every way ends where a password sign-in ends, a person identified, and
//! whatever the directory says about them is decided through commands
//! (`commands::directory`) like any other change.

pub mod jwt;
pub mod ldap;
pub mod oidc;
pub mod saml;
pub mod scim_filter;
pub mod two_factor;
pub mod xml;
pub mod xmldsig;

use crate::commands::directory::SyncRules;
use crate::config::Settings;
use crate::events::AvatarImage;
use std::sync::Arc;
use std::time::Duration;

/// The ways of signing in the server offers.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Passwords Chronicle keeps (Zulip's email backend).
    pub password: bool,
    /// Two-factor authentication for password sign-in (`[auth] two_factor`).
    pub two_factor: bool,
    /// Owners and administrators must have it (`[auth] two_factor_required_for_admins`).
    pub two_factor_required_for_admins: bool,
    /// An LDAP directory.
    pub ldap: Option<Arc<ldap::Directory>>,
    /// The key of JSON Web Tokens the organization's own service signs.
    pub jwt: Option<jwt::JwtKey>,
    /// SCIM provisioning (`[scim]`), when a token is configured.
    pub scim: Option<Scim>,
    /// OpenID Connect providers, in the order of their buttons (by name).
    pub oidc: Vec<Arc<oidc::Provider>>,
    /// SAML 2.0 identity providers, in the order of their buttons (by name).
    pub saml: Vec<Arc<saml::Idp>>,
    /// The entity ID Chronicle has at them, when not the server's external URL.
    pub saml_sp_entity_id: Option<String>,
    /// Create the account of a person the directory knows at their first sign-in.
    pub create_users: bool,
    /// How the sync treats what the directory does not say.
    pub rules: SyncRules,
    /// How often the server syncs with the directory on its own.
    pub sync_every: Option<Duration>,
    /// Directory photos already made avatars, by the SHA-256 of their bytes, so that a sync
    /// resizes each photo once.
    photos: Arc<std::sync::Mutex<std::collections::HashMap<[u8; 32], AvatarImage>>>,
}

/// What SCIM provisioning needs to know.
#[derive(Clone)]
pub struct Scim {
    /// The whole `Authorization` header a client must send (`Bearer TOKEN`).
    pub authorization: String,
    pub client_name: String,
    pub name_formatted_included: bool,
}

impl std::fmt::Debug for Scim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scim")
            .field("client_name", &self.client_name)
            .field("name_formatted_included", &self.name_formatted_included)
            .finish_non_exhaustive()
    }
}

impl Scim {
    fn from_settings(s: &crate::config::ScimSettings) -> Result<Option<Scim>, String> {
        let Some(token) = &s.token else {
            return Ok(None);
        };
        if token.trim().len() < 16 {
            return Err("scim.token: use at least 16 characters (a long random string)".into());
        }
        Ok(Some(Scim {
            authorization: format!("Bearer {}", token.trim()),
            client_name: s.client_name.clone().unwrap_or_else(|| "scim".into()),
            name_formatted_included: s.name_formatted_included.unwrap_or(true),
        }))
    }
}

impl Default for Identity {
    /// Passwords only.
    fn default() -> Identity {
        Identity {
            password: true,
            two_factor: true,
            two_factor_required_for_admins: false,
            ldap: None,
            jwt: None,
            scim: None,
            oidc: Vec::new(),
            saml: Vec::new(),
            saml_sp_entity_id: None,
            create_users: false,
            rules: SyncRules::default(),
            sync_every: None,
            photos: Default::default(),
        }
    }
}

impl Identity {
    /// What the configuration switches on; an error names the setting at fault.
    /// Requests to identity providers go through `guard`.
    pub fn from_settings(
        s: &Settings,
        guard: Arc<crate::outgoing::Guard>,
    ) -> Result<Identity, String> {
        let password = s.auth.password.unwrap_or(true);
        let ldap = ldap::Directory::from_settings(&s.ldap)?.map(Arc::new);
        let rules = SyncRules {
            // As Zulip: people the directory lost are deactivated when it is the only way in.
            deactivate_missing: s.ldap.deactivate_missing.unwrap_or(!password),
            synced_groups: ldap
                .as_ref()
                .map(|d| d.synced_groups().to_vec())
                .unwrap_or_default(),
        };
        Ok(Identity {
            password,
            two_factor: s.auth.two_factor.unwrap_or(true),
            two_factor_required_for_admins: s.auth.two_factor_required_for_admins.unwrap_or(false),
            create_users: s.ldap.create_users.unwrap_or(true),
            sync_every: ldap
                .as_ref()
                .and(s.ldap.sync_every_secs)
                .filter(|secs| *secs > 0)
                .map(Duration::from_secs),
            ldap,
            jwt: jwt_key(&s.jwt)?,
            scim: Scim::from_settings(&s.scim)?,
            oidc: s
                .oidc
                .iter()
                .map(|(name, p)| {
                    oidc::Provider::from_settings(name, p, guard.clone()).map(Arc::new)
                })
                .collect::<Result<_, _>>()?,
            saml: s
                .saml
                .iter()
                .map(|(name, p)| saml::Idp::from_settings(name, p, guard.clone()).map(Arc::new))
                .collect::<Result<_, _>>()?,
            saml_sp_entity_id: s
                .auth
                .saml_sp_entity_id
                .clone()
                .filter(|e| !e.trim().is_empty()),
            rules,
            photos: Default::default(),
        })
    }

    /// What the directory says of `person`, their photo (if any) stored as an avatar at
    /// Zulip's two sizes. A photo that is not an image within the avatar bounds is left out.
    pub async fn entry_of(
        &self,
        uploads: &crate::uploads::UploadStore,
        person: ldap::Person,
    ) -> crate::commands::directory::Entry {
        let mut entry = person.entry;
        if let Some(photo) = person.photo {
            entry.avatar = self.avatar_of(uploads, photo).await;
        }
        entry
    }

    async fn avatar_of(
        &self,
        uploads: &crate::uploads::UploadStore,
        photo: Vec<u8>,
    ) -> Option<AvatarImage> {
        use sha2::Digest;
        let digest: [u8; 32] = sha2::Sha256::digest(&photo).into();
        if let Some(image) = self.photos.lock().ok()?.get(&digest) {
            return Some(image.clone());
        }
        let store = uploads.clone();
        let made = tokio::time::timeout(
            Duration::from_secs(10),
            tokio::task::spawn_blocking(move || -> Option<AvatarImage> {
                let (small, medium) = crate::avatars::resize_upload(&photo).ok()?;
                Some(AvatarImage {
                    sha256: store.put(&small).ok()?,
                    medium_sha256: store.put(&medium).ok()?,
                })
            }),
        )
        .await
        .ok()?
        .ok()??;
        self.photos.lock().ok()?.insert(digest, made.clone());
        Some(made)
    }
}

/// The JWT key `[jwt]` configures, if any.
fn jwt_key(s: &crate::config::JwtSettings) -> Result<Option<jwt::JwtKey>, String> {
    let Some(key) = s.key.as_deref() else {
        return Ok(None);
    };
    if key.len() < 32 {
        return Err(
            "jwt.key must be at least 32 characters (RFC 7518: the key as long as the hash)".into(),
        );
    }
    let algorithms = s
        .algorithms
        .clone()
        .unwrap_or_else(|| vec!["HS256".into()])
        .iter()
        .map(|name| {
            jwt::Algorithm::from_name(name)
                .ok_or_else(|| format!("jwt.algorithms: {name} is not one of HS256, HS384, HS512"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if algorithms.is_empty() {
        return Err("jwt.algorithms must name at least one algorithm".into());
    }
    Ok(Some(jwt::JwtKey::new(key.as_bytes(), algorithms)))
}

/// One sync with the directory: everyone it lists, brought in by
/// `commands::directory::sync` as the server's own change. Refused (nothing changed) when the
/// directory cannot be asked or the sync would deactivate most of the organization.
pub async fn sync_directory(
    engine: &crate::engine::Engine,
    identity: &Identity,
    uploads: &crate::uploads::UploadStore,
) -> crate::error::ApiResult<crate::commands::directory::SyncReport> {
    use crate::error::{ApiError, ErrorCode};
    let Some(directory) = &identity.ldap else {
        return Err(ApiError::bad_request("No LDAP directory is configured"));
    };
    let people = directory.everyone().await.map_err(|error| {
        tracing::warn!("directory sync: {error}");
        ApiError::new(
            ErrorCode::Busy,
            format!("The directory sync could not run: {error}"),
        )
    })?;
    let mut entries = Vec::with_capacity(people.len());
    for person in people {
        entries.push(identity.entry_of(uploads, person).await);
    }
    let rules = identity.rules.clone();
    let done = engine
        .execute(None, move |s, ctx| {
            crate::commands::directory::sync(s, ctx, &entries, &rules)
        })
        .await?;
    Ok(done.value)
}

/// Syncs with the directory every `every`, for as long as the server runs (the first one
/// `every` after start). In a cluster only the node that `leads` (the writer's lease holder at
/// that moment) asks the directory, so the directory hears one sync per interval, not one per
/// node; two that overlapped during a change of writer would still agree, since each decision
/// is made again on the log's latest state.
pub async fn directory_sync_job(
    engine: Arc<crate::engine::Engine>,
    identity: Identity,
    uploads: crate::uploads::UploadStore,
    every: Duration,
    leads: Box<dyn Fn() -> bool + Send>,
) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tick.tick().await;
        if !leads() {
            tracing::debug!("directory sync left to the node holding the writer's lease");
            continue;
        }
        match sync_directory(&engine, &identity, &uploads).await {
            Ok(report) => tracing::info!(
                deactivated = report.deactivated.len(),
                reactivated = report.reactivated.len(),
                renamed = report.renamed.len(),
                role_changed = report.role_changed.len(),
                "directory sync"
            ),
            Err(error) => tracing::warn!(%error, "directory sync refused"),
        }
    }
}

/// Whether `name` may name a provider in its URLs (letters, digits, `-`, `_`); the error names
/// the section (`oidc`, `saml`).
pub fn check_provider_name(section: &str, name: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "{section}.{name}: a provider's name goes in URLs: letters, digits, - and _ only"
        ));
    }
    Ok(())
}

/// How an identity provider's groups (an ID token's claim, a SAML attribute) give a person
/// their role and their synced groups at each sign-in.
#[derive(Debug, Clone, Default)]
pub struct GroupRules {
    /// The groups giving roles, strongest first.
    role_groups: Vec<(crate::events::Role, String)>,
    /// Provider groups kept in step with the user groups of the same name.
    pub synced_groups: Vec<String>,
}

impl GroupRules {
    /// The rules of a provider's settings: the four role groups and the synced groups, which
    /// need `source` (the claim or attribute that lists the groups), named `source_key` in the
    /// error.
    pub fn from_settings(
        roles: [&Option<String>; 4],
        synced_groups: &Option<Vec<String>>,
        source: Option<&str>,
        source_key: &str,
    ) -> Result<GroupRules, String> {
        let rules = GroupRules {
            role_groups: crate::commands::directory::role_groups(roles, str::to_owned),
            synced_groups: synced_groups.clone().unwrap_or_default(),
        };
        if source.is_none() && (!rules.role_groups.is_empty() || !rules.synced_groups.is_empty()) {
            return Err(format!(
                "roles and synced groups come from the provider's groups: set {source_key}"
            ));
        }
        Ok(rules)
    }

    /// The directory entry of a person with this address, name and groups (`/` prefixes,
    /// Keycloak's paths, dropped).
    pub fn entry(
        &self,
        email: String,
        full_name: &str,
        groups: impl IntoIterator<Item = String>,
    ) -> crate::commands::directory::Entry {
        let groups: std::collections::BTreeSet<String> = groups
            .into_iter()
            .map(|g| g.trim().trim_start_matches('/').to_owned())
            .filter(|g| !g.is_empty())
            .collect();
        let member_of = |name: &str| groups.iter().any(|g| g.eq_ignore_ascii_case(name));
        let role = crate::commands::directory::role_from_groups(&self.role_groups, member_of);
        crate::commands::directory::Entry {
            email,
            full_name: full_name.chars().take(100).collect(),
            disabled: false,
            role,
            groups: groups
                .into_iter()
                .filter(|g| self.synced_groups.iter().any(|s| s.eq_ignore_ascii_case(g)))
                .collect(),
            avatar: None,
            profile: Default::default(),
        }
    }
}

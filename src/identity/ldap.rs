//! An LDAP directory (OpenLDAP, Active Directory, FreeIPA): a person's password checked by a
//! bind as them (never stored, never logged), and everyone listed for the sync.
//!
//! Each operation opens its own connection (StartTLS or LDAPS as configured), binds as the
//! service account when one is set, searches, and for a sign-in binds as the person last. Every
//! step has the configured timeout, so an unreachable directory fails a sign-in with a clear
//! message instead of holding it. The directory's answers are parsed without panicking: an
//! entry that is not what LDAP says an entry is gets skipped.

use crate::commands::directory::Entry;
use crate::config::LdapSettings;
use crate::events::Role;
use ldap3::{Ldap, LdapConnAsync, LdapConnSettings, ResultEntry, Scope, SearchEntry};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// LDAP's `invalidCredentials` result code (also Active Directory's answer for a disabled or
/// expired account).
const INVALID_CREDENTIALS: u32 = 49;

/// A configured directory.
#[derive(Clone)]
pub struct Directory {
    url: String,
    starttls: bool,
    /// The TLS configuration with the CAs of `ldap.ca_file` (`None`: the system's CAs).
    tls: Option<Arc<rustls::ClientConfig>>,
    service: Option<(String, String)>,
    user_base: String,
    user_filter: String,
    everyone_filter: String,
    email_attr: String,
    name_attr: String,
    avatar_attr: Option<String>,
    /// Custom profile fields (by name) and their attributes.
    profile_fields: Vec<(String, String)>,
    group_base: Option<String>,
    /// Role groups' normalized DNs, strongest role first.
    role_groups: Vec<(Role, String)>,
    synced_groups: Vec<String>,
    timeout: Duration,
}

/// Why the directory could not answer.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    #[error("the directory cannot be reached: {0}")]
    Unreachable(String),
    #[error("the directory refused: {0}")]
    Refused(String),
}

/// A person as the directory describes them.
#[derive(Debug, Clone)]
pub struct Person {
    pub dn: String,
    pub entry: Entry,
    /// Their photo's bytes (`avatar_attr`), if any.
    pub photo: Option<Vec<u8>>,
}

/// A group and its members, as the directory lists them.
struct Group {
    dn: String,
    cn: String,
    members: BTreeSet<String>,
    member_uids: BTreeSet<String>,
}

impl Directory {
    /// The directory the settings describe; `None` when `ldap.url` is not set.
    pub fn from_settings(s: &LdapSettings) -> Result<Option<Directory>, String> {
        let Some(url) = s.url.clone() else {
            return Ok(None);
        };
        if !(url.starts_with("ldap://") || url.starts_with("ldaps://")) {
            return Err(format!("ldap.url: {url} is not an ldap:// or ldaps:// URL"));
        }
        let need = |value: &Option<String>, key: &str| {
            value
                .clone()
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| format!("ldap.{key} must be set when ldap.url is"))
        };
        let user_filter = need(&s.user_filter, "user_filter")?;
        if !user_filter.contains("{login}") {
            return Err("ldap.user_filter must contain {login}".into());
        }
        let service = match (&s.bind_dn, &s.bind_password) {
            (Some(dn), Some(password)) => Some((dn.clone(), password.clone())),
            (Some(_), None) => {
                return Err("ldap.bind_password must be set with ldap.bind_dn".into())
            }
            _ => None,
        };
        let role_groups = crate::commands::directory::role_groups(
            [
                &s.owner_group,
                &s.admin_group,
                &s.moderator_group,
                &s.guest_group,
            ],
            normalize_dn,
        );
        let synced_groups = s.synced_groups.clone().unwrap_or_default();
        if (!role_groups.is_empty() || !synced_groups.is_empty()) && s.group_base.is_none() {
            return Err("ldap.group_base must be set to map groups to roles or user groups".into());
        }
        let tls = s.ca_file.as_deref().map(tls_config).transpose()?;
        Ok(Some(Directory {
            url,
            starttls: s.starttls.unwrap_or(false),
            tls,
            service,
            user_base: need(&s.user_base, "user_base")?,
            user_filter,
            everyone_filter: need(&s.everyone_filter, "everyone_filter")?,
            email_attr: need(&s.email_attr, "email_attr")?,
            name_attr: need(&s.name_attr, "name_attr")?,
            avatar_attr: s.avatar_attr.clone().filter(|a| !a.is_empty()),
            profile_fields: s
                .profile_fields
                .clone()
                .unwrap_or_default()
                .into_iter()
                .collect(),
            group_base: s.group_base.clone(),
            role_groups,
            synced_groups,
            timeout: Duration::from_secs(s.timeout_secs.unwrap_or(5).max(1)),
        }))
    }

    /// The synced groups' names.
    pub fn synced_groups(&self) -> &[String] {
        &self.synced_groups
    }

    /// The person `login` (an email address or a directory username) names, if `password` is
    /// theirs: `Ok(None)` for an unknown or ambiguous login or a wrong password.
    pub async fn authenticate(
        &self,
        login: &str,
        password: &str,
    ) -> Result<Option<Person>, DirectoryError> {
        // An empty password would make an "unauthenticated bind", which succeeds.
        if password.is_empty() || login.trim().is_empty() {
            return Ok(None);
        }
        let mut ldap = self.connect().await?;
        let filter = self
            .user_filter
            .replace("{login}", &ldap3::ldap_escape(login.trim()));
        let mut found = self.search_people(&mut ldap, &filter).await?;
        if found.len() != 1 {
            let _ = ldap.unbind().await;
            return Ok(None);
        }
        let groups = self.groups(&mut ldap).await?;
        let person = found.remove(0);
        let bound = ldap
            .with_timeout(self.timeout)
            .simple_bind(&person.dn, password)
            .await
            .map_err(unreachable)?;
        let _ = ldap.unbind().await;
        match bound.rc {
            0 => Ok(Some(self.person(person, &groups))),
            INVALID_CREDENTIALS => Ok(None),
            rc => Err(DirectoryError::Refused(format!(
                "bind answered {rc} {}",
                bound.text
            ))),
        }
    }

    /// Everyone `everyone_filter` finds under `user_base`, with an email address.
    pub async fn everyone(&self) -> Result<Vec<Person>, DirectoryError> {
        let mut ldap = self.connect().await?;
        let filter = self.everyone_filter.clone();
        let found = self.search_people(&mut ldap, &filter).await?;
        let groups = self.groups(&mut ldap).await?;
        let _ = ldap.unbind().await;
        Ok(found.into_iter().map(|e| self.person(e, &groups)).collect())
    }

    /// A connection, bound as the service account when there is one.
    async fn connect(&self) -> Result<Ldap, DirectoryError> {
        let mut settings = LdapConnSettings::new()
            .set_conn_timeout(self.timeout)
            .set_starttls(self.starttls);
        if let Some(tls) = &self.tls {
            settings = settings.set_config(tls.clone());
        }
        let (conn, mut ldap) = tokio::time::timeout(
            self.timeout,
            LdapConnAsync::with_settings(settings, &self.url),
        )
        .await
        .map_err(|_| DirectoryError::Unreachable("no answer in time".into()))?
        .map_err(unreachable)?;
        tokio::spawn(async move {
            if let Err(error) = conn.drive().await {
                tracing::debug!("ldap connection ended: {error}");
            }
        });
        if let Some((dn, password)) = &self.service {
            let result = ldap
                .with_timeout(self.timeout)
                .simple_bind(dn, password)
                .await
                .map_err(unreachable)?;
            if result.rc != 0 {
                return Err(DirectoryError::Refused(format!(
                    "the service account's bind answered {} {}",
                    result.rc, result.text
                )));
            }
        }
        Ok(ldap)
    }

    /// The entries `filter` finds under `user_base` that have an email address.
    async fn search_people(
        &self,
        ldap: &mut Ldap,
        filter: &str,
    ) -> Result<Vec<SearchEntry>, DirectoryError> {
        let mut attrs = vec![
            self.email_attr.as_str(),
            self.name_attr.as_str(),
            "uid",
            "sAMAccountName",
            "userAccountControl",
            "nsAccountLock",
            "pwdAccountLockedTime",
        ];
        if let Some(avatar) = &self.avatar_attr {
            attrs.push(avatar);
        }
        attrs.extend(self.profile_fields.iter().map(|(_, attr)| attr.as_str()));
        let (entries, result) = ldap
            .with_timeout(self.timeout)
            .search(&self.user_base, Scope::Subtree, filter, attrs)
            .await
            .map_err(unreachable)?
            .non_error()
            .map_err(|e| DirectoryError::Refused(e.to_string()))?;
        if result.rc != 0 {
            tracing::warn!(
                "ldap search of people answered {} {}",
                result.rc,
                result.text
            );
        }
        Ok(entries
            .into_iter()
            .filter_map(entry)
            .filter(|e| first(e, &self.email_attr).is_some())
            .collect())
    }

    /// Every group under `group_base` (none when it is not set).
    async fn groups(&self, ldap: &mut Ldap) -> Result<Vec<Group>, DirectoryError> {
        let Some(base) = &self.group_base else {
            return Ok(Vec::new());
        };
        let filter = "(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames)\
                      (objectClass=posixGroup)(objectClass=group))";
        let (entries, _) = ldap
            .with_timeout(self.timeout)
            .search(
                base,
                Scope::Subtree,
                filter,
                vec!["cn", "member", "uniqueMember", "memberUid"],
            )
            .await
            .map_err(unreachable)?
            .non_error()
            .map_err(|e| DirectoryError::Refused(e.to_string()))?;
        Ok(entries
            .into_iter()
            .filter_map(entry)
            .map(|e| Group {
                dn: normalize_dn(&e.dn),
                cn: first(&e, "cn").unwrap_or_default().to_owned(),
                members: values(&e, "member")
                    .chain(values(&e, "uniqueMember"))
                    .map(normalize_dn)
                    .collect(),
                member_uids: values(&e, "memberUid").map(str::to_lowercase).collect(),
            })
            .collect())
    }

    /// What the directory says of the person of entry `e`, given every group.
    fn person(&self, e: SearchEntry, groups: &[Group]) -> Person {
        let dn = normalize_dn(&e.dn);
        let uid = first(&e, "uid").map(str::to_lowercase);
        let theirs: Vec<&Group> = groups
            .iter()
            .filter(|g| {
                g.members.contains(&dn) || uid.as_ref().is_some_and(|u| g.member_uids.contains(u))
            })
            .collect();
        let role = crate::commands::directory::role_from_groups(&self.role_groups, |group| {
            theirs.iter().any(|g| g.dn == group)
        });
        let email = first(&e, &self.email_attr).unwrap_or_default().to_owned();
        let full_name = first(&e, &self.name_attr)
            .map(str::to_owned)
            .unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_owned());
        let photo = self
            .avatar_attr
            .as_ref()
            .and_then(|a| e.bin_attrs.get(a))
            .and_then(|v| v.first().cloned());
        Person {
            dn: e.dn.clone(),
            entry: Entry {
                email,
                full_name,
                disabled: disabled(&e),
                role,
                groups: theirs
                    .iter()
                    .filter(|g| {
                        self.synced_groups
                            .iter()
                            .any(|s| s.eq_ignore_ascii_case(&g.cn))
                    })
                    .map(|g| g.cn.clone())
                    .collect(),
                avatar: None,
                profile: self
                    .profile_fields
                    .iter()
                    .filter_map(|(field, attr)| {
                        first(&e, attr).map(|value| (field.clone(), value.to_owned()))
                    })
                    .collect(),
            },
            photo,
        }
    }
}

impl std::fmt::Debug for Directory {
    /// Everything but the service account's password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("url", &self.url)
            .field("starttls", &self.starttls)
            .field("service", &self.service.as_ref().map(|(dn, _)| dn))
            .field("user_base", &self.user_base)
            .finish_non_exhaustive()
    }
}

/// A TLS client configuration that trusts the CAs in the PEM file `path` (and only those).
fn tls_config(path: &std::path::Path) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("ldap.ca_file: cannot read {}: {e}", path.display()))?;
    for certificate in certificates {
        let certificate =
            certificate.map_err(|e| format!("ldap.ca_file: {} is not PEM: {e}", path.display()))?;
        roots
            .add(certificate)
            .map_err(|e| format!("ldap.ca_file: a certificate in {}: {e}", path.display()))?;
    }
    if roots.is_empty() {
        return Err(format!(
            "ldap.ca_file: {} holds no certificate",
            path.display()
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("ldap.ca_file: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

fn unreachable(error: ldap3::LdapError) -> DirectoryError {
    DirectoryError::Unreachable(error.to_string())
}

/// Whether the directory has the account locked: Active Directory's `ACCOUNTDISABLE` bit of
/// `userAccountControl`, FreeIPA's (389 Directory Server's) `nsAccountLock`, OpenLDAP's
/// password policy lock `pwdAccountLockedTime`.
fn disabled(e: &SearchEntry) -> bool {
    let ad = first(e, "userAccountControl")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|flags| flags & 2 != 0);
    let ipa = first(e, "nsAccountLock").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let openldap = first(e, "pwdAccountLockedTime").is_some();
    ad || ipa || openldap
}

/// The first value of an attribute (attribute names are case-insensitive).
fn first<'e>(e: &'e SearchEntry, name: &str) -> Option<&'e str> {
    values(e, name).next()
}

fn values<'e>(e: &'e SearchEntry, name: &str) -> impl Iterator<Item = &'e str> + 'e {
    let values = e
        .attrs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_slice())
        .unwrap_or_default();
    values.iter().map(String::as_str)
}

/// A DN compared as directories compare them: case and the spaces around separators ignored.
fn normalize_dn(dn: &str) -> String {
    dn.split(',')
        .map(|rdn| {
            rdn.split('=')
                .map(|part| part.trim().to_lowercase())
                .collect::<Vec<_>>()
                .join("=")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A search result entry, read without trusting its shape (ldap3's own reader panics on a
/// malformed one): its DN, text attributes and binary ones.
fn entry(re: ResultEntry) -> Option<SearchEntry> {
    entry_of(re.0)
}

fn entry_of(tag: ldap3::asn1::StructureTag) -> Option<SearchEntry> {
    let mut tags = tag.match_id(4)?.expect_constructed()?.into_iter();
    let dn = String::from_utf8(tags.next()?.expect_primitive()?).ok()?;
    let mut attrs: HashMap<String, Vec<String>> = HashMap::new();
    let mut bin_attrs: HashMap<String, Vec<Vec<u8>>> = HashMap::new();
    for attribute in tags.next()?.expect_constructed()? {
        let mut parts = attribute.expect_constructed()?.into_iter();
        let name = String::from_utf8(parts.next()?.expect_primitive()?).ok()?;
        let raw: Vec<Vec<u8>> = parts
            .next()?
            .expect_constructed()?
            .into_iter()
            .map(|t| t.expect_primitive())
            .collect::<Option<_>>()?;
        if raw.iter().all(|v| std::str::from_utf8(v).is_ok()) {
            let text = raw
                .into_iter()
                .filter_map(|v| String::from_utf8(v).ok())
                .collect();
            attrs.insert(name, text);
        } else {
            bin_attrs.insert(name, raw);
        }
    }
    Some(SearchEntry {
        dn,
        attrs,
        bin_attrs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_compare_without_case_or_spaces() {
        assert_eq!(
            normalize_dn("CN=Admins, OU=Groups,dc=Example,DC=com"),
            "cn=admins,ou=groups,dc=example,dc=com"
        );
    }

    fn with(attrs: &[(&str, &str)]) -> SearchEntry {
        SearchEntry {
            dn: "uid=x,dc=example,dc=com".into(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
                .collect(),
            bin_attrs: HashMap::new(),
        }
    }

    #[test]
    fn locks_of_each_directory_disable_an_account() {
        assert!(!disabled(&with(&[("userAccountControl", "512")])));
        assert!(disabled(&with(&[("userAccountControl", "514")])));
        assert!(disabled(&with(&[("nsaccountlock", "TRUE")])));
        assert!(!disabled(&with(&[("nsAccountLock", "false")])));
        assert!(disabled(&with(&[(
            "pwdAccountLockedTime",
            "000001010000Z"
        )])));
        assert!(!disabled(&with(&[("mail", "x@example.com")])));
    }

    #[test]
    fn a_malformed_entry_is_skipped_not_a_panic() {
        use ldap3::asn1::{StructureTag, TagClass, PL};
        let tag = |id, payload| StructureTag {
            class: TagClass::Application,
            id,
            payload,
        };
        for shape in [
            tag(4, PL::P(b"not constructed".to_vec())),
            tag(4, PL::C(vec![])),
            tag(4, PL::C(vec![tag(4, PL::P(vec![0xff, 0xfe]))])),
            tag(
                4,
                PL::C(vec![tag(4, PL::P(b"dn".to_vec())), tag(16, PL::P(vec![]))]),
            ),
            tag(5, PL::C(vec![])),
        ] {
            assert!(entry_of(shape).is_none());
        }
    }

    #[test]
    fn a_login_cannot_widen_the_filter() {
        let filter =
            "(|(uid={login})(mail={login}))".replace("{login}", &ldap3::ldap_escape("*)(uid=*"));
        assert_eq!(filter, r"(|(uid=\2a\29\28uid=\2a)(mail=\2a\29\28uid=\2a))");
    }
}

//! Sign-in through a SAML 2.0 identity provider (Okta, Entra ID, ADFS, Keycloak, Authentik,
//! Shibboleth, SimpleSAMLphp), as Zulip's SAML backend: the browser is sent to the provider
//! with an `AuthnRequest` (HTTP-Redirect binding), and comes back with a `Response` posted to
//! the assertion consumer service (HTTP-POST binding).
//!
//! A response is taken only when all of these hold: it parses within bounds; it is signed (the
//! whole response, or its one assertion) by one of the provider's configured certificates; it
//! answers the request this browser started (`InResponseTo`); it is meant for this server
//! (`Destination`, the bearer confirmation's `Recipient`, the `Audience`); it came from the
//! configured provider (`Issuer`); it is in its time window (`NotBefore`, `NotOnOrAfter`,
//! with a minute's leeway for clocks); and it holds exactly one unencrypted assertion. That its
//! assertion is used once only is the caller's to record (`SignInTokenSpent`, by digest).
//! Sign-ins the provider starts by itself (no request) are refused: nothing would bind them to
//! the browser they arrive in.

use super::xml::{Bounds, Document};
use super::xmldsig::{self, shown, DsigError, VerifyingKey};
use crate::commands::directory::Entry;
use crate::config::SamlIdpSettings;
use crate::outgoing::Guard;
use base64::Engine;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const PROTOCOL: &str = "urn:oasis:names:tc:SAML:2.0:protocol";
pub const ASSERTION: &str = "urn:oasis:names:tc:SAML:2.0:assertion";
pub const METADATA: &str = "urn:oasis:names:tc:SAML:2.0:metadata";
const BINDING_REDIRECT: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";
const BINDING_POST: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST";
const SUCCESS: &str = "urn:oasis:names:tc:SAML:2.0:status:Success";
const BEARER: &str = "urn:oasis:names:tc:SAML:2.0:cm:bearer";
const NAMEID_EMAIL: &str = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress";
/// Clock skew allowed against the provider's instants, in seconds.
const LEEWAY_SECS: i64 = 60;
/// The longest an assertion is remembered as used (its own window is usually minutes).
const MAX_WINDOW_SECS: i64 = 24 * 3600;
/// How long metadata fetched from a URL is used before it is fetched again.
const METADATA_LIFETIME: Duration = Duration::from_secs(3600);
/// How long past its lifetime fetched metadata still serves while its URL fails.
const STALE_FOR: Duration = Duration::from_secs(24 * 3600);

/// What an identity provider's metadata says (or its settings, without metadata).
#[derive(Debug, Clone)]
pub struct IdpMetadata {
    pub entity_id: String,
    /// Its single sign-on service for the HTTP-Redirect binding.
    pub sso_url: String,
    /// The keys of its signing certificates (several while it rotates).
    pub keys: Vec<VerifyingKey>,
}

/// Reads an identity provider's metadata: an `EntityDescriptor`, or an `EntitiesDescriptor`
/// (a federation's file) holding the entity `wanted`.
pub fn parse_metadata(bytes: &[u8], wanted: Option<&str>) -> Result<IdpMetadata, String> {
    let doc = Document::parse(bytes, Bounds::METADATA).map_err(|e| e.to_string())?;
    let entities: Vec<usize> = doc.all_named(METADATA, "EntityDescriptor").collect();
    let entity = match wanted {
        Some(id) => entities
            .iter()
            .copied()
            .find(|&e| doc.attribute(e, "entityID") == Some(id))
            .ok_or_else(|| format!("no entity {id} in the metadata"))?,
        None => match entities[..] {
            [one] => one,
            [] => return Err("no EntityDescriptor in the metadata".into()),
            _ => return Err("several entities in the metadata: set entity_id".into()),
        },
    };
    let entity_id = doc
        .attribute(entity, "entityID")
        .filter(|e| !e.is_empty())
        .ok_or("an EntityDescriptor without entityID")?
        .to_owned();
    let idp = doc
        .children_named(entity, METADATA, "IDPSSODescriptor")
        .next()
        .ok_or_else(|| format!("{entity_id} is not an identity provider (no IDPSSODescriptor)"))?;
    let sso_url = doc
        .children_named(idp, METADATA, "SingleSignOnService")
        .find(|&s| doc.attribute(s, "Binding") == Some(BINDING_REDIRECT))
        .and_then(|s| doc.attribute(s, "Location"))
        .ok_or_else(|| format!("{entity_id} offers no single sign-on by HTTP-Redirect"))?
        .to_owned();
    let mut keys = Vec::new();
    for descriptor in doc.children_named(idp, METADATA, "KeyDescriptor") {
        if !matches!(doc.attribute(descriptor, "use"), None | Some("signing")) {
            continue;
        }
        for info in doc.children_named(descriptor, xmldsig::DSIG, "KeyInfo") {
            for data in doc.children_named(info, xmldsig::DSIG, "X509Data") {
                for cert in doc.children_named(data, xmldsig::DSIG, "X509Certificate") {
                    keys.push(VerifyingKey::from_certificate_text(&doc.text_of(cert))?);
                }
            }
        }
    }
    if keys.is_empty() {
        return Err(format!("{entity_id} lists no signing certificate"));
    }
    Ok(IdpMetadata {
        entity_id,
        sso_url,
        keys,
    })
}

/// Where an identity provider's metadata comes from.
enum Source {
    Fixed(Arc<IdpMetadata>),
    Url {
        url: reqwest::Url,
        entity_id: Option<String>,
        cached: tokio::sync::Mutex<Option<(Arc<IdpMetadata>, Instant)>>,
    },
}

/// One identity provider, as `[saml.NAME]` configures it.
pub struct Idp {
    /// The name in its URLs (`/accounts/login/social/saml/NAME`).
    pub name: String,
    pub display_name: String,
    pub display_icon: Option<String>,
    /// Create the account of a person it vouches for at their first sign-in.
    pub create_users: bool,
    source: Source,
    email_attribute: String,
    first_name_attribute: String,
    last_name_attribute: String,
    full_name_attribute: Option<String>,
    groups_attribute: Option<String>,
    /// How its groups give roles and synced groups.
    pub groups: super::GroupRules,
    guard: Arc<Guard>,
    http: reqwest::Client,
}

impl std::fmt::Debug for Idp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idp")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Why a SAML sign-in failed. The words are for the server's log; the person sees a fixed
/// message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SamlError {
    /// The provider's metadata could not be fetched or read.
    Unreachable(String),
    /// The response did not pass the checks.
    Refused(String),
    /// The response is good but names nobody usable.
    NoAddress(String),
}

impl std::fmt::Display for SamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SamlError::Unreachable(why) => write!(f, "the identity provider is unavailable: {why}"),
            SamlError::Refused(why) => write!(f, "refused: {why}"),
            SamlError::NoAddress(why) => write!(f, "no usable email address: {why}"),
        }
    }
}

fn refused<T>(why: impl Into<String>) -> Result<T, SamlError> {
    Err(SamlError::Refused(why.into()))
}

/// What a checked response says of the person.
#[derive(Debug, Clone)]
pub struct Asserted {
    /// The provider that issued it (its entity ID).
    pub issuer: String,
    /// The assertion's `ID`, to be used once.
    pub assertion_id: String,
    /// Until when (UNIX seconds) the assertion would be taken: how long to remember it used.
    pub expires_at: i64,
    name_id: Option<(String, Option<String>)>,
    /// `(Name, FriendlyName, values)` of each attribute.
    attributes: Vec<(String, Option<String>, Vec<String>)>,
}

impl Asserted {
    /// The values of the attribute whose `Name` is `name`, else of the one whose
    /// `FriendlyName` is; `None` when none is, or when two are (which one the provider meant
    /// cannot be known).
    fn values(&self, name: &str) -> Option<&[String]> {
        let by_name: Vec<_> = self
            .attributes
            .iter()
            .filter(|(n, _, _)| n == name)
            .collect();
        let found = if by_name.is_empty() {
            self.attributes
                .iter()
                .filter(|(_, f, _)| f.as_deref() == Some(name))
                .collect()
        } else {
            by_name
        };
        match found[..] {
            [(_, _, values)] => Some(values.as_slice()),
            _ => None,
        }
    }

    fn first(&self, name: &str) -> Option<&str> {
        self.values(name)?
            .iter()
            .map(|v| v.trim())
            .find(|v| !v.is_empty())
    }
}

impl Idp {
    /// The provider `[saml.NAME]` configures; an error names the setting at fault. Metadata
    /// from a file is read now; from a URL, at the first sign-in.
    pub fn from_settings(
        name: &str,
        s: &SamlIdpSettings,
        guard: Arc<Guard>,
    ) -> Result<Idp, String> {
        let at = |key: &str| format!("saml.{name}.{key}");
        super::check_provider_name("saml", name)?;
        let source = match (&s.metadata_file, &s.metadata_url, &s.sso_url) {
            (Some(path), None, None) => {
                let bytes = std::fs::read(path).map_err(|e| {
                    format!(
                        "{}: cannot read {}: {e}",
                        at("metadata_file"),
                        path.display()
                    )
                })?;
                let meta = parse_metadata(&bytes, s.entity_id.as_deref())
                    .map_err(|e| format!("{}: {e}", at("metadata_file")))?;
                Source::Fixed(Arc::new(meta))
            }
            (None, Some(url), None) => {
                let url = reqwest::Url::parse(url.trim())
                    .map_err(|e| format!("{}: not a URL ({e})", at("metadata_url")))?;
                // The metadata carries the keys every sign-in is checked with: over plain
                // HTTP, anyone on the way could put theirs in.
                let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
                let loopback = host == "localhost"
                    || host
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback());
                if url.scheme() != "https" && !loopback {
                    return Err(format!(
                        "{}: use https (the metadata holds the keys sign-ins are checked with)",
                        at("metadata_url")
                    ));
                }
                guard
                    .check_url(&url)
                    .map_err(|refused| format!("{}: {refused}", at("metadata_url")))?;
                Source::Url {
                    url,
                    entity_id: s.entity_id.clone(),
                    cached: Default::default(),
                }
            }
            (None, None, Some(sso_url)) => {
                let entity_id = s
                    .entity_id
                    .clone()
                    .filter(|e| !e.trim().is_empty())
                    .ok_or_else(|| format!("{} is needed with sso_url", at("entity_id")))?;
                let path = s
                    .cert_file
                    .as_ref()
                    .ok_or_else(|| format!("{} is needed with sso_url", at("cert_file")))?;
                let text = std::fs::read_to_string(path).map_err(|e| {
                    format!("{}: cannot read {}: {e}", at("cert_file"), path.display())
                })?;
                let key = VerifyingKey::from_certificate_text(&text)
                    .map_err(|e| format!("{}: {e}", at("cert_file")))?;
                reqwest::Url::parse(sso_url)
                    .map_err(|e| format!("{}: not a URL ({e})", at("sso_url")))?;
                Source::Fixed(Arc::new(IdpMetadata {
                    entity_id,
                    sso_url: sso_url.clone(),
                    keys: vec![key],
                }))
            }
            _ => {
                return Err(format!(
                    "saml.{name}: set one of metadata_file, metadata_url, or sso_url with \
                     entity_id and cert_file"
                ))
            }
        };
        let timeout = Duration::from_secs(s.timeout_secs.unwrap_or(10).clamp(1, 120));
        let http = guard
            .client(timeout)
            .map_err(|e| format!("saml.{name}: no HTTP client ({e})"))?;
        let groups_attribute = s.groups_attribute.clone().filter(|a| !a.trim().is_empty());
        let groups = super::GroupRules::from_settings(
            [
                &s.owner_group,
                &s.admin_group,
                &s.moderator_group,
                &s.guest_group,
            ],
            &s.synced_groups,
            groups_attribute.as_deref(),
            &at("groups_attribute"),
        )
        .map_err(|e| format!("saml.{name}: {e}"))?;
        Ok(Idp {
            name: name.to_owned(),
            display_name: s.display_name.clone().unwrap_or_else(|| name.to_owned()),
            display_icon: s.display_icon.clone(),
            create_users: s.create_users.unwrap_or(false),
            source,
            email_attribute: s.email_attribute.clone().unwrap_or_else(|| "email".into()),
            first_name_attribute: s
                .first_name_attribute
                .clone()
                .unwrap_or_else(|| "first_name".into()),
            last_name_attribute: s
                .last_name_attribute
                .clone()
                .unwrap_or_else(|| "last_name".into()),
            full_name_attribute: s.full_name_attribute.clone(),
            groups_attribute,
            groups,
            guard,
            http,
        })
    }

    /// The provider's metadata: as configured, or as last fetched while fresh.
    pub async fn metadata(&self) -> Result<Arc<IdpMetadata>, SamlError> {
        let (url, entity_id, cached) = match &self.source {
            Source::Fixed(meta) => return Ok(meta.clone()),
            Source::Url {
                url,
                entity_id,
                cached,
            } => (url, entity_id, cached),
        };
        let mut cache = cached.lock().await;
        if let Some((meta, at)) = cache.as_ref() {
            if at.elapsed() < METADATA_LIFETIME {
                return Ok(meta.clone());
            }
        }
        let fetched = self.fetch(url, entity_id.as_deref()).await;
        match fetched {
            Ok(meta) => {
                let meta = Arc::new(meta);
                *cache = Some((meta.clone(), Instant::now()));
                Ok(meta)
            }
            // Stale metadata serves for a day while the URL fails (certificates rotate
            // slowly), not for ever (a key the provider dropped must stop working).
            Err(error) => match cache.as_ref() {
                Some((meta, at)) if at.elapsed() < METADATA_LIFETIME + STALE_FOR => {
                    tracing::warn!(provider = %self.name, "SAML metadata refresh failed: {error}");
                    Ok(meta.clone())
                }
                _ => Err(error),
            },
        }
    }

    async fn fetch(
        &self,
        url: &reqwest::Url,
        entity: Option<&str>,
    ) -> Result<IdpMetadata, SamlError> {
        self.guard
            .check_url(url)
            .map_err(|refused| SamlError::Unreachable(refused.to_string()))?;
        let unreachable = |e: reqwest::Error| SamlError::Unreachable(e.to_string());
        let mut response = self
            .http
            .get(url.clone())
            .send()
            .await
            .map_err(unreachable)?;
        if url.scheme() == "https" && response.url().scheme() != "https" {
            return Err(SamlError::Unreachable(
                "the metadata URL redirected away from https".into(),
            ));
        }
        if !response.status().is_success() {
            return Err(SamlError::Unreachable(format!(
                "the metadata URL answered {}",
                response.status()
            )));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            body.extend_from_slice(&chunk);
            if body.len() > Bounds::METADATA.max_bytes {
                return Err(SamlError::Unreachable("the metadata is too large".into()));
            }
        }
        parse_metadata(&body, entity).map_err(SamlError::Unreachable)
    }

    /// Where to send the browser to sign in, and the ID of the request it carries (its
    /// answer must name it). `relay_state` comes back with the answer.
    pub async fn start(
        &self,
        sp_entity_id: &str,
        acs_url: &str,
        relay_state: &str,
        now_ms: i64,
    ) -> Result<(String, String), SamlError> {
        use std::io::Write;
        let meta = self.metadata().await?;
        let request_id = format!("_{}", crate::auth::new_api_key_nonce());
        let xml = format!(
            "<samlp:AuthnRequest xmlns:samlp=\"{PROTOCOL}\" xmlns:saml=\"{ASSERTION}\" \
             ID=\"{request_id}\" Version=\"2.0\" IssueInstant=\"{}\" Destination=\"{}\" \
             ProtocolBinding=\"{BINDING_POST}\" AssertionConsumerServiceURL=\"{}\">\
             <saml:Issuer>{}</saml:Issuer><samlp:NameIDPolicy AllowCreate=\"true\"/>\
             </samlp:AuthnRequest>",
            instant(now_ms),
            quick_xml::escape::escape(meta.sso_url.as_str()),
            quick_xml::escape::escape(acs_url),
            quick_xml::escape::escape(sp_entity_id),
        );
        let mut deflate =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        deflate
            .write_all(xml.as_bytes())
            .and_then(|()| deflate.finish())
            .map(|deflated| {
                let mut url = reqwest::Url::parse(&meta.sso_url)
                    .map_err(|e| SamlError::Unreachable(format!("its sign-on URL: {e}")))?;
                url.query_pairs_mut()
                    .append_pair(
                        "SAMLRequest",
                        &base64::engine::general_purpose::STANDARD.encode(deflated),
                    )
                    .append_pair("RelayState", relay_state);
                Ok((url.to_string(), request_id))
            })
            .map_err(|e| SamlError::Unreachable(e.to_string()))?
    }

    /// The checks of a posted `SAMLResponse` (base64) answering `request_id`, at `now_ms`.
    pub async fn check(
        &self,
        sp_entity_id: &str,
        acs_url: &str,
        saml_response: &str,
        request_id: &str,
        now_ms: i64,
    ) -> Result<Asserted, SamlError> {
        let meta = self.metadata().await?;
        check_response(
            &meta,
            sp_entity_id,
            acs_url,
            saml_response,
            request_id,
            now_ms,
        )
    }

    /// The directory entry of the person a checked response names: the address from the
    /// email attribute (or an email-format `NameID`), the name from the name attributes, the
    /// role of their strongest role group and their synced groups.
    pub fn entry(&self, asserted: &Asserted) -> Result<Entry, SamlError> {
        let email = asserted
            .first(&self.email_attribute)
            .map(str::to_owned)
            .or_else(|| match &asserted.name_id {
                Some((value, Some(format))) if format == NAMEID_EMAIL => Some(value.clone()),
                _ => None,
            })
            .ok_or_else(|| {
                SamlError::NoAddress(format!(
                    "no {} attribute and no emailAddress NameID",
                    self.email_attribute
                ))
            })?;
        let email = email.trim().to_owned();
        if !crate::commands::users::validate_email(&email) {
            return Err(SamlError::NoAddress(format!("{email:?} is not an address")));
        }
        let full_name = self
            .full_name_attribute
            .as_deref()
            .and_then(|a| asserted.first(a))
            .map(str::to_owned)
            .or_else(|| {
                let parts: Vec<&str> = [&self.first_name_attribute, &self.last_name_attribute]
                    .iter()
                    .filter_map(|a| asserted.first(a))
                    .collect();
                (!parts.is_empty()).then(|| parts.join(" "))
            })
            .unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_owned());
        let groups = match &self.groups_attribute {
            Some(attribute) => asserted.values(attribute).unwrap_or_default().to_vec(),
            None => Vec::new(),
        };
        Ok(self.groups.entry(email, &full_name, groups))
    }
}

/// An instant as SAML writes it (`2026-11-28T22:24:53Z`).
fn instant(ms: i64) -> String {
    let text = crate::time::iso8601_ms(ms);
    // `…T22:24:53.000Z` → `…T22:24:53Z`.
    match text.split_once('.') {
        Some((seconds, _)) => format!("{seconds}Z"),
        None => text,
    }
}

/// UNIX seconds of an `xs:dateTime` attribute, if present; refused when unreadable.
fn time_attribute(doc: &Document, at: usize, name: &str) -> Result<Option<i64>, SamlError> {
    match doc.attribute(at, name) {
        None => Ok(None),
        Some(text) => crate::time::parse_rfc3339_ms(text)
            .map(|ms| Some(ms.div_euclid(1000)))
            .ok_or_else(|| SamlError::Refused(format!("{name}={} is not an instant", shown(text)))),
    }
}

/// The checks of a response against the provider `meta`, for the service provider
/// `sp_entity_id` whose assertion consumer service is `acs_url`.
pub fn check_response(
    meta: &IdpMetadata,
    sp_entity_id: &str,
    acs_url: &str,
    saml_response: &str,
    request_id: &str,
    now_ms: i64,
) -> Result<Asserted, SamlError> {
    let compact: String = saml_response
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    if compact.len() > Bounds::RESPONSE.max_bytes / 3 * 4 + 4 {
        return refused("the response is too large");
    }
    let xml = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|_| SamlError::Refused("SAMLResponse is not base64".into()))?;
    check_response_xml(meta, sp_entity_id, acs_url, &xml, request_id, now_ms)
}

/// [`check_response`] of the response's XML itself.
pub fn check_response_xml(
    meta: &IdpMetadata,
    sp_entity_id: &str,
    acs_url: &str,
    xml: &[u8],
    request_id: &str,
    now_ms: i64,
) -> Result<Asserted, SamlError> {
    let now = now_ms.div_euclid(1000);
    let doc =
        Document::parse(xml, Bounds::RESPONSE).map_err(|e| SamlError::Refused(e.to_string()))?;
    let xml_refused = |e: super::xml::XmlError| SamlError::Refused(e.0);
    let root = doc.root();
    if !doc.is(root, PROTOCOL, "Response") {
        return refused("not a SAML Response");
    }
    if doc.attribute(root, "Version") != Some("2.0") {
        return refused("not SAML 2.0");
    }
    if let Some(destination) = doc.attribute(root, "Destination") {
        if destination != acs_url {
            return refused(format!("meant for {}, not {acs_url}", shown(destination)));
        }
    }
    if doc.attribute(root, "InResponseTo") != Some(request_id) {
        return refused("it does not answer the sign-in this browser started (InResponseTo)");
    }
    if let Some(issuer) = doc
        .only_child(root, ASSERTION, "Issuer")
        .map_err(xml_refused)?
    {
        if doc.text_of(issuer).trim() != meta.entity_id {
            return refused("issued by another provider");
        }
    }
    let status = doc
        .only_child(root, PROTOCOL, "Status")
        .map_err(xml_refused)?
        .and_then(|s| doc.only_child(s, PROTOCOL, "StatusCode").ok().flatten())
        .and_then(|c| doc.attribute(c, "Value"))
        .ok_or_else(|| SamlError::Refused("no status".into()))?;
    if status != SUCCESS {
        return refused(format!("the provider answered {}", shown(status)));
    }
    if doc
        .all_named(ASSERTION, "EncryptedAssertion")
        .next()
        .is_some()
    {
        return refused("encrypted assertions are not supported: have the provider sign them");
    }
    let assertions: Vec<usize> = doc.all_named(ASSERTION, "Assertion").collect();
    let [assertion] = assertions[..] else {
        return refused("not exactly one assertion");
    };
    if doc.element_at(assertion).parent != Some(root) {
        return refused("the assertion is not the response's own");
    }
    // Signed as a whole, or in its assertion: a signature present must hold either way.
    let response_signed = match xmldsig::verify_enveloped(&doc, root, &meta.keys) {
        Ok(()) => true,
        Err(DsigError::Unsigned) => false,
        Err(error) => return refused(format!("the response: {error}")),
    };
    let assertion_signed = match xmldsig::verify_enveloped(&doc, assertion, &meta.keys) {
        Ok(()) => true,
        Err(DsigError::Unsigned) => false,
        Err(error) => return refused(format!("the assertion: {error}")),
    };
    if !response_signed && !assertion_signed {
        return refused("neither the response nor its assertion is signed");
    }
    let assertion_id = doc
        .attribute(assertion, "ID")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| SamlError::Refused("the assertion has no ID".into()))?
        .to_owned();
    let issuer = doc
        .only_child(assertion, ASSERTION, "Issuer")
        .map_err(xml_refused)?
        .map(|i| doc.text_of(i))
        .unwrap_or_default();
    if issuer.trim() != meta.entity_id {
        return refused("the assertion is issued by another provider");
    }
    let mut expires_at = now + MAX_WINDOW_SECS;
    // The subject, confirmed as a bearer for this request and this server.
    let subject = doc
        .only_child(assertion, ASSERTION, "Subject")
        .map_err(xml_refused)?
        .ok_or_else(|| SamlError::Refused("the assertion has no subject".into()))?;
    let mut confirmed = None;
    for confirmation in doc.children_named(subject, ASSERTION, "SubjectConfirmation") {
        if doc.attribute(confirmation, "Method") != Some(BEARER) {
            continue;
        }
        let Some(data) = doc
            .only_child(confirmation, ASSERTION, "SubjectConfirmationData")
            .map_err(xml_refused)?
        else {
            continue;
        };
        let until = time_attribute(&doc, data, "NotOnOrAfter")?;
        let from = time_attribute(&doc, data, "NotBefore")?;
        // The response's own InResponseTo is signed only when the response is: with only the
        // assertion signed, the assertion itself must name this browser's request.
        let answers = match doc.attribute(data, "InResponseTo") {
            Some(r) => r == request_id,
            None => response_signed,
        };
        let good = doc.attribute(data, "Recipient") == Some(acs_url)
            && answers
            && until.is_some_and(|until| now < until + LEEWAY_SECS)
            && from.is_none_or(|from| now + LEEWAY_SECS >= from);
        if good {
            confirmed = until;
            break;
        }
    }
    let Some(until) = confirmed else {
        return refused(
            "no bearer confirmation for this server and this sign-in in its time window",
        );
    };
    expires_at = expires_at.min(until + LEEWAY_SECS);
    // The conditions: the time window and the audience.
    let conditions = doc
        .only_child(assertion, ASSERTION, "Conditions")
        .map_err(xml_refused)?
        .ok_or_else(|| SamlError::Refused("the assertion has no conditions".into()))?;
    if let Some(from) = time_attribute(&doc, conditions, "NotBefore")? {
        if now + LEEWAY_SECS < from {
            return refused("the assertion is not valid yet (NotBefore)");
        }
    }
    if let Some(until) = time_attribute(&doc, conditions, "NotOnOrAfter")? {
        if now >= until + LEEWAY_SECS {
            return refused("the assertion has expired (NotOnOrAfter)");
        }
        expires_at = expires_at.min(until + LEEWAY_SECS);
    }
    let restrictions: Vec<usize> = doc
        .children_named(conditions, ASSERTION, "AudienceRestriction")
        .collect();
    if restrictions.is_empty() {
        return refused("the assertion names no audience");
    }
    for restriction in restrictions {
        let ours = doc
            .children_named(restriction, ASSERTION, "Audience")
            .any(|a| doc.text_of(a).trim() == sp_entity_id);
        if !ours {
            return refused(format!("the assertion is not meant for {sp_entity_id}"));
        }
    }
    let name_id = doc
        .only_child(subject, ASSERTION, "NameID")
        .map_err(xml_refused)?
        .map(|n| {
            (
                doc.text_of(n).trim().to_owned(),
                doc.attribute(n, "Format").map(str::to_owned),
            )
        });
    let mut attributes = Vec::new();
    for statement in doc.children_named(assertion, ASSERTION, "AttributeStatement") {
        for attribute in doc.children_named(statement, ASSERTION, "Attribute") {
            let Some(name) = doc.attribute(attribute, "Name") else {
                continue;
            };
            let values = doc
                .children_named(attribute, ASSERTION, "AttributeValue")
                .map(|v| doc.text_of(v))
                .collect();
            attributes.push((
                name.to_owned(),
                doc.attribute(attribute, "FriendlyName").map(str::to_owned),
                values,
            ));
        }
    }
    Ok(Asserted {
        issuer: meta.entity_id.clone(),
        assertion_id,
        expires_at,
        name_id,
        attributes,
    })
}

/// The service provider's metadata, for the identity provider's administrator.
pub fn sp_metadata(sp_entity_id: &str, acs_url: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <md:EntityDescriptor xmlns:md=\"{METADATA}\" entityID=\"{}\">\n  \
         <md:SPSSODescriptor AuthnRequestsSigned=\"false\" WantAssertionsSigned=\"true\" \
         protocolSupportEnumeration=\"{PROTOCOL}\">\n    \
         <md:NameIDFormat>{NAMEID_EMAIL}</md:NameIDFormat>\n    \
         <md:AssertionConsumerService Binding=\"{BINDING_POST}\" Location=\"{}\" index=\"1\" \
         isDefault=\"true\"/>\n  </md:SPSSODescriptor>\n</md:EntityDescriptor>\n",
        quick_xml::escape::escape(sp_entity_id),
        quick_xml::escape::escape(acs_url),
    )
}

#[cfg(test)]
mod tests {
    //! Against responses pysaml2's IdP signed (xmlsec1), kept in tests/fixtures/saml/ (made by
    //! its make.py), each checked at its own issue instant.
    use super::*;
    use crate::events::Role;
    use std::collections::BTreeSet;

    const METADATA: &str = include_str!("../../tests/fixtures/saml/idp-metadata.xml");
    const BOTH: &str = include_str!("../../tests/fixtures/saml/response-signed-both.xml");
    const ASSERTION_ONLY: &str =
        include_str!("../../tests/fixtures/saml/response-signed-assertion.xml");
    const RESPONSE_ONLY: &str =
        include_str!("../../tests/fixtures/saml/response-signed-response.xml");
    const SP: &str = "https://chat.example.com";
    const ACS: &str = "https://chat.example.com/complete/saml/";

    fn meta() -> IdpMetadata {
        parse_metadata(METADATA.as_bytes(), None).unwrap()
    }

    /// The response's own issue instant, in ms.
    fn issued(xml: &str) -> i64 {
        let at = xml.split("IssueInstant=\"").nth(1).unwrap();
        crate::time::parse_rfc3339_ms(&at[..at.find('"').unwrap()]).unwrap()
    }

    fn check_at(xml: &str, request: &str, now_ms: i64) -> Result<Asserted, SamlError> {
        let encoded = base64::engine::general_purpose::STANDARD.encode(xml);
        check_response(&meta(), SP, ACS, &encoded, request, now_ms)
    }

    fn check(xml: &str) -> Result<Asserted, SamlError> {
        check_at(xml, "_request-1", issued(xml) + 2_000)
    }

    fn refusal(result: Result<Asserted, SamlError>) -> String {
        match result {
            Err(SamlError::Refused(why)) => why,
            other => panic!("not refused: {other:?}"),
        }
    }

    fn idp() -> Idp {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idp.xml");
        std::fs::write(&path, METADATA).unwrap();
        let settings = SamlIdpSettings {
            metadata_file: Some(path),
            groups_attribute: Some("groups".into()),
            admin_group: Some("chat-admins".into()),
            synced_groups: Some(vec!["staff".into()]),
            ..Default::default()
        };
        Idp::from_settings("corp", &settings, Arc::new(Guard::new(Vec::new()))).unwrap()
    }

    #[test]
    fn the_metadata_gives_the_entity_its_sign_on_url_and_its_key() {
        let meta = meta();
        assert_eq!(meta.entity_id, "http://127.0.0.1:8443/metadata");
        assert_eq!(meta.sso_url, "http://127.0.0.1:8443/sso");
        assert_eq!(meta.keys.len(), 1);
    }

    #[test]
    fn responses_signed_in_either_place_are_taken_and_name_the_person() {
        for xml in [BOTH, ASSERTION_ONLY, RESPONSE_ONLY] {
            let asserted = check(xml).unwrap();
            assert!(asserted.assertion_id.starts_with("id-"));
            assert!(asserted.expires_at > issued(xml) / 1000);
            let entry = idp().entry(&asserted).unwrap();
            assert_eq!(entry.email, "alice@example.com");
            assert_eq!(entry.full_name, "Alice Liddell");
            assert_eq!(entry.role, Some(Role::Administrator));
            assert_eq!(entry.groups, BTreeSet::from(["staff".to_owned()]));
        }
    }

    #[test]
    fn a_changed_response_is_refused() {
        for xml in [BOTH, ASSERTION_ONLY, RESPONSE_ONLY] {
            let why = refusal(check(&xml.replace("Liddell", "Mallory")));
            assert!(why.contains("digest mismatch"), "{why}");
        }
        // A signature moved onto other content does not hold either.
        let why = refusal(check(&BOTH.replace("alice@example.com", "eve@example.com")));
        assert!(why.contains("digest mismatch"), "{why}");
    }

    #[test]
    fn a_second_assertion_beside_or_around_the_signed_one_is_refused() {
        let start = ASSERTION_ONLY.find("<ns1:Assertion").unwrap();
        let end = ASSERTION_ONLY.find("</ns1:Assertion>").unwrap() + "</ns1:Assertion>".len();
        let signed = &ASSERTION_ONLY[start..end];
        let evil = signed
            .replace("alice@example.com", "eve@example.com")
            .replacen(" ID=\"", " ID=\"evil-", 1);
        // Beside it.
        let two = ASSERTION_ONLY.replace(signed, &format!("{evil}{signed}"));
        assert!(refusal(check(&two)).contains("exactly one"));
        // The signed one hidden in an extension, an unsigned one in its place.
        let hidden = ASSERTION_ONLY.replace(
            signed,
            &format!("<ns0:Extensions>{signed}</ns0:Extensions>{evil}"),
        );
        assert!(refusal(check(&hidden)).contains("exactly one"));
        // The signed one alone, inside another element: not the response's own.
        let moved = ASSERTION_ONLY.replace(
            signed,
            &format!("<ns0:Extensions>{signed}</ns0:Extensions>"),
        );
        assert!(refusal(check(&moved)).contains("not the response's own"));
    }

    #[test]
    fn a_response_for_another_request_audience_place_or_time_is_refused() {
        let at = issued(BOTH);
        assert!(refusal(check_at(BOTH, "_request-2", at)).contains("InResponseTo"));
        let encoded = base64::engine::general_purpose::STANDARD.encode(BOTH);
        let other_sp = check_response(
            &meta(),
            "https://other.example.com",
            ACS,
            &encoded,
            "_request-1",
            at,
        );
        assert!(refusal(other_sp).contains("not meant for"));
        let other_acs = check_response(
            &meta(),
            SP,
            "https://chat.example.com/elsewhere/",
            &encoded,
            "_request-1",
            at,
        );
        assert!(refusal(other_acs).contains("meant for"));
        // Five minutes' validity, a minute's leeway either way.
        assert!(check_at(BOTH, "_request-1", at + 5 * 60_000 + 50_000).is_ok());
        assert!(refusal(check_at(BOTH, "_request-1", at + 7 * 60_000)).contains("time window"));
        assert!(refusal(check_at(BOTH, "_request-1", at - 2 * 60_000)).contains("not valid yet"));
    }

    #[test]
    fn a_signed_assertion_cannot_be_carried_to_another_request_in_an_unsigned_response() {
        // Only the assertion is signed: the response's InResponseTo is anyone's to change, so
        // the assertion's own confirmation must name the request.
        let rebound = ASSERTION_ONLY.replacen(
            "InResponseTo=\"_request-1\" Version",
            "InResponseTo=\"_request-2\" Version",
            1,
        );
        assert_ne!(rebound, ASSERTION_ONLY);
        let why = refusal(check_at(&rebound, "_request-2", issued(ASSERTION_ONLY)));
        assert!(why.contains("bearer confirmation"), "{why}");
    }

    #[test]
    fn another_providers_key_or_issuer_is_refused() {
        let mut other = meta();
        other.keys = vec![VerifyingKey::from_certificate_text(OTHER_CERT).unwrap()];
        let encoded = base64::engine::general_purpose::STANDARD.encode(BOTH);
        let why = refusal(check_response(
            &other,
            SP,
            ACS,
            &encoded,
            "_request-1",
            issued(BOTH),
        ));
        assert!(why.contains("not by any"), "{why}");
        let mut renamed = meta();
        renamed.entity_id = "https://idp.other.example".into();
        let why = refusal(check_response(
            &renamed,
            SP,
            ACS,
            &encoded,
            "_request-1",
            issued(BOTH),
        ));
        assert!(why.contains("another provider"), "{why}");
    }

    #[test]
    fn unsigned_failed_encrypted_or_malformed_responses_are_refused() {
        let start = BOTH.find("<ns2:Signature").unwrap();
        let end = BOTH.find("</ns2:Signature>").unwrap() + "</ns2:Signature>".len();
        let unsigned_response = BOTH.replacen(&BOTH[start..end], "", 1);
        let start = unsigned_response.find("<ns2:Signature").unwrap();
        let end = unsigned_response.find("</ns2:Signature>").unwrap() + "</ns2:Signature>".len();
        let unsigned = unsigned_response.replacen(&unsigned_response[start..end], "", 1);
        assert!(refusal(check(&unsigned)).contains("neither"));
        let failed = BOTH.replace(SUCCESS, "urn:oasis:names:tc:SAML:2.0:status:Responder");
        assert!(refusal(check(&failed)).contains("Responder"));
        let doctype = format!(
            "<!DOCTYPE r [<!ENTITY x \"y\">]>{}",
            &BOTH[BOTH.find("<ns0").unwrap()..]
        );
        assert!(refusal(check(&doctype)).contains("document type"));
        let encoded = check_response(&meta(), SP, ACS, "%%%", "_request-1", issued(BOTH));
        assert!(refusal(encoded).contains("base64"));
        let huge = "A".repeat(400_000);
        assert!(
            refusal(check_response(&meta(), SP, ACS, &huge, "_request-1", 0)).contains("large")
        );
    }

    #[test]
    fn the_request_deflates_to_an_authn_request_for_the_provider() {
        use std::io::Read;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (url, id) = runtime
            .block_on(idp().start(SP, ACS, "relay", 1_764_000_000_000))
            .unwrap();
        let url = reqwest::Url::parse(&url).unwrap();
        assert!(url.as_str().starts_with("http://127.0.0.1:8443/sso?"));
        let pairs: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(pairs["RelayState"], "relay");
        let deflated = base64::engine::general_purpose::STANDARD
            .decode(&pairs["SAMLRequest"])
            .unwrap();
        let mut xml = String::new();
        flate2::read::DeflateDecoder::new(&deflated[..])
            .read_to_string(&mut xml)
            .unwrap();
        let doc = Document::parse(xml.as_bytes(), Bounds::RESPONSE).unwrap();
        assert!(doc.is(doc.root(), PROTOCOL, "AuthnRequest"));
        assert_eq!(doc.attribute(doc.root(), "ID"), Some(id.as_str()));
        assert_eq!(
            doc.attribute(doc.root(), "AssertionConsumerServiceURL"),
            Some(ACS)
        );
        assert_eq!(
            doc.attribute(doc.root(), "IssueInstant"),
            Some("2025-11-24T16:00:00Z")
        );
    }

    /// A certificate of another key (made by openssl for this test).
    const OTHER_CERT: &str = include_str!("../../tests/fixtures/saml/other-idp.crt");
}

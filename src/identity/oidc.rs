//! Sign-in through OpenID Connect providers (`[oidc.NAME]`): the authorization code flow with
//! PKCE, as Zulip's `GenericOpenIdConnectBackend` runs it, for several providers at once.
//!
//! [`Provider::start`] sends the browser to the provider with a fresh `state`, `nonce` and PKCE
//! challenge; what the end must check travels in a signed cookie ([`Flow`]), so any node of a
//! cluster can finish it. [`Provider::finish`] exchanges the code at the token endpoint (with
//! the PKCE verifier and the client's secret) and checks the ID token: its signature against
//! the provider's published keys (fetched again once when the signature does not check, so a
//! rotated key works at once), issuer, audience, expiry and nonce; the `openidconnect` crate does
//! the checking. The person is then their `email` claim (refused when the provider says it is
//! not verified), with their name and, when configured, their groups (roles and synced groups).
//!
//! Every request to the provider goes through the server's outgoing guard (`outgoing::Guard`):
//! a provider on a private or loopback address must be allowed in `outgoing.allow`. The code,
//! the tokens and the client secret are never logged, stored or put in an event.

use crate::commands::directory::Entry;
use crate::config::OidcSettings;
use crate::outgoing::Guard;
use openidconnect::core::{CoreClient, CoreProviderMetadata, CoreResponseType};
use openidconnect::{
    AuthenticationFlow, AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a provider's discovery document and keys are used before they are fetched again.
const METADATA_LIFETIME: Duration = Duration::from_secs(3600);
/// How long a sign-in may take between leaving for the provider and coming back.
pub const FLOW_LIFETIME_SECS: i64 = 600;

/// One provider, as configured.
pub struct Provider {
    /// The name in its URLs (`/accounts/login/social/oidc/NAME`).
    pub name: String,
    pub display_name: String,
    pub display_icon: Option<String>,
    issuer: IssuerUrl,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    scopes: Vec<String>,
    /// Create the account of a person it vouches for at their first sign-in.
    pub create_users: bool,
    /// Take an address the ID token does not say is verified.
    trust_unverified_email: bool,
    groups_claim: Option<String>,
    /// How its groups give roles and synced groups.
    pub groups: super::GroupRules,
    guard: Arc<Guard>,
    http: reqwest::Client,
    discovered: tokio::sync::Mutex<Discovery>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("issuer", &self.issuer.as_str())
            .field("client_id", &self.client_id.as_str())
            .finish_non_exhaustive()
    }
}

/// After a failed fetch of the discovery document, sign-ins get that failure for this long
/// instead of each waiting for an attempt of its own.
const FAILURE_REMEMBERED: Duration = Duration::from_secs(10);

/// The provider's discovery document (with its keys) as last fetched, and the last failure.
#[derive(Default)]
struct Discovery {
    good: Option<(CoreProviderMetadata, Instant)>,
    failed: Option<(String, Instant)>,
}

/// One request of the `openidconnect` crate through the outgoing guard.
type GuardedCall = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<
                    openidconnect::HttpResponse,
                    openidconnect::HttpClientError<reqwest::Error>,
                >,
            > + Send,
    >,
>;

/// What the end of a sign-in must check, carried in a signed cookie between the start and the
/// provider's answer: the `state` the answer must carry, the `nonce` the ID token must carry,
/// the PKCE verifier, and what to do once the person is known.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Flow {
    pub provider: String,
    pub state: String,
    pub nonce: String,
    pub verifier: String,
    /// The app's one-time pad, when the mobile or desktop app started the sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_pad: Option<AppPad>,
    /// When it started (UNIX seconds).
    pub started: i64,
}

/// The pad of the app that started a sign-in through the browser: the mobile app's
/// (`mobile_flow_otp`, the end is the `zulip://` redirect with the API key) or the desktop
/// app's (`desktop_flow_otp`, the end is a page with a login token for the app).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AppPad {
    Mobile(String),
    Desktop(String),
}

/// Why a sign-in through a provider failed. The words are for the server's log; the person sees
/// a fixed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OidcError {
    /// The provider could not be reached, or answered what is not OpenID Connect.
    Unreachable(String),
    /// The provider refused the code, or the ID token did not pass the checks.
    Refused(String),
    /// The token is good but names nobody usable (no address, an unverified one).
    NoAddress(String),
}

impl std::fmt::Display for OidcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OidcError::Unreachable(why) => write!(f, "the provider cannot be reached: {why}"),
            OidcError::Refused(why) => write!(f, "refused: {why}"),
            OidcError::NoAddress(why) => write!(f, "no usable email address: {why}"),
        }
    }
}

impl Provider {
    /// The provider `[oidc.NAME]` configures; an error names the setting at fault.
    pub fn from_settings(
        name: &str,
        s: &OidcSettings,
        guard: Arc<Guard>,
    ) -> Result<Provider, String> {
        let at = |key: &str| format!("oidc.{name}.{key}");
        super::check_provider_name("oidc", name)?;
        let issuer = IssuerUrl::new(s.issuer.trim().to_owned())
            .map_err(|e| format!("{}: not a URL ({e})", at("issuer")))?;
        let issuer_url = reqwest::Url::parse(issuer.as_str())
            .map_err(|e| format!("{}: not a URL ({e})", at("issuer")))?;
        guard
            .check_url(&issuer_url)
            .map_err(|refused| format!("{}: {refused}", at("issuer")))?;
        if s.client_id.trim().is_empty() {
            return Err(format!("{} is empty", at("client_id")));
        }
        let secret = match (&s.client_secret, &s.client_secret_file) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{} and {} are both set; set one",
                    at("client_secret"),
                    at("client_secret_file")
                ))
            }
            (Some(secret), None) => Some(secret.clone()),
            (None, Some(path)) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| {
                        format!(
                            "{}: cannot read {}: {e}",
                            at("client_secret_file"),
                            path.display()
                        )
                    })?
                    .trim_end_matches(['\n', '\r'])
                    .to_owned(),
            ),
            (None, None) => None,
        };
        let timeout = Duration::from_secs(s.timeout_secs.unwrap_or(10).clamp(1, 120));
        let http = guard
            .client(timeout)
            .map_err(|e| format!("oidc.{name}: no HTTP client ({e})"))?;
        let groups_claim = s.groups_claim.clone().filter(|c| !c.trim().is_empty());
        let groups = super::GroupRules::from_settings(
            [
                &s.owner_group,
                &s.admin_group,
                &s.moderator_group,
                &s.guest_group,
            ],
            &s.synced_groups,
            groups_claim.as_deref(),
            &at("groups_claim"),
        )
        .map_err(|e| format!("oidc.{name}: {e}"))?;
        Ok(Provider {
            name: name.to_owned(),
            display_name: s.display_name.clone().unwrap_or_else(|| name.to_owned()),
            display_icon: s.display_icon.clone(),
            issuer,
            client_id: ClientId::new(s.client_id.trim().to_owned()),
            client_secret: secret.filter(|s| !s.is_empty()).map(ClientSecret::new),
            scopes: s
                .scopes
                .clone()
                .unwrap_or_else(|| vec!["email".into(), "profile".into()]),
            create_users: s.create_users.unwrap_or(false),
            trust_unverified_email: s.trust_unverified_email.unwrap_or(false),
            groups_claim,
            groups,
            guard,
            http,
            discovered: tokio::sync::Mutex::new(Discovery::default()),
        })
    }

    /// The discovery document: the cached one while it is fresh, else (or with `refresh`)
    /// fetched again. Its server-side endpoints must pass the outgoing guard too. (Only the
    /// provider's own token endpoint hands over the tokens whose check may ask for a refresh,
    /// so nobody else can make the server fetch it again and again.)
    async fn metadata(&self, refresh: bool) -> Result<CoreProviderMetadata, OidcError> {
        // One fetch at a time: sign-ins that arrive meanwhile wait for its result.
        let mut cache = self.discovered.lock().await;
        if !refresh {
            if let Some((metadata, at)) = &cache.good {
                if at.elapsed() < METADATA_LIFETIME {
                    return Ok(metadata.clone());
                }
            }
            if let Some((why, at)) = &cache.failed {
                if at.elapsed() < FAILURE_REMEMBERED {
                    return Err(OidcError::Unreachable(format!(
                        "{why} (the last attempt, a moment ago)"
                    )));
                }
            }
        }
        match CoreProviderMetadata::discover_async(self.issuer.clone(), &self.guarded()).await {
            Ok(metadata) => {
                cache.good = Some((metadata.clone(), Instant::now()));
                cache.failed = None;
                Ok(metadata)
            }
            Err(e) => {
                let why = error_chain(&e);
                cache.failed = Some((why.clone(), Instant::now()));
                // A document older than an hour still serves while the provider is away (its
                // keys may well still sign), unless its keys just failed a signature.
                match (&cache.good, refresh) {
                    (Some((metadata, _)), false) => Ok(metadata.clone()),
                    _ => Err(OidcError::Unreachable(why)),
                }
            }
        }
    }

    /// The HTTP client the `openidconnect` crate calls for every request it makes (discovery,
    /// the keys it fetches within discovery, the token endpoint): each URL is checked by the
    /// outgoing guard before anything is sent, literal addresses included (names are checked
    /// again when resolved, and redirects by the client's own policy).
    fn guarded(&self) -> impl Fn(openidconnect::HttpRequest) -> GuardedCall + '_ {
        move |request: openidconnect::HttpRequest| {
            let guard = self.guard.clone();
            let client = self.http.clone();
            Box::pin(async move {
                let url = reqwest::Url::parse(&request.uri().to_string())
                    .map_err(|e| openidconnect::HttpClientError::Other(e.to_string()))?;
                guard.check_url(&url).map_err(|refused| {
                    openidconnect::HttpClientError::Other(refused.to_string())
                })?;
                use openidconnect::AsyncHttpClient;
                client.call(request).await
            })
        }
    }

    fn client(
        &self,
        metadata: CoreProviderMetadata,
        redirect_uri: &str,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        OidcError,
    > {
        let redirect = RedirectUrl::new(redirect_uri.to_owned())
            .map_err(|e| OidcError::Unreachable(format!("redirect URI: {e}")))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            self.client_id.clone(),
            self.client_secret.clone(),
        )
        .set_redirect_uri(redirect))
    }

    /// Where to send the browser to sign in, and the flow to keep until it comes back at
    /// `redirect_uri`.
    pub async fn start(
        &self,
        redirect_uri: &str,
        app_pad: Option<AppPad>,
        now: i64,
    ) -> Result<(String, Flow), OidcError> {
        let client = self.client(self.metadata(false).await?, redirect_uri)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(
                AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for scope in &self.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.url();
        Ok((
            url.to_string(),
            Flow {
                provider: self.name.clone(),
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                verifier: verifier.secret().clone(),
                app_pad,
                started: now,
            },
        ))
    }

    /// Whether an answer's `iss` parameter (RFC 9207, when the provider sends one) names this
    /// provider: an answer another provider sent through this one's sign-in is refused.
    pub fn issued_here(&self, iss: Option<&str>) -> bool {
        iss.is_none_or(|iss| {
            iss.trim_end_matches('/') == self.issuer.as_str().trim_end_matches('/')
        })
    }

    /// The person the provider vouches for, from the `code` it gave the browser for `flow`
    /// (whose `state` the caller has matched).
    pub async fn finish(
        &self,
        redirect_uri: &str,
        code: &str,
        flow: &Flow,
    ) -> Result<Entry, OidcError> {
        let client = self.client(self.metadata(false).await?, redirect_uri)?;
        let response = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| OidcError::Unreachable(error_chain(&e)))?
            .set_pkce_verifier(PkceCodeVerifier::new(flow.verifier.clone()))
            .request_async(&self.guarded())
            .await
            .map_err(|e| match e {
                openidconnect::RequestTokenError::Request(e) => {
                    OidcError::Unreachable(format!("token endpoint: {}", error_chain(&e)))
                }
                e => OidcError::Refused(format!("token endpoint: {}", error_chain(&e))),
            })?;
        let token = response
            .id_token()
            .ok_or_else(|| OidcError::Refused("the token endpoint sent no ID token".into()))?;
        let nonce = Nonce::new(flow.nonce.clone());
        let claims = match token.claims(&client.id_token_verifier(), &nonce) {
            Ok(claims) => claims.clone(),
            // A key the cached set lacks (the provider rotated its keys): once more with
            // the keys fetched again.
            Err(openidconnect::ClaimsVerificationError::SignatureVerification(_)) => {
                let client = self.client(self.metadata(true).await?, redirect_uri)?;
                let verifier = client.id_token_verifier();
                let claims = token
                    .claims(&verifier, &nonce)
                    .map_err(|e| OidcError::Refused(format!("ID token: {}", error_chain(&e))))?
                    .clone();
                claims
            }
            Err(e) => return Err(OidcError::Refused(format!("ID token: {}", error_chain(&e)))),
        };
        // The claims beyond the standard ones (the groups), from the token just verified.
        let extra = payload_of(&token.to_string()).unwrap_or_default();
        let email = claims
            .email()
            .map(|e| e.as_str().trim().to_lowercase())
            .filter(|e| !e.is_empty())
            .ok_or_else(|| OidcError::NoAddress("the ID token has no email claim".into()))?;
        // An address counts only when the provider says it checked it: accounts are matched by
        // address, so an unchecked one would let whoever typed it into the provider in.
        match claims.email_verified() {
            Some(true) => {}
            None if self.trust_unverified_email => {}
            Some(false) => {
                return Err(OidcError::NoAddress(
                    "the provider says the address is not verified".into(),
                ))
            }
            None => {
                return Err(OidcError::NoAddress(
                    "the ID token has no email_verified claim (set trust_unverified_email for a \
                     provider that only gives addresses it checked)"
                        .into(),
                ))
            }
        }
        let localized = |c: Option<&openidconnect::LocalizedClaim<openidconnect::EndUserName>>| {
            c.and_then(|names| names.get(None))
                .map(|n| n.as_str().trim().to_owned())
                .filter(|n| !n.is_empty())
        };
        let full_name = localized(claims.name())
            .or_else(|| {
                let given = claims
                    .given_name()
                    .and_then(|n| n.get(None))
                    .map(|n| n.as_str().trim().to_owned());
                let family = claims
                    .family_name()
                    .and_then(|n| n.get(None))
                    .map(|n| n.as_str().trim().to_owned());
                let joined = [given, family]
                    .into_iter()
                    .flatten()
                    .filter(|n| !n.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
                (!joined.is_empty()).then_some(joined)
            })
            .or_else(|| {
                claims
                    .preferred_username()
                    .map(|n| n.as_str().trim().to_owned())
                    .filter(|n| !n.is_empty())
            })
            .unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_owned());
        Ok(self.entry(email, full_name, &extra))
    }

    /// The entry of a person with these claims: the role of their strongest role group and
    /// their synced groups, when a groups claim is configured (a list, or one string).
    fn entry(&self, email: String, full_name: String, extra: &serde_json::Value) -> Entry {
        let groups: Vec<String> = match &self.groups_claim {
            Some(claim) => match &extra[claim.as_str()] {
                serde_json::Value::Array(items) => items
                    .iter()
                    .filter_map(|g| g.as_str())
                    .map(str::to_owned)
                    .collect(),
                serde_json::Value::String(one) => vec![one.clone()],
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        self.groups.entry(email, &full_name, groups)
    }
}

/// The JSON payload of a compact JWT (not checked here: only for a token already verified).
fn payload_of(token: &str) -> Option<serde_json::Value> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// An error and its causes on one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Role;
    use std::collections::BTreeSet;

    fn provider(s: OidcSettings) -> Result<Provider, String> {
        Provider::from_settings("corp", &s, Arc::new(Guard::new(Vec::new())))
    }

    fn settings() -> OidcSettings {
        OidcSettings {
            issuer: "https://sso.example.com/realms/corp".into(),
            client_id: "chronicle".into(),
            ..OidcSettings::default()
        }
    }

    #[test]
    fn a_provider_on_a_private_address_needs_allowing() {
        let error = provider(OidcSettings {
            issuer: "http://127.0.0.1:9000/".into(),
            ..settings()
        })
        .unwrap_err();
        assert!(error.starts_with("oidc.corp.issuer: 127.0.0.1"), "{error}");
        let allowed = Provider::from_settings(
            "corp",
            &OidcSettings {
                issuer: "http://127.0.0.1:9000/".into(),
                ..settings()
            },
            Arc::new(Guard::new(vec!["127.0.0.1".parse().unwrap()])),
        );
        assert!(allowed.is_ok());
        let error = provider(OidcSettings {
            owner_group: Some("admins".into()),
            ..settings()
        })
        .unwrap_err();
        assert!(error.contains("groups_claim"), "{error}");
    }

    /// A discovery document that sends the server's key fetch to a private address is refused
    /// before anything is sent there, although the crate fetches the keys within discovery.
    #[tokio::test]
    async fn keys_on_a_disallowed_address_are_never_fetched() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let document = serde_json::json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/auth"),
            "token_endpoint": format!("{issuer}/token"),
            "jwks_uri": "http://10.0.0.1/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        })
        .to_string();
        let served = std::thread::spawn(move || {
            let mut served = 0;
            while let Ok((mut stream, _)) = listener.accept() {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{document}",
                    document.len()
                );
                served += 1;
                if served == 1 {
                    break;
                }
            }
        });
        let p = Provider::from_settings(
            "corp",
            &OidcSettings {
                issuer: issuer.clone(),
                ..settings()
            },
            Arc::new(Guard::new(vec!["127.0.0.1".parse().unwrap()])),
        )
        .unwrap();
        let error = p
            .start("http://127.0.0.1:1/complete/oidc/", None, 0)
            .await
            .unwrap_err();
        served.join().unwrap();
        match error {
            OidcError::Unreachable(why) => assert!(
                why.contains("10.0.0.1 is a private or disallowed network address"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
    }

    /// While the provider cannot be reached, sign-ins get the last failure at once instead of
    /// each waiting for an attempt of its own.
    #[tokio::test]
    async fn an_unreachable_provider_is_asked_once_at_a_time() {
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let p = Provider::from_settings(
            "corp",
            &OidcSettings {
                issuer: format!("http://127.0.0.1:{port}"),
                ..settings()
            },
            Arc::new(Guard::new(vec!["127.0.0.1".parse().unwrap()])),
        )
        .unwrap();
        let redirect = "http://127.0.0.1:1/complete/oidc/";
        let first = p.start(redirect, None, 0).await.unwrap_err();
        let second = p.start(redirect, None, 0).await.unwrap_err();
        match (first, second) {
            (OidcError::Unreachable(first), OidcError::Unreachable(second)) => {
                assert!(!first.contains("a moment ago"), "{first}");
                assert_eq!(second, format!("{first} (the last attempt, a moment ago)"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn roles_and_synced_groups_come_from_the_groups_claim() {
        let p = provider(OidcSettings {
            groups_claim: Some("groups".into()),
            admin_group: Some("chat-admins".into()),
            guest_group: Some("contractors".into()),
            synced_groups: Some(vec!["Design".into()]),
            ..settings()
        })
        .unwrap();
        let e = p.entry(
            "a@example.com".into(),
            "A".into(),
            &serde_json::json!({"groups": ["/design", "/chat-admins", "/contractors"]}),
        );
        assert_eq!(e.role, Some(Role::Administrator));
        assert_eq!(e.groups, BTreeSet::from(["design".to_owned()]));
        let e = p.entry(
            "b@example.com".into(),
            "B".into(),
            &serde_json::json!({"groups": "contractors"}),
        );
        assert_eq!(e.role, Some(Role::Guest));
        let e = p.entry("c@example.com".into(), "C".into(), &serde_json::json!({}));
        assert_eq!(e.role, Some(Role::Member));
        assert!(e.groups.is_empty());
    }
}

//! Talking to Zulip's push notification service (the "bouncer", `push.zulipchat.com`) as a
//! self-hosted Zulip server does (`zerver/lib/remote_server.py`): `POST /api/v1/remotes/...`
//! with HTTP Basic authentication (the server's `zulip_org_id` and `zulip_org_key`), forms or
//! JSON, through the outgoing guard, 15 seconds a request. A network error or a 5xx answer is
//! worth trying again; a 4xx answer is the service's decision.

use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Zulip's `PushBouncerSession` timeout.
const TIMEOUT: Duration = Duration::from_secs(15);

/// The service's address when none is configured.
pub const DEFAULT_URL: &str = "https://push.zulipchat.com";

/// This server's registration with the service.
#[derive(Clone)]
pub struct Bouncer {
    client: reqwest::Client,
    /// Without a trailing slash.
    url: String,
    org_id: String,
    org_key: String,
    /// Sent as `User-Agent`, as Zulip's `ZulipServer/<version>`.
    agent: String,
}

impl std::fmt::Debug for Bouncer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bouncer")
            .field("url", &self.url)
            .field("org_id", &self.org_id)
            .finish_non_exhaustive()
    }
}

/// Why a request to the service did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BouncerError {
    /// The service could not be reached, or failed itself (5xx): try again later.
    pub retry: bool,
    /// No answer came at all (the network, a timeout).
    pub unreachable: bool,
    /// The service's error code, when it answered one.
    pub code: Option<String>,
    pub msg: String,
}

impl std::fmt::Display for BouncerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{code}: {}", self.msg),
            None => write!(f, "{}", self.msg),
        }
    }
}

/// A request's body.
pub enum Body<'a> {
    Form(&'a [(&'a str, String)]),
    Json(&'a Value),
}

impl Bouncer {
    /// The service at `url` (`None`: Zulip's), reached through `guard`.
    pub fn new(
        url: Option<&str>,
        org_id: &str,
        org_key: &str,
        guard: &Arc<crate::outgoing::Guard>,
    ) -> Result<Bouncer, String> {
        let url = url.unwrap_or(DEFAULT_URL).trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&url).map_err(|e| format!("push.url {url}: {e}"))?;
        let loopback = parsed.host_str().is_some_and(|h| {
            h == "localhost"
                || h.trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        if parsed.scheme() != "https" && !loopback {
            return Err(format!("push.url must be https (or on loopback): {url}"));
        }
        if uuid::Uuid::parse_str(org_id).is_err() {
            return Err(
                "push.zulip_org_id must be the UUID the service knows this server by".into(),
            );
        }
        if org_key.len() != 64 {
            return Err("push.zulip_org_key must be the 64-character key of this server".into());
        }
        Ok(Bouncer {
            client: guard
                .client(TIMEOUT)
                .map_err(|e| format!("the push service's client: {e}"))?,
            url,
            org_id: org_id.to_owned(),
            org_key: org_key.to_owned(),
            agent: format!("ZulipServer/{}", crate::render::ZULIP_VERSION),
        })
    }

    /// `POST /api/v1/remotes/{endpoint}` with this server's credentials (`authenticated`) or
    /// none (the registration itself): the answer's JSON when it succeeded.
    pub async fn post(
        &self,
        endpoint: &str,
        body: Body<'_>,
        authenticated: bool,
    ) -> Result<Value, BouncerError> {
        let mut request = self
            .client
            .post(format!("{}/api/v1/remotes/{endpoint}", self.url))
            .header(reqwest::header::USER_AGENT, &self.agent);
        if authenticated {
            request = request.basic_auth(&self.org_id, Some(&self.org_key));
        }
        request = match body {
            Body::Form(fields) => request.form(fields),
            Body::Json(value) => request.json(value),
        };
        let response = request.send().await.map_err(|e| BouncerError {
            retry: true,
            unreachable: true,
            code: None,
            msg: format!("Network error while connecting to Zulip push notification service: {e}"),
        })?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status.is_success() && json["result"] == "success" {
            return Ok(json);
        }
        let msg = json["msg"].as_str().map(str::to_owned).unwrap_or_else(|| {
            if status.is_server_error() {
                "Internal server error on Zulip push notification service, retry later.".into()
            } else {
                format!("The push notification service answered {status}")
            }
        });
        Err(BouncerError {
            retry: status.is_server_error(),
            unreachable: false,
            code: json["code"].as_str().map(str::to_owned),
            msg,
        })
    }

    /// `register_server`: registers (or updates) this server with the service.
    pub async fn register_server(
        &self,
        hostname: &str,
        contact_email: &str,
    ) -> Result<bool, BouncerError> {
        let fields = [
            ("zulip_org_id", self.org_id.clone()),
            ("zulip_org_key", self.org_key.clone()),
            ("hostname", hostname.to_owned()),
            ("contact_email", contact_email.to_owned()),
        ];
        let answer = self
            .post("server/register", Body::Form(&fields), false)
            .await?;
        Ok(answer["created"].as_bool().unwrap_or(false))
    }
}

/// A UUID (version 4 form) derived from the server's secret for `label` and `id`: the
/// organization's `realm_uuid` and each person's `user_uuid`, stable across restarts and
/// known to nobody else.
pub fn derived_uuid(secret: &crate::auth::ServerSecret, label: &[u8], id: u64) -> String {
    let bytes = secret.derive_bytes(label, id, "");
    let mut raw = [0u8; 16];
    raw.copy_from_slice(&bytes[..16]);
    uuid::Builder::from_random_bytes(raw)
        .into_uuid()
        .hyphenated()
        .to_string()
}

/// The organization's UUID at the service.
pub fn realm_uuid(secret: &crate::auth::ServerSecret) -> String {
    derived_uuid(secret, b"realm-uuid\0", 0)
}

/// A person's UUID at the service.
pub fn user_uuid(secret: &crate::auth::ServerSecret, user: crate::ids::UserId) -> String {
    derived_uuid(secret, b"user-uuid\0", user.0)
}

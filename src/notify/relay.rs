//! Handing emails over: to an SMTP relay (plain on a local network, STARTTLS, or TLS from the
//! first byte; with a login when the relay asks for one), or, with no relay configured, into
//! the outbox directory (`DATA_DIR/outbox/`, one `.eml` file each) for an administrator to read
//! or forward.

use super::mail::Email;
use std::path::PathBuf;
use std::time::Duration;

/// How long one conversation with the relay may take.
const RELAY_TIMEOUT: Duration = Duration::from_secs(30);

/// How a relay is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// `smtp://`: no TLS (a relay on this machine or a trusted network).
    Plain,
    /// `smtp+starttls://`: STARTTLS, required (port 587 by default).
    StartTls,
    /// `smtps://`: TLS from the first byte (port 465 by default).
    Tls,
}

/// What the operator configured for the relay (`[mail]`).
#[derive(Debug, Clone, Default)]
pub struct RelaySettings {
    /// `smtp://HOST[:PORT]`, `smtp+starttls://HOST[:PORT]` or `smtps://HOST[:PORT]`.
    pub url: Option<String>,
    pub username: Option<String>,
    /// A secret: never logged, never printed by `config check`.
    pub password: Option<String>,
    /// The certificate authority of a relay with a private certificate (PEM).
    pub ca_file: Option<PathBuf>,
    /// The sender address (default `noreply@` the server's host name).
    pub from_address: Option<String>,
}

/// An SMTP relay and the sender address mails carry.
#[derive(Clone)]
pub struct Smtp {
    transport: lettre::AsyncSmtpTransport<lettre::Tokio1Executor>,
    /// The bare sender address.
    pub from_address: lettre::Address,
}

impl std::fmt::Debug for Smtp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smtp")
            .field("from_address", &self.from_address)
            .finish_non_exhaustive()
    }
}

/// `(security, host, port)` of a relay URL.
pub fn parse_url(url: &str) -> Result<(Security, String, u16), String> {
    let (security, rest, default_port) = if let Some(rest) = url.strip_prefix("smtp://") {
        (Security::Plain, rest, 25)
    } else if let Some(rest) = url.strip_prefix("smtp+starttls://") {
        (Security::StartTls, rest, 587)
    } else if let Some(rest) = url.strip_prefix("smtps://") {
        (Security::Tls, rest, 465)
    } else {
        return Err(format!(
            "mail.smtp_url must be smtp://, smtp+starttls:// or smtps:// HOST[:PORT], not {url}"
        ));
    };
    let rest = rest.trim_end_matches('/');
    if rest.contains(['@', '/', '?']) {
        return Err(format!(
            "mail.smtp_url is HOST[:PORT] only (credentials go in mail.smtp_username and \
             mail.smtp_password), not {url}"
        ));
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (
            host,
            port.parse::<u16>()
                .map_err(|_| format!("bad port in mail.smtp_url {url}"))?,
        ),
        None => (rest, default_port),
    };
    if host.is_empty() {
        return Err(format!("no host in mail.smtp_url {url}"));
    }
    Ok((security, host.to_owned(), port))
}

impl Smtp {
    /// The relay `settings` name (`settings.url` must be set); `host` is the server's own host
    /// name, for the default sender address.
    pub fn new(settings: &RelaySettings, host: &str) -> Result<Smtp, String> {
        use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
        type Transport = lettre::AsyncSmtpTransport<lettre::Tokio1Executor>;
        let url = settings.url.as_deref().unwrap_or_default();
        let (security, relay_host, port) = parse_url(url)?;
        let mut tls = TlsParameters::builder(relay_host.clone());
        if let Some(path) = &settings.ca_file {
            let pem =
                std::fs::read(path).map_err(|e| format!("mail.ca_file {}: {e}", path.display()))?;
            tls = tls.add_root_certificate(
                Certificate::from_pem(&pem)
                    .map_err(|e| format!("mail.ca_file {}: {e}", path.display()))?,
            );
        }
        let tls = || {
            tls.clone()
                .build_rustls()
                .map_err(|e| format!("TLS for mail.smtp_url: {e}"))
        };
        let mut builder = Transport::builder_dangerous(relay_host.clone()).port(port);
        builder = match security {
            Security::Plain => builder,
            Security::StartTls => builder.tls(Tls::Required(tls()?)),
            Security::Tls => builder.tls(Tls::Wrapper(tls()?)),
        };
        match (&settings.username, &settings.password) {
            (Some(user), Some(password)) => {
                if security == Security::Plain && !is_loopback(&relay_host) {
                    return Err(
                        "mail.smtp_password would cross the network in the clear: use \
                         smtp+starttls:// or smtps://"
                            .into(),
                    );
                }
                builder =
                    builder.credentials(lettre::transport::smtp::authentication::Credentials::new(
                        user.clone(),
                        password.clone(),
                    ));
            }
            (None, None) => {}
            _ => return Err("mail.smtp_username and mail.smtp_password go together".into()),
        }
        let from = settings
            .from_address
            .clone()
            .unwrap_or_else(|| format!("noreply@{host}"));
        let from_address = from
            .parse::<lettre::Address>()
            .map_err(|e| format!("mail.from_address {from}: {e}"))?;
        Ok(Smtp {
            transport: builder.timeout(Some(RELAY_TIMEOUT)).build(),
            from_address,
        })
    }

    /// Sends one message as built.
    pub async fn send(&self, message: lettre::Message) -> Result<(), SendError> {
        use lettre::AsyncTransport;
        self.transport
            .send(message)
            .await
            .map(|_| ())
            .map_err(|e| SendError {
                permanent: e.is_permanent(),
                reason: e.to_string(),
            })
    }
}

/// The name of a mail's file in the outbox: the time in milliseconds, then a number this
/// process gives each file in turn, then `tag`, so names sort in the order the mails were
/// written and two mails of one millisecond (a sign-up form answering two addresses at once)
/// never share a file, where the time alone let the second overwrite the first.
pub fn outbox_file_name(tag: &str) -> String {
    static WRITTEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 1_000_000;
    format!("{:013}-{n:06}-{tag}.eml", crate::time::now_ms())
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Why an email did not go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendError {
    /// The relay refused it for good (a 5xx answer): sending again would not help.
    pub permanent: bool,
    pub reason: String,
}

/// Where emails go: the relay, else the outbox.
#[derive(Debug, Clone)]
pub struct Relay {
    pub smtp: Option<Smtp>,
    pub outbox: Option<PathBuf>,
    /// The sender address when there is no relay (the outbox's mails carry it too).
    pub from_address: String,
}

/// `List-Unsubscribe`: one-click unsubscribing from a mail reader (RFC 2369, 8058).
#[derive(Clone)]
struct ListUnsubscribe(String);

impl lettre::message::header::Header for ListUnsubscribe {
    fn name() -> lettre::message::header::HeaderName {
        lettre::message::header::HeaderName::new_from_ascii_str("List-Unsubscribe")
    }

    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(ListUnsubscribe(s.to_owned()))
    }

    fn display(&self) -> lettre::message::header::HeaderValue {
        lettre::message::header::HeaderValue::new(Self::name(), self.0.clone())
    }
}

/// `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 8058).
#[derive(Clone)]
struct ListUnsubscribePost;

impl lettre::message::header::Header for ListUnsubscribePost {
    fn name() -> lettre::message::header::HeaderName {
        lettre::message::header::HeaderName::new_from_ascii_str("List-Unsubscribe-Post")
    }

    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(ListUnsubscribePost)
    }

    fn display(&self) -> lettre::message::header::HeaderValue {
        lettre::message::header::HeaderValue::new(Self::name(), "List-Unsubscribe=One-Click".into())
    }
}

impl Relay {
    /// `email` as a MIME message (plain text and HTML alternatives).
    pub fn build(&self, email: &Email) -> Result<lettre::Message, SendError> {
        use lettre::message::{Mailbox, MultiPart};
        let refuse = |reason: String| SendError {
            permanent: true,
            reason,
        };
        let from_address = match &self.smtp {
            Some(smtp) => smtp.from_address.clone(),
            None => self
                .from_address
                .parse()
                .map_err(|e| refuse(format!("sender address: {e}")))?,
        };
        let to = email
            .to_address
            .parse::<lettre::Address>()
            .map_err(|e| refuse(format!("recipient address: {e}")))?;
        let mut builder = lettre::Message::builder()
            .from(Mailbox::new(Some(email.from_name.clone()), from_address));
        if let Some(reply_to) = &email.reply_to {
            let address = reply_to
                .parse::<lettre::Address>()
                .map_err(|e| refuse(format!("reply address: {e}")))?;
            builder = builder.reply_to(Mailbox::new(Some("Chronicle".into()), address));
        }
        builder
            .to(Mailbox::new(Some(email.to_name.clone()), to))
            .subject(email.subject.clone())
            .message_id(Some(email.message_id.clone()))
            .header(ListUnsubscribe(format!("<{}>", email.unsubscribe_url)))
            .header(ListUnsubscribePost)
            .multipart(MultiPart::alternative_plain_html(
                email.text.clone(),
                email.html.clone(),
            ))
            .map_err(|e| refuse(format!("building the email: {e}")))
    }

    /// Hands `email` over: to the relay when there is one, else into the outbox.
    pub async fn send(&self, email: &Email, tag: &str) -> Result<(), SendError> {
        let message = self.build(email)?;
        match &self.smtp {
            Some(smtp) => smtp.send(message).await,
            None => self.write_outbox(&message.formatted(), tag),
        }
    }

    fn write_outbox(&self, bytes: &[u8], tag: &str) -> Result<(), SendError> {
        let Some(outbox) = &self.outbox else {
            return Ok(());
        };
        let name = outbox_file_name(tag);
        std::fs::create_dir_all(outbox)
            .and_then(|()| std::fs::write(outbox.join(name), bytes))
            .map_err(|e| SendError {
                permanent: false,
                reason: format!("writing to the outbox: {e}"),
            })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn outbox_names_of_one_millisecond_differ_and_sort_in_order() {
        let names: Vec<String> = (0..50)
            .map(|_| super::outbox_file_name("sign-up"))
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, names, "distinct, in the order written");
        assert!(names.iter().all(|n| n.ends_with("-sign-up.eml")));
    }
}

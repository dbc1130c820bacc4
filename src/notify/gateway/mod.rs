//! The email gateway: mail to a channel's address becomes a message in that channel, a reply
//! to a missed-message email becomes a message in the conversation it was about.
//!
//! Mail arrives over SMTP at a listener Chronicle runs (`[email_gateway] listen`, [`listener`]),
//! as Zulip 11's own `email_server` does: an organization's mail server (or the Internet, with
//! an MX record) hands mail for the gateway's domain to it. Recipients are checked at `RCPT TO`,
//! so mail to an address that is not one is refused while the sending server is still on the
//! line (no bounce of ours to a forged sender); a reply whose `From` is not the person the
//! address belongs to is refused at the end of `DATA`. Nothing is acknowledged (`250`) before
//! the message it makes is durable.
//!
//! Bounds: the size the operator allows (Zulip's 25 MiB by default, refused from `SIZE=` and
//! while reading), 100 recipients, lines of 4,096 bytes, five minutes a command, 32 connections
//! at once; the MIME parser ([`mail_parser`], Stalwart's) reads only what was accepted.

pub mod address;
pub mod body;
pub mod listener;

use crate::auth::ServerSecret;
use crate::commands::email_gateway::{post_email, EmailDestination};
use crate::engine::Engine;
use crate::ids::UserId;
use address::Target;
use mail_parser::MimeHeaders;
use std::sync::Arc;

/// Zulip's limit on one email (Postfix's `message_size_limit` in its configuration).
pub const DEFAULT_MAX_BYTES: usize = 25 << 20;

/// The gateway and what it posts with.
pub struct Gateway {
    pub engine: Arc<Engine>,
    pub secret: ServerSecret,
    /// The domain of its addresses (`LOCAL@domain`).
    pub domain: String,
    pub max_bytes: usize,
    pub uploads: crate::uploads::UploadStore,
    /// The largest attachment kept, and the organization's quota (bytes).
    pub max_file_bytes: u64,
    pub quota_bytes: Option<u64>,
}

/// Why an email was not taken: an SMTP reply and what the log says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: &'static str,
    pub reason: String,
}

impl Refusal {
    pub fn new(code: &'static str, reason: impl Into<String>) -> Refusal {
        Refusal {
            code,
            reason: reason.into(),
        }
    }
}

/// An email, read.
#[derive(Debug)]
pub struct Email {
    /// The sender's address.
    pub from: Option<String>,
    /// The sender as the message shows them (`Name <address>`).
    pub from_display: String,
    pub subject: String,
    pub text: String,
    /// An automatic reply (`Auto-Submitted` other than `no`).
    pub auto_submitted: bool,
    /// Name, content type and bytes of each attachment.
    pub attachments: Vec<(String, String, Vec<u8>)>,
}

impl Gateway {
    /// The target `address` names, if it is one of the gateway's and can take mail now (at
    /// `RCPT TO`).
    pub fn check_recipient(&self, address: &str) -> Result<Target, Refusal> {
        let bad = || {
            Refusal::new(
                "550 5.1.1",
                format!("Bad destination mailbox address: {address}"),
            )
        };
        let target = address::parse(&self.secret, &self.domain, address).ok_or_else(bad)?;
        let usable = self.engine.read(|state| match target {
            Target::Channel {
                channel, creator, ..
            } => {
                state.channels.get(channel).is_some_and(|c| !c.is_archived)
                    && state.users.get(creator).is_some_and(|u| u.is_active)
            }
            Target::Reply { user, message } => {
                state.users.get(user).is_some_and(|u| u.is_active)
                    && state.messages.get(message).is_some()
            }
        });
        if usable {
            Ok(target)
        } else {
            Err(bad())
        }
    }

    /// Reads `raw` and posts it to every target, as one decision each; the SMTP reply's error
    /// when it is refused.
    pub async fn deliver(&self, raw: &[u8], targets: &[Target]) -> Result<(), Refusal> {
        let email = read(raw, targets)
            .ok_or_else(|| Refusal::new("550 5.6.0", "The email could not be read as a message"))?;
        if email.auto_submitted {
            // An out-of-office answer to a notification must not land in the conversation.
            tracing::info!("email gateway: an automatic reply was dropped");
            return Ok(());
        }
        // Every target is checked before anything is posted.
        let mut posts = Vec::new();
        for target in targets {
            posts.push(self.destination(target, &email)?);
        }
        for (destination, options) in posts {
            let sender = match &destination {
                EmailDestination::Channel {
                    sender, creator, ..
                } => sender.unwrap_or(*creator),
                EmailDestination::Reply { user, .. } => *user,
            };
            let mut content =
                body::reply_text(&email.text, options.include_quotes, options.include_footer);
            if options.show_sender {
                content = format!("**From:** {}\n\n{content}", email.from_display);
            }
            for link in self.attach(&email, sender).await? {
                content.push('\n');
                content.push_str(&link);
            }
            let posted = self
                .engine
                .execute(None, move |state, ctx| {
                    post_email(state, ctx, &destination, &content)
                })
                .await;
            if let Err(error) = posted {
                let reason = error.body()["msg"].as_str().unwrap_or_default().to_owned();
                return Err(Refusal::new(
                    "550 5.7.1",
                    format!("Permission denied: {reason}"),
                ));
            }
        }
        Ok(())
    }

    /// Where one target posts the email, after checking who sent it.
    fn destination(
        &self,
        target: &Target,
        email: &Email,
    ) -> Result<(EmailDestination, address::Options), Refusal> {
        match *target {
            Target::Channel {
                channel,
                creator,
                sender,
                options,
            } => {
                // Sender 0: the email gateway bot (whose id is not known before its first
                // message).
                let sender = (sender != address::GATEWAY_BOT).then_some(sender);
                Ok((
                    EmailDestination::Channel {
                        channel,
                        topic: body::topic_from_subject(&email.subject),
                        creator,
                        sender,
                    },
                    options,
                ))
            }
            Target::Reply { user, message } => {
                // Whoever knows the address could write it; the email must at least say it is
                // from the person it belongs to.
                let owner = self
                    .engine
                    .read(|s| s.users.get(user).map(|u| u.email.to_ascii_lowercase()));
                let from = email.from.as_deref().map(str::to_ascii_lowercase);
                if owner.is_none() || from != owner {
                    return Err(Refusal::new(
                        "550 5.7.1",
                        format!(
                            "Forged sender: a reply to a notification must come from its \
                             recipient, not {}",
                            email.from.as_deref().unwrap_or("an unnamed sender")
                        ),
                    ));
                }
                Ok((
                    EmailDestination::Reply { user, message },
                    address::Options::default(),
                ))
            }
        }
    }

    /// Stores the email's attachments as uploads of `sender`: the Markdown links to them.
    async fn attach(&self, email: &Email, sender: UserId) -> Result<Vec<String>, Refusal> {
        let mut links = Vec::new();
        for (name, content_type, bytes) in &email.attachments {
            if bytes.len() as u64 > self.max_file_bytes {
                return Err(Refusal::new(
                    "552 5.3.4",
                    format!("Attachment {name} is larger than the server takes"),
                ));
            }
            let store = self.uploads.clone();
            let data = bytes.clone();
            let (sha256, image) = tokio::task::spawn_blocking(move || {
                let sha256 = store.put(&data)?;
                // An image gets its thumbnails and a preview, as one uploaded through the API.
                let image =
                    crate::uploads::sniff_image(&data).and_then(|_| store.make_thumbnails(&sha256));
                Ok::<_, std::io::Error>((sha256, image))
            })
            .await
            .map_err(|e| Refusal::new("451 4.3.0", e.to_string()))?
            .map_err(|e| Refusal::new("451 4.3.0", format!("storing an attachment: {e}")))?;
            let upload = crate::commands::attachments::StoredUpload {
                image,
                content_type: crate::uploads::sniff_image(bytes)
                    .map_or_else(|| content_type.clone(), str::to_owned),
                random: uuid::Uuid::new_v4().simple().to_string()[..24].to_owned(),
                name: crate::uploads::sanitize_name(name),
                size: bytes.len() as u64,
                sha256,
            };
            let quota = self.quota_bytes;
            let path = self
                .engine
                .execute(Some(sender), move |s, ctx| {
                    crate::commands::attachments::record_upload(s, ctx, upload.clone(), quota)
                })
                .await
                .map_err(|e| Refusal::new("552 5.3.4", e.to_string()))?;
            links.push(format!(
                "[{}](/user_uploads/{})",
                body::link_name(name),
                path.value
            ));
        }
        Ok(links)
    }
}

/// The parts of `raw` the gateway uses: the text (plain text, or the HTML part as text; the
/// other way round with `prefer-html`), the sender, the subject, whether it is an automatic
/// reply, and the attachments.
fn read(raw: &[u8], targets: &[Target]) -> Option<Email> {
    let prefer_html = targets
        .iter()
        .any(|t| matches!(t, Target::Channel { options, .. } if options.prefer_html));
    read_email(raw, prefer_html)
}

/// [`read`] with the preference given (public for the fuzz target).
pub fn read_email(raw: &[u8], prefer_html: bool) -> Option<Email> {
    let message = mail_parser::MessageParser::default().parse(raw)?;
    let plain = message.body_text(0).filter(|t| !t.trim().is_empty());
    let html = message
        .body_html(0)
        .map(|h| mail_parser::decoders::html::html_to_text(&h));
    let text = if prefer_html {
        html.or(plain.map(|t| t.into_owned()))
    } else {
        plain.map(|t| t.into_owned()).or(html)
    }
    .unwrap_or_default();
    let sender = message.from().and_then(|a| a.first());
    let from = sender.and_then(|a| a.address()).map(str::to_owned);
    let from_display = match (sender.and_then(|a| a.name()), &from) {
        (Some(name), Some(addr)) => format!("{name} <{addr}>"),
        (None, Some(addr)) => addr.clone(),
        _ => "an unnamed sender".to_owned(),
    };
    let auto_submitted = message
        .header_raw("Auto-Submitted")
        .is_some_and(|v| !v.trim().eq_ignore_ascii_case("no"));
    let attachments = message
        .attachments()
        .filter_map(|part| {
            let name = part.attachment_name()?.to_owned();
            let content_type = part
                .content_type()
                .map(|ct| match ct.subtype() {
                    Some(sub) => format!("{}/{}", ct.ctype(), sub),
                    None => ct.ctype().to_owned(),
                })
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            Some((name, content_type, part.contents().to_vec()))
        })
        .collect();
    Some(Email {
        from,
        from_display,
        subject: message.subject().unwrap_or_default().to_owned(),
        text,
        auto_submitted,
        attachments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_read_into_text_sender_subject_and_attachments() {
        let reply = read_email(
            include_bytes!("../../../tests/fixtures/email/reply.eml"),
            false,
        )
        .unwrap();
        assert_eq!(reply.from.as_deref(), Some("ben@example.com"));
        assert_eq!(reply.from_display, "Ben Lovelace <ben@example.com>");
        assert!(
            !reply.auto_submitted,
            "Auto-Submitted: no is a person's mail"
        );
        assert_eq!(
            body::reply_text(&reply.text, false, false),
            "Friday works for me."
        );
        let html = read_email(
            include_bytes!("../../../tests/fixtures/email/html-with-attachment.eml"),
            false,
        )
        .unwrap();
        assert_eq!(html.subject, "Fwd: Quarterly numbers ✓");
        assert_eq!(
            body::topic_from_subject(&html.subject),
            "Quarterly numbers ✓"
        );
        assert!(html.text.contains("Numbers attached."), "{:?}", html.text);
        assert_eq!(
            html.attachments,
            vec![(
                "numbers.csv".to_owned(),
                "text/csv".to_owned(),
                b"Q1,42\n".to_vec()
            )]
        );
        assert!(
            read_email(b"", false).is_none()
                || read_email(b"", false).is_some_and(|e| e.text.is_empty())
        );
    }
}

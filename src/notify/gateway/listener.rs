//! The gateway's SMTP listener (RFC 5321, the receiving side): `EHLO`/`HELO`, `MAIL FROM`,
//! `RCPT TO` (checked at once), `DATA`, `RSET`, `NOOP`, `QUIT`. No relaying: only the gateway's
//! own addresses are taken. No TLS of its own: it listens on a private address behind the
//! organization's mail server, or on loopback (say so in DNS and in that server's transport
//! map, docs/notifications.md).

use super::address::Target;
use super::{Gateway, Refusal};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest command or text line taken (RFC 5321 says 1,000 octets; some mailers write
/// longer text lines).
const MAX_LINE: usize = 4096;
/// The most recipients one message may name.
const MAX_RECIPIENTS: usize = 100;
/// How long a client may take over one command, and over all of `DATA`.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);
const DATA_TIMEOUT: Duration = Duration::from_secs(600);
/// Connections served at once.
const MAX_CONNECTIONS: usize = 32;
/// Bad commands before the connection is closed.
const MAX_ERRORS: usize = 10;

/// What the listener hands mail to: the gateway, or a stand-in in tests and fuzzing.
pub trait Mailroom {
    /// The domain the listener greets with.
    fn domain(&self) -> &str;
    /// The largest message taken, in bytes.
    fn max_bytes(&self) -> usize;
    /// Whether an address takes mail (at `RCPT TO`).
    fn check_recipient(&self, address: &str) -> Result<Target, Refusal>;
    /// Takes a message for its accepted recipients.
    fn deliver(
        &self,
        raw: &[u8],
        targets: &[Target],
    ) -> impl std::future::Future<Output = Result<(), Refusal>> + Send;
}

impl Mailroom for Gateway {
    fn domain(&self) -> &str {
        &self.domain
    }

    fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    fn check_recipient(&self, address: &str) -> Result<Target, Refusal> {
        Gateway::check_recipient(self, address)
    }

    fn deliver(
        &self,
        raw: &[u8],
        targets: &[Target],
    ) -> impl std::future::Future<Output = Result<(), Refusal>> + Send {
        Gateway::deliver(self, raw, targets)
    }
}

/// Serves `listener` until the server stops.
pub async fn serve(listener: tokio::net::TcpListener, gateway: Arc<Gateway>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let (read, write) = stream.into_split();
            if let Err(error) = session(read, write, gateway.as_ref()).await {
                tracing::debug!(%peer, %error, "email gateway: connection ended");
            }
            drop(slot);
        });
    }
}

/// One line, without its line ending; `None` at the end of the stream. A line longer than
/// [`MAX_LINE`] is an error (its rest is not read).
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    buffer: &mut Vec<u8>,
) -> std::io::Result<Option<Result<(), ()>>> {
    buffer.clear();
    let mut limited = (&mut *reader).take(MAX_LINE as u64 + 2);
    let n = limited.read_until(b'\n', buffer).await?;
    if n == 0 {
        return Ok(None);
    }
    if !buffer.ends_with(b"\n") {
        return Ok(Some(Err(())));
    }
    buffer.pop();
    if buffer.ends_with(b"\r") {
        buffer.pop();
    }
    Ok(Some(Ok(())))
}

use tokio::io::AsyncReadExt;

/// The address in `MAIL FROM:<...>` or `RCPT TO:<...>` (parameters after it ignored).
fn path_of(argument: &str) -> Option<String> {
    let rest = argument.trim();
    let start = rest.find('<')?;
    let end = rest[start..].find('>')? + start;
    Some(rest[start + 1..end].to_owned())
}

/// The `SIZE=` a client declared in `MAIL FROM`.
fn declared_size(argument: &str) -> Option<usize> {
    argument
        .split_whitespace()
        .find_map(|p| {
            p.to_ascii_uppercase()
                .strip_prefix("SIZE=")
                .map(str::to_owned)
        })
        .and_then(|n| n.parse().ok())
}

/// One client's conversation.
pub async fn session<R, W, M>(read: R, mut write: W, gateway: &M) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    M: Mailroom,
{
    let mut reader = BufReader::new(read);
    let domain = gateway.domain().to_owned();
    let reply = |text: String| text + "\r\n";
    write
        .write_all(reply(format!("220 {domain} Chronicle email gateway ESMTP")).as_bytes())
        .await?;
    let mut line = Vec::new();
    let mut mail_from: Option<String> = None;
    let mut targets: Vec<Target> = Vec::new();
    let mut errors = 0;
    loop {
        let got =
            match tokio::time::timeout(COMMAND_TIMEOUT, read_line(&mut reader, &mut line)).await {
                Ok(got) => got?,
                Err(_) => {
                    write.write_all(b"421 4.4.2 Timeout, closing\r\n").await?;
                    return Ok(());
                }
            };
        let answer = match got {
            None => return Ok(()),
            Some(Err(())) => {
                errors += 1;
                "500 5.5.2 Line too long".to_owned()
            }
            Some(Ok(())) => {
                let text = String::from_utf8_lossy(&line).into_owned();
                let (verb, argument) = text.split_once(' ').unwrap_or((&text, ""));
                match verb.to_ascii_uppercase().as_str() {
                    "EHLO" => format!(
                        "250-{domain}\r\n250-SIZE {}\r\n250-8BITMIME\r\n250 SMTPUTF8",
                        gateway.max_bytes()
                    ),
                    "HELO" => format!("250 {domain}"),
                    "MAIL" => match argument.get(..5).map(str::to_ascii_uppercase).as_deref() {
                        Some("FROM:") => {
                            if declared_size(argument).is_some_and(|n| n > gateway.max_bytes()) {
                                "552 5.3.4 Message too big".to_owned()
                            } else {
                                mail_from = Some(path_of(&argument[5..]).unwrap_or_default());
                                targets.clear();
                                "250 2.1.0 OK".to_owned()
                            }
                        }
                        _ => {
                            errors += 1;
                            "501 5.5.4 Syntax: MAIL FROM:<address>".to_owned()
                        }
                    },
                    "RCPT" => match (
                        &mail_from,
                        argument.get(..3).map(str::to_ascii_uppercase).as_deref(),
                    ) {
                        (None, _) => "503 5.5.1 MAIL first".to_owned(),
                        (Some(_), Some("TO:")) if targets.len() >= MAX_RECIPIENTS => {
                            "452 4.5.3 Too many recipients".to_owned()
                        }
                        (Some(_), Some("TO:")) => {
                            let address = path_of(&argument[3..]).unwrap_or_default();
                            match gateway.check_recipient(&address) {
                                Ok(target) => {
                                    targets.push(target);
                                    "250 2.1.5 OK".to_owned()
                                }
                                Err(refusal) => {
                                    tracing::info!(reason = %refusal.reason, "email gateway: a recipient was refused");
                                    format!("{} {}", refusal.code, refusal.reason)
                                }
                            }
                        }
                        _ => {
                            errors += 1;
                            "501 5.5.4 Syntax: RCPT TO:<address>".to_owned()
                        }
                    },
                    "DATA" if targets.is_empty() => "503 5.5.1 RCPT first".to_owned(),
                    "DATA" => {
                        write
                            .write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                            .await?;
                        let data = tokio::time::timeout(
                            DATA_TIMEOUT,
                            read_data(&mut reader, gateway.max_bytes()),
                        )
                        .await;
                        let answer = match data {
                            Err(_) => {
                                write.write_all(b"421 4.4.2 Timeout, closing\r\n").await?;
                                return Ok(());
                            }
                            Ok(Err(error)) => return Err(error),
                            Ok(Ok(None)) => {
                                tracing::info!(
                                    "email gateway: an email over the size limit was refused"
                                );
                                "552 5.3.4 Message too big".to_owned()
                            }
                            Ok(Ok(Some(raw))) => match gateway.deliver(&raw, &targets).await {
                                Ok(()) => "250 2.0.0 OK: posted".to_owned(),
                                Err(refusal) => {
                                    tracing::warn!(reason = %refusal.reason, "email gateway: an email was refused");
                                    format!("{} {}", refusal.code, refusal.reason)
                                }
                            },
                        };
                        mail_from = None;
                        targets.clear();
                        answer
                    }
                    "RSET" => {
                        mail_from = None;
                        targets.clear();
                        "250 2.0.0 OK".to_owned()
                    }
                    "NOOP" => "250 2.0.0 OK".to_owned(),
                    "VRFY" => "252 2.5.0 Cannot verify, send some mail".to_owned(),
                    "QUIT" => {
                        write.write_all(b"221 2.0.0 Bye\r\n").await?;
                        return Ok(());
                    }
                    "STARTTLS" => "454 4.7.0 TLS not available here".to_owned(),
                    _ => {
                        errors += 1;
                        "502 5.5.2 Command not recognized".to_owned()
                    }
                }
            }
        };
        write.write_all(reply(answer).as_bytes()).await?;
        if errors >= MAX_ERRORS {
            write
                .write_all(b"421 4.7.0 Too many errors, closing\r\n")
                .await?;
            return Ok(());
        }
    }
}

/// The message after `DATA`, dot-unstuffed, lines ending in CRLF; `None` when it was larger
/// than `max` (read to its end all the same, so that the client hears the refusal).
async fn read_data<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    max: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut too_big = false;
    let mut line = Vec::new();
    let mut at_start = true;
    loop {
        // Long text lines are taken whole, in pieces of at most the line limit.
        line.clear();
        let n = (&mut *reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the client left in the middle of DATA",
            ));
        }
        let starts_line = at_start;
        at_start = line.ends_with(b"\n");
        if starts_line && (line == b".\r\n" || line == b".\n") {
            break;
        }
        let content = if starts_line {
            line.strip_prefix(b".").unwrap_or(&line)
        } else {
            &line[..]
        };
        if out.len() + content.len() > max {
            too_big = true;
            out.clear();
        }
        if !too_big {
            out.extend_from_slice(content);
        }
    }
    Ok((!too_big).then_some(out))
}

/// A mailroom that takes mail for any address at its domain and keeps it, for tests and the
/// fuzz target.
#[derive(Default)]
pub struct Keeper {
    pub kept: std::sync::Mutex<Vec<(Vec<u8>, usize)>>,
}

impl Mailroom for Keeper {
    fn domain(&self) -> &str {
        "gateway.test"
    }

    fn max_bytes(&self) -> usize {
        1024
    }

    fn check_recipient(&self, address: &str) -> Result<Target, Refusal> {
        if address.ends_with("@gateway.test") {
            Ok(Target::Reply {
                user: crate::ids::UserId(1),
                message: crate::ids::MessageId(1),
            })
        } else {
            Err(Refusal::new("550 5.1.1", "Bad destination mailbox address"))
        }
    }

    fn deliver(
        &self,
        raw: &[u8],
        targets: &[Target],
    ) -> impl std::future::Future<Output = Result<(), Refusal>> + Send {
        if let Ok(mut kept) = self.kept.lock() {
            kept.push((raw.to_vec(), targets.len()));
        }
        std::future::ready(Ok(()))
    }
}

/// What the listener answers a client that sends `input` and leaves (for the fuzz target and
/// tests): the replies, and the mail kept.
pub fn converse(input: &[u8]) -> (String, Vec<(Vec<u8>, usize)>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        return (String::new(), Vec::new());
    };
    let keeper = Keeper::default();
    let mut output = Vec::new();
    let _ = runtime.block_on(session(input, &mut output, &keeper));
    let kept = keeper.kept.into_inner().unwrap_or_default();
    (String::from_utf8_lossy(&output).into_owned(), kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_by_the_rules_and_its_refusals() {
        let (replies, kept) = converse(
            b"EHLO client.test\r\nMAIL FROM:<a@b.test>\r\nRCPT TO:<x@elsewhere.test>\r\n\
              RCPT TO:<one@gateway.test>\r\nRCPT TO:<two@gateway.test>\r\nDATA\r\n\
              Subject: hi\r\n\r\n..a dot-stuffed line\r\nline two\r\n.\r\nQUIT\r\n",
        );
        let codes: Vec<&str> = replies.lines().map(|l| &l[..3]).collect();
        assert_eq!(
            codes,
            ["220", "250", "250", "250", "250", "250", "550", "250", "250", "354", "250", "221"],
            "{replies}"
        );
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].1, 2, "two recipients");
        assert_eq!(
            kept[0].0,
            b"Subject: hi\r\n\r\n.a dot-stuffed line\r\nline two\r\n"
        );
    }

    #[test]
    fn order_size_and_line_limits_hold() {
        let (replies, kept) =
            converse(b"RCPT TO:<a@gateway.test>\r\nDATA\r\nMAIL FROM:<a@b> SIZE=99999\r\n");
        assert!(replies.contains("503 5.5.1 MAIL first"), "{replies}");
        assert!(replies.contains("503 5.5.1 RCPT first"), "{replies}");
        assert!(replies.contains("552 5.3.4"), "{replies}");
        assert!(kept.is_empty());
        let mut big = b"MAIL FROM:<a@b>\r\nRCPT TO:<a@gateway.test>\r\nDATA\r\n".to_vec();
        big.extend(std::iter::repeat_n(b"0123456789abcdef\r\n".as_slice(), 100).flatten());
        big.extend_from_slice(b".\r\nNOOP\r\n");
        let (replies, kept) = converse(&big);
        assert!(replies.contains("552 5.3.4 Message too big"), "{replies}");
        assert!(
            replies.trim_end().ends_with("250 2.0.0 OK"),
            "the session goes on: {replies}"
        );
        assert!(kept.is_empty());
        let long = [b"NOOP ".as_slice(), &[b'x'; 5000], b"\r\nNOOP\r\n"].concat();
        let (replies, _) = converse(&long);
        assert!(replies.contains("500 5.5.2 Line too long"), "{replies}");
        // A client that leaves in the middle of DATA gets nothing kept.
        let (_, kept) = converse(b"MAIL FROM:<a@b>\r\nRCPT TO:<a@gateway.test>\r\nDATA\r\nhalf");
        assert!(kept.is_empty());
    }
}

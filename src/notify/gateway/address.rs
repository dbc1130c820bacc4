//! The email gateway's addresses: a channel's (`GET /streams/{id}/email_address`) and the
//! reply address of a missed-message email. Each names what it posts to and as whom, with a MAC
//! under the server's secret, so nothing is stored and nobody can make one up; like Zulip's
//! tokens they do not expire (a new server secret retires them all).
//!
//! Local parts, as Zulip lays them out: `{channel-slug}.{token}[.option...]` for a channel, with
//! Zulip's options (`show-sender`, `include-footer`, `include-quotes`, `prefer-text`,
//! `prefer-html`; `+` works as well as `.`), and `mm{token}` for a reply. The token is
//! lowercase base32 of what the address names, as variable-length integers, and 10 bytes of
//! MAC.

use crate::auth::ServerSecret;
use crate::ids::{ChannelId, MessageId, UserId};

/// What an address posts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A channel: a new message in the topic the subject names, sent as `sender` (the email
    /// gateway bot, [`GATEWAY_BOT`], or the person who asked for the address, or a bot of
    /// theirs), with `creator`'s right to post checked when the sender is the gateway bot.
    Channel {
        channel: ChannelId,
        creator: UserId,
        sender: UserId,
        options: Options,
    },
    /// A reply to a missed-message email: from `user`, into the conversation of `message`.
    Reply { user: UserId, message: MessageId },
}

/// Zulip's address options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Start the message with who sent the email.
    pub show_sender: bool,
    /// Keep a signature after a `--` line.
    pub include_footer: bool,
    /// Keep quoted text (of the message replied to).
    pub include_quotes: bool,
    /// Take the HTML part before the plain-text one.
    pub prefer_html: bool,
}

/// The sender an address names for the email gateway bot.
pub const GATEWAY_BOT: UserId = UserId(0);

const CHANNEL: u8 = 1;
const REPLY: u8 = 2;
const MAC_BYTES: usize = 10;
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

fn push_varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut n: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

fn base32(bytes: &[u8]) -> String {
    crate::auth::base32(bytes).to_ascii_lowercase()
}

fn unbase32(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let value = ALPHABET.iter().position(|a| *a == c.to_ascii_lowercase())? as u32;
        buffer = (buffer << 5) | value;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    Some(out)
}

fn mac(secret: &ServerSecret, payload: &[u8]) -> [u8; MAC_BYTES] {
    let hex: String = payload.iter().map(|b| format!("{b:02x}")).collect();
    let full = secret.derive_bytes(b"email-gateway\0", 0, &hex);
    let mut out = [0u8; MAC_BYTES];
    out.copy_from_slice(&full[..MAC_BYTES]);
    out
}

fn token(secret: &ServerSecret, kind: u8, ids: &[u64]) -> String {
    let mut payload = vec![kind];
    for id in ids {
        push_varint(&mut payload, *id);
    }
    let mac = mac(secret, &payload);
    payload.extend_from_slice(&mac);
    base32(&payload)
}

/// The ids a token names, when it is of `kind` and its MAC holds.
fn read_token(secret: &ServerSecret, text: &str, kind: u8, count: usize) -> Option<Vec<u64>> {
    if text.len() > 64 {
        return None;
    }
    let bytes = unbase32(text)?;
    if bytes.first() != Some(&kind) || bytes.len() < 1 + MAC_BYTES {
        return None;
    }
    let mut at = 1;
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        ids.push(read_varint(&bytes, &mut at)?);
    }
    if at + MAC_BYTES != bytes.len() {
        return None;
    }
    let expected = mac(secret, &bytes[..at]);
    crate::auth::constant_time_eq(&expected, &bytes[at..]).then_some(ids)
}

/// A channel's name as the address shows it: lowercase letters, digits and `-` (none for a
/// name with other letters, as Zulip leaves such names out), at most 20 characters.
fn slug(name: &str) -> String {
    if !name.is_ascii() {
        return String::new();
    }
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-')
        .chars()
        .take(20)
        .collect::<String>()
        .trim_end_matches('-')
        .to_owned()
}

/// A channel's address at `domain`, posting as `sender` on behalf of `creator`.
pub fn channel_address(
    secret: &ServerSecret,
    domain: &str,
    channel_name: &str,
    channel: ChannelId,
    creator: UserId,
    sender: UserId,
    show_sender: bool,
) -> String {
    let token = token(secret, CHANNEL, &[channel.0, creator.0, sender.0]);
    let slug = slug(channel_name);
    let mut local = if slug.is_empty() {
        token
    } else {
        format!("{slug}.{token}")
    };
    if show_sender {
        local.push_str(".show-sender");
    }
    format!("{local}@{domain}")
}

/// The reply address of a missed-message email to `user` about `message`'s conversation.
pub fn reply_address(
    secret: &ServerSecret,
    domain: &str,
    user: UserId,
    message: MessageId,
) -> String {
    format!("mm{}@{domain}", token(secret, REPLY, &[user.0, message.0]))
}

/// What `address` posts to, when it is one of this gateway's (`domain`, case-insensitively).
pub fn parse(secret: &ServerSecret, domain: &str, address: &str) -> Option<Target> {
    let address = address.trim().trim_start_matches('<').trim_end_matches('>');
    let (local, at) = address.rsplit_once('@')?;
    if !at.eq_ignore_ascii_case(domain) || local.len() > 128 {
        return None;
    }
    let local = local.to_ascii_lowercase();
    if let Some(token) = local.strip_prefix("mm") {
        if let Some(ids) = read_token(secret, token, REPLY, 2) {
            return Some(Target::Reply {
                user: UserId(ids[0]),
                message: MessageId(ids[1]),
            });
        }
    }
    let mut options = Options::default();
    let mut parts = Vec::new();
    for part in local.split(['.', '+']) {
        match part {
            "show-sender" => options.show_sender = true,
            "include-footer" => options.include_footer = true,
            "include-quotes" => options.include_quotes = true,
            "prefer-html" => options.prefer_html = true,
            "prefer-text" => options.prefer_html = false,
            other => parts.push(other),
        }
    }
    // Zulip's rule: the token alone, or the second part after the channel's name.
    let token = match parts.as_slice() {
        [token] => *token,
        [_, token, ..] => *token,
        [] => return None,
    };
    let ids = read_token(secret, token, CHANNEL, 3)?;
    Some(Target::Channel {
        channel: ChannelId(ids[0]),
        creator: UserId(ids[1]),
        sender: UserId(ids[2]),
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_what_they_post_to_and_cannot_be_made_up() {
        let secret = ServerSecret::generate();
        let address = channel_address(
            &secret,
            "chat.example.com",
            "Design & Build!",
            ChannelId(12),
            UserId(3),
            UserId(40),
            true,
        );
        assert!(address.starts_with("design-build."), "{address}");
        assert!(
            address.ends_with(".show-sender@chat.example.com"),
            "{address}"
        );
        let target = parse(&secret, "CHAT.example.com", &address.to_uppercase()).unwrap();
        assert_eq!(
            target,
            Target::Channel {
                channel: ChannelId(12),
                creator: UserId(3),
                sender: UserId(40),
                options: Options {
                    show_sender: true,
                    ..Options::default()
                },
            }
        );
        let plus = address.replace(".show-sender", "+include-quotes+prefer-html");
        assert!(matches!(
            parse(&secret, "chat.example.com", &plus),
            Some(Target::Channel {
                options: Options {
                    include_quotes: true,
                    prefer_html: true,
                    show_sender: false,
                    ..
                },
                ..
            })
        ));
        let reply = reply_address(&secret, "chat.example.com", UserId(7), MessageId(123456));
        assert!(reply.starts_with("mm"));
        assert_eq!(
            parse(&secret, "chat.example.com", &reply),
            Some(Target::Reply {
                user: UserId(7),
                message: MessageId(123456)
            })
        );
        // Another secret, another domain, a changed character: nothing.
        assert_eq!(
            parse(&ServerSecret::generate(), "chat.example.com", &reply),
            None
        );
        assert_eq!(parse(&secret, "other.example.com", &reply), None);
        let mut forged = reply.clone().into_bytes();
        forged[5] = if forged[5] == b'a' { b'b' } else { b'a' };
        assert_eq!(
            parse(
                &secret,
                "chat.example.com",
                &String::from_utf8(forged).unwrap()
            ),
            None
        );
        assert_eq!(
            parse(&secret, "chat.example.com", "postmaster@chat.example.com"),
            None
        );
        assert_eq!(
            parse(&secret, "chat.example.com", "@chat.example.com"),
            None
        );
        // A name with other letters is left out, as Zulip does.
        let bare = channel_address(
            &secret,
            "d",
            "Café",
            ChannelId(1),
            UserId(1),
            UserId(1),
            false,
        );
        assert!(!bare.contains('.') || bare.starts_with(|c: char| c.is_ascii_lowercase()));
        assert!(parse(&secret, "d", &bare).is_some());
    }

    #[test]
    fn base32_round_trips() {
        for bytes in [
            &b""[..],
            b"\x00",
            b"\xff\x01\x80",
            b"hello world, 0123456789",
        ] {
            assert_eq!(unbase32(&base32(bytes)).unwrap(), bytes);
        }
    }
}

//! Mobile push through Zulip's push notification service, end-to-end encrypted as Zulip's
//! apps expect from feature level 468 on (zulip-flutter registers this way at Chronicle's
//! level): the app gives each device a key (`POST /mobile_push/register`), the server
//! encrypts every notification for it (libsodium's secretbox) and the service, which sees
//! only ciphertext, passes it to Apple or Google.
//!
//! The device's key is kept sealed under the server's secret (AES-256-GCM), so the log never
//! holds it in the clear; the token registration is sealed by the app for the service and
//! passed on as received.

pub mod bouncer;

use crate::auth::ServerSecret;
use crate::ids::{MessageId, UserId};
use crate::projections::{Address, Message, Projections};
use crate::render::Site;
use base64::Engine;
use serde_json::{json, Value};

/// The first byte of a push key: the cryptosystem (libsodium's secretbox).
const SECRETBOX_TAG: u8 = 0x31;
/// Zulip's cut of a notification's text (`truncate_content`).
const MAX_CONTENT_CHARS: usize = 200;
/// The most message ids one removal names (Zulip's `MAX_APNS_MESSAGE_IDS`).
pub const MAX_REMOVED_IDS: usize = 200;

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// The 32-byte key of a `push_key` (standard base64 of `0x31` and the key); `None` for
/// anything else.
pub fn parse_push_key(text: &str) -> Option<[u8; 32]> {
    let bytes = b64().decode(text).ok()?;
    if bytes.len() != 33 || bytes[0] != SECRETBOX_TAG {
        return None;
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(&bytes[1..]);
    Some(key)
}

/// A `token_id` (standard base64 of the first 8 bytes of the token's SHA-256) as Zulip keeps
/// it: a signed 64-bit integer.
pub fn parse_token_id(text: &str) -> Option<i64> {
    let bytes = b64().decode(text).ok()?;
    let bytes: [u8; 8] = bytes.try_into().ok()?;
    Some(i64::from_be_bytes(bytes))
}

fn sealing_key(secret: &ServerSecret, user: UserId, device: u64) -> ring::aead::LessSafeKey {
    let bytes = secret.derive_bytes(b"push-key-seal\0", user.0, &device.to_string());
    // A 32-byte key always makes an AES-256-GCM key.
    let unbound = ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &bytes)
        .unwrap_or_else(|_| unreachable!("32 bytes make an AES-256 key"));
    ring::aead::LessSafeKey::new(unbound)
}

/// A device's key sealed under the server's secret (for `PushChange::KeySet`).
pub fn seal_key(secret: &ServerSecret, user: UserId, device: u64, key: &[u8; 32]) -> String {
    let nonce = crate::auth::random_bytes::<12>();
    let mut sealed = key.to_vec();
    let _ = sealing_key(secret, user, device).seal_in_place_append_tag(
        ring::aead::Nonce::assume_unique_for_key(nonce),
        ring::aead::Aad::empty(),
        &mut sealed,
    );
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    b64().encode(out)
}

/// The key [`seal_key`] sealed, if it opens.
pub fn unseal_key(
    secret: &ServerSecret,
    user: UserId,
    device: u64,
    sealed: &str,
) -> Option<[u8; 32]> {
    let bytes = b64().decode(sealed).ok()?;
    if bytes.len() < 12 {
        return None;
    }
    let (nonce, rest) = bytes.split_at(12);
    let mut rest = rest.to_vec();
    let plain = sealing_key(secret, user, device)
        .open_in_place(
            ring::aead::Nonce::try_assume_unique_for_key(nonce).ok()?,
            ring::aead::Aad::empty(),
            &mut rest,
        )
        .ok()?;
    plain.try_into().ok()
}

/// `payload` encrypted for a device: standard base64 of a random 24-byte nonce and libsodium's
/// `crypto_secretbox_easy` output (what zulip-flutter opens).
pub fn encrypt(key: &[u8; 32], payload: &Value) -> String {
    use crypto_secretbox::aead::{Aead, KeyInit};
    let cipher = crypto_secretbox::XSalsa20Poly1305::new(key.into());
    let nonce = crate::auth::random_bytes::<24>();
    let plaintext = payload.to_string();
    let sealed = cipher
        .encrypt((&nonce).into(), plaintext.as_bytes())
        .unwrap_or_default();
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    b64().encode(out)
}

/// A message's text as a notification shows it: the rendering as plain text, at most 200
/// characters (Zulip's `get_mobile_push_content` and `truncate_content`), or Zulip's "New
/// message" when the operator hides content.
pub fn content(message: &Message, redact: bool) -> String {
    if redact {
        return "New message".to_owned();
    }
    let text = plain_text(&message.rendered_content());
    if text.chars().count() > MAX_CONTENT_CHARS {
        let mut cut: String = text.chars().take(MAX_CONTENT_CHARS).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

/// Rendered HTML as plain text: tags dropped (an image by its `alt`), entities decoded,
/// blank space collapsed.
fn plain_text(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('>') else {
            break;
        };
        let tag = &rest[start..start + end + 1];
        if tag.starts_with("<img") {
            if let Some(alt) = tag.split("alt=\"").nth(1).and_then(|a| a.split('"').next()) {
                out.push_str(alt);
            }
        } else if tag.starts_with("</p") || tag.starts_with("<br") || tag.starts_with("</li") {
            out.push('\n');
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    let decoded = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    decoded
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn base(state: &Projections, site: &Site, user: UserId, kind: &str) -> Value {
    json!({
        "type": kind,
        "realm_url": site.realm_url,
        "realm_name": state.realm.text("name"),
        "user_id": user.0,
    })
}

/// Zulip's plaintext payload of a message notification (`api_docs/mobile-notifications.md`).
pub fn message_payload(
    state: &Projections,
    site: &Site,
    user: UserId,
    message: &Message,
    redact: bool,
) -> Value {
    let mut payload = base(state, site, user, "message");
    let sender = state.users.get(message.sender_id);
    payload["message_id"] = json!(message.id.0);
    payload["time"] = json!(message.timestamp);
    payload["content"] = json!(content(message, redact));
    payload["sender_id"] = json!(message.sender_id.0);
    payload["sender_full_name"] = json!(sender.map(|u| u.full_name.clone()).unwrap_or_default());
    payload["sender_avatar_url"] = json!(sender
        .map(|u| crate::render::users::avatar_url(site, u))
        .unwrap_or_default());
    match &message.recipient {
        Address::Channel { channel_id, topic } => {
            payload["recipient_type"] = json!("channel");
            payload["channel_id"] = json!(channel_id.0);
            payload["channel_name"] = json!(state
                .channels
                .get(*channel_id)
                .map(|c| c.name.clone())
                .unwrap_or_default());
            payload["topic"] = json!(if topic.is_empty() {
                crate::projections::messages::EMPTY_TOPIC_DISPLAY_NAME
            } else {
                topic
            });
        }
        Address::Direct { user_ids } => {
            payload["recipient_type"] = json!("direct");
            payload["recipient_user_ids"] = json!(user_ids.iter().map(|u| u.0).collect::<Vec<_>>());
        }
    }
    payload
}

/// Zulip's payload taking notifications away (the newest 200 ids).
pub fn remove_payload(state: &Projections, site: &Site, user: UserId, ids: &[MessageId]) -> Value {
    let mut payload = base(state, site, user, "remove");
    let newest = &ids[ids.len().saturating_sub(MAX_REMOVED_IDS)..];
    payload["message_ids"] = json!(newest.iter().map(|m| m.0).collect::<Vec<_>>());
    payload
}

/// Zulip's test payload.
pub fn test_payload(state: &Projections, site: &Site, user: UserId, now_secs: i64) -> Value {
    let mut payload = base(state, site, user, "test");
    payload["time"] = json!(now_secs);
    payload
}

/// The `push_requests` of `remotes/push/e2ee/notify` for `payload` to each of `devices`
/// (`(device, token_kind, token_id, push_key_id, key)`): encrypted for each, with Zulip's
/// APNs headers and FCM priority (`high` for a message, `normal` otherwise).
pub fn push_requests(
    devices: &[(u64, String, i64, u32, [u8; 32])],
    payload: &Value,
    urgent: bool,
) -> Vec<Value> {
    devices
        .iter()
        .map(|(_, kind, token_id, key_id, key)| {
            let encrypted = encrypt(key, payload);
            let token = crate::projections::devices::token_id_text(*token_id);
            if kind == "apns" {
                json!({
                    "token_id": token,
                    "http_headers": {
                        "apns_priority": if urgent { 10 } else { 5 },
                        "apns_push_type": "alert",
                    },
                    "payload": {
                        "push_key_id": key_id,
                        "encrypted_data": encrypted,
                        "aps": {"mutable-content": 1, "alert": {"title": "New notification"}},
                    },
                })
            } else {
                json!({
                    "token_id": token,
                    "fcm_priority": if urgent { "high" } else { "normal" },
                    "payload": {"push_key_id": key_id, "encrypted_data": encrypted},
                })
            }
        })
        .collect()
}

/// The devices of `user` that take pushes, with their keys opened.
pub fn devices_of(
    state: &Projections,
    secret: &ServerSecret,
    user: UserId,
) -> Vec<(u64, String, i64, u32, [u8; 32])> {
    state
        .devices
        .active_push(user)
        .filter_map(|(device, push)| {
            let key = unseal_key(secret, user, device, push.sealed_push_key.as_deref()?)?;
            Some((
                device,
                push.token_kind.clone()?,
                push.push_token_id?,
                push.push_key_id?,
                key,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_seal_under_the_secret_and_payloads_open_with_the_devices_key() {
        use crypto_secretbox::aead::{Aead, KeyInit};
        let secret = ServerSecret::generate();
        let key = [7u8; 32];
        let sealed = seal_key(&secret, UserId(3), 9, &key);
        assert_eq!(unseal_key(&secret, UserId(3), 9, &sealed), Some(key));
        assert_eq!(
            unseal_key(&secret, UserId(3), 10, &sealed),
            None,
            "another device's"
        );
        assert_eq!(
            unseal_key(&ServerSecret::generate(), UserId(3), 9, &sealed),
            None
        );
        let text = b64().encode([[SECRETBOX_TAG].as_slice(), &key].concat());
        assert_eq!(parse_push_key(&text), Some(key));
        assert_eq!(
            parse_push_key(&b64().encode([0u8; 33])),
            None,
            "another cryptosystem"
        );
        assert_eq!(parse_push_key("not base64!"), None);
        assert_eq!(parse_token_id("AAAAAAAAAAE="), Some(1));
        assert_eq!(parse_token_id("AAE="), None);
        let payload = json!({"type": "test", "user_id": 3});
        let data = b64().decode(encrypt(&key, &payload)).unwrap();
        let (nonce, boxed) = data.split_at(24);
        let cipher = crypto_secretbox::XSalsa20Poly1305::new((&key).into());
        let opened = cipher.decrypt(nonce.into(), boxed).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&opened).unwrap(), payload);
    }

    #[test]
    fn notification_text_is_plain_and_short() {
        assert_eq!(
            plain_text(
                "<p>Hi <strong>there</strong> &amp; <img alt=\":smile:\" src=\"x\"></p><p>Two</p>"
            ),
            "Hi there & :smile:\nTwo"
        );
    }
}

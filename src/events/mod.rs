//! The stored envelope and its checksummed encoding.
//!
//! A record in the log is `crc32(rest) (4 bytes, big-endian) ++ rest`, where `rest` is
//! `0xC1 ++ link (32 bytes) ++ body`: `body` is the envelope encoded as msgpack with named fields
//! (`rmp_serde::to_vec_named`), so a field added later never shifts old records, and `link` is
//! the SHA-256 of the whole previous record (zeros before the first), a hash chain over the log.
//! A torn or flipped byte fails the checksum; a record rewritten with a fixed checksum breaks
//! the chain at the next record (`store::verify_chain`). `0xC1` is the one byte msgpack never
//! uses, so records written before the chain (`rest` = `body`) still decode: they form an
//! unchained prefix.

pub mod v1;
pub mod v2;

pub use v2::{
    AvatarImage, BotChange, BotConfig, BotService, ChannelChange, ChannelPermissions, Draft,
    EditedContent, Event, GroupChange, GroupPermissions, GroupSetting, ImageBytes, InvitationSpec,
    LinkifierSpec, MessageFlag, MessageMove, NewSubscription, Notice, NoticeTrigger, ProfileChoice,
    ProfileFieldData, ProfileFieldSpec, PropagateMode, PushChange, QueuedMail, QueuedPush,
    ReactionType, ReadPlace, RealmImage, RealmValue, Recipient, Role, SenderQueue, StatusEmoji,
    SubscriptionProperty, SystemGroup, TopicPolicy, TopicsPolicy, TwoFactorChange, TypingTarget,
    UploadedImage, UserChange,
};

use crate::ids::{Seq, UserId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The schema version new events are written with. Version 1 records are upcast when decoded
/// (`v2::upcast`).
pub const SCHEMA_VERSION: u16 = 2;

/// One entry of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub seq: Seq,
    /// Milliseconds since the UNIX epoch, read from the clock by the writer, never by `apply`.
    pub at: i64,
    /// Who caused it; `None` for the server itself (organization setup).
    pub actor: Option<UserId>,
    pub schema_version: u16,
    pub event: Event,
}

/// Why a stored record could not be decoded.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DecodeError {
    #[error("record is {0} bytes, shorter than its checksum")]
    TooShort(usize),
    #[error("checksum mismatch (stored {stored:08x}, computed {computed:08x})")]
    Checksum { stored: u32, computed: u32 },
    #[error("undecodable msgpack: {0}")]
    Msgpack(String),
    #[error("unsupported schema version {0}")]
    UnknownVersion(u16),
    #[error("cannot upcast an older record: {0}")]
    Upcast(String),
    #[error("record stored under seq {key} claims seq {inner}")]
    SeqMismatch { key: u64, inner: u64 },
}

/// The SHA-256 of a stored record: what the next record links to.
pub type RecordHash = [u8; 32];

/// The link of the first record of a log.
pub const GENESIS: RecordHash = [0; 32];

/// Marks a chained record (a byte msgpack never uses as a first byte).
const CHAIN_MARK: u8 = 0xC1;

/// The hash the next record must link to.
pub fn record_hash(record: &[u8]) -> RecordHash {
    use sha2::{Digest, Sha256};
    Sha256::digest(record).into()
}

/// The link a stored record carries (`None` for records written before the chain, or too short
/// to hold one). The checksum is not checked here.
pub fn record_link(record: &[u8]) -> Option<RecordHash> {
    match record.get(4..) {
        Some([CHAIN_MARK, rest @ ..]) => rest.get(..32)?.try_into().ok(),
        _ => None,
    }
}

/// The end of a log's hash chain: encodes envelopes into records, each linked to the one
/// before it.
#[derive(Debug, Clone, Copy)]
pub struct Chain {
    link: RecordHash,
}

impl Chain {
    /// A chain whose next record follows a record with this hash (`GENESIS` for an empty log).
    pub fn after(link: RecordHash) -> Chain {
        Chain { link }
    }

    /// The chain after the last record of a log (or empty).
    pub fn after_record(last: Option<&[u8]>) -> Chain {
        Chain::after(last.map_or(GENESIS, record_hash))
    }

    /// What the next record links to.
    pub fn link(&self) -> RecordHash {
        self.link
    }

    /// Encodes the next record and moves the chain past it.
    pub fn seal(&mut self, env: &Envelope) -> Result<Vec<u8>, rmp_serde::encode::Error> {
        let record = env.encode(&self.link)?;
        self.link = record_hash(&record);
        Ok(record)
    }
}

/// The envelope of a version-1 record, with version 1's frozen event type.
#[derive(Deserialize)]
struct EnvelopeV1 {
    seq: Seq,
    at: i64,
    actor: Option<UserId>,
    schema_version: u16,
    event: v1::Event,
}

/// Just the version of a record, read first.
#[derive(Deserialize)]
struct VersionOnly {
    schema_version: u16,
}

/// Decodes an envelope of any schema version into the current one. The current version is
/// decoded directly; an older one with its own frozen types, then upcast step by step. The
/// envelope keeps the version it was stored with (listings show it).
fn decode_body(body: &[u8]) -> Result<Envelope, DecodeError> {
    let msgpack = |e: rmp_serde::decode::Error| DecodeError::Msgpack(e.to_string());
    match rmp_serde::from_slice::<Envelope>(body) {
        Ok(envelope) if envelope.schema_version == SCHEMA_VERSION => return Ok(envelope),
        Ok(_) | Err(_) => {}
    }
    let version = rmp_serde::from_slice::<VersionOnly>(body).map_err(msgpack)?;
    match version.schema_version {
        1 => {
            let old: EnvelopeV1 = rmp_serde::from_slice(body).map_err(msgpack)?;
            Ok(Envelope {
                seq: old.seq,
                at: old.at,
                actor: old.actor,
                schema_version: old.schema_version,
                event: v2::upcast(old.event).map_err(DecodeError::Upcast)?,
            })
        }
        // A current-version record that did not decode above.
        SCHEMA_VERSION => rmp_serde::from_slice::<Envelope>(body).map_err(msgpack),
        other => Err(DecodeError::UnknownVersion(other)),
    }
}

impl Envelope {
    /// Encodes the envelope into a stored record linked to the record before it.
    pub fn encode(&self, link: &RecordHash) -> Result<Vec<u8>, rmp_serde::encode::Error> {
        // One buffer, sized for a message so that it seldom grows: the checksum's place, the
        // chain's mark and link, then the body, encoded in place.
        let mut record = Vec::with_capacity(1024);
        record.extend_from_slice(&[0; 4]);
        record.push(CHAIN_MARK);
        record.extend_from_slice(link);
        rmp_serde::encode::write_named(&mut record, self)?;
        let checksum = crc32fast::hash(&record[4..]);
        record[..4].copy_from_slice(&checksum.to_be_bytes());
        Ok(record)
    }

    /// Decodes and verifies a stored record found under `key`.
    pub fn decode(key: Seq, record: &[u8]) -> Result<Envelope, DecodeError> {
        let envelope = decode_body(Envelope::checked_body(record)?)?;
        if envelope.seq != key {
            return Err(DecodeError::SeqMismatch {
                key: key.0,
                inner: envelope.seq.0,
            });
        }
        Ok(envelope)
    }

    /// The msgpack body of a record whose checksum and framing are sound, without decoding it:
    /// the start-up integrity check needs no more (a torn write or a flipped bit fails the
    /// checksum), and decoding every record there would double the start-up replay's work.
    pub fn checked_body(record: &[u8]) -> Result<&[u8], DecodeError> {
        if record.len() < 4 {
            return Err(DecodeError::TooShort(record.len()));
        }
        let (crc, rest) = record.split_at(4);
        let stored = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
        let computed = crc32fast::hash(rest);
        if stored != computed {
            return Err(DecodeError::Checksum { stored, computed });
        }
        match rest {
            [CHAIN_MARK, chained @ ..] => {
                chained.get(32..).ok_or(DecodeError::TooShort(record.len()))
            }
            unchained => Ok(unchained),
        }
    }

    /// The event as JSON with every secret replaced by `"[redacted]"`: what the admin listing
    /// shows.
    pub fn redacted_payload(&self) -> Value {
        let mut payload = match serde_json::to_value(&self.event) {
            // Externally tagged: {"UserCreated": {...}} → the inner object.
            Ok(Value::Object(mut map)) => map.remove(self.event.type_name()).unwrap_or(Value::Null),
            Ok(other) => other,
            Err(_) => Value::Null,
        };
        redact(&mut payload);
        payload
    }
}

/// Field names whose values are secrets (or secret-derived) and never leave the server.
pub const SECRET_FIELDS: &[&str] = &[
    "password_hash",
    "api_key_nonce",
    "api_key",
    "password",
    "link_nonce",
    // What two-factor keys and backup codes are derived from (with the server secret).
    "key_nonce",
    "backup_nonce",
    // A device's push key, sealed under the server secret: ciphertext, but nobody's business.
    "sealed_push_key",
];

/// Replaces every secret field, at any depth, by `"[redacted]"` (or `null` when it was null).
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if SECRET_FIELDS.contains(&key.as_str()) {
                    if !v.is_null() {
                        *v = Value::String("[redacted]".into());
                    }
                } else {
                    redact(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// Zulip's bot types, as `UserCreated.bot_type` stores them: 1 generic, 2 incoming webhook,
/// 3 outgoing webhook, 4 embedded.
pub const GENERIC_BOT: u8 = 1;
pub const INCOMING_WEBHOOK_BOT: u8 = 2;
pub const OUTGOING_WEBHOOK_BOT: u8 = 3;
pub const EMBEDDED_BOT: u8 = 4;

#[cfg(test)]
mod tests {
    /// A record as schema version 1 wrote it (before the hash chain: `crc ‖ body`).
    fn v1_record(seq: u64, event: v1::Event) -> Vec<u8> {
        #[derive(serde::Serialize)]
        struct V1Envelope {
            seq: Seq,
            at: i64,
            actor: Option<UserId>,
            schema_version: u16,
            event: v1::Event,
        }
        let body = rmp_serde::to_vec_named(&V1Envelope {
            seq: Seq(seq),
            at: 5,
            actor: Some(UserId(2)),
            schema_version: 1,
            event,
        })
        .unwrap();
        let mut record = crc32fast::hash(&body).to_be_bytes().to_vec();
        record.extend_from_slice(&body);
        record
    }

    #[test]
    fn version_1_records_are_upcast() {
        let topic = |policy| v1::Event::TopicVisibilitySet {
            user_id: UserId(2),
            channel_id: crate::ids::ChannelId(1),
            topic: "lunch".into(),
            policy,
        };
        let env = Envelope::decode(Seq(3), &v1_record(3, topic(3))).unwrap();
        assert_eq!(env.schema_version, 1, "the stored version is kept");
        assert_eq!(
            env.event,
            Event::TopicVisibilitySet {
                user_id: UserId(2),
                channel_id: crate::ids::ChannelId(1),
                topic: "lunch".into(),
                policy: TopicPolicy::Followed,
            }
        );
        // Unchanged events come through as they were.
        let same = Envelope::decode(
            Seq(4),
            &v1_record(4, v1::Event::UserDeactivated { user_id: UserId(9) }),
        )
        .unwrap();
        assert_eq!(same.event, Event::UserDeactivated { user_id: UserId(9) });
        // No version of Chronicle wrote policy 9.
        assert_eq!(
            Envelope::decode(Seq(3), &v1_record(3, topic(9))).unwrap_err(),
            DecodeError::Upcast("unknown topic visibility policy 9".into())
        );
        // Version 2 stores the policy by name.
        let mut current = Envelope::decode(Seq(3), &v1_record(3, topic(1))).unwrap();
        current.schema_version = SCHEMA_VERSION;
        let record = current.encode(&GENESIS).unwrap();
        assert!(record.windows(5).any(|w| w == b"Muted"));
        assert_eq!(Envelope::decode(Seq(3), &record).unwrap(), current);
    }

    use super::*;

    fn sample() -> Envelope {
        Envelope {
            seq: Seq(7),
            at: 1_700_000_000_000,
            actor: Some(UserId(1)),
            schema_version: SCHEMA_VERSION,
            event: Event::ApiKeyRegenerated {
                user_id: UserId(1),
                api_key_nonce: "abc".into(),
            },
        }
    }

    #[test]
    fn round_trips() {
        let env = sample();
        let record = env.encode(&GENESIS).unwrap();
        assert_eq!(Envelope::decode(Seq(7), &record).unwrap(), env);
    }

    #[test]
    fn detects_flipped_byte_and_truncation() {
        let mut record = sample().encode(&GENESIS).unwrap();
        let last = record.len() - 1;
        record[last] ^= 0x40;
        assert!(matches!(
            Envelope::decode(Seq(7), &record),
            Err(DecodeError::Checksum { .. })
        ));
        let record = sample().encode(&GENESIS).unwrap();
        assert!(Envelope::decode(Seq(7), &record[..record.len() - 3]).is_err());
        assert_eq!(
            Envelope::decode(Seq(7), &record[..2]),
            Err(DecodeError::TooShort(2))
        );
    }

    #[test]
    fn rejects_record_under_wrong_key() {
        let record = sample().encode(&GENESIS).unwrap();
        assert_eq!(
            Envelope::decode(Seq(8), &record),
            Err(DecodeError::SeqMismatch { key: 8, inner: 7 })
        );
    }

    #[test]
    fn encoding_uses_field_names() {
        let record = sample().encode(&GENESIS).unwrap();
        let body = &record[4..];
        let needle = b"api_key_nonce";
        assert!(body.windows(needle.len()).any(|w| w == needle));
    }

    #[test]
    fn redaction_hides_secrets_only() {
        let env = Envelope {
            event: Event::UserCreated {
                user_id: UserId(2),
                email: "a@example.com".into(),
                full_name: "A".into(),
                role: Role::Member,
                bot_type: None,
                bot_owner_id: None,
                timezone: String::new(),
                can_create_users: false,
                password_hash: Some("$argon2id$...".into()),
                api_key_nonce: "n".into(),
                bot: None,
            },
            ..sample()
        };
        let payload = env.redacted_payload();
        assert_eq!(payload["password_hash"], "[redacted]");
        assert_eq!(payload["api_key_nonce"], "[redacted]");
        assert_eq!(payload["email"], "a@example.com");
        assert_eq!(payload["role"], 400);
    }
}

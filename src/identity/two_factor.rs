//! Two-factor authentication with time-based one-time passwords (RFC 6238, as authenticator
//! apps and Zulip's django-otp make them: HMAC-SHA1, 30-second steps from the epoch, six
//! digits, one step of drift either way) and single-use backup codes.
//!
//! The log holds no key and no code: a person's key is derived from the server secret and a
//! random nonce that the enrolment event records (as API keys are), and so are their ten
//! backup codes; the log records which step or backup code was last used, so that none is
//! accepted twice, across restarts too.

use crate::auth::ServerSecret;
use crate::ids::UserId;
use hmac::{Hmac, Mac};
use sha1::Sha1;

/// Seconds per step.
pub const STEP_SECONDS: i64 = 30;
/// Digits of a code.
pub const DIGITS: usize = 6;
/// Backup codes issued at a time (django-two-factor-auth's number).
pub use crate::projections::sessions::BACKUP_CODES;
/// Characters of a backup code (five random bytes in lowercase base32, as Zulip's).
pub const BACKUP_CODE_CHARS: usize = 8;

/// A code that was right, and what accepting it records.
pub use crate::commands::two_factor::Proof;

/// What the server needs to know of a person's enrolment to check a code.
pub use crate::projections::sessions::Enrolment;

/// The key of `user` for `nonce`: 20 bytes, SHA-1's block of choice (RFC 4226's advice).
pub fn key(secret: &ServerSecret, user: UserId, nonce: &str) -> [u8; 20] {
    let bytes = secret.derive_bytes(b"totp-key\0", user.0, nonce);
    let mut key = [0u8; 20];
    key.copy_from_slice(&bytes[..20]);
    key
}

/// The ten backup codes of `user` for `nonce`.
pub fn backup_codes(secret: &ServerSecret, user: UserId, nonce: &str) -> Vec<String> {
    (0..BACKUP_CODES)
        .map(|i| {
            let bytes = secret.derive_bytes(b"totp-backup\0", user.0, &format!("{nonce}\0{i}"));
            base32(&bytes[..5]).to_ascii_lowercase()
        })
        .collect()
}

/// The code of `step` (RFC 4226's HOTP of the step counter, `digits` long).
pub fn code_at(key: &[u8], step: u64, digits: usize) -> String {
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(key) else {
        return String::new();
    };
    mac.update(&step.to_be_bytes());
    let hash = mac.finalize().into_bytes();
    let offset = usize::from(hash[19] & 0x0f);
    let binary = (u32::from(hash[offset]) & 0x7f) << 24
        | u32::from(hash[offset + 1]) << 16
        | u32::from(hash[offset + 2]) << 8
        | u32::from(hash[offset + 3]);
    let modulus = 10u64.pow(digits as u32);
    format!("{:0digits$}", u64::from(binary) % modulus)
}

/// The step a UNIX time (seconds) falls in.
pub fn step_of(unix_seconds: i64) -> u64 {
    u64::try_from(unix_seconds.div_euclid(STEP_SECONDS)).unwrap_or(0)
}

/// Whether `given` (spaces and dashes ignored, as people copy codes) is a code `enrolment`
/// accepts at `unix_seconds`: the authenticator's code of this step or the one before or
/// after, newer than the last one used, or an unused backup code.
pub fn check(
    secret: &ServerSecret,
    user: UserId,
    enrolment: &Enrolment<'_>,
    given: &str,
    unix_seconds: i64,
) -> Option<Proof> {
    let given: String = given
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    if given.len() == DIGITS && given.bytes().all(|b| b.is_ascii_digit()) {
        let key = key(secret, user, enrolment.key_nonce);
        let now = step_of(unix_seconds);
        // Every candidate is compared, so the time taken does not say which one matched.
        let mut found = None;
        for step in [now.saturating_sub(1), now, now + 1] {
            let right = crate::auth::constant_time_eq(
                code_at(&key, step, DIGITS).as_bytes(),
                given.as_bytes(),
            );
            if right && step > enrolment.last_step && found.is_none() {
                found = Some(Proof::Code { step });
            }
        }
        return found;
    }
    if given.len() == BACKUP_CODE_CHARS {
        let nonce = enrolment.backup_nonce?;
        let mut found = None;
        for (i, code) in backup_codes(secret, user, nonce).iter().enumerate() {
            let right = crate::auth::constant_time_eq(code.as_bytes(), given.as_bytes());
            if right && enrolment.backup_used & (1 << i) == 0 && found.is_none() {
                found = u8::try_from(i).ok().map(|index| Proof::Backup { index });
            }
        }
        return found;
    }
    None
}

/// RFC 4648 base32 without padding (how authenticator apps take a key).
pub use crate::auth::base32;

/// The `otpauth://` URI an authenticator app reads from the QR code: the organization as the
/// issuer, the person's address as the account.
pub fn otpauth_uri(key: &[u8], issuer: &str, account: &str) -> String {
    let label = format!("{issuer}:{account}");
    format!(
        "otpauth://totp/{}?secret={}&issuer={}&algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}",
        percent_encode(&label),
        base32(key),
        percent_encode(issuer)
    )
}

/// Percent-encodes everything but RFC 3986's unreserved characters and `:` and `@` (the
/// label's separator and the address's, which the key URI format keeps); a space is `%20`,
/// never `+`, which some apps would show.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~:@".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The QR code of `uri` as an SVG image.
pub fn qr_svg(uri: &str) -> Option<String> {
    let code = qrcode::QrCode::new(uri.as_bytes()).ok()?;
    Some(
        code.render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(200, 200)
            .quiet_zone(true)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_rfc_6238s() {
        // RFC 6238, Appendix B (SHA-1, the ASCII key "12345678901234567890").
        let key = b"12345678901234567890";
        for (time, expected) in [
            (59, "94287082"),
            (1_111_111_109, "07081804"),
            (1_111_111_111, "14050471"),
            (1_234_567_890, "89005924"),
            (2_000_000_000, "69279037"),
            (20_000_000_000, "65353130"),
        ] {
            assert_eq!(code_at(key, step_of(time), 8), expected, "at {time}");
        }
        assert_eq!(code_at(key, step_of(59), 6), "287082");
        assert_eq!(base32(key), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
    }

    #[test]
    fn a_code_is_accepted_once_within_a_step_of_drift_and_a_backup_code_once() {
        let secret = ServerSecret::generate();
        let user = UserId(7);
        let mut enrolment = Enrolment {
            key_nonce: "k",
            backup_nonce: Some("b"),
            backup_used: 0,
            last_step: 0,
        };
        let key = key(&secret, user, "k");
        let now = 1_800_000_000;
        let code = |step: u64| code_at(&key, step, DIGITS);
        let here = step_of(now);
        for step in [here - 1, here, here + 1] {
            assert_eq!(
                check(&secret, user, &enrolment, &code(step), now),
                Some(Proof::Code { step })
            );
        }
        assert_eq!(check(&secret, user, &enrolment, &code(here - 2), now), None);
        assert_eq!(check(&secret, user, &enrolment, &code(here + 2), now), None);
        // Spaces as an app shows them are fine; a used step is refused.
        let spaced = format!("{} {}", &code(here)[..3], &code(here)[3..]);
        assert!(check(&secret, user, &enrolment, &spaced, now).is_some());
        enrolment.last_step = here;
        assert_eq!(check(&secret, user, &enrolment, &code(here), now), None);
        assert_eq!(check(&secret, user, &enrolment, &code(here - 1), now), None);
        // Another person's key gives other codes.
        assert_ne!(
            code(here),
            code_at(&super::key(&secret, UserId(8), "k"), here, DIGITS)
        );
        let backups = backup_codes(&secret, user, "b");
        assert_eq!(backups.len(), 10);
        assert!(backups.iter().all(|c| c.len() == 8
            && c.bytes()
                .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b))));
        assert_eq!(
            check(&secret, user, &enrolment, &backups[3].to_uppercase(), now),
            Some(Proof::Backup { index: 3 })
        );
        enrolment.backup_used = 1 << 3;
        assert_eq!(check(&secret, user, &enrolment, &backups[3], now), None);
        enrolment.backup_nonce = None;
        assert_eq!(check(&secret, user, &enrolment, &backups[4], now), None);
        assert_eq!(check(&secret, user, &enrolment, "", now), None);
        assert_eq!(check(&secret, user, &enrolment, "12345", now), None);
    }

    #[test]
    fn the_uri_names_the_organization_and_the_person() {
        let uri = otpauth_uri(b"12345678901234567890", "Acme Corp", "ana+x@acme.example");
        assert_eq!(
            uri,
            "otpauth://totp/Acme%20Corp:ana%2Bx@acme.example?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\
             &issuer=Acme%20Corp&algorithm=SHA1&digits=6&period=30"
        );
        let svg = qr_svg(&uri).unwrap();
        assert!(svg.starts_with("<?xml") && svg.contains("<svg"), "{svg}");
    }
}

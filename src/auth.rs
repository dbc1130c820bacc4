//! Secrets: the server secret, API-key derivation, passwords.
//!
//! The log never holds a plaintext secret. An API key is derived as
//! `HMAC-SHA256(server secret, "api-key" ‖ user_id ‖ nonce)` rendered as 32 alphanumerics; the
//! event log stores only the random nonce, and the server secret lives outside the log in
//! `DATA_DIR/secret.key` (mode 0600). Regenerating a key means storing a new nonce, so the old key
//! dies at once, and `POST /fetch_api_key` can hand out the current key again, as Zulip does.
//! Passwords are stored as argon2id PHC strings, hashed off the async workers.

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::io::Write;
use std::path::Path;

use crate::ids::UserId;
use crate::projections::User;

const ALPHANUMERIC: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Length of an API key, as in Zulip.
pub const API_KEY_LENGTH: usize = 32;

/// The 32-byte secret every API key is derived from.
#[derive(Clone)]
pub struct ServerSecret([u8; 32]);

impl std::fmt::Debug for ServerSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerSecret([redacted])")
    }
}

impl ServerSecret {
    /// A fresh random secret.
    pub fn generate() -> ServerSecret {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        ServerSecret(bytes)
    }

    /// Reads the secret file (64 hex digits).
    pub fn load(path: &Path) -> std::io::Result<ServerSecret> {
        let text = std::fs::read_to_string(path)?;
        let text = text.trim();
        let invalid = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} does not hold 64 hex digits", path.display()),
            )
        };
        if text.len() != 64 {
            return Err(invalid());
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2).ok_or_else(invalid)?, 16)
                .map_err(|_| invalid())?;
        }
        Ok(ServerSecret(bytes))
    }

    /// Writes the secret file, readable by the owner only; never overwrites an existing one.
    pub fn store(&self, path: &Path) -> std::io::Result<()> {
        let hex: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        write_private_file(path, format!("{hex}\n").as_bytes())
    }

    /// The API key of `user_id` for the nonce currently on record.
    pub fn api_key(&self, user_id: UserId, nonce: &str) -> String {
        self.derive(b"api-key\0", user_id.0, nonce)
    }

    /// The key in an invitation's link (the log keeps only its nonce).
    pub fn invitation_key(&self, invite_id: u64, nonce: &str) -> String {
        self.derive(b"invitation\0", invite_id, nonce)
    }

    /// The signature of a temporary download link to an upload, valid until `expires` (UNIX
    /// seconds).
    pub fn upload_token(&self, attachment_id: u64, expires: i64) -> String {
        self.derive(b"upload\0", attachment_id, &expires.to_string())
    }

    /// The MAC half of a web session's cookie (`{session_id}.{mac}`): only this server can make
    /// one, and the log keeps only the id.
    pub fn session_mac(&self, user_id: UserId, session_id: &str) -> String {
        self.derive(b"web-session\0", user_id.0, session_id)
    }

    /// The CSRF token of a web session, which its page sends back in `X-CSRFToken` with every
    /// request that changes something.
    pub fn csrf_token(&self, user_id: UserId, session_id: &str) -> String {
        self.derive(b"web-csrf\0", user_id.0, session_id)
    }

    /// The token of a password-reset link issued at `issued` (UNIX seconds) for an account
    /// whose password hash and address are `password_hash` and `email` now:
    /// `{issued}-{mac}`. Nothing of it is kept anywhere; it stops working once the password
    /// changes (so it is used once) or the address does.
    pub fn password_reset_token(
        &self,
        user_id: UserId,
        issued: i64,
        password_hash: Option<&str>,
        email: &str,
    ) -> String {
        let basis = format!("{issued}\0{}\0{email}", password_hash.unwrap_or(""));
        format!(
            "{issued}-{}",
            self.derive(b"password-reset\0", user_id.0, &basis)
        )
    }

    /// The MAC of a single sign-on in progress (the cookie that carries its `state`, `nonce`
    /// and PKCE verifier between leaving for the provider and coming back).
    pub fn sign_in_flow_mac(&self, payload: &str) -> String {
        self.derive(b"sign-in-flow\0", 0, payload)
    }

    /// The key of a one-click unsubscribe link in an email to `user_id` about `kind`
    /// (`missed_messages`, `digest`, `login`): `{user_id}-{mac}`, kept nowhere, valid for good
    /// (as Zulip's), and good for that person and that kind only.
    pub fn unsubscribe_key(&self, user_id: UserId, kind: &str) -> String {
        format!(
            "{}-{}",
            user_id.0,
            self.derive(b"unsubscribe\0", user_id.0, kind)
        )
    }

    /// The person an unsubscribe key of `kind` was made for, if it holds.
    pub fn unsubscribe_key_owner(&self, key: &str, kind: &str) -> Option<UserId> {
        let (id, _) = key.split_once('-')?;
        let user = UserId(id.parse().ok()?);
        constant_time_eq(self.unsubscribe_key(user, kind).as_bytes(), key.as_bytes())
            .then_some(user)
    }

    /// What the nodes of a cluster (which share this secret) mark requests they pass to each
    /// other with (`http::forward`).
    pub fn cluster_token(&self) -> String {
        self.derive(b"cluster-forward\0", 0, "")
    }

    /// `HMAC-SHA256(secret, label ++ id ++ nonce)`: key material for one purpose (the label),
    /// one owner (the id) and one issue of it (the nonce).
    pub fn derive_bytes(&self, label: &[u8], id: u64, nonce: &str) -> [u8; 32] {
        // HMAC accepts keys of any length, so this cannot fail; fall back defensively anyway.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.0) else {
            return [0; 32];
        };
        mac.update(label);
        mac.update(&id.to_be_bytes());
        mac.update(nonce.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// 32 alphanumerics from `HMAC-SHA256(secret, label ++ id ++ nonce)`.
    fn derive(&self, label: &[u8], id: u64, nonce: &str) -> String {
        let digest = self.derive_bytes(label, id, nonce);
        // Each 8 digest bytes give 8 base-62 digits (62^8 < 2^64, bias below 2^-16).
        let mut key = String::with_capacity(API_KEY_LENGTH);
        for chunk in digest.chunks_exact(8) {
            let mut n = u64::from_be_bytes(chunk.try_into().unwrap_or([0; 8]));
            for _ in 0..8 {
                key.push(ALPHANUMERIC[(n % 62) as usize] as char);
                n /= 62;
            }
        }
        key
    }
}

/// Creates `path` with mode 0600 and writes `contents`; fails if it already exists.
pub fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// `N` bytes from the system's random source.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    OsRng.fill_bytes(&mut bytes);
    bytes
}

/// A random nonce (16 bytes, hex) for deriving an API key.
pub fn new_api_key_nonce() -> String {
    random_bytes::<16>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A random password of `len` alphanumerics (used for the first owner).
pub fn generate_password(len: usize) -> String {
    let mut out = String::with_capacity(len);
    while out.len() < len {
        let mut byte = [0u8; 1];
        OsRng.fill_bytes(&mut byte);
        // Rejection sampling keeps every character equally likely.
        if byte[0] < 248 {
            out.push(ALPHANUMERIC[(byte[0] % 62) as usize] as char);
        }
    }
    out
}

/// Zulip's API-key format check: exactly 32 ASCII alphanumerics.
pub fn has_api_key_format(key: &str) -> bool {
    key.len() == API_KEY_LENGTH && key.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Compares two byte strings in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// argon2id hash of a password as a PHC string. CPU-heavy: call it off the async workers.
pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Checks a password against a stored PHC string. CPU-heavy: call it off the async workers.
pub fn verify_password(phc: &str, password: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A hash to verify against when the account does not exist, so that a wrong username costs
/// the same time as a wrong password.
pub fn dummy_password_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| hash_password("chronicle-dummy-password").unwrap_or_default())
}

/// The token an outgoing webhook bot's service sends along, derived like API keys so that
/// no secret is stored in the log.
pub fn service_token(secret: &ServerSecret, bot: &User) -> String {
    secret.api_key(bot.user_id, &format!("service:{}", bot.api_key_nonce))
}

/// Whether `otp` is a one-time pad as Zulip's apps make one: 64 hexadecimal digits (twice the
/// API key's length).
pub fn is_valid_otp(otp: &str) -> bool {
    otp.len() == 2 * API_KEY_LENGTH && otp.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Zulip's `otp_encrypt_api_key`: the key's ASCII as hex, each digit XORed with the pad's,
/// written in lowercase hex. `None` for a pad of the wrong shape.
pub fn otp_encrypt_api_key(api_key: &str, otp: &str) -> Option<String> {
    let hex: String = api_key.bytes().map(|b| format!("{b:02x}")).collect();
    if !is_valid_otp(otp) || hex.len() != otp.len() {
        return None;
    }
    hex.chars()
        .zip(otp.chars())
        .map(|(k, p)| char::from_digit(k.to_digit(16)? ^ p.to_digit(16)?, 16))
        .collect()
}

/// RFC 4648 base32 without padding (authenticator keys; the email gateway's tokens, lowercased).
pub fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_one_time_pad_is_zulips() {
        // Zulip's own example: otp_encrypt_api_key("a" * 32, "0" * 63 + "1") flips one bit.
        let key = "a".repeat(32);
        let pad = format!("{}1", "0".repeat(63));
        let hex = "61".repeat(32);
        assert_eq!(
            super::otp_encrypt_api_key(&key, &pad).unwrap(),
            format!("{}0", &hex[..63])
        );
        assert!(super::otp_encrypt_api_key(&key, "00").is_none());
        assert!(!super::is_valid_otp(&"g".repeat(64)));
        assert!(super::is_valid_otp(&"Ab".repeat(32)));
    }

    use super::*;

    #[test]
    fn api_keys_are_zulip_shaped_and_depend_on_every_input() {
        let secret = ServerSecret::generate();
        let key = secret.api_key(UserId(1), "n1");
        assert!(has_api_key_format(&key), "{key}");
        assert_eq!(key, secret.api_key(UserId(1), "n1"));
        assert_ne!(key, secret.api_key(UserId(2), "n1"));
        assert_ne!(key, secret.api_key(UserId(1), "n2"));
        assert_ne!(key, ServerSecret::generate().api_key(UserId(1), "n1"));
    }

    #[test]
    fn secret_file_round_trips_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let secret = ServerSecret::generate();
        secret.store(&path).unwrap();
        let loaded = ServerSecret::load(&path).unwrap();
        assert_eq!(
            secret.api_key(UserId(3), "x"),
            loaded.api_key(UserId(3), "x")
        );
        assert!(secret.store(&path).is_err(), "never overwrites");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn passwords_verify() {
        let hash = hash_password("correct horse").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password(&hash, "correct horse"));
        assert!(!verify_password(&hash, "wrong"));
        assert!(!verify_password("not a hash", "x"));
    }

    #[test]
    fn key_format_and_comparison() {
        assert!(has_api_key_format(&"a".repeat(32)));
        assert!(!has_api_key_format(&"a".repeat(31)));
        assert!(!has_api_key_format(&format!("{}-", "a".repeat(31))));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        let pw = generate_password(24);
        assert_eq!(pw.len(), 24);
        assert!(pw.bytes().all(|b| b.is_ascii_alphanumeric()));
    }
}

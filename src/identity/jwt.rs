//! JSON Web Tokens signed with a key the organization shares with its own sign-in service
//! (HS256, HS384, HS512), as Zulip's JWT backend takes them: `POST /jwt/fetch_api_key` and the
//! web login at `/accounts/login/jwt/`.
//!
//! A token signed this way is three base64url parts and one HMAC, so the checks are written
//! out here over RustCrypto's HMAC (already used for API keys) rather than through a JWT crate
//! whose RSA and elliptic-curve providers would add minutes to every build: the token's size is
//! bounded before anything is decoded, its `alg` must be one the configuration lists (`none`
//! never is), the signature is compared in constant time, and `exp` and `nbf`, when present,
//! hold with a minute's leeway. Tokens signed with a public-key algorithm are refused.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{Map, Value};

/// The longest token read.
pub const MAX_TOKEN_BYTES: usize = 8192;
/// Clock skew allowed for `exp` and `nbf`, in seconds.
const LEEWAY_SECS: i64 = 60;

/// base64url, with or without padding (RFC 7515 says without; some issuers pad).
const BASE64URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// An HMAC algorithm of RFC 7518.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    HS256,
    HS384,
    HS512,
}

impl Algorithm {
    /// The algorithm a JOSE header names, if it is one of these.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        match name {
            "HS256" => Some(Algorithm::HS256),
            "HS384" => Some(Algorithm::HS384),
            "HS512" => Some(Algorithm::HS512),
            _ => None,
        }
    }
}

/// The configured key and the algorithms it may sign with.
#[derive(Clone)]
pub struct JwtKey {
    key: Vec<u8>,
    algorithms: Vec<Algorithm>,
}

impl std::fmt::Debug for JwtKey {
    /// The algorithms only: the key is a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtKey")
            .field("algorithms", &self.algorithms)
            .finish_non_exhaustive()
    }
}

impl JwtKey {
    pub fn new(key: &[u8], algorithms: Vec<Algorithm>) -> JwtKey {
        JwtKey {
            key: key.to_vec(),
            algorithms,
        }
    }
}

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwtError {
    TooLong,
    Malformed,
    /// `alg` missing, unknown, or not among the configured ones.
    Algorithm,
    Signature,
    Expired,
    NotYetValid,
}

/// The claims of `token` if `key` signed it and it holds at `now` (UNIX seconds).
pub fn verify(token: &str, key: &JwtKey, now: i64) -> Result<Map<String, Value>, JwtError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(JwtError::TooLong);
    }
    let token = token.trim();
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };
    let header = object(header)?;
    let algorithm = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(Algorithm::from_name)
        .filter(|a| key.algorithms.contains(a))
        .ok_or(JwtError::Algorithm)?;
    let signature = BASE64URL
        .decode(signature)
        .map_err(|_| JwtError::Malformed)?;
    let signed = &token[..header_len(token)];
    let expected = tag(algorithm, &key.key, signed);
    if expected.is_empty() || !crate::auth::constant_time_eq(&expected, &signature) {
        return Err(JwtError::Signature);
    }
    let claims = object(payload)?;
    let time = |name: &str| -> Result<Option<i64>, JwtError> {
        match claims.get(name) {
            None => Ok(None),
            Some(value) => value
                .as_f64()
                .filter(|t| t.is_finite())
                .map(|t| Some(t as i64))
                .ok_or(JwtError::Malformed),
        }
    };
    if time("exp")?.is_some_and(|exp| now > exp.saturating_add(LEEWAY_SECS)) {
        return Err(JwtError::Expired);
    }
    if time("nbf")?.is_some_and(|nbf| now.saturating_add(LEEWAY_SECS) < nbf) {
        return Err(JwtError::NotYetValid);
    }
    Ok(claims)
}

/// The length of `header.payload`, the signed part of a token with three parts.
fn header_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(0)
}

/// A base64url part that must be a JSON object.
fn object(part: &str) -> Result<Map<String, Value>, JwtError> {
    let bytes = BASE64URL.decode(part).map_err(|_| JwtError::Malformed)?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(JwtError::Malformed),
    }
}

/// The HMAC of `signed` under `key` with `algorithm`'s hash.
fn tag(algorithm: Algorithm, key: &[u8], signed: &str) -> Vec<u8> {
    macro_rules! hmac_of {
        ($digest:ty) => {
            match Hmac::<$digest>::new_from_slice(key) {
                Ok(mut mac) => {
                    mac.update(signed.as_bytes());
                    mac.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            }
        };
    }
    match algorithm {
        Algorithm::HS256 => hmac_of!(sha2::Sha256),
        Algorithm::HS384 => hmac_of!(sha2::Sha384),
        Algorithm::HS512 => hmac_of!(sha2::Sha512),
    }
}

/// A token signed with `key` (for tests and for the operator's own checks).
pub fn sign(claims: &Value, key: &[u8], algorithm: Algorithm) -> String {
    let name = match algorithm {
        Algorithm::HS256 => "HS256",
        Algorithm::HS384 => "HS384",
        Algorithm::HS512 => "HS512",
    };
    let header = BASE64URL_NO_PAD.encode(format!(r#"{{"alg":"{name}","typ":"JWT"}}"#));
    let payload = BASE64URL_NO_PAD.encode(claims.to_string());
    let signed = format!("{header}.{payload}");
    format!(
        "{signed}.{}",
        BASE64URL_NO_PAD.encode(tag(algorithm, key, &signed))
    )
}

const BASE64URL_NO_PAD: GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &[u8] = b"a shared key of the organization";

    fn hs256() -> JwtKey {
        JwtKey::new(KEY, vec![Algorithm::HS256])
    }

    #[test]
    fn a_signed_token_gives_its_claims() {
        let token = sign(&json!({"email": "a@example.com"}), KEY, Algorithm::HS256);
        let claims = verify(&token, &hs256(), 1_000).unwrap();
        assert_eq!(claims["email"], "a@example.com");
        // RFC 7515's own HS256 example verifies.
        let rfc_key = BASE64URL
            .decode("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")
            .unwrap();
        let rfc = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let claims = verify(
            rfc,
            &JwtKey::new(&rfc_key, vec![Algorithm::HS256]),
            1_300_819_380,
        )
        .unwrap();
        assert_eq!(claims["iss"], "joe");
    }

    #[test]
    fn forged_altered_expired_and_unsigned_tokens_are_refused() {
        let key = hs256();
        let token = sign(
            &json!({"email": "a@example.com"}),
            b"another key",
            Algorithm::HS256,
        );
        assert_eq!(verify(&token, &key, 0), Err(JwtError::Signature));
        let good = sign(&json!({"email": "a@example.com"}), KEY, Algorithm::HS256);
        let (signed, tag) = good.rsplit_once('.').unwrap();
        let (header, _) = signed.split_once('.').unwrap();
        let other = BASE64URL_NO_PAD.encode(r#"{"email":"boss@example.com"}"#);
        assert_eq!(
            verify(&format!("{header}.{other}.{tag}"), &key, 0),
            Err(JwtError::Signature)
        );
        let none = format!(
            "{}.{}.",
            BASE64URL_NO_PAD.encode(r#"{"alg":"none"}"#),
            BASE64URL_NO_PAD.encode(r#"{"email":"a@example.com"}"#)
        );
        assert_eq!(verify(&none, &key, 0), Err(JwtError::Algorithm));
        let hs512 = sign(&json!({"email": "a@example.com"}), KEY, Algorithm::HS512);
        assert_eq!(verify(&hs512, &key, 0), Err(JwtError::Algorithm));
        let expired = sign(&json!({"exp": 1_000}), KEY, Algorithm::HS256);
        assert!(verify(&expired, &key, 1_060).is_ok());
        assert_eq!(verify(&expired, &key, 1_061), Err(JwtError::Expired));
        let early = sign(&json!({"nbf": 2_000}), KEY, Algorithm::HS256);
        assert_eq!(verify(&early, &key, 1_000), Err(JwtError::NotYetValid));
        let odd_exp = sign(&json!({"exp": "soon"}), KEY, Algorithm::HS256);
        assert_eq!(verify(&odd_exp, &key, 0), Err(JwtError::Malformed));
        for bad in [
            "",
            "a.b",
            "a.b.c.d",
            "!!.!!.!!",
            &"a".repeat(MAX_TOKEN_BYTES + 1),
        ] {
            assert!(verify(bad, &key, 0).is_err(), "{bad}");
        }
    }
}

//! JSON Web Tokens (`POST /jwt/fetch_api_key`, `/accounts/login/jwt/`): any bytes as a token,
//! and, to get past the signature, any JSON claims signed with the key.
#![no_main]

use chronicle::identity::jwt::{sign, verify, Algorithm, JwtKey};
use libfuzzer_sys::fuzz_target;

const KEY: &[u8] = b"the fuzzer's key, thirty-two bytes or more";

fuzz_target!(|data: &[u8]| {
    let key = JwtKey::new(KEY, vec![Algorithm::HS256, Algorithm::HS512]);
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let now = i64::from(*first) * 1_000_000;
    if first & 1 == 1 {
        if let Ok(claims) = serde_json::from_slice::<serde_json::Value>(rest) {
            let token = sign(&claims, KEY, Algorithm::HS512);
            let _ = verify(&token, &key, now);
        }
    }
    let _ = verify(&String::from_utf8_lossy(rest), &key, now);
});

//! Two-factor authentication: enrolling from the settings, the web login's second step, backup
//! codes, the password followed by a code for `fetch_api_key`, an administrator switching it
//! off, enrolment required of administrators, codes that work once (across a restart too), and
//! no key or code in the data directory.

use crate::support::{Creds, Server};
use chronicle::identity::two_factor::{code_at, step_of, DIGITS};
use reqwest::header::HeaderMap;
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

/// RFC 4648 base32 (spaces ignored), as an authenticator app reads a typed key.
fn base32_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let (mut buffer, mut bits, mut out) = (0u32, 0u32, Vec::new());
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        buffer = (buffer << 5) | ALPHABET.find(c).unwrap() as u32;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    out
}

/// An authenticator app: the next code it may show that the server has not seen used (a
/// step newer than the last one used, within the one step of drift the server allows).
struct App {
    key: Vec<u8>,
    last: u64,
}

impl App {
    fn new(secret: &str) -> App {
        App {
            key: base32_decode(secret),
            last: 0,
        }
    }

    fn next_code(&mut self) -> String {
        let clock = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
        };
        let t = clock();
        let behind = step_of(t.as_secs() as i64) - 1;
        if (self.last + 1).max(behind) == behind && t.as_secs() % 30 >= 25 {
            // The step before is accepted only while the server's clock is in this one: with
            // under 5 s of it left, the code is made after the clock moves on.
            let left = std::time::Duration::from_secs(30 - t.as_secs() % 30)
                .saturating_sub(std::time::Duration::from_nanos(t.subsec_nanos().into()));
            std::thread::sleep(left + std::time::Duration::from_millis(50));
        }
        let now = step_of(clock().as_secs() as i64);
        let step = (self.last + 1).max(now - 1);
        assert!(step <= now + 1, "no fresh code before the clock moves on");
        self.last = step;
        code_at(&self.key, step, DIGITS)
    }
}

fn client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The cookies a response sets, as `name=value` pairs, and their attributes by name.
fn cookies(headers: &HeaderMap) -> Vec<(String, String, String)> {
    headers
        .get_all("set-cookie")
        .iter()
        .map(|c| {
            let c = c.to_str().unwrap();
            let (pair, attributes) = c.split_once(';').unwrap_or((c, ""));
            let (name, value) = pair.split_once('=').unwrap();
            (name.to_owned(), value.to_owned(), attributes.to_owned())
        })
        .collect()
}

fn location(headers: &HeaderMap) -> String {
    headers["location"].to_str().unwrap().to_owned()
}

/// A signed-in browser: its cookies.
struct Session {
    cookie: String,
    csrf: String,
}

/// Posts the password form; returns where it leads and the cookies set.
async fn password_step(server: &Server, email: &str, password: &str) -> (String, HeaderMap) {
    let resp = client()
        .post(format!("{}/login/", server.url))
        .header("Origin", &server.url)
        .form(&[("username", email), ("password", password)])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let headers = resp.headers().clone();
    (location(&headers), headers)
}

/// The pending login's cookie from the password step's answer.
/// `value` with the character at `at` (ASCII) replaced by a different one: a forgery that never
/// equals the original by chance.
fn tampered(value: &str, at: usize) -> String {
    let old = value.as_bytes()[at];
    let new = if old == b'0' { '1' } else { '0' };
    format!("{}{new}{}", &value[..at], &value[at + 1..])
}

fn pending_cookie(headers: &HeaderMap) -> String {
    let (_, value, attributes) = cookies(headers)
        .into_iter()
        .find(|(name, _, _)| name == "chronicle_2fa")
        .expect("a pending login cookie");
    assert!(attributes.contains("HttpOnly"), "{attributes}");
    assert!(attributes.contains("Path=/login/"), "{attributes}");
    assert!(attributes.contains("Max-Age=600"), "{attributes}");
    value
}

/// Posts a code for a pending login; returns where it leads and the cookies set.
async fn code_step(server: &Server, pending: &str, code: &str) -> (String, HeaderMap) {
    let resp = client()
        .post(format!("{}/login/two_factor/", server.url))
        .header("Origin", &server.url)
        .header("Cookie", format!("chronicle_2fa={pending}"))
        .form(&[("code", code)])
        .send()
        .await
        .unwrap();
    // 302 to the mobile app, 303 in the browser.
    assert!(
        [StatusCode::FOUND, StatusCode::SEE_OTHER].contains(&resp.status()),
        "{}",
        resp.status()
    );
    let headers = resp.headers().clone();
    (location(&headers), headers)
}

fn session_of(headers: &HeaderMap) -> Session {
    let set = cookies(headers);
    let value = |name: &str| {
        set.iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, v, _)| v.clone())
            .unwrap_or_else(|| panic!("no {name} cookie in {set:?}"))
    };
    // The pending login's cookie is cleared with the session's start.
    assert!(set
        .iter()
        .any(|(n, v, a)| n == "chronicle_2fa" && v.is_empty() && a.contains("Max-Age=0")));
    Session {
        cookie: value("sessionid"),
        csrf: value("csrftoken"),
    }
}

/// A `/json` request of a signed-in browser.
async fn json(
    server: &Server,
    session: &Session,
    method: reqwest::Method,
    path: &str,
    params: &[(&str, &str)],
) -> (StatusCode, Value) {
    let mut req = client().request(method.clone(), format!("{}/json{path}", server.url));
    req = if method == reqwest::Method::GET {
        req.query(params)
    } else {
        req.form(params)
    };
    let resp = req
        .header("Cookie", format!("sessionid={}", session.cookie))
        .header("X-CSRFToken", &session.csrf)
        .send()
        .await
        .unwrap();
    (resp.status(), resp.json().await.unwrap())
}

async fn fetch_api_key(server: &Server, email: &str, password: &str) -> (StatusCode, Value) {
    server
        .api(None)
        .post(
            "/fetch_api_key",
            &[("username", email), ("password", password)],
        )
        .await
}

fn invalid_code() -> Value {
    json!({"result": "error", "code": "BAD_REQUEST",
           "msg": "Invalid token. Please make sure you have entered it correctly."})
}

#[tokio::test]
async fn two_factor_authentication_from_enrolment_to_an_administrator_switching_it_off() {
    let server = Server::start();
    let (alice_id, _) = server.create_member("alice@example.com", "Alice").await;
    let (to, headers) = password_step(&server, "alice@example.com", "password123").await;
    assert_eq!(to, "/");
    let mut alice = session_of_plain(&headers);
    // Another browser of hers, signed in before she enrols.
    let (_, headers) = password_step(&server, "alice@example.com", "password123").await;
    let older = session_of_plain(&headers);

    // Off at first; a new key is offered, with its QR code.
    let me = reqwest::Method::GET;
    let (status, state) = json(&server, &alice, me.clone(), "/users/me/two_factor", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            &state["available"],
            &state["enabled"],
            &state["required"],
            &state["backup_codes_left"]
        ),
        (&json!(true), &json!(false), &json!(false), &json!(0))
    );
    let post = reqwest::Method::POST;
    let (status, offer) = json(
        &server,
        &alice,
        post.clone(),
        "/users/me/two_factor/setup",
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{offer}");
    let secret = offer["secret"].as_str().unwrap().to_owned();
    assert_eq!(secret.len(), 32);
    let uri = offer["otpauth_uri"].as_str().unwrap();
    assert!(
        uri.starts_with("otpauth://totp/")
            && uri.contains(":alice@example.com?")
            && uri.contains(&format!("secret={secret}&"))
            && uri.ends_with("&algorithm=SHA1&digits=6&period=30"),
        "{uri}"
    );
    let token = offer["setup_token"].as_str().unwrap().to_owned();
    let qr = client()
        .get(format!("{}/json/users/me/two_factor/qr.svg", server.url))
        .query(&[("setup_token", &token)])
        .header("Cookie", format!("sessionid={}", alice.cookie))
        .send()
        .await
        .unwrap();
    assert_eq!(qr.status(), StatusCode::OK);
    assert_eq!(qr.headers()["content-type"], "image/svg+xml");
    assert!(qr.text().await.unwrap().contains("<svg"));

    // A wrong code, or another setup's token, enrols nobody.
    let mut app = App::new(&secret);
    let (status, body) = json(
        &server,
        &alice,
        post.clone(),
        "/users/me/two_factor",
        &[("setup_token", &token), ("code", "000000")],
    )
    .await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, invalid_code()));
    let forged = tampered(&token, 0);
    let (status, body) = json(
        &server,
        &alice,
        post.clone(),
        "/users/me/two_factor",
        &[("setup_token", &forged), ("code", &app.next_code())],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "The setup has expired; please start again");
    app.last -= 1;
    // The right code turns it on and answers ten backup codes, once.
    let (status, body) = json(
        &server,
        &alice,
        post.clone(),
        "/users/me/two_factor",
        &[("setup_token", &token), ("code", &app.next_code())],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let backups: Vec<String> = serde_json::from_value(body["backup_codes"].clone()).unwrap();
    assert_eq!(backups.len(), 10);
    let (_, state) = json(&server, &alice, me.clone(), "/users/me/two_factor", &[]).await;
    assert_eq!(
        (&state["enabled"], &state["backup_codes_left"]),
        (&json!(true), &json!(10))
    );
    // The older browser did not pass the second factor: its session ended; this one stays.
    let (status, _) = json(&server, &older, me.clone(), "/users/me", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = json(&server, &alice, me.clone(), "/users/me", &[]).await;
    assert_eq!(status, StatusCode::OK);

    // The password alone no longer signs in: the login asks for a code.
    let (to, headers) = password_step(&server, "alice@example.com", "password123").await;
    assert_eq!(to, "/login/?two_factor=code");
    assert!(cookies(&headers).iter().all(|(n, _, _)| n != "sessionid"));
    let pending = pending_cookie(&headers);
    let (to, _) = code_step(&server, &pending, "123").await;
    assert_eq!(to, "/login/?two_factor=code&error=invalid_code");
    let forged = tampered(&pending, pending.len() - 1);
    let (to, _) = code_step(&server, &forged, &app.next_code()).await;
    assert_eq!(to, "/login/?error=two_factor_expired");
    app.last -= 1;
    let used = app.next_code();
    let (to, headers) = code_step(&server, &pending, &used).await;
    assert_eq!(to, "/");
    alice = session_of(&headers);
    let (status, _) = json(&server, &alice, me.clone(), "/users/me", &[]).await;
    assert_eq!(status, StatusCode::OK);
    // The same code again is refused, and so is a backup code twice.
    let (_, headers) = password_step(&server, "alice@example.com", "password123").await;
    let pending = pending_cookie(&headers);
    let (to, _) = code_step(&server, &pending, &used).await;
    assert_eq!(to, "/login/?two_factor=code&error=invalid_code");
    let (to, _) = code_step(&server, &pending, &backups[0].to_uppercase()).await;
    assert_eq!(to, "/");
    let (to, _) = code_step(&server, &pending, &backups[0]).await;
    assert_eq!(to, "/login/?two_factor=code&error=invalid_code");

    // The mobile app's sign-in through the browser takes the second step too, then gets its
    // key through the pad.
    let otp = "0123456789abcdef".repeat(4);
    let resp = client()
        .post(format!("{}/login/", server.url))
        .header("Origin", &server.url)
        .form(&[
            ("username", "alice@example.com"),
            ("password", "password123"),
            ("mobile_flow_otp", otp.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(location(resp.headers()), "/login/?two_factor=code");
    let pending = pending_cookie(resp.headers());
    let (to, _) = code_step(&server, &pending, &backups[3]).await;
    assert!(
        to.starts_with("zulip://login?otp_encrypted_api_key="),
        "{to}"
    );

    // The API: the password alone is refused with the way to do it; the password followed by
    // a code gives the key.
    let (status, body) = fetch_api_key(&server, "alice@example.com", "password123").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["code"], "AUTHENTICATION_FAILED");
    assert!(
        body["msg"].as_str().unwrap().contains("followed by"),
        "{body}"
    );
    let (status, body) = fetch_api_key(
        &server,
        "alice@example.com",
        &format!("password123{}", app.next_code()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let key = body["api_key"].as_str().unwrap().to_owned();
    let creds = Creds {
        email: "alice@example.com".into(),
        key,
    };
    assert_eq!(
        server.api(Some(&creds)).get("/users/me", &[]).await.0,
        StatusCode::OK
    );
    let (status, _) = fetch_api_key(&server, "alice@example.com", "wrongpass123456").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Backup codes again (with a code); the old ones stop working.
    let (status, body) = json(
        &server,
        &alice,
        post.clone(),
        "/users/me/two_factor/backup_codes",
        &[("code", &backups[1])],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let renewed: Vec<String> = serde_json::from_value(body["backup_codes"].clone()).unwrap();
    assert_eq!(renewed.len(), 10);
    assert!(renewed.iter().all(|c| !backups.contains(c)));
    let (_, headers) = password_step(&server, "alice@example.com", "password123").await;
    let pending = pending_cookie(&headers);
    let (to, _) = code_step(&server, &pending, &backups[2]).await;
    assert_eq!(to, "/login/?two_factor=code&error=invalid_code");

    // Neither the key nor a code is in the data directory; the log and the dump say who has
    // it and which step was used.
    let owner = server.api(Some(&server.owner()));
    let (_, dump) = owner.get("/admin/projections", &[]).await;
    let entry = &dump["projections"]["two_factor"][alice_id.to_string()];
    assert_eq!(entry["backup_codes_left"], 10, "{dump}");
    assert!(entry.get("key_nonce").is_none(), "{dump}");
    assert_eq!(entry["last_step"], app.last, "{dump}");
    let key_bytes = base32_decode(&secret);
    for file in crate::web::walk(&server.dir) {
        let bytes = std::fs::read(&file).unwrap();
        for needle in [
            secret.as_bytes(),
            key_bytes.as_slice(),
            renewed[0].as_bytes(),
        ] {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle),
                "a secret is in {}",
                file.display()
            );
        }
    }

    // A used step stays used after a restart.
    let server = server.stop().restart();
    let (_, headers) = password_step(&server, "alice@example.com", "password123").await;
    let pending = pending_cookie(&headers);
    let (to, _) = code_step(&server, &pending, &code_at(&app.key, app.last, DIGITS)).await;
    assert_eq!(to, "/login/?two_factor=code&error=invalid_code");

    // Switching it off takes a code; an administrator can do it for someone who lost their
    // phone, and a member cannot for another.
    let (status, body) = json(
        &server,
        &alice,
        reqwest::Method::DELETE,
        "/users/me/two_factor",
        &[("code", "000000")],
    )
    .await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, invalid_code()));
    let (bob_id, bob) = server.create_member("bob@example.com", "Bob").await;
    let (status, body) = server
        .api(Some(&bob))
        .delete(&format!("/users/{alice_id}/two_factor"), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "UNAUTHORIZED_PRINCIPAL", "{body}");
    let owner = server.api(Some(&server.owner()));
    let (status, body) = owner
        .delete(&format!("/users/{bob_id}/two_factor"), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "Two-factor authentication is not on");
    let (status, body) = owner
        .delete(&format!("/users/{alice_id}/two_factor"), &[])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (to, _) = password_step(&server, "alice@example.com", "password123").await;
    assert_eq!(to, "/");
    let (status, _) = fetch_api_key(&server, "alice@example.com", "password123").await;
    assert_eq!(status, StatusCode::OK);
    let (_, events) = owner
        .get("/admin/events", &[("type", "TwoFactorChanged")])
        .await;
    let changes: Vec<String> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["payload"]["change"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .clone()
        })
        .collect();
    let enabled = &events["events"][0]["payload"]["change"]["Enabled"];
    assert_eq!(enabled["key_nonce"], "[redacted]", "{events}");
    assert_eq!(
        changes,
        [
            "Enabled",
            "CodeUsed",
            "BackupCodeUsed",
            "BackupCodeUsed",
            "CodeUsed",
            "BackupCodeUsed",
            "BackupCodesIssued",
            "Disabled"
        ],
        "{events}"
    );
}

/// The cookies of a login that needed no second step.
fn session_of_plain(headers: &HeaderMap) -> Session {
    let set = cookies(headers);
    let value = |name: &str| {
        set.iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, v, _)| v.clone())
            .unwrap()
    };
    Session {
        cookie: value("sessionid"),
        csrf: value("csrftoken"),
    }
}

#[tokio::test]
async fn an_organization_that_requires_it_has_administrators_enrol_while_logging_in() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chronicle.toml");
    std::fs::write(&file, "[auth]\ntwo_factor_required_for_admins = true\n").unwrap();
    let server = Server::start_with(&["--config", &file.display().to_string()]);
    server.create_member("carol@example.com", "Carol").await;
    // A member is not asked.
    let (to, _) = password_step(&server, "carol@example.com", "password123").await;
    assert_eq!(to, "/");
    // An administrator must enrol first: not through the API,
    let (dana_id, _) = server.create_member("dana@example.com", "Dana").await;
    let (status, body) = server
        .api(Some(&server.owner()))
        .call(
            reqwest::Method::PATCH,
            &format!("/users/{dana_id}"),
            &[("role", "200")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let admin = "dana@example.com";
    let (status, body) = fetch_api_key(&server, admin, "password123").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(
        body["msg"]
            .as_str()
            .unwrap()
            .contains("requires two-factor"),
        "{body}"
    );
    // but in the login, which shows the key and its QR code.
    let (to, headers) = password_step(&server, admin, "password123").await;
    assert_eq!(to, "/login/?two_factor=setup");
    let pending = pending_cookie(&headers);
    let offer: Value = client()
        .get(format!("{}/login/two_factor/setup", server.url))
        .header("Cookie", format!("chronicle_2fa={pending}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(offer["result"], "success", "{offer}");
    let qr = client()
        .get(format!("{}/login/two_factor/qr.svg", server.url))
        .header("Cookie", format!("chronicle_2fa={pending}"))
        .send()
        .await
        .unwrap();
    assert_eq!(qr.headers()["content-type"], "image/svg+xml");
    let no_cookie = client()
        .get(format!("{}/login/two_factor/setup", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(no_cookie.status(), StatusCode::BAD_REQUEST);
    let mut app = App::new(offer["secret"].as_str().unwrap());
    let (to, _) = code_step(&server, &pending, "999999").await;
    assert_eq!(to, "/login/?two_factor=setup&error=invalid_code");
    let (to, headers) = code_step(&server, &pending, &app.next_code()).await;
    assert_eq!(to, "/");
    let session = session_of(&headers);
    let (_, state) = json(
        &server,
        &session,
        reqwest::Method::GET,
        "/users/me/two_factor",
        &[],
    )
    .await;
    assert_eq!(
        (
            &state["enabled"],
            &state["required"],
            &state["backup_codes_left"]
        ),
        (&json!(true), &json!(true), &json!(0))
    );
    // From now on their logins ask for a code, and the API takes one.
    let (to, _) = password_step(&server, admin, "password123").await;
    assert_eq!(to, "/login/?two_factor=code");
    let (status, _) =
        fetch_api_key(&server, admin, &format!("password123{}", app.next_code())).await;
    assert_eq!(status, StatusCode::OK);
}

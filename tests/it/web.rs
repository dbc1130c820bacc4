//! The web client's server side: its pages and files, signing in with the login form, the
//! session cookie and the CSRF check on `/json/...`, the person's sessions, and that no cookie
//! value reaches the log or the dump.

use crate::support::{Creds, Server};
use chronicle::http::webclient::CONTENT_SECURITY_POLICY;
use reqwest::header::HeaderMap;
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// A browser's view of the server: its cookies, sent back as a browser would.
struct Browser {
    client: Client,
    url: String,
    session: Option<String>,
    csrf: Option<String>,
    agent: &'static str,
}

impl Browser {
    fn new(server: &Server, agent: &'static str) -> Browser {
        Browser {
            client: Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            url: server.url.clone(),
            session: None,
            csrf: None,
            agent,
        }
    }

    /// Posts the login form from `origin`; returns the status, the headers and where it leads.
    async fn login(&mut self, email: &str, password: &str, origin: &str) -> (HeaderMap, String) {
        let resp = self
            .client
            .post(format!("{}/login/", self.url))
            .header("Origin", origin)
            .header("User-Agent", self.agent)
            .form(&[("username", email), ("password", password)])
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::SEE_OTHER);
        let headers = resp.headers().clone();
        for cookie in headers.get_all("set-cookie") {
            let cookie = cookie.to_str().unwrap();
            let (pair, _) = cookie.split_once(';').unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            match name {
                "sessionid" => self.session = Some(value.to_owned()),
                "csrftoken" => self.csrf = Some(value.to_owned()),
                other => panic!("unexpected cookie {other}"),
            }
        }
        let location = headers["location"].to_str().unwrap().to_owned();
        (headers, location)
    }

    /// A request with the session cookie and, when `csrf`, the token header.
    async fn call(
        &self,
        method: Method,
        path: &str,
        params: &[(&str, &str)],
        csrf: Option<&str>,
    ) -> (StatusCode, HeaderMap, String) {
        let mut req = self
            .client
            .request(method.clone(), format!("{}{path}", self.url));
        req = if method == Method::GET {
            req.query(params)
        } else {
            req.form(params)
        };
        if let Some(session) = &self.session {
            req = req.header("Cookie", format!("sessionid={session}"));
        }
        if let Some(token) = csrf {
            req = req.header("X-CSRFToken", token);
        }
        let resp = req.send().await.unwrap();
        let (status, headers) = (resp.status(), resp.headers().clone());
        (status, headers, resp.text().await.unwrap())
    }

    /// A JSON request on the `/json` mirror, with the right CSRF token.
    async fn json(
        &self,
        method: Method,
        path: &str,
        params: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let token = self.csrf.clone();
        let (status, _, body) = self.call(method, path, params, token.as_deref()).await;
        (status, serde_json::from_str(&body).unwrap())
    }
}

fn csrf_error(reason: &str) -> Value {
    json!({"result": "error", "msg": format!("CSRF error: {reason}"), "code": "CSRF_FAILED",
           "reason": reason})
}

async fn message_count(server: &Server, creds: &Creds) -> usize {
    let (_, body) = server
        .api(Some(creds))
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "100"),
                ("num_after", "0"),
            ],
        )
        .await;
    body["messages"].as_array().unwrap().len()
}

#[tokio::test]
async fn the_login_form_starts_a_session_that_guards_writes_and_survives_a_restart() {
    let server = Server::start();
    let (_, alice) = server.create_member("alice@example.com", "Alice").await;
    let mut browser = Browser::new(&server, "TestBrowser/1.0 (first)");

    // Signed out, the app leads to the login page; both carry the strict policy.
    let (status, headers, _) = browser.call(Method::GET, "/", &[], None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers["location"], "/login/");
    let (status, headers, page) = browser.call(Method::GET, "/login/", &[], None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-security-policy"], CONTENT_SECURITY_POLICY);
    assert_eq!(headers["x-frame-options"], "DENY");
    assert!(page.contains("action=\"/login/\""), "{page}");

    // A form posted by another site, and a wrong password, sign nobody in.
    let (headers, to) = browser
        .login("alice@example.com", "password123", "http://evil.example")
        .await;
    assert_eq!(to, "/login/?error=origin");
    assert!(headers.get("set-cookie").is_none());
    let (_, to) = browser
        .login("alice@example.com", "wrong", &server.url)
        .await;
    assert_eq!(to, "/login/?error=invalid");
    assert!(browser.session.is_none());

    let (headers, to) = browser
        .login("alice@example.com", "password123", &server.url)
        .await;
    assert_eq!(to, "/");
    let cookies: Vec<&str> = headers
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap())
        .collect();
    let session_cookie = cookies
        .iter()
        .find(|c| c.starts_with("sessionid="))
        .unwrap();
    assert!(
        session_cookie.ends_with("; Path=/; Max-Age=1209600; HttpOnly; SameSite=Lax"),
        "{session_cookie}"
    );
    let csrf_cookie = cookies
        .iter()
        .find(|c| c.starts_with("csrftoken="))
        .unwrap();
    assert!(!csrf_cookie.contains("HttpOnly") && csrf_cookie.contains("SameSite=Strict"));
    let (status, _, _) = browser.call(Method::GET, "/", &[], None).await;
    assert_eq!(status, StatusCode::OK);

    // Reads need the session; writes need the session and its token.
    let (status, me) = browser.json(Method::GET, "/json/users/me", &[]).await;
    assert_eq!(
        (status, me["email"].as_str()),
        (StatusCode::OK, Some("alice@example.com"))
    );
    let send = [
        ("type", "direct"),
        ("to", "[\"alice@example.com\"]"),
        ("content", "from the browser"),
    ];
    let (status, _, body) = browser
        .call(Method::POST, "/json/messages", &send, None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        csrf_error("CSRF token missing.")
    );
    let wrong = "A".repeat(32);
    let (status, _, body) = browser
        .call(Method::POST, "/json/messages", &send, Some(&wrong))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        csrf_error("CSRF token incorrect.")
    );
    assert_eq!(message_count(&server, &alice).await, 0);
    let (status, sent) = browser.json(Method::POST, "/json/messages", &send).await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(message_count(&server, &alice).await, 1);

    // The cookie opens nothing else: not the API, not with a forged MAC, not without it.
    let (status, headers, _) = browser
        .call(Method::GET, "/api/v1/users/me", &[], None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(headers["www-authenticate"], "Basic realm=\"zulip\"");
    let mut forged = Browser::new(&server, "forger");
    let id = browser
        .session
        .as_deref()
        .unwrap()
        .split_once('.')
        .unwrap()
        .0;
    forged.session = Some(format!("{id}.{}", "B".repeat(32)));
    let (status, headers, body) = forged.call(Method::GET, "/json/users/me", &[], None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(headers["www-authenticate"], "Session realm=\"zulip\"");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"result": "error", "code": "UNAUTHORIZED",
               "msg": "Not logged in: API authentication or user session required"})
    );

    // Neither cookie's value is in the log or the dump; the session's id and browser are.
    let owner = server.api(Some(&server.owner()));
    let (_, dump) = owner.get("/admin/projections", &[]).await;
    let (_, events) = owner
        .get("/admin/events", &[("type", "SessionStarted")])
        .await;
    let mac = browser
        .session
        .as_deref()
        .unwrap()
        .split_once('.')
        .unwrap()
        .1;
    for text in [dump.to_string(), events.to_string()] {
        assert!(!text.contains(mac) && !text.contains(browser.csrf.as_deref().unwrap()));
    }
    assert_eq!(
        dump["projections"]["sessions"][id]["client"],
        "TestBrowser/1.0 (first)"
    );
    assert_eq!(events["events"].as_array().unwrap().len(), 1);
    assert!(events["events"][0].to_string().contains(id), "{events}");

    // The session outlives a restart.
    let server = server.stop().restart();
    browser.url = server.url.clone();
    let (status, me) = browser.json(Method::GET, "/json/users/me", &[]).await;
    assert_eq!(
        (status, me["full_name"].as_str()),
        (StatusCode::OK, Some("Alice"))
    );
}

#[tokio::test]
async fn sessions_are_listed_ended_one_by_one_and_die_with_the_account() {
    let server = Server::start_with(&["--external-url", "https://chat.example.com"]);
    let (alice_id, _) = server.create_member("alice@example.com", "Alice").await;
    let mut laptop = Browser::new(&server, "Laptop");
    let mut phone = Browser::new(&server, "Phone");
    let (headers, _) = laptop
        .login(
            "alice@example.com",
            "password123",
            "https://chat.example.com",
        )
        .await;
    // Under an https address, both cookies travel only over https.
    for cookie in headers.get_all("set-cookie") {
        assert!(cookie.to_str().unwrap().ends_with("; Secure"), "{cookie:?}");
    }
    phone
        .login("alice@example.com", "password123", &server.url)
        .await;

    let (status, listed) = laptop.json(Method::GET, "/json/sessions", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    // Newest first.
    assert_eq!(sessions[0]["client"], "Phone");
    assert_eq!(sessions[0]["current"], false);
    assert_eq!(sessions[1]["client"], "Laptop");
    assert_eq!(sessions[1]["current"], true);
    let expires =
        sessions[1]["expires"].as_i64().unwrap() - sessions[1]["started"].as_i64().unwrap();
    assert_eq!(expires, 14 * 24 * 3600);

    // The laptop ends the phone's session; the phone is signed out.
    let phone_id = sessions[0]["id"].as_str().unwrap().to_owned();
    let (status, body) = laptop
        .json(Method::DELETE, &format!("/json/sessions/{phone_id}"), &[])
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"result": "success", "msg": ""}))
    );
    let (status, _) = phone.json(Method::GET, "/json/users/me", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = laptop
        .json(Method::DELETE, &format!("/json/sessions/{phone_id}"), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "No such session");

    // Someone else's session cannot be ended by id.
    let (_, _) = server.create_member("bob@example.com", "Bob").await;
    let mut bob = Browser::new(&server, "Bob's");
    bob.login("bob@example.com", "password123", &server.url)
        .await;
    let (_, listed) = laptop.json(Method::GET, "/json/sessions", &[]).await;
    let laptop_id = listed["sessions"][0]["id"].as_str().unwrap().to_owned();
    let (status, _) = bob
        .json(Method::DELETE, &format!("/json/sessions/{laptop_id}"), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Logging out ends the session and clears both cookies.
    let (status, headers, _) = bob
        .call(Method::POST, "/json/logout", &[], bob.csrf.as_deref())
        .await;
    assert_eq!(status, StatusCode::OK);
    let cleared: Vec<&str> = headers
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap())
        .collect();
    assert!(cleared
        .iter()
        .any(|c| c.starts_with("sessionid=; Path=/; Max-Age=0; HttpOnly")));
    assert!(cleared
        .iter()
        .any(|c| c.starts_with("csrftoken=; Path=/; Max-Age=0")));
    let (status, headers, _) = bob.call(Method::GET, "/", &[], None).await;
    assert_eq!(
        (status, &headers["location"]),
        (StatusCode::SEE_OTHER, &"/login/".parse().unwrap())
    );

    // A deactivated account is signed out everywhere, for good.
    let owner = server.api(Some(&server.owner()));
    let (status, _) = owner.delete(&format!("/users/{alice_id}"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (_, dump) = owner
        .get("/admin/projections", &[("only", "sessions")])
        .await;
    assert!(!dump.to_string().contains("Laptop"), "{dump}");
    let (status, _) = owner
        .post(&format!("/users/{alice_id}/reactivate"), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = laptop.json(Method::GET, "/json/users/me", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, to) = laptop
        .login("alice@example.com", "password123", &server.url)
        .await;
    assert_eq!(to, "/");
}

#[tokio::test]
async fn the_client_files_are_served_with_their_tags_and_nothing_else_is() {
    let server = Server::start();
    let browser = Browser::new(&server, "files");
    let (status, headers, body) = browser
        .call(Method::GET, "/static/web/js/app.js", &[], None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(headers["content-security-policy"], CONTENT_SECURITY_POLICY);
    assert!(body.contains("import"), "app.js is a module");
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let resp = browser
        .client
        .get(format!("{}/static/web/js/app.js", server.url))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(headers["vary"], "Accept-Encoding");
    assert!(!headers.contains_key("content-encoding"));
    // A browser takes gzip: the same bytes compressed, under a tag of their own.
    let gzipped = |accept: &'static str, tag: Option<String>| {
        let mut req = browser
            .client
            .get(format!("{}/static/web/js/app.js", server.url))
            .header("Accept-Encoding", accept);
        if let Some(tag) = tag {
            req = req.header("If-None-Match", tag);
        }
        req.send()
    };
    let resp = gzipped("br, gzip, deflate", None).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-encoding"], "gzip");
    assert_eq!(resp.headers()["vary"], "Accept-Encoding");
    let gzip_tag = resp.headers()["etag"].to_str().unwrap().to_owned();
    assert_ne!(gzip_tag, etag);
    let compressed = resp.bytes().await.unwrap();
    assert!(
        compressed.len() * 2 < body.len(),
        "{} bytes",
        compressed.len()
    );
    let mut unpacked = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(&compressed[..]),
        &mut unpacked,
    )
    .unwrap();
    assert_eq!(unpacked, body);
    let resp = gzipped("gzip", Some(gzip_tag)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(resp.headers()["content-encoding"], "gzip");
    // Refused by `q=0`: the plain bytes.
    let resp = gzipped("gzip;q=0, identity", None).await.unwrap();
    assert!(!resp.headers().contains_key("content-encoding"));
    assert_eq!(resp.text().await.unwrap(), body);
    // Encoded, so that the client sends the dots as they are (it would resolve `..` itself).
    for missing in [
        "/static/web/nope.js",
        "/static/web/%2e%2e/%2e%2e/Cargo.toml",
        "/static/web/..%2f..%2fCargo.toml",
        "/static/web/",
    ] {
        let (status, _, _) = browser.call(Method::GET, missing, &[], None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    }

    // The pages name every file under the build's version, which is cached for good.
    let (status, _, page) = browser.call(Method::GET, "/login/", &[], None).await;
    assert_eq!(status, StatusCode::OK);
    let named: Vec<&str> = page.split("\"/static/web/").skip(1).collect();
    assert!(!named.is_empty(), "{page}");
    let version = &named[0][..12];
    assert!(version.bytes().all(|b| b.is_ascii_hexdigit()), "{version}");
    for rest in &named {
        assert!(rest.starts_with(&format!("{version}/")), "{rest}");
    }
    let (status, headers, versioned) = browser
        .call(
            Method::GET,
            &format!("/static/web/{version}/js/app.js"),
            &[],
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(versioned, body);
    assert_eq!(
        headers["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(headers["content-security-policy"], CONTENT_SECURITY_POLICY);
    // Another version (a page loaded before an upgrade) gets today's file, revalidated.
    let (status, headers, other) = browser
        .call(Method::GET, "/static/web/0123456789ab/js/app.js", &[], None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(other, body);
    assert_eq!(headers["cache-control"], "no-cache");
    // The app's page names its files under the same version, the first requests' module
    // loaded on its own.
    server.create_member("ada@example.com", "Ada").await;
    let mut ada = Browser::new(&server, "files");
    ada.login("ada@example.com", "password123", &server.url)
        .await;
    let (status, _, app) = ada.call(Method::GET, "/", &[], None).await;
    assert_eq!(status, StatusCode::OK);
    let named: Vec<&str> = app.split("\"/static/web/").skip(1).collect();
    assert!(named.len() > 20, "{app}");
    assert!(named
        .iter()
        .all(|rest| rest.starts_with(&format!("{version}/"))));
    assert!(
        app.contains(&format!(
            "<script type=\"module\" async src=\"/static/web/{version}/js/start.js\">"
        )),
        "{app}"
    );
    for missing in [
        format!("/static/web/{version}/%2e%2e/%2e%2e/Cargo.toml"),
        format!("/static/web/{version}/"),
        format!("/static/web/{version}/nope.js"),
    ] {
        let (status, _, _) = browser.call(Method::GET, &missing, &[], None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    }
}

#[tokio::test]
async fn a_browser_opens_uploaded_files_with_its_session() {
    let server = Server::start();
    let (_, alice) = server.create_member("alice@example.com", "Alice").await;
    let (_, _) = server.create_member("bob@example.com", "Bob").await;
    let (status, uploaded) = crate::uploads::post_files(
        &server.api(Some(&alice)),
        "/user_uploads",
        &[("file", "notes.txt", "text/plain", b"private notes")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{uploaded}");
    let url = uploaded["url"].as_str().unwrap().to_owned();

    let mut alices = Browser::new(&server, "Alice's");
    alices
        .login("alice@example.com", "password123", &server.url)
        .await;
    let (status, _, body) = alices.call(Method::GET, &url, &[], None).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "private notes"));

    // Bob's session sees nothing of a file no message of his links; no session, a 401.
    let mut bobs = Browser::new(&server, "Bob's");
    bobs.login("bob@example.com", "password123", &server.url)
        .await;
    let (status, _, _) = bobs.call(Method::GET, &url, &[], None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = Browser::new(&server, "nobody")
        .call(Method::GET, &url, &[], None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// The mobile app's sign-in through the browser (`mobile_flow_otp`), as the app decodes it: the
/// key's ASCII in hex, XORed digit by digit with the pad the app chose.
fn otp_decrypt(encrypted: &str, otp: &str) -> String {
    let hex: String = encrypted
        .chars()
        .zip(otp.chars())
        .map(|(e, p)| {
            char::from_digit(e.to_digit(16).unwrap() ^ p.to_digit(16).unwrap(), 16).unwrap()
        })
        .collect();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap() as char)
        .collect()
}

#[tokio::test]
async fn the_login_form_gives_the_mobile_app_its_key_through_the_one_time_pad() {
    let server = Server::start();
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let otp: String = (0..64)
        .map(|i| char::from_digit((i * 7 + 3) % 16, 16).unwrap())
        .collect();
    let post = |password: &'static str, otp: String| {
        client
            .post(format!("{}/login/", server.url))
            .header("Origin", &server.url)
            .form(&[
                ("username", "alice@example.com".to_owned()),
                ("password", password.to_owned()),
                ("mobile_flow_otp", otp),
            ])
            .send()
    };

    // A wrong password goes back to the form, the pad kept for the next try.
    let resp = post("wrong", otp.clone()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        resp.headers()["location"],
        format!("/login/?error=invalid&mobile_flow_otp={otp}").as_str()
    );

    // The right one ends at the app, with no browser session made.
    let resp = post("password123", otp.clone()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FOUND);
    assert!(resp.headers().get("set-cookie").is_none());
    let location = resp.headers()["location"].to_str().unwrap().to_owned();
    let (target, query) = location.split_once('?').unwrap();
    assert_eq!(target, "zulip://login");
    let params: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
    let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["otp_encrypted_api_key", "email", "user_id", "realm"]
    );
    assert_eq!(params[1].1, "alice@example.com");
    assert_eq!(params[2].1, alice_id.to_string());
    assert_eq!(params[3].1, server.url);
    let encrypted = &params[0].1;
    assert_eq!(encrypted.len(), 64);
    assert_ne!(encrypted, &otp);
    let key = otp_decrypt(encrypted, &otp);
    assert_eq!(key, alice.key);
    let me = server
        .api(Some(&Creds {
            email: "alice@example.com".into(),
            key,
        }))
        .get("/users/me", &[])
        .await;
    assert_eq!(me.0, StatusCode::OK);
    assert_eq!(me.1["user_id"], alice_id);

    // A browser signed in already goes straight back to the app.
    let mut browser = Browser::new(&server, "TestBrowser/1.0 (mobile)");
    browser
        .login("alice@example.com", "password123", &server.url)
        .await;
    let (status, headers, _) = browser
        .call(Method::GET, "/login/", &[("mobile_flow_otp", &otp)], None)
        .await;
    assert_eq!(status, StatusCode::FOUND);
    assert!(headers["location"]
        .to_str()
        .unwrap()
        .starts_with("zulip://login?otp_encrypted_api_key="));

    // A pad that is not 64 hexadecimal digits is refused, as Zulip refuses it.
    for bad in ["1234", &"g".repeat(64)] {
        let resp = post("password123", bad.to_owned()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            body,
            json!({"result": "error", "msg": "Invalid OTP", "code": "BAD_REQUEST"})
        );
        let (status, _, _) = Browser::new(&server, "x")
            .call(Method::GET, "/login/", &[("mobile_flow_otp", bad)], None)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
    }
}

/// The outbox's emails whose file name has `kind`, oldest first.
fn outbox_mails(server: &Server, kind: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(server.dir.join("outbox")) else {
        return Vec::new();
    };
    let mut mails: Vec<(String, String)> = entries
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().contains(kind))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect();
    mails.sort();
    mails.into_iter().map(|(_, mail)| mail).collect()
}

/// The first line of `mail` that holds `part`, trimmed.
fn line_with(mail: &str, part: &str) -> Option<String> {
    mail.lines()
        .find(|l| l.contains(part))
        .map(|l| l.trim().to_owned())
}

/// The links in the outbox's password-reset emails, oldest first.
fn reset_links(server: &Server) -> Vec<String> {
    outbox_mails(server, "password-reset")
        .iter()
        .filter_map(|mail| line_with(mail, "/accounts/password/reset/"))
        .collect()
}

/// A browser's form posts to the server, from its own pages (never following redirects).
struct Forms {
    client: Client,
    url: String,
}

impl Forms {
    fn new(server: &Server) -> Forms {
        Forms {
            client: Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            url: server.url.clone(),
        }
    }

    async fn post(
        &self,
        path: String,
        form: Vec<(&'static str, String)>,
    ) -> reqwest::Result<reqwest::Response> {
        self.client
            .post(format!("{}{path}", self.url))
            .header("Origin", &self.url)
            .form(&form)
            .send()
            .await
    }
}

/// Where a 303 answer sends the browser.
fn see_other(resp: &reqwest::Response) -> String {
    assert_eq!(resp.status(), StatusCode::SEE_OTHER, "{resp:?}");
    resp.headers()["location"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_forgotten_password_is_reset_once_through_an_emailed_link() {
    let server = Server::start();
    let (_, _) = server.create_member("alice@example.com", "Alice").await;
    let forms = Forms::new(&server);
    let client = &forms.client;
    let post = |path: String, form: Vec<(&'static str, String)>| forms.post(path, form);
    let location = see_other;
    // A browser signed in before the reset.
    let mut browser = Browser::new(&server, "TestBrowser/1.0 (before the reset)");
    browser
        .login("alice@example.com", "password123", &server.url)
        .await;
    assert_eq!(
        browser.json(Method::GET, "/json/users/me", &[]).await.0,
        StatusCode::OK
    );

    // The page, then the same answer for an address with an account and one without.
    let page = client
        .get(format!("{}/accounts/password/reset/", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("name=\"email\""));
    for email in ["nobody@example.com", "Alice@Example.com"] {
        let resp = post(
            "/accounts/password/reset/".into(),
            vec![("email", email.into())],
        )
        .await
        .unwrap();
        assert_eq!(location(&resp), "/accounts/password/reset/done/");
    }
    let links = reset_links(&server);
    assert_eq!(links.len(), 1, "one email, to Alice only");
    let link = links[0].clone();
    let path = link.strip_prefix(&server.url).unwrap().to_owned();
    assert!(path.starts_with("/accounts/password/reset/2/"), "{path}");

    // The link opens the form (no Referer leaves it); the two passwords must agree and be
    // long enough.
    let form = client.get(&link).send().await.unwrap();
    assert_eq!(form.status(), StatusCode::OK);
    assert_eq!(form.headers()["referrer-policy"], "no-referrer");
    let set = |a: &str, b: &str| {
        post(
            path.clone(),
            vec![("new_password1", a.into()), ("new_password2", b.into())],
        )
    };
    let resp = set("new-secret-1", "new-secret-2").await.unwrap();
    assert_eq!(location(&resp), format!("{path}?error=mismatch"));
    let resp = set("tiny", "tiny").await.unwrap();
    assert_eq!(location(&resp), format!("{path}?error=short"));
    let resp = set("new-secret-1", "new-secret-1").await.unwrap();
    assert_eq!(location(&resp), "/login/?reset=done");

    // The new password works, the old one does not, the old session has ended.
    let fetch = |password: &'static str| {
        let api = server.api(None);
        async move {
            api.post(
                "/fetch_api_key",
                &[("username", "alice@example.com"), ("password", password)],
            )
            .await
        }
    };
    assert_eq!(fetch("new-secret-1").await.0, StatusCode::OK);
    assert_eq!(fetch("password123").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        browser.json(Method::GET, "/json/users/me", &[]).await.0,
        StatusCode::UNAUTHORIZED
    );

    // Used once: the link now leads back to asking for a new one, and sets nothing.
    let again = client.get(&link).send().await.unwrap();
    assert_eq!(location(&again), "/accounts/password/reset/?error=expired");
    let resp = set("third-secret", "third-secret").await.unwrap();
    assert_eq!(location(&resp), "/accounts/password/reset/?error=expired");
    assert_eq!(fetch("new-secret-1").await.0, StatusCode::OK);
    // A forged token opens nothing either.
    let forged = client
        .get(format!(
            "{}/accounts/password/reset/2/{}-{}/",
            server.url,
            chronicle::time::now_ms() / 1000,
            "A".repeat(32)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(location(&forged), "/accounts/password/reset/?error=expired");

    // Two emails an hour per address: the third request answers the same and sends nothing.
    for _ in 0..2 {
        let resp = post(
            "/accounts/password/reset/".into(),
            vec![("email", "alice@example.com".into())],
        )
        .await
        .unwrap();
        assert_eq!(location(&resp), "/accounts/password/reset/done/");
    }
    assert_eq!(reset_links(&server).len(), 2);

    // No token is in the log: the outbox aside, the data directory never saw one.
    let token = path.trim_end_matches('/').rsplit('/').next().unwrap();
    let mac = token.split_once('-').unwrap().1.to_owned();
    for entry in walk(&server.dir) {
        if entry.components().any(|c| c.as_os_str() == "outbox") {
            continue;
        }
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !bytes.windows(mac.len()).any(|w| w == mac.as_bytes()),
            "the reset token is in {}",
            entry.display()
        );
    }
}

pub(crate) fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Sign-in by a JSON Web Token the organization's own service signs with the shared key in
/// `[jwt]`, as Zulip's JWT backend: the API (`POST /jwt/fetch_api_key`) and the web login.
#[tokio::test]
async fn a_json_web_token_signed_with_the_organizations_key_signs_its_person_in() {
    use chronicle::identity::jwt::{sign, Algorithm};
    let plain = Server::start();
    let (status, body) = plain
        .api(None)
        .post("/jwt/fetch_api_key", &[("token", "x.y.z")])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["msg"],
        "JWT authentication is not enabled for this organization"
    );

    let key = "a shared key of at least thirty-two characters";
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("chronicle.toml");
    std::fs::write(
        &config,
        format!("[jwt]\nkey = \"{key}\"\nalgorithms = [\"HS256\", \"HS384\"]\n"),
    )
    .unwrap();
    let server = Server::start_with(&["--config", config.to_str().unwrap()]);
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let (bob_id, _) = server.create_member("bob@example.com", "Bob").await;
    let api = server.api(None);
    let token = |claims: Value, algorithm| sign(&claims, key.as_bytes(), algorithm);
    let fetch = |token: String, profile: &'static str| {
        let api = server.api(None);
        async move {
            api.post(
                "/jwt/fetch_api_key",
                &[("token", &token), ("include_profile", profile)],
            )
            .await
        }
    };

    let (status, body) = fetch(
        token(json!({"email": "alice@example.com"}), Algorithm::HS256),
        "false",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"result": "success", "msg": "", "api_key": alice.key, "email": "alice@example.com"})
    );
    let (_, body) = fetch(
        token(
            json!({"email": "alice@example.com", "exp": chronicle::time::now_ms() / 1000 + 300}),
            Algorithm::HS384,
        ),
        "true",
    )
    .await;
    assert_eq!(body["user"]["user_id"], alice_id);
    assert_eq!(body["user"]["full_name"], "Alice");

    // Zulip's refusals.
    let refused = |body: &Value, msg: &str| assert_eq!(body["msg"], msg, "{body}");
    let (status, body) = api.post("/jwt/fetch_api_key", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    refused(&body, "No JSON web token passed in request");
    let forged = sign(
        &json!({"email": "alice@example.com"}),
        b"a key that is not the organization's key",
        Algorithm::HS256,
    );
    let expired = token(
        json!({"email": "alice@example.com", "exp": 1_000_000}),
        Algorithm::HS256,
    );
    let other_algorithm = token(json!({"email": "alice@example.com"}), Algorithm::HS512);
    for bad in [forged, expired, other_algorithm, "not a token".into()] {
        let (status, body) = fetch(bad, "false").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        refused(&body, "Bad JSON web token");
    }
    let (_, body) = fetch(token(json!({"sub": "alice"}), Algorithm::HS256), "false").await;
    refused(&body, "No email specified in JSON web token claims");
    let (status, body) = fetch(
        token(json!({"email": "nobody@example.com"}), Algorithm::HS256),
        "false",
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["code"], "AUTHENTICATION_FAILED");
    let owner = server.api(Some(&server.owner()));
    assert_eq!(
        owner.delete(&format!("/users/{bob_id}"), &[]).await.0,
        StatusCode::OK
    );
    let (_, body) = fetch(
        token(json!({"email": "bob@example.com"}), Algorithm::HS256),
        "false",
    )
    .await;
    assert_eq!(body["code"], "USER_DEACTIVATED");

    // The web login: a session for a good token, the login page for a bad one.
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = |token: String| {
        client
            .post(format!("{}/accounts/login/jwt/", server.url))
            .header("Origin", &server.url)
            .form(&[("token", token)])
            .send()
    };
    let resp = login(token(
        json!({"email": "alice@example.com"}),
        Algorithm::HS256,
    ))
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(resp.headers()["location"], "/");
    assert!(resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .any(|c| c.to_str().unwrap().starts_with("sessionid=")));
    let resp = login("x.y.z".into()).await.unwrap();
    assert_eq!(resp.headers()["location"], "/login/?error=invalid");
    assert!(resp.headers().get("set-cookie").is_none());

    // Every attempt is in the sign-in audit, for administrators: never a token.
    let (status, _) = server.api(Some(&alice)).get("/admin/sign-ins", &[]).await;
    assert_ne!(status, StatusCode::OK);
    let (status, body) = owner.get("/admin/sign-ins", &[("limit", "1000")]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let attempts = body["sign_ins"].as_array().unwrap();
    let jwt: Vec<&Value> = attempts.iter().filter(|a| a["method"] == "jwt").collect();
    let seen = |outcome: &str, login: &str| {
        jwt.iter()
            .any(|a| a["outcome"] == outcome && a["login"] == login)
    };
    assert!(seen("ok", "alice@example.com"), "{attempts:?}");
    assert!(seen("BAD_REQUEST", ""), "{attempts:?}");
    assert!(seen("AUTHENTICATION_FAILED", "nobody@example.com"));
    assert!(seen("USER_DEACTIVATED", "bob@example.com"));
    assert!(jwt
        .iter()
        .any(|a| a["outcome"] == "ok" && a["user_id"] == alice_id && a["ip"] == "127.0.0.1"));
    assert!(attempts
        .iter()
        .any(|a| a["method"] == "password" && a["outcome"] == "ok"));
    let audit = std::fs::read_to_string(server.dir.join("sign-in-audit.jsonl")).unwrap();
    let signature = |t: &str| t.rsplit('.').next().unwrap().to_owned();
    let good = token(json!({"email": "alice@example.com"}), Algorithm::HS256);
    assert!(!audit.contains(&signature(&good)));
    assert!(!audit.contains(key));
}

/// The outbox's sign-up emails, oldest first: each one's subject and confirmation link.
fn signup_mails(server: &Server) -> Vec<(String, Option<String>)> {
    outbox_mails(server, "sign-up")
        .iter()
        .map(|mail| {
            (
                line_with(mail, "Subject:").unwrap_or_default(),
                line_with(mail, "/accounts/do_confirm/"),
            )
        })
        .collect()
}

#[tokio::test]
async fn open_sign_up_confirms_the_address_and_makes_a_member_once() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let forms = Forms::new(&server);
    let client = &forms.client;
    let post = |path: String, form: Vec<(&'static str, String)>| forms.post(path, form);
    let location = see_other;

    // While invitations are required (Zulip's default), the page says so and nothing is sent.
    let (_, state) = owner.post("/register", &[]).await;
    assert_eq!(state["realm_invite_required"], true);
    let page = client
        .get(format!("{}/register/", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(location(&page), "/register/?error=invite_required");
    let resp = post(
        "/accounts/home/".into(),
        vec![("email", "nia@example.com".into())],
    )
    .await
    .unwrap();
    assert_eq!(location(&resp), "/register/?error=invite_required");
    assert!(signup_mails(&server).is_empty());

    // An administrator opens the organization: the event says so, /register says so.
    let (status, body) = owner
        .call(Method::PATCH, "/realm", &[("invite_required", "false")])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, state) = owner.post("/register", &[]).await;
    assert_eq!(state["realm_invite_required"], false);
    let page = client
        .get(format!("{}/register/", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page
        .text()
        .await
        .unwrap()
        .contains("action=\"/accounts/home/\""));

    // A bad address is refused; a good one and a taken one get the same answer, and mail.
    let resp = post(
        "/accounts/home/".into(),
        vec![("email", "not-an-address".into())],
    )
    .await
    .unwrap();
    assert_eq!(location(&resp), "/register/?error=invalid");
    let owner_email = server.owner().email;
    for email in ["nia@example.com".to_owned(), owner_email] {
        let resp = post("/accounts/home/".into(), vec![("email", email)])
            .await
            .unwrap();
        assert_eq!(location(&resp), "/accounts/send_confirm/");
    }
    let mails = signup_mails(&server);
    assert_eq!(mails.len(), 2, "{mails:?}");
    let link = mails
        .iter()
        .find_map(|(_, link)| link.clone())
        .expect("a confirmation link");
    assert!(mails
        .iter()
        .any(|(subject, link)| link.is_none() && subject.contains("already have an account")));
    let path = link.strip_prefix(&server.url).unwrap().to_owned();

    // The link opens the form; a forged one does not.
    let form = client.get(&link).send().await.unwrap();
    assert_eq!(form.status(), StatusCode::OK);
    assert!(form.text().await.unwrap().contains("name=\"full_name\""));
    let forged = client.get(format!("{}x", link)).send().await.unwrap();
    assert_eq!(location(&forged), "/register/?error=expired");

    // A short password is refused; then the account is made, a member, and signed in.
    let resp = post(
        path.clone(),
        vec![("full_name", "Nia".into()), ("password", "tiny".into())],
    )
    .await
    .unwrap();
    assert_eq!(location(&resp), format!("{path}?error=short"));
    let resp = post(
        path.clone(),
        vec![
            ("full_name", "Nia Novak".into()),
            ("password", "long-enough-1".into()),
        ],
    )
    .await
    .unwrap();
    assert_eq!(location(&resp), "/");
    let cookies: Vec<String> = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect();
    let me = client
        .get(format!("{}/json/users/me", server.url))
        .header("Cookie", cookies.join("; "))
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), StatusCode::OK);
    let me: Value = me.json().await.unwrap();
    assert_eq!(me["email"], "nia@example.com");
    assert_eq!(me["full_name"], "Nia Novak");
    assert_eq!(me["role"], 400);
    let (status, _) = server
        .api(None)
        .post(
            "/fetch_api_key",
            &[
                ("username", "nia@example.com"),
                ("password", "long-enough-1"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // The link is spent: it cannot make a second account.
    let again = post(
        path.clone(),
        vec![
            ("full_name", "Nia Again".into()),
            ("password", "long-enough-2".into()),
        ],
    )
    .await
    .unwrap();
    assert_eq!(location(&again), "/register/?error=expired");

    // Closed again: a link mailed before cannot make an account any more.
    let resp = post(
        "/accounts/home/".into(),
        vec![("email", "oz@example.com".into())],
    )
    .await
    .unwrap();
    assert_eq!(location(&resp), "/accounts/send_confirm/");
    let oz = signup_mails(&server)
        .into_iter()
        .filter_map(|(_, link)| link)
        .find(|l| l != &link)
        .unwrap();
    owner
        .call(Method::PATCH, "/realm", &[("invite_required", "true")])
        .await;
    let closed = post(
        oz.strip_prefix(&server.url).unwrap().to_owned(),
        vec![
            ("full_name", "Oz".into()),
            ("password", "long-enough-3".into()),
        ],
    )
    .await
    .unwrap();
    assert_eq!(location(&closed), "/register/?error=invite_required");
    let (_, users) = owner.get("/users", &[]).await;
    assert!(!users.to_string().contains("oz@example.com"));
}

/// A stand-in for a BigBlueButton server (none can run here), checking each request's
/// checksum as BigBlueButton's API defines it (SHA-256 of the call's name, its query without
/// the checksum, and the shared secret) and answering `create` as BigBlueButton does. Keeps
/// the requests it was sent.
async fn big_blue_button(secret: &'static str) -> (String, Arc<Mutex<Vec<Received>>>) {
    use sha2::{Digest, Sha256};
    let (base, asked) = call_service(move |r| {
        let path = r.line.split_whitespace().nth(1).unwrap_or_default();
        let (call, query) = path
            .trim_start_matches("/bigbluebutton/api/")
            .split_once('?')
            .unwrap_or_default();
        let (query, checksum) = query.rsplit_once("&checksum=").unwrap_or_default();
        let expected: String = Sha256::digest(format!("{call}{query}{secret}").as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let body = if checksum == expected {
            "<response><returncode>SUCCESS</returncode><meetingID>m</meetingID>\
             <createTime>1531155809613</createTime></response>"
        } else {
            "<response><returncode>FAILED</returncode><messageKey>checksumError</messageKey>\
             <message>Checksums do not match</message></response>"
        };
        (200, body.to_owned())
    })
    .await;
    (format!("{base}/bigbluebutton/"), asked)
}

/// Video calls: Jitsi Meet by default (the organization may name its own server or turn calls
/// off), and BigBlueButton when the operator configures it: a sealed join link, then the
/// meeting created on the BigBlueButton server with the right checksum and the browser sent to
/// it under the person's name.
#[tokio::test]
async fn video_calls_on_jitsi_and_big_blue_button() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (_, state) = crate::realtime::register(&owner, &[]).await;
    assert_eq!(
        (
            &state["realm_video_chat_provider"],
            &state["server_jitsi_server_url"],
            &state["realm_jitsi_server_url"],
            &state["realm_available_video_chat_providers"],
        ),
        (
            &json!(1),
            &json!("https://meet.jit.si"),
            &Value::Null,
            &json!({"disabled": {"name": "None", "id": 0},
                    "jitsi_meet": {"name": "Jitsi Meet", "id": 1}})
        )
    );
    let patch = |params: &'static [(&'static str, &'static str)]| {
        let owner = &owner;
        async move {
            let (status, body) = owner.call(Method::PATCH, "/realm", params).await;
            (status, body["msg"].clone())
        }
    };
    assert_eq!(
        patch(&[("video_chat_provider", "4")]).await,
        (
            StatusCode::BAD_REQUEST,
            json!("Invalid video_chat_provider 4")
        )
    );
    assert_eq!(
        patch(&[("jitsi_server_url", "ftp://jitsi.example.com")]).await,
        (
            StatusCode::BAD_REQUEST,
            json!("jitsi_server_url is not an allowed_type")
        )
    );
    assert_eq!(
        patch(&[("jitsi_server_url", "https://jitsi.example.com")])
            .await
            .0,
        StatusCode::OK
    );
    let (_, state) = crate::realtime::register(&owner, &[]).await;
    assert_eq!(
        state["realm_jitsi_server_url"],
        json!("https://jitsi.example.com")
    );
    assert_eq!(
        patch(&[("jitsi_server_url", "default")]).await.0,
        StatusCode::OK
    );
    let (_, body) = owner
        .get(
            "/calls/bigbluebutton/create",
            &[("meeting_name", "standup")],
        )
        .await;
    assert_eq!(body["msg"], "BigBlueButton is not configured.");
    drop(server);

    let (bbb_url, asked) = big_blue_button("s3cret").await;
    let dir = std::env::temp_dir().join(format!("chronicle-bbb-{}", std::process::id()));
    let server = Server::start_in_with_env(
        &dir.join("data"),
        &["--outgoing-allow", "127.0.0.1/32"],
        &[
            ("CHRONICLE_VIDEO_CALLS_BIG_BLUE_BUTTON_URL", &bbb_url),
            ("CHRONICLE_VIDEO_CALLS_BIG_BLUE_BUTTON_SECRET", "s3cret"),
            ("CHRONICLE_VIDEO_CALLS_JITSI_SERVER_URL", ""),
        ],
    )
    .unwrap();
    let (_, alice) = server
        .create_member("alice@example.com", "Alice Adams")
        .await;
    let owner = server.api(Some(&server.owner()));
    let alice = server.api(Some(&alice));
    let (_, state) = crate::realtime::register(&owner, &[]).await;
    assert_eq!(
        (
            &state["server_jitsi_server_url"],
            &state["realm_available_video_chat_providers"]
        ),
        (
            &Value::Null,
            &json!({"disabled": {"name": "None", "id": 0},
                    "big_blue_button": {"name": "BigBlueButton", "id": 4}})
        )
    );
    let (status, _) = owner
        .call(Method::PATCH, "/realm", &[("video_chat_provider", "4")])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = alice.get("/calls/bigbluebutton/create", &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Missing 'meeting_name' argument")
        )
    );
    let (status, body) = alice
        .get(
            "/calls/bigbluebutton/create",
            &[("meeting_name", "Design review")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let link = body["url"].as_str().unwrap().to_owned();
    assert!(
        link.starts_with("/calls/bigbluebutton/join?bigbluebutton="),
        "{link}"
    );

    // Signed out, the link leads to the login page and nothing is asked of the server.
    let mut browser = Browser::new(&server, "TestBrowser/1.0");
    let (status, headers, _) = browser.call(Method::GET, &link, &[], None).await;
    assert_eq!(
        (status, headers["location"].to_str().unwrap()),
        (StatusCode::FOUND, "/login/")
    );
    assert!(asked.lock().unwrap().is_empty());
    browser
        .login("alice@example.com", "password123", &server.url)
        .await;
    // A link changed by its holder is refused.
    let forged = link.replacen("bigbluebutton=", "bigbluebutton=x", 1);
    let (status, _, body) = browser.call(Method::GET, &forged, &[], None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["msg"],
        "Invalid signature."
    );
    let (status, headers, _) = browser.call(Method::GET, &link, &[], None).await;
    assert_eq!(status, StatusCode::FOUND);
    let to = headers["location"].to_str().unwrap().to_owned();
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let create = asked[0].line.split_whitespace().nth(1).unwrap();
    assert!(
        create.starts_with("/bigbluebutton/api/create?meetingID=zulip-")
            && create.contains("&name=Design%20review&lockSettingsDisableCam=false&checksum="),
        "{create}"
    );
    // The join address is signed with the same secret and names Alice.
    let join = to.strip_prefix(&bbb_url).unwrap();
    let (call, query) = join.trim_start_matches("api/").split_once('?').unwrap();
    let (query, checksum) = query.rsplit_once("&checksum=").unwrap();
    assert_eq!(call, "join");
    // Alice made the call: she moderates it.
    assert!(
        query.contains("&fullName=Alice%20Adams&role=MODERATOR&createTime=1531155809613"),
        "{query}"
    );
    let expected: String = {
        use sha2::{Digest, Sha256};
        Sha256::digest(format!("join{query}s3cret").as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    assert_eq!(checksum, expected);
    // Anyone else who follows the link joins as a viewer.
    server.create_member("bob@example.com", "Bob Brown").await;
    let mut bob = Browser::new(&server, "TestBrowser/1.0");
    bob.login("bob@example.com", "password123", &server.url)
        .await;
    let (status, headers, _) = bob.call(Method::GET, &link, &[], None).await;
    assert_eq!(status, StatusCode::FOUND);
    let to = headers["location"].to_str().unwrap();
    assert!(to.contains("&fullName=Bob%20Brown&role=VIEWER&"), "{to}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One request a stand-in call service received: its request line, headers (lower-cased
/// names) and body.
#[derive(Clone, Debug)]
struct Received {
    line: String,
    headers: std::collections::HashMap<String, String>,
    body: String,
}

/// A stand-in for a call service that cannot run here (BigBlueButton, Nextcloud Talk,
/// Constructor Groups): keeps each request and answers it with `answer(request)` (a status
/// and a body, XML when it starts with `<`, else JSON).
async fn call_service(
    answer: impl Fn(&Received) -> (u16, String) + Send + 'static,
) -> (String, Arc<Mutex<Vec<Received>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let kept = asked.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut data = Vec::new();
            let mut buf = [0u8; 4096];
            let end = loop {
                if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    break at;
                }
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break data.len(),
                    Ok(n) => data.extend_from_slice(&buf[..n]),
                }
            };
            let head = String::from_utf8_lossy(&data[..end]).to_string();
            let mut lines = head.split("\r\n");
            let line = lines.next().unwrap_or_default().to_owned();
            let headers: std::collections::HashMap<String, String> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .collect();
            let length: usize = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = data[(end + 4).min(data.len())..].to_vec();
            while body.len() < length {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => body.extend_from_slice(&buf[..n]),
                }
            }
            let request = Received {
                line,
                headers,
                body: String::from_utf8_lossy(&body).to_string(),
            };
            let (status, text) = answer(&request);
            kept.lock().unwrap().push(request);
            let kind = if text.starts_with('<') {
                "text/xml"
            } else {
                "application/json"
            };
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    (url, asked)
}

/// Nextcloud Talk (feature level 465) and Constructor Groups (460): offered when configured,
/// each call made on the service as Zulip makes it (checked here against the requests Zulip
/// sends), and Zulip's errors for a service that refuses or answers nonsense.
#[tokio::test]
async fn video_calls_on_nextcloud_talk_and_constructor_groups() {
    // Not configured: Zulip's refusals.
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (_, body) = owner
        .post("/calls/nextcloud_talk/create", &[("room_name", "standup")])
        .await;
    assert_eq!(
        body["msg"],
        "Nextcloud Talk credentials have not been configured"
    );
    let (_, body) = owner.post("/calls/constructorgroups/create", &[]).await;
    assert_eq!(
        body["msg"],
        "Constructor Groups credentials have not been configured"
    );
    drop(server);

    let (service, asked) = call_service(|r| {
        if r.line.starts_with("POST /ocs/v2.php/apps/spreed/api/v4/room ") {
            let room: Value = serde_json::from_str(&r.body).unwrap_or_default();
            return match room["roomName"].as_str().unwrap_or_default() {
                "refused" => (401, "Unauthorized".into()),
                "nonsense" => (200, "<html>not json</html>".into()),
                "odd token" => (201, r#"{"ocs": {"data": {"token": "../../x"}}}"#.into()),
                _ => (
                    201,
                    r#"{"ocs": {"meta": {"status": "ok", "statuscode": 201}, "data": {"token": "abc123token", "type": 3}}}"#.into(),
                ),
            };
        }
        if r.line.starts_with("POST /api/groups/xapi/room/default ") {
            return (200, r#"{"url": "https://example.constructor.app/groups/room/room-123"}"#.into());
        }
        (404, "{}".into())
    })
    .await;
    let dir = std::env::temp_dir().join(format!("chronicle-calls-{}", std::process::id()));
    // Some of a service's settings but not all stop start-up, naming them.
    let Err(refused) = Server::start_in_with_env(
        &dir.join("half"),
        &[],
        &[(
            "CHRONICLE_VIDEO_CALLS_NEXTCLOUD_SERVER",
            "https://cloud.example.com",
        )],
    ) else {
        panic!("a Nextcloud server without its account was accepted");
    };
    assert!(
        refused.contains(
            "video_calls.nextcloud_server, video_calls.nextcloud_talk_username and \
             video_calls.nextcloud_talk_password go together"
        ),
        "{refused}"
    );
    let server = Server::start_in_with_env(
        &dir.join("data"),
        &["--outgoing-allow", "127.0.0.1/32"],
        &[
            // A path is dropped, as Zulip joins absolute paths to the server's address.
            (
                "CHRONICLE_VIDEO_CALLS_NEXTCLOUD_SERVER",
                &format!("{service}/nextcloud"),
            ),
            ("CHRONICLE_VIDEO_CALLS_NEXTCLOUD_TALK_USERNAME", "zulip-bot"),
            (
                "CHRONICLE_VIDEO_CALLS_NEXTCLOUD_TALK_PASSWORD",
                "app-pass-9f3k",
            ),
            (
                "CHRONICLE_VIDEO_CALLS_CONSTRUCTOR_GROUPS_URL",
                &format!("{service}/api/groups/xapi/"),
            ),
            (
                "CHRONICLE_VIDEO_CALLS_CONSTRUCTOR_GROUPS_ACCESS_KEY",
                "access-7q",
            ),
            (
                "CHRONICLE_VIDEO_CALLS_CONSTRUCTOR_GROUPS_SECRET_KEY",
                "secret-2w8e",
            ),
        ],
    )
    .unwrap();
    let (alice_id, alice) = server
        .create_member("alice@example.com", "Alice Adams")
        .await;
    let owner = server.api(Some(&server.owner()));
    let alice = server.api(Some(&alice));
    let (_, state) = crate::realtime::register(&owner, &[]).await;
    assert_eq!(
        state["realm_available_video_chat_providers"],
        json!({"disabled": {"name": "None", "id": 0},
               "jitsi_meet": {"name": "Jitsi Meet", "id": 1},
               "constructor_groups": {"name": "Constructor Groups", "id": 6},
               "nextcloud_talk": {"name": "Nextcloud Talk", "id": 7}})
    );
    for provider in ["7", "6"] {
        let (status, body) = owner
            .call(
                Method::PATCH,
                "/realm",
                &[("video_chat_provider", provider)],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    // Nextcloud Talk: a public conversation, made with the server's account.
    let (status, body) = alice.post("/calls/nextcloud_talk/create", &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Missing 'room_name' argument")
        )
    );
    let (status, body) = alice
        .post(
            "/calls/nextcloud_talk/create",
            &[("room_name", "general conversation")],
        )
        .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "",
                   "url": format!("{service}/index.php/call/abc123token")})
        )
    );
    let request = asked.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        request.line,
        "POST /ocs/v2.php/apps/spreed/api/v4/room HTTP/1.1"
    );
    assert_eq!(request.headers["ocs-apirequest"], "true");
    assert_eq!(request.headers["accept"], "application/json");
    // Basic zulip-bot:app-pass-9f3k
    assert_eq!(
        request.headers["authorization"],
        "Basic enVsaXAtYm90OmFwcC1wYXNzLTlmM2s="
    );
    assert_eq!(
        serde_json::from_str::<Value>(&request.body).unwrap(),
        json!({"roomType": 3, "roomName": "general conversation"})
    );
    // A name past Nextcloud's 255 characters is cut, as Zulip cuts it.
    let long = "é".repeat(300);
    let (status, _) = alice
        .post("/calls/nextcloud_talk/create", &[("room_name", &long)])
        .await;
    assert_eq!(status, StatusCode::OK);
    let sent = asked.lock().unwrap().last().cloned().unwrap();
    let sent: Value = serde_json::from_str(&sent.body).unwrap();
    assert_eq!(sent["roomName"], format!("{}...", "é".repeat(252)));
    for (name, msg) in [
        (
            "refused",
            "Error connecting to the Nextcloud Talk server: HTTP 401: Unauthorized",
        ),
        ("nonsense", "Failed to create Nextcloud Talk call"),
        ("odd token", "Failed to create Nextcloud Talk call"),
    ] {
        let (status, body) = alice
            .post("/calls/nextcloud_talk/create", &[("room_name", name)])
            .await;
        assert_eq!(
            (status, body),
            (
                StatusCode::BAD_REQUEST,
                json!({"result": "error", "msg": msg, "code": "BAD_REQUEST"})
            ),
            "{name}"
        );
    }

    // Constructor Groups: a room for the caller, signed with the server's keys.
    let (status, body) = alice.post("/calls/constructorgroups/create", &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "",
                   "url": "https://example.constructor.app/groups/room/room-123"})
        )
    );
    let request = asked.lock().unwrap().last().cloned().unwrap();
    assert_eq!(request.line, "POST /api/groups/xapi/room/default HTTP/1.1");
    let signature: String = {
        use sha2::{Digest, Sha256};
        Sha256::digest(b"access-7q|secret-2w8e")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    assert_eq!(
        request.headers["authorization"],
        format!("Bearer access-7q|{signature}")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&request.body).unwrap(),
        json!({"creator_email": "alice@example.com",
               "name": "Alice Adams's Zulip room",
               "fallback_name": format!("Alice Adams's Zulip room (1-{alice_id})")})
    );

    // The service's secrets are in no log line.
    let logged = server.stderr();
    for secret in ["app-pass-9f3k", "secret-2w8e", "enVsaXAtYm90"] {
        assert!(!logged.contains(secret), "{secret} was logged");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The outbox's emails whose file name has `kind`, each as (subject, the line holding `part`).
fn mails_with(server: &Server, kind: &str, part: &str) -> Vec<(String, Option<String>)> {
    outbox_mails(server, kind)
        .iter()
        .map(|mail| {
            (
                line_with(mail, "Subject:").unwrap_or_default(),
                line_with(mail, part),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_address_changes_once_confirmed_from_the_new_one() {
    let server = Server::start();
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    server.create_member("bob@example.com", "Bob").await;
    let owner = server.api(Some(&server.owner()));
    let me = server.api(Some(&alice));
    let (queue, state) = crate::realtime::register(&me, &[]).await;
    assert_eq!(state["realm_email_changes_disabled"], false);
    let patch = |email: &'static str| {
        let me = &me;
        async move {
            me.call(Method::PATCH, "/settings", &[("email", email)])
                .await
        }
    };
    let refused = |msg: &str| {
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "msg": msg, "code": "BAD_REQUEST"}),
        )
    };

    // Refusals in Zulip's words: a taken address, a malformed one, and any while the
    // organization disables changes.
    assert_eq!(
        patch("BOB@example.com").await,
        refused("Already has an account.")
    );
    assert_eq!(patch("not-an-address").await, refused("Invalid address."));
    owner
        .call(
            Method::PATCH,
            "/realm",
            &[("email_changes_disabled", "true")],
        )
        .await;
    assert_eq!(
        patch("alice@new.example.com").await,
        refused("Email address changes are disabled in this organization.")
    );
    owner
        .call(
            Method::PATCH,
            "/realm",
            &[("email_changes_disabled", "false")],
        )
        .await;
    assert!(outbox_mails(&server, "email-change").is_empty());

    // Asked for: a link mailed to the new address; nothing changes until it is opened.
    let (status, body) = patch("alice@new.example.com").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["account_email"],
        "Check your email for a confirmation link."
    );
    let mails = mails_with(&server, "email-change-", "/accounts/confirm_new_email/");
    assert_eq!(mails.len(), 1, "{mails:?}");
    assert!(
        mails[0].0.contains("Verify your new email address"),
        "{mails:?}"
    );
    let link = mails[0].1.clone().expect("a confirmation link");
    let raw = std::fs::read_dir(server.dir.join("outbox"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|m| m.contains("/accounts/confirm_new_email/"))
        .unwrap();
    assert!(raw.contains("To: alice@new.example.com"), "{raw}");
    assert_eq!(
        me.get("/users/me", &[]).await.1["email"],
        "alice@example.com"
    );

    // A forged link does nothing; the real one changes the address, once.
    let client = Client::new();
    let page = |url: String| {
        let client = client.clone();
        async move {
            let resp = client.get(url).send().await.unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
            resp.text().await.unwrap()
        }
    };
    let forged = link.replacen("/confirm_new_email/", "/confirm_new_email/x", 1);
    assert!(page(forged)
        .await
        .contains("This link cannot change your address"));
    let done = page(link.clone()).await;
    assert!(done.contains("Your address is changed"), "{done}");
    assert!(page(link.clone())
        .await
        .contains("This link cannot change your address"));

    // The key works with the new address (and no longer with the old, as an API key goes with
    // its address); the person hears of it; the old address is told.
    let renamed = Creds {
        email: "alice@new.example.com".into(),
        key: alice.key.clone(),
    };
    let me = server.api(Some(&renamed));
    assert_eq!(
        server.api(Some(&alice)).get("/users/me", &[]).await.0,
        StatusCode::UNAUTHORIZED
    );
    let events = crate::realtime::drain(&me, &queue).await;
    assert!(
        events.iter().any(|e| e["type"] == "realm_user"
            && e["person"]
                == json!({"user_id": alice_id, "delivery_email": "alice@new.example.com"})),
        "{events:?}"
    );
    let (status, body) = server.api(Some(&renamed)).get("/users/me", &[]).await;
    assert_eq!(
        (status, &body["email"]),
        (StatusCode::OK, &json!("alice@new.example.com"))
    );
    let told = mails_with(&server, "email-changed-", "was changed from");
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0]
        .1
        .as_deref()
        .is_some_and(|l| l.contains("alice@example.com") && l.contains("alice@new.example.com")));

    // The change is in the log (the link's key is not), and survives a restart.
    let key = link
        .rsplit("/confirm_new_email/")
        .next()
        .unwrap()
        .trim_end_matches('/');
    let stopped = server.stop();
    let log = crate::support::run_ok([
        "log".as_ref(),
        "--data-dir".as_ref(),
        stopped.dir.as_os_str(),
    ]);
    assert!(log.contains("UserEmailChanged") && !log.contains(key));
    let server = stopped.restart();
    let (status, body) = server.api(Some(&renamed)).get("/users/me", &[]).await;
    assert_eq!(
        (status, &body["email"]),
        (StatusCode::OK, &json!("alice@new.example.com"))
    );
}

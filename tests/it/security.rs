//! Regression tests for issue 32, each sent the way an attacker would send it: outgoing webhook
//! bots aimed at this machine's own listeners, a GIF bomb as a custom emoji, a burst of
//! parallel logins, a made-up `Authorization` header, a script uploaded as a file, a
//! `javascript:` linkifier, an avatar fetched without login, control characters in topics and
//! messages, and administrators reading every conversation through the inspector.

use crate::support::{Api, Server};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A tiny HTTP service on a loopback address: counts the connections it gets and answers each
/// request with `answer(path)` (status, extra headers, body).
struct Listener {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

type Answer = fn(&str) -> (u16, Vec<(String, String)>, Vec<u8>);

async fn listen(ip: &str, answer: Answer) -> Listener {
    let socket = tokio::net::TcpListener::bind((ip.parse::<IpAddr>().unwrap(), 0))
        .await
        .unwrap();
    let addr = socket.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = socket.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as much body as it announces.
                loop {
                    let Ok(n) = stream.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let text = String::from_utf8_lossy(&request).to_string();
                let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, headers, body) = answer(&path);
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&body).await;
            });
        }
    });
    Listener { addr, hits }
}

fn pong(_: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    (
        200,
        vec![("content-type".into(), "application/json".into())],
        br#"{"content": "secret from inside"}"#.to_vec(),
    )
}

/// An outgoing webhook bot of `owner`'s aimed at `url`: its id.
async fn outgoing_bot(owner: &Api, name: &str, url: &str) -> u64 {
    let short = name.to_lowercase().replace(' ', "-");
    let (status, body) = owner
        .post(
            "/bots",
            &[
                ("full_name", name),
                ("short_name", &short),
                ("bot_type", "3"),
                ("payload_url", &json!(url).to_string()),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["user_id"].as_u64().unwrap()
}

/// The contents of the direct messages between `api`'s user and `with`, oldest first.
async fn dm_contents(api: &Api, with: u64) -> Vec<String> {
    let narrow = json!([{"operator": "dm", "operand": [with]}]).to_string();
    let (_, body) = api
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "50"),
                ("num_after", "0"),
                ("narrow", &narrow),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits (up to 20 s) until the conversation with `with` holds a message containing `text`.
async fn wait_for_dm(api: &Api, with: u64, text: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let contents = dm_contents(api, with).await;
        if contents.iter().any(|c| c.contains(text)) {
            return contents;
        }
        assert!(
            Instant::now() < deadline,
            "no message containing {text:?}: {contents:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn send_dm(api: &Api, to: u64, content: &str) {
    let (status, body) = api
        .post(
            "/messages",
            &[
                ("type", "direct"),
                ("to", &format!("[{to}]")),
                ("content", content),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn outgoing_webhooks_never_reach_this_machine_in_any_spelling() {
    let server = Server::start();
    let (_, alice) = server.create_member("alice@example.com", "Alice").await;
    let alice = server.api(Some(&alice));
    let inside = listen("127.0.0.1", pong).await;
    let port = inside.addr.port();
    for (i, url) in [
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://127.1:{port}/hook"),
        format!("http://2130706433:{port}/hook"),
        format!("http://localhost:{port}/hook"),
        format!("http://user@127.0.0.1:{port}/hook"),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        format!("http://0.0.0.0:{port}/hook"),
    ]
    .iter()
    .enumerate()
    {
        let bot = outgoing_bot(&alice, &format!("Probe {i}"), url).await;
        send_dm(&alice, bot, "what does the inside say?").await;
        // The bot tells its owner, in Zulip's words, and posts nothing from inside.
        let contents = wait_for_dm(&alice, bot, "private or disallowed network").await;
        assert!(
            contents[1].starts_with("[A message]("),
            "{url}: {contents:?}"
        );
        assert!(
            !contents.iter().any(|c| c.contains("secret from inside")),
            "{url}: {contents:?}"
        );
    }
    assert_eq!(
        inside.hits.load(Ordering::SeqCst),
        0,
        "a call reached the listener"
    );
}

fn redirect_to_other(_: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let target = std::env::var("CHRONICLE_TEST_REDIRECT").unwrap_or_default();
    (307, vec![("location".into(), target)], Vec::new())
}

fn huge(_: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut body = br#"{"content": ""#.to_vec();
    body.extend(std::iter::repeat_n(b'x', 200 * 1024));
    body.extend_from_slice(br#""}"#);
    (
        200,
        vec![("content-type".into(), "application/json".into())],
        body,
    )
}

#[tokio::test]
async fn an_allowed_range_is_reached_but_not_a_redirect_out_of_it_and_answers_are_capped() {
    let inside = listen("127.0.0.1", pong).await;
    let other = listen("127.0.0.2", pong).await;
    // The redirecting service learns where to send the bot from the environment (one test).
    std::env::set_var(
        "CHRONICLE_TEST_REDIRECT",
        format!("http://127.0.0.2:{}/stolen", other.addr.port()),
    );
    let redirecting = listen("127.0.0.1", redirect_to_other).await;
    let large = listen("127.0.0.1", huge).await;
    let server = Server::start_with(&["--outgoing-allow", "127.0.0.1/32"]);
    let (_, alice) = server.create_member("alice@example.com", "Alice").await;
    let alice = server.api(Some(&alice));

    let bot = outgoing_bot(
        &alice,
        "Inside",
        &format!("http://127.0.0.1:{}/", inside.addr.port()),
    )
    .await;
    send_dm(&alice, bot, "hello").await;
    wait_for_dm(&alice, bot, "secret from inside").await;
    assert_eq!(inside.hits.load(Ordering::SeqCst), 1);

    let bot = outgoing_bot(
        &alice,
        "Redirects",
        &format!("http://127.0.0.1:{}/", redirecting.addr.port()),
    )
    .await;
    send_dm(&alice, bot, "hello").await;
    wait_for_dm(&alice, bot, "private or disallowed network").await;
    assert_eq!(redirecting.hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        other.hits.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );

    let bot = outgoing_bot(
        &alice,
        "Talks Much",
        &format!("http://127.0.0.1:{}/", large.addr.port()),
    )
    .await;
    send_dm(&alice, bot, "hello").await;
    let contents = wait_for_dm(&alice, bot, "larger than 64 KiB").await;
    assert!(
        !contents.iter().any(|c| c.contains("xxxxxxxx")),
        "{contents:?}"
    );
}

/// Resident memory high-water mark of a process, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A GIF of two frames of `side` pixels (a canvas of `canvas` pixels when given).
fn gif(side: u32, canvas: Option<u16>) -> Vec<u8> {
    use image::codecs::gif::GifEncoder;
    use image::{Delay, Frame, Rgba, RgbaImage};
    let mut out = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut out);
        let frames = (0..2u8).map(|i| {
            let picture = RgbaImage::from_pixel(side, side, Rgba([i * 90, 10, 10, 255]));
            Frame::from_parts(picture, 0, 0, Delay::from_numer_denom_ms(100, 1))
        });
        encoder.encode_frames(frames).unwrap();
    }
    if let Some(canvas) = canvas {
        let [lo, hi] = canvas.to_le_bytes();
        out[6..10].copy_from_slice(&[lo, hi, lo, hi]);
    }
    out
}

#[tokio::test]
async fn a_gif_bomb_emoji_is_refused_at_upload_and_stills_are_made_once() {
    let server = Server::start();
    let (_, alice) = server.create_member("alice@example.com", "Alice").await;
    let alice = server.api(Some(&alice));
    let before = peak_kib(server.child.id());
    // 2 x 2 frames on an 8000 x 8000 canvas: a few hundred bytes that decode to 256 MB.
    let bomb = gif(2, Some(8000));
    assert!(bomb.len() < 1000);
    let (status, body) = crate::uploads::post_files(
        &alice,
        "/realm/emoji/canvas_bomb",
        &[("file", "bomb.gif", "image/gif", &bomb)],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["code"], "BAD_IMAGE", "{body}");
    assert_eq!(
        body["msg"],
        "Image size exceeds limit: custom emoji may be at most 1024 x 1024 pixels."
    );
    let (_, emoji) = alice.get("/realm/emoji", &[]).await;
    assert!(
        !emoji["emoji"]
            .as_object()
            .unwrap()
            .values()
            .any(|e| e["name"] == "canvas_bomb"),
        "{emoji}"
    );
    // Bytes that are no picture at all are refused too, not stored as they came.
    let (status, body) = crate::uploads::post_files(
        &alice,
        "/realm/emoji/not_a_picture",
        &[("file", "broken.gif", "image/gif", b"GIF89a\x01\x00\x01\x00")],
    )
    .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("BAD_IMAGE"))
    );

    // A real animated emoji: its still is made once and the same for every asker, no login.
    let party = gif(96, None);
    let (status, body) = crate::uploads::post_files(
        &alice,
        "/realm/emoji/party_gif",
        &[("file", "party.gif", "image/gif", &party)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, emoji) = alice.get("/realm/emoji", &[]).await;
    let still = emoji["emoji"]
        .as_object()
        .unwrap()
        .values()
        .find(|e| e["name"] == "party_gif")
        .unwrap()["still_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let still = if still.starts_with('/') {
        format!("{}{still}", server.url)
    } else {
        still
    };
    let fetches = (0..16).map(|_| {
        let url = still.clone();
        async move {
            let resp = reqwest::get(&url).await.unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
            resp.bytes().await.unwrap()
        }
    });
    let stills = futures_util::future::join_all(fetches).await;
    assert!(stills
        .iter()
        .all(|s| s == &stills[0] && s.starts_with(b"\x89PNG")));
    let grown_mib = (peak_kib(server.child.id()) - before) / 1024;
    assert!(
        grown_mib < 64,
        "the server's peak memory grew by {grown_mib} MiB"
    );
}

#[tokio::test]
async fn a_burst_of_parallel_guesses_is_counted_before_any_is_checked() {
    let server = Server::start();
    server.create_member("victim@example.com", "Victim").await;
    // Twelve guesses at once, each from an address of its own (so that only the username's
    // limit applies).
    let guesses = (2..14u8).map(|last| {
        let url = format!("{}/api/v1/fetch_api_key", server.url);
        async move {
            let client = reqwest::Client::builder()
                .local_address(IpAddr::from([127, 0, 0, last]))
                .build()
                .unwrap();
            let resp = client
                .post(&url)
                .form(&[
                    ("username", "victim@example.com"),
                    ("password", "wrong guess"),
                ])
                .send()
                .await
                .unwrap();
            let status = resp.status();
            let body: Value = resp.json().await.unwrap();
            (status, body["code"].as_str().unwrap_or_default().to_owned())
        }
    });
    let answers = futures_util::future::join_all(guesses).await;
    let checked = answers
        .iter()
        .filter(|(_, code)| code == "AUTHENTICATION_FAILED")
        .count();
    let refused = answers
        .iter()
        .filter(|(status, code)| {
            *status == StatusCode::TOO_MANY_REQUESTS && code == "RATE_LIMIT_HIT"
        })
        .count();
    assert_eq!((checked, refused), (5, 7), "{answers:?}");
    // And the right password is refused now too, until the window passes.
    let (status, body) = server
        .api(None)
        .post(
            "/fetch_api_key",
            &[
                ("username", "victim@example.com"),
                ("password", "password123"),
            ],
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::TOO_MANY_REQUESTS, json!("RATE_LIMIT_HIT"))
    );
}

#[tokio::test]
async fn a_made_up_authorization_header_is_counted_against_its_address() {
    let server = Server::start_with(&["--rate-limit-ip", "3"]);
    let client = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let resp = client
            .get(format!("{}/api/v1/server_settings", server.url))
            .header("Authorization", "x")
            .send()
            .await
            .unwrap();
        statuses.push(resp.status());
    }
    assert_eq!(statuses[3], StatusCode::TOO_MANY_REQUESTS, "{statuses:?}");
    // Valid credentials count against their user instead, from the same address.
    let owner = server.api(Some(&server.owner()));
    let (status, _) = owner.get("/users/me", &[]).await;
    assert_eq!(status, StatusCode::OK);
    // Every answer says nosniff.
    let (_, headers, _) = owner.call_raw(Method::GET, "/users/me", &[]).await;
    assert_eq!(headers["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn scripts_uploaded_as_files_are_downloads_and_linkifiers_only_link_the_web() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    for (name, kind) in [
        ("evil.js", "application/javascript"),
        ("evil.html", "text/html"),
        ("evil.svg", "image/svg+xml"),
    ] {
        let (status, body) = crate::uploads::post_files(
            &owner,
            "/user_uploads",
            &[("file", name, kind, b"alert(document.cookie)")],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let url = format!("{}{}", server.url, body["url"].as_str().unwrap());
        let resp = owner.fetch(&url).await;
        assert_eq!(
            resp.headers()["content-type"],
            "application/octet-stream",
            "{name}"
        );
        assert!(
            resp.headers()["content-disposition"]
                .to_str()
                .unwrap()
                .starts_with("attachment;"),
            "{name}"
        );
    }
    for template in [
        "javascript:alert({id})",
        "data:text/html,{id}",
        "JavaScript:x{id}",
        "{id}",
    ] {
        let (status, body) = owner
            .post(
                "/realm/filters",
                &[("pattern", "#(?P<id>[0-9]+)"), ("url_template", template)],
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{template}: {body}");
        assert_eq!(
            body["msg"], "URL templates must start with http://, https://, mailto: or /.",
            "{template}"
        );
    }
    let (status, _) = owner
        .post(
            "/realm/filters",
            &[
                ("pattern", "#(?P<id>[0-9]+)"),
                ("url_template", "https://tracker.example.com/{id}"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn avatars_need_a_login_and_text_is_checked_as_zulip_checks_it() {
    let server = Server::start();
    let owner_creds = server.owner();
    let owner = server.api(Some(&owner_creds));
    let (_, me) = owner.get("/users/me", &[]).await;
    let avatar = me["avatar_url"].as_str().unwrap().to_owned();
    let avatar = if avatar.starts_with('/') {
        format!("{}{avatar}", server.url)
    } else {
        avatar
    };
    let anonymous = reqwest::get(&avatar).await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(owner.fetch(&avatar).await.status(), StatusCode::OK);
    // The organization's icon is shown on the login page: no login.
    let icon = reqwest::get(format!("{}/avatar/realm", server.url))
        .await
        .unwrap();
    assert_eq!(icon.status(), StatusCode::OK);

    owner
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name": "general"}]"#)],
        )
        .await;
    let send = |topic: &'static str, content: &'static str| {
        let owner = &owner;
        async move {
            owner
                .post(
                    "/messages",
                    &[
                        ("type", "stream"),
                        ("to", "general"),
                        ("topic", topic),
                        ("content", content),
                    ],
                )
                .await
        }
    };
    let (status, body) = send("Test\n\rTopic", "hi").await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Invalid character in topic, at position 5!")
        )
    );
    let (_, body) = send("Test\u{fffe}Topic", "hi").await;
    assert_eq!(body["msg"], "Invalid character in topic, at position 5!");
    let (_, body) = send("nul", "a\u{0}b").await;
    assert_eq!(body["msg"], "Message must not contain null bytes");
    // Right-to-left text, overrides included, is kept as written (the client isolates it).
    let (status, _) = send("\u{202e}txt.exe", "fine").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = owner
        .post("/users/me/status", &[("status_text", "away\u{0}now")])
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Invalid character in status text, at position 5.")
        )
    );
}

#[tokio::test]
async fn administrators_inspect_only_when_the_owners_allow_it_and_every_look_is_recorded() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (admin_id, admin) = server.create_member("admin@example.com", "Admin").await;
    let (status, body) = owner
        .call(
            Method::PATCH,
            &format!("/users/{admin_id}"),
            &[("role", "200")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let admin: Api = server.api(Some(&admin));
    for path in ["/admin/events", "/admin/projections"] {
        let (status, body) = admin.get(path, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["code"], "UNAUTHORIZED_PRINCIPAL", "{path}");
    }
    let (status, _) = admin
        .get("/admin/diff", &[("from_seq", "1"), ("to_seq", "2")])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Only owners change who may look.
    let admins_id = owner.group_id("role:administrators").await;
    let admins = admins_id.to_string();
    let change = json!({ "new": admins_id }).to_string();
    let (status, body) = admin
        .call(
            Method::PATCH,
            "/realm",
            &[("can_inspect_log_group", &change)],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Must be an organization owner")
        )
    );
    let (_, events) = owner.get("/admin/events", &[("type", "UserCreated")]).await;
    assert!(!events["events"].as_array().unwrap().is_empty());
    let (status, _) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[("can_inspect_log_group", &change)],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, register) = admin
        .post("/register", &[("fetch_event_types", r#"["realm"]"#)])
        .await;
    assert_eq!(register["realm_can_inspect_log_group"].to_string(), admins);
    let (status, _) = admin.get("/admin/projections", &[("only", "users")]).await;
    assert_eq!(status, StatusCode::OK);
    // The access audit: who looked, at what, in order; for owners only, and not a log event.
    let (status, _) = admin.get("/admin/inspections", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, body) = owner.get("/admin/inspections", &[]).await;
    let looks: Vec<(String, String, String)> = body["inspections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["email"].as_str().unwrap().to_owned(),
                l["endpoint"].as_str().unwrap().to_owned(),
                l["query"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        looks,
        vec![
            (
                crate::support::OWNER.to_owned(),
                "events".to_owned(),
                "type=UserCreated".to_owned()
            ),
            (
                "admin@example.com".to_owned(),
                "projections".to_owned(),
                "only=users".to_owned()
            ),
        ]
    );
    let text = std::fs::read_to_string(server.dir.join("access-audit.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(
        !text.contains(&server.owner().key),
        "a key in the access audit"
    );
}

//! What the official mobile app (zulip-flutter) requires of `/register` and the calls it makes
//! once loaded (facts: `shared/reference/clients.md`): the keys its strict decoders need, the
//! emoji data file, a mobile-length queue, read receipts, and the wildcard-mention rule behind
//! `realm_wildcard_mention_policy`.

use crate::messages::{chat, send};
use crate::realtime::register;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// The parameters the mobile app sends to `/register`.
const MOBILE_REGISTER: &[(&str, &str)] = &[
    ("apply_markdown", "true"),
    ("client_gravatar", "false"),
    ("slim_presence", "true"),
    ("idle_queue_timeout", "mobile"),
    (
        "client_capabilities",
        r#"{"notification_settings_null":true,"bulk_message_deletion":true,"user_avatar_url_field_optional":true,"stream_typing_notifications":true,"user_settings_object":true,"include_deactivated_groups":true,"empty_topic_name":true,"individual_emoji_changes":true}"#,
    ),
];

#[tokio::test]
async fn register_has_what_the_mobile_app_decodes_and_the_emoji_file_loads() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (_, body) = register(alice, MOBILE_REGISTER).await;
    // The four keys the app required and Chronicle lacked, with their JSON types.
    assert_eq!(body["realm_wildcard_mention_policy"], 5, "administrators");
    assert_eq!(body["realm_enable_read_receipts"], true);
    assert_eq!(
        body["realm_default_external_accounts"],
        json!({
            "twitter": {"text": "Twitter", "url_pattern": "https://twitter.com/%(username)s",
                        "name": "Twitter username", "hint": ""},
            "github": {"text": "GitHub", "url_pattern": "https://github.com/%(username)s",
                       "name": "GitHub username", "hint": ""},
        })
    );
    let url = body["server_emoji_data_url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&c.server.url) && url.contains("/static/generated/emoji/emoji_api."),
        "{url}"
    );
    assert!(body["realm_can_mention_many_users_group"].is_number());

    // The file needs no credentials, is cacheable, and maps code points to names, the
    // canonical one first.
    let client = reqwest::Client::new();
    let resp = client.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert!(resp.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("immutable"));
    let file: Value = resp.json().await.unwrap();
    // Zulip's `code_to_names`, and the `emoji_catalog` this server's web client reads (the
    // mobile app decodes the first and passes other keys by).
    let mut keys: Vec<&String> = file.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["code_to_names", "emoji_catalog"]);
    let table = file["code_to_names"].as_object().unwrap();
    assert!(table.len() > 1000, "{}", table.len());
    assert_eq!(table["1f44d"], json!(["+1", "thumbs_up", "like"]));
    assert_eq!(table["1f389"][0], "tada");
    // Any other name under the path is not found.
    let other = format!(
        "{}/static/generated/emoji/emoji_api.0000.json",
        c.server.url
    );
    let resp = client.get(&other).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn idle_queue_timeout_takes_mobile_or_seconds() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    for good in ["mobile", "600", "0", "99999999"] {
        let (status, body) = alice
            .post(
                "/register",
                &[("idle_queue_timeout", good), ("event_types", "[]")],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{good}: {body}");
    }
    for bad in ["desktop", "-5", "1.5"] {
        let (status, body) = alice
            .post("/register", &[("idle_queue_timeout", bad)])
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(
            body,
            json!({"result": "error", "code": "REQUEST_VARIABLE_INVALID",
                   "msg": format!("Bad value for 'idle_queue_timeout': {bad}"),
                   "var_name": "idle_queue_timeout", "bad_value": bad})
        );
    }
}

async fn mark_read(api: &crate::support::Api, id: u64) {
    let (status, body) = api
        .post(
            "/messages/flags",
            &[
                ("messages", &format!("[{id}]")),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn read_receipts_follow_zulips_rules() {
    let c = chat().await;
    let server = &c.server;
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let (_, carol) = &c.carol;
    let (dave_id, dave) = server.create_member("dave@example.com", "Dave Dean").await;
    let dave = server.api(Some(&dave));
    let (_, erin) = server.create_member("erin@example.com", "Erin Eve").await;
    let erin = server.api(Some(&erin));
    let (status, body) = owner
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "general"}]"#),
                ("principals", &format!("[{dave_id}]")),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "receipts"),
            ("content", "who reads this?"),
        ],
    )
    .await;
    let path = format!("/messages/{id}/read_receipts");
    // Nobody but the sender has read it; the sender is never listed.
    let (status, body) = alice.get(&path, &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "", "user_ids": []})
        )
    );
    mark_read(bob, id).await;
    mark_read(&dave, id).await;
    let (_, body) = bob.get(&path, &[]).await;
    assert_eq!(body["user_ids"], json!([bob_id, dave_id]));
    // Dave stops sending read receipts: he is left out.
    let (status, body) = dave
        .call(
            Method::PATCH,
            "/settings",
            &[("send_read_receipts", "false")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = alice.get(&path, &[]).await;
    assert_eq!(body["user_ids"], json!([bob_id]));
    // Carol is not subscribed, but the channel is public: she can read it, and see receipts.
    let (status, body) = carol.get(&path, &[]).await;
    assert_eq!(
        (status, body["user_ids"].clone()),
        (StatusCode::OK, json!([bob_id]))
    );
    // A direct message between Alice and Bob is theirs alone.
    let dm = send(
        alice,
        &[
            ("type", "direct"),
            ("to", &format!("[{bob_id}]")),
            ("content", "just us"),
        ],
    )
    .await;
    let (status, body) = erin
        .get(&format!("/messages/{dm}/read_receipts"), &[])
        .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "msg": "Invalid message(s)", "code": "BAD_REQUEST"})
        )
    );
    let (status, _) = alice.get("/messages/999999/read_receipts", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // The organization turns receipts off: the answer says so, and /register tells clients.
    let (status, body) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[("enable_read_receipts", "false")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = alice.get(&path, &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "msg": "Read receipts are disabled in this organization.",
                   "code": "BAD_REQUEST"})
        )
    );
    let (_, body) = register(alice, &[("fetch_event_types", r#"["realm"]"#)]).await;
    assert_eq!(body["realm_enable_read_receipts"], false);
    let _ = alice_id;
}

#[tokio::test]
async fn wildcard_mentions_in_large_channels_need_the_permission() {
    let c = chat().await;
    let server = &c.server;
    let owner = server.api(Some(&server.owner()));
    let (_, alice) = &c.alice;
    // #general grows past 15 subscribers.
    let mut ids = Vec::new();
    let mut extras = Vec::new();
    for n in 0..15 {
        let (id, creds) = server
            .create_member(&format!("extra{n}@example.com"), &format!("Extra {n}"))
            .await;
        ids.push(id.to_string());
        extras.push(server.api(Some(&creds)));
    }
    let (status, body) = owner
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "general"}]"#),
                ("principals", &format!("[{}]", ids.join(","))),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = owner
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "tiny"}]"#),
                ("principals", &format!("[{}]", c.alice.0)),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let to = |channel: &'static str, content: &'static str| {
        [
            ("type", "stream"),
            ("to", channel),
            ("topic", "announcements"),
            ("content", content),
        ]
    };
    let (status, body) = alice
        .post("/messages", &to("general", "@**all** lunch is here"))
        .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "code": "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
                   "msg": "You do not have permission to use channel wildcard mentions in this channel."})
        )
    );
    // Small channels take wildcards from anyone; administrators may use them anywhere.
    send(alice, &to("tiny", "@**all** lunch is here")).await;
    send(&owner, &to("general", "@**everyone** lunch is here")).await;
    // An edit that adds a wildcard is held to the same rule.
    let plain = send(alice, &to("general", "lunch is here")).await;
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{plain}"),
            &[("content", "@**channel** lunch is here")],
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("STREAM_WILDCARD_MENTION_NOT_ALLOWED")
        )
    );
    // A topic wildcard counts the topic's participants before the message: 15 are not too
    // many, 16 are.
    let crowd = |content: &'static str| {
        [
            ("type", "stream"),
            ("to", "general"),
            ("topic", "crowd"),
            ("content", content),
        ]
    };
    for extra in &extras {
        send(extra, &crowd("here")).await;
    }
    send(&extras[0], &crowd("@**topic** fifteen of us")).await;
    send(&c.bob.1, &crowd("me too")).await;
    let (status, body) = alice.post("/messages", &crowd("@**topic** sixteen")).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "code": "TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
                   "msg": "You do not have permission to use topic wildcard mentions in this topic."})
        )
    );
    // The organization lets members use them: the derived legacy policy follows.
    let (_, groups) = owner.get("/user_groups", &[]).await;
    let members = groups["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "role:members")
        .unwrap()["id"]
        .clone();
    let (status, body) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[(
                "can_mention_many_users_group",
                &format!("{{\"new\": {members}}}"),
            )],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    send(alice, &to("general", "@**all** lunch is here")).await;
    send(alice, &crowd("@**topic** sixteen")).await;
    let (_, body) = register(alice, &[("fetch_event_types", r#"["realm"]"#)]).await;
    assert_eq!(body["realm_wildcard_mention_policy"], 2);
    assert_eq!(body["realm_can_mention_many_users_group"], members);
}

#[tokio::test]
async fn a_status_is_set_shown_to_everyone_and_cleared() {
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let (queue, _) = register(bob, &[("event_types", r#"["user_status"]"#)]).await;
    let (status, body) = alice
        .post(
            "/users/me/status",
            &[
                ("status_text", " On vacation "),
                ("emoji_name", "palm_tree"),
            ],
        )
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"result": "success", "msg": ""}))
    );
    let events = crate::realtime::drain(bob, &queue).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let mut event = events[0].clone();
    event.as_object_mut().unwrap().remove("id");
    assert_eq!(
        event,
        json!({"type": "user_status", "user_id": alice_id, "status_text": "On vacation",
               "emoji_name": "palm_tree", "emoji_code": "1f334",
               "reaction_type": "unicode_emoji"})
    );
    let expected = json!({"status_text": "On vacation", "emoji_name": "palm_tree",
                          "emoji_code": "1f334", "reaction_type": "unicode_emoji"});
    let (_, body) = register(bob, &[("fetch_event_types", r#"["user_status"]"#)]).await;
    assert_eq!(
        body["user_status"],
        json!({alice_id.to_string(): expected.clone()})
    );
    let (status, body) = bob.get(&format!("/users/{alice_id}/status"), &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "", "status": expected})
        )
    );
    // Errors: nothing to change, a text too long, an unknown emoji, an unknown user.
    for (params, msg) in [
        (vec![], "Client did not pass any new values."),
        (
            vec![("status_text", "x".repeat(61))],
            "status_text is too long (limit: 60 characters)",
        ),
        (
            vec![("emoji_name", "no_such_emoji".to_owned())],
            "Emoji 'no_such_emoji' does not exist",
        ),
    ] {
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = alice.post("/users/me/status", &params).await;
        assert_eq!(
            (status, body),
            (
                StatusCode::BAD_REQUEST,
                json!({"result": "error", "msg": msg, "code": "BAD_REQUEST"})
            )
        );
    }
    let (status, body) = bob.get("/users/99999/status", &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("No such user"))
    );
    // Clearing both parts removes the status; it survives a restart until then.
    let creds = alice.creds.clone().unwrap();
    let server = c.server.stop().restart();
    let alice = server.api(Some(&creds));
    let (_, body) = alice.get(&format!("/users/{alice_id}/status"), &[]).await;
    assert_eq!(body["status"]["status_text"], "On vacation");
    let (status, _) = alice
        .post(
            "/users/me/status",
            &[("status_text", ""), ("emoji_name", "")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get(&format!("/users/{alice_id}/status"), &[]).await;
    assert_eq!(body["status"], json!({}));
}

/// `POST /users/{user_id}/status` (Zulip 11): an administrator sets someone's status, which
/// everyone is told of; nobody else may. `GET /users/{user_id}/channels` (Zulip 12): the
/// channels someone is subscribed to, of those whose subscribers the caller may see.
#[tokio::test]
async fn an_administrator_sets_a_status_and_anyone_sees_a_persons_channels() {
    let c = chat().await;
    let (alice_id, _) = &c.alice;
    let (_, bob) = &c.bob;
    let (carol_id, carol) = &c.carol;
    let owner = c.server.api(Some(&c.server.owner()));
    let (status, body) = owner
        .post(
            "/channels/create",
            &[
                ("name", "secret"),
                ("invite_only", "true"),
                ("subscribers", &format!("[{carol_id}]")),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let secret = body["id"].as_u64().unwrap();
    let channels = |api: &'static str, user: u64| {
        let api = match api {
            "owner" => &owner,
            "bob" => bob,
            _ => carol,
        };
        async move { api.get(&format!("/users/{user}/channels"), &[]).await }
    };
    let (status, body) = channels("bob", *alice_id).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "", "subscribed_channel_ids": [c.channel]})
        )
    );
    // A private channel is shown to its subscribers and to administrators only.
    assert_eq!(
        channels("bob", *carol_id).await.1["subscribed_channel_ids"],
        json!([])
    );
    assert_eq!(
        channels("carol", *carol_id).await.1["subscribed_channel_ids"],
        json!([secret])
    );
    assert_eq!(
        channels("owner", *carol_id).await.1["subscribed_channel_ids"],
        json!([secret])
    );
    let (status, body) = channels("bob", 99_999).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("No such user"))
    );

    let (queue, _) = register(bob, &[("event_types", r#"["user_status"]"#)]).await;
    let params = [("status_text", "on vacation"), ("emoji_name", "car")];
    let (status, body) = bob
        .post(&format!("/users/{alice_id}/status"), &params)
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Must be an organization administrator")
        )
    );
    let (status, body) = owner
        .post(&format!("/users/{alice_id}/status"), &params)
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"result": "success", "msg": ""}))
    );
    let events = crate::realtime::drain(bob, &queue).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (
            &events[0]["user_id"],
            &events[0]["status_text"],
            &events[0]["emoji_code"]
        ),
        (&json!(alice_id), &json!("on vacation"), &json!("1f697"))
    );
    let (_, body) = bob.get(&format!("/users/{alice_id}/status"), &[]).await;
    assert_eq!(body["status"]["status_text"], "on vacation");
    let (status, body) = owner.post("/users/99999/status", &params).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("No such user"))
    );
}

#[tokio::test]
async fn muting_a_user_reads_their_messages_and_hides_receipts() {
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let channel = |content: &'static str| {
        [
            ("type", "stream"),
            ("to", "general"),
            ("topic", "mutes"),
            ("content", content),
        ]
    };
    let before = send(bob, &channel("before the mute")).await;
    let (queue, _) = register(
        alice,
        &[(
            "event_types",
            r#"["muted_users", "update_message_flags", "message"]"#,
        )],
    )
    .await;
    let path = format!("/users/me/muted_users/{bob_id}");
    let (status, body) = alice.post(&path, &[]).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"result": "success", "msg": ""}))
    );
    // Bob's unread message became read for Alice, in the same change.
    let events = crate::realtime::drain(alice, &queue).await;
    let kinds = crate::realtime::kinds(&events);
    assert_eq!(
        kinds,
        vec!["muted_users:", "update_message_flags:add"],
        "{events:?}"
    );
    let muted = events[0]["muted_users"].as_array().unwrap();
    assert_eq!(muted.len(), 1);
    assert_eq!(muted[0]["id"], *bob_id);
    assert!(muted[0]["timestamp"].as_i64().unwrap() > 1_600_000_000);
    assert_eq!(events[1]["messages"], json!([before]));
    // His new messages arrive read; Carol, who muted nobody, is not affected.
    let after = send(bob, &channel("after the mute")).await;
    let events = crate::realtime::drain(alice, &queue).await;
    let message = events.iter().find(|e| e["type"] == "message").unwrap();
    assert_eq!(message["flags"], json!(["read"]), "{events:?}");
    let (_, body) = alice.get(&format!("/messages/{after}"), &[]).await;
    assert_eq!(body["message"]["flags"], json!(["read"]));
    // /register lists the mute.
    let (_, state) = register(alice, &[("fetch_event_types", r#"["muted_users"]"#)]).await;
    assert_eq!(state["muted_users"].as_array().unwrap().len(), 1);
    assert_eq!(state["muted_users"][0]["id"], *bob_id);
    // Errors, in Zulip's words.
    for (method, path, msg) in [
        (
            reqwest::Method::POST,
            format!("/users/me/muted_users/{alice_id}"),
            "Cannot mute self",
        ),
        (
            reqwest::Method::POST,
            format!("/users/me/muted_users/{bob_id}"),
            "User already muted",
        ),
        (
            reqwest::Method::POST,
            "/users/me/muted_users/9999".to_owned(),
            "No such user",
        ),
        (
            reqwest::Method::DELETE,
            "/users/me/muted_users/9999".to_owned(),
            "No such user",
        ),
    ] {
        let (status, body) = alice.call(method, &path, &[]).await;
        assert_eq!(
            (status, body),
            (
                StatusCode::BAD_REQUEST,
                json!({"result": "error", "msg": msg, "code": "BAD_REQUEST"})
            ),
            "{path}"
        );
    }
    // Read receipts: Bob no longer sees Alice's read, nor Alice Bob's.
    let from_alice = send(alice, &channel("alice speaks")).await;
    crate::mobile::mark_read(bob, from_alice).await;
    let (_, body) = alice
        .get(&format!("/messages/{from_alice}/read_receipts"), &[])
        .await;
    assert_eq!(body["user_ids"], json!([]));
    // Unmuting: a new message is unread again.
    let (status, _) = alice.delete(&path, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = alice.delete(&path, &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("User is not muted"))
    );
    let later = send(bob, &channel("unmuted now")).await;
    let (_, body) = alice.get(&format!("/messages/{later}"), &[]).await;
    assert_eq!(body["message"]["flags"], json!([]));
    let (_, body) = alice
        .get(&format!("/messages/{from_alice}/read_receipts"), &[])
        .await;
    assert_eq!(body["user_ids"], json!([bob_id]));
}

/// Width and height from a PNG's header.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[tokio::test]
async fn avatars_are_pngs_and_can_be_uploaded_and_removed() {
    let c = chat().await;
    let server = &c.server;
    let (alice_id, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let fetch_png = |url: String| {
        let owner = server.api(Some(&server.owner()));
        async move {
            // A person's avatar needs a login; without one it is refused.
            if !url.contains("/avatar/realm") {
                assert_eq!(
                    reqwest::get(&url).await.unwrap().status(),
                    StatusCode::UNAUTHORIZED
                );
            }
            let resp = owner.fetch(&url).await;
            assert_eq!(resp.status(), StatusCode::OK, "{url}");
            assert_eq!(resp.headers()["content-type"], "image/png");
            png_size(&resp.bytes().await.unwrap())
        }
    };
    let (_, me) = register(
        alice,
        &[("fetch_event_types", r#"["realm", "realm_user"]"#)],
    )
    .await;
    assert_eq!(me["avatar_source"], "G");
    assert_eq!(
        fetch_png(me["avatar_url"].as_str().unwrap().to_owned()).await,
        (100, 100)
    );
    assert_eq!(
        fetch_png(me["avatar_url_medium"].as_str().unwrap().to_owned()).await,
        (500, 500)
    );
    assert_eq!(
        fetch_png(me["realm_icon_url"].as_str().unwrap().to_owned()).await,
        (100, 100)
    );

    let (queue, _) = register(bob, &[("event_types", r#"["realm_user"]"#)]).await;
    let picture = chronicle::avatars::generated("a picture", 300);
    let (status, body) = crate::uploads::post_files(
        alice,
        "/users/me/avatar",
        &[("file", "me.png", "image/png", &picture)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let url = body["avatar_url"].as_str().unwrap().to_owned();
    assert!(url.ends_with("?version=2"), "{url}");
    assert_eq!(fetch_png(url.clone()).await, (100, 100));
    let medium = url.replace("?version", "/medium?version");
    assert_eq!(fetch_png(medium.clone()).await, (500, 500));
    let events = crate::realtime::drain(bob, &queue).await;
    assert_eq!(
        events[0]["person"],
        json!({"user_id": alice_id, "avatar_source": "U", "avatar_url": url,
               "avatar_url_medium": medium, "avatar_version": 2})
    );
    let (_, me) = register(
        alice,
        &[("fetch_event_types", r#"["realm", "realm_user"]"#)],
    )
    .await;
    assert_eq!(me["avatar_source"], "U");
    assert_eq!(me["max_avatar_file_size_mib"], 5);

    // Refusals: not an image, and not exactly one file.
    let (status, body) = crate::uploads::post_files(
        alice,
        "/users/me/avatar",
        &[("file", "evil.png", "image/png", b"<svg onload=alert(1)>")],
    )
    .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "code": "BAD_IMAGE",
                   "msg": "Could not decode image; did you upload an image file?"})
        )
    );
    let (status, body) = alice.post("/users/me/avatar", &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("You must upload exactly one avatar.")
        )
    );

    // Back to the generated one.
    let (status, body) = alice.delete("/users/me/avatar", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["avatar_url"].as_str().unwrap().ends_with("?version=3"));
    let (_, me) = register(alice, &[("fetch_event_types", r#"["realm_user"]"#)]).await;
    assert_eq!(me["avatar_source"], "G");
    let _ = server;
}

/// What the mobile app's decoders require of each event it decodes, read from its source
/// (`tests/fixtures/mobile/events.json`: by `type:op` or `type`, the keys that must be present
/// with their JSON types, allowed values and nested objects).
fn mobile_event_facts() -> Value {
    let path = format!(
        "{}/tests/fixtures/mobile/events.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Whether `value` has the JSON type the facts name.
fn has_type(value: &Value, kind: &str, strict_int: bool) -> bool {
    match kind {
        "int" if strict_int => value.is_i64() || value.is_u64(),
        "int" | "number" => value.is_number(),
        "string" => value.is_string(),
        "bool" => value.is_boolean(),
        "list" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

/// The problems the app's decoder would have with `object` (an event or a nested object),
/// against `spec` (`required`, `optional`, `nested`).
fn decode_problems(object: &Value, spec: &Value, at: &str, problems: &mut Vec<String>) {
    let entries = |name: &str| spec[name].as_array().cloned().unwrap_or_default();
    for (entry, required) in entries("required")
        .into_iter()
        .map(|e| (e, true))
        .chain(entries("optional").into_iter().map(|e| (e, false)))
    {
        let key = entry["key"].as_str().unwrap();
        let kind = entry["type"].as_str().unwrap_or("");
        let may_be_null = !required || entry["nullable_ok"] == json!(true);
        let strict = entry["strict_int"] == json!(true);
        match object.get(key) {
            None | Some(Value::Null) if may_be_null => {}
            None | Some(Value::Null) => problems.push(format!("{at}: `{key}` missing or null")),
            Some(value) => {
                if !has_type(value, kind, strict) {
                    problems.push(format!("{at}: `{key}` is not a {kind}: {value}"));
                }
                // A closed set of values (for lists, of each element).
                if let (Some(allowed), false) =
                    (entry["enum"].as_array(), entry["unknown_ok"] == json!(true))
                {
                    let values: Vec<&Value> = match value.as_array() {
                        Some(items) => items.iter().collect(),
                        None => vec![value],
                    };
                    for v in values {
                        if !allowed.contains(v) {
                            problems.push(format!("{at}: `{key}` has {v}, not one of {allowed:?}"));
                        }
                    }
                }
            }
        }
    }
    for (path, nested) in spec["nested"].as_object().into_iter().flatten() {
        let children: Vec<(String, &Value)> = if let Some(list) = path.strip_suffix("[]") {
            object[list]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, v)| (format!("{at}.{list}[{i}]"), v))
                .collect()
        } else if let Some((map, _)) = path.split_once(".<") {
            object[map]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (format!("{at}.{map}.{k}"), v))
                .collect()
        } else {
            match object.get(path.as_str()) {
                Some(v) if !v.is_null() => vec![(format!("{at}.{path}"), v)],
                _ => Vec::new(),
            }
        };
        for (where_, child) in children {
            decode_problems(child, nested, &where_, problems);
        }
    }
}

#[tokio::test]
async fn every_event_the_mobile_app_decodes_has_what_its_decoders_require() {
    let facts = mobile_event_facts();
    // The check itself finds what the app would reject.
    let mut caught = Vec::new();
    let broken =
        json!({"id": 1, "type": "reaction", "op": "add", "emoji_name": "smile", "user_id": "7"});
    decode_problems(&broken, &facts["reaction:add"], "reaction:add", &mut caught);
    assert!(caught.len() >= 3, "{caught:?}");
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let owner = c.server.api(Some(&c.server.owner()));
    let channel = c.channel.to_string();
    let (queue, _) = register(bob, MOBILE_REGISTER).await;
    // A day's worth of what happens around a user, each producing events Bob's app decodes.
    let id = send(
        alice,
        &[
            ("type", "stream"),
            ("to", &channel),
            ("topic", "plans"),
            ("content", "hello @**Bob Brown**"),
        ],
    )
    .await;
    let dm = send(
        alice,
        &[
            ("type", "direct"),
            ("to", &format!("[{bob_id}]")),
            ("content", "psst"),
        ],
    )
    .await;
    let path = format!("/messages/{id}");
    type Call<'a> = (
        &'a crate::support::Api,
        Method,
        String,
        Vec<(&'a str, String)>,
    );
    let calls: Vec<Call> = vec![
        (
            alice,
            Method::PATCH,
            path.clone(),
            vec![("content", "hello again @**Bob Brown**".into())],
        ),
        (
            alice,
            Method::PATCH,
            path.clone(),
            vec![
                ("topic", "new plans".into()),
                ("propagate_mode", "change_all".into()),
            ],
        ),
        (
            alice,
            Method::POST,
            format!("{path}/reactions"),
            vec![("emoji_name", "smile".into())],
        ),
        (
            alice,
            Method::DELETE,
            format!("{path}/reactions"),
            vec![("emoji_name", "smile".into())],
        ),
        (
            bob,
            Method::POST,
            "/messages/flags".into(),
            vec![
                ("messages", format!("[{id},{dm}]")),
                ("op", "add".into()),
                ("flag", "read".into()),
            ],
        ),
        (
            bob,
            Method::POST,
            "/messages/flags".into(),
            vec![
                ("messages", format!("[{id}]")),
                ("op", "remove".into()),
                ("flag", "read".into()),
            ],
        ),
        (
            bob,
            Method::POST,
            "/messages/flags".into(),
            vec![
                ("messages", format!("[{id}]")),
                ("op", "add".into()),
                ("flag", "starred".into()),
            ],
        ),
        (
            alice,
            Method::POST,
            "/typing".into(),
            vec![
                ("type", "direct".into()),
                ("to", format!("[{bob_id}]")),
                ("op", "start".into()),
            ],
        ),
        (
            alice,
            Method::POST,
            "/typing".into(),
            vec![
                ("type", "stream".into()),
                ("stream_id", channel.clone()),
                ("topic", "new plans".into()),
                ("op", "start".into()),
            ],
        ),
        (
            alice,
            Method::POST,
            "/typing".into(),
            vec![
                ("type", "direct".into()),
                ("to", format!("[{bob_id}]")),
                ("op", "stop".into()),
            ],
        ),
        (
            bob,
            Method::POST,
            "/user_topics".into(),
            vec![
                ("stream_id", channel.clone()),
                ("topic", "new plans".into()),
                ("visibility_policy", "3".into()),
            ],
        ),
        (
            bob,
            Method::POST,
            "/users/me/subscriptions/properties".into(),
            vec![(
                "subscription_data",
                format!(
                    r##"[{{"stream_id":{channel},"property":"color","value":"#336699"}},{{"stream_id":{channel},"property":"is_muted","value":true}}]"##
                ),
            )],
        ),
        (
            bob,
            Method::PATCH,
            "/settings".into(),
            vec![
                ("twenty_four_hour_time", "true".into()),
                ("timezone", "Asia/Tokyo".into()),
            ],
        ),
        (
            &owner,
            Method::PATCH,
            format!("/streams/{channel}"),
            vec![("description", "All hands".into())],
        ),
        (
            alice,
            Method::POST,
            "/submessage".into(),
            vec![
                ("message_id", id.to_string()),
                ("msg_type", "widget".into()),
                ("content", "{}".into()),
            ],
        ),
        (
            alice,
            Method::PATCH,
            "/settings".into(),
            vec![("full_name", "Alice A. Adams".into())],
        ),
        (
            alice,
            Method::POST,
            "/users/me/status".into(),
            vec![
                ("status_text", "On a train".into()),
                ("emoji_name", "train".into()),
            ],
        ),
        (
            alice,
            Method::POST,
            "/users/me/presence".into(),
            vec![("status", "active".into())],
        ),
        (
            bob,
            Method::POST,
            format!("/users/me/muted_users/{}", c.carol.0),
            vec![],
        ),
        (
            bob,
            Method::POST,
            "/users/me/alert_words".into(),
            vec![("alert_words", r#"["launch"]"#.into())],
        ),
        (
            bob,
            Method::POST,
            "/saved_snippets".into(),
            vec![("title", "Greeting".into()), ("content", "Hello!".into())],
        ),
        (bob, Method::POST, "/register_client_device".into(), vec![]),
        (
            &owner,
            Method::POST,
            "/user_groups/create".into(),
            vec![
                ("name", "crew".into()),
                ("description", "The crew".into()),
                ("members", format!("[{alice_id}]")),
            ],
        ),
        (
            &owner,
            Method::POST,
            "/channels/create".into(),
            vec![
                ("name", "launch".into()),
                ("subscribers", format!("[{alice_id},{bob_id}]")),
            ],
        ),
        (
            &owner,
            Method::POST,
            "/channel_folders/create".into(),
            vec![
                ("name", "Projects".into()),
                ("description", "Work in flight".into()),
            ],
        ),
        (
            &owner,
            Method::POST,
            "/realm/profile_fields".into(),
            vec![("name", "Team".into()), ("field_type", "1".into())],
        ),
        (alice, Method::DELETE, path.clone(), vec![]),
    ];
    for (api, method, path, params) in calls {
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = api.call(method.clone(), &path, &params).await;
        assert_eq!(status, StatusCode::OK, "{method} {path}: {body}");
    }
    let events = crate::realtime::drain(bob, &queue).await;
    let mut problems = Vec::new();
    let mut decoded = std::collections::BTreeSet::new();
    for event in &events {
        let kind = event["type"].as_str().unwrap_or_default();
        let with_op = format!("{kind}:{}", event["op"].as_str().unwrap_or_default());
        let spec = facts.get(&with_op).or_else(|| facts.get(kind));
        if let Some(spec) = spec {
            decoded.insert(if facts.get(&with_op).is_some() {
                with_op.clone()
            } else {
                kind.to_owned()
            });
            decode_problems(event, spec, &with_op, &mut problems);
        }
        // Every event, decoded or not, needs a string type and an integer id.
        if !event["type"].is_string() || !(event["id"].is_i64() || event["id"].is_u64()) {
            problems.push(format!("{with_op}: no string type or integer id: {event}"));
        }
    }
    // The messages of `GET /messages` decode as the app decodes a message event's.
    let (_, fetched) = bob
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "20"),
                ("num_after", "0"),
                ("apply_markdown", "true"),
            ],
        )
        .await;
    let messages = fetched["messages"].as_array().unwrap();
    assert!(messages.len() >= 2, "{fetched}");
    for message in messages {
        decode_problems(
            message,
            &facts["message"]["nested"]["message"],
            "GET /messages",
            &mut problems,
        );
    }
    assert!(problems.is_empty(), "{problems:#?}");
    // The session reached the events the app decodes most.
    for expected in [
        "message",
        "update_message",
        "reaction:add",
        "reaction:remove",
        "update_message_flags:add",
        "update_message_flags:remove",
        "typing:start",
        "typing:stop",
        "user_topic",
        "subscription:update",
        "user_settings:update",
        "stream:update",
        "submessage",
        "realm_user:update",
        "user_status",
        "muted_users",
        "alert_words",
        "saved_snippets:add",
        "device:add",
        "user_group:add",
        "stream:create",
        "subscription:add",
        "channel_folder:add",
        "custom_profile_fields",
        "delete_message",
    ] {
        assert!(
            decoded.contains(expected),
            "no {expected} event among {decoded:?}"
        );
    }
}

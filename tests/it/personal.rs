//! What the mobile app and other clients switch on from Chronicle's feature level: message
//! reports to the moderation channel, navigation views, client devices and push registration
//! (no push service is configured), `PATCH /bots/{id}`, the time zone and language settings, and
//! still images of animated custom emoji.

use crate::messages::{chat, newest, send};
use crate::realtime::{drain, register};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

#[tokio::test]
async fn a_report_goes_to_the_private_moderation_channel_with_the_reported_message() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let owner = c.server.api(Some(&c.server.owner()));
    let message = send(
        bob,
        &[
            ("type", "stream"),
            ("to", &c.channel.to_string()),
            ("topic", "deals"),
            ("content", "Buy cheap watches!"),
        ],
    )
    .await;
    let report = |kind: &'static str, description: &'static str| {
        let path = format!("/messages/{message}/report");
        async move {
            alice
                .post(
                    &path,
                    &[("report_type", kind), ("description", description)],
                )
                .await
        }
    };
    let (status, body) = report("spam", "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["msg"],
        "Message reporting is not enabled in this organization."
    );
    // Only a private channel may be the moderation channel.
    let (status, body) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[("moderation_request_channel_id", &c.channel.to_string())],
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "Moderation request channel must be private.");
    let (_, me) = owner.get("/users/me", &[]).await;
    let (_, created) = owner
        .post(
            "/channels/create",
            &[
                ("name", "moderation"),
                ("invite_only", "true"),
                ("subscribers", &format!("[{}]", me["user_id"])),
            ],
        )
        .await;
    let moderation = created["id"].as_u64().unwrap();
    let (queue, _) = register(alice, &[("event_types", r#"["realm"]"#)]).await;
    let (status, body) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[("moderation_request_channel_id", &moderation.to_string())],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let events = drain(alice, &queue).await;
    assert_eq!(events[0]["property"], "moderation_request_channel_id");
    assert_eq!(events[0]["value"], json!(moderation));
    let (_, state) = register(alice, &[]).await;
    assert_eq!(
        state["realm_moderation_request_channel_id"],
        json!(moderation)
    );
    assert_eq!(
        state["server_report_message_types"][0],
        json!({"key": "spam", "name": "Spam"})
    );
    assert_eq!(
        state["server_report_message_types"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let (status, body) = report("other", "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "An explanation is required.");
    let (status, body) = report("rude", "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "Invalid report_type");
    let (status, body) = report("spam", "Third time today.").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let narrow = format!(r#"[{{"operator":"channel","operand":{moderation}}}]"#);
    let posted = newest(&owner, &narrow).await;
    assert_eq!(posted["sender_email"], "notification-bot@zulip.com");
    assert_eq!(posted["subject"], "Bob Brown moderation");
    let content = posted["content"].as_str().unwrap();
    assert!(content.contains("reported a message sent by"), "{content}");
    assert!(
        content.contains(&format!("data-user-id=\"{bob_id}\"")),
        "{content}"
    );
    assert!(
        content.contains(
            "<blockquote>\n<p><strong>Spam</strong>. Third time today.</p>\n</blockquote>"
        ),
        "{content}"
    );
    assert!(
        content.contains("<div class=\"spoiler-block\">"),
        "{content}"
    );
    assert!(content.contains("<p>Buy cheap watches!</p>"), "{content}");
    // Alice is not in the moderation channel: she cannot read the report.
    let (_, seen) = alice
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "5"),
                ("num_after", "0"),
                ("narrow", &narrow),
            ],
        )
        .await;
    assert!(
        seen["messages"].as_array().is_none_or(|m| m.is_empty()),
        "{seen}"
    );
    // The moderation channel cannot be made public while it is one.
    let (status, body) = owner
        .call(
            Method::PATCH,
            &format!("/streams/{moderation}"),
            &[("is_private", "false")],
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "Moderation request channel must be private.");
}

#[tokio::test]
async fn navigation_views_are_a_users_own() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let (queue, state) = register(alice, &[]).await;
    assert_eq!(state["navigation_views"], json!([]));
    let add = |params: &'static [(&'static str, &'static str)]| async move {
        alice.post("/navigation_views", params).await
    };
    let (status, _) = add(&[("fragment", "inbox"), ("is_pinned", "false")]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = add(&[
        ("fragment", "narrow/channel/1-general"),
        ("is_pinned", "true"),
        ("name", "General"),
    ])
    .await;
    assert_eq!(status, StatusCode::OK);
    for (params, msg) in [
        (
            &[
                ("fragment", "recent"),
                ("is_pinned", "true"),
                ("name", "Mine"),
            ][..],
            "Built-in views cannot have a custom name.",
        ),
        (
            &[("fragment", "narrow/is/dm"), ("is_pinned", "true")][..],
            "Custom views must have a valid name.",
        ),
        (
            &[("fragment", "inbox"), ("is_pinned", "true")][..],
            "Navigation view already exists.",
        ),
        (
            &[
                ("fragment", "narrow/x"),
                ("is_pinned", "true"),
                ("name", "General"),
            ][..],
            "Navigation view already exists.",
        ),
        (
            &[("fragment", "  "), ("is_pinned", "true")][..],
            "fragment cannot be blank",
        ),
    ] {
        let (status, body) = alice.post("/navigation_views", params).await;
        assert_eq!(
            (status, body["msg"].clone()),
            (StatusCode::BAD_REQUEST, json!(msg))
        );
    }
    let path = "/navigation_views/narrow/channel/1-general";
    let (status, _) = alice
        .call(
            Method::PATCH,
            path,
            &[("is_pinned", "false"), ("name", "All of general")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, listed) = alice.get("/navigation_views", &[]).await;
    assert_eq!(
        listed["navigation_views"],
        json!([
            {"fragment": "inbox", "is_pinned": false, "name": null},
            {"fragment": "narrow/channel/1-general", "is_pinned": false, "name": "All of general"},
        ])
    );
    let (_, others) = bob.get("/navigation_views", &[]).await;
    assert_eq!(others["navigation_views"], json!([]));
    let (status, body) = bob.delete(path, &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::NOT_FOUND,
            json!("Navigation view does not exist.")
        )
    );
    let (status, _) = alice.delete("/navigation_views/inbox", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let events = drain(alice, &queue).await;
    let views: Vec<Value> = events
        .into_iter()
        .filter(|e| e["type"] == "navigation_view")
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(
        views,
        vec![
            json!({"type": "navigation_view", "op": "add", "navigation_view": {"fragment": "inbox", "is_pinned": false, "name": null}}),
            json!({"type": "navigation_view", "op": "add", "navigation_view": {"fragment": "narrow/channel/1-general", "is_pinned": true, "name": "General"}}),
            json!({"type": "navigation_view", "op": "update", "fragment": "narrow/channel/1-general", "data": {"is_pinned": false, "name": "All of general"}}),
            json!({"type": "navigation_view", "op": "remove", "fragment": "inbox"}),
        ]
    );
}

#[tokio::test]
async fn devices_register_and_push_says_it_is_not_configured() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let (queue, state) = register(alice, &[]).await;
    assert_eq!(state["devices"], json!({}));
    assert_eq!(state["realm_push_notifications_enabled"], json!(false));
    assert_eq!(
        state["realm_push_notifications_enabled_end_timestamp"],
        Value::Null
    );
    let (status, body) = alice.post("/register_client_device", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let device = body["device_id"].as_u64().unwrap();
    let (_, state) = register(alice, &[]).await;
    assert_eq!(
        state["devices"],
        json!({device.to_string(): {
            "push_key_id": null, "push_token_id": null, "pending_push_token_id": null,
            "push_token_last_updated_timestamp": null, "push_registration_error_code": null,
        }})
    );
    let not_configured = json!({
        "result": "error",
        "msg": "Server is not configured to use push notification service.",
        "code": "PUSH_SERVICE_NOT_CONFIGURED",
    });
    let (status, body) = alice
        .post(
            "/mobile_push/register",
            &[
                ("device_id", &device.to_string()),
                ("token_kind", "fcm"),
                ("token_id", "AAAA"),
            ],
        )
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, not_configured.clone())
    );
    let (status, body) = alice
        .post("/users/me/android_gcm_reg_id", &[("token", "abc")])
        .await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, not_configured));
    // Another user's device is not theirs to remove.
    let (status, body) = bob
        .post(
            "/remove_client_device",
            &[("device_id", &device.to_string())],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Invalid `device_id`"))
    );
    let (status, _) = alice
        .post(
            "/remove_client_device",
            &[("device_id", &device.to_string())],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let events = drain(alice, &queue).await;
    let devices: Vec<(Value, Value)> = events
        .iter()
        .filter(|e| e["type"] == "device")
        .map(|e| (e["op"].clone(), e["device_id"].clone()))
        .collect();
    assert_eq!(
        devices,
        vec![
            (json!("add"), json!(device)),
            (json!("remove"), json!(device))
        ]
    );
}

#[tokio::test]
async fn bots_are_changed_by_their_owner_with_events() {
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let (_, body) = alice
        .post(
            "/bots",
            &[
                ("full_name", "Echo"),
                ("short_name", "echo"),
                ("bot_type", "3"),
                ("payload_url", r#""https://echo.example.test/hook""#),
            ],
        )
        .await;
    let bot = body["user_id"].as_u64().unwrap();
    let path = format!("/bots/{bot}");
    let (queue, _) = register(alice, &[("event_types", r#"["realm_bot","realm_user"]"#)]).await;
    let (status, body) = bob
        .call(Method::PATCH, &path, &[("full_name", "Mine")])
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Insufficient permission"))
    );
    let (status, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[
                ("full_name", "Echo Two"),
                ("default_sending_stream", "general"),
                ("service_payload_url", r#""https://echo.example.test/v2""#),
                ("service_interface", "2"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["full_name"], "Echo Two");
    assert_eq!(body["default_sending_stream"], "general");
    assert_eq!(body["service_payload_url"], "https://echo.example.test/v2");
    assert_eq!(body["service_interface"], json!(2));
    let (_, bots) = alice.get("/bots", &[]).await;
    let listed = bots["bots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["full_name"] == "Echo Two")
        .unwrap()
        .clone();
    assert_eq!(listed["default_sending_stream"], "general");
    let events = drain(alice, &queue).await;
    assert!(events.iter().any(|e| e["type"] == "realm_user"
        && e["person"] == json!({"user_id": bot, "full_name": "Echo Two"})));
    assert!(events.iter().any(|e| e["type"] == "realm_bot"
        && e["bot"] == json!({"user_id": bot, "default_sending_stream": "general"})));
    assert!(events.iter().any(|e| e["type"] == "realm_bot"
        && e["bot"]["services"][0]["base_url"] == "https://echo.example.test/v2"));
    for (params, msg) in [
        (
            vec![("bot_owner_id", "4242")],
            "Failed to change owner, no such user",
        ),
        (
            vec![("bot_owner_id", &*bot.to_string())],
            "Failed to change owner, bots can't own other bots",
        ),
        (
            vec![("default_sending_stream", "nowhere")],
            "Invalid channel name 'nowhere'",
        ),
    ] {
        let (status, body) = alice.call(Method::PATCH, &path, &params).await;
        assert_eq!(
            (status, body["msg"].clone()),
            (StatusCode::BAD_REQUEST, json!(msg))
        );
    }
    // Handing it to Bob: he manages it now, Alice no longer.
    let (status, _) = alice
        .call(
            Method::PATCH,
            &path,
            &[("bot_owner_id", &bob_id.to_string())],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let events = drain(alice, &queue).await;
    assert!(events.iter().any(|e| e["type"] == "realm_user"
        && e["person"] == json!({"user_id": bot, "bot_owner_id": bob_id})));
    assert!(events
        .iter()
        .any(|e| e["type"] == "realm_bot" && e["op"] == "delete"));
    let (status, body) = alice
        .call(Method::PATCH, &path, &[("full_name", "Back")])
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Insufficient permission"))
    );
    let (_, bots) = bob.get("/bots", &[]).await;
    assert!(bots["bots"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["full_name"] == "Echo Two"));
    let _ = alice_id;
}

#[tokio::test]
async fn time_zone_and_language_are_checked_stored_and_announced() {
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let (alice_queue, _) = register(alice, &[("event_types", r#"["user_settings"]"#)]).await;
    let (bob_queue, _) = register(bob, &[("event_types", r#"["realm_user"]"#)]).await;
    let (status, body) = alice
        .call(
            Method::PATCH,
            "/settings",
            &[("timezone", "Mars/Olympus_Mons")],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("timezone is not a recognized time zone")
        )
    );
    let (status, body) = alice
        .call(Method::PATCH, "/settings", &[("default_language", "xx")])
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Invalid default_language"))
    );
    let (status, body) = alice
        .call(
            Method::PATCH,
            "/settings",
            &[("timezone", "Europe/Berlin"), ("default_language", "de")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body.get("ignored_parameters_unsupported"), None);
    let (_, state) = register(alice, &[]).await;
    assert_eq!(state["user_settings"]["timezone"], "Europe/Berlin");
    assert_eq!(state["user_settings"]["default_language"], "de");
    let me = state["realm_users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["user_id"] == json!(alice_id))
        .unwrap()
        .clone();
    assert_eq!(me["timezone"], "Europe/Berlin");
    let events = drain(alice, &alice_queue).await;
    let language = events
        .iter()
        .find(|e| e["property"] == "default_language")
        .unwrap();
    assert_eq!(language["value"], "de");
    assert_eq!(language["language_name"], "Deutsch");
    assert!(events
        .iter()
        .any(|e| e["property"] == "timezone" && e["value"] == "Europe/Berlin"));
    let events = drain(bob, &bob_queue).await;
    assert!(events.iter().any(|e| e["type"] == "realm_user"
        && e["person"] == json!({"user_id": alice_id, "timezone": "Europe/Berlin"})));
}

#[tokio::test]
async fn animated_emoji_have_a_still_image() {
    use image::codecs::gif::GifEncoder;
    use image::{Delay, Frame, Rgba, RgbaImage};
    let c = chat().await;
    let (_, alice) = &c.alice;
    let mut gif = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut gif);
        let frames = (0..2).map(|i| {
            Frame::from_parts(
                RgbaImage::from_pixel(32, 32, Rgba([i * 200, 0, 0, 255])),
                0,
                0,
                Delay::from_numer_denom_ms(100, 1),
            )
        });
        encoder.encode_frames(frames).unwrap();
    }
    let (status, body) = crate::uploads::post_files(
        alice,
        "/realm/emoji/party_parrot",
        &[("file", "parrot.gif", "image/gif", &gif)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, emoji) = alice.get("/realm/emoji", &[]).await;
    let parrot = emoji["emoji"]
        .as_object()
        .unwrap()
        .values()
        .find(|e| e["name"] == "party_parrot")
        .unwrap()
        .clone();
    let still = parrot["still_url"].as_str().unwrap().to_owned();
    assert!(
        still.ends_with(".png") && still.contains("/emoji/images/still/"),
        "{still}"
    );
    let resp = alice
        .client
        .get(format!("{}{still}", alice.base.trim_end_matches("/api/v1")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "image/png");
    let png = resp.bytes().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"));
}

#[tokio::test]
async fn drafts_and_saved_snippets_are_kept_for_all_of_a_users_clients() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let (queue, state) = register(alice, &[]).await;
    assert_eq!(state["drafts"], json!([]));
    assert_eq!(state["saved_snippets"], json!([]));
    let drafts = format!(
        r#"[{{"type":"stream","to":[{}],"topic":"plans","content":"first","timestamp":100}},
            {{"type":"private","to":[{bob_id}],"topic":"","content":"second","timestamp":200}},
            {{"type":"","to":[],"topic":"","content":"idea"}}]"#,
        c.channel
    );
    let (status, body) = alice.post("/drafts", &[("drafts", &drafts)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let ids: Vec<u64> = serde_json::from_value(body["ids"].clone()).unwrap();
    assert_eq!(ids.len(), 3);
    let (_, listed) = alice.get("/drafts", &[]).await;
    assert_eq!(listed["count"], json!(3));
    // The most recently edited first: the unaddressed one got the time of the request.
    let order: Vec<u64> = listed["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_u64().unwrap())
        .collect();
    assert_eq!(order, vec![ids[2], ids[1], ids[0]]);
    assert_eq!(
        listed["drafts"][2],
        json!({"id": ids[0], "type": "stream", "to": [c.channel], "topic": "plans", "content": "first", "timestamp": 100})
    );
    for (drafts, msg) in [
        (
            r#"[{"type":"stream","to":[1,2],"topic":"t","content":"x"}]"#.to_owned(),
            "Must specify exactly 1 channel ID for channel messages",
        ),
        (
            r#"[{"type":"stream","to":[999],"topic":"t","content":"x"}]"#.to_owned(),
            "Invalid channel ID",
        ),
        (
            r#"[{"type":"private","to":[4242],"topic":"","content":"x"}]"#.to_owned(),
            "Invalid user ID 4242",
        ),
        (
            r#"[{"type":"","to":[],"topic":"","content":"x","timestamp":-1}]"#.to_owned(),
            "Timestamp must not be negative.",
        ),
    ] {
        let (status, body) = alice.post("/drafts", &[("drafts", &drafts)]).await;
        assert_eq!(
            (status, body["msg"].clone()),
            (StatusCode::BAD_REQUEST, json!(msg))
        );
    }
    let path = format!("/drafts/{}", ids[2]);
    let (status, _) = alice
        .call(
            Method::PATCH,
            &path,
            &[(
                "draft",
                r#"{"type":"","to":[],"topic":"","content":"a better idea","timestamp":300}"#,
            )],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = bob.delete(&path, &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::NOT_FOUND, json!("Draft does not exist"))
    );
    let (status, _) = alice.delete(&path, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let events = drain(alice, &queue).await;
    let ops: Vec<(Value, Value)> = events
        .iter()
        .filter(|e| e["type"] == "drafts")
        .map(|e| match e.get("drafts") {
            Some(all) => (e["op"].clone(), json!(all.as_array().unwrap().len())),
            None => (
                e["op"].clone(),
                e.get("draft").map_or(json!(null), |d| d["content"].clone()),
            ),
        })
        .collect();
    assert_eq!(
        ops,
        vec![
            (json!("add"), json!(3)),
            (json!("update"), json!("a better idea")),
            (json!("remove"), json!(null)),
        ]
    );
    // A user who keeps drafts to themselves cannot store them.
    let (status, _) = bob
        .call(
            Method::PATCH,
            "/settings",
            &[("enable_drafts_synchronization", "false")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = bob
        .post(
            "/drafts",
            &[(
                "drafts",
                r#"[{"type":"","to":[],"topic":"","content":"x"}]"#,
            )],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("User has disabled synchronizing drafts.")
        )
    );
    // Saved snippets.
    let (status, body) = alice
        .post(
            "/saved_snippets",
            &[("title", "Welcome"), ("content", "Welcome aboard!")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let snippet = body["saved_snippet_id"].as_u64().unwrap();
    let (status, body) = alice
        .post("/saved_snippets", &[("title", " "), ("content", "x")])
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Title cannot be empty."))
    );
    let spath = format!("/saved_snippets/{snippet}");
    let (status, _) = alice
        .call(
            Method::PATCH,
            &spath,
            &[("content", "Welcome aboard, again!")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, listed) = alice.get("/saved_snippets", &[]).await;
    let saved = &listed["saved_snippets"][0];
    assert_eq!(
        (
            saved["id"].clone(),
            saved["title"].clone(),
            saved["content"].clone()
        ),
        (
            json!(snippet),
            json!("Welcome"),
            json!("Welcome aboard, again!")
        )
    );
    assert!(saved["date_created"].as_i64().unwrap() > 1_700_000_000);
    let (status, body) = bob.delete(&spath, &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::NOT_FOUND,
            json!("Saved snippet does not exist.")
        )
    );
    let (status, _) = alice.delete(&spath, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let events = drain(alice, &queue).await;
    let ops: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "saved_snippets")
        .map(|e| e["op"].clone())
        .collect();
    assert_eq!(ops, vec![json!("add"), json!("update"), json!("remove")]);
}

//! What bots and API clients call besides messages: `/bot_storage` and `POST /messages/render`.

use crate::messages::chat;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

#[tokio::test]
async fn bot_storage_keeps_each_users_text_values() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let (status, body) = alice
        .call(
            Method::PUT,
            "/bot_storage",
            &[(
                "storage",
                r#"{"count": "1", "board": "{\"turn\": \"white\"}"}"#,
            )],
        )
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"result": "success", "msg": ""}))
    );
    let (_, body) = alice.get("/bot_storage", &[]).await;
    assert_eq!(
        body,
        json!({"result": "success", "msg": "",
               "storage": {"board": "{\"turn\": \"white\"}", "count": "1"}})
    );
    let (_, body) = alice.get("/bot_storage", &[("keys", r#"["count"]"#)]).await;
    assert_eq!(body["storage"], json!({"count": "1"}));
    // Each user's storage is their own.
    let (_, body) = bob.get("/bot_storage", &[]).await;
    assert_eq!(body["storage"], json!({}));
    let missing = json!({"result": "error", "msg": "Key does not exist.", "code": "BAD_REQUEST"});
    let (status, body) = bob.get("/bot_storage", &[("keys", r#"["count"]"#)]).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, missing.clone()));
    let (status, body) = bob
        .delete("/bot_storage", &[("keys", r#"["count"]"#)])
        .await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, missing));
    // Values must be text; the object is required.
    let (status, body) = alice
        .call(
            Method::PUT,
            "/bot_storage",
            &[("storage", r#"{"count": 2}"#)],
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("REQUEST_VARIABLE_INVALID"))
    );
    let (status, body) = alice.call(Method::PUT, "/bot_storage", &[]).await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("REQUEST_VARIABLE_MISSING"))
    );
    // Removal, then everything; the storage survives a restart.
    let (status, _) = alice
        .delete("/bot_storage", &[("keys", r#"["board"]"#)])
        .await;
    assert_eq!(status, StatusCode::OK);
    let creds = alice.creds.clone().unwrap();
    let server = c.server.stop().restart();
    let alice = server.api(Some(&creds));
    let (_, body) = alice.get("/bot_storage", &[]).await;
    assert_eq!(body["storage"], json!({"count": "1"}));
    let (status, _) = alice.delete("/bot_storage", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get("/bot_storage", &[]).await;
    assert_eq!(body["storage"], json!({}));
}

#[tokio::test]
async fn render_previews_without_storing() {
    let c = chat().await;
    let (bob_id, _) = c.bob;
    let (_, alice) = &c.alice;
    let (status, body) = alice
        .post("/messages/render", &[("content", "**hi** @**Bob Brown**")])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["rendered"],
        format!(
            "<p><strong>hi</strong> <span class=\"user-mention\" data-user-id=\"{bob_id}\">@Bob Brown</span></p>"
        )
    );
    // Rendered as a send renders: cut off past the longest message.
    let long = "word ".repeat(3000);
    let (status, body) = alice.post("/messages/render", &[("content", &long)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let rendered = body["rendered"].as_str().unwrap();
    assert!(
        rendered.ends_with("<br />\n[message truncated]</p>"),
        "{rendered:.300}"
    );
    // 10,000 characters less the 20 of "\n[message truncated]": 1,996 words of five.
    assert_eq!(rendered.matches("word").count(), 1996);
    let (status, body) = alice.post("/messages/render", &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "msg": "Missing 'content' argument",
                   "code": "REQUEST_VARIABLE_MISSING", "var_name": "content"})
        )
    );
    let (_, body) = alice
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
            ],
        )
        .await;
    assert_eq!(body["messages"], json!([]));
}

#[tokio::test]
async fn alert_words_flag_the_messages_that_contain_them() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let (queue, _) =
        crate::realtime::register(alice, &[("event_types", r#"["alert_words", "message"]"#)]).await;
    let (status, body) = alice
        .post(
            "/users/me/alert_words",
            &[("alert_words", r#"["Deploy", " on-call ", "", "deploy"]"#)],
        )
        .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "", "alert_words": ["Deploy", "on-call"]})
        )
    );
    let events = crate::realtime::drain(alice, &queue).await;
    assert_eq!(events[0]["alert_words"], json!(["Deploy", "on-call"]));
    let to = |content: &'static str| {
        [
            ("type", "stream"),
            ("to", "general"),
            ("topic", "ops"),
            ("content", content),
        ]
    };
    let hit = crate::messages::send(bob, &to("who is ON-CALL for the deploy?")).await;
    let miss = crate::messages::send(bob, &to("redeployed everything")).await;
    let events = crate::realtime::drain(alice, &queue).await;
    let flags: Vec<Value> = events.iter().map(|e| e["flags"].clone()).collect();
    assert_eq!(flags, vec![json!(["has_alert_word"]), json!([])]);
    let narrow = json!([{"operator": "is", "operand": "alerted"}]).to_string();
    let body = crate::messages::fetch(
        alice,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", &narrow),
        ],
    )
    .await;
    assert_eq!(crate::messages::ids(&body), vec![hit]);
    // An edit that drops the word drops the flag.
    let (status, _) = bob
        .call(
            Method::PATCH,
            &format!("/messages/{hit}"),
            &[("content", "nothing to see")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get(&format!("/messages/{hit}"), &[]).await;
    assert_eq!(body["message"]["flags"], json!([]));
    // Removal ignores case and unknown words; /register has the rest.
    let (_, body) = alice
        .delete(
            "/users/me/alert_words",
            &[("alert_words", r#"["DEPLOY", "never-added"]"#)],
        )
        .await;
    assert_eq!(body["alert_words"], json!(["on-call"]));
    let (_, body) = alice.get("/users/me/alert_words", &[]).await;
    assert_eq!(body["alert_words"], json!(["on-call"]));
    let (_, state) =
        crate::realtime::register(alice, &[("fetch_event_types", r#"["alert_words"]"#)]).await;
    assert_eq!(state["alert_words"], json!(["on-call"]));
    let long = format!(r#"["{}"]"#, "x".repeat(101));
    let (status, body) = alice
        .post("/users/me/alert_words", &[("alert_words", &long)])
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("alert_words[0] is too long (limit: 100 characters)")
        )
    );
    let _ = miss;
}

#[tokio::test]
async fn delete_topic_email_address_and_legacy_notification_settings() {
    let c = chat().await;
    let server = &c.server;
    let owner = server.api(Some(&server.owner()));
    let (_, alice) = &c.alice;
    let (_, carol) = &c.carol;
    let channel = c.channel;
    let to = |topic: &'static str| {
        [
            ("type", "stream"),
            ("to", "general"),
            ("topic", topic),
            ("content", "hello"),
        ]
    };
    let mut doomed = Vec::new();
    for _ in 0..3 {
        doomed.push(crate::messages::send(alice, &to("Doomed")).await);
    }
    let kept = crate::messages::send(alice, &to("kept")).await;
    let path = format!("/streams/{channel}/delete_topic");
    let (status, body) = alice.post(&path, &[("topic_name", "doomed")]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "msg": "Must be an organization administrator", "code": "BAD_REQUEST"})
        )
    );
    let (status, body) = owner.post(&path, &[("topic_name", "doomed")]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "", "complete": true})
        )
    );
    for id in doomed {
        let (status, _) = alice.get(&format!("/messages/{id}"), &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{id} still there");
    }
    let (status, _) = alice.get(&format!("/messages/{kept}"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = owner
        .post("/streams/999/delete_topic", &[("topic_name", "x")])
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Invalid channel ID"))
    );

    // No channel has an email address here; the error says why.
    let (status, body) = alice
        .get(&format!("/streams/{channel}/email_address"), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["msg"],
        "This server does not receive email, so channels have no email address."
    );
    let (status, body) = carol.get("/streams/999/email_address", &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Invalid channel ID"))
    );

    // The legacy notification settings endpoint changes the same settings.
    let (status, body) = alice
        .call(
            Method::PATCH,
            "/settings/notifications",
            &[("enable_sounds", "false")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, state) =
        crate::realtime::register(alice, &[("fetch_event_types", r#"["user_settings"]"#)]).await;
    assert_eq!(state["user_settings"]["enable_sounds"], false);
}

#[tokio::test]
async fn the_with_operator_follows_a_moved_message() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let (_, carol) = &c.carol;
    let to = |topic: &'static str, content: &'static str| {
        [
            ("type", "stream"),
            ("to", "general"),
            ("topic", topic),
            ("content", content),
        ]
    };
    let moved = crate::messages::send(alice, &to("draft", "this moves")).await;
    let stays = crate::messages::send(alice, &to("draft", "this stays")).await;
    let already = crate::messages::send(alice, &to("final", "already here")).await;
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{moved}"),
            &[("topic", "final"), ("propagate_mode", "change_one")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let query = |narrow: Value| {
        let narrow = narrow.to_string();
        async move {
            let params = [
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
                ("narrow", narrow.as_str()),
            ];
            crate::messages::ids(&crate::messages::fetch(bob, &params).await)
        }
    };
    // A link to the old topic still finds the message, in the topic it is in now.
    let old_link = json!([
        {"operator": "channel", "operand": c.channel},
        {"operator": "topic", "operand": "draft"},
        {"operator": "with", "operand": moved},
    ]);
    // (The third is the notification bot's "moved here" notice in the new topic.)
    let found = query(old_link).await;
    assert_eq!(&found[..2], &[moved, already], "{found:?}");
    assert!(!found.contains(&stays));
    // Direct messages: the conversation of the message.
    let dm = crate::messages::send(
        alice,
        &[
            ("type", "direct"),
            ("to", &format!("[{bob_id}]")),
            ("content", "psst"),
        ],
    )
    .await;
    let with_only = json!([{"operator": "with", "operand": dm.to_string()}]);
    assert_eq!(query(with_only).await, vec![dm]);
    // A message the viewer cannot read leaves the narrow as it was.
    let elsewhere = json!([
        {"operator": "channel", "operand": c.channel},
        {"operator": "topic", "operand": "draft"},
        {"operator": "with", "operand": 999_999},
    ]);
    assert_eq!(query(elsewhere).await, vec![stays]);
    // Errors.
    for (narrow, desc) in [
        (
            json!([{"operator": "with", "operand": 1}, {"operator": "with", "operand": 2}]),
            "Duplicate 'with' operators.",
        ),
        (
            json!([{"operator": "with", "operand": "first"}]),
            "Invalid 'with' operator",
        ),
    ] {
        let (status, body) = carol
            .get(
                "/messages",
                &[
                    ("anchor", "newest"),
                    ("num_before", "1"),
                    ("num_after", "0"),
                    ("narrow", &narrow.to_string()),
                ],
            )
            .await;
        assert_eq!(
            (status, body["code"].clone(), body["desc"].clone()),
            (StatusCode::BAD_REQUEST, json!("BAD_NARROW"), json!(desc))
        );
    }
}

#[tokio::test]
async fn a_bots_key_can_be_read_and_regenerated_by_its_owner() {
    let c = chat().await;
    let server = &c.server;
    let (_, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let (status, created) = alice
        .post(
            "/bots",
            &[("full_name", "Keyed Bot"), ("short_name", "keyed")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let bot_id = created["user_id"].as_u64().unwrap();
    let old_key = created["api_key"].as_str().unwrap().to_owned();
    let (_, body) = alice.get(&format!("/bots/{bot_id}/api_key"), &[]).await;
    assert_eq!(body["api_key"], old_key.as_str());
    let (queue, _) = crate::realtime::register(alice, &[("event_types", r#"["realm_bot"]"#)]).await;
    let path = format!("/bots/{bot_id}/api_key/regenerate");
    let (status, body) = bob.post(&path, &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "msg": "Insufficient permission", "code": "BAD_REQUEST"})
        )
    );
    let (status, body) = alice.post("/bots/99999/api_key/regenerate", &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("No such bot"))
    );
    let (status, body) = alice.post(&path, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let new_key = body["api_key"].as_str().unwrap().to_owned();
    assert_ne!(new_key, old_key);
    assert_eq!(new_key.len(), 32);
    let events = crate::realtime::drain(alice, &queue).await;
    assert_eq!(
        events[0]["bot"],
        json!({"user_id": bot_id, "api_key": new_key})
    );
    // The old key no longer works; the new one does.
    let email = created["email"].as_str().map(str::to_owned);
    let (_, me) = alice.get(&format!("/users/{bot_id}"), &[]).await;
    let email = email.unwrap_or_else(|| me["user"]["email"].as_str().unwrap().to_owned());
    let as_bot = |key: &str| {
        server.api(Some(&crate::support::Creds {
            email: email.clone(),
            key: key.to_owned(),
        }))
    };
    let (status, _) = as_bot(&old_key).get("/users/me", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = as_bot(&new_key).get("/users/me", &[]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn messages_by_id_come_once_each_in_id_order() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let channel = c.channel.to_string();
    let mut ids = Vec::new();
    for content in ["first", "second"] {
        let params = [
            ("type", "stream"),
            ("to", channel.as_str()),
            ("topic", "t"),
            ("content", content),
        ];
        ids.push(crate::messages::send(alice, &params).await);
    }
    let (first, second) = (ids[0], ids[1]);
    // Repeated, out of order, and an id that names nothing: each message once, by id.
    let asked = json!([second, first, second, first, second, 999_999]).to_string();
    let (status, body) = alice.get("/messages", &[("message_ids", &asked)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let got: Vec<&Value> = body["messages"].as_array().unwrap().iter().collect();
    assert_eq!(
        got.iter().map(|m| m["id"].clone()).collect::<Vec<_>>(),
        vec![json!(first), json!(second)]
    );
    // At most as many different ids as a range may ask for.
    let too_many = json!((1..=5001).collect::<Vec<u64>>()).to_string();
    let (status, body) = alice.get("/messages", &[("message_ids", &too_many)]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "msg": "Too many messages requested (maximum 5000).",
                   "code": "BAD_REQUEST"})
        )
    );
}

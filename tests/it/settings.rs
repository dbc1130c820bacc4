//! A user's own settings (`PATCH /settings`) with their `user_settings` events; settings the server acts on (typing, presence); the restart
//! announcement and re-registering after a restart; and what `/register` derives from messages
//! and topics for clients with and without `empty_topic_name`.

use crate::realtime::{drain, register};
use crate::support::{Api, Server};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn patch(api: &Api, params: &[(&str, &str)]) -> (StatusCode, Value) {
    api.call(Method::PATCH, "/settings", params).await
}

const SETTINGS_EVENTS: &str =
    r#"["user_settings","update_display_settings","update_global_notifications","typing"]"#;

#[tokio::test]
async fn settings_are_stored_announced_and_acted_on() {
    let server = Server::start();
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let (bob_id, bob) = server.create_member("bob@example.com", "Bob").await;
    let (alice, bob) = (server.api(Some(&alice)), server.api(Some(&bob)));
    let (modern, _) = register(
        &alice,
        &[
            ("event_types", SETTINGS_EVENTS),
            ("client_capabilities", r#"{"user_settings_object": true}"#),
        ],
    )
    .await;
    let (legacy, _) = register(&alice, &[("event_types", SETTINGS_EVENTS)]).await;

    let (status, body) = patch(
        &alice,
        &[
            ("twenty_four_hour_time", "true"),
            ("enable_sounds", "false"),
            ("web_font_size_px", "18"),
            ("emojiset", "text"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    let update = |name: &str, value: Value| json!({"type": "user_settings", "op": "update", "property": name, "value": value});
    let strip = |events: Vec<Value>| -> Vec<Value> {
        events
            .into_iter()
            .map(|mut e| {
                e.as_object_mut().unwrap().remove("id");
                e
            })
            .collect()
    };
    // In the table's order.
    let expected = vec![
        update("twenty_four_hour_time", json!(true)),
        update("emojiset", json!("text")),
        update("enable_sounds", json!(false)),
        update("web_font_size_px", json!(18)),
    ];
    assert_eq!(strip(drain(&alice, &modern).await), expected);
    // Zulip stopped sending the deprecated settings events at feature level 439: clients
    // without the settings object hear the same.
    assert_eq!(strip(drain(&alice, &legacy).await), expected);

    // Bad values are refused whole; the same value again changes nothing.
    for (params, msg) in [
        (vec![("color_scheme", "9")], "Invalid color_scheme"),
        (vec![("emojiset", "comic")], "Invalid emojiset"),
        (vec![("web_font_size_px", "40")], "Invalid web_font_size_px"),
        (vec![("dense_mode", "maybe")], "dense_mode is not a boolean"),
        (
            vec![("desktop_icon_count_display", "5")],
            "Invalid desktop_icon_count_display",
        ),
        (
            vec![("enter_sends", "true"), ("color_scheme", "9")],
            "Invalid color_scheme",
        ),
    ] {
        let (status, body) = patch(&alice, &params).await;
        assert_eq!((status.as_u16(), body["msg"].as_str().unwrap()), (400, msg));
    }
    let (status, _) = patch(&alice, &[("twenty_four_hour_time", "true")]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(drain(&alice, &modern).await.is_empty());
    // Zulip 8's four choices for the unread count on the icon (4: none).
    let (status, _) = patch(&alice, &[("desktop_icon_count_display", "4")]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        strip(drain(&alice, &modern).await),
        vec![update("desktop_icon_count_display", json!(4))]
    );

    // `/register`: the object for capable clients, the top level too for older ones.
    let (_, state) = register(
        &alice,
        &[
            ("fetch_event_types", r#"["user_settings"]"#),
            ("client_capabilities", r#"{"user_settings_object": true}"#),
        ],
    )
    .await;
    assert_eq!(state["user_settings"]["twenty_four_hour_time"], true);
    assert_eq!(state["user_settings"]["enter_sends"], false);
    assert!(state.get("twenty_four_hour_time").is_none());
    let (_, state) = register(&alice, &[("fetch_event_types", r#"["user_settings"]"#)]).await;
    assert_eq!(state["twenty_four_hour_time"], true);
    assert_eq!(state["emojiset"], "text");

    // Settings the server acts on: typing notifications and invisible mode.
    let (status, _) = patch(&alice, &[("receives_typing_notifications", "false")]).await;
    assert_eq!(status, StatusCode::OK);
    drain(&alice, &modern).await;
    bob.post(
        "/typing",
        &[("op", "start"), ("to", &format!("[{alice_id}]"))],
    )
    .await;
    assert!(drain(&alice, &modern).await.is_empty());
    let (status, _) = patch(&alice, &[("presence_enabled", "false")]).await;
    assert_eq!(status, StatusCode::OK);
    alice
        .post("/users/me/presence", &[("status", "active")])
        .await;
    let (_, seen) = bob
        .post(
            "/users/me/presence",
            &[("status", "active"), ("last_update_id", "-1")],
        )
        .await;
    let ids: Vec<&String> = seen["presences"].as_object().unwrap().keys().collect();
    assert_eq!(ids, vec![&bob_id.to_string()], "{seen}");
    let (status, body) = bob.get(&format!("/users/{alice_id}/presence"), &[]).await;
    assert_eq!(
        (status.as_u16(), body["msg"].clone()),
        (400, json!(format!("No presence data for {alice_id}")))
    );
    // Turning one's own typing notifications off is refused, as in Zulip.
    for (setting, params, kind) in [
        (
            "send_private_typing_notifications",
            vec![("op", "start"), ("to", "[1]")],
            "direct",
        ),
        (
            "send_stream_typing_notifications",
            vec![
                ("type", "channel"),
                ("op", "start"),
                ("stream_id", "1"),
                ("topic", "x"),
            ],
            "channel",
        ),
    ] {
        let (status, _) = patch(&alice, &[(setting, "false")]).await;
        assert_eq!(status, StatusCode::OK);
        let (status, body) = alice.post("/typing", &params).await;
        assert_eq!(
            (status.as_u16(), body["msg"].as_str().unwrap()),
            (
                400,
                format!("User has disabled typing notifications for {kind} messages").as_str()
            )
        );
    }
}

#[tokio::test]
async fn clients_hear_of_a_restart_and_register_again() {
    let server = Server::start_observed();
    let (_, alice) = server.create_member("alice@example.com", "Alice").await;
    let creds = alice.clone();
    let alice = server.api(Some(&alice));
    let (queue, _) = register(&alice, &[("event_types", r#"["message"]"#)]).await;
    let poll = {
        let api = server.api(Some(&creds));
        let queue = queue.clone();
        tokio::spawn(async move {
            api.get("/events", &[("queue_id", &queue), ("last_event_id", "-1")])
                .await
        })
    };
    // Once the poll is parked, the server is stopped as an operator would (SIGTERM).
    server.wait_parked(1).await;
    let stopped = tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
    let (status, body) = poll.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let event = &body["events"][0];
    assert_eq!(event["type"], "restart");
    assert_eq!(event["immediate"], true);
    assert_eq!(event["zulip_feature_level"], 478);
    assert!(event["server_generation"].as_i64().unwrap() > 0);

    // The queue is gone with the old process: Zulip's error, then a clean re-registration.
    let server = stopped.restart();
    let alice = server.api(Some(&creds));
    let (status, body) = alice
        .get("/events", &[("queue_id", &queue), ("last_event_id", "0")])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "BAD_EVENT_QUEUE_ID");
    assert_eq!(body["queue_id"], queue.as_str());
    let (fresh, _) = register(&alice, &[("event_types", r#"["message"]"#)]).await;
    assert_ne!(fresh, queue);
    let (status, body) = alice
        .get(
            "/events",
            &[
                ("queue_id", &fresh),
                ("last_event_id", "-1"),
                ("dont_block", "true"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn conversations_and_the_empty_topic_in_state_and_events() {
    let chat = crate::messages::chat().await;
    let (alice_id, alice) = &chat.alice;
    let (bob_id, bob) = &chat.bob;
    let dm = |to: String, content: &'static str| {
        [
            ("type", "direct".to_owned()),
            ("to", to),
            ("content", content.to_owned()),
        ]
    };
    let send = |params: [(&'static str, String); 3]| async move {
        let pairs: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        crate::messages::send(alice, &pairs).await
    };
    let first = send(dm(format!("[{bob_id}]"), "hi")).await;
    let own = send(dm(format!("[{alice_id}]"), "note to self")).await;
    let (_, state) = register(
        alice,
        &[("fetch_event_types", r#"["recent_private_conversations"]"#)],
    )
    .await;
    assert_eq!(
        state["recent_private_conversations"],
        json!([
            {"max_message_id": own, "user_ids": []},
            {"max_message_id": first, "user_ids": [bob_id]},
        ])
    );

    // A message moved into the empty topic, and a policy on it: shown by its display name,
    // unless the client handles the empty topic.
    let id = crate::messages::send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "lunch"),
            ("content", "x"),
        ],
    )
    .await;
    let types = ("event_types", r#"["update_message","user_topic"]"#);
    let (plain, _) = register(bob, &[types]).await;
    let (raw, _) = register(
        bob,
        &[
            types,
            ("client_capabilities", r#"{"empty_topic_name": true}"#),
        ],
    )
    .await;
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{id}"),
            &[
                ("topic", ""),
                ("propagate_mode", "change_one"),
                ("send_notification_to_new_thread", "false"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = bob
        .post(
            "/user_topics",
            &[
                ("stream_id", &chat.channel.to_string()),
                ("topic", ""),
                ("visibility_policy", "1"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let shown = |events: &[Value]| {
        (
            events[0]["subject"].clone(),
            events[0]["orig_subject"].clone(),
            events[1]["topic_name"].clone(),
        )
    };
    assert_eq!(
        shown(&drain(bob, &plain).await),
        (json!("general chat"), json!("lunch"), json!("general chat"))
    );
    assert_eq!(
        shown(&drain(bob, &raw).await),
        (json!(""), json!("lunch"), json!(""))
    );
    for (caps, topic) in [
        ("{}", "general chat"),
        (r#"{"empty_topic_name": true}"#, ""),
    ] {
        let (_, state) = register(
            bob,
            &[
                (
                    "fetch_event_types",
                    r#"["user_topic","message","update_message_flags"]"#,
                ),
                ("client_capabilities", caps),
            ],
        )
        .await;
        assert_eq!(state["user_topics"][0]["topic_name"], topic, "{state}");
        assert_eq!(
            state["unread_msgs"]["streams"][0]["topic"], topic,
            "{state}"
        );
    }
}

#[tokio::test]
async fn capabilities_shape_subscriptions_and_group_events() {
    let chat = crate::messages::chat().await;
    let (alice_id, alice) = &chat.alice;
    let sub_fetch = ("fetch_event_types", r#"["subscription","realm"]"#);
    let desktop = |state: &Value| state["subscriptions"][0]["desktop_notifications"].clone();
    let (_, modern) = register(
        alice,
        &[
            sub_fetch,
            (
                "client_capabilities",
                r#"{"notification_settings_null": true}"#,
            ),
        ],
    )
    .await;
    assert_eq!(desktop(&modern), Value::Null);
    let (_, old) = register(alice, &[sub_fetch]).await;
    assert_eq!(desktop(&old), false);
    let (status, _) = patch(alice, &[("enable_stream_desktop_notifications", "true")]).await;
    assert_eq!(status, StatusCode::OK);
    let (_, old) = register(alice, &[sub_fetch]).await;
    assert_eq!(desktop(&old), true);
    // The realm's limits and permission settings that clients read.
    assert_eq!(old["max_emoji_file_size_mib"], 5);
    assert_eq!(
        old["server_supported_permission_settings"]["realm"]["can_add_custom_emoji_group"]
            ["default_group_name"],
        "role:members"
    );
    assert_eq!(
        old["server_supported_permission_settings"]["stream"]["can_send_message_group"]
            ["allow_everyone_group"],
        true
    );

    // A deactivated group: an update for clients that list deactivated groups, a removal for
    // the others.
    let types = ("event_types", r#"["user_group"]"#);
    let (with, _) = register(
        alice,
        &[
            types,
            (
                "client_capabilities",
                r#"{"include_deactivated_groups": true}"#,
            ),
        ],
    )
    .await;
    let (without, _) = register(alice, &[types]).await;
    let (status, body) = alice
        .post(
            "/user_groups/create",
            &[
                ("name", "lunchers"),
                ("description", "who eats"),
                ("members", &format!("[{alice_id}]")),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let group_id = body["group_id"].as_u64().unwrap();
    let (status, body) = alice
        .post(&format!("/user_groups/{group_id}/deactivate"), &[])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let got = drain(alice, &with).await;
    assert_eq!(got[1]["op"], "update");
    assert_eq!(got[1]["data"], json!({"deactivated": true}));
    let got = drain(alice, &without).await;
    assert_eq!(got[0]["op"], "add");
    assert_eq!(
        got[1],
        json!({"type": "user_group", "op": "remove", "group_id": group_id, "id": 1})
    );
}

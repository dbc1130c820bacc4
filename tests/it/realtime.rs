//! `/register`, `/events`, and which client events each user receives.

use crate::support::{Api, Creds, Server};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub async fn register(api: &Api, params: &[(&str, &str)]) -> (String, Value) {
    let (status, body) = api.post("/register", params).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (body["queue_id"].as_str().unwrap().to_owned(), body)
}

/// Everything queued so far (without waiting), acknowledging it.
pub async fn drain(api: &Api, queue: &str) -> Vec<Value> {
    let (status, body) = api
        .get("/events", &[("queue_id", queue), ("dont_block", "true")])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let events = body["events"].as_array().unwrap().clone();
    if let Some(last) = events.last() {
        let last = last["id"].to_string();
        api.get(
            "/events",
            &[
                ("queue_id", queue),
                ("last_event_id", &last),
                ("dont_block", "true"),
            ],
        )
        .await;
    }
    events
}

pub fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["type"].as_str().unwrap(),
                e["op"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test]
async fn register_returns_the_state_clients_read() {
    let server = Server::start();
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let api = server.api(Some(&alice));
    let (_, body) = register(&api, &[]).await;
    for key in [
        "queue_id",
        "last_event_id",
        "zulip_version",
        "zulip_feature_level",
        "zulip_merge_base",
        "max_message_id",
        "user_id",
        "email",
        "full_name",
        "realm_name",
        "subscriptions",
        "unsubscribed",
        "never_subscribed",
        "realm_users",
        "realm_non_active_users",
        "cross_realm_bots",
        "presences",
        "realm_user_groups",
        "realm_emoji",
        "custom_profile_fields",
        "muted_topics",
        "user_topics",
        "realm_message_retention_days",
        "user_settings",
        "twenty_four_hour_time",
        "pm_content_in_desktop_notifications",
        "unread_msgs",
        "starred_messages",
        "channel_folders",
        "realm_default_streams",
        "realm_default_stream_groups",
        "realm_empty_topic_display_name",
        "max_topic_length",
        "server_typing_started_expiry_period_milliseconds",
        "event_queue_longpoll_timeout_seconds",
        "realm_linkifiers",
        "recent_private_conversations",
    ] {
        assert!(body.get(key).is_some(), "register lacks {key}");
    }
    assert_eq!(body["last_event_id"], -1);
    assert_eq!(body["user_id"], alice_id);
    assert_eq!(body["max_message_id"], -1);
    assert_eq!(body["realm_empty_topic_display_name"], "general chat");
    assert_eq!(body["event_queue_longpoll_timeout_seconds"], 90);
    // A member does not see the owner's real address (organization default: admins only).
    let owner = body["realm_users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["user_id"] == 1)
        .unwrap()
        .clone();
    assert_eq!(owner["delivery_email"], Value::Null);
    assert_eq!(owner["email"], "user1@chronicle.invalid");
    assert!(owner.get("is_active").is_none());
    // fetch_event_types narrows the state; event_types alone narrows both.
    let (_, body) = register(&api, &[("fetch_event_types", r#"["realm_user"]"#)]).await;
    assert!(body.get("realm_users").is_some() && body.get("subscriptions").is_none());
    let (_, body) = register(&api, &[("event_types", r#"["subscription"]"#)]).await;
    assert!(body.get("subscriptions").is_some() && body.get("realm_users").is_none());
    // The owner sees real addresses.
    let (_, body) = register(
        &server.api(Some(&server.owner())),
        &[("fetch_event_types", r#"["realm_user"]"#)],
    )
    .await;
    let alice_seen = body["realm_users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["user_id"] == alice_id)
        .unwrap()
        .clone();
    assert_eq!(alice_seen["delivery_email"], "alice@example.com");
}

#[tokio::test]
async fn each_user_gets_exactly_the_events_meant_for_them() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let (bob_id, bob) = server.create_member("bob@example.com", "Bob").await;
    let (alice_api, bob_api) = (server.api(Some(&alice)), server.api(Some(&bob)));
    let (qa, _) = register(&alice_api, &[]).await;
    let (qb, _) = register(&bob_api, &[]).await;
    let (qo, _) = register(&owner, &[("event_types", r#"["subscription"]"#)]).await;

    // A public channel with Alice subscribed.
    let (_, body) = owner
        .post(
            "/channels/create",
            &[
                ("name", "general"),
                ("subscribers", &format!("[{alice_id}]")),
            ],
        )
        .await;
    let general = body["id"].as_u64().unwrap();
    let a = drain(&alice_api, &qa).await;
    assert_eq!(kinds(&a), vec!["stream:create", "subscription:add"]);
    assert_eq!(a[0]["streams"][0]["name"], "general");
    assert_eq!(a[1]["subscriptions"][0]["stream_id"], general);
    assert_eq!(a[1]["subscriptions"][0]["subscribers"], json!([alice_id]));
    assert_eq!(
        (a[0]["id"].clone(), a[1]["id"].clone()),
        (json!(0), json!(1))
    );
    let b = drain(&bob_api, &qb).await;
    assert_eq!(kinds(&b), vec!["stream:create", "subscription:peer_add"]);
    assert_eq!(
        b[1],
        json!({"type":"subscription","op":"peer_add","stream_ids":[general],"user_ids":[alice_id],"id":1})
    );
    // The owner's queue asked for subscription events only.
    assert_eq!(
        kinds(&drain(&owner, &qo).await),
        vec!["subscription:peer_add"]
    );

    // A private channel: Bob, outside it, hears nothing.
    owner
        .post(
            "/channels/create",
            &[
                ("name", "secret"),
                ("invite_only", "true"),
                ("subscribers", &format!("[{alice_id}]")),
            ],
        )
        .await;
    assert_eq!(
        kinds(&drain(&alice_api, &qa).await),
        vec!["stream:create", "subscription:add"]
    );
    assert!(drain(&bob_api, &qb).await.is_empty());

    // Muting sends the legacy property first, only to the user.
    alice_api
        .call(
            Method::PATCH,
            &format!("/users/me/subscriptions/{general}"),
            &[("property", "is_muted"), ("value", "true")],
        )
        .await;
    let a = drain(&alice_api, &qa).await;
    let updates: Vec<(Value, Value)> = a
        .iter()
        .map(|e| (e["property"].clone(), e["value"].clone()))
        .collect();
    assert_eq!(
        updates,
        vec![
            (json!("in_home_view"), json!(false)),
            (json!("is_muted"), json!(true))
        ]
    );
    assert!(drain(&bob_api, &qb).await.is_empty());

    // Topic visibility: queues that know `user_topic` do not get the legacy event.
    let (q_new, _) = register(
        &alice_api,
        &[("event_types", r#"["user_topic","muted_topics"]"#)],
    )
    .await;
    let (q_old, _) = register(&alice_api, &[("event_types", r#"["muted_topics"]"#)]).await;
    alice_api
        .post(
            "/user_topics",
            &[
                ("stream_id", &general.to_string()),
                ("topic", "lunch"),
                ("visibility_policy", "1"),
            ],
        )
        .await;
    let new = drain(&alice_api, &q_new).await;
    assert_eq!(kinds(&new), vec!["user_topic:"]);
    assert_eq!(new[0]["topic_name"], "lunch");
    assert_eq!(new[0]["visibility_policy"], 1);
    let old = drain(&alice_api, &q_old).await;
    assert_eq!(old[0]["muted_topics"][0][0], "general");
    assert_eq!(old[0]["muted_topics"][0][1], "lunch");

    // A message in the private channel reaches only its subscriber; a direct message, its
    // reactions and typing reach both participants; the owner's queue hears none of it.
    // (Alice's first queue took every type, the topic events above included; administrators
    // hear of the private channel's subscribers.)
    assert_eq!(
        kinds(&drain(&alice_api, &qa).await),
        vec!["muted_topics:", "user_topic:"]
    );
    assert_eq!(
        kinds(&drain(&owner, &qo).await),
        vec!["subscription:peer_add"]
    );
    let (_, sent) = alice_api
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "secret"),
                ("topic", "plans"),
                ("content", "shh"),
            ],
        )
        .await;
    let a = drain(&alice_api, &qa).await;
    // The channel's first message: its `first_message_id` is announced, as Zulip does.
    assert_eq!(kinds(&a), vec!["message:", "stream:update"]);
    assert_eq!(a[0]["message"]["id"], sent["id"]);
    assert_eq!(a[0]["flags"], json!(["read"]));
    assert_eq!(a[1]["property"], "first_message_id");
    assert_eq!(a[1]["value"], sent["id"]);
    assert_eq!(a[1]["name"], "secret");
    assert!(drain(&bob_api, &qb).await.is_empty());
    let (_, dm) = alice_api
        .post(
            "/messages",
            &[
                ("type", "direct"),
                ("to", &format!("[{bob_id}]")),
                ("content", "hi"),
            ],
        )
        .await;
    let dm_id = dm["id"].as_u64().unwrap();
    bob_api
        .post(
            &format!("/messages/{dm_id}/reactions"),
            &[("emoji_name", "octopus")],
        )
        .await;
    bob_api
        .post(
            "/typing",
            &[("op", "start"), ("to", &format!("[{alice_id}]"))],
        )
        .await;
    let expected = vec!["message:", "reaction:add", "typing:start"];
    let a = drain(&alice_api, &qa).await;
    assert_eq!(kinds(&a), expected);
    assert_eq!(a[0]["flags"], json!(["read"]));
    let b = drain(&bob_api, &qb).await;
    assert_eq!(kinds(&b), expected);
    assert_eq!(b[0]["flags"], json!([]));
    assert_eq!(
        (
            b[1]["message_id"].clone(),
            b[1]["user_id"].clone(),
            b[1]["emoji_code"].clone()
        ),
        (json!(dm_id), json!(bob_id), json!("1f419"))
    );
    assert!(drain(&owner, &qo).await.is_empty());

    // Editing a message: `typing_edit_message` to the conversation's participants, only to
    // queues that asked for it (all event types here).
    let (status, body) = bob_api
        .post(&format!("/messages/{dm_id}/typing"), &[("op", "start")])
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let mut ids = [alice_id, bob_id];
    ids.sort_unstable();
    for (api, queue) in [(&alice_api, &qa), (&bob_api, &qb)] {
        let events = drain(api, queue).await;
        assert_eq!(events.len(), 1, "{events:?}");
        let mut event = events[0].clone();
        event.as_object_mut().unwrap().remove("id");
        assert_eq!(
            event,
            json!({"type": "typing_edit_message", "op": "start", "sender_id": bob_id,
                   "message_id": dm_id, "recipient": {"type": "direct", "user_ids": ids}})
        );
    }
    assert!(drain(&owner, &qo).await.is_empty());
    let (status, body) = owner
        .post(&format!("/messages/{dm_id}/typing"), &[("op", "start")])
        .await;
    assert_eq!(
        (status.as_u16(), body["msg"].clone()),
        (400, json!("Invalid message(s)"))
    );
    let (status, body) = bob_api
        .post(&format!("/messages/{dm_id}/typing"), &[("op", "begin")])
        .await;
    assert_eq!(status.as_u16(), 400, "{body}");

    // Unsubscribing: remove for Bob, peer_remove for the others.
    bob_api
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name":"general"}]"#)],
        )
        .await;
    drain(&alice_api, &qa).await;
    drain(&bob_api, &qb).await;
    bob_api
        .delete(
            "/users/me/subscriptions",
            &[("subscriptions", r#"["general"]"#)],
        )
        .await;
    let b = drain(&bob_api, &qb).await;
    assert_eq!(b[0]["op"], "remove");
    assert_eq!(
        b[0]["subscriptions"],
        json!([{"name": "general", "stream_id": general}])
    );
    let a = drain(&alice_api, &qa).await;
    assert_eq!(a[0]["op"], "peer_remove");
    assert_eq!(a[0]["user_ids"], json!([bob_id]));

    // Users, groups and folders reach everyone.
    let (carol_id, _) = server.create_member("carol@example.com", "Carol").await;
    let a = drain(&alice_api, &qa).await;
    // With the system groups a member joins (members, full members).
    assert_eq!(
        kinds(&a),
        vec![
            "realm_user:add",
            "user_group:add_members",
            "user_group:add_members"
        ]
    );
    assert_eq!(a[1]["user_ids"], json!([carol_id]));
    assert_eq!(a[0]["person"]["user_id"], carol_id);
    assert_eq!(a[0]["person"]["delivery_email"], Value::Null);
    owner
        .call(
            Method::PATCH,
            &format!("/users/{carol_id}"),
            &[("full_name", "Caroline")],
        )
        .await;
    let a = drain(&alice_api, &qa).await;
    assert_eq!(
        a[0]["person"],
        json!({"full_name": "Caroline", "user_id": carol_id})
    );
    assert_eq!(
        kinds(&drain(&bob_api, &qb).await),
        vec![
            "realm_user:add",
            "user_group:add_members",
            "user_group:add_members",
            "realm_user:update"
        ]
    );
    owner
        .post(
            "/channel_folders/create",
            &[("name", "Work"), ("description", "")],
        )
        .await;
    let b = drain(&bob_api, &qb).await;
    assert_eq!(kinds(&b), vec!["channel_folder:add"]);
    assert_eq!(b[0]["channel_folder"]["name"], "Work");
}

#[tokio::test]
async fn queue_errors_pruning_and_deletion() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (_, alice) = server.create_member("alice@example.com", "Alice").await;
    let alice_api = server.api(Some(&alice));
    let (status, body) = owner
        .get("/events", &[("queue_id", "nope"), ("dont_block", "true")])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"result":"error","msg":"Bad event queue ID: nope","code":"BAD_EVENT_QUEUE_ID","queue_id":"nope"})
    );
    let (_, body) = owner.get("/events", &[]).await;
    assert_eq!(body["code"], "REQUEST_VARIABLE_MISSING");
    let (queue, _) = register(&owner, &[]).await;
    // Another user's queue is not theirs to read.
    let (_, body) = alice_api
        .get("/events", &[("queue_id", &queue), ("dont_block", "true")])
        .await;
    assert_eq!(body["code"], "BAD_EVENT_QUEUE_ID");
    let (_, body) = owner
        .get("/events", &[("queue_id", &queue), ("dont_block", "true")])
        .await;
    assert_eq!(body["events"], json!([]));
    owner
        .post(
            "/channel_folders/create",
            &[("name", "A"), ("description", "")],
        )
        .await;
    owner
        .post(
            "/channel_folders/create",
            &[("name", "B"), ("description", "")],
        )
        .await;
    let (_, body) = owner
        .get(
            "/events",
            &[
                ("queue_id", &queue),
                ("last_event_id", "0"),
                ("dont_block", "true"),
            ],
        )
        .await;
    let ids: Vec<i64> = body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![1], "event 0 was acknowledged and pruned");
    let (_, body) = owner
        .get(
            "/events",
            &[
                ("queue_id", &queue),
                ("last_event_id", "9"),
                ("dont_block", "true"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Event 9 was not in this queue");
    let (status, _) = owner.delete("/events", &[("queue_id", &queue)]).await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = owner
        .get("/events", &[("queue_id", &queue), ("dont_block", "true")])
        .await;
    assert_eq!(body["code"], "BAD_EVENT_QUEUE_ID");
    assert_eq!(
        owner.delete("/events", &[("queue_id", &queue)]).await.1["code"],
        "BAD_EVENT_QUEUE_ID"
    );

    // Queues live in memory: after a restart the client is told to re-register.
    let (queue, _) = register(&owner, &[]).await;
    let creds: Creds = server.owner();
    let server = server.stop().restart();
    let (status, body) = server
        .api(Some(&creds))
        .get("/events", &[("queue_id", &queue), ("dont_block", "true")])
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("BAD_EVENT_QUEUE_ID"))
    );
}

#[tokio::test]
async fn long_polls_wake_on_events_and_send_heartbeats() {
    let server = Server::start_with(&["--heartbeat-secs", "1"]);
    let owner = server.api(Some(&server.owner()));
    let (queue, _) = register(&owner, &[]).await;
    // Nothing happens: a heartbeat after about a second.
    let started = Instant::now();
    let (_, body) = owner
        .get("/events", &[("queue_id", &queue), ("last_event_id", "-1")])
        .await;
    assert_eq!(body["events"][0]["type"], "heartbeat");
    assert!(started.elapsed() >= Duration::from_millis(900));
    let heartbeat_id = body["events"][0]["id"].to_string();
    // A parked poll returns as soon as an event is committed.
    let poller = {
        let api = server.api(Some(&server.owner()));
        let queue = queue.clone();
        tokio::spawn(async move {
            api.get(
                "/events",
                &[("queue_id", &queue), ("last_event_id", &heartbeat_id)],
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    owner
        .post(
            "/channel_folders/create",
            &[("name", "Now"), ("description", "")],
        )
        .await;
    let (_, body) = tokio::time::timeout(Duration::from_secs(5), poller)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body["events"][0]["type"], "channel_folder");
}

#[tokio::test]
async fn typing_notifications() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let (bob_id, bob) = server.create_member("bob@example.com", "Bob").await;
    let (_, carol) = server.create_member("carol@example.com", "Carol").await;
    let (alice_api, bob_api, carol_api) = (
        server.api(Some(&alice)),
        server.api(Some(&bob)),
        server.api(Some(&carol)),
    );
    let (qa, _) = register(&alice_api, &[("event_types", r#"["typing"]"#)]).await;
    let (qb, _) = register(
        &bob_api,
        &[
            ("event_types", r#"["typing"]"#),
            (
                "client_capabilities",
                r#"{"stream_typing_notifications": true}"#,
            ),
        ],
    )
    .await;
    let (qc, _) = register(&carol_api, &[("event_types", r#"["typing"]"#)]).await;

    // Direct: every participant, the typist included, with sender and recipients.
    let (status, body) = alice_api
        .post(
            "/typing",
            &[("op", "start"), ("to", &format!("[{bob_id}]"))],
        )
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"result": "success", "msg": ""}))
    );
    let b = drain(&bob_api, &qb).await;
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["op"], "start");
    assert_eq!(b[0]["message_type"], "direct");
    assert_eq!(b[0]["sender"]["user_id"], alice_id);
    let recipients: Vec<u64> = b[0]["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["user_id"].as_u64().unwrap())
        .collect();
    assert_eq!(recipients, vec![alice_id, bob_id]);
    assert_eq!(drain(&alice_api, &qa).await.len(), 1);
    assert!(drain(&carol_api, &qc).await.is_empty());
    alice_api
        .post("/typing", &[("op", "stop"), ("to", &format!("[{bob_id}]"))])
        .await;
    assert_eq!(drain(&bob_api, &qb).await[0]["op"], "stop");
    assert_eq!(drain(&alice_api, &qa).await[0]["op"], "stop");

    // Channel typing: to the subscribers (the typist included, as Zulip) whose client
    // handles it.
    let (qa_streams, _) = register(
        &alice_api,
        &[
            ("event_types", r#"["typing"]"#),
            (
                "client_capabilities",
                r#"{"stream_typing_notifications": true}"#,
            ),
        ],
    )
    .await;
    let (_, body) = owner
        .post(
            "/channels/create",
            &[
                ("name", "general"),
                ("subscribers", &format!("[{alice_id}, {bob_id}]")),
            ],
        )
        .await;
    let channel = body["id"].as_u64().unwrap().to_string();
    alice_api
        .post(
            "/typing",
            &[
                ("type", "channel"),
                ("op", "start"),
                ("stream_id", &channel),
                ("topic", "lunch"),
            ],
        )
        .await;
    let b = drain(&bob_api, &qb).await;
    assert_eq!(b[0]["message_type"], "stream");
    assert_eq!(b[0]["topic"], "lunch");
    assert_eq!(b[0]["stream_id"].to_string(), channel);
    assert!(b[0].get("_raw_topic").is_none());
    assert!(
        drain(&alice_api, &qa).await.is_empty(),
        "no capability, no channel typing"
    );
    assert_eq!(
        kinds(&drain(&alice_api, &qa_streams).await),
        ["typing:start"]
    );

    // Errors.
    let (_, body) = alice_api
        .post(
            "/typing",
            &[("type", "channel"), ("op", "start"), ("topic", "x")],
        )
        .await;
    assert_eq!(
        body,
        json!({"result":"error","msg":"Missing 'stream_id' argument","code":"BAD_REQUEST"})
    );
    let (_, body) = alice_api.post("/typing", &[("op", "start")]).await;
    assert_eq!(body["var_name"], "to");
    let (_, body) = alice_api
        .post("/typing", &[("op", "start"), ("to", "[]")])
        .await;
    assert_eq!(body["msg"], "Empty 'to' list");
    let (_, body) = alice_api
        .post("/typing", &[("op", "start"), ("to", "[999]")])
        .await;
    assert_eq!(body["msg"], "Invalid user ID 999");
    let (_, body) = alice_api
        .post(
            "/typing",
            &[("type", "private"), ("op", "start"), ("to", "[2]")],
        )
        .await;
    assert_eq!(body["code"], "REQUEST_VARIABLE_INVALID");
    let (_, body) = alice_api
        .post("/typing", &[("op", "typing"), ("to", "[2]")])
        .await;
    assert_eq!(body["code"], "REQUEST_VARIABLE_INVALID");

    // Typing is in the audit log and in the projection.
    let (_, dump) = owner.get("/admin/projections", &[]).await;
    assert_eq!(
        dump["projections"]["typing"].as_array().unwrap().len(),
        1,
        "the channel start is alive, the direct one stopped"
    );
    let (_, events) = owner
        .get("/admin/events", &[("after_seq", "0"), ("limit", "1000")])
        .await;
    let typing: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| t.starts_with("Typing"))
        .collect();
    assert_eq!(
        typing,
        vec!["TypingStarted", "TypingStopped", "TypingStarted"]
    );
}

#[tokio::test]
async fn narrowed_queues_and_all_public_streams() {
    let chat = crate::messages::chat().await;
    let (_, alice) = &chat.alice;
    let (_, bob) = &chat.bob;
    let (_, carol) = &chat.carol;
    let (narrowed, _) = register(
        bob,
        &[
            ("event_types", r#"["message"]"#),
            ("narrow", r#"[["topic", "a"]]"#),
        ],
    )
    .await;
    let (everything, _) = register(
        carol,
        &[
            ("event_types", r#"["message"]"#),
            ("all_public_streams", "true"),
        ],
    )
    .await;
    let (mine_only, _) = register(carol, &[("event_types", r#"["message"]"#)]).await;
    let channel = chat.channel.to_string();
    for topic in ["a", "b"] {
        crate::messages::send(
            alice,
            &[
                ("type", "stream"),
                ("to", &channel),
                ("topic", topic),
                ("content", topic),
            ],
        )
        .await;
    }
    let topics = |events: Vec<Value>| -> Vec<String> {
        events
            .iter()
            .map(|e| e["message"]["subject"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(topics(drain(bob, &narrowed).await), vec!["a"]);
    assert_eq!(topics(drain(carol, &everything).await), vec!["a", "b"]);
    assert!(drain(carol, &mine_only).await.is_empty());

    // A narrow the server cannot apply is refused at registration.
    let (status, body) = bob
        .post("/register", &[("narrow", r#"[["bogus", "x"]]"#)])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "BAD_NARROW");
}

/// One message to a channel reaches each of its recipients' queues with the addresses that
/// recipient may see and in the form the queue asked for (HTML, or the Markdown source):
/// recipients who see it alike are given one shared text, written once.
#[tokio::test]
async fn a_message_event_shows_each_recipient_its_own_view() {
    let chat = crate::messages::chat().await;
    let (alice_id, alice) = &chat.alice;
    let (_, bob) = &chat.bob;
    let owner = chat.server.api(Some(&chat.server.owner()));
    // Real addresses for administrators only.
    let (status, body) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[("email_address_visibility", "3")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = owner
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name": "general"}]"#)],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let asking = |apply_markdown: &'static str| {
        [
            ("event_types", r#"["message"]"#),
            ("apply_markdown", apply_markdown),
        ]
    };
    let (owner_html, _) = register(&owner, &asking("true")).await;
    let (owner_source, _) = register(&owner, &asking("false")).await;
    let (bob_html, _) = register(bob, &asking("true")).await;
    let (bob_source, _) = register(bob, &asking("false")).await;
    let (alice_source, _) = register(alice, &asking("false")).await;
    let channel = chat.channel.to_string();
    let id = crate::messages::send(
        alice,
        &[
            ("type", "stream"),
            ("to", &channel),
            ("topic", "plans"),
            ("content", "**soon**"),
        ],
    )
    .await;
    let hidden = format!("user{alice_id}@");
    for (who, api, queue, sees_address, html) in [
        ("owner", &owner, &owner_html, true, true),
        ("owner", &owner, &owner_source, true, false),
        ("bob", bob, &bob_html, false, true),
        ("bob", bob, &bob_source, false, false),
        ("alice", alice, &alice_source, true, false),
    ] {
        let events = drain(api, queue).await;
        assert_eq!(kinds(&events), ["message:"], "{who}: {events:?}");
        let message = &events[0]["message"];
        let shown = (
            message["id"].as_u64(),
            message["sender_id"].as_u64(),
            message["content"].as_str(),
            message["content_type"].as_str(),
            message["subject"].as_str(),
        );
        let expected = if html {
            ("<p><strong>soon</strong></p>", "text/html")
        } else {
            ("**soon**", "text/x-markdown")
        };
        assert_eq!(
            shown,
            (
                Some(id),
                Some(*alice_id),
                Some(expected.0),
                Some(expected.1),
                Some("plans")
            ),
            "{who}"
        );
        let address = message["sender_email"].as_str().unwrap();
        if sees_address {
            assert_eq!(address, "alice@example.com", "{who}");
        } else {
            assert!(address.starts_with(&hidden), "{who}: {address}");
        }
        // Each event is one object with one of each key, `message` right after `type`.
        let keys: Vec<&str> = events[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["type", "message", "flags", "id"], "{who}");
    }
}

#[tokio::test]
async fn a_deactivation_ends_the_users_queues() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let alice_api = server.api(Some(&alice));
    let (queue, _) = register(&alice_api, &[]).await;
    let (status, _) = owner
        .call(Method::DELETE, &format!("/users/{alice_id}"), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = owner
        .post(&format!("/users/{alice_id}/reactivate"), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    // The old queue missed what happened meanwhile: the client must register again.
    let (status, body) = alice_api
        .get("/events", &[("queue_id", &queue), ("dont_block", "true")])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "BAD_EVENT_QUEUE_ID");
}

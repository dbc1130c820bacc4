//! Channels, subscriptions, folders, topic visibility and user groups.

use crate::support::{Creds, Server};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

struct Org {
    server: Server,
    owner: Creds,
    alice: (u64, Creds),
    bob: (u64, Creds),
    guest: (u64, Creds),
}

async fn org() -> Org {
    let server = Server::start();
    let owner = server.owner();
    let alice = server.create_member("alice@example.com", "Alice").await;
    let bob = server.create_member("bob@example.com", "Bob").await;
    let guest = server.create_member("guest@example.com", "Gus").await;
    let (status, body) = server
        .api(Some(&owner))
        .call(
            Method::PATCH,
            &format!("/users/{}", guest.0),
            &[("role", "600")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    Org {
        server,
        owner,
        alice,
        bob,
        guest,
    }
}

async fn create(
    api: &crate::support::Api,
    name: &str,
    extra: &[(&str, &str)],
) -> (StatusCode, Value) {
    let mut params = vec![("name", name), ("subscribers", "[]")];
    params.extend_from_slice(extra);
    api.post("/channels/create", &params).await
}

#[tokio::test]
async fn create_channel_and_read_it_back() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    let subscribers = format!("[{}, {}]", o.alice.0, o.bob.0);
    let (status, body) = alice
        .post(
            "/channels/create",
            &[
                ("name", " design "),
                ("description", "Pixels & <things>"),
                ("subscribers", &subscribers),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["id"].as_u64().unwrap();
    assert_eq!(body, json!({"result": "success", "msg": "", "id": id}));

    let (_, subs) = alice
        .get(
            "/users/me/subscriptions",
            &[("include_subscribers", "true")],
        )
        .await;
    let sub = &subs["subscriptions"][0];
    let keys: Vec<&str> = sub
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        vec![
            "stream_id",
            "name",
            "description",
            "rendered_description",
            "date_created",
            "creator_id",
            "invite_only",
            "subscribers",
            "desktop_notifications",
            "email_notifications",
            "wildcard_mentions_notify",
            "push_notifications",
            "audible_notifications",
            "pin_to_top",
            "is_muted",
            "in_home_view",
            "is_announcement_only",
            "is_web_public",
            "color",
            "stream_post_policy",
            "message_retention_days",
            "history_public_to_subscribers",
            "first_message_id",
            "folder_id",
            "topics_policy",
            "is_recently_active",
            "stream_weekly_traffic",
            "can_add_subscribers_group",
            "can_remove_subscribers_group",
            "can_administer_channel_group",
            "can_delete_any_message_group",
            "can_delete_own_message_group",
            "can_move_messages_out_of_channel_group",
            "can_move_messages_within_channel_group",
            "can_send_message_group",
            "can_subscribe_group",
            "can_resolve_topics_group",
            "can_create_topic_group",
            "is_archived",
            "subscriber_count"
        ]
    );
    assert_eq!(sub["name"], "design");
    assert_eq!(sub["description"], "Pixels & <things>");
    assert_eq!(
        sub["rendered_description"],
        "<p>Pixels &amp; &lt;things&gt;</p>"
    );
    assert_eq!(sub["creator_id"], o.alice.0);
    assert_eq!(sub["subscribers"], json!([o.alice.0, o.bob.0]));
    assert_eq!(sub["subscriber_count"], 2);
    assert_eq!(sub["color"], "#76ce90");
    assert_eq!(sub["desktop_notifications"], Value::Null);
    assert_eq!(
        (sub["is_muted"].clone(), sub["in_home_view"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(sub["topics_policy"], "inherit");
    assert_eq!(sub["history_public_to_subscribers"], true);
    assert_eq!(
        sub["can_administer_channel_group"],
        json!({"direct_members": [o.alice.0], "direct_subgroups": []})
    );
    // Without include_subscribers there is no list.
    let (_, subs) = alice.get("/users/me/subscriptions", &[]).await;
    assert!(subs["subscriptions"][0].get("subscribers").is_none());

    // The creator is not subscribed unless listed.
    let (_, body) = create(&alice, "quiet", &[]).await;
    let quiet = body["id"].as_u64().unwrap();
    let (_, subs) = alice.get("/users/me/subscriptions", &[]).await;
    assert!(subs["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["stream_id"] != quiet));

    let (status, body) = alice.get(&format!("/streams/{id}"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["stream"]["name"], "design");
    let (_, body) = alice.get("/get_stream_id", &[("stream", "DESIGN")]).await;
    assert_eq!(body["stream_id"], id);
    let (_, body) = alice.get(&format!("/streams/{id}/members"), &[]).await;
    assert_eq!(body["subscribers"], json!([o.alice.0, o.bob.0]));
    let (_, body) = alice.get("/streams", &[]).await;
    let names: Vec<&str> = body["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["design", "quiet"]);

    // State survives a restart.
    let server = o.server.stop().restart();
    let (_, body) = server
        .api(Some(&o.alice.1))
        .get(&format!("/streams/{id}/members"), &[])
        .await;
    assert_eq!(body["subscribers"], json!([o.alice.0, o.bob.0]));
}

#[tokio::test]
async fn channel_creation_rules() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    assert_eq!(create(&alice, "general", &[]).await.0, StatusCode::OK);
    let (status, body) = create(&alice, "GENERAL", &[]).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        body,
        json!({"result":"error","msg":"Channel 'general' already exists","code":"CHANNEL_ALREADY_EXISTS"})
    );
    let cases: Vec<(String, &str)> = vec![
        ("   ".into(), "Channel name can't be empty."),
        (
            "x".repeat(61),
            "Channel name too long (limit: 60 characters).",
        ),
        (
            "bad\u{7}name".into(),
            "Invalid character in channel name, at position 4.",
        ),
    ];
    for (name, msg) in cases {
        let (status, body) = create(&alice, &name, &[]).await;
        assert_eq!(
            (status, body["msg"].as_str()),
            (StatusCode::BAD_REQUEST, Some(msg))
        );
    }
    let (_, body) = alice
        .post(
            "/channels/create",
            &[("name", "x"), ("subscribers", "[999]")],
        )
        .await;
    assert_eq!(body["msg"], "No such user");
    let (_, body) = alice.post("/channels/create", &[("name", "x")]).await;
    assert_eq!(body["code"], "REQUEST_VARIABLE_MISSING");
    let (_, body) = create(&alice, "web", &[("is_web_public", "true")]).await;
    assert_eq!(body["msg"], "Web-public channels are not enabled.");
    let (_, body) = create(&alice, "kept", &[("message_retention_days", "30")]).await;
    assert_eq!(
        body,
        json!({"result":"error","msg":"Must be an organization owner","code":"UNAUTHORIZED_PRINCIPAL"})
    );
    let (_, body) = create(&alice, "default", &[("is_default_stream", "true")]).await;
    assert_eq!(body["msg"], "Insufficient permission");
    let (_, body) = create(&alice, "folder", &[("folder_id", "42")]).await;
    assert_eq!(body["msg"], "Invalid channel folder ID");
    // Rule 3: a private channel with protected history lets everyone create topics.
    let (_, groups) = alice.get("/user_groups", &[]).await;
    let group_id = |name: &str| {
        groups["user_groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap()["id"]
            .as_u64()
            .unwrap()
    };
    let admins = group_id("role:administrators").to_string();
    let (_, body) = create(
        &alice,
        "secret",
        &[("invite_only", "true"), ("can_create_topic_group", &admins)],
    )
    .await;
    assert_eq!(
        body,
        json!({"result":"error","msg":"Unsupported parameter combination: history_public_to_subscribers, can_create_topic_group",
               "code":"BAD_REQUEST","parameters":"history_public_to_subscribers, can_create_topic_group"})
    );
    let internet = group_id("role:internet").to_string();
    let (_, body) = create(&alice, "net", &[("can_send_message_group", &internet)]).await;
    assert_eq!(
        body["msg"],
        "'can_send_message_group' setting cannot be set to 'role:internet' group."
    );
    let (_, body) = create(
        &alice,
        "anon",
        &[(
            "can_send_message_group",
            r#"{"direct_members":[999],"direct_subgroups":[]}"#,
        )],
    )
    .await;
    assert_eq!(body["msg"], "Invalid user ID: 999");
    // The owner may set retention; guests may not create channels at all.
    let owner = o.server.api(Some(&o.owner));
    assert_eq!(
        create(&owner, "kept", &[("message_retention_days", "unlimited")])
            .await
            .0,
        StatusCode::OK
    );
    let guest = o.server.api(Some(&o.guest.1));
    let (_, body) = create(&guest, "mine", &[]).await;
    assert_eq!(body["msg"], "Not allowed for guest users");
}

#[tokio::test]
async fn private_channels_are_invisible_to_outsiders() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    let bob = o.server.api(Some(&o.bob.1));
    let owner = o.server.api(Some(&o.owner));
    let (_, body) = alice
        .post(
            "/channels/create",
            &[
                ("name", "secret"),
                ("invite_only", "true"),
                ("subscribers", &format!("[{}]", o.alice.0)),
            ],
        )
        .await;
    let id = body["id"].as_u64().unwrap();
    let invalid = json!({"result":"error","msg":"Invalid channel ID","code":"BAD_REQUEST"});
    assert_eq!(bob.get(&format!("/streams/{id}"), &[]).await.1, invalid);
    assert_eq!(
        bob.get(&format!("/streams/{id}/members"), &[]).await.1,
        invalid
    );
    let (_, body) = bob.get("/get_stream_id", &[("stream", "secret")]).await;
    assert_eq!(body["msg"], "Invalid channel name 'secret'");
    let (_, streams) = bob.get("/streams", &[]).await;
    assert!(streams["streams"].as_array().unwrap().is_empty());
    let (_, body) = bob
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name":"secret"}]"#)],
        )
        .await;
    assert_eq!(
        body,
        json!({"result":"error","msg":"Unable to access channel (secret).","code":"BAD_REQUEST"})
    );
    let (_, body) = bob
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name":"secret"}]"#),
                ("authorization_errors_fatal", "false"),
            ],
        )
        .await;
    assert_eq!(body["unauthorized"], json!(["secret"]));
    assert_eq!(body["subscribed"], json!({}));
    let (status, _) = bob
        .post(
            "/user_topics",
            &[
                ("stream_id", &id.to_string()),
                ("topic", "t"),
                ("visibility_policy", "1"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Administrators see the channel's metadata, but not its subscriptions unless they join.
    let (status, body) = owner.get(&format!("/streams/{id}"), &[]).await;
    assert_eq!(
        (status, body["stream"]["invite_only"].clone()),
        (StatusCode::OK, json!(true))
    );
    let (_, body) = owner
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name":"secret"}]"#)],
        )
        .await;
    assert_eq!(body["msg"], "Unable to access channel (secret).");
}

#[tokio::test]
async fn subscribe_and_unsubscribe() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    let bob = o.server.api(Some(&o.bob.1));
    create(&alice, "general", &[]).await;
    // Bob joins an existing channel and creates another the legacy way.
    let (status, body) = bob
        .post(
            "/users/me/subscriptions",
            &[(
                "subscriptions",
                r#"[{"name":"general"},{"name":"new one","description":"d"}]"#,
            )],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let bob_key = o.bob.0.to_string();
    assert_eq!(
        body,
        json!({"result":"success","msg":"","subscribed":{&bob_key: ["general", "new one"]},"already_subscribed":{},"new_subscription_messages_sent":true})
    );
    let (_, body) = bob
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name":"general"}]"#)],
        )
        .await;
    assert_eq!(body["already_subscribed"], json!({&bob_key: ["general"]}));
    // Colors go down the palette per user.
    let (_, subs) = bob.get("/users/me/subscriptions", &[]).await;
    let colors: Vec<&str> = subs["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["color"].as_str().unwrap())
        .collect();
    assert_eq!(colors, vec!["#76ce90", "#fae589"]);
    // Members may subscribe others to public channels (realm default: role:members).
    let principals = format!("[{}]", o.alice.0);
    let (_, body) = bob
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name":"general"}]"#),
                ("principals", &principals),
            ],
        )
        .await;
    assert_eq!(
        body["subscribed"],
        json!({o.alice.0.to_string(): ["general"]})
    );
    // Guests cannot reach public channels, create channels or subscribe others; they may join
    // a private channel whose can_subscribe_group includes them.
    let guest = o.server.api(Some(&o.guest.1));
    let join = |names: &'static str| {
        let guest = &guest;
        async move {
            guest
                .post("/users/me/subscriptions", &[("subscriptions", names)])
                .await
        }
    };
    let (_, body) = join(r#"[{"name":"general"}]"#).await;
    assert_eq!(body["msg"], "Unable to access channel (general).");
    let (_, body) = join(r#"[{"name":"guest-made"}]"#).await;
    assert_eq!(body["msg"], "Not allowed for guest users");
    let (_, body) = guest
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name":"general"}]"#),
                ("principals", &format!("[{}]", o.alice.0)),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Not allowed for guest users");
    let owner = o.server.api(Some(&o.owner));
    let (_, body) = create(
        &owner,
        "guests welcome",
        &[
            ("invite_only", "true"),
            (
                "can_subscribe_group",
                &format!(
                    "{{\"direct_members\": [{}], \"direct_subgroups\": []}}",
                    o.guest.0
                ),
            ),
        ],
    )
    .await;
    assert!(body["id"].is_u64(), "{body}");
    let (status, body) = join(r#"[{"name":"guests welcome"}]"#).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["subscribed"],
        json!({o.guest.0.to_string(): ["guests welcome"]})
    );
    // Unsubscribing: removed and not removed; removing others needs permission.
    let (_, body) = bob
        .delete(
            "/users/me/subscriptions",
            &[("subscriptions", r#"["general"]"#)],
        )
        .await;
    assert_eq!(
        body,
        json!({"result":"success","msg":"","removed":["general"],"not_removed":[]})
    );
    let (_, body) = bob
        .delete(
            "/users/me/subscriptions",
            &[("subscriptions", r#"["general"]"#)],
        )
        .await;
    assert_eq!(body["not_removed"], json!(["general"]));
    let (_, body) = bob
        .delete(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"["general"]"#),
                ("principals", &principals),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Insufficient permission");
    let owner = o.server.api(Some(&o.owner));
    let (_, body) = owner
        .delete(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"["general"]"#),
                ("principals", &principals),
            ],
        )
        .await;
    assert_eq!(body["removed"], json!(["general"]));
    let (_, body) = bob
        .delete(
            "/users/me/subscriptions",
            &[("subscriptions", r#"["nope"]"#)],
        )
        .await;
    assert_eq!(body["msg"], "Channel(s) (nope) do not exist");
}

#[tokio::test]
async fn subscription_properties() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    let (_, body) = alice
        .post(
            "/channels/create",
            &[("name", "c"), ("subscribers", &format!("[{}]", o.alice.0))],
        )
        .await;
    let id = body["id"].as_u64().unwrap();
    let path = format!("/users/me/subscriptions/{id}");
    let patch = |property: &'static str, value: &'static str| {
        let path = path.clone();
        let alice = &alice;
        async move {
            alice
                .call(
                    Method::PATCH,
                    &path,
                    &[("property", property), ("value", value)],
                )
                .await
        }
    };
    assert_eq!(patch("color", "#AABBCC").await.0, StatusCode::OK);
    assert_eq!(patch("in_home_view", "false").await.0, StatusCode::OK);
    assert_eq!(patch("pin_to_top", "true").await.0, StatusCode::OK);
    assert_eq!(
        patch("desktop_notifications", "false").await.0,
        StatusCode::OK
    );
    let (_, subs) = alice.get("/users/me/subscriptions", &[]).await;
    let sub = &subs["subscriptions"][0];
    assert_eq!(sub["color"], "#aabbcc");
    assert_eq!(
        (sub["is_muted"].clone(), sub["in_home_view"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(sub["pin_to_top"], true);
    assert_eq!(sub["desktop_notifications"], false);
    assert_eq!(
        patch("color", "blue").await.1["msg"],
        "color is not a valid hex color code"
    );
    assert_eq!(
        patch("frobnicate", "true").await.1["msg"],
        "Unknown subscription property: frobnicate"
    );
    assert_eq!(
        patch("is_muted", "maybe").await.1["msg"],
        "is_muted is not a boolean"
    );
    let bob = o.server.api(Some(&o.bob.1));
    let (_, body) = bob
        .call(
            Method::PATCH,
            &path,
            &[("property", "is_muted"), ("value", "true")],
        )
        .await;
    assert_eq!(body["msg"], format!("Not subscribed to channel ID {id}"));
    // The bulk endpoint applies all or nothing.
    let data = json!([{"stream_id": id, "property": "is_muted", "value": false},
                      {"stream_id": id, "property": "pin_to_top", "value": false}])
    .to_string();
    let (status, body) = alice
        .post(
            "/users/me/subscriptions/properties",
            &[("subscription_data", &data)],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let bad = json!([{"stream_id": id, "property": "is_muted", "value": true},
                     {"stream_id": 999, "property": "pin_to_top", "value": true}])
    .to_string();
    let (_, body) = alice
        .post(
            "/users/me/subscriptions/properties",
            &[("subscription_data", &bad)],
        )
        .await;
    assert_eq!(body["msg"], "Not subscribed to channel ID 999");
    let (_, subs) = alice.get("/users/me/subscriptions", &[]).await;
    assert_eq!(
        subs["subscriptions"][0]["is_muted"], false,
        "nothing of a failed bulk update applies"
    );
}

#[tokio::test]
async fn topic_visibility() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    let (_, body) = alice
        .post(
            "/channels/create",
            &[("name", "c"), ("subscribers", &format!("[{}]", o.alice.0))],
        )
        .await;
    let id = body["id"].as_u64().unwrap().to_string();
    for policy in ["1", "2", "3", "0"] {
        let (status, body) = alice
            .post(
                "/user_topics",
                &[
                    ("stream_id", &id),
                    ("topic", "lunch"),
                    ("visibility_policy", policy),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (_, body) = alice
        .post(
            "/user_topics",
            &[
                ("stream_id", &id),
                ("topic", "lunch"),
                ("visibility_policy", "7"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Invalid visibility_policy");
    let (_, body) = alice
        .post(
            "/user_topics",
            &[
                ("stream_id", "999"),
                ("topic", "lunch"),
                ("visibility_policy", "1"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Invalid channel ID");
    let long = "t".repeat(61);
    let (_, body) = alice
        .post(
            "/user_topics",
            &[
                ("stream_id", &id),
                ("topic", &long),
                ("visibility_policy", "1"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "topic is too long (limit: 60 characters)");
    // The legacy endpoint.
    let muted = "/users/me/subscriptions/muted_topics";
    let (status, _) = alice
        .call(
            Method::PATCH,
            muted,
            &[("stream_id", &id), ("topic", "news"), ("op", "add")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = alice
        .call(
            Method::PATCH,
            muted,
            &[("stream", "c"), ("topic", "news"), ("op", "add")],
        )
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "repeating is not an error since feature level 169"
    );
    let (_, body) = alice
        .call(
            Method::PATCH,
            muted,
            &[
                ("stream", "c"),
                ("stream_id", &id),
                ("topic", "news"),
                ("op", "add"),
            ],
        )
        .await;
    assert_eq!(
        body["msg"],
        "Unsupported parameter combination: stream_id, stream"
    );
    let (status, _) = alice
        .call(
            Method::PATCH,
            muted,
            &[("stream_id", &id), ("topic", "other"), ("op", "remove")],
        )
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "unmuting a topic that is not muted is a no-op"
    );
    let (_, body) = alice
        .call(
            Method::PATCH,
            muted,
            &[("stream_id", "999"), ("topic", "other"), ("op", "remove")],
        )
        .await;
    assert_eq!(body["msg"], "Topic is not muted");
    // Muting through it needs a subscription (the owner sees the channel but is not in it).
    let (_, body) = o
        .server
        .api(Some(&o.owner))
        .call(
            Method::PATCH,
            muted,
            &[("stream_id", &id), ("topic", "news"), ("op", "add")],
        )
        .await;
    assert_eq!(body["msg"], format!("Not subscribed to channel ID {id}"));
    // What the projection believes.
    let (_, dump) = o
        .server
        .api(Some(&o.owner))
        .get("/admin/projections", &[])
        .await;
    let topics = &dump["projections"]["user_topics"];
    assert_eq!(topics.as_array().unwrap().len(), 1);
    assert_eq!(topics[0]["topic_name"], "news");
    assert_eq!(topics[0]["visibility_policy"], 1);
}

#[tokio::test]
async fn channel_folders() {
    let o = org().await;
    let owner = o.server.api(Some(&o.owner));
    let alice = o.server.api(Some(&o.alice.1));
    let (_, body) = alice
        .post(
            "/channel_folders/create",
            &[("name", "x"), ("description", "")],
        )
        .await;
    assert_eq!(
        body,
        json!({"result":"error","msg":"Must be an organization administrator","code":"UNAUTHORIZED_PRINCIPAL"})
    );
    let frontend = create_folder(&owner, "Frontend", "UI *work*").await;
    let backend = create_folder(&owner, "Backend", "").await;
    let (_, body) = owner
        .post(
            "/channel_folders/create",
            &[("name", "frontend"), ("description", "")],
        )
        .await;
    assert_eq!(body["msg"], "Channel folder name already in use");
    let (_, body) = owner
        .post(
            "/channel_folders/create",
            &[("name", " "), ("description", "")],
        )
        .await;
    assert_eq!(body["msg"], "Channel folder name can't be empty.");
    let (_, body) = owner
        .post("/channel_folders/create", &[("name", "n")])
        .await;
    assert_eq!(body["var_name"], "description");
    let (_, body) = alice.get("/channel_folders", &[]).await;
    let folders = body["channel_folders"].as_array().unwrap();
    assert_eq!(folders.len(), 2);
    let keys: Vec<&str> = folders[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        vec![
            "id",
            "name",
            "description",
            "rendered_description",
            "order",
            "date_created",
            "creator_id",
            "is_archived"
        ]
    );
    assert_eq!(folders[0]["name"], "Frontend");
    assert_eq!(folders[0]["creator_id"], 1);

    // A channel in a folder keeps the folder from being archived.
    let (_, body) = alice
        .post(
            "/channels/create",
            &[
                ("name", "ui"),
                ("subscribers", "[]"),
                ("folder_id", &frontend.to_string()),
            ],
        )
        .await;
    assert!(body["id"].is_u64(), "{body}");
    let path = format!("/channel_folders/{frontend}");
    let (_, body) = owner
        .call(Method::PATCH, &path, &[("is_archived", "true")])
        .await;
    assert_eq!(
        body["msg"],
        "You need to remove all the channels from this folder to archive it."
    );
    let (_, body) = owner
        .call(Method::PATCH, "/channel_folders/99", &[("name", "z")])
        .await;
    assert_eq!(body["msg"], "Invalid channel folder ID");
    let (status, _) = owner
        .call(
            Method::PATCH,
            &format!("/channel_folders/{backend}"),
            &[("is_archived", "true"), ("name", "Servers")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get("/channel_folders", &[]).await;
    assert_eq!(body["channel_folders"].as_array().unwrap().len(), 1);
    let (_, body) = alice
        .get("/channel_folders", &[("include_archived", "true")])
        .await;
    assert_eq!(body["channel_folders"][1]["name"], "Servers");
    assert_eq!(body["channel_folders"][1]["is_archived"], true);

    // Reordering needs every folder.
    let (_, body) = owner
        .call(
            Method::PATCH,
            "/channel_folders",
            &[("order", &format!("[{backend}]"))],
        )
        .await;
    assert_eq!(body["msg"], "Invalid order mapping.");
    let (status, _) = owner
        .call(
            Method::PATCH,
            "/channel_folders",
            &[("order", &format!("[{backend}, {frontend}]"))],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice
        .get("/channel_folders", &[("include_archived", "true")])
        .await;
    assert_eq!(body["channel_folders"][0]["id"], backend);
    assert_eq!(body["channel_folders"][0]["order"], 0);
}

#[tokio::test]
async fn user_groups() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    let (status, body) = alice.get("/user_groups", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let groups = body["user_groups"].as_array().unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        vec![
            "role:nobody",
            "role:owners",
            "role:administrators",
            "role:moderators",
            "role:fullmembers",
            "role:members",
            "role:everyone",
            "role:internet"
        ]
    );
    let by_name = |name: &str| groups.iter().find(|g| g["name"] == name).unwrap().clone();
    let nobody = by_name("role:nobody")["id"].as_u64().unwrap();
    let owners = by_name("role:owners");
    assert_eq!(owners["members"], json!([1]));
    assert_eq!(owners["is_system_group"], true);
    assert_eq!(owners["date_created"], Value::Null);
    assert_eq!(owners["can_mention_group"], nobody);
    assert_eq!(
        by_name("role:administrators")["direct_subgroup_ids"],
        json!([owners["id"]])
    );
    assert_eq!(
        by_name("role:members")["members"],
        json!([o.alice.0, o.bob.0])
    );
    assert_eq!(by_name("role:everyone")["members"], json!([o.guest.0]));
    let guest = o.server.api(Some(&o.guest.1));
    assert_eq!(
        guest.get("/user_groups", &[]).await.1["msg"],
        "Not allowed for guest users"
    );

    // A user-defined group: creator manages it by default.
    let members = format!("[{}]", o.alice.0);
    let (_, body) = alice
        .post(
            "/user_groups/create",
            &[
                ("name", "designers"),
                ("description", "d"),
                ("members", &members),
            ],
        )
        .await;
    let group = body["group_id"].as_u64().unwrap();
    let (_, body) = alice
        .post(
            "/user_groups/create",
            &[
                ("name", "designers"),
                ("description", "d"),
                ("members", "[]"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "User group 'designers' already exists.");
    let (_, body) = alice
        .post(
            "/user_groups/create",
            &[("name", "role:x"), ("description", "d"), ("members", "[]")],
        )
        .await;
    assert_eq!(body["msg"], "User group name cannot start with 'role:'.");
    let path = format!("/user_groups/{group}/members");
    let (status, _) = alice
        .post(&path, &[("add", &format!("[{}]", o.bob.0))])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get(&path, &[]).await;
    assert_eq!(body["members"], json!([o.alice.0, o.bob.0]));
    let bob = o.server.api(Some(&o.bob.1));
    let (_, body) = bob
        .post(&path, &[("delete", &format!("[{}]", o.alice.0))])
        .await;
    assert_eq!(body["msg"], "Insufficient permission");
    let (_, body) = alice
        .get(&format!("/user_groups/{group}/members/{}", o.bob.0), &[])
        .await;
    assert_eq!(body["is_user_group_member"], true);

    // Subgroups: no cycles.
    let (_, body) = alice
        .post(
            "/user_groups/create",
            &[
                ("name", "inner"),
                ("description", ""),
                ("members", "[]"),
                ("subgroups", &format!("[{group}]")),
            ],
        )
        .await;
    let inner = body["group_id"].as_u64().unwrap();
    let (_, body) = alice
        .post(
            &format!("/user_groups/{group}/subgroups"),
            &[("add", &format!("[{inner}]"))],
        )
        .await;
    assert_eq!(
        body["msg"],
        format!("User group {group} is already a subgroup of one of the passed subgroups.")
    );
    let (_, body) = alice
        .get(&format!("/user_groups/{inner}/members"), &[])
        .await;
    assert_eq!(
        body["members"],
        json!([o.alice.0, o.bob.0]),
        "members through subgroups count"
    );

    // A group used by a permission cannot be deactivated.
    let setting = json!({"new": group}).to_string();
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/user_groups/{inner}"),
            &[("can_mention_group", &setting)],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = alice
        .post(&format!("/user_groups/{group}/deactivate"), &[])
        .await;
    assert_eq!(body["code"], "CANNOT_DEACTIVATE_GROUP_IN_USE");
    let (status, _) = alice
        .post(&format!("/user_groups/{inner}/deactivate"), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get("/user_groups", &[]).await;
    assert!(body["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| g["id"] != inner));
    // System groups cannot be edited.
    let (_, body) = alice
        .call(
            Method::PATCH,
            &format!("/user_groups/{nobody}"),
            &[("name", "x")],
        )
        .await;
    assert_eq!(body["msg"], "Insufficient permission");
}

#[tokio::test]
async fn channel_administration() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    let bob = o.server.api(Some(&o.bob.1));
    let (_, body) = create(&alice, "c", &[]).await;
    let id = body["id"].as_u64().unwrap();
    let path = format!("/streams/{id}");
    // The creator administers the channel; others may not.
    let (_, body) = bob
        .call(Method::PATCH, &path, &[("description", "x")])
        .await;
    assert_eq!(
        body["msg"],
        "You do not have permission to administer this channel."
    );
    let (status, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[("new_name", "renamed"), ("description", "new")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = alice.get(&path, &[]).await;
    assert_eq!(
        (
            body["stream"]["name"].clone(),
            body["stream"]["description"].clone()
        ),
        (json!("renamed"), json!("new"))
    );
    let old = body["stream"]["can_send_message_group"].clone();
    let admins = {
        let (_, g) = alice.get("/user_groups", &[]).await;
        g["user_groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "role:administrators")
            .unwrap()["id"]
            .clone()
    };
    let wrong_old = json!({"new": admins, "old": 12345}).to_string();
    let (_, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[("can_send_message_group", &wrong_old)],
        )
        .await;
    assert_eq!(body["code"], "EXPECTATION_MISMATCH");
    let change = json!({"new": admins, "old": old}).to_string();
    let (status, _) = alice
        .call(Method::PATCH, &path, &[("can_send_message_group", &change)])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get(&path, &[]).await;
    assert_eq!(body["stream"]["can_send_message_group"], admins);
    assert_eq!(body["stream"]["stream_post_policy"], 2);
    // Archiving.
    let (status, _) = alice.delete(&path, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get(&path, &[]).await;
    assert_eq!(body["stream"]["is_archived"], true);
    let (_, body) = alice.get("/streams", &[]).await;
    assert!(
        body["streams"].as_array().unwrap().is_empty(),
        "archived channels are excluded by default"
    );
    let (_, body) = alice
        .get("/streams", &[("exclude_archived", "false")])
        .await;
    assert_eq!(body["streams"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn default_channels_for_new_users() {
    let o = org().await;
    let owner = o.server.api(Some(&o.owner));
    let (_, body) = create(&owner, "welcome", &[("is_default_stream", "true")]).await;
    let welcome = body["id"].as_u64().unwrap();
    let (_, body) = create(&owner, "lobby", &[]).await;
    let lobby = body["id"].as_u64().unwrap().to_string();
    let alice = o.server.api(Some(&o.alice.1));
    let (_, body) = alice
        .post("/default_streams", &[("stream_id", &lobby)])
        .await;
    assert_eq!(body["msg"], "Must be an organization administrator");
    let (status, _) = owner
        .post("/default_streams", &[("stream_id", &lobby)])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get("/default_streams", &[]).await;
    let names: Vec<&str> = body["default_streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["welcome", "lobby"]);
    // A new account starts subscribed to both, with distinct colors.
    let (_, carol) = o.server.create_member("carol@example.com", "Carol").await;
    let (_, subs) = o
        .server
        .api(Some(&carol))
        .get("/users/me/subscriptions", &[])
        .await;
    let subs = subs["subscriptions"].as_array().unwrap();
    assert_eq!(subs.len(), 2);
    assert_eq!(subs[0]["stream_id"], welcome);
    assert_ne!(subs[0]["color"], subs[1]["color"]);
    let (_, body) = owner
        .delete("/default_streams", &[("stream_id", &lobby)])
        .await;
    assert_eq!(body["result"], "success");
    let (_, body) = owner
        .delete("/default_streams", &[("stream_id", &lobby)])
        .await;
    assert_eq!(body["msg"], "Channel is not a default channel.");
}

#[tokio::test]
async fn unarchiving_and_privacy_rules() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    let (_, body) = create(&alice, "c", &[]).await;
    let path = format!("/streams/{}", body["id"]);
    let (_, body) = alice
        .call(Method::PATCH, &path, &[("is_archived", "false")])
        .await;
    assert_eq!(body["msg"], "Channel is not currently deactivated");
    let (_, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[("history_public_to_subscribers", "false")],
        )
        .await;
    assert_eq!(body["msg"], "Invalid parameters");
    let (_, body) = alice.call(Method::PATCH, &path, &[("new_name", "c")]).await;
    assert_eq!(body["msg"], "Channel already has that name.");
    alice.delete(&path, &[]).await;
    let (_, body) = alice.delete(&path, &[]).await;
    assert_eq!(body["msg"], "Channel is already deactivated");
    let (status, _) = alice
        .call(Method::PATCH, &path, &[("is_archived", "false")])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get(&path, &[]).await;
    assert_eq!(body["stream"]["is_archived"], false);
    // Going private needs the private-channel creation permission, which members have; the
    // history already shared stays shared unless asked otherwise.
    let (status, _) = alice
        .call(Method::PATCH, &path, &[("is_private", "true")])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice.get(&path, &[]).await;
    assert_eq!(
        (
            body["stream"]["invite_only"].clone(),
            body["stream"]["history_public_to_subscribers"].clone()
        ),
        (json!(true), json!(true))
    );
}

/// The newest `n` messages of a narrow as `(sender_email, raw content)`, oldest first.
async fn newest(api: &crate::support::Api, narrow: Value, n: usize) -> Vec<(String, String)> {
    let count = n.to_string();
    let narrow = narrow.to_string();
    let (status, body) = api
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", count.as_str()),
                ("num_after", "0"),
                ("apply_markdown", "false"),
                ("narrow", narrow.as_str()),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["sender_email"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The rendered content of the newest message of a narrow.
async fn newest_html(api: &crate::support::Api, narrow: Value) -> String {
    let narrow = narrow.to_string();
    let (status, body) = api
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", narrow.as_str()),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn notification_bot_announces_channels_subscriptions_and_signups() {
    let o = org().await;
    let owner = o.server.api(Some(&o.owner));
    let alice = o.server.api(Some(&o.alice.1));
    let bob = o.server.api(Some(&o.bob.1));
    let (alice_id, bob_id) = (o.alice.0, o.bob.0);
    let bot = "notification-bot@zulip.com".to_owned();
    let (_, body) = create(
        &owner,
        "announcements",
        &[("subscribers", &format!("[{alice_id}, {bob_id}]"))],
    )
    .await;
    let announcements = body["id"].as_u64().unwrap().to_string();
    let in_channel = |topic: &str| json!([["channel", "announcements"], ["topic", topic]]);

    // Without an announcement channel, announce=true says nothing.
    let (status, body) = create(&alice, "quiet", &[("announce", "true")]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.get("ignored_parameters_unsupported").is_none(),
        "{body}"
    );
    assert!(newest(&bob, in_channel("new channels"), 5).await.is_empty());

    let (status, _) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[
                ("new_stream_announcements_stream_id", announcements.as_str()),
                ("signup_announcements_stream_id", announcements.as_str()),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // A new channel, announced; another not (announce defaults to false).
    create(&alice, "design", &[("announce", "true")]).await;
    create(&alice, "unannounced", &[]).await;
    let by_alice = format!("@_**Alice|{alice_id}**");
    assert_eq!(
        newest(&bob, in_channel("new channels"), 5).await,
        vec![(
            bot.clone(),
            format!("{by_alice} created a new channel #**design**.")
        )]
    );
    let html = newest_html(&bob, in_channel("new channels")).await;
    assert!(
        html.contains("class=\"stream\""),
        "the new channel is linked: {html}"
    );

    // Channels created through a subscription request: one announcement for all.
    let (status, _) = alice
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "ops"}, {"name": "dev"}]"#),
                ("announce", "true"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        newest(&bob, in_channel("new channels"), 1).await,
        vec![(
            bot.clone(),
            format!("{by_alice} created the following channels: #**ops**, #**dev**.")
        )]
    );

    // Someone else subscribing you to existing channels: a direct message, one or a list.
    let to_bob = format!("[{bob_id}]");
    let (status, body) = alice
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "design"}]"#),
                ("principals", &to_bob),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["new_subscription_messages_sent"], true);
    let dms = json!([["is", "dm"]]);
    assert_eq!(
        newest(&bob, dms.clone(), 1).await,
        vec![(
            bot.clone(),
            format!("{by_alice} subscribed you to #**design**.")
        )]
    );
    alice
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "ops"}, {"name": "dev"}]"#),
                ("principals", &to_bob),
            ],
        )
        .await;
    assert_eq!(
        newest(&bob, dms.clone(), 1).await,
        vec![(
            bot.clone(),
            format!(
                "{by_alice} subscribed you to the following channels:\n\n* #**dev**\n* #**ops**"
            )
        )]
    );
    // Not when asked not to; never to oneself.
    let (_, body) = alice
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "unannounced"}]"#),
                ("principals", &to_bob),
                ("send_new_subscription_messages", "false"),
            ],
        )
        .await;
    assert!(
        body.get("new_subscription_messages_sent").is_none(),
        "{body}"
    );
    assert_eq!(newest(&bob, dms.clone(), 10).await.len(), 2);
    assert!(newest(&alice, dms, 10).await.is_empty());

    // A new account is announced in "signups".
    let (newbie_id, _) = o.server.create_member("newbie@example.com", "Newbie").await;
    assert_eq!(
        newest(&bob, in_channel("signups"), 5).await,
        vec![(
            bot.clone(),
            format!("@_**Newbie|{newbie_id}** joined this organization.")
        )]
    );
    let html = newest_html(&bob, in_channel("signups")).await;
    assert!(html.contains("user-mention silent"), "{html}");
}

#[tokio::test]
async fn channel_rules_for_topics_resolving_access_and_renames() {
    let o = org().await;
    let owner = o.server.api(Some(&o.owner));
    let alice = o.server.api(Some(&o.alice.1));
    let bob = o.server.api(Some(&o.bob.1));
    let (alice_id, bob_id) = (o.alice.0, o.bob.0);
    let (_, groups) = owner.get("/user_groups", &[]).await;
    let group_id = |name: &str| {
        groups["user_groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap()["id"]
            .as_u64()
            .unwrap()
    };
    let everyone = group_id("role:everyone").to_string();
    let admins = group_id("role:administrators").to_string();

    // Settings that decide who gets in never include everyone.
    let (status, body) = create(
        &alice,
        "open",
        &[("can_subscribe_group", everyone.as_str())],
    )
    .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result":"error","msg":"'can_subscribe_group' setting cannot be set to 'role:everyone' group.","code":"BAD_REQUEST"})
        )
    );
    let (_, body) = alice
        .post(
            "/user_groups/create",
            &[
                ("name", "club"),
                ("description", ""),
                ("members", "[]"),
                ("can_join_group", everyone.as_str()),
            ],
        )
        .await;
    assert_eq!(
        body["msg"],
        "'can_join_group' setting cannot be set to 'role:everyone' group."
    );

    // empty_topic_only needs every message in the empty topic.
    let members = format!("[{alice_id}, {bob_id}]");
    let (_, body) = create(&alice, "chat", &[("subscribers", members.as_str())]).await;
    let chat = body["id"].as_u64().unwrap();
    let send = |topic: &'static str| {
        let alice = &alice;
        async move {
            let (status, body) = alice
                .post(
                    "/messages",
                    &[
                        ("type", "stream"),
                        ("to", "chat"),
                        ("topic", topic),
                        ("content", "x"),
                    ],
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body["id"].as_u64().unwrap()
        }
    };
    send("").await;
    let patch_stream = |params: Vec<(&'static str, String)>| {
        let alice = &alice;
        async move {
            let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            alice
                .call(Method::PATCH, &format!("/streams/{chat}"), &params)
                .await
        }
    };
    let (status, body) = patch_stream(vec![("topics_policy", "empty_topic_only".into())]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    patch_stream(vec![("topics_policy", "inherit".into())]).await;
    let named = send("named").await;
    let (_, body) = patch_stream(vec![("topics_policy", "empty_topic_only".into())]).await;
    assert_eq!(
        body["msg"],
        "To enable this configuration, all messages in this channel must be in the general chat topic."
    );

    // Resolving: the organization's group or the channel's own.
    owner
        .call(
            Method::PATCH,
            "/realm",
            &[(
                "can_resolve_topics_group",
                &format!("{{\"new\": {admins}}}"),
            )],
        )
        .await;
    let resolve = |topic: &'static str| {
        let path = format!("/messages/{named}");
        let bob = &bob;
        async move {
            bob.call(
                Method::PATCH,
                &path,
                &[("topic", topic), ("propagate_mode", "change_all")],
            )
            .await
        }
    };
    let (_, body) = resolve("✔ named").await;
    assert_eq!(
        body["msg"],
        "You don't have permission to edit this message"
    );
    let only_bob =
        format!("{{\"new\": {{\"direct_members\": [{bob_id}], \"direct_subgroups\": []}}}}");
    let (status, body) = patch_stream(vec![("can_resolve_topics_group", only_bob)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = resolve("✔ named").await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Who may get in is changed only by those who can read the channel: an administrator who
    // only sees a private channel's settings may not open it to themselves.
    let (_, body) = create(&alice, "secret", &[("invite_only", "true")]).await;
    let secret = body["id"].as_u64().unwrap();
    let (admin_id, admin) = o
        .server
        .create_member("admin@example.com", "Ada Admin")
        .await;
    owner
        .call(
            Method::PATCH,
            &format!("/users/{admin_id}"),
            &[("role", "200")],
        )
        .await;
    let admin = o.server.api(Some(&admin));
    let to_admin =
        format!("{{\"new\": {{\"direct_members\": [{admin_id}], \"direct_subgroups\": []}}}}");
    let (_, body) = admin
        .call(
            Method::PATCH,
            &format!("/streams/{secret}"),
            &[("can_subscribe_group", to_admin.as_str())],
        )
        .await;
    assert_eq!(body["msg"], "Channel content access is required.");
    let (status, _) = admin
        .call(
            Method::PATCH,
            &format!("/streams/{secret}"),
            &[("description", "admins may describe it")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // A rename event names the channel by its old name.
    let (status, body) = bob
        .post("/register", &[("event_types", r#"["stream"]"#)])
        .await;
    assert_eq!(status, StatusCode::OK);
    let queue = body["queue_id"].as_str().unwrap().to_owned();
    patch_stream(vec![("new_name", "conversation".into())]).await;
    let (_, body) = bob
        .get("/events", &[("queue_id", &queue), ("dont_block", "true")])
        .await;
    let event = &body["events"][0];
    assert_eq!(
        (
            &event["op"],
            &event["property"],
            &event["value"],
            &event["name"],
            &event["stream_id"]
        ),
        (
            &json!("update"),
            &json!("name"),
            &json!("conversation"),
            &json!("chat"),
            &json!(chat)
        )
    );
}

#[tokio::test]
async fn privacy_changes_and_archiving_tell_clients_what_they_can_now_see() {
    let o = org().await;
    let owner = o.server.api(Some(&o.owner));
    let alice = o.server.api(Some(&o.alice.1));
    let bob_id = o.bob.0;
    let (_, body) = create(
        &owner,
        "plans",
        &[
            ("invite_only", "true"),
            ("subscribers", &format!("[1, {bob_id}]")),
        ],
    )
    .await;
    let plans = body["id"].as_u64().unwrap();
    let queue = |capabilities: &'static str| {
        let alice = &alice;
        async move {
            let (status, body) = alice
                .post(
                    "/register",
                    &[
                        ("event_types", r#"["stream"]"#),
                        ("client_capabilities", capabilities),
                    ],
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body["queue_id"].as_str().unwrap().to_owned()
        }
    };
    let modern = queue(r#"{"archived_channels": true}"#).await;
    let legacy = queue("{}").await;
    let events = |id: String| {
        let alice = &alice;
        async move { crate::realtime::drain(alice, &id).await }
    };
    let patch = |params: &'static [(&'static str, &'static str)]| {
        let owner = &owner;
        async move {
            let (status, body) = owner
                .call(Method::PATCH, &format!("/streams/{plans}"), params)
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };

    // Made public: Alice, who could not see it, learns of it as a new channel.
    patch(&[("is_private", "false")]).await;
    let got = events(modern.clone()).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (&got[0]["op"], &got[0]["streams"][0]["stream_id"]),
        (&json!("create"), &json!(plans))
    );
    // Private again: for her it is gone.
    patch(&[("is_private", "true")]).await;
    let got = events(modern.clone()).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (&got[0]["op"], &got[0]["stream_ids"]),
        (&json!("delete"), &json!([plans]))
    );
    let _ = events(legacy.clone()).await;

    // Archiving a channel she sees: an update for clients that know archived channels, a
    // deletion for the others.
    let (_, body) = create(&owner, "old", &[]).await;
    let old = body["id"].as_u64().unwrap();
    let _ = events(modern.clone()).await;
    let _ = events(legacy.clone()).await;
    assert_eq!(
        owner.delete(&format!("/streams/{old}"), &[]).await.0,
        StatusCode::OK
    );
    let got = events(modern).await;
    assert_eq!(
        (&got[0]["op"], &got[0]["property"], &got[0]["value"]),
        (&json!("update"), &json!("is_archived"), &json!(true)),
        "{got:?}"
    );
    assert!(got[0].get("_stream").is_none());
    let got = events(legacy).await;
    assert_eq!(
        (&got[0]["op"], &got[0]["stream_ids"]),
        (&json!("delete"), &json!([old])),
        "{got:?}"
    );
}

#[tokio::test]
async fn administration_details_and_the_events_they_send() {
    let o = org().await;
    let owner = o.server.api(Some(&o.owner));
    let alice = o.server.api(Some(&o.alice.1));
    let bob = o.server.api(Some(&o.bob.1));
    let (alice_id, bob_id) = (o.alice.0, o.bob.0);
    let (queue, _) = crate::realtime::register(&bob, &[]).await;
    let (admin_queue, _) = crate::realtime::register(&owner, &[]).await;
    let drain = |api: &'static str| {
        let (api, queue) = match api {
            "bob" => (&bob, &queue),
            _ => (&owner, &admin_queue),
        };
        async move { crate::realtime::drain(api, queue).await }
    };
    let kinds = |events: &[Value]| crate::realtime::kinds(events);

    // Folders: administrators only, names and descriptions bounded, renames and reorders told.
    let ops = create_folder(&owner, "Ops", "").await;
    let dev = create_folder(&owner, "Dev", "").await;
    let must_be_admin = json!({"result":"error","msg":"Must be an organization administrator","code":"UNAUTHORIZED_PRINCIPAL"});
    let path = format!("/channel_folders/{ops}");
    assert_eq!(
        alice
            .call(Method::PATCH, &path, &[("name", "Mine")])
            .await
            .1,
        must_be_admin
    );
    let order = format!("[{dev}, {ops}]");
    assert_eq!(
        alice
            .call(Method::PATCH, "/channel_folders", &[("order", &order)])
            .await
            .1,
        must_be_admin
    );
    let long = "n".repeat(61);
    let (_, body) = owner.call(Method::PATCH, &path, &[("name", &long)]).await;
    assert_eq!(body["msg"], "name is too long (limit: 60 characters)");
    let long = "d".repeat(1025);
    let (_, body) = owner
        .call(Method::PATCH, &path, &[("description", &long)])
        .await;
    assert_eq!(
        body["msg"],
        "description is too long (limit: 1024 characters)"
    );
    let (_, body) = owner
        .call(Method::PATCH, "/channel_folders/999", &[("name", "x")])
        .await;
    assert_eq!(body["msg"], "Invalid channel folder ID");
    drain("bob").await;
    owner
        .call(
            Method::PATCH,
            &path,
            &[("name", "Operations"), ("description", "**24/7**")],
        )
        .await;
    owner
        .call(Method::PATCH, "/channel_folders", &[("order", &order)])
        .await;
    let events = drain("bob").await;
    // One update per changed property, as Zulip sends them, then the reorder.
    assert_eq!(
        kinds(&events),
        vec![
            "channel_folder:update",
            "channel_folder:update",
            "channel_folder:reorder"
        ]
    );
    assert_eq!(events[0]["data"]["name"], "Operations");
    assert_eq!(
        events[1]["data"]["rendered_description"],
        "<p><strong>24/7</strong></p>"
    );
    assert_eq!(events[2]["order"], json!([dev, ops]));
    let (_, body) = owner
        .call(Method::PATCH, &path, &[("is_archived", "true")])
        .await;
    assert_eq!(body["result"], "success");
    let (_, body) = owner
        .call(Method::PATCH, &path, &[("is_archived", "false")])
        .await;
    assert_eq!(body["result"], "success");

    // Retention: a number and "unlimited" are owners' choices; -1 is how forever is shown.
    let (_, body) = create(&owner, "kept", &[("message_retention_days", "unlimited")]).await;
    let kept = body["id"].as_u64().unwrap();
    let (_, body) = owner.get(&format!("/streams/{kept}"), &[]).await;
    assert_eq!(body["stream"]["message_retention_days"], -1);
    let (_, body) = create(&owner, "bounded", &[("message_retention_days", "30")]).await;
    let (_, stream) = owner.get(&format!("/streams/{}", body["id"]), &[]).await;
    assert_eq!(stream["stream"]["message_retention_days"], 30);
    let (_, body) = create(&owner, "bad", &[("message_retention_days", "soon")]).await;
    assert_eq!(body["msg"], "Bad value for 'message_retention_days': soon");
    let (_, body) = create(
        &alice,
        "defaulted",
        &[("message_retention_days", "realm_default")],
    )
    .await;
    assert!(body["id"].is_u64(), "{body}");

    // An administrator edits a channel someone else created; everyone who sees it hears of it.
    let (_, body) = create(
        &alice,
        "alices",
        &[("subscribers", &format!("[{alice_id}, {bob_id}]"))],
    )
    .await;
    let alices = body["id"].as_u64().unwrap();
    drain("bob").await;
    let (status, body) = owner
        .call(
            Method::PATCH,
            &format!("/streams/{alices}"),
            &[
                ("folder_id", &dev.to_string()),
                ("topics_policy", "disable_empty_topic"),
                ("is_default_stream", "true"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let events = drain("bob").await;
    let updates: Vec<(&Value, &Value)> = events
        .iter()
        .filter(|e| e["type"] == "stream")
        .map(|e| (&e["property"], &e["value"]))
        .collect();
    assert!(
        updates.contains(&(&json!("folder_id"), &json!(dev))),
        "{events:?}"
    );
    assert!(
        updates.contains(&(&json!("topics_policy"), &json!("disable_empty_topic"))),
        "{events:?}"
    );
    let defaults = events
        .iter()
        .find(|e| e["type"] == "default_streams")
        .unwrap();
    assert_eq!(defaults["default_streams"], json!([alices]));

    // Subscribing someone to an existing channel: peers and administrators learn of it.
    drain("owner").await;
    let (gus_id, _) = &o.guest;
    let (status, body) = alice
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "alices"}]"#),
                ("principals", &format!("[{gus_id}]")),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let peer = |events: Vec<Value>| events.into_iter().find(|e| e["op"] == "peer_add");
    let seen_by_bob = peer(drain("bob").await).expect("bob is told");
    assert_eq!(
        (&seen_by_bob["stream_ids"], &seen_by_bob["user_ids"]),
        (&json!([alices]), &json!([gus_id]))
    );
    assert!(
        peer(drain("owner").await).is_some(),
        "administrators are told"
    );

    // User groups: who may create them, bounded names, valid members; system groups follow roles.
    owner
        .call(
            Method::PATCH,
            "/realm",
            &[(
                "can_create_groups",
                &format!(
                    "{{\"new\": {}}}",
                    group_id(&owner, "role:administrators").await
                ),
            )],
        )
        .await;
    let (_, body) = alice
        .post(
            "/user_groups/create",
            &[("name", "club"), ("description", ""), ("members", "[]")],
        )
        .await;
    assert_eq!(body["msg"], "Insufficient permission");
    let (_, body) = owner
        .post(
            "/user_groups/create",
            &[
                ("name", &"g".repeat(101)),
                ("description", ""),
                ("members", "[]"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "User group name cannot exceed 100 characters.");
    let (_, body) = owner
        .post(
            "/user_groups/create",
            &[("name", "club"), ("description", ""), ("members", "[999]")],
        )
        .await;
    assert_eq!(body["msg"], "Invalid user ID: 999");
    drain("bob").await;
    owner
        .call(
            Method::PATCH,
            &format!("/users/{bob_id}"),
            &[("role", "300")],
        )
        .await;
    let (_, body) = owner
        .get(
            &format!(
                "/user_groups/{}/members/{bob_id}",
                group_id(&owner, "role:moderators").await
            ),
            &[],
        )
        .await;
    assert_eq!(body["is_user_group_member"], true);
    assert!(kinds(&drain("bob").await).contains(&"realm_user:update".to_owned()));
}

async fn group_id(api: &crate::support::Api, name: &str) -> u64 {
    let (_, groups) = api.get("/user_groups", &[]).await;
    groups["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .unwrap()["id"]
        .as_u64()
        .unwrap()
}

/// Creates a channel folder and returns its id.
async fn create_folder(api: &crate::support::Api, name: &str, description: &str) -> u64 {
    let (status, body) = api
        .post(
            "/channel_folders/create",
            &[("name", name), ("description", description)],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["channel_folder_id"].as_u64().unwrap()
}

/// `PATCH /users/me/subscriptions`: joining and leaving in one request, all or nothing, with
/// Zulip's answer, colors and descriptions for what it creates, and the events of both halves.
#[tokio::test]
async fn join_and_leave_in_one_request() {
    let o = org().await;
    let alice = o.server.api(Some(&o.alice.1));
    let bob = o.server.api(Some(&o.bob.1));
    let path = "/users/me/subscriptions";
    create(&alice, "general", &[]).await;
    create(&alice, "ops", &[]).await;
    let (status, _) = bob
        .post(
            path,
            &[("subscriptions", r#"[{"name":"general"},{"name":"ops"}]"#)],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (queue, _) =
        crate::realtime::register(&bob, &[("event_types", r#"["subscription"]"#)]).await;

    let refused = |body: Value| body["msg"].clone();
    let (status, body) = bob.call(Method::PATCH, path, &[]).await;
    assert_eq!(
        (status, refused(body)),
        (
            StatusCode::BAD_REQUEST,
            json!("Nothing to do. Specify at least one of \"add\" or \"delete\".")
        )
    );
    let (status, body) = bob
        .call(
            Method::PATCH,
            path,
            &[("add", r#"[{"name":"ops"}]"#), ("delete", r#"["OPS"]"#)],
        )
        .await;
    assert_eq!(
        (status, refused(body)),
        (
            StatusCode::BAD_REQUEST,
            json!("Channel 'ops' cannot be both added and removed in one request.")
        )
    );
    let (status, body) = bob
        .call(
            Method::PATCH,
            path,
            &[("add", r#"[{"name":"design","color":"red"}]"#)],
        )
        .await;
    assert_eq!(
        (status, refused(body)),
        (
            StatusCode::BAD_REQUEST,
            json!("color is not a valid hex color code")
        )
    );
    // A refused half refuses the other: "design" is not made.
    let (status, body) = bob
        .call(
            Method::PATCH,
            path,
            &[("add", r#"[{"name":"design"}]"#), ("delete", r#"["nope"]"#)],
        )
        .await;
    assert_eq!(
        (status, refused(body)),
        (
            StatusCode::BAD_REQUEST,
            json!("Channel(s) (nope) do not exist")
        )
    );
    assert_eq!(
        crate::realtime::drain(&bob, &queue).await,
        Vec::<Value>::new()
    );

    let (status, body) = bob
        .call(
            Method::PATCH,
            path,
            &[
                (
                    "add",
                    r##"[{"name":"design","description":"Plans","color":"#E79AB5"},{"name":"general"}]"##,
                ),
                ("delete", r#"["ops"]"#),
            ],
        )
        .await;
    let me = o.bob.0.to_string();
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "",
                   "subscribed": {&me: ["design"]},
                   "already_subscribed": {&me: ["general"]},
                   "removed": ["ops"], "not_removed": []})
        )
    );
    let events = crate::realtime::drain(&bob, &queue).await;
    let ops: Vec<(Value, Value)> = events
        .iter()
        .map(|e| (e["op"].clone(), e["subscriptions"][0]["name"].clone()))
        .collect();
    assert_eq!(
        ops,
        vec![
            (json!("add"), json!("design")),
            (json!("remove"), json!("ops"))
        ]
    );
    let (_, body) = bob.get(path, &[]).await;
    let mut mine: Vec<(Value, Value, Value)> = body["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].clone(),
                s["description"].clone(),
                s["color"].clone(),
            )
        })
        .collect();
    mine.sort_by_key(|s| s.0.to_string());
    assert_eq!(mine.len(), 2, "{mine:?}");
    assert_eq!(
        (&mine[0].0, &mine[0].1, &mine[0].2, &mine[1].0),
        (
            &json!("design"),
            &json!("Plans"),
            &json!("#e79ab5"),
            &json!("general")
        )
    );
}

/// Default channel groups: administrators make, rename, fill and remove them with Zulip's
/// checks; everyone is told (`default_stream_groups`) and reads them in `/register`; an
/// archived channel leaves them; they survive a restart.
#[tokio::test]
async fn default_channel_groups_are_kept_and_announced() {
    let o = org().await;
    let owner = o.server.api(Some(&o.owner));
    let alice = o.server.api(Some(&o.alice.1));
    for name in ["design", "frontend", "backend"] {
        create(&owner, name, &[]).await;
    }
    create(&owner, "secret", &[("invite_only", "true")]).await;
    create(&owner, "welcome", &[("is_default_stream", "true")]).await;
    let (queue, _) =
        crate::realtime::register(&alice, &[("event_types", r#"["default_stream_groups"]"#)]).await;
    let make = |name: &'static str, channels: &'static str| {
        let owner = &owner;
        async move {
            let (status, body) = owner
                .post(
                    "/default_stream_groups/create",
                    &[
                        ("group_name", name),
                        ("description", "For engineers"),
                        ("stream_names", channels),
                    ],
                )
                .await;
            (status, body["msg"].clone())
        }
    };
    let (status, body) = alice
        .post(
            "/default_stream_groups/create",
            &[
                ("group_name", "x"),
                ("description", ""),
                ("stream_names", "[]"),
            ],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Must be an organization administrator")
        )
    );
    let refusals = [
        (
            make(" ", "[]").await,
            "Invalid default channel group name ''",
        ),
        (
            make("engineering", r#"["nope"]"#).await,
            "Invalid channel name 'nope'",
        ),
        (
            make("engineering", r#"["secret"]"#).await,
            "Invalid channel name 'secret'",
        ),
        (
            make("engineering", r#"["welcome"]"#).await,
            "'welcome' is a default channel and cannot be added to 'engineering'",
        ),
    ];
    for ((status, msg), expected) in refusals {
        assert_eq!((status, msg), (StatusCode::BAD_REQUEST, json!(expected)));
    }
    assert_eq!(
        make("engineering", r#"["frontend", "backend"]"#).await,
        (StatusCode::OK, json!(""))
    );
    assert_eq!(
        make("Engineering", "[]").await,
        (
            StatusCode::BAD_REQUEST,
            json!("Default channel group 'Engineering' already exists")
        )
    );
    let mut ids = Vec::new();
    for name in ["frontend", "backend", "design"] {
        let (status, body) = owner.get("/get_stream_id", &[("stream", name)]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        ids.push(body["stream_id"].as_u64().unwrap());
    }
    let (frontend, backend, design) = (ids[0], ids[1], ids[2]);
    let events = crate::realtime::drain(&alice, &queue).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        events[0]["default_stream_groups"],
        json!([{"name": "engineering", "id": 1, "description": "For engineers",
                "streams": [backend, frontend]}])
    );

    let path = "/default_stream_groups/1";
    let (status, body) = owner.call(Method::PATCH, path, &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("You must pass \"new_description\" or \"new_group_name\".")
        )
    );
    let (status, _) = owner
        .call(Method::PATCH, path, &[("new_group_name", "Engineers")])
        .await;
    assert_eq!(status, StatusCode::OK);
    let streams = "/default_stream_groups/1/streams";
    let (status, body) = owner
        .call(
            Method::PATCH,
            streams,
            &[("op", "add"), ("stream_names", r#"["frontend"]"#)],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Channel 'frontend' is already present in default channel group 'Engineers'")
        )
    );
    let (status, body) = owner
        .call(
            Method::PATCH,
            streams,
            &[("op", "remove"), ("stream_names", r#"["design"]"#)],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Channel 'design' is not present in default channel group 'Engineers'")
        )
    );
    let (status, _) = owner
        .call(
            Method::PATCH,
            streams,
            &[("op", "add"), ("stream_names", r#"["design"]"#)],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // Guests are not offered default channel groups.
    let guest = o.server.api(Some(&o.guest.1));
    let (_, state) = crate::realtime::register(
        &guest,
        &[("fetch_event_types", r#"["default_stream_groups"]"#)],
    )
    .await;
    assert_eq!(state["realm_default_stream_groups"], json!([]));
    // Archiving a channel takes it out of the groups.
    let (status, _) = owner
        .call(Method::DELETE, &format!("/streams/{backend}"), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let events = crate::realtime::drain(&alice, &queue).await;
    let last = events.last().unwrap();
    assert_eq!(
        last["default_stream_groups"],
        json!([{"name": "Engineers", "id": 1, "description": "For engineers",
                "streams": [design, frontend]}])
    );

    let creds = o.alice.1.clone();
    let server = o.server.stop().restart();
    let alice = server.api(Some(&creds));
    let owner = server.api(Some(&server.owner()));
    let (_, state) = crate::realtime::register(
        &alice,
        &[("fetch_event_types", r#"["default_stream_groups"]"#)],
    )
    .await;
    assert_eq!(
        state["realm_default_stream_groups"],
        last["default_stream_groups"]
    );
    let (status, _) = owner.call(Method::DELETE, path, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = owner.call(Method::DELETE, path, &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Default channel group with id '1' does not exist.")
        )
    );
    let (_, state) = crate::realtime::register(
        &alice,
        &[("fetch_event_types", r#"["default_stream_groups"]"#)],
    )
    .await;
    assert_eq!(state["realm_default_stream_groups"], json!([]));
}

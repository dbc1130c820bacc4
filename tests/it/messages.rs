//! Sending, reading, narrowing and flagging messages, and their client events.

use crate::support::{Api, Server};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// Alice and Bob in #general; Carol in no channel.
pub(crate) struct Chat {
    pub server: Server,
    pub alice: (u64, Api),
    pub bob: (u64, Api),
    pub carol: (u64, Api),
    pub channel: u64,
}

pub(crate) async fn chat() -> Chat {
    chat_with(&[]).await
}

/// `chat`, on a server started with extra `serve` arguments.
pub(crate) async fn chat_with(args: &[&str]) -> Chat {
    let server = Server::start_with(args);
    let (alice_id, alice) = server
        .create_member("alice@example.com", "Alice Adams")
        .await;
    let (bob_id, bob) = server.create_member("bob@example.com", "Bob Brown").await;
    let (carol_id, carol) = server
        .create_member("carol@example.com", "Carol Clark")
        .await;
    let owner = server.api(Some(&server.owner()));
    let (_, body) = owner
        .post(
            "/channels/create",
            &[
                ("name", "general"),
                ("subscribers", &format!("[{alice_id}, {bob_id}]")),
            ],
        )
        .await;
    let channel = body["id"].as_u64().unwrap();
    Chat {
        alice: (alice_id, server.api(Some(&alice))),
        bob: (bob_id, server.api(Some(&bob))),
        carol: (carol_id, server.api(Some(&carol))),
        server,
        channel,
    }
}

pub(crate) async fn send(api: &Api, params: &[(&str, &str)]) -> u64 {
    let (status, body) = api.post("/messages", params).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["id"].as_u64().unwrap()
}

pub(crate) async fn fetch(api: &Api, params: &[(&str, &str)]) -> Value {
    let (status, body) = api.get("/messages", params).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The newest message `api` can read in `narrow` (null when there is none).
pub(crate) async fn newest(api: &Api, narrow: &str) -> Value {
    newest_messages(api, narrow, 1)
        .await
        .into_iter()
        .next()
        .unwrap_or(Value::Null)
}

/// The newest `n` messages `api` can read in `narrow`, oldest first.
pub(crate) async fn newest_messages(api: &Api, narrow: &str, n: usize) -> Vec<Value> {
    let n = n.to_string();
    let body = fetch(
        api,
        &[
            ("anchor", "newest"),
            ("num_before", &n),
            ("num_after", "0"),
            ("narrow", narrow),
        ],
    )
    .await;
    body["messages"].as_array().cloned().unwrap_or_default()
}

pub(crate) fn ids(body: &Value) -> Vec<u64> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn send_and_read_a_channel_message() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let id = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "lunch"),
            ("content", "Hi @**Bob Brown**, *noon*?"),
        ],
    )
    .await;
    let (status, body) = c.bob.1.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let m = &body["message"];
    let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        vec![
            "id",
            "sender_id",
            "content",
            "recipient_id",
            "timestamp",
            "client",
            "subject",
            "topic_links",
            "is_me_message",
            "reactions",
            "submessages",
            "sender_full_name",
            "sender_email",
            "sender_realm_str",
            "display_recipient",
            "type",
            "avatar_url",
            "content_type",
            "stream_id",
            "flags"
        ]
    );
    assert_eq!(
        m["content"],
        format!("<p>Hi <span class=\"user-mention\" data-user-id=\"{}\">@Bob Brown</span>, <em>noon</em>?</p>", c.bob.0)
    );
    assert_eq!(body["raw_content"], "Hi @**Bob Brown**, *noon*?");
    assert_eq!(
        (
            m["subject"].clone(),
            m["display_recipient"].clone(),
            m["type"].clone()
        ),
        (json!("lunch"), json!("general"), json!("stream"))
    );
    assert_eq!(m["stream_id"], c.channel);
    assert_eq!(m["sender_full_name"], "Alice Adams");
    assert_eq!(m["flags"], json!(["mentioned"]));
    let (_, own) = alice
        .get(&format!("/messages/{id}"), &[("apply_markdown", "false")])
        .await;
    assert_eq!(own["message"]["content"], "Hi @**Bob Brown**, *noon*?");
    assert_eq!(own["message"]["content_type"], "text/x-markdown");
    assert_eq!(own["message"]["flags"], json!(["read"]));
    // Carol is not subscribed, but the channel is public: she reads it as history.
    let (_, hers) = c.carol.1.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(hers["message"]["flags"], json!(["read", "historical"]));
    // By channel id, to the empty topic via its display name.
    let second = send(
        alice,
        &[
            ("type", "channel"),
            ("to", &c.channel.to_string()),
            ("topic", "general chat"),
            ("content", "/me waves"),
        ],
    )
    .await;
    let (_, body) = alice.get(&format!("/messages/{second}"), &[]).await;
    assert_eq!(body["message"]["subject"], "general chat");
    assert_eq!(body["message"]["is_me_message"], true);
    let (_, body) = alice
        .get(
            &format!("/messages/{second}"),
            &[("allow_empty_topic_name", "true")],
        )
        .await;
    assert_eq!(body["message"]["subject"], "");
    // State survives a restart.
    let bob_creds = c.bob.1.creds.clone().unwrap();
    let server = c.server.stop().restart();
    let (_, body) = server
        .api(Some(&bob_creds))
        .get(&format!("/messages/{id}"), &[])
        .await;
    assert_eq!(body["message"]["flags"], json!(["mentioned"]));
}

#[tokio::test]
async fn sending_errors() {
    let c = chat().await;
    let alice = &c.alice.1;
    let (status, body) = alice
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "nowhere"),
                ("topic", "t"),
                ("content", "x"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"result":"error","msg":"Channel 'nowhere' does not exist","code":"STREAM_DOES_NOT_EXIST","stream":"nowhere"})
    );
    let (_, body) = alice
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "999"),
                ("topic", "t"),
                ("content", "x"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Channel with ID '999' does not exist");
    assert_eq!(body["stream_id"], 999);
    let (_, body) = alice
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("content", "x")],
        )
        .await;
    assert_eq!(body["var_name"], "topic");
    let (_, body) = alice
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "general"),
                ("topic", "t"),
                ("content", "  "),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Message must not be empty");
    let (_, body) = alice
        .post(
            "/messages",
            &[
                ("type", "private"),
                ("to", "ghost@example.com"),
                ("content", "x"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Invalid email 'ghost@example.com'");
    let (_, body) = alice
        .post(
            "/messages",
            &[("type", "letter"), ("to", "x"), ("content", "x")],
        )
        .await;
    assert_eq!(body["code"], "REQUEST_VARIABLE_INVALID");
    // A private channel one cannot see does not exist, as far as one can tell.
    let owner = c.server.api(Some(&c.server.owner()));
    owner
        .post(
            "/channels/create",
            &[
                ("name", "secret"),
                ("invite_only", "true"),
                ("subscribers", "[1]"),
            ],
        )
        .await;
    let (_, body) = alice
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "secret"),
                ("topic", "t"),
                ("content", "x"),
            ],
        )
        .await;
    assert_eq!(body["code"], "STREAM_DOES_NOT_EXIST");
    let secret_id = send(
        &owner,
        &[
            ("type", "stream"),
            ("to", "secret"),
            ("topic", "t"),
            ("content", "classified"),
        ],
    )
    .await;
    let (_, body) = alice.get(&format!("/messages/{secret_id}"), &[]).await;
    assert_eq!(
        body,
        json!({"result":"error","msg":"Invalid message(s)","code":"BAD_REQUEST"})
    );
    let body = fetch(
        alice,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", r#"[["search","classified"]]"#),
        ],
    )
    .await;
    assert!(ids(&body).is_empty());
    // Long content is truncated, as Zulip does.
    let long = "a".repeat(10_050);
    let id = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "t"),
            ("content", &long),
        ],
    )
    .await;
    let (_, body) = alice.get(&format!("/messages/{id}"), &[]).await;
    let raw = body["raw_content"].as_str().unwrap();
    assert_eq!(raw.chars().count(), 10_000);
    assert!(raw.ends_with("[message truncated]"));
}

#[tokio::test]
async fn direct_messages_are_private_to_their_participants() {
    let c = chat().await;
    let id = send(
        &c.alice.1,
        &[
            ("type", "direct"),
            ("to", &format!("[{}]", c.bob.0)),
            ("content", "psst"),
        ],
    )
    .await;
    let (_, body) = c.bob.1.get(&format!("/messages/{id}"), &[]).await;
    let m = &body["message"];
    assert_eq!(m["type"], "private");
    assert_eq!(m["subject"], "");
    let people: Vec<u64> = m["display_recipient"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    assert_eq!(people, vec![c.alice.0, c.bob.0]);
    assert_eq!(body["message"]["flags"], json!([]));
    let (_, body) = c.carol.1.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(body["msg"], "Invalid message(s)");
    // By email too, and in a dm narrow.
    send(
        &c.bob.1,
        &[
            ("type", "private"),
            ("to", "alice@example.com"),
            ("content", "hi back"),
        ],
    )
    .await;
    let body = fetch(
        &c.alice.1,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            (
                "narrow",
                &format!(r#"[{{"operator":"dm","operand":[{}]}}]"#, c.bob.0),
            ),
        ],
    )
    .await;
    assert_eq!(ids(&body).len(), 2);
    let body = fetch(
        &c.carol.1,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", r#"[["is","dm"]]"#),
        ],
    )
    .await;
    assert!(ids(&body).is_empty());
}

#[tokio::test]
async fn narrows_and_anchors() {
    let c = chat().await;
    let (alice, bob) = (&c.alice.1, &c.bob.1);
    let mut sent = Vec::new();
    for (who, topic, text) in [
        (alice, "lunch", "pizza today"),
        (bob, "lunch", "pasta"),
        (alice, "code", "review please"),
        (bob, "code", "pizza later"),
    ] {
        sent.push(
            send(
                who,
                &[
                    ("type", "stream"),
                    ("to", "general"),
                    ("topic", topic),
                    ("content", text),
                ],
            )
            .await,
        );
    }
    let all = fetch(
        bob,
        &[
            ("anchor", "newest"),
            ("num_before", "100"),
            ("num_after", "0"),
        ],
    )
    .await;
    assert_eq!(ids(&all), sent);
    assert_eq!(
        (
            all["found_newest"].clone(),
            all["found_oldest"].clone(),
            all["found_anchor"].clone()
        ),
        (json!(true), json!(true), json!(false))
    );
    assert_eq!(all["anchor"], 10_000_000_000_000_000u64);
    // Legacy pairs and modern objects.
    let topic = fetch(
        bob,
        &[
            ("anchor", "oldest"),
            ("num_before", "0"),
            ("num_after", "10"),
            ("narrow", r#"[["stream","general"],["topic","LUNCH"]]"#),
        ],
    )
    .await;
    assert_eq!(ids(&topic), vec![sent[0], sent[1]]);
    let modern = json!([{"operator": "channel", "operand": c.channel}, {"operator": "topic", "operand": "lunch", "negated": true}]).to_string();
    assert_eq!(
        ids(&fetch(
            bob,
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "10"),
                ("narrow", &modern)
            ]
        )
        .await),
        vec![sent[2], sent[3]]
    );
    let by_sender = fetch(
        bob,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", r#"[["sender","alice@example.com"]]"#),
        ],
    )
    .await;
    assert_eq!(ids(&by_sender), vec![sent[0], sent[2]]);
    let search = fetch(
        bob,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", r#"[["search","PIZZA"]]"#),
        ],
    )
    .await;
    assert_eq!(ids(&search), vec![sent[0], sent[3]]);
    // A numeric anchor with neighbours on both sides.
    let around = fetch(
        bob,
        &[
            ("anchor", &sent[1].to_string()),
            ("num_before", "1"),
            ("num_after", "1"),
        ],
    )
    .await;
    assert_eq!(ids(&around), vec![sent[0], sent[1], sent[2]]);
    assert_eq!(
        (
            around["found_anchor"].clone(),
            around["found_oldest"].clone(),
            around["found_newest"].clone()
        ),
        (json!(true), json!(false), json!(false))
    );
    let excluded = fetch(
        bob,
        &[
            ("anchor", &sent[1].to_string()),
            ("num_before", "1"),
            ("num_after", "1"),
            ("include_anchor", "false"),
        ],
    )
    .await;
    assert_eq!(ids(&excluded), vec![sent[0], sent[2]]);
    // first_unread: Bob has read his own messages only.
    let unread = fetch(
        bob,
        &[
            ("anchor", "first_unread"),
            ("num_before", "0"),
            ("num_after", "0"),
        ],
    )
    .await;
    assert_eq!(unread["anchor"], sent[0]);
    let unread = fetch(
        bob,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", r#"[["is","unread"]]"#),
        ],
    )
    .await;
    assert_eq!(ids(&unread), vec![sent[0], sent[2]]);
    // zulip-terminal's start-up query.
    let zt = fetch(
        bob,
        &[
            ("anchor", "0"),
            ("num_before", "30"),
            ("num_after", "10"),
            ("use_first_unread_anchor", "true"),
            ("narrow", "[]"),
            ("client_gravatar", "true"),
            ("apply_markdown", "true"),
        ],
    )
    .await;
    assert_eq!(zt["anchor"], sent[0]);
    assert_eq!(ids(&zt), sent);
    // Limits and bad narrows.
    let (_, body) = bob
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "5000"),
                ("num_after", "1"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Too many messages requested (maximum 5000).");
    let (_, body) = bob
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", r#"[["frobnicate","x"]]"#),
            ],
        )
        .await;
    assert_eq!(
        body,
        json!({"result":"error","msg":"Invalid narrow operator: frobnicate","code":"BAD_NARROW","desc":"frobnicate"})
    );
    let (_, body) = bob
        .get("/messages", &[("anchor", "newest"), ("num_before", "1")])
        .await;
    assert_eq!(body["var_name"], "num_after");
}

#[tokio::test]
async fn flags_unread_state_and_events() {
    let c = chat().await;
    let (alice, bob) = (&c.alice.1, &c.bob.1);
    let (_, reg) = bob
        .post(
            "/register",
            &[
                ("event_types", r#"["message","update_message_flags"]"#),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    let queue = reg["queue_id"].as_str().unwrap().to_owned();
    let first = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "t"),
            ("content", "hello **@**Bob Brown"),
        ],
    )
    .await;
    let second = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "t"),
            ("content", "ping @**Bob Brown**"),
        ],
    )
    .await;
    let (_, events) = bob
        .get("/events", &[("queue_id", &queue), ("dont_block", "true")])
        .await;
    let events = events["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["type"], "message");
    assert_eq!(events[0]["flags"], json!([]));
    assert_eq!(events[1]["flags"], json!(["mentioned"]));
    assert_eq!(
        events[1]["message"]["content"], "ping @**Bob Brown**",
        "the queue asked for Markdown"
    );
    assert!(events[1]["message"].get("_raw_content").is_none());

    let (_, reg) = bob.post("/register", &[]).await;
    assert_eq!(reg["max_message_id"], second);
    assert_eq!(reg["unread_msgs"]["count"], 2);
    assert_eq!(
        reg["unread_msgs"]["streams"],
        json!([{"stream_id": c.channel, "topic": "t", "unread_message_ids": [first, second]}])
    );
    assert_eq!(reg["unread_msgs"]["mentions"], json!([second]));

    let (status, body) = bob
        .post(
            "/messages/flags",
            &[
                ("messages", &format!("[{first}]")),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["messages"], json!([first]));
    let (_, body) = bob
        .post(
            "/messages/flags",
            &[
                ("messages", &format!("[{second}]")),
                ("op", "add"),
                ("flag", "starred"),
            ],
        )
        .await;
    assert_eq!(body["result"], "success");
    let (_, body) = bob
        .post(
            "/messages/flags",
            &[("messages", "[1]"), ("op", "add"), ("flag", "mentioned")],
        )
        .await;
    assert_eq!(body["msg"], "Flag not editable: 'mentioned'");
    let (_, body) = bob
        .post(
            "/messages/flags",
            &[("messages", "[1]"), ("op", "add"), ("flag", "shiny")],
        )
        .await;
    assert_eq!(body["msg"], "Invalid flag: 'shiny'");
    let (_, body) = bob
        .post(
            "/messages/flags",
            &[("messages", "[9999]"), ("op", "add"), ("flag", "read")],
        )
        .await;
    assert_eq!(body["msg"], "Invalid message(s)");
    let (_, events) = bob
        .get(
            "/events",
            &[
                ("queue_id", &queue),
                ("last_event_id", "1"),
                ("dont_block", "true"),
            ],
        )
        .await;
    let flags: Vec<(Value, Value)> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["flag"].clone(), e["messages"].clone()))
        .collect();
    assert_eq!(
        flags,
        vec![
            (json!("read"), json!([first])),
            (json!("starred"), json!([second]))
        ]
    );
    let (_, reg) = bob
        .post(
            "/register",
            &[(
                "fetch_event_types",
                r#"["message","update_message_flags","starred_messages"]"#,
            )],
        )
        .await;
    assert_eq!(reg["unread_msgs"]["count"], 1);
    assert_eq!(reg["starred_messages"], json!([second]));
    let starred = fetch(
        bob,
        &[
            ("anchor", "newest"),
            ("num_before", "5"),
            ("num_after", "0"),
            ("narrow", r#"[["is","starred"]]"#),
        ],
    )
    .await;
    assert_eq!(ids(&starred), vec![second]);
    let mentioned = fetch(
        bob,
        &[
            ("anchor", "newest"),
            ("num_before", "5"),
            ("num_after", "0"),
            ("narrow", r#"[["is","mentioned"]]"#),
        ],
    )
    .await;
    assert_eq!(ids(&mentioned), vec![second]);

    // The deprecated topic endpoint marks the rest read.
    let (status, _) = bob
        .post(
            "/mark_topic_as_read",
            &[("stream_id", &c.channel.to_string()), ("topic_name", "t")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, reg) = bob
        .post(
            "/register",
            &[("fetch_event_types", r#"["message","update_message_flags"]"#)],
        )
        .await;
    assert_eq!(reg["unread_msgs"]["count"], 0);
    let (_, me) = bob.get("/users/me", &[]).await;
    assert_eq!(me["max_message_id"], second);
    let _ = c.carol;
}

#[tokio::test]
async fn topics_of_a_channel_newest_first() {
    let c = chat().await;
    let alice = &c.alice.1;
    let a = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "older"),
            ("content", "1"),
        ],
    )
    .await;
    let b = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", ""),
            ("content", "2"),
        ],
    )
    .await;
    let (_, body) = alice
        .get(&format!("/users/me/{}/topics", c.channel), &[])
        .await;
    assert_eq!(
        body["topics"],
        json!([{"max_id": b, "name": "general chat"}, {"max_id": a, "name": "older"}])
    );
    let (_, body) = alice
        .get(
            &format!("/users/me/{}/topics", c.channel),
            &[("allow_empty_topic_name", "true")],
        )
        .await;
    assert_eq!(body["topics"][0]["name"], "");
    let (_, body) = alice.get(&format!("/streams/{}", c.channel), &[]).await;
    assert_eq!(body["stream"]["first_message_id"], a);
}

#[tokio::test]
async fn hostile_fetch_parameters_are_refused_cleanly() {
    let c = chat().await;
    let bob = &c.bob.1;
    let max = u64::MAX.to_string();
    let (status, body) = bob
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", &max),
                ("num_after", &max),
            ],
        )
        .await;
    assert_eq!(
        (status, body["msg"].as_str()),
        (
            StatusCode::BAD_REQUEST,
            Some("Too many messages requested (maximum 5000).")
        )
    );
    let (_, body) = bob
        .get(
            "/messages",
            &[("anchor", "-5"), ("num_before", "1"), ("num_after", "1")],
        )
        .await;
    assert_eq!(body["code"], "REQUEST_VARIABLE_INVALID");
    let (_, body) = bob
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", "{\"not\": \"a list\"}"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "narrow is not a list");
    for content in [
        "@**",
        "`",
        "```\nunclosed",
        "@_****",
        "#****",
        "\u{F8F0}0\u{F8F1}",
        "****@**x",
    ] {
        let (status, body) = bob
            .post(
                "/messages",
                &[
                    ("type", "stream"),
                    ("to", "general"),
                    ("topic", "t"),
                    ("content", content),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{content:?}: {body}");
    }
}

/// `search:` walks the word index: words of topic and content by their stems, every word of
/// the query, the last one typed also as a prefix, following edits, moves and deletions, and
/// only the caller's messages unless a channel is named.
#[tokio::test]
async fn search_finds_whole_words_and_follows_changes() {
    let c = chat().await;
    let (alice, bob, carol) = (&c.alice.1, &c.bob.1, &c.carol.1);
    let mut sent = Vec::new();
    for (topic, text) in [
        ("Deploys", "Shipped **v2** to staging, then prod."),
        ("deploys", "staging is down"),
        ("lunch", "Stagingpizza is not a word we search"),
    ] {
        let params = [
            ("type", "stream"),
            ("to", "general"),
            ("topic", topic),
            ("content", text),
        ];
        sent.push(send(alice, &params).await);
    }
    let search = |q: &str| json!([["search", q]]).to_string();
    let found = |body: &Value| ids(body);
    let window = |narrow: &str| {
        vec![
            ("anchor".to_owned(), "newest".to_owned()),
            ("num_before".to_owned(), "50".to_owned()),
            ("num_after".to_owned(), "0".to_owned()),
            ("narrow".to_owned(), narrow.to_owned()),
        ]
    };
    async fn run(api: &crate::support::Api, params: Vec<(String, String)>) -> Value {
        let pairs: Vec<(&str, &str)> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        fetch(api, &pairs).await
    }
    let q = search("STAGING ");
    assert_eq!(found(&run(bob, window(&q)).await), vec![sent[0], sent[1]]);
    // Typed last, it is also the start of a longer word.
    let q = search("STAGING");
    assert_eq!(found(&run(bob, window(&q)).await), sent);
    let q = search("staging deploys prod");
    assert_eq!(found(&run(bob, window(&q)).await), vec![sent[0]]);
    // "stag" typed last is the start of "staging"; followed by a space it is a word of its own.
    let q = search("stag");
    assert_eq!(found(&run(bob, window(&q)).await), sent);
    let q = search("stag ");
    assert!(found(&run(bob, window(&q)).await).is_empty());
    // Only stop words: nothing, as in Zulip.
    let q = search("is the");
    assert!(found(&run(bob, window(&q)).await).is_empty());
    // Carol holds no copies; naming the (public) channel searches its history.
    let q = search("staging ");
    assert!(found(&run(carol, window(&q)).await).is_empty());
    let in_channel = json!([["channel", "general"], ["search", "staging "]]).to_string();
    assert_eq!(
        found(&run(carol, window(&in_channel)).await),
        vec![sent[0], sent[1]]
    );
    let negated = json!([{"operator": "search", "operand": "prod", "negated": true}, {"operator": "search", "operand": "staging "}]).to_string();
    assert_eq!(found(&run(bob, window(&negated)).await), vec![sent[1]]);
    // A topic smaller than the word's list is walked itself.
    let in_topic = json!([
        ["channel", "general"],
        ["topic", "lunch"],
        ["search", "word"]
    ])
    .to_string();
    assert_eq!(found(&run(bob, window(&in_topic)).await), vec![sent[2]]);
    let long = json!([["search", "word ".repeat(201)]]).to_string();
    let pairs: Vec<(String, String)> = window(&long);
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (status, body) = bob.get("/messages", &pairs).await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str().unwrap()),
        (400, "BAD_NARROW"),
        "{body}"
    );

    // An edit, a topic move and a deletion change what is found.
    let (status, body) = alice
        .call(
            reqwest::Method::PATCH,
            &format!("/messages/{}", sent[1]),
            &[("content", "production is down")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = alice
        .call(
            reqwest::Method::PATCH,
            &format!("/messages/{}", sent[2]),
            &[
                ("topic", "staging lunch"),
                ("propagate_mode", "change_one"),
                ("send_notification_to_new_thread", "false"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let q = search("staging");
    assert_eq!(found(&run(bob, window(&q)).await), vec![sent[0], sent[2]]);
    let q = search("production");
    assert_eq!(found(&run(bob, window(&q)).await), vec![sent[1]]);
    let (status, body) = alice.delete(&format!("/messages/{}", sent[0]), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let q = search("staging");
    assert_eq!(found(&run(bob, window(&q)).await), vec![sent[2]]);
}

/// Zulip's search rules and Chronicle's additions, through `GET /messages`: stems, stop words,
/// phrases, identifiers and URLs by parts and whole, CJK without spaces, the last word as a
/// prefix, and the highlights of each result (`match_content`, `match_subject`), also from
/// `GET /messages/matches_narrow`.
#[tokio::test]
async fn search_stems_phrases_identifiers_cjk_and_highlights() {
    let c = chat().await;
    let (alice, bob) = (&c.alice.1, &c.bob.1);
    let mut sent = Vec::new();
    for (topic, text) in [
        ("Deploys", "We **deployed** the new build"),
        ("deploys", "The deploy failed twice"),
        (
            "code",
            "Set `sess.opts` from https://example.com/path and call getUserName()",
        ),
        ("旅行", "明日は東京タワーに行きます"),
        ("lunch", "failed to find a deployment for lunch"),
    ] {
        let params = [
            ("type", "stream"),
            ("to", "general"),
            ("topic", topic),
            ("content", text),
        ];
        sent.push(send(alice, &params).await);
    }
    let search = |q: &str| {
        let narrow = json!([["search", q]]).to_string();
        async move {
            let params = [
                ("anchor", "newest"),
                ("num_before", "50"),
                ("num_after", "0"),
                ("narrow", narrow.as_str()),
            ];
            fetch(bob, &params).await
        }
    };
    for (query, expected) in [
        // Stems: "deploying" finds deploy, deployed and deployment (all "deploy" in English
        // Snowball, as in Zulip).
        ("deploying ", vec![sent[0], sent[1], sent[4]]),
        ("deploys ", vec![sent[0], sent[1], sent[4]]),
        ("deployed ", vec![sent[0], sent[1], sent[4]]),
        // The last word typed is also a prefix.
        ("deployme", vec![sent[4]]),
        ("deplo", vec![sent[0], sent[1], sent[4]]),
        ("deplo ", vec![]),
        // A phrase: its words in order, unstemmed.
        ("\"deploy failed\"", vec![sent[1]]),
        ("\"failed deploy\"", vec![]),
        ("\"deployed the\" build", vec![sent[0]]),
        // Identifiers and URLs by their parts and whole.
        ("sess.opts", vec![sent[2]]),
        ("opts ", vec![sent[2]]),
        ("example.com/path", vec![sent[2]]),
        ("example.org", vec![]),
        ("user name ", vec![sent[2]]),
        // CJK without spaces, in content and topic.
        ("東京", vec![sent[3]]),
        ("タワー", vec![sent[3]]),
        ("旅行", vec![sent[3]]),
        ("京都", vec![]),
        // Stop words alone find nothing.
        ("the a to ", vec![]),
    ] {
        assert_eq!(ids(&search(query).await), expected, "{query:?}");
    }
    let body = search("deploying").await;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        (
            messages[0]["match_content"].as_str().unwrap(),
            messages[0]["match_subject"].as_str().unwrap()
        ),
        (
            "<p>We <strong><span class=\"highlight\">deployed</span></strong> the new build</p>",
            "<span class=\"highlight\">Deploys</span>"
        )
    );
    assert_eq!(
        messages[1]["match_content"],
        "<p>The <span class=\"highlight\">deploy</span> failed twice</p>"
    );
    let body = search("\"deploy failed\"").await;
    assert_eq!(
        body["messages"][0]["match_content"],
        "<p>The <span class=\"highlight\">deploy failed</span> twice</p>"
    );
    assert_eq!(body["messages"][0]["match_subject"], "deploys");
    // A narrow without a search carries no highlights.
    let plain = json!([["channel", "general"]]).to_string();
    let body = fetch(
        bob,
        &[
            ("anchor", "newest"),
            ("num_before", "1"),
            ("num_after", "0"),
            ("narrow", &plain),
        ],
    )
    .await;
    assert!(body["messages"][0].get("match_content").is_none(), "{body}");
    // `matches_narrow` answers with the same highlights.
    let (status, body) = bob
        .get(
            "/messages/matches_narrow",
            &[
                ("msg_ids", &json!([sent[3], sent[4]]).to_string()),
                ("narrow", &json!([["search", "東京"]]).to_string()),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["messages"],
        json!({sent[3].to_string(): {
            "match_content": "<p>明日は<span class=\"highlight\">東京</span>タワーに行きます</p>",
            "match_subject": "旅行",
        }})
    );
}

#[tokio::test]
async fn narrows_naming_nobody_or_no_message_are_refused() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    for (narrow, desc) in [
        (
            r#"[["sender","nobody@example.com"]]"#,
            "unknown user nobody@example.com",
        ),
        (r#"[["dm-including",999]]"#, "unknown user 999"),
        (
            r#"[{"operator":"mentions","operand":"nobody@example.com"}]"#,
            "unknown user nobody@example.com",
        ),
        (r#"[["id","abc"]]"#, "Invalid message ID"),
    ] {
        let (status, body) = owner
            .get(
                "/messages",
                &[
                    ("anchor", "newest"),
                    ("num_before", "5"),
                    ("num_after", "0"),
                    ("narrow", narrow),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{narrow}");
        assert_eq!(
            body,
            json!({"result": "error", "code": "BAD_NARROW", "desc": desc,
                "msg": format!("Invalid narrow operator: {desc}")}),
            "{narrow}"
        );
    }
    // A known sender and a numeric id are fine.
    let email = server.owner().email;
    for narrow in [json!([["sender", email]]), json!([["id", "1"]])] {
        let (status, body) = owner
            .get(
                "/messages",
                &[
                    ("anchor", "newest"),
                    ("num_before", "5"),
                    ("num_after", "0"),
                    ("narrow", &narrow.to_string()),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
}

#[tokio::test]
async fn mentions_finds_personal_mentions_that_notify_of_anyone_and_me() {
    let c = chat().await;
    let ((alice_id, alice), (bob_id, bob)) = (&c.alice, &c.bob);
    let mut sent = Vec::new();
    for (who, text) in [
        (alice, "@**Bob Brown** can you look?"),
        (alice, "@_**Bob Brown** said so"),
        (bob, "@**all** lunch"),
        (bob, "@**Alice Adams** and @**Bob Brown**, both"),
        (alice, "nobody named"),
    ] {
        sent.push(
            send(
                who,
                &[
                    ("type", "stream"),
                    ("to", "general"),
                    ("topic", "t"),
                    ("content", text),
                ],
            )
            .await,
        );
    }
    async fn narrowed(api: &Api, narrow: Value) -> Vec<u64> {
        ids(&fetch(
            api,
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "100"),
                ("narrow", &narrow.to_string()),
            ],
        )
        .await)
    }
    let mentions = |operand: Value| json!([{"operator": "mentions", "operand": operand}]);
    // Bob's personal mentions, by id, address or `me`: not the silent one, not `@all`.
    let bobs = vec![sent[0], sent[3]];
    assert_eq!(narrowed(bob, mentions(json!(bob_id))).await, bobs);
    assert_eq!(
        narrowed(bob, mentions(json!("bob@example.com"))).await,
        bobs
    );
    assert_eq!(narrowed(bob, mentions(json!("me"))).await, bobs);
    // Anyone may look for another's: Alice finds where Bob was mentioned, and her own.
    assert_eq!(narrowed(alice, mentions(json!(bob_id))).await, bobs);
    assert_eq!(narrowed(alice, mentions(json!("me"))).await, vec![sent[3]]);
    assert_eq!(
        narrowed(alice, mentions(json!(alice_id))).await,
        vec![sent[3]]
    );
    // Negated, and with another operator.
    let not_bob = json!([{"operator": "mentions", "operand": bob_id, "negated": true}]);
    assert_eq!(
        narrowed(bob, not_bob).await,
        vec![sent[1], sent[2], sent[4]]
    );
    let both = json!([
        {"operator": "mentions", "operand": "me"},
        {"operator": "sender", "operand": "me"}
    ]);
    assert_eq!(narrowed(bob, both).await, vec![sent[3]]);
    // `sender:me` is the one asking.
    let mine = json!([{"operator": "sender", "operand": "me"}]);
    assert_eq!(narrowed(alice, mine).await, vec![sent[0], sent[1], sent[4]]);
}

/// A direct message from `api` to `ids`: the status and the error message.
async fn dm(api: &Api, ids: &[u64]) -> (StatusCode, Value) {
    let to = serde_json::to_string(ids).unwrap();
    let (status, body) = api
        .post(
            "/messages",
            &[("type", "direct"), ("to", &to), ("content", "hi")],
        )
        .await;
    (status, body["msg"].clone())
}

/// The organization's direct-message permissions: who may start a conversation, and who must
/// be in one for it to be allowed; oneself and bots are always reachable.
#[tokio::test]
async fn direct_message_permission_groups_are_enforced() {
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let (carol_id, carol) = &c.carol;
    let owner = c.server.api(Some(&c.server.owner()));
    // Bob and Alice already talk.
    assert_eq!(dm(bob, &[*alice_id]).await.0, StatusCode::OK);
    let (_, state) = crate::realtime::register(alice, &[]).await;
    let everyone = owner.group_id("role:everyone").await;
    assert_eq!(
        (
            &state["realm_direct_message_initiator_group"],
            &state["realm_direct_message_permission_group"]
        ),
        (&json!(everyone), &json!(everyone))
    );

    // Only administrators may start conversations.
    let admins = owner.group_id("role:administrators").await;
    let (status, body) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[(
                "direct_message_initiator_group",
                &format!("{{\"new\": {admins}}}"),
            )],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let refused = json!("You do not have permission to initiate direct message conversations.");
    assert_eq!(
        dm(carol, &[*alice_id]).await,
        (StatusCode::BAD_REQUEST, refused.clone())
    );
    assert_eq!(
        dm(carol, &[*alice_id, *bob_id]).await,
        (StatusCode::BAD_REQUEST, refused)
    );
    // A conversation that exists goes on, and writing to oneself is always allowed.
    assert_eq!(dm(alice, &[*bob_id]).await.0, StatusCode::OK);
    assert_eq!(dm(carol, &[*carol_id]).await.0, StatusCode::OK);
    // An administrator starts one; then Carol may answer.
    let owner_id = owner.get("/users/me", &[]).await.1["user_id"]
        .as_u64()
        .unwrap();
    assert_eq!(dm(&owner, &[*carol_id]).await.0, StatusCode::OK);
    assert_eq!(dm(carol, &[owner_id]).await.0, StatusCode::OK);

    // Only conversations with an administrator in them.
    let (status, _) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[
                (
                    "direct_message_initiator_group",
                    &format!("{{\"new\": {everyone}}}"),
                ),
                (
                    "direct_message_permission_group",
                    &format!("{{\"new\": {admins}}}"),
                ),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        dm(alice, &[*bob_id]).await,
        (
            StatusCode::BAD_REQUEST,
            json!("This conversation does not include any users who can authorize it.")
        )
    );
    assert_eq!(dm(carol, &[owner_id, *bob_id]).await.0, StatusCode::OK);
    // Nobody: direct messages are off, but oneself is still reachable.
    let nobody = owner.group_id("role:nobody").await;
    let (status, _) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[(
                "direct_message_permission_group",
                &format!("{{\"new\": {nobody}}}"),
            )],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        dm(&owner, &[*carol_id]).await,
        (
            StatusCode::BAD_REQUEST,
            json!("Direct messages are disabled in this organization.")
        )
    );
    assert_eq!(dm(alice, &[*alice_id]).await.0, StatusCode::OK);
    // Bots may always write (an incoming webhook without a channel writes to its owner).
    let (_, bot) = alice
        .post(
            "/bots",
            &[
                ("full_name", "Helper"),
                ("short_name", "helper"),
                ("bot_type", "1"),
            ],
        )
        .await;
    let (_, found) = alice
        .get(&format!("/users/{}", bot["user_id"].as_u64().unwrap()), &[])
        .await;
    let bot = c.server.api(Some(&crate::support::Creds {
        email: found["user"]["email"].as_str().unwrap().to_owned(),
        key: bot["api_key"].as_str().unwrap().to_owned(),
    }));
    assert_eq!(dm(&bot, &[*alice_id]).await.0, StatusCode::OK);
}

#[tokio::test]
async fn user_group_mentions_mention_the_members_whom_the_group_allows() {
    let c = chat().await;
    let ((_, alice), (bob_id, bob)) = (&c.alice, &c.bob);
    let owner = c.server.api(Some(&c.server.owner()));
    let (status, body) = owner
        .post(
            "/user_groups/create",
            &[
                ("name", "reviewers"),
                ("description", "Reviews"),
                ("members", &format!("[{bob_id}]")),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let group = body["group_id"].as_u64().unwrap();
    let to = |text| {
        [
            ("type", "stream"),
            ("to", "general"),
            ("topic", "t"),
            ("content", text),
        ]
    };
    let loud = send(alice, &to("@*reviewers* please look")).await;
    let quiet = send(alice, &to("@_*reviewers* fyi")).await;
    async fn mentioned(api: &Api, id: u64) -> bool {
        let (_, body) = api.get(&format!("/messages/{id}"), &[]).await;
        body["message"]["flags"]
            .as_array()
            .unwrap()
            .contains(&json!("mentioned"))
    }
    // The members are mentioned by the loud mention only; others are not.
    assert!(mentioned(bob, loud).await);
    assert!(!mentioned(bob, quiet).await);
    assert!(!mentioned(alice, loud).await);
    let (_, body) = bob.get(&format!("/messages/{loud}"), &[]).await;
    assert_eq!(
        body["message"]["content"],
        format!(
            "<p><span class=\"user-group-mention\" data-user-group-id=\"{group}\">@reviewers</span> please look</p>"
        )
    );
    // Only whom `can_mention_group` allows may mention the group loudly; anyone, silently.
    let (status, body) = owner
        .call(
            Method::PATCH,
            &format!("/user_groups/{group}"),
            &[(
                "can_mention_group",
                &json!({"new": {"direct_members": [bob_id], "direct_subgroups": []}}).to_string(),
            )],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = alice.post("/messages", &to("@*reviewers* again")).await;
    assert_eq!(
        (status, body["msg"].as_str()),
        (
            StatusCode::BAD_REQUEST,
            Some("You are not allowed to mention user group 'reviewers'.")
        )
    );
    send(alice, &to("@_*reviewers* quietly")).await;
    send(bob, &to("@*reviewers* from a member allowed")).await;
    // Editing into a mention follows the same rule.
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{quiet}"),
            &[("content", "@*reviewers* now loud")],
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn a_poll_or_todo_message_is_a_widget_from_its_first_event() {
    use crate::realtime::{drain, register};
    let c = chat().await;
    let ((alice_id, alice), (_, bob)) = (&c.alice, &c.bob);
    let (queue, _) = register(bob, &[]).await;
    let poll = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "lunch"),
            ("content", "/poll Where to?\n- Pizza\n- Soup"),
        ],
    )
    .await;
    let widget = json!({"widget_type": "poll",
        "extra_data": {"question": "Where to?", "options": ["Pizza", "Soup"]}});
    // Bob hears the `message` event carrying the widget, and no `submessage` event of its own
    // (the channel's first message also updates its `first_message_id`).
    let events = drain(bob, &queue).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "stream"], "{events:?}");
    let sub = &events[0]["message"]["submessages"];
    assert_eq!(sub.as_array().unwrap().len(), 1, "{sub}");
    assert_eq!(
        (sub[0]["msg_type"].as_str(), sub[0]["sender_id"].as_u64()),
        (Some("widget"), Some(*alice_id))
    );
    let content: Value = serde_json::from_str(sub[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, widget);
    // A vote is a submessage of its own, heard as one; the fetched message holds both.
    let (status, body) = bob
        .post(
            "/submessage",
            &[
                ("message_id", &poll.to_string()),
                ("msg_type", "widget"),
                ("content", r#"{"type":"vote","key":"canned,0","vote":1}"#),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let events = drain(bob, &queue).await;
    assert_eq!(
        events
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["submessage"]
    );
    let (_, body) = alice.get(&format!("/messages/{poll}"), &[]).await;
    assert_eq!(body["message"]["submessages"].as_array().unwrap().len(), 2);
    // Plain messages carry none.
    let plain = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "lunch"),
            ("content", "/pollster"),
        ],
    )
    .await;
    let (_, body) = alice.get(&format!("/messages/{plain}"), &[]).await;
    assert_eq!(body["message"]["submessages"], json!([]));
}

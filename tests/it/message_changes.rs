//! Changing messages after they are sent: reactions, edits and moves with their history,
//! deletion, and the mark-as-read endpoints; with the client events each user receives.

use crate::support::{Api, Server};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

struct Org {
    server: Server,
    owner: Api,
    alice: (u64, Api),
    bob: (u64, Api),
    carol: (u64, Api),
    general: u64,
}

/// Alice and Bob in #general; Carol in no channel (`messages::chat`), plus the owner.
async fn org() -> Org {
    let chat = crate::messages::chat().await;
    Org {
        owner: chat.server.api(Some(&chat.server.owner())),
        alice: chat.alice,
        bob: chat.bob,
        carol: chat.carol,
        general: chat.channel,
        server: chat.server,
    }
}

/// A message to #general.
async fn send(api: &Api, topic: &str, content: &str) -> u64 {
    let params = [
        ("type", "stream"),
        ("to", "general"),
        ("topic", topic),
        ("content", content),
    ];
    crate::messages::send(api, &params).await
}

async fn message(api: &Api, id: u64) -> Value {
    let (status, body) = api.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["message"].clone()
}

async fn register(api: &Api, capabilities: &str) -> String {
    let (status, body) = api
        .post(
            "/register",
            &[
                (
                    "event_types",
                    r#"["reaction","update_message","delete_message"]"#,
                ),
                ("client_capabilities", capabilities),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["queue_id"].as_str().unwrap().to_owned()
}

async fn events(api: &Api, queue: &str) -> Vec<Value> {
    let (status, body) = api
        .get("/events", &[("queue_id", queue), ("dont_block", "true")])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["events"].as_array().unwrap().clone()
}

fn error(status: StatusCode, body: &Value) -> (u16, String, String) {
    (
        status.as_u16(),
        body["code"].as_str().unwrap_or_default().to_owned(),
        body["msg"].as_str().unwrap_or_default().to_owned(),
    )
}

fn bad(msg: &str) -> (u16, String, String) {
    (400, "BAD_REQUEST".into(), msg.into())
}

#[tokio::test]
async fn reactions() {
    let o = org().await;
    let (alice_id, alice) = &o.alice;
    let (bob_id, bob) = &o.bob;
    let id = send(alice, "lunch", "Tacos?").await;
    let bob_queue = register(bob, "{}").await;
    let carol_queue = register(&o.carol.1, "{}").await;
    let path = format!("/messages/{id}/reactions");

    let (status, body) = bob.post(&path, &[("emoji_name", "octopus")]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The same emoji twice, by name or by an alias of the same code point.
    let (status, body) = bob.post(&path, &[("emoji_name", "octopus")]).await;
    assert_eq!(
        error(status, &body),
        (
            400,
            "REACTION_ALREADY_EXISTS".into(),
            "Reaction already exists.".into()
        )
    );
    // Alice joins with an alias: the reaction keeps the name it already has.
    let (status, body) = alice.post(&path, &[("emoji_name", "thumbs_up")]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = bob
        .post(&path, &[("emoji_name", "+1"), ("emoji_code", "1f44d")])
        .await;
    assert_eq!(status, StatusCode::OK);

    let m = message(&o.carol.1, id).await;
    // Emails are shown as the organization's visibility setting allows: placeholders here.
    let bob_email = format!("user{bob_id}@chronicle.invalid");
    let alice_email = format!("user{alice_id}@chronicle.invalid");
    assert_eq!(
        m["reactions"],
        json!([
            {"emoji_name": "octopus", "emoji_code": "1f419", "reaction_type": "unicode_emoji",
             "user_id": bob_id, "user": {"id": bob_id, "email": bob_email,
             "full_name": "Bob Brown", "is_mirror_dummy": false}},
            {"emoji_name": "thumbs_up", "emoji_code": "1f44d", "reaction_type": "unicode_emoji",
             "user_id": alice_id, "user": {"id": alice_id, "email": alice_email,
             "full_name": "Alice Adams", "is_mirror_dummy": false}},
            {"emoji_name": "thumbs_up", "emoji_code": "1f44d", "reaction_type": "unicode_emoji",
             "user_id": bob_id, "user": {"id": bob_id, "email": bob_email,
             "full_name": "Bob Brown", "is_mirror_dummy": false}},
        ])
    );
    // has:reaction narrows.
    let (_, found) = alice
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
                ("narrow", r#"[["has","reaction"]]"#),
            ],
        )
        .await;
    assert_eq!(found["messages"].as_array().unwrap().len(), 1, "{found}");

    let (status, body) = bob.delete(&path, &[("emoji_name", "octopus")]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = bob.delete(&path, &[("emoji_name", "octopus")]).await;
    assert_eq!(
        error(status, &body),
        (
            400,
            "REACTION_DOES_NOT_EXIST".into(),
            "Reaction doesn't exist.".into()
        )
    );

    // Errors, each with Zulip's words.
    for (params, expected) in [
        (
            vec![("emoji_name", "no_such_emoji")],
            bad("Emoji 'no_such_emoji' does not exist"),
        ),
        (
            vec![("emoji_name", "tada"), ("emoji_code", "ffff")],
            bad("Invalid emoji code."),
        ),
        (
            vec![("emoji_name", "tada"), ("emoji_code", "1f419")],
            bad("Invalid emoji name."),
        ),
        (
            vec![("emoji_name", "tada"), ("reaction_type", "sticker")],
            bad("Invalid emoji type."),
        ),
    ] {
        let (status, body) = bob.post(&path, &params).await;
        assert_eq!(error(status, &body), expected, "{params:?}");
    }
    let (status, body) = bob.post(&path, &[]).await;
    assert_eq!(
        (
            status.as_u16(),
            body["code"].clone(),
            body["var_name"].clone()
        ),
        (400, json!("REQUEST_VARIABLE_MISSING"), json!("emoji_name"))
    );
    let (status, body) = bob
        .post("/messages/999999/reactions", &[("emoji_name", "tada")])
        .await;
    assert_eq!(error(status, &body), bad("Invalid message(s)"));

    // Bob received the message, so he hears of every reaction, his own included.
    let got = events(bob, &bob_queue).await;
    let ops: Vec<(String, String, u64)> = got
        .iter()
        .map(|e| {
            (
                e["op"].as_str().unwrap().to_owned(),
                e["emoji_name"].as_str().unwrap().to_owned(),
                e["user_id"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ops,
        vec![
            ("add".into(), "octopus".into(), *bob_id),
            ("add".into(), "thumbs_up".into(), *alice_id),
            ("add".into(), "thumbs_up".into(), *bob_id),
            ("remove".into(), "octopus".into(), *bob_id),
        ]
    );
    // Bob sees his own real email.
    assert_eq!(
        got[0],
        json!({"type": "reaction", "op": "add", "message_id": id, "user_id": bob_id,
               "user": {"user_id": bob_id, "email": "bob@example.com", "full_name": "Bob Brown"},
               "emoji_name": "octopus", "emoji_code": "1f419", "reaction_type": "unicode_emoji",
               "id": 0})
    );
    // Carol has no copy of the message: she is not told.
    assert_eq!(events(&o.carol.1, &carol_queue).await, Vec::<Value>::new());

    // Reactions are state: they survive a restart.
    let server = o.server.stop().restart();
    let carol = server.api(Some(&o.carol.1.creds.clone().unwrap()));
    let m = message(&carol, id).await;
    assert_eq!(m["reactions"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn editing_content_keeps_history_and_tells_holders() {
    let o = org().await;
    let (alice_id, alice) = &o.alice;
    let (bob_id, bob) = &o.bob;
    let id = send(alice, "lunch", "Hello!").await;
    let queue = register(bob, r#"{"bulk_message_deletion": true}"#).await;
    let path = format!("/messages/{id}");

    // Only the sender edits content.
    let (status, body) = bob
        .call(Method::PATCH, &path, &[("content", "mine now")])
        .await;
    assert_eq!(
        error(status, &body),
        bad("You don't have permission to edit this message")
    );
    let (status, body) = o
        .owner
        .call(Method::PATCH, &path, &[("content", "owner edit")])
        .await;
    assert_eq!(
        error(status, &body),
        bad("You don't have permission to edit this message")
    );
    for (params, expected) in [
        (vec![], bad("Nothing to change")),
        (vec![("content", "Hello!")], bad("Nothing to change")),
        (
            vec![("content", "x"), ("propagate_mode", "change_all")],
            bad("Invalid propagate_mode without topic edit"),
        ),
        (
            vec![("content", "x"), ("stream_id", "1")],
            bad("Cannot change message content while changing channel"),
        ),
    ] {
        let (status, body) = alice.call(Method::PATCH, &path, &params).await;
        assert_eq!(error(status, &body), expected, "{params:?}");
    }
    let (status, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[("propagate_mode", "sideways"), ("topic", "x")],
        )
        .await;
    assert_eq!(
        (
            status.as_u16(),
            body["code"].clone(),
            body["var_name"].clone()
        ),
        (
            400,
            json!("REQUEST_VARIABLE_INVALID"),
            json!("propagate_mode")
        )
    );

    let (status, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[("content", "Howdy @**Bob Brown**!")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["detached_uploads"], json!([]));

    let m = message(bob, id).await;
    let mention = format!(
        "<p>Howdy <span class=\"user-mention\" data-user-id=\"{bob_id}\">@Bob Brown</span>!</p>"
    );
    assert_eq!(m["content"], mention.as_str());
    assert_eq!(
        m["flags"],
        json!(["mentioned"]),
        "an edit that mentions sets the flag"
    );
    let edited_at = m["last_edit_timestamp"].as_i64().unwrap();
    assert!(m.get("last_moved_timestamp").is_none(), "{m}");
    assert_eq!(
        m["edit_history"],
        json!([{"user_id": alice_id, "timestamp": edited_at, "prev_content": "Hello!",
                "prev_rendered_content": "<p>Hello!</p>"}])
    );

    let got = events(bob, &queue).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0],
        json!({
            "type": "update_message", "user_id": alice_id, "edit_timestamp": edited_at,
            "message_id": id, "message_ids": [id], "rendering_only": false,
            "stream_id": o.general, "stream_name": "general",
            "orig_content": "Hello!", "orig_rendered_content": "<p>Hello!</p>",
            "content": "Howdy @**Bob Brown**!", "rendered_content": mention,
            "is_me_message": false, "flags": ["mentioned"], "id": 0,
        })
    );

    // Edit the topic and the content at once: one history entry.
    let (status, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[("content", "Bye"), ("topic", "dinner")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let m = message(bob, id).await;
    assert_eq!(
        m["flags"],
        json!([]),
        "the mention is gone with the content"
    );
    assert_eq!(m["subject"], "dinner");
    let (status, body) = bob.get(&format!("{path}/history"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let history = body["message_history"].as_array().unwrap();
    assert_eq!(history.len(), 3, "{body}");
    assert_eq!(
        history[0],
        json!({"topic": "lunch", "content": "Hello!", "rendered_content": "<p>Hello!</p>",
               "user_id": alice_id, "timestamp": history[0]["timestamp"]})
    );
    assert_eq!(history[1]["content"], "Howdy @**Bob Brown**!");
    assert_eq!(history[1]["prev_content"], "Hello!");
    assert_eq!(history[1]["topic"], "lunch");
    assert!(history[1].get("prev_topic").is_none());
    assert_eq!(
        (
            history[2]["content"].clone(),
            history[2]["topic"].clone(),
            history[2]["prev_topic"].clone(),
            history[2]["prev_content"].clone(),
        ),
        (
            json!("Bye"),
            json!("dinner"),
            json!("lunch"),
            json!("Howdy @**Bob Brown**!")
        )
    );
    // Word by word, insertions before the deletions they replace (as Zulip's lxml diff).
    assert_eq!(
        history[1]["content_html_diff"],
        format!(
            "<div><p><span class=\"highlight_text_inserted\">Howdy </span>\
             <span class=\"user-mention\" data-user-id=\"{bob_id}\">\
             <span class=\"highlight_text_inserted\">@Bob Brown</span></span>\
             <span class=\"highlight_text_inserted\">!</span>\
             <span class=\"highlight_text_deleted\">Hello!</span></p></div>"
        )
    );
    assert_eq!(
        history[2]["content_html_diff"],
        format!(
            "<div><p><span class=\"highlight_text_inserted\">Bye</span>\
             <span class=\"highlight_text_deleted\">Howdy @Bob Brown!</span></p></div>"
        )
    );
    let (status, body) = o.carol.1.get("/messages/999999/history", &[]).await;
    assert_eq!(error(status, &body), bad("Invalid message(s)"));
}

#[tokio::test]
async fn moving_topics_and_channels() {
    let o = org().await;
    let (alice_id, alice) = &o.alice;
    let (_, bob) = &o.bob;
    let first = send(alice, "plans", "one").await;
    let second = send(bob, "plans", "two").await;
    let third = send(alice, "plans", "three").await;
    let other = send(alice, "elsewhere", "four").await;
    let queue = register(bob, r#"{"bulk_message_deletion": true}"#).await;
    let topic_of = |m: &Value| m["subject"].as_str().unwrap().to_owned();

    // change_later from the second message (without a notice: see move_notices).
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{second}"),
            &[
                ("topic", "later plans"),
                ("propagate_mode", "change_later"),
                ("send_notification_to_new_thread", "false"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut topics = Vec::new();
    for id in [first, second, third, other] {
        topics.push(topic_of(&message(bob, id).await));
    }
    assert_eq!(topics, ["plans", "later plans", "later plans", "elsewhere"]);
    let got = events(bob, &queue).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let e = &got[0];
    assert_eq!(
        (
            e["message_ids"].clone(),
            e["propagate_mode"].clone(),
            e["orig_subject"].clone(),
            e["subject"].clone(),
            e["stream_id"].clone(),
            e["topic_links"].clone(),
        ),
        (
            json!([second, third]),
            json!("change_later"),
            json!("plans"),
            json!("later plans"),
            json!(o.general),
            json!([]),
        )
    );
    assert!(
        e.get("content").is_none() && e.get("new_stream_id").is_none(),
        "{e}"
    );
    let moved = message(bob, third).await;
    assert!(moved["last_moved_timestamp"].is_i64(), "{moved}");
    assert_eq!(moved["edit_history"][0]["prev_topic"], "plans", "{moved}");

    // Resolving (change_all) is a topic edit but not a move.
    let (status, body) = bob
        .call(
            Method::PATCH,
            &format!("/messages/{first}"),
            &[("topic", "✔ plans"), ("propagate_mode", "change_all")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let resolved = message(bob, first).await;
    assert_eq!(topic_of(&resolved), "✔ plans");
    assert!(resolved.get("last_moved_timestamp").is_none(), "{resolved}");
    assert!(resolved["last_edit_timestamp"].is_i64());
    let (_, body) = alice
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
                ("narrow", r#"[["is","resolved"]]"#),
            ],
        )
        .await;
    // The resolved message, and the notification bot's notice in the resolved topic.
    let found = body["messages"].as_array().unwrap();
    assert_eq!(found.len(), 2, "{body}");
    assert_eq!(found[1]["sender_email"], "notification-bot@zulip.com");

    // Direct messages have no topic; a message one cannot read cannot be moved.
    let (_, dm) = alice
        .post(
            "/messages",
            &[
                ("type", "direct"),
                ("to", &format!("[{}]", o.bob.0)),
                ("content", "psst"),
            ],
        )
        .await;
    let dm = dm["id"].as_u64().unwrap();
    let (status, body) = alice
        .call(Method::PATCH, &format!("/messages/{dm}"), &[("topic", "x")])
        .await;
    assert_eq!(
        error(status, &body),
        bad("Direct messages cannot be moved to channels.")
    );
    let (status, body) = o
        .carol
        .1
        .call(Method::PATCH, &format!("/messages/{dm}"), &[("topic", "x")])
        .await;
    assert_eq!(error(status, &body), bad("Invalid message(s)"));

    // Move the rest of "later plans" to a private channel only Alice is in: Bob loses them.
    let (_, body) = o
        .owner
        .post(
            "/channels/create",
            &[
                ("name", "secret"),
                ("invite_only", "true"),
                ("subscribers", &format!("[{alice_id}]")),
            ],
        )
        .await;
    let secret = body["id"].as_u64().unwrap();
    // Bob may not read the target channel: he cannot move into it.
    let (status, body) = bob
        .call(
            Method::PATCH,
            &format!("/messages/{second}"),
            &[
                ("stream_id", &secret.to_string()),
                ("propagate_mode", "change_all"),
            ],
        )
        .await;
    assert_eq!(error(status, &body), bad("Invalid channel ID"));
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{second}"),
            &[
                ("stream_id", &secret.to_string()),
                ("propagate_mode", "change_all"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = bob.get(&format!("/messages/{second}"), &[]).await;
    assert_eq!(error(status, &body), bad("Invalid message(s)"));
    let m = message(alice, second).await;
    assert_eq!(
        (m["display_recipient"].clone(), m["stream_id"].clone()),
        (json!("secret"), json!(secret))
    );
    assert_eq!(m["edit_history"][0]["prev_stream"], o.general);
    assert_eq!(m["edit_history"][0]["stream"], secret);
    let got = events(bob, &queue).await;
    let deletion = got
        .iter()
        .find(|e| e["type"] == "delete_message")
        .unwrap_or_else(|| panic!("{got:?}"));
    assert_eq!(
        deletion,
        &json!({"type": "delete_message", "message_type": "stream", "stream_id": o.general,
                "topic": "later plans", "message_ids": [second, third], "id": deletion["id"]})
    );
    // The history of the move is readable by those who can read the message.
    let (status, body) = alice.get(&format!("/messages/{second}/history"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let last = body["message_history"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (last["prev_stream"].clone(), last["stream"].clone()),
        (json!(o.general), json!(secret))
    );
}

#[tokio::test]
async fn deleting_messages() {
    let o = org().await;
    let (_, alice) = &o.alice;
    let (_, bob) = &o.bob;
    let mine = send(alice, "lunch", "mine").await;
    let newest = send(bob, "lunch", "bob's").await;
    let bulk = register(bob, r#"{"bulk_message_deletion": true}"#).await;
    let legacy = register(bob, "{}").await;

    // Members delete only their own messages; administrators any.
    let (status, body) = alice.delete(&format!("/messages/{newest}"), &[]).await;
    assert_eq!(
        error(status, &body),
        bad("You don't have permission to delete this message")
    );
    let (status, body) = alice.delete(&format!("/messages/{mine}"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = o.owner.delete(&format!("/messages/{newest}"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for id in [mine, newest] {
        let (status, body) = bob.get(&format!("/messages/{id}"), &[]).await;
        assert_eq!(error(status, &body), bad("Invalid message(s)"));
        let (status, body) = o.owner.delete(&format!("/messages/{id}"), &[]).await;
        assert_eq!(error(status, &body), bad("Invalid message(s)"));
    }
    let (_, fetched) = bob
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
            ],
        )
        .await;
    assert_eq!(fetched["messages"], json!([]));
    let (_, topics) = bob
        .get(&format!("/users/me/{}/topics", o.general), &[])
        .await;
    assert_eq!(topics["topics"], json!([]), "{topics}");

    let got = events(bob, &bulk).await;
    assert_eq!(
        got,
        vec![
            json!({"type": "delete_message", "message_ids": [mine], "message_type": "stream",
                   "stream_id": o.general, "topic": "lunch", "id": 0}),
            json!({"type": "delete_message", "message_ids": [newest], "message_type": "stream",
                   "stream_id": o.general, "topic": "lunch", "id": 1}),
        ]
    );
    let got = events(bob, &legacy).await;
    assert_eq!(got[0]["message_id"], mine);
    assert!(got[0].get("message_ids").is_none(), "{}", got[0]);

    // Ids are never reused, even when the newest message was deleted; and after a restart the
    // deletions still hold.
    let next = send(alice, "lunch", "again").await;
    assert!(next > newest, "{next} after {newest}");
    let server = o.server.stop().restart();
    let bob = server.api(Some(&o.bob.1.creds.clone().unwrap()));
    let (status, _) = bob.get(&format!("/messages/{newest}"), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let after = {
        let alice = server.api(Some(&o.alice.1.creds.clone().unwrap()));
        send(&alice, "lunch", "after restart").await
    };
    assert_eq!(after, next + 1);
}

#[tokio::test]
async fn mark_channel_and_everything_as_read() {
    let o = org().await;
    let (_, alice) = &o.alice;
    let (_, bob) = &o.bob;
    send(alice, "a", "one").await;
    send(alice, "b", "two").await;
    let (_, dm) = alice
        .post(
            "/messages",
            &[
                ("type", "direct"),
                ("to", &format!("[{}]", o.bob.0)),
                ("content", "hi"),
            ],
        )
        .await;
    let dm = dm["id"].as_u64().unwrap();
    assert_eq!(unread(bob).await.len(), 3);
    let (status, body) = bob
        .post(
            "/mark_stream_as_read",
            &[("stream_id", &o.general.to_string())],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(unread(bob).await, vec![dm]);
    let (status, body) = bob
        .post("/mark_stream_as_read", &[("stream_id", "9999")])
        .await;
    assert_eq!(error(status, &body), bad("Invalid channel ID"));
    let (status, body) = bob.post("/mark_all_as_read", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["complete"], true);
    assert_eq!(unread(bob).await, Vec::<u64>::new());
}

async fn unread(api: &Api) -> Vec<u64> {
    let params = [
        ("anchor", "newest"),
        ("num_before", "10"),
        ("num_after", "0"),
        ("narrow", r#"[["is","unread"]]"#),
    ];
    crate::messages::ids(&crate::messages::fetch(api, &params).await)
}

#[tokio::test]
async fn local_id_is_echoed_to_the_sending_queue_only() {
    let o = org().await;
    let (_, alice) = &o.alice;
    let sending = register_messages(alice).await;
    let other_tab = register_messages(alice).await;
    let bobs = register_messages(&o.bob.1).await;
    let (status, body) = alice
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "general"),
                ("topic", "t"),
                ("content", "from my phone"),
                ("queue_id", &sending),
                ("local_id", "7.01"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mine = events(alice, &sending).await;
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0]["local_message_id"], "7.01");
    assert_eq!(mine[0]["message"]["id"], body["id"]);
    for (api, queue) in [(alice, &other_tab), (&o.bob.1, &bobs)] {
        let got = events(api, queue).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].get("local_message_id").is_none(), "{}", got[0]);
        assert!(got[0].get("_sender_queue").is_none(), "{}", got[0]);
    }
}

async fn register_messages(api: &Api) -> String {
    let (status, body) = api
        .post("/register", &[("event_types", r#"["message"]"#)])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["queue_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn flags_for_a_narrow_and_matching_a_narrow() {
    let o = org().await;
    let (_, alice) = &o.alice;
    let (_, bob) = &o.bob;
    let a1 = send(alice, "a", "apples").await;
    let b1 = send(alice, "b", "bananas").await;
    let a2 = send(alice, "a", "more apples").await;
    let narrow_a =
        r#"[{"operator":"channel","operand":"general"},{"operator":"topic","operand":"a"}]"#;

    let (status, body) = bob
        .post(
            "/messages/flags/narrow",
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "100"),
                ("narrow", narrow_a),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"result": "success", "msg": "", "processed_count": 2, "updated_count": 2,
               "first_processed_id": a1, "last_processed_id": a2, "found_oldest": true,
               "found_newest": true, "ignored_because_not_subscribed_channels": []})
    );
    assert_eq!(unread(bob).await, vec![b1]);
    // Again: processed, but nothing changes.
    let (_, body) = bob
        .post(
            "/messages/flags/narrow",
            &[
                ("anchor", &a1.to_string()),
                ("include_anchor", "false"),
                ("num_before", "0"),
                ("num_after", "1"),
                ("narrow", narrow_a),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(
        (
            body["processed_count"].clone(),
            body["updated_count"].clone(),
            body["first_processed_id"].clone()
        ),
        (json!(1), json!(0), json!(a2))
    );
    let (status, body) = bob
        .post(
            "/messages/flags/narrow",
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", "[]"),
                ("op", "add"),
                ("flag", "mentioned"),
            ],
        )
        .await;
    assert_eq!(error(status, &body), bad("Flag not editable: 'mentioned'"));
    let (status, body) = bob
        .post(
            "/messages/flags/narrow",
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["var_name"].clone()),
        (400, json!("narrow"))
    );

    // Carol (not subscribed) sees the channel's public messages match, but not a private one.
    let (status, body) = o
        .carol
        .1
        .get(
            "/messages/matches_narrow",
            &[
                ("msg_ids", &format!("[{a1}, {b1}, {a2}, 999]")),
                ("narrow", r#"[["topic","a"]]"#),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["messages"],
        json!({
            a1.to_string(): {"match_content": "<p>apples</p>", "match_subject": "a"},
            a2.to_string(): {"match_content": "<p>more apples</p>", "match_subject": "a"},
        })
    );
    let (_, dm) = alice
        .post(
            "/messages",
            &[
                ("type", "direct"),
                ("to", &format!("[{}]", o.bob.0)),
                ("content", "secret"),
            ],
        )
        .await;
    let (_, body) = o
        .carol
        .1
        .get(
            "/messages/matches_narrow",
            &[("msg_ids", &format!("[{}]", dm["id"])), ("narrow", "[]")],
        )
        .await;
    assert_eq!(body["messages"], json!({}));
}

/// `(sender_email, raw content)` of a topic of #general, oldest first.
async fn topic_messages(api: &Api, topic: &str) -> Vec<(String, String)> {
    let narrow = json!([["channel", "general"], ["topic", topic]]).to_string();
    let (status, body) = api
        .get(
            "/messages",
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "100"),
                ("apply_markdown", "false"),
                ("narrow", &narrow),
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

#[tokio::test]
async fn move_and_resolve_notices() {
    let o = org().await;
    let (alice_id, alice) = &o.alice;
    let (_, bob) = &o.bob;
    let bot = "notification-bot@zulip.com".to_owned();
    let by_alice = format!("@_**Alice Adams|{alice_id}**");
    let one = send(alice, "a", "one").await;
    send(alice, "a", "two").await;
    send(bob, "b", "three").await;

    // One message moved: "moved here" in the new topic (with a link), nothing in the old one
    // unless asked.
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{one}"),
            &[("topic", "c")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let c = topic_messages(bob, "c").await;
    assert_eq!(c.len(), 2);
    assert_eq!(c[1].0, bot);
    assert!(
        c[1].1.starts_with(&format!("[A message]({}/#narrow/channel/{}-general/topic/c/near/{one}) was moved here from #**general>a** by {by_alice}.", o.server.url, o.general)),
        "{c:?}"
    );
    assert_eq!(topic_messages(bob, "a").await.len(), 1);

    // The rest of a topic, with both notices: the whole topic moved.
    let (_, rest) = bob
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", r#"[["topic", "a"]]"#),
            ],
        )
        .await;
    let two = rest["messages"][0]["id"].as_u64().unwrap();
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{two}"),
            &[
                ("topic", "d"),
                ("propagate_mode", "change_all"),
                ("send_notification_to_old_thread", "true"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        topic_messages(bob, "d").await,
        vec![
            (
                format!("user{alice_id}@chronicle.invalid"),
                "two".to_owned()
            ),
            (
                bot.clone(),
                format!("This topic was moved here from #**general>a** by {by_alice}.")
            ),
        ]
    );
    assert_eq!(
        topic_messages(bob, "a").await,
        vec![(
            bot.clone(),
            format!("This topic was moved to #**general>d** by {by_alice}.")
        )]
    );

    // Two messages into a topic that has some: counted.
    let (status, _) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{one}"),
            &[
                ("topic", "b"),
                ("propagate_mode", "change_all"),
                ("send_notification_to_old_thread", "true"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let b = topic_messages(bob, "b").await;
    assert_eq!(
        b.last().unwrap(),
        &(
            bot.clone(),
            format!("2 messages were moved here from #**general>c** by {by_alice}.")
        )
    );
    let c = topic_messages(bob, "c").await;
    assert_eq!(
        c,
        vec![(
            bot.clone(),
            format!("This topic was moved to #**general>b** by {by_alice}.")
        )]
    );

    // Resolving posts a notice in the resolved topic; undoing it within a minute deletes that
    // notice instead of posting another.
    let (status, _) = bob
        .call(
            Method::PATCH,
            &format!("/messages/{one}"),
            &[("topic", "✔ b"), ("propagate_mode", "change_all")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (bob_id, _) = &o.bob;
    let resolved = topic_messages(bob, "✔ b").await;
    assert_eq!(
        resolved.last().unwrap(),
        &(
            bot.clone(),
            format!("@_**Bob Brown|{bob_id}** has marked this topic as resolved.")
        )
    );
    let count = resolved.len();
    let (status, _) = bob
        .call(
            Method::PATCH,
            &format!("/messages/{one}"),
            &[("topic", "b"), ("propagate_mode", "change_all")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let b = topic_messages(bob, "b").await;
    assert_eq!(b.len(), count - 1, "{b:?}");
    assert!(
        b.iter()
            .all(|(_, content)| !content.contains("has marked this topic")),
        "{b:?}"
    );
    assert!(topic_messages(bob, "✔ b").await.is_empty());

    // The bot is a cross-realm bot: not a member, and it cannot log in.
    let (_, state) = bob
        .post("/register", &[("fetch_event_types", r#"["realm_user"]"#)])
        .await;
    let bots = state["cross_realm_bots"].as_array().unwrap();
    assert_eq!(bots.len(), 1);
    assert_eq!(bots[0]["email"], "notification-bot@zulip.com");
    assert_eq!(bots[0]["full_name"], "Notification Bot");
    assert_eq!(bots[0]["is_system_bot"], true);
    assert!(state["realm_users"]
        .as_array()
        .unwrap()
        .iter()
        .all(|u| u["email"] != "notification-bot@zulip.com"));
    let (_, users) = o.owner.get("/users", &[]).await;
    assert!(users["members"]
        .as_array()
        .unwrap()
        .iter()
        .all(|u| u["full_name"] != "Notification Bot"));
    let bot_id = bots[0]["user_id"].as_u64().unwrap();
    // It is in no group, is no administrator's bot, and its address is reserved.
    let (_, groups) = o.owner.get("/user_groups", &[]).await;
    assert!(groups["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| !g["members"].as_array().unwrap().contains(&json!(bot_id))));
    let (_, state) = o
        .owner
        .post("/register", &[("fetch_event_types", r#"["realm_bot"]"#)])
        .await;
    assert_eq!(state["realm_bots"], json!([]));
    let (_, body) = o
        .owner
        .post(
            "/users",
            &[
                ("email", "Notification-Bot@zulip.com"),
                ("password", "password1"),
                ("full_name", "Impostor"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Email is already in use.");
}

#[tokio::test]
async fn topic_policies_follow_a_whole_topic_when_it_moves() {
    let o = org().await;
    let (_, alice) = &o.alice;
    let (_, bob) = &o.bob;
    let first = send(alice, "plans", "one").await;
    send(alice, "plans", "two").await;
    let general = o.general.to_string();
    let (status, _) = bob
        .post(
            "/user_topics",
            &[
                ("stream_id", &general),
                ("topic", "plans"),
                ("visibility_policy", "1"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // Moving one message of two leaves the policy where it is.
    let (status, _) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{first}"),
            &[
                ("topic", "split"),
                ("send_notification_to_new_thread", "false"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        user_topic_policies(bob).await,
        vec![("plans".to_owned(), 1)]
    );

    // Moving the whole topic (here by resolving it) takes the policy along.
    let (_, body) = bob
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", r#"[["topic", "plans"]]"#),
            ],
        )
        .await;
    let rest = body["messages"][0]["id"].as_u64().unwrap();
    let (status, _) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{rest}"),
            &[("topic", "✔ plans"), ("propagate_mode", "change_all")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        user_topic_policies(bob).await,
        vec![("✔ plans".to_owned(), 1)]
    );
}

/// A user's topic policies as `/register` gives them: `(topic, policy)`.
async fn user_topic_policies(api: &Api) -> Vec<(String, u64)> {
    let (_, state) = api
        .post("/register", &[("fetch_event_types", r#"["user_topic"]"#)])
        .await;
    state["user_topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["topic_name"].as_str().unwrap().to_owned(),
                t["visibility_policy"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn submessages_attach_widget_data() {
    let o = org().await;
    let (alice_id, alice) = &o.alice;
    let (bob_id, bob) = &o.bob;
    // Text that starts no widget (a `/poll` message would start its own, see
    // `messages::a_poll_or_todo_message_is_a_widget_from_its_first_event`): the widget is
    // attached by its sender's client.
    let id = send(alice, "poll", "Lunch?").await;
    let (status, body) = bob
        .post("/register", &[("event_types", r#"["submessage"]"#)])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let queue = body["queue_id"].as_str().unwrap().to_owned();
    // Only the sender may start; the content must be JSON; the message must be readable.
    let params = |content: &str| {
        vec![
            ("message_id".to_owned(), id.to_string()),
            ("msg_type".to_owned(), "widget".to_owned()),
            ("content".to_owned(), content.to_owned()),
        ]
    };
    async fn post(api: &Api, params: Vec<(String, String)>) -> (StatusCode, Value) {
        let pairs: Vec<(&str, &str)> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        api.post("/submessage", &pairs).await
    }
    let (status, body) = post(bob, params(r#"{"type":"vote"}"#)).await;
    assert_eq!(
        error(status, &body),
        bad("You cannot attach a submessage to this message.")
    );
    let (status, body) = post(alice, params("not json")).await;
    assert_eq!(error(status, &body), bad("Invalid json for submessage"));
    let (status, body) = post(&o.carol.1, params("{}")).await;
    assert_eq!(
        error(status, &body),
        bad("You cannot attach a submessage to this message.")
    );
    let (status, body) = post(alice, params(r#"{"widget_type":"poll"}"#)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = post(bob, params(r#"{"type":"vote","key":"1"}"#)).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let m = message(bob, id).await;
    assert_eq!(
        m["submessages"],
        json!([
            {"msg_type": "widget", "content": r#"{"widget_type":"poll"}"#, "message_id": id,
             "sender_id": alice_id, "id": 1},
            {"msg_type": "widget", "content": r#"{"type":"vote","key":"1"}"#, "message_id": id,
             "sender_id": bob_id, "id": 2},
        ])
    );
    let got = events(bob, &queue).await;
    assert_eq!(
        got,
        vec![
            json!({"type": "submessage", "msg_type": "widget", "message_id": id, "submessage_id": 1,
                   "sender_id": alice_id, "content": r#"{"widget_type":"poll"}"#, "id": 0}),
            json!({"type": "submessage", "msg_type": "widget", "message_id": id, "submessage_id": 2,
                   "sender_id": bob_id, "content": r#"{"type":"vote","key":"1"}"#, "id": 1}),
        ]
    );
}

#[tokio::test]
async fn moving_a_channels_oldest_message_away_still_takes_it_from_those_who_cannot_follow() {
    let o = org().await;
    let (alice_id, alice) = &o.alice;
    let (_, bob) = &o.bob;
    let first = send(alice, "plans", "the very first").await;
    let (_, body) = alice
        .post(
            "/channels/create",
            &[
                ("name", "vault"),
                ("invite_only", "true"),
                ("subscribers", &format!("[{alice_id}]")),
            ],
        )
        .await;
    let vault = body["id"].as_u64().unwrap();
    let (status, body) = bob.post("/register", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let queue = body["queue_id"].as_str().unwrap().to_owned();
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{first}"),
            &[
                ("stream_id", &vault.to_string()),
                ("propagate_mode", "change_one"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let got = events(bob, &queue).await;
    let kinds: Vec<&str> = got.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // Bob cannot read #vault: the message leaves his view, and #general has no messages now.
    assert_eq!(kinds, ["delete_message", "stream"], "{got:?}");
    // Registered without bulk_message_deletion: one event per message.
    assert_eq!(got[0]["message_id"], json!(first));
    assert_eq!(
        (
            got[1]["property"].clone(),
            got[1]["value"].clone(),
            got[1]["stream_id"].clone()
        ),
        (json!("first_message_id"), Value::Null, json!(o.general))
    );
}

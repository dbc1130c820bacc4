//! Scheduled messages and reminders: saving, editing and deleting them with Zulip's checks and
//! events, the delivery job sending them at their time (as their sender, or marked failed with
//! a notice), and their survival across a restart.

use crate::messages::{chat, newest, send};
use crate::realtime::{drain, register};
use crate::support::Api;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn as_refs(p: &[(String, String)]) -> Vec<(&str, &str)> {
    p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Waits (up to 20 s: a loaded test machine) until `check` holds of `GET path`.
async fn wait_for(api: &Api, path: &str, check: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let (status, body) = api.get(path, &[]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if check(&body) {
            return body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "still not as expected: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Drains `queue` until `done` holds of every event drained so far (up to 20 s), and returns
/// them. What the delivery job does is visible to reads a moment before its events are queued,
/// so one drain right after seeing the new state may come too early.
async fn drain_until(api: &Api, queue: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let start = Instant::now();
    let mut events = Vec::new();
    loop {
        events.extend(drain(api, queue).await);
        if done(&events) {
            return events;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the events expected did not come: {events:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_scheduled_channel_message_is_listed_then_sent_at_its_time_as_its_sender() {
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let (queue, initial) = register(alice, &[]).await;
    assert_eq!(initial["scheduled_messages"], json!([]));
    // Scheduled an hour ahead while it is looked at, then moved to two seconds ahead: a time
    // close from the start could come while a loaded machine is still checking the list.
    let later = now() + 3600;
    let (status, body) = alice
        .post(
            "/scheduled_messages",
            &[
                ("type", "channel"),
                ("to", &c.channel.to_string()),
                ("topic", "plans"),
                ("content", "see you **soon**"),
                ("scheduled_delivery_timestamp", &later.to_string()),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["scheduled_message_id"].as_u64().unwrap();
    let mut expected = json!({
        "scheduled_message_id": id,
        "type": "stream",
        "topic": "plans",
        "to": c.channel,
        "content": "see you **soon**",
        "rendered_content": "<p>see you <strong>soon</strong></p>",
        "scheduled_delivery_timestamp": later,
        "failed": false,
    });
    let (_, listed) = alice.get("/scheduled_messages", &[]).await;
    assert_eq!(listed["scheduled_messages"], json!([expected.clone()]));
    // Nobody else sees it.
    let (_, others) = bob.get("/scheduled_messages", &[]).await;
    assert_eq!(others["scheduled_messages"], json!([]));
    let events = drain(alice, &queue).await;
    assert_eq!(events[0]["type"], "scheduled_messages");
    assert_eq!(events[0]["op"], "add");
    assert_eq!(events[0]["scheduled_messages"], json!([expected.clone()]));
    let at = now() + 2;
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/scheduled_messages/{id}"),
            &[("scheduled_delivery_timestamp", &at.to_string())],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    expected["scheduled_delivery_timestamp"] = json!(at);
    // Sent at its time, as Alice, to the channel; then gone from the list.
    wait_for(alice, "/scheduled_messages", |b| {
        b["scheduled_messages"] == json!([])
    })
    .await;
    let narrow = format!(r#"[{{"operator":"channel","operand":{}}}]"#, c.channel);
    let sent = newest(bob, &narrow).await;
    assert_eq!(sent["sender_id"], json!(alice_id));
    assert_eq!(sent["subject"], "plans");
    // Sent with the client that scheduled it.
    assert_eq!(sent["client"], "API");
    assert_eq!(sent["content"], "<p>see you <strong>soon</strong></p>");
    assert!(sent["timestamp"].as_i64().unwrap() >= at);
    let events = drain_until(alice, &queue, |events| {
        events
            .iter()
            .any(|e| e["type"] == "scheduled_messages" && e["op"] == "remove")
            && events
                .iter()
                .any(|e| e["type"] == "message" && e["message"]["id"] == sent["id"])
    })
    .await;
    let scheduled: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "scheduled_messages")
        .collect();
    assert_eq!(
        scheduled,
        vec![
            &json!({"type": "scheduled_messages", "op": "update", "scheduled_message": expected, "id": scheduled[0]["id"]}),
            &json!({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": id, "id": scheduled[1]["id"]})
        ]
    );
}

#[tokio::test]
async fn scheduling_is_checked_as_a_send_and_edits_follow_zulips_rules() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let later = (now() + 3600).to_string();
    let past = (now() - 5).to_string();
    let channel = c.channel.to_string();
    let cases: [(&[(&str, &str)], &str); 4] = [
        (
            &[
                ("type", "stream"),
                ("to", &channel),
                ("topic", "t"),
                ("content", "x"),
                ("scheduled_delivery_timestamp", &past),
            ],
            "Scheduled delivery time must be in the future.",
        ),
        (
            &[
                ("type", "stream"),
                ("to", "999"),
                ("topic", "t"),
                ("content", "x"),
                ("scheduled_delivery_timestamp", &later),
            ],
            "Channel with ID '999' does not exist",
        ),
        (
            &[
                ("type", "direct"),
                ("to", "[4242]"),
                ("content", "x"),
                ("scheduled_delivery_timestamp", &later),
            ],
            "Invalid user ID 4242",
        ),
        (
            &[
                ("type", "direct"),
                ("to", &format!("[{bob_id}]")),
                ("content", " "),
                ("scheduled_delivery_timestamp", &later),
            ],
            "Message must not be empty",
        ),
    ];
    for (params, msg) in cases {
        let (status, body) = alice.post("/scheduled_messages", params).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["msg"], msg);
    }
    let (_, body) = alice
        .post(
            "/scheduled_messages",
            &[
                ("type", "direct"),
                ("to", &format!("[{bob_id}]")),
                ("content", "hello later"),
                ("scheduled_delivery_timestamp", &later),
            ],
        )
        .await;
    let id = body["scheduled_message_id"].as_u64().unwrap();
    let path = format!("/scheduled_messages/{id}");
    let (queue, _) = register(alice, &[]).await;
    let patch = |params: &'static [(&'static str, &'static str)]| {
        let path = path.clone();
        async move { alice.call(Method::PATCH, &path, params).await }
    };
    let (status, body) = patch(&[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Nothing to change"))
    );
    let (_, body) = patch(&[("type", "stream")]).await;
    assert_eq!(
        body["msg"],
        "Recipient required when updating type of scheduled message."
    );
    let (_, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[("type", "stream"), ("to", &channel)],
        )
        .await;
    assert_eq!(
        body["msg"],
        "Topic required when updating scheduled message type to channel."
    );
    // Moving it to the channel, with a topic; then only the content.
    let (status, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[("type", "stream"), ("to", &channel), ("topic", "moved")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = patch(&[("content", "hello, edited")]).await;
    assert_eq!(status, StatusCode::OK);
    let (_, listed) = alice.get("/scheduled_messages", &[]).await;
    let m = &listed["scheduled_messages"][0];
    assert_eq!(
        (
            m["type"].clone(),
            m["to"].clone(),
            m["topic"].clone(),
            m["content"].clone()
        ),
        (
            json!("stream"),
            json!(c.channel),
            json!("moved"),
            json!("hello, edited")
        )
    );
    let events = drain(alice, &queue).await;
    let updates: Vec<&Value> = events.iter().filter(|e| e["op"] == "update").collect();
    assert_eq!(updates.len(), 2);
    assert_eq!(updates[1]["scheduled_message"], *m);
    // Someone else's, or an unknown id: 404.
    for (api, target) in [
        (bob, path.clone()),
        (alice, "/scheduled_messages/999".to_owned()),
    ] {
        let (status, body) = api.delete(&target, &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(body["msg"], "Scheduled message does not exist");
        assert_eq!(body["code"], "BAD_REQUEST");
    }
    let (status, _) = alice.delete(&path, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let events = drain(alice, &queue).await;
    assert_eq!(events[0]["op"], "remove");
    assert_eq!(events[0]["scheduled_message_id"], json!(id));
    let (_, listed) = alice.get("/scheduled_messages", &[]).await;
    assert_eq!(listed["scheduled_messages"], json!([]));
}

#[tokio::test]
async fn a_message_that_cannot_be_sent_is_marked_failed_and_its_sender_told() {
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (carol_id, _) = &c.carol;
    let owner = c.server.api(Some(&c.server.owner()));
    // Time enough to deactivate Carol first, even on a loaded machine (an edit cannot move it
    // later: it is checked as a send, and Carol is gone).
    let at = now() + 8;
    let (_, body) = alice
        .post(
            "/scheduled_messages",
            &[
                ("type", "direct"),
                ("to", &format!("[{carol_id}]")),
                ("content", "for Carol"),
                ("scheduled_delivery_timestamp", &at.to_string()),
            ],
        )
        .await;
    let id = body["scheduled_message_id"].as_u64().unwrap();
    let (status, body) = owner.delete(&format!("/users/{carol_id}"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let listed = wait_for(alice, "/scheduled_messages", |b| {
        b["scheduled_messages"][0]["failed"] == json!(true)
    })
    .await;
    assert_eq!(
        listed["scheduled_messages"][0]["scheduled_message_id"],
        json!(id)
    );
    // The notification bot says why, in a direct message.
    let notice = newest(alice, r#"[{"operator":"is","operand":"dm"}]"#).await;
    assert_eq!(notice["sender_email"], "notification-bot@zulip.com");
    let text = notice["content"].as_str().unwrap();
    assert!(
        text.starts_with("<p>The message you scheduled for <time datetime="),
        "{text}"
    );
    assert!(
        text.contains("was not sent because of the following error:</p>\n<blockquote>\n<p>'")
            && text.contains("' is no longer using Zulip.</p>\n</blockquote>"),
        "{text}"
    );
    assert!(text.contains("href=\"#scheduled\""), "{text}");
    // A failed message is only tried again at a new time.
    let path = format!("/scheduled_messages/{id}");
    let (status, body) = alice
        .call(Method::PATCH, &path, &[("content", "still for Carol")])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["msg"],
        "Scheduled delivery time must be in the future."
    );
    let later = (now() + 600).to_string();
    let (status, body) = alice
        .call(
            Method::PATCH,
            &path,
            &[("scheduled_delivery_timestamp", &later)],
        )
        .await;
    // Carol is still deactivated: the edit is checked as a send.
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "'carol@example.com' is no longer using Zulip.");
    let _ = alice_id;
}

#[tokio::test]
async fn scheduled_messages_survive_a_restart_and_are_sent_after_it() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    // An hour ahead, so that it is surely still waiting after the restart (however long that
    // takes); then moved to two seconds ahead, for the restarted server's job to send it.
    let later = now() + 3600;
    let (_, body) = alice
        .post(
            "/scheduled_messages",
            &[
                ("type", "stream"),
                ("to", &c.channel.to_string()),
                ("topic", "after restart"),
                ("content", "still here"),
                ("scheduled_delivery_timestamp", &later.to_string()),
            ],
        )
        .await;
    let id = body["scheduled_message_id"].as_u64().unwrap();
    let alice_creds = alice.creds.clone().unwrap();
    let server = c.server.stop().restart();
    let alice = server.api(Some(&alice_creds));
    let (_, listed) = alice.get("/scheduled_messages", &[]).await;
    assert_eq!(
        (
            listed["scheduled_messages"][0]["scheduled_message_id"].clone(),
            listed["scheduled_messages"][0]["content"].clone(),
            listed["scheduled_messages"][0]["scheduled_delivery_timestamp"].clone()
        ),
        (json!(id), json!("still here"), json!(later))
    );
    let (status, body) = alice
        .call(
            Method::PATCH,
            &format!("/scheduled_messages/{id}"),
            &[("scheduled_delivery_timestamp", &(now() + 2).to_string())],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&alice, "/scheduled_messages", |b| {
        b["scheduled_messages"] == json!([])
    })
    .await;
    let narrow = format!(r#"[{{"operator":"channel","operand":{}}}]"#, c.channel);
    assert_eq!(newest(&alice, &narrow).await["subject"], "after restart");
}

#[tokio::test]
async fn a_reminder_is_a_direct_message_from_the_notification_bot_at_its_time() {
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (_, bob) = &c.bob;
    let (carol_id, carol) = &c.carol;
    let message = send(
        bob,
        &[
            ("type", "stream"),
            ("to", &c.channel.to_string()),
            ("topic", "launch"),
            ("content", "We launch on Friday."),
        ],
    )
    .await;
    let (queue, initial) = register(alice, &[]).await;
    assert_eq!(initial["reminders"], json!([]));
    assert_eq!(initial["max_reminder_note_length"], json!(500));
    // Time enough for the checks below before it is due, even on a loaded machine (a reminder
    // cannot be moved).
    let at = now() + 8;
    let params = |note: &str| {
        vec![
            ("message_id".to_owned(), message.to_string()),
            ("scheduled_delivery_timestamp".to_owned(), at.to_string()),
            ("note".to_owned(), note.to_owned()),
        ]
    };
    // A note longer than Zulip's limit is refused.
    let (status, body) = alice
        .post("/reminders", &as_refs(&params(&"x".repeat(501))))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "Maximum reminder note length: 500 characters");
    let (status, body) = alice
        .post("/reminders", &as_refs(&params("check the date")))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["reminder_id"].as_u64().unwrap();
    let (_, listed) = alice.get("/reminders", &[]).await;
    let reminder = &listed["reminders"][0];
    assert_eq!(reminder["reminder_id"], json!(id));
    assert_eq!(reminder["type"], "private");
    assert_eq!(reminder["to"], json!([alice_id]));
    assert_eq!(reminder["reminder_target_message_id"], json!(message));
    assert_eq!(reminder["failed"], json!(false));
    assert_eq!(reminder["scheduled_delivery_timestamp"], json!(at));
    let content = reminder["content"].as_str().unwrap();
    assert!(
        content.starts_with(&format!(
            "You requested a reminder for #**general>launch@{message}**. Note:\n > check the date\n\n@_**Bob Brown|"
        )),
        "{content}"
    );
    assert!(
        content.ends_with("):\n```quote\nWe launch on Friday.\n```"),
        "{content}"
    );
    // Reminders are not scheduled messages.
    let (_, scheduled) = alice.get("/scheduled_messages", &[]).await;
    assert_eq!(scheduled["scheduled_messages"], json!([]));
    let events = drain(alice, &queue).await;
    assert_eq!(events[0]["type"], "reminders");
    assert_eq!(events[0]["op"], "add");
    assert_eq!(events[0]["reminders"][0], *reminder);
    wait_for(alice, "/reminders", |b| b["reminders"] == json!([])).await;
    let delivered = newest(alice, r#"[{"operator":"is","operand":"dm"}]"#).await;
    assert_eq!(delivered["sender_email"], "notification-bot@zulip.com");
    assert_eq!(delivered["display_recipient"].as_array().unwrap().len(), 2);
    assert!(delivered["content"]
        .as_str()
        .unwrap()
        .contains("<blockquote>\n<p>We launch on Friday.</p>"));
    drain_until(alice, &queue, |events| {
        events.iter().any(|e| {
            e["type"] == "reminders" && e["op"] == "remove" && e["reminder_id"] == json!(id)
        })
    })
    .await;
    // Others' reminders are not one's own to delete.
    let (status, body) = carol.delete(&format!("/reminders/{id}"), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["msg"], "Reminder does not exist");
    let _ = carol_id;
}

//! The bounds that keep one client from growing the server: queues per user, long-polls per
//! queue, and clients too slow to send their request.

use crate::realtime::register;
use crate::support::Server;
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// `MAX_QUEUES_PER_USER`.
const QUEUES_PER_USER: usize = 32;

#[tokio::test]
async fn a_user_over_the_queue_bound_loses_the_queue_polled_longest_ago() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (first, _) = register(&owner, &[]).await;
    let mut queues = vec![first.clone()];
    for _ in 1..QUEUES_PER_USER {
        queues.push(register(&owner, &[]).await.0);
    }
    // Every queue polled since except the second: that one is now the least recently polled.
    for queue in queues.iter().filter(|q| **q != queues[1]) {
        let (status, _) = owner
            .get("/events", &[("queue_id", queue), ("dont_block", "true")])
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let (newest, _) = register(&owner, &[]).await;
    let (status, body) = owner
        .get(
            "/events",
            &[("queue_id", &queues[1]), ("dont_block", "true")],
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"result": "error", "code": "BAD_EVENT_QUEUE_ID", "queue_id": queues[1],
            "msg": format!("Bad event queue ID: {}", queues[1])})
    );
    for queue in queues.iter().filter(|q| **q != queues[1]).chain([&newest]) {
        let (status, body) = owner
            .get("/events", &[("queue_id", queue), ("dont_block", "true")])
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // Another user's queues are not touched.
    let (_, alice) = server.create_member("alice@example.com", "Alice").await;
    let (alices, _) = register(&server.api(Some(&alice)), &[]).await;
    let (status, _) = server
        .api(Some(&alice))
        .get("/events", &[("queue_id", &alices), ("dont_block", "true")])
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_second_long_poll_of_a_queue_ends_the_first_with_no_events() {
    let server = Server::start_observed();
    let owner = server.api(Some(&server.owner()));
    let (queue, _) = register(&owner, &[]).await;
    // Each long-poll on a task of its own, as two clients of one queue would.
    let long_poll = |api: crate::support::Api, queue: String| {
        tokio::spawn(async move { api.get("/events", &[("queue_id", &queue)]).await })
    };
    let first = long_poll(server.api(Some(&server.owner())), queue.clone());
    server.wait_parked(1).await;
    let second = long_poll(server.api(Some(&server.owner())), queue.clone());
    // Unsuperseded, it would wait for the 45-55 s heartbeat.
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .expect("the first poll ends when the second comes")
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"result": "success", "msg": "", "events": []}));
    // The second is the parked one now: an event reaches it.
    let email = server.owner().email;
    let (status, body) = owner
        .post(
            "/messages",
            &[("type", "direct"), ("to", &email), ("content", "wake up")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), second)
        .await
        .expect("the second poll is answered")
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    // Registered without apply_markdown: the Markdown source, as in Zulip.
    assert_eq!(body["events"][0]["message"]["content"], "wake up");
}

/// Sends raw bytes on a fresh connection and returns whatever comes back before the server
/// closes it (or `limit` passes), with how long that took.
async fn raw_exchange(
    server: &Server,
    head: &str,
    body_part: &'static [u8],
    limit: Duration,
) -> (String, Duration) {
    let address = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let head = head.to_owned();
    tokio::task::spawn_blocking(move || exchange(&address, &head, body_part, limit))
        .await
        .unwrap()
}

fn exchange(address: &str, head: &str, body_part: &[u8], limit: Duration) -> (String, Duration) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(limit)).unwrap();
    let started = Instant::now();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body_part).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test]
async fn a_client_that_stalls_mid_body_gets_request_timeout_and_nothing_changes() {
    let server = Server::start_with(&["--client-body-timeout-secs", "1"]);
    let owner = server.owner();
    let auth =
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", owner.email, owner.key));
    let head = format!(
        "POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 200\r\n\r\n"
    );
    let (answer, took) = raw_exchange(
        &server,
        &head,
        b"type=stream&to=general",
        Duration::from_secs(10),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"result": "error", "code": "REQUEST_TIMEOUT",
            "msg": "The request body did not arrive in time"})
    );
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // The server still answers others, and nothing was sent.
    let (status, body) = server
        .api(Some(&owner))
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["sender_email"] != owner.email.as_str()));
}

#[tokio::test]
async fn a_client_that_stalls_in_its_headers_is_cut_off() {
    let server = Server::start_with(&["--client-head-timeout-secs", "1"]);
    let (answer, took) = raw_exchange(
        &server,
        "GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n",
        b"",
        Duration::from_secs(10),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let (status, _) = server.api(None).get("/server_settings", &[]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn request_bodies_and_search_operands_have_limits() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    // A form body just over 1 MiB is refused whole; one just under it is read.
    let filler = "x".repeat(1024 * 1024);
    let (status, body) = owner
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("content", &filler)],
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"result": "error", "code": "BAD_REQUEST", "msg": "Request body too large"})
    );
    let under = "x".repeat(1024 * 1024 - 100);
    let (status, body) = owner.post("/typing", &[("padding", &under)]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "REQUEST_VARIABLE_MISSING", "{body}");
    // Search operands: 1,000 characters at most.
    for (length, ok) in [(1000, true), (1001, false)] {
        let narrow = json!([{"operator": "search", "operand": "a".repeat(length)}]).to_string();
        let (status, body) = owner
            .get(
                "/messages",
                &[
                    ("anchor", "newest"),
                    ("num_before", "1"),
                    ("num_after", "0"),
                    ("narrow", &narrow),
                ],
            )
            .await;
        if ok {
            assert_eq!(status, StatusCode::OK, "{body}");
        } else {
            assert_eq!(status, StatusCode::BAD_REQUEST);
            assert_eq!(
                body,
                json!({"result": "error", "code": "BAD_NARROW",
                    "msg": "Invalid narrow operator: search operand too long",
                    "desc": "search operand too long"})
            );
        }
    }
}

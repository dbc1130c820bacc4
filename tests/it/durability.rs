//! State survives restarts and `kill -9`; damaged logs are handled as documented; no secret is
//! ever written to the log.

use crate::support::{Server, OWNER};
use chronicle::events::{Envelope, Event, SCHEMA_VERSION};
use chronicle::ids::{Seq, UserId};
use chronicle::store::{EventLog, SledLog};
use reqwest::StatusCode;
use std::sync::Arc;

#[tokio::test]
async fn restart_keeps_state() {
    let server = Server::start();
    let (bob_id, bob) = server.create_member("bob@example.com", "Bob").await;
    let owner = server.api(Some(&server.owner()));
    let (_, before) = owner.get("/admin/projections", &[]).await;
    let server = server.stop().restart();
    assert!(
        server
            .stderr()
            .contains("state ready: snapshot plus the log after it"),
        "{}",
        server.stderr()
    );
    let (_, after) = server
        .api(Some(&server.owner()))
        .get("/admin/projections", &[])
        .await;
    assert_eq!(before["projections"], after["projections"]);
    let (status, body) = server.api(Some(&bob)).get("/users/me", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["user_id"], bob_id);
    // The zuliprc is written once and not replaced by later starts.
    assert_eq!(
        crate::support::zuliprc_value(&server.dir.join("zuliprc"), "key"),
        server.owner_key
    );
}

#[tokio::test]
async fn kill_9_loses_no_acknowledged_mutation() {
    let server = Server::start();
    let owner = Arc::new(server.api(Some(&server.owner())));
    // Concurrent creations, so that several land in one group-committed batch.
    let mut tasks = Vec::new();
    for i in 0..24 {
        let owner = owner.clone();
        tasks.push(tokio::spawn(async move {
            let email = format!("user{i}@example.com");
            let (status, body) = owner
                .post(
                    "/users",
                    &[
                        ("email", &email),
                        ("password", "password1"),
                        ("full_name", "U"),
                    ],
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            (email, body["user_id"].as_u64().unwrap())
        }));
    }
    let mut acknowledged = Vec::new();
    for task in tasks {
        acknowledged.push(task.await.unwrap());
    }
    // And a burst of key regenerations right before the kill.
    let (_, body) = owner.post("/users/me/api_key/regenerate", &[]).await;
    let last_key = body["api_key"].as_str().unwrap().to_owned();

    let server = server.kill9().restart();
    let owner = server.api(Some(&crate::support::Creds {
        email: OWNER.into(),
        key: last_key,
    }));
    let (status, body) = owner.get("/admin/projections", &[]).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the last acknowledged key must work: {body}"
    );
    let users = body["projections"]["users"].as_array().unwrap();
    for (email, id) in acknowledged {
        assert!(
            users
                .iter()
                .any(|u| u["email"] == email.as_str() && u["user_id"] == id),
            "{email} was acknowledged but is gone"
        );
    }
}

fn last_seq(dir: &std::path::Path) -> Seq {
    SledLog::open(&dir.join("log"))
        .unwrap()
        .last_seq()
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn torn_tail_is_quarantined_and_the_log_continues() {
    let server = Server::start();
    server.create_member("carol@example.com", "Carol").await;
    let stopped = server.stop();
    let valid_last = last_seq(&stopped.dir);
    {
        let log = SledLog::open(&stopped.dir.join("log")).unwrap();
        // Half a record: the shape a torn write leaves behind.
        let env = Envelope {
            seq: valid_last.next(),
            at: 0,
            actor: None,
            schema_version: SCHEMA_VERSION,
            event: Event::UserDeactivated { user_id: UserId(1) },
        };
        let record = env.encode(&chronicle::events::GENESIS).unwrap();
        log.insert_raw_for_tests(valid_last.next(), &record[..record.len() / 2])
            .unwrap();
    }
    let server = stopped.restart();
    let stderr = server.stderr();
    assert!(stderr.contains("LOG TAIL DAMAGED"), "{stderr}");
    assert!(
        stderr.contains(&format!("first_bad_seq={}", valid_last.next())),
        "{stderr}"
    );
    let owner = server.api(Some(&server.owner()));
    // The garbage was not folded: the owner is still active, and new writes continue the log.
    let (status, body) = owner.get("/users/me", &[]).await;
    assert_eq!(
        (status, body["is_active"].as_bool()),
        (StatusCode::OK, Some(true))
    );
    server.create_member("dave@example.com", "Dave").await;
    let (_, events) = owner
        .get("/admin/events", &[("after_seq", &valid_last.0.to_string())])
        .await;
    assert_eq!(events["events"][0]["seq"], valid_last.next().0);
    assert_eq!(events["events"][0]["type"], "UserCreated");
    let stopped = server.stop();
    let log = SledLog::open(&stopped.dir.join("log")).unwrap();
    assert_eq!(log.quarantined().unwrap().len(), 1);
}

#[tokio::test]
async fn damage_inside_the_log_refuses_to_start() {
    let server = Server::start();
    server.create_member("erin@example.com", "Erin").await;
    let stopped = server.stop();
    damage_record_2(&stopped.dir);
    let err = Server::start_in(&stopped.dir)
        .err()
        .expect("must refuse to start");
    assert!(err.contains("log record 2 is damaged"), "{err}");
    assert!(err.contains("not a torn tail"), "{err}");
}

/// Damage before the newest snapshot is not read by a start, which serves from the snapshot;
/// `--check-whole-log` verifies those records too, once the server serves, and reports it.
#[tokio::test]
async fn damage_before_the_snapshot_is_found_when_the_whole_log_is_checked() {
    let server = Server::start_with(&["--snapshot-every", "5"]);
    for i in 0..3 {
        let email = format!("user{i}@example.com");
        server.create_member(&email, "U").await;
    }
    let stopped = server.stop();
    let snapshots = std::fs::read_dir(stopped.dir.join("snapshots"))
        .unwrap()
        .count();
    assert!(snapshots > 0, "no snapshot was written");
    damage_record_2(&stopped.dir);
    let server = stopped.restart();
    let (status, _) = server
        .api(Some(&server.owner()))
        .get("/users/me", &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let stderr = server.stderr();
    assert!(stderr.contains("loaded the newest snapshot"), "{stderr}");
    assert!(!stderr.contains("in the background"), "{stderr}");
    let server = server.stop().restart_with(&["--check-whole-log"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !server
        .stderr()
        .contains("LOG DAMAGED before the newest snapshot")
    {
        assert!(std::time::Instant::now() < deadline, "{}", server.stderr());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // It keeps serving from its snapshot.
    let (status, _) = server
        .api(Some(&server.owner()))
        .get("/users/me", &[])
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn no_plaintext_secret_reaches_the_disk_log_or_listing() {
    let server = Server::start();
    let (_, frank) = server.create_member("frank@example.com", "Frank").await;
    let password = std::fs::read_to_string(server.dir.join("initial-password")).unwrap();
    let owner = server.api(Some(&server.owner()));
    let (_, listing) = owner.get("/admin/events", &[]).await;
    let (_, dump) = owner.get("/admin/projections", &[]).await;
    let secrets = [
        server.owner_key.clone(),
        frank.key.clone(),
        password.trim().to_owned(),
        "password123".into(),
    ];
    for text in [listing.to_string(), dump.to_string()] {
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "a secret leaked into {text}"
            );
        }
        assert!(!text.contains("$argon2id$"), "a password hash leaked");
    }
    let stderr_before_stop = server.stderr();
    let stopped = server.stop();
    // Every byte sled wrote for the log.
    let mut blobs = Vec::new();
    for entry in walk(&stopped.dir.join("log")) {
        blobs.push(std::fs::read(entry).unwrap());
    }
    for secret in &secrets {
        for blob in &blobs {
            assert!(
                !blob.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "a plaintext secret is in the log files"
            );
        }
        assert!(
            !stderr_before_stop.contains(secret.as_str()),
            "a secret was logged"
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// One acknowledged change, as the crash loop records it.
#[derive(Default, Clone)]
struct Acknowledged {
    /// Message id → content the server confirmed last, and a content it may hold instead
    /// (an edit sent but not answered before the kill).
    messages: std::collections::BTreeMap<u64, (String, Option<String>)>,
    /// Messages whose reaction was confirmed.
    reactions: std::collections::BTreeSet<u64>,
}

/// The crash loop: a server under concurrent sends, reactions, edits and subscription changes
/// is killed with SIGKILL at varying moments, 50 times. After every restart each acknowledged
/// change is there; at checkpoints the live state equals a replay from event 1 (the server
/// starts from snapshots, so this also checks snapshot plus tail against the whole log), and
/// at the end the log verifies: gapless, checksums and chain intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_kills_under_load_lose_no_acknowledged_change() {
    const CYCLES: usize = 50;
    let args = ["--snapshot-every", "40"];
    let started = std::time::Instant::now();
    let mut server = Server::start_with(&args);
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let owner = server.api(Some(&server.owner()));
    for name in ["general", "side"] {
        let (status, body) = owner
            .post(
                "/channels/create",
                &[("name", name), ("subscribers", &format!("[{alice_id}]"))],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let acknowledged = Arc::new(std::sync::Mutex::new(Acknowledged::default()));
    let mut kills = 0;
    // Acknowledged messages (with their last confirmed content) and reactions checked, summed
    // over the restarts.
    let mut checks = 0;
    for cycle in 0..CYCLES {
        let acknowledged_before = acknowledged.lock().unwrap().messages.len();
        // Four writers, each doing send → react → edit on its own messages, and toggling the
        // side channel, until the connection drops.
        let mut writers = Vec::new();
        for writer in 0..4 {
            let api = server.api(Some(&alice));
            let acknowledged = acknowledged.clone();
            writers.push(tokio::spawn(async move {
                // A request as a client sends it; `None` once the connection is gone.
                let request =
                    |method: reqwest::Method, path: String, form: Vec<(&'static str, String)>| {
                        let creds = api.creds.clone().unwrap();
                        let req = api
                            .client
                            .request(method, format!("{}{path}", api.base))
                            .basic_auth(creds.email, Some(creds.key))
                            .form(&form);
                        async move {
                            let resp = req.send().await.ok()?;
                            let status = resp.status();
                            let body = resp.json::<serde_json::Value>().await.ok()?;
                            (status == StatusCode::OK).then_some(body)
                        }
                    };
                for i in 0.. {
                    let content = format!("ack-{cycle}-{writer}-{i}");
                    let form = vec![
                        ("type", "stream".to_owned()),
                        ("to", "general".to_owned()),
                        ("topic", "crash".to_owned()),
                        ("content", content.clone()),
                    ];
                    let Some(sent) = request(reqwest::Method::POST, "/messages".into(), form).await
                    else {
                        return;
                    };
                    let Some(id) = sent["id"].as_u64() else {
                        return;
                    };
                    acknowledged
                        .lock()
                        .unwrap()
                        .messages
                        .insert(id, (content.clone(), None));
                    let path = format!("/messages/{id}/reactions");
                    let form = vec![("emoji_name", "octopus".to_owned())];
                    if request(reqwest::Method::POST, path, form).await.is_none() {
                        return;
                    }
                    acknowledged.lock().unwrap().reactions.insert(id);
                    // From here the content may be either until the edit is answered.
                    let edited = format!("{content}-edited");
                    acknowledged
                        .lock()
                        .unwrap()
                        .messages
                        .insert(id, (content.clone(), Some(edited.clone())));
                    let form = vec![("content", edited.clone())];
                    if request(reqwest::Method::PATCH, format!("/messages/{id}"), form)
                        .await
                        .is_none()
                    {
                        return;
                    }
                    acknowledged
                        .lock()
                        .unwrap()
                        .messages
                        .insert(id, (edited, None));
                    let method = if i % 2 == 0 {
                        reqwest::Method::DELETE
                    } else {
                        reqwest::Method::POST
                    };
                    // Subscription churn as load (its outcome is not tracked).
                    let form = vec![("subscriptions", r#"[{"name":"side"}]"#.to_owned())];
                    let _ = request(method, "/users/me/subscriptions".to_owned(), form).await;
                }
            }));
        }
        // Kill at a moment that varies from cycle to cycle: 5–65 ms after the load's first
        // acknowledged message (waited for, so that every cycle kills a server at work, however
        // slow the machine).
        let load_started = std::time::Instant::now();
        while acknowledged.lock().unwrap().messages.len() == acknowledged_before {
            assert!(
                load_started.elapsed() < std::time::Duration::from_secs(30),
                "cycle {cycle}: the load had no message acknowledged in 30 s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let delay = 5 + (cycle as u64 * 37) % 61;
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        let stopped = tokio::task::spawn_blocking(move || server.kill9())
            .await
            .unwrap();
        kills += 1;
        for writer in writers {
            let _ = writer.await;
        }
        server = stopped.restart_with(&args);
        let api = server.api(Some(&alice));
        let (_, page) = api
            .get(
                "/messages",
                &[
                    ("anchor", "newest"),
                    ("num_before", "5000"),
                    ("num_after", "0"),
                    ("narrow", r#"[["channel","general"]]"#),
                ],
            )
            .await;
        let stored: std::collections::BTreeMap<u64, serde_json::Value> = page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["id"].as_u64().unwrap(), m.clone()))
            .collect();
        let expected = acknowledged.lock().unwrap().clone();
        checks += expected.messages.len() + expected.reactions.len();
        for (id, (content, maybe)) in &expected.messages {
            let message = stored
                .get(id)
                .unwrap_or_else(|| panic!("cycle {cycle}: acknowledged message {id} is lost"));
            let html = message["content"].as_str().unwrap();
            let holds = |c: &str| html == format!("<p>{c}</p>");
            assert!(
                holds(content) || maybe.as_deref().is_some_and(holds),
                "cycle {cycle}: message {id} holds {html}, acknowledged {content}"
            );
            if expected.reactions.contains(id) {
                assert_eq!(
                    message["reactions"][0]["emoji_code"], "1f419",
                    "cycle {cycle}: {id}"
                );
            }
        }
        if cycle % 10 == 9 {
            // The live state (from a snapshot and the tail) equals a replay from event 1.
            let owner = server.api(Some(&server.owner()));
            let (_, live) = owner.get("/admin/projections", &[]).await;
            let stopped = server.stop();
            let out = std::process::Command::new(crate::support::bin())
                .args(["dump", "--data-dir"])
                .arg(&stopped.dir)
                .output()
                .unwrap();
            let replayed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(live["projections"], replayed, "cycle {cycle}");
            server = stopped.restart_with(&args);
        }
    }
    let total = acknowledged.lock().unwrap().messages.len();
    let stopped = server.stop();
    let out = std::process::Command::new(crate::support::bin())
        .args(["verify", "--data-dir"])
        .arg(&stopped.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("chain: intact"),
        "{text}"
    );
    assert_eq!(kills, CYCLES);
    println!(
        "crash loop: {kills} kills, {total} acknowledged messages, {checks} checks of acknowledged changes in all, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// A server serves before it has built its search index (a start from a snapshot or from the
/// log alone builds it on a thread of its own); a search finds the same messages after a
/// restart, before the index is in place and once it is.
#[tokio::test]
async fn searches_find_the_same_after_a_restart_and_once_the_index_is_built() {
    let server = Server::start_with(&["--snapshot-every", "5"]);
    let owner = server.api(Some(&server.owner()));
    let (status, body) = owner
        .post(
            "/channels/create",
            &[("name", "ops"), ("subscribers", "[]")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut sent = Vec::new();
    for text in ["Staging is up", "lunch at noon", "staging lunch", "prod"] {
        let params = [
            ("type", "stream"),
            ("to", "ops"),
            ("topic", "deploys"),
            ("content", text),
        ];
        sent.push(crate::messages::send(&owner, &params).await);
    }
    let (status, body) = owner
        .call(
            reqwest::Method::PATCH,
            &format!("/messages/{}", sent[3]),
            &[("content", "staging is down")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let narrow = serde_json::json!([["search", "STAGING"]]).to_string();
    let expected = vec![sent[0], sent[2], sent[3]];
    assert_eq!(search(&owner, &narrow).await, expected);
    let mut server = server;
    for from_log_alone in [false, true] {
        let stopped = server.stop();
        if from_log_alone {
            std::fs::remove_dir_all(stopped.dir.join("snapshots")).unwrap();
        }
        server = stopped.restart();
        assert_eq!(
            server.stderr().contains("loaded the newest snapshot"),
            !from_log_alone,
            "{}",
            server.stderr()
        );
        let owner = server.api(Some(&server.owner()));
        assert_eq!(search(&owner, &narrow).await, expected);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !server.stderr().contains("search index built") {
            assert!(std::time::Instant::now() < deadline, "{}", server.stderr());
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(
            server.stderr().contains("messages=4"),
            "{}",
            server.stderr()
        );
        assert_eq!(search(&owner, &narrow).await, expected);
        // The index follows changes made after it was built.
        for (content, found) in [
            ("staging again", vec![sent[0], sent[1], sent[2], sent[3]]),
            ("lunch at noon", expected.clone()),
        ] {
            let (status, body) = owner
                .call(
                    reqwest::Method::PATCH,
                    &format!("/messages/{}", sent[1]),
                    &[("content", content)],
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(search(&owner, &narrow).await, found);
        }
    }
}

async fn search(api: &crate::support::Api, narrow: &str) -> Vec<u64> {
    let params = [
        ("anchor", "newest"),
        ("num_before", "50"),
        ("num_after", "0"),
        ("narrow", narrow),
    ];
    crate::messages::ids(&crate::messages::fetch(api, &params).await)
}

/// Flips a byte inside record 2 of a stopped server's log (its checksum no longer matches).
fn damage_record_2(dir: &std::path::Path) {
    let log = SledLog::open(&dir.join("log")).unwrap();
    let (seq, record) = log.scan_from(Seq(2)).next().unwrap().unwrap();
    assert_eq!(seq, Seq(2));
    let mut record = record.to_vec();
    record[8] ^= 0x5a;
    log.insert_raw_for_tests(seq, &record).unwrap();
}

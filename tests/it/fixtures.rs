//! Recorded logs in `replay-fixtures/` must keep replaying to their recorded dumps, whatever
//! the code becomes. The logs are frozen bytes: `BLESS=1 cargo test fixtures` records a log only
//! where none exists, and otherwise rewrites the expected dump from the existing log (for a
//! deliberate change of the dump's shape; review the diff like code).

use crate::support::Server;
use chronicle::projections::Projections;
use chronicle::store::{check_integrity, export_records, import_records, Integrity, SledLog};
use std::path::{Path, PathBuf};

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("replay-fixtures")
        .join(name)
}

/// Records the v1 foundation scenario: setup, members, a deactivation, a reactivation, a key
/// regeneration.
async fn record_v1_foundation(dir: &Path) {
    let server = Server::start();
    let (bob, _) = server.create_member("bob@example.com", "Bob").await;
    server.create_member("carol@example.com", "Carol").await;
    let owner = server.api(Some(&server.owner()));
    owner.delete(&format!("/users/{bob}"), &[]).await;
    owner.post(&format!("/users/{bob}/reactivate"), &[]).await;
    owner.delete(&format!("/users/{bob}"), &[]).await;
    owner.post("/users/me/api_key/regenerate", &[]).await;
    let stopped = server.stop();
    let log = SledLog::open(&stopped.dir.join("log")).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let mut out = Vec::new();
    export_records(&log, &mut out).unwrap();
    std::fs::write(dir.join("log.bin"), out).unwrap();
}

fn write_expectations(dir: &Path, state: &Projections) {
    let dump = serde_json::to_string_pretty(&state.dump()).unwrap();
    std::fs::write(dir.join("expected-dump.json"), dump + "\n").unwrap();
    std::fs::write(dir.join("expected-digest.txt"), state.digest() + "\n").unwrap();
}

/// Records a log of a working organization: a channel, messages, topic visibility policies of
/// every kind (the event schema version 2 changed), a reaction, an edit. `v1-messages` was
/// recorded by schema version 1, `v2-messages` by version 2.
async fn record_messages(dir: &Path) {
    let server = Server::start();
    let (alice, alice_creds) = server.create_member("alice@example.com", "Alice").await;
    let owner = server.api(Some(&server.owner()));
    let alice_api = server.api(Some(&alice_creds));
    let (_, created) = owner
        .post(
            "/channels/create",
            &[("name", "general"), ("subscribers", &format!("[{alice}]"))],
        )
        .await;
    let channel = created["id"].as_u64().unwrap().to_string();
    let (_, sent) = alice_api
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "general"),
                ("topic", "lunch"),
                ("content", "Tacos?"),
            ],
        )
        .await;
    let id = sent["id"].as_u64().unwrap();
    for (topic, policy) in [
        ("lunch", "1"),
        ("deploys", "3"),
        ("random", "2"),
        ("random", "0"),
    ] {
        alice_api
            .post(
                "/user_topics",
                &[
                    ("stream_id", &channel),
                    ("topic", topic),
                    ("visibility_policy", policy),
                ],
            )
            .await;
    }
    owner
        .post(
            &format!("/messages/{id}/reactions"),
            &[("emoji_name", "octopus")],
        )
        .await;
    alice_api
        .call(
            reqwest::Method::PATCH,
            &format!("/messages/{id}"),
            &[("content", "Tacos!")],
        )
        .await;
    let stopped = server.stop();
    let log = SledLog::open(&stopped.dir.join("log")).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let mut out = Vec::new();
    export_records(&log, &mut out).unwrap();
    std::fs::write(dir.join("log.bin"), out).unwrap();
}

/// Replays a fixture's frozen log and compares the state with its recorded dump and digest
/// (recording the log first under `BLESS=1` when there is none).
async fn replay_fixture<F, Fut>(name: &str, record: F) -> serde_json::Value
where
    F: FnOnce(PathBuf) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = fixture_dir(name);
    let bless = std::env::var("BLESS").as_deref() == Ok("1");
    if bless && !dir.join("log.bin").exists() {
        record(dir.clone()).await;
    }
    let bytes = std::fs::read(dir.join("log.bin")).expect("fixture exists (BLESS=1 records it)");
    let tmp = tempfile::tempdir().unwrap();
    let log = SledLog::open(tmp.path()).unwrap();
    let count = import_records(&log, &bytes).unwrap();
    assert_eq!(
        check_integrity(&log).unwrap(),
        Integrity::Clean {
            last: chronicle::ids::Seq(count)
        }
    );
    let state = chronicle::replay::fold(&log, None, |_| {}).unwrap();
    if bless {
        write_expectations(&dir, &state);
    }
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected-dump.json")).unwrap())
            .unwrap();
    assert_eq!(state.dump(), expected, "{name}");
    let digest = std::fs::read_to_string(dir.join("expected-digest.txt")).unwrap();
    assert_eq!(state.digest(), digest.trim(), "{name}");
    expected
}

#[tokio::test]
async fn v1_foundation_fixture_replays_to_its_dump() {
    let expected = replay_fixture("v1-foundation", |dir| async move {
        record_v1_foundation(&dir).await
    })
    .await;
    // Bob ends deactivated, the owner keeps a password and is the only owner.
    let users = expected["users"].as_array().unwrap();
    assert_eq!(users.len(), 3);
    assert_eq!(users[1]["is_active"], false);
}

#[tokio::test]
async fn v1_messages_fixture_replays_to_its_dump() {
    let expected = replay_fixture(
        "v1-messages",
        |dir| async move { record_messages(&dir).await },
    )
    .await;
    // The policies as recorded by schema version 1 (numbers): muted, followed; "random" was
    // unmuted, then cleared.
    let topics = expected["user_topics"].to_string();
    assert!(
        topics.contains("lunch") && topics.contains("deploys"),
        "{topics}"
    );
    assert!(!topics.contains("random"), "{topics}");
    assert_eq!(expected["messages"]["messages"][0]["content"], "Tacos!");
}

#[tokio::test]
async fn v2_messages_fixture_replays_to_its_dump() {
    let expected = replay_fixture(
        "v2-messages",
        |dir| async move { record_messages(&dir).await },
    )
    .await;
    // The same scenario recorded by version 2 folds to the same state as version 1's, apart
    // from times and secrets' derived values.
    let v1: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_dir("v1-messages").join("expected-dump.json")).unwrap(),
    )
    .unwrap();
    let policies = |dump: &serde_json::Value| -> Vec<(serde_json::Value, serde_json::Value)> {
        dump["user_topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["topic_name"].clone(), t["visibility_policy"].clone()))
            .collect()
    };
    assert_eq!(policies(&expected), policies(&v1));
    assert_eq!(expected["messages"]["messages"][0]["content"], "Tacos!");
}

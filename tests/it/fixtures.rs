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

#[tokio::test]
async fn v1_foundation_fixture_replays_to_its_dump() {
    let dir = fixture_dir("v1-foundation");
    let bless = std::env::var("BLESS").as_deref() == Ok("1");
    if bless && !dir.join("log.bin").exists() {
        record_v1_foundation(&dir).await;
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
    let state = Projections::fold(&log, None, |_| {}).unwrap();
    if bless {
        write_expectations(&dir, &state);
    }
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected-dump.json")).unwrap())
            .unwrap();
    assert_eq!(state.dump(), expected);
    let digest = std::fs::read_to_string(dir.join("expected-digest.txt")).unwrap();
    assert_eq!(state.digest(), digest.trim());
    // Bob ends deactivated, the owner keeps a password and is the only owner.
    let users = expected["users"].as_array().unwrap();
    assert_eq!(users.len(), 3);
    assert_eq!(users[1]["is_active"], false);
}

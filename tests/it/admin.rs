//! The inspection surface: admin endpoints and the offline `dump`/`replay` commands agree.

use crate::support::{bin, Server};
use reqwest::StatusCode;
use serde_json::json;
use std::process::Command;
use std::time::Duration;

#[tokio::test]
async fn admin_endpoints_are_for_administrators_only() {
    let server = Server::start();
    let (_, member) = server.create_member("gina@example.com", "Gina").await;
    let as_member = server.api(Some(&member));
    for path in [
        "/admin/projections",
        "/admin/events",
        "/admin/verify",
        "/admin/diff",
    ] {
        let (status, body) = as_member.get(path, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // The inspector proper is for `can_inspect_log_group` (owners); verify for administrators.
        let msg = if path == "/admin/verify" {
            "Must be an organization administrator"
        } else {
            "Not allowed to inspect the log: the organization's owners decide who may (can_inspect_log_group)"
        };
        assert_eq!(
            body,
            json!({"result":"error","msg":msg,"code":"UNAUTHORIZED_PRINCIPAL"})
        );
        assert_eq!(
            server.api(None).get(path, &[]).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
}

#[tokio::test]
async fn event_listing_pages_and_time_travel_dumps() {
    let server = Server::start();
    server.create_member("hal@example.com", "Hal").await;
    let owner = server.api(Some(&server.owner()));
    let (status, body) = owner
        .get("/admin/events", &[("after_seq", "1"), ("limit", "1")])
        .await;
    assert_eq!(status, StatusCode::OK);
    // Setup: the realm, its owner, the eight system groups; then Hal.
    assert_eq!(body["last_seq"], 11);
    let events = body["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event["seq"], 2);
    assert_eq!(event["type"], "UserCreated");
    assert_eq!(event["actor"], serde_json::Value::Null);
    assert_eq!(event["schema_version"], 2);
    assert_eq!(event["payload"]["email"], "owner@chronicle.local");
    assert_eq!(event["payload"]["password_hash"], "[redacted]");
    assert_eq!(event["payload"]["api_key_nonce"], "[redacted]");
    let (_, body) = owner.get("/admin/events", &[("after_seq", "2")]).await;
    assert_eq!(body["events"][0]["type"], "UserGroupCreated");
    assert_eq!(body["events"][0]["payload"]["name"], "role:nobody");
    let hal = &body["events"][8];
    assert_eq!((hal["seq"].as_u64(), &hal["actor"]), (Some(11), &json!(1)));
    assert_eq!(hal["payload"]["email"], "hal@example.com");
    for bad in ["0", "1001"] {
        let (status, body) = owner.get("/admin/events", &[("limit", bad)]).await;
        assert_eq!(
            (status, &body["var_name"]),
            (StatusCode::BAD_REQUEST, &json!("limit"))
        );
    }

    // As of seq 2 Hal did not exist yet; now he does.
    let (_, then) = owner.get("/admin/projections", &[("at_seq", "2")]).await;
    assert_eq!(then["projections"]["seq"], 2);
    assert_eq!(then["projections"]["users"].as_array().unwrap().len(), 1);
    let (_, now) = owner.get("/admin/projections", &[]).await;
    assert_eq!(now["projections"]["users"].as_array().unwrap().len(), 2);
    let (status, body) = owner.get("/admin/projections", &[("at_seq", "99")]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "at_seq 99 is beyond the last event (11)");

    // The offline commands print the same dump and a digest.
    let stopped = server.stop();
    let out = Command::new(bin())
        .args(["dump", "--data-dir"])
        .arg(&stopped.dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let offline: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(offline, now["projections"]);
    let out = Command::new(bin())
        .args(["dump", "--at-seq", "2", "--data-dir"])
        .arg(&stopped.dir)
        .output()
        .unwrap();
    let offline: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(offline, then["projections"]);
    let out = Command::new(bin())
        .args(["replay", "--data-dir"])
        .arg(&stopped.dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("events: 11\n"), "{text}");
    assert!(text.contains("events_per_second: "), "{text}");
    let digest = text
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .unwrap();
    assert_eq!(digest.len(), 64);

    // Export then import into a new directory replays to the same digest.
    let export = stopped.dir.with_extension("export");
    assert!(Command::new(bin())
        .args(["export", "--data-dir"])
        .arg(&stopped.dir)
        .arg("--out")
        .arg(&export)
        .status()
        .unwrap()
        .success());
    let copy = stopped.dir.with_extension("copy");
    assert!(Command::new(bin())
        .args(["import", "--data-dir"])
        .arg(&copy)
        .arg("--from")
        .arg(&export)
        .status()
        .unwrap()
        .success());
    let out = Command::new(bin())
        .args(["replay", "--data-dir"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains(&format!("digest: {digest}")));
}

#[tokio::test]
async fn dump_refuses_while_the_server_runs() {
    let server = Server::start();
    let out = Command::new(bin())
        .args(["dump", "--data-dir"])
        .arg(&server.dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("in use by another process"), "{err}");
}

fn run(args: &[&str], dir: &std::path::Path) -> String {
    let out = Command::new(bin())
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Debugging a real scenario: who renamed Ivy, when, and what the server believed before and
/// after, through the admin API and the offline commands alike.
#[tokio::test]
async fn audit_trail_filters_areas_and_diffs() {
    let server = Server::start();
    let (ivy_id, ivy) = server.create_member("ivy@example.com", "Ivy").await;
    let owner = server.api(Some(&server.owner()));
    let ivy = server.api(Some(&ivy));
    let (status, _) = ivy
        .call(
            reqwest::Method::PATCH,
            "/settings",
            &[("full_name", "Ivy Vine")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let middle = crate::support::now_rfc3339();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (status, _) = owner
        .call(
            reqwest::Method::PATCH,
            &format!("/users/{ivy_id}"),
            &[("full_name", "Ivy Oak")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // The API: by type, by actor (id or address), by time; pages continue from scanned_to_seq.
    let renames = |params: Vec<(&'static str, String)>| {
        let owner = &owner;
        async move {
            let pairs: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let (status, body) = owner.get("/admin/events", &pairs).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body
        }
    };
    let all = renames(vec![("type", "UserChanged".into())]).await;
    let seqs: Vec<u64> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![12, 13], "{all}");
    assert_eq!(
        all["events"][0]["payload"]["change"],
        json!({"FullName": "Ivy Vine"})
    );
    let by_ivy = renames(vec![
        ("type", "UserChanged".into()),
        ("actor", "ivy@example.com".into()),
    ])
    .await;
    assert_eq!(by_ivy["events"].as_array().unwrap().len(), 1);
    assert_eq!(by_ivy["events"][0]["actor"], ivy_id);
    let later = renames(vec![("since", middle.clone())]).await;
    assert_eq!(later["events"][0]["seq"], 13, "{later}");
    let page = renames(vec![("type", "UserChanged".into()), ("limit", "1".into())]).await;
    assert_eq!(page["scanned_to_seq"], 12);
    let next = renames(vec![
        ("type", "UserChanged".into()),
        ("after_seq", "12".into()),
    ])
    .await;
    assert_eq!(next["events"][0]["seq"], 13);
    for (param, value, msg) in [
        ("type", "UserRenamed", "unknown event type 'UserRenamed'"),
        ("actor", "nobody@example.com", "No such user"),
        ("since", "yesterday", "since is not an RFC 3339 time"),
    ] {
        let (status, body) = owner.get("/admin/events", &[(param, value)]).await;
        assert_eq!((status.as_u16(), body["msg"].as_str().unwrap()), (400, msg));
        assert_eq!(body["var_name"], param);
    }
    let (_, users) = owner
        .get("/admin/projections", &[("only", "users"), ("at_seq", "12")])
        .await;
    assert_eq!(users["projections"]["seq"], 12);
    assert_eq!(users["projections"]["users"][1]["full_name"], "Ivy Vine");
    assert!(users["projections"].get("messages").is_none());
    let (_, diff) = owner
        .get(
            "/admin/diff",
            &[("from_seq", "12"), ("to_seq", "13"), ("only", "users")],
        )
        .await;
    assert_eq!(
        diff["diff"]["changes"]["users"],
        json!([{"path": "/users/1/full_name", "before": "Ivy Vine", "after": "Ivy Oak"}])
    );
    let (status, body) = owner
        .get("/admin/diff", &[("from_seq", "13"), ("to_seq", "12")])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = owner.get("/admin/projections", &[("only", "nope")]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["msg"]
        .as_str()
        .unwrap()
        .starts_with("no area 'nope'; the areas are: realm, users"));

    // The same from the command line, the server stopped.
    let stopped = server.stop();
    let dir = stopped.dir.as_path();
    let lines = run(&["log", "--type", "UserChanged"], dir);
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains(&format!("user {ivy_id}")), "{}", lines[0]);
    assert!(
        lines[0].contains(r#"change={"FullName":"Ivy Vine"}"#),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("user 1") && lines[1].contains("Ivy Oak"),
        "{}",
        lines[1]
    );
    let json_lines = run(&["log", "--json", "--actor", "ivy@example.com"], dir);
    let parsed: Vec<serde_json::Value> = json_lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0]["type"], "UserChanged");
    let setup = run(&["log", "--until", &middle, "--actor", "0"], dir);
    assert_eq!(setup.lines().count(), 10, "{setup}");
    let only: serde_json::Value =
        serde_json::from_str(&run(&["dump", "--only", "users", "--at-seq", "12"], dir)).unwrap();
    assert_eq!(only, users["projections"]);
    let diff: serde_json::Value =
        serde_json::from_str(&run(&["diff", "--from-seq", "12", "--to-seq", "13"], dir)).unwrap();
    assert_eq!(
        diff,
        json!({"from_seq": 12, "to_seq": 13, "changes": {
            "users": [{"path": "/users/1/full_name", "before": "Ivy Vine", "after": "Ivy Oak"}],
        }})
    );
    let replayed = run(&["replay", "--to-time", &middle], dir);
    assert!(replayed.contains("last_seq: 12\n"), "{replayed}");
}

/// Tamper evidence: a record rewritten with a valid checksum breaks the hash chain at the next
/// record; a flipped byte fails its checksum; both are reported with their seq, by the API and
/// by `chronicle verify`, and `replay --verify` refuses.
#[tokio::test]
async fn the_hash_chain_reports_the_first_altered_record() {
    use chronicle::events::{record_link, Envelope};
    use chronicle::ids::Seq;
    use chronicle::store::{EventLog, SledLog};
    let server = Server::start();
    server.create_member("jo@example.com", "Jo").await;
    server.create_member("kim@example.com", "Kim").await;
    let owner = server.api(Some(&server.owner()));
    let (status, body) = owner.get("/admin/verify", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["records_checked"], 12);
    assert_eq!(body["unchained_prefix"], 0);
    assert_eq!(body["first_break"], serde_json::Value::Null);
    let head = body["head"].as_str().unwrap().to_owned();
    assert_eq!(head.len(), 64);
    let stopped = server.stop();
    let dir = stopped.dir.clone();
    let out = run(&["verify"], &dir);
    assert!(
        out.contains("records_checked: 12\n") && out.contains("chain: intact"),
        "{out}"
    );
    assert!(out.contains(&format!("head: {head}\n")), "{out}");

    // Jo's record (seq 11) rewritten as an attacker would: another address, a fresh checksum.
    let record =
        |log: &SledLog, seq: u64| log.scan_from(Seq(seq)).next().unwrap().unwrap().1.to_vec();
    {
        let log = SledLog::open(&dir.join("log")).unwrap();
        let original = record(&log, 11);
        assert!(record_link(&original).is_some());
        let at = original
            .windows(14)
            .position(|w| w == b"jo@example.com")
            .unwrap();
        let mut forged = original.clone();
        forged[at] = b'J';
        let crc = crc32fast::hash(&forged[4..]).to_be_bytes();
        forged[..4].copy_from_slice(&crc);
        assert!(
            Envelope::decode(Seq(11), &forged).is_ok(),
            "the forgery decodes"
        );
        log.insert_raw_for_tests(Seq(11), &forged).unwrap();
    }
    let out = Command::new(bin())
        .args(["verify", "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("chain: broken at record 12: record 12 does not link to the record before it: record 11 was changed"),
        "{text}"
    );
    let out = Command::new(bin())
        .args(["replay", "--verify", "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken at record 12"));

    // A flipped byte without a fresh checksum: the record itself is reported.
    {
        let log = SledLog::open(&dir.join("log")).unwrap();
        let mut flipped = record(&log, 5);
        let last = flipped.len() - 1;
        flipped[last] ^= 0x01;
        log.insert_raw_for_tests(Seq(5), &flipped).unwrap();
    }
    let out = Command::new(bin())
        .args(["verify", "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("chain: broken at record 5: record 5 is damaged: checksum mismatch"),
        "{text}"
    );
}

/// Logs written before the chain existed verify as an unchained prefix.
#[test]
fn a_log_from_before_the_chain_verifies_as_unchained() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("replay-fixtures/v1-foundation/log.bin");
    let status = Command::new(bin())
        .args(["import", "--data-dir"])
        .arg(dir.path())
        .arg("--from")
        .arg(&fixture)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let out = run(&["verify"], dir.path());
    assert!(
        out.contains("records_checked: 8\nunchained_prefix: 8\n"),
        "{out}"
    );
    assert!(out.contains("chain: intact"), "{out}");
}

/// Snapshots: a start loads the newest valid one and replays the rest; the state is exactly
/// the state of a replay from event 1; a damaged snapshot is reported and passed over.
#[tokio::test]
async fn starting_from_a_snapshot_equals_replaying_from_the_start() {
    let server = Server::start_with(&["--snapshot-every", "10"]);
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let owner = server.api(Some(&server.owner()));
    let alice = server.api(Some(&alice));
    owner
        .post(
            "/channels/create",
            &[
                ("name", "general"),
                ("subscribers", &format!("[{alice_id}]")),
            ],
        )
        .await;
    owner
        .post(
            "/realm/filters",
            &[
                ("pattern", "#(?P<id>[0-9]+)"),
                ("url_template", "https://tracker.example/{id}"),
            ],
        )
        .await;
    for i in 0..12 {
        let (status, body) = alice
            .post(
                "/messages",
                &[
                    ("type", "stream"),
                    ("to", "general"),
                    ("topic", "builds"),
                    ("content", &format!("build {i} fixes #{i}")),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // A snapshot falls due every 10 events, but one due while the one before is still being
    // written waits for the next batch: on a loaded machine one more event may be needed.
    let mut attempt = 0;
    let snapshots = loop {
        if let Some(found) = snapshots_within(&server.dir, 2, Duration::from_secs(5)).await {
            break found;
        }
        attempt += 1;
        assert!(attempt <= 5, "fewer than 2 snapshots were written");
        let status = format!("waiting for a snapshot ({attempt})");
        let (code, body) = owner
            .post("/users/me/status", &[("status_text", &status)])
            .await;
        assert_eq!(code, StatusCode::OK, "{body}");
    };
    let stopped = server.stop();
    let dir = stopped.dir.clone();
    let full: serde_json::Value = serde_json::from_str(&run(&["dump"], &dir)).unwrap();
    let replayed = run(&["replay", "--verify"], &dir);
    assert!(replayed.contains("snapshot_digest: matches"), "{replayed}");

    let server = stopped.restart();
    assert!(
        server.stderr().contains("loaded the newest snapshot"),
        "{}",
        server.stderr()
    );
    let owner = server.api(Some(&server.owner()));
    let (_, now) = owner.get("/admin/projections", &[]).await;
    assert_eq!(now["projections"], full);
    // What snapshots leave out is rebuilt: the search index and compiled linkifiers.
    let (_, found) = owner
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "5"),
                ("num_after", "0"),
                ("narrow", r#"[["channel","general"],["search","build 7"]]"#),
            ],
        )
        .await;
    assert_eq!(found["messages"].as_array().unwrap().len(), 1, "{found}");
    let alice = server.api(alice.creds.as_ref());
    let (_, sent) = alice
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "general"),
                ("topic", "t"),
                ("content", "see #42"),
            ],
        )
        .await;
    let (_, m) = alice.get(&format!("/messages/{}", sent["id"]), &[]).await;
    assert!(
        m["message"]["content"]
            .as_str()
            .unwrap()
            .contains("https://tracker.example/42"),
        "{m}"
    );
    let stopped = server.stop();

    // The newest snapshot damaged (the one this stop wrote): reported, and the one before it
    // (or the log) used instead.
    assert!(snapshots.len() >= 2);
    let (_, newest) = chronicle::snapshot::list(&stopped.dir).pop().unwrap();
    let mut bytes = std::fs::read(&newest).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&newest, bytes).unwrap();
    let full: serde_json::Value = serde_json::from_str(&run(&["dump"], &stopped.dir)).unwrap();
    let server = stopped.restart();
    let stderr = server.stderr();
    assert!(stderr.contains("snapshot ignored"), "{stderr}");
    assert!(stderr.contains("do not match their hash"), "{stderr}");
    let owner = server.api(Some(&server.owner()));
    let (_, now) = owner.get("/admin/projections", &[]).await;
    assert_eq!(now["projections"], full);
}

/// A clean stop writes a snapshot of the final state when the log moved on by a tenth of the
/// interval since the newest one, and the next start loads it instead of folding the tail; a
/// stop after fewer events writes none.
#[tokio::test]
async fn a_clean_stop_writes_a_snapshot_the_next_start_loads() {
    let server = Server::start_with(&["--snapshot-every", "1000"]);
    let owner = server.api(Some(&server.owner()));
    let (status, body) = owner
        .post(
            "/channels/create",
            &[("name", "general"), ("subscribers", "[]")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for i in 0..120 {
        let content = format!("before the stop {i}");
        crate::messages::send(
            &owner,
            &[
                ("type", "stream"),
                ("to", "general"),
                ("topic", "stop"),
                ("content", &content),
            ],
        )
        .await;
    }
    assert!(
        snapshot_seqs(&server.dir).is_empty(),
        "no periodic snapshot yet"
    );
    let stopped = server.stop();
    let seqs = snapshot_seqs(&stopped.dir);
    let full: serde_json::Value = serde_json::from_str(&run(&["dump"], &stopped.dir)).unwrap();
    let last_seq = full["seq"].as_u64().unwrap();
    assert_eq!(seqs, vec![last_seq], "one snapshot, at the log's end");

    let server = stopped.restart();
    let stderr = server.stderr();
    assert!(stderr.contains("loaded the newest snapshot"), "{stderr}");
    let owner = server.api(Some(&server.owner()));
    let (_, now) = owner.get("/admin/projections", &[]).await;
    assert_eq!(now["projections"], full);
    crate::messages::send(
        &owner,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "stop"),
            ("content", "after"),
        ],
    )
    .await;
    let stopped = server.stop();
    assert_eq!(
        snapshot_seqs(&stopped.dir),
        vec![last_seq],
        "a short tail: no new snapshot"
    );
}

/// The seqs of the snapshots in a data directory, oldest first.
fn snapshot_seqs(dir: &std::path::Path) -> Vec<u64> {
    chronicle::snapshot::list(dir)
        .into_iter()
        .map(|(seq, _)| seq.0)
        .collect()
}

/// Waits (a few seconds at most) until at least `n` snapshots are on disk; returns them,
/// oldest first.
/// The snapshots in `dir` once there are `n` of them, or `None` if `wait` passes first.
async fn snapshots_within(
    dir: &std::path::Path,
    n: usize,
    wait: Duration,
) -> Option<Vec<std::path::PathBuf>> {
    let start = std::time::Instant::now();
    loop {
        let found = chronicle::snapshot::list(dir);
        if found.len() >= n {
            return Some(found.into_iter().map(|(_, path)| path).collect());
        }
        if start.elapsed() > wait {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether any file under `dir` contains `needle`.
fn found_in(dir: &std::path::Path, needle: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|e| {
        let path = e.path();
        if path.is_dir() {
            found_in(&path, needle)
        } else {
            std::fs::read(&path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
        }
    })
}

/// Erasure: after `chronicle erase`, a deleted message's content (as sent and as edited) is
/// nowhere in the data directory; what was kept is intact, the chain verifies, the audit trail
/// says what happened, and the server comes back with the same state.
#[tokio::test]
async fn erased_content_cannot_be_read_back_from_the_data_directory() {
    let server = Server::start_with(&["--snapshot-every", "5"]);
    let (_, alice) = server.create_member("alice@example.com", "Alice").await;
    let alice = server.api(Some(&alice));
    let send = |content: &'static str| {
        let alice = &alice;
        async move {
            let (status, body) = alice
                .post(
                    "/messages",
                    &[("type", "direct"), ("to", "[1]"), ("content", content)],
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body["id"].as_u64().unwrap()
        }
    };
    let secret = send("supersecret-4711 the launch code").await;
    let kept_message = send("keepme-123 lunch at noon").await;
    let (status, _) = alice
        .call(
            reqwest::Method::PATCH,
            &format!("/messages/{secret}"),
            &[("content", "supersecret-4712 edited")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = alice.delete(&format!("/messages/{secret}"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    // A draft, a scheduled message and a saved snippet, each deleted by its owner.
    let (_, draft) = alice
        .post(
            "/drafts",
            &[(
                "drafts",
                r#"[{"type":"","to":[],"topic":"","content":"draftsecret-5"}]"#,
            )],
        )
        .await;
    let (status, _) = alice
        .delete(&format!("/drafts/{}", draft["ids"][0]), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let later = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600)
        .to_string();
    let (_, scheduled) = alice
        .post(
            "/scheduled_messages",
            &[
                ("type", "direct"),
                ("to", "[1]"),
                ("content", "schedsecret-6"),
                ("scheduled_delivery_timestamp", &later),
            ],
        )
        .await;
    let (status, _) = alice
        .delete(
            &format!("/scheduled_messages/{}", scheduled["scheduled_message_id"]),
            &[],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, snippet) = alice
        .post(
            "/saved_snippets",
            &[("title", "t"), ("content", "snipsecret-7")],
        )
        .await;
    let (status, _) = alice
        .delete(
            &format!("/saved_snippets/{}", snippet["saved_snippet_id"]),
            &[],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let owner = server.api(Some(&server.owner()));
    // The organization's icon is an upload erasure must keep.
    let picture = chronicle::avatars::generated("our icon", 300);
    let (status, body) = crate::uploads::post_files(
        &owner,
        "/realm/icon",
        &[("file", "icon.png", "image/png", &picture)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let icon = owner
        .fetch(body["icon_url"].as_str().unwrap())
        .await
        .bytes()
        .await
        .unwrap();
    // The notifier considers each message after it is sent: the state to compare is the one
    // it has settled to (it has weighed the last message kept).
    let started = std::time::Instant::now();
    let before = loop {
        let (_, state) = owner.get("/admin/projections", &[]).await;
        let notices = &state["projections"]["notifications"];
        if notices["considered_through_message_id"].as_u64() >= Some(kept_message) {
            break state;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the notifier did not catch up: {}",
            state["projections"]["notifications"]
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(
        !before.to_string().contains("supersecret"),
        "never served once deleted"
    );
    let stopped = server.stop();
    let dir = stopped.dir.clone();
    // Until erasure the append-only log (and snapshots taken before the deletion) hold it.
    assert!(found_in(&dir, b"supersecret-4711"));

    let out = run(&["erase"], &dir);
    assert!(out.contains("messages_erased: 1\n"), "{out}");
    for needle in [
        &b"supersecret-4711"[..],
        b"supersecret-4712",
        b"draftsecret-5",
        b"schedsecret-6",
        b"snipsecret-7",
    ] {
        assert!(
            !found_in(&dir, needle),
            "{}",
            String::from_utf8_lossy(needle)
        );
    }
    assert!(found_in(&dir, b"keepme-123"), "what was kept stays");
    let verified = run(&["verify"], &dir);
    assert!(verified.contains("chain: intact"), "{verified}");
    let log = run(&["log", "--type", "LogErased", "--json"], &dir);
    let note: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(note["payload"]["message_ids"], json!([secret]));
    assert_eq!(
        note["payload"]["records"].as_array().unwrap().len(),
        5,
        "sent, edited, the draft, the scheduled message and the snippet"
    );
    // A second run has nothing left to do.
    assert!(run(&["erase"], &dir).contains("messages_erased: 0\n"));

    let server = stopped.restart();
    let owner = server.api(Some(&server.owner()));
    let kept = owner
        .fetch(&format!("{}/avatar/realm", server.url))
        .await
        .bytes()
        .await
        .unwrap();
    assert!(kept == icon, "the uploaded icon survives erasure");
    let (_, after) = owner.get("/admin/projections", &[]).await;
    let without_seq = |v: &serde_json::Value| {
        let mut v = v["projections"].clone();
        v.as_object_mut().unwrap().remove("seq");
        v
    };
    assert_eq!(without_seq(&after), without_seq(&before));
}

//! A disk that fills up, for real: each test mounts a small tmpfs as the server's data
//! directory (the suite runs as root, as CI does), fills it with a ballast file, and frees it.
//! And a disk whose flushes stall: the C library's flush calls held by a library loaded into
//! the server (`stall_sync.c`; this machine's kernel has no device-mapper, so `dm-delay` on a
//! loop device cannot run here).

use crate::support::{Creds, Server};
use reqwest::StatusCode;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmpfs of a given size mounted on a new directory; unmounted when dropped.
struct Tmpfs {
    _parent: tempfile::TempDir,
    path: PathBuf,
}

impl Tmpfs {
    fn mount(mib: u64) -> Tmpfs {
        let parent = tempfile::tempdir().unwrap();
        // The data directory is the mount itself: the server's stderr file, written beside
        // it, stays off the small disk.
        let path = parent.path().join("data");
        std::fs::create_dir(&path).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(&path)
            .status()
            .expect("mount runs");
        assert!(
            mounted.success(),
            "mounting a tmpfs needs root (as CI and this suite run): {mounted}"
        );
        Tmpfs {
            _parent: parent,
            path,
        }
    }

    fn available(&self) -> u64 {
        chronicle::store::space::space_of(&self.path)
            .unwrap()
            .available
    }

    fn ballast(&self) -> PathBuf {
        self.path.join("ballast")
    }

    /// Grows the ballast file until at most `free` bytes are left (0: until the disk is full).
    fn fill_to(&self, free: u64) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.ballast())
            .unwrap();
        let chunk = vec![0x5a_u8; 256 * 1024];
        while self.available() > free {
            let room = (self.available() - free) as usize;
            match file.write_all(&chunk[..room.min(chunk.len())]) {
                Ok(()) => {}
                Err(e) if chronicle::store::space::is_no_space(&e) => break,
                Err(e) => panic!("ballast: {e}"),
            }
        }
        file.sync_all().ok();
    }

    fn free_ballast(&self) {
        std::fs::remove_file(self.ballast()).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

async fn send(
    server: &Server,
    owner: &Creds,
    content: &str,
) -> (StatusCode, Value, Option<String>) {
    let (status, headers, body) = server
        .api(Some(owner))
        .call_raw(
            reqwest::Method::POST,
            "/messages",
            &[
                ("type", "stream"),
                ("to", "disk"),
                ("topic", "disk"),
                ("content", content),
            ],
        )
        .await;
    let retry_after = headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, serde_json::from_str(&body).unwrap(), retry_after)
}

/// Subscribes the owner to a new channel named `disk`.
async fn channel(server: &Server, owner: &Creds) {
    let (status, body) = server
        .api(Some(owner))
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name":"disk"}]"#)],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Sends until a message is accepted (writes resume on their own), within 20 seconds.
async fn send_once_writes_resume(server: &Server, owner: &Creds, content: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body, _) = send(server, owner, content).await;
        if status == StatusCode::OK {
            return body["id"].as_u64().unwrap();
        }
        assert!(Instant::now() < deadline, "writes did not resume: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn ready(server: &Server) -> Value {
    let response = server
        .api(None)
        .fetch(&format!("{}/ready", server.url))
        .await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "reads go on: still ready"
    );
    response.json().await.unwrap()
}

/// The ids of the messages in the `disk` topic, oldest first.
async fn message_ids(server: &Server, owner: &Creds) -> Vec<u64> {
    let (status, body) = server
        .api(Some(owner))
        .get(
            "/messages",
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "5000"),
                ("narrow", r#"[{"operator":"topic","operand":"disk"}]"#),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_u64().unwrap())
        .collect()
}

/// Frees the ballast and sends until writes resume on their own (no restart); then stops the
/// server, starts it again, and returns the id sent and the ids kept after the restart, once
/// `chronicle verify` has passed on the stopped data directory.
async fn free_space_then_restart(disk: &Tmpfs, server: Server, owner: &Creds) -> (u64, Vec<u64>) {
    disk.free_ballast();
    let sent = send_once_writes_resume(&server, owner, "after space returned").await;
    assert_eq!(ready(&server).await["writes"], "open");
    let server = server.stop().restart();
    let kept = message_ids(&server, owner).await;
    verify(&server.stop().dir);
    (sent, kept)
}

fn verify(dir: &Path) {
    let out = Command::new(crate::support::bin())
        .args(["verify", "--data-dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_reserve_writes_are_refused_with_507_reads_go_on_and_writes_resume_by_themselves()
{
    let disk = Tmpfs::mount(96);
    let server = Server::start_in_with(&disk.path, &["--min-free-space-mib", "32"]).unwrap();
    let owner = server.owner();
    channel(&server, &owner).await;
    let first = send_once_writes_resume(&server, &owner, "before the disk filled").await;
    assert_eq!(ready(&server).await["writes"], "open");

    // Leave 20 MiB: below the 32 MiB reserve, far from full.
    disk.fill_to(20 << 20);
    // The watcher reads the disk four times a second: until it has, writes are accepted.
    let mut acknowledged = vec![first];
    let deadline = Instant::now() + Duration::from_secs(10);
    let (body, retry_after) = loop {
        let (status, body, retry_after) = send(&server, &owner, "refused").await;
        if status == StatusCode::INSUFFICIENT_STORAGE {
            break (body, retry_after);
        }
        assert_eq!(status, StatusCode::OK, "{body}");
        acknowledged.push(body["id"].as_u64().unwrap());
        assert!(Instant::now() < deadline, "never refused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(body["result"], "error");
    assert_eq!(body["code"], "STORAGE_FULL");
    assert!(
        body["msg"]
            .as_str()
            .unwrap()
            .contains("32 MiB kept in reserve"),
        "{body}"
    );
    assert_eq!(retry_after.as_deref(), Some("5"));
    let shown = ready(&server).await;
    assert_eq!(shown["writes"], "below_reserve", "{shown}");
    assert_eq!(shown["disk"]["reserve_bytes"], 32 << 20);
    assert_eq!(shown["writes_refused_with"]["code"], "STORAGE_FULL");
    // Reads go on.
    let read: Vec<u64> = message_ids(&server, &owner).await;
    assert_eq!(read, acknowledged);
    let (status, _) = server.api(Some(&owner)).get("/users/me", &[]).await;
    assert_eq!(status, StatusCode::OK);

    // Space returns: writes resume without a restart, and a restart keeps what was
    // acknowledged and nothing refused.
    let (second, kept) = free_space_then_restart(&disk, server, &owner).await;
    acknowledged.push(second);
    assert_eq!(kept, acknowledged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_fills_without_a_reserve_loses_nothing_acknowledged_and_recovers_in_place() {
    let disk = Tmpfs::mount(64);
    let server = Server::start_in_with(&disk.path, &["--min-free-space-mib", "0"]).unwrap();
    let owner = server.owner();
    channel(&server, &owner).await;
    let first = send_once_writes_resume(&server, &owner, "first").await;
    disk.fill_to(0);
    // Write until the log cannot grow: every acknowledged message is remembered.
    let mut acknowledged = Vec::new();
    let text = "A line of text long enough to fill a log page by page. ".repeat(40);
    let refused = loop {
        let (status, body, retry_after) = send(&server, &owner, &text).await;
        if status == StatusCode::OK {
            acknowledged.push(body["id"].as_u64().unwrap());
            assert!(
                acknowledged.len() < 20_000,
                "the full disk never refused a write"
            );
            continue;
        }
        break (status, body, retry_after);
    };
    assert_eq!(refused.0, StatusCode::INSUFFICIENT_STORAGE, "{}", refused.1);
    assert_eq!(refused.1["code"], "STORAGE_FULL");
    assert!(refused.2.is_some(), "Retry-After");
    assert_eq!(ready(&server).await["writes"], "paused");
    // Reads go on, with everything acknowledged.
    let read: Vec<u64> = message_ids(&server, &owner).await;
    for id in &acknowledged {
        assert!(read.contains(id), "acknowledged {id} is readable");
    }
    // Space returns: the log is opened again in place and writes go through.
    let (after, kept) = free_space_then_restart(&disk, server, &owner).await;
    for id in acknowledged.iter().chain([&first, &after]) {
        assert!(kept.contains(id), "acknowledged {id} survived the restart");
    }
    assert_eq!(kept.len(), acknowledged.len() + 2, "and nothing refused");
}

/// `stall_sync.c` built for this run (with the C compiler Rust links with): loaded into a
/// server with `LD_PRELOAD`, it holds the server's flushes while a file exists.
fn stall_library(dir: &Path) -> PathBuf {
    let library = dir.join("stall_sync.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
        .arg(&library)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/stall_sync.c"))
        .arg("-ldl")
        .status()
        .expect("cc runs");
    assert!(built.success(), "building stall_sync.c: {built}");
    library
}

/// Waits until `path` exists, within 20 seconds.
async fn until_exists(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until the notifier has recorded how far it has looked (`NoticesRecorded`): it does so
/// at the first message, then at most once a minute while no notice is due, so that for that
/// minute the server appends nothing unasked.
async fn notifier_recorded(server: &Server, owner: &Creds) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = server.api(Some(owner)).get("/admin/projections", &[]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let through = &body["projections"]["notifications"]["considered_through_message_id"];
        if through.as_u64().is_some_and(|id| id > 0) {
            return;
        }
        assert!(Instant::now() < deadline, "the notifier never recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The real server on a disk whose flushes stall (the C library's `fsync`, `fdatasync` and
/// `sync_file_range` held): the write being flushed waits as long as the disk does, the next
/// one waits its ten seconds and is refused with 503 and `Retry-After`, reads go on, and once
/// the disk comes back the held write is acknowledged, writes go through again, and the log
/// verifies with exactly the acknowledged messages in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_disk_holds_the_flushed_write_refuses_the_next_keeps_reads_and_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let library = stall_library(tmp.path());
    let stall = tmp.path().join("stall");
    let held = tmp.path().join("stall.held");
    let server = Server::start_in_with_env(
        &tmp.path().join("data"),
        &[],
        &[
            ("LD_PRELOAD", library.to_str().unwrap()),
            ("CHRONICLE_TEST_STALL", stall.to_str().unwrap()),
        ],
    )
    .unwrap();
    let owner = server.owner();
    channel(&server, &owner).await;
    let before = send_once_writes_resume(&server, &owner, "before the stall").await;
    notifier_recorded(&server, &owner).await;

    std::fs::write(&stall, b"").unwrap();
    let during = async {
        // A flush is held: the first message's (nothing else is written meanwhile).
        until_exists(&held).await;
        let started = Instant::now();
        let (status, body, retry_after) = send(&server, &owner, "refused").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(body["code"], "STORAGE_UNAVAILABLE", "{body}");
        assert!(retry_after.is_some(), "Retry-After");
        assert!(
            started.elapsed() >= Duration::from_secs(9),
            "refused only after waiting its turn: {:?}",
            started.elapsed()
        );
        // Reads go on, without the held message.
        let read = tokio::time::timeout(Duration::from_secs(5), message_ids(&server, &owner))
            .await
            .expect("reads answer while the disk stalls");
        assert_eq!(read, [before]);
        assert_eq!(ready(&server).await["status"], "ready");
        std::fs::remove_file(&stall).unwrap();
    };
    let ((status, body, _), ()) = tokio::join!(send(&server, &owner, "held"), during);
    assert_eq!(status, StatusCode::OK, "acknowledged once durable: {body}");
    let held_id = body["id"].as_u64().unwrap();
    let after = send_once_writes_resume(&server, &owner, "after the stall").await;

    let stopped = server.stop();
    verify(&stopped.dir);
    let server = stopped.restart();
    assert_eq!(message_ids(&server, &owner).await, [before, held_id, after]);
}

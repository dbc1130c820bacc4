//! Running it in production (issue 33): the configuration file, and `/health` and `/ready`.

use crate::support::{run_ok, Server};
use reqwest::StatusCode;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_configuration_file_configures_the_server_and_a_bad_one_stops_it() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("chronicle.toml");
    std::fs::write(
        &file,
        "realm_name = \"Configured by file\"\n[limits]\nrequests_per_ip = 2\n",
    )
    .unwrap();
    let file_arg = file.display().to_string();
    let server = Server::start_with(&["--config", &file_arg]);
    let anonymous = server.api(None);
    let (status, body) = anonymous.get("/server_settings", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["realm_name"], "Configured by file");
    let (status, _) = anonymous.get("/server_settings", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = anonymous.get("/server_settings", &[]).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    // A flag wins over the file.
    drop(server);
    let server = Server::start_with(&["--config", &file_arg, "--rate-limit-ip", "0"]);
    for _ in 0..5 {
        let (status, _) = server.api(None).get("/server_settings", &[]).await;
        assert_eq!(status, StatusCode::OK);
    }

    // A misspelt key stops the start, naming the file, the line and the key.
    std::fs::write(&file, "realm_name = \"x\"\n[limits]\nrequest_per_ip = 2\n").unwrap();
    let refused = Server::start_in_with(&tmp.path().join("other"), &["--config", &file_arg])
        .err()
        .expect("a bad configuration file stops the start");
    assert!(refused.contains("line 3"), "{refused}");
    assert!(refused.contains("request_per_ip"), "{refused}");
    assert!(refused.contains("chronicle.toml"), "{refused}");

    // `config check` prints the configuration in force and where each value came from.
    std::fs::write(&file, "[uploads]\nmax_file_mib = 7\n").unwrap();
    let out = Command::new(crate::support::bin())
        .args([
            "config",
            "check",
            "--config",
            &file_arg,
            "--bind",
            "127.0.0.1:1234",
        ])
        .env("CHRONICLE_REALM_NAME", "From the environment")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("bind = \"127.0.0.1:1234\"  # flag"), "{text}");
    assert!(
        text.contains("realm_name = \"From the environment\"  # environment CHRONICLE_REALM_NAME"),
        "{text}"
    );
    assert!(
        text.contains(&format!("max_file_mib = 7  # file {file_arg}")),
        "{text}"
    );
    assert!(
        text.contains("requests_per_user = 200  # default"),
        "{text}"
    );
}

#[tokio::test]
async fn the_address_says_alive_but_not_ready_while_a_large_log_is_read() {
    // A log of 200,000 messages and no snapshot: the start folds all of it.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    chronicle::bench::seed::seed_in(
        &dir,
        &chronicle::bench::seed::SeedSpec {
            users: 20,
            channels: 4,
            subscribers_per_channel: 10,
            messages: 200_000,
        },
    )
    .unwrap();
    let mut child = Command::new(crate::support::bin())
        .args(["serve", "--data-dir"])
        .arg(&dir)
        .args(["--bind", "127.0.0.1:0", "--snapshot-every", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let starting = loop {
        let line = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        if let Some(rest) = line.strip_prefix("Chronicle starting on ") {
            break rest.split(':').take(2).collect::<Vec<_>>().join(":");
        }
    };
    let base = format!("http://{starting}");
    let get = |path: &str| {
        let url = format!("{base}{path}");
        async move {
            let resp = reqwest::get(&url).await.unwrap();
            let status = resp.status();
            (status, resp.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (status, body) = get("/ready").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "starting");
    let (status, body) = get("/health").await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("alive"))
    );
    let (status, body) = get("/api/v1/server_settings").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["result"], "error");
    // Then ready, on the same address, with every event folded.
    let deadline = Instant::now() + Duration::from_secs(300);
    let body = loop {
        let (status, body) = get("/ready").await;
        if status == StatusCode::OK {
            break body;
        }
        assert!(Instant::now() < deadline, "never ready: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(body["status"], "ready");
    assert!(body["seq"].as_u64().unwrap() > 200_000, "{body}");
    let (status, _) = get("/api/v1/server_settings").await;
    assert_eq!(status, StatusCode::OK);
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn metrics_on_the_main_address_need_the_configured_token() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("chronicle.toml");
    std::fs::write(&file, "[metrics]\ntoken = \"a-long-metrics-token\"\n").unwrap();
    let server = Server::start_with(&["--config", &file.display().to_string()]);
    let (status, _) = server.api(None).get("/server_settings", &[]).await;
    assert_eq!(status, StatusCode::OK);
    // A route with a part in its pattern, a method it does not take, no route at all.
    let owner = server.api(Some(&server.owner()));
    assert_eq!(owner.get("/users/1", &[]).await.0, StatusCode::OK);
    let (status, _) = owner.call(reqwest::Method::PUT, "/users/1", &[]).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        owner.get("/no/such/route", &[]).await.0,
        StatusCode::NOT_FOUND
    );
    let url = format!("{}/metrics", server.url);
    let client = reqwest::Client::new();
    let refused = client.get(&url).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let wrong = client
        .get(&url)
        .bearer_auth("a-long-metrics-tokem")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let scraped = client
        .get(&url)
        .bearer_auth("a-long-metrics-token")
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), StatusCode::OK);
    let text = scraped.text().await.unwrap();
    assert!(
        text.contains(
            "chronicle_http_requests_total{method=\"GET\",route=\"/api/v1/server_settings\",status=\"200\"} 1"
        ),
        "{text}"
    );
    for series in [
        "chronicle_http_requests_total{method=\"GET\",route=\"/api/v1/users/{user_id}\",status=\"200\"} 1",
        "chronicle_http_requests_total{method=\"PUT\",route=\"/api/v1/users/{user_id}\",status=\"405\"} 1",
        "chronicle_http_requests_total{method=\"GET\",route=\"unmatched\",status=\"404\"} 1",
    ] {
        assert!(text.contains(series), "{series} in {text}");
    }
    assert!(text.contains("chronicle_people 1"), "{text}");
    // The token is a secret: not in the server's log.
    assert!(!server.stderr().contains("a-long-metrics-token"));
    // Without a token configured, there is no /metrics on the main address.
    let plain = Server::start();
    let absent = reqwest::get(format!("{}/metrics", plain.url))
        .await
        .unwrap();
    assert_eq!(absent.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_server_tells_systemd_when_it_serves_and_when_it_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let socket_path = tmp.path().join("notify.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let notify = socket_path.display().to_string();
    let server =
        Server::start_in_with_env(&tmp.path().join("data"), &[], &[("NOTIFY_SOCKET", &notify)])
            .unwrap();
    let mut buf = [0u8; 256];
    let n = socket.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"READY=1\nSTATUS=Serving");
    // Ready means serving: the API answers at once.
    let (status, _) = server.api(None).get("/server_settings", &[]).await;
    assert_eq!(status, StatusCode::OK);
    server.stop();
    let n = socket.recv(&mut buf).unwrap();
    assert!(
        buf[..n].starts_with(b"STOPPING=1"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
}

#[test]
fn the_systemd_unit_verifies() {
    let Ok(analyze) = which("systemd-analyze") else {
        eprintln!("systemd-analyze is not installed here: the unit was not verified");
        return;
    };
    let unit = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/systemd/chronicle.service"),
    )
    .unwrap();
    for needed in [
        "Type=notify",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/chronicle",
        "User=chronicle",
    ] {
        assert!(unit.contains(needed), "the unit lacks {needed}");
    }
    // Verified as installed, with this build in the binary's place.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("chronicle.service");
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/chronicle", crate::support::bin()),
    )
    .unwrap();
    let out = Command::new(analyze)
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "systemd-analyze verify: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}

#[tokio::test]
async fn json_log_lines_carry_the_request_id_the_answer_names() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start_in_with_env(
        &tmp.path().join("data"),
        &["--log-format", "json"],
        &[("RUST_LOG", "info,chronicle::access=debug")],
    )
    .unwrap();
    let owner = server.owner();
    let client = reqwest::Client::new();
    let answer = client
        .get(format!("{}/api/v1/users/me", server.url))
        .basic_auth(&owner.email, Some(&owner.key))
        .header("X-Request-Id", "probe-42.a_b")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.headers()["x-request-id"], "probe-42.a_b");
    // An id that is not sane is replaced by one of the server's.
    let answer = client
        .get(format!("{}/api/v1/server_settings", server.url))
        .header("X-Request-Id", "two words; \"quoted\"")
        .send()
        .await
        .unwrap();
    let given = answer.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(given.len(), 16, "{given}");
    assert!(given.bytes().all(|b| b.is_ascii_hexdigit()), "{given}");
    // Each access line is written before its answer leaves.
    let log = server.stderr();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let access: Vec<&Value> = lines
        .iter()
        .filter(|l| l["target"] == "chronicle::access")
        .collect();
    assert!(
        access
            .iter()
            .any(|l| l["span"]["request_id"] == "probe-42.a_b"
                && l["fields"]["path"] == "/api/v1/users/me"
                && l["fields"]["status"] == 200),
        "{log}"
    );
    assert!(
        access
            .iter()
            .any(|l| l["span"]["request_id"] == given.as_str()),
        "{log}"
    );
    assert!(!log.contains(&owner.key), "an API key in the log");
}

#[tokio::test]
async fn a_backup_taken_under_load_holds_every_message_acknowledged_before_it() {
    // The writers share the owner's account: no per-user limit, or the backup would be refused.
    let server = Server::start_with(&["--rate-limit-user", "0"]);
    let owner = server.api(Some(&server.owner()));
    let (status, body) = owner
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name": "load"}]"#)],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Four writers send until told to stop, keeping the ids acknowledged.
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (api, acked, stop) = (
            server.api(Some(&server.owner())),
            acked.clone(),
            stop.clone(),
        );
        writers.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                n += 1;
                let content = format!("writer {w} message {n}");
                let (status, body) = api
                    .post(
                        "/messages",
                        &[
                            ("type", "stream"),
                            ("to", "load"),
                            ("topic", "t"),
                            ("content", &content),
                        ],
                    )
                    .await;
                if status == StatusCode::OK {
                    acked.lock().unwrap().push(body["id"].as_u64().unwrap());
                }
            }
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() < 40 {
        assert!(Instant::now() < deadline, "the writers made no progress");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before: Vec<u64> = acked.lock().unwrap().clone();
    // The server holds the log: the command asks it, through its API, and moves the backup.
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("nightly");
    let (data, to) = (server.dir.clone(), dest.clone());
    tokio::task::spawn_blocking(move || {
        run_ok([
            "backup".as_ref(),
            "--data-dir".as_ref(),
            data.as_os_str(),
            "--to".as_ref(),
            to.as_os_str(),
        ])
    })
    .await
    .unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for writer in writers {
        writer.await.unwrap();
    }
    let after = acked.lock().unwrap().len();
    assert!(
        after > before.len(),
        "the writers stopped while the backup was taken"
    );

    // The offline tools work on the backup while the server runs.
    run_ok(["verify".as_ref(), "--data-dir".as_ref(), dest.as_os_str()]);
    run_ok([
        "dump".as_ref(),
        "--only".as_ref(),
        "users".as_ref(),
        "--data-dir".as_ref(),
        dest.as_os_str(),
    ]);

    // With the server stopped, the command takes the backup itself.
    let stopped = server.stop();
    let offline = tmp.path().join("offline");
    run_ok([
        "backup".as_ref(),
        "--data-dir".as_ref(),
        stopped.dir.as_os_str(),
        "--to".as_ref(),
        offline.as_os_str(),
    ]);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(offline.join("BACKUP.json")).unwrap())
            .unwrap();
    assert!(
        manifest["records"].as_u64().unwrap() as usize > after,
        "{manifest}"
    );

    // Restoring is serving it: every message acknowledged before the backup began is there.
    let restored = Server::start_in(&dest).unwrap();
    let (_, body) = restored
        .api(Some(&restored.owner()))
        .get(
            "/messages",
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "5000"),
                ("narrow", r#"[{"operator": "channel", "operand": "load"}]"#),
            ],
        )
        .await;
    let kept: std::collections::BTreeSet<u64> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_u64().unwrap())
        .collect();
    let missing: Vec<&u64> = before.iter().filter(|id| !kept.contains(id)).collect();
    assert!(
        missing.is_empty(),
        "acknowledged before the backup, missing from it: {missing:?}"
    );
}

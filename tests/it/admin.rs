//! The inspection surface: admin endpoints and the offline `dump`/`replay` commands agree.

use crate::support::{bin, Server};
use reqwest::StatusCode;
use serde_json::json;
use std::process::Command;

#[tokio::test]
async fn admin_endpoints_are_for_administrators_only() {
    let server = Server::start();
    let (_, member) = server.create_member("gina@example.com", "Gina").await;
    let as_member = server.api(Some(&member));
    for path in ["/admin/projections", "/admin/events"] {
        let (status, body) = as_member.get(path, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            body,
            json!({"result":"error","msg":"Must be an organization administrator","code":"UNAUTHORIZED_PRINCIPAL"})
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
    assert_eq!(event["schema_version"], 1);
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

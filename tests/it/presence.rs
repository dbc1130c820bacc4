//! Presence: reports, the three read endpoints in both formats, `presence` events (legacy and
//! simplified), the update-id protocol, and what a restart keeps.

use crate::realtime::{drain, kinds, register};
use crate::support::Api;
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn report(api: &Api, params: &[(&str, &str)]) -> Value {
    let (status, body) = api.post("/users/me/presence", params).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn placeholder(id: u64) -> String {
    format!("user{id}@chronicle.invalid")
}

#[tokio::test]
async fn presence_reports_reads_and_events() {
    let chat = crate::messages::chat().await;
    let (alice_id, alice) = &chat.alice;
    let (bob_id, bob) = &chat.bob;
    let (carol_id, carol) = &chat.carol;
    let events = [("event_types", r#"["presence"]"#)];
    let (bob_queue, _) = register(bob, &events).await;
    let (carol_queue, _) = register(
        carol,
        &[
            events[0],
            (
                "client_capabilities",
                r#"{"simplified_presence_events": true}"#,
            ),
        ],
    )
    .await;

    // Coming online: the answer is everyone's presence in the legacy format (by email).
    let body = report(alice, &[("status", "active"), ("new_user_input", "true")]).await;
    // Alice sees her own real address.
    let alice_entry = &body["presences"]["alice@example.com"];
    let t = alice_entry["website"]["timestamp"].as_i64().unwrap();
    assert_eq!(
        *alice_entry,
        json!({
            "website": {"client": "website", "status": "active", "timestamp": t, "pushable": false},
            "aggregated": {"client": "website", "status": "active", "timestamp": t},
        })
    );
    assert_eq!(body["presences"].as_object().unwrap().len(), 1, "{body}");
    assert!(body["server_timestamp"].as_f64().unwrap() >= t as f64);
    let update_id = body["presence_last_update_id"].as_i64().unwrap();
    assert!(update_id > 0);

    // Everyone hears that Alice came online, in the form their client asked for.
    let mut heard = drain(bob, &bob_queue).await;
    assert_eq!(heard.len(), 1, "{heard:?}");
    let at = heard[0]
        .as_object_mut()
        .unwrap()
        .remove("server_timestamp")
        .unwrap();
    assert_eq!(at.as_f64().unwrap().floor() as i64, t);
    assert_eq!(
        heard[0],
        json!({
            "type": "presence", "user_id": alice_id, "email": placeholder(*alice_id),
            "presence": {"website": {"client": "website", "status": "active", "timestamp": t, "pushable": false}},
            "id": 0,
        })
    );
    assert_eq!(
        drain(carol, &carol_queue).await,
        vec![json!({
            "type": "presence",
            "presences": {alice_id.to_string(): {"active_timestamp": t, "idle_timestamp": t}},
            "id": 0,
        })]
    );

    // A ping right after changes nothing: no event, no new update id; `ping_only` answers
    // nothing else; `last_update_id` gets only what is newer (modern format).
    let body = report(alice, &[("status", "active"), ("ping_only", "true")]).await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    let body = report(
        alice,
        &[
            ("status", "idle"),
            ("last_update_id", &update_id.to_string()),
        ],
    )
    .await;
    assert_eq!(body["presences"], json!({}));
    assert_eq!(body["presence_last_update_id"], update_id);
    assert!(drain(bob, &bob_queue).await.is_empty());

    // Bob comes online idle; a full modern fetch has both, keyed by id.
    let body = report(bob, &[("status", "idle"), ("last_update_id", "-1")]).await;
    let presences = body["presences"].as_object().unwrap();
    assert_eq!(presences.len(), 2, "{body}");
    assert_eq!(
        presences[&alice_id.to_string()],
        json!({"active_timestamp": t, "idle_timestamp": t})
    );
    assert!(body["presence_last_update_id"].as_i64().unwrap() > update_id);
    // Never active: the join time stands for it, as in Zulip. An idle report announces no one.
    let bob_status = &presences[&bob_id.to_string()];
    let joined = bob.get("/users/me", &[]).await.1["date_joined"].clone();
    let joined_ms = chronicle::time::parse_rfc3339_ms(joined.as_str().unwrap()).unwrap();
    assert_eq!(bob_status["active_timestamp"], joined_ms / 1000);
    assert!(drain(carol, &carol_queue).await.is_empty());
    report(bob, &[("status", "active")]).await;
    assert_eq!(kinds(&drain(carol, &carol_queue).await), ["presence:"]);

    // The read endpoints.
    let (status, realm) = carol.get("/realm/presence", &[]).await;
    assert_eq!(status, StatusCode::OK, "{realm}");
    assert_eq!(
        realm["presences"][placeholder(*bob_id)]["aggregated"]["status"],
        "active"
    );
    assert!(realm["server_timestamp"].is_f64());
    let (status, one) = carol.get(&format!("/users/{alice_id}/presence"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(
        one["presence"],
        json!({"website": {"status": "active", "timestamp": t}, "aggregated": {"status": "active", "timestamp": t}})
    );
    let (_, by_email) = carol
        .get(&format!("/users/{}/presence", placeholder(*alice_id)), &[])
        .await;
    assert_eq!(by_email["presence"], one["presence"]);
    let (_, bot) = alice
        .post(
            "/bots",
            &[
                ("full_name", "Helper"),
                ("short_name", "helper"),
                ("bot_type", "1"),
            ],
        )
        .await;
    let bot_id = bot["user_id"].as_u64().unwrap();
    for (path, msg) in [
        (
            format!("/users/{carol_id}/presence"),
            format!("No presence data for {carol_id}"),
        ),
        (
            format!("/users/{bot_id}/presence"),
            "Presence is not supported for bot users.".into(),
        ),
        ("/users/999/presence".into(), "No such user".into()),
    ] {
        let (status, body) = alice.get(&path, &[]).await;
        assert_eq!(
            (status.as_u16(), body["msg"].as_str().unwrap()),
            (400, msg.as_str())
        );
    }
    for (params, msg) in [
        (vec![("status", "away")], "Invalid status: away"),
        (vec![], "Missing 'status' argument"),
    ] {
        let (status, body) = alice.post("/users/me/presence", &params).await;
        assert_eq!((status.as_u16(), body["msg"].as_str().unwrap()), (400, msg));
    }

    // `/register` in both formats; all of it comes back after a restart.
    let server = chat.server.stop().restart();
    let carol = server.api(carol.creds.as_ref());
    let (_, legacy) = register(&carol, &[("fetch_event_types", r#"["presence"]"#)]).await;
    assert_eq!(
        legacy["presences"][placeholder(*alice_id)]["aggregated"],
        json!({"client": "website", "status": "active", "timestamp": t})
    );
    let (_, slim) = register(
        &carol,
        &[
            ("fetch_event_types", r#"["presence"]"#),
            ("slim_presence", "true"),
        ],
    )
    .await;
    assert_eq!(
        slim["presences"][alice_id.to_string()],
        json!({"active_timestamp": t, "idle_timestamp": t})
    );
    assert!(slim["presence_last_update_id"].as_i64().unwrap() > update_id);
}

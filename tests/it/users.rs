//! Users and bots: `GET /users`, `GET /users/{user_id|email}`, `POST /bots`, `GET /bots`.

use crate::support::{Server, OWNER};
use reqwest::StatusCode;
use serde_json::{json, Value};

fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

#[tokio::test]
async fn user_lists_and_lookups() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let (bob_id, _) = server.create_member("bob@example.com", "Bob").await;
    assert_eq!(
        owner.delete(&format!("/users/{bob_id}"), &[]).await.0,
        StatusCode::OK
    );
    let as_alice = server.api(Some(&alice));

    // Everyone is listed, deactivated accounts too; profile data only on request.
    let (status, body) = owner.get("/users", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let members = body["members"].as_array().unwrap();
    let ids: Vec<u64> = members
        .iter()
        .map(|m| m["user_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, vec![1, alice_id, bob_id]);
    assert_eq!(
        keys(&members[1]),
        vec![
            "user_id",
            "delivery_email",
            "email",
            "full_name",
            "date_joined",
            "is_active",
            "is_owner",
            "is_admin",
            "is_guest",
            "is_bot",
            "bot_type",
            "role",
            "timezone",
            "avatar_url",
            "avatar_version",
            "is_imported_stub",
        ]
    );
    assert_eq!(members[2]["is_active"], false);
    assert_eq!(members[1]["role"], 400);
    assert_eq!(members[1]["bot_type"], Value::Null);
    let (_, body) = owner
        .get("/users", &[("include_custom_profile_fields", "true")])
        .await;
    assert_eq!(body["members"][1]["profile_data"], json!({}));

    // A member sees the others' placeholder addresses, an administrator the real ones.
    assert_eq!(members[1]["delivery_email"], "alice@example.com");
    let (_, body) = as_alice.get("/users", &[]).await;
    let owner_seen = &body["members"][0];
    assert_eq!(owner_seen["delivery_email"], Value::Null);
    let placeholder = owner_seen["email"].as_str().unwrap().to_owned();
    assert!(placeholder.starts_with("user1@"), "{placeholder}");
    assert_eq!(body["members"][1]["delivery_email"], "alice@example.com");

    // user_ids narrows the list; an unknown id is refused.
    let (_, body) = as_alice
        .get("/users", &[("user_ids", &format!("[{alice_id}]"))])
        .await;
    assert_eq!(body["members"].as_array().unwrap().len(), 1);
    assert_eq!(body["members"][0]["full_name"], "Alice");
    let (status, body) = as_alice.get("/users", &[("user_ids", "[1, 999]")]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result":"error","msg":"Invalid user ID: 999","code":"BAD_REQUEST"})
        )
    );
    let (status, body) = as_alice.get("/users", &[("user_ids", "1")]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "REQUEST_VARIABLE_INVALID");

    // One user by id, by visible email, or by placeholder; a hidden email is not found.
    let (status, body) = as_alice.get("/users/1", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys(&body), vec!["result", "msg", "user"]);
    assert_eq!(body["user"]["full_name"], "Owner");
    assert_eq!(body["user"]["is_owner"], true);
    let (_, body) = as_alice.get(&format!("/users/{placeholder}"), &[]).await;
    assert_eq!(body["user"]["user_id"], 1);
    let no_such_user = json!({"result":"error","msg":"No such user","code":"BAD_REQUEST"});
    let (status, body) = as_alice.get(&format!("/users/{OWNER}"), &[]).await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, no_such_user.clone())
    );
    let (_, body) = owner.get("/users/ALICE@example.com", &[]).await;
    assert_eq!(body["user"]["user_id"], alice_id);
    assert_eq!(owner.get("/users/999", &[]).await.1, no_such_user);
    assert_eq!(
        owner.get("/users/nobody@example.com", &[]).await.1,
        no_such_user
    );

    // Credentials are required.
    assert_eq!(
        server.api(None).get("/users", &[]).await.0,
        StatusCode::UNAUTHORIZED
    );
}

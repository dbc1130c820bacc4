//! Shapes and errors of the foundation endpoints, pinned exactly.

use crate::support::{Creds, Server, OWNER};
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn server_settings_needs_no_auth_and_has_what_clients_read() {
    let server = Server::start();
    let (status, body) = server.api(None).get("/server_settings", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["result"], "success");
    assert_eq!(body["msg"], "");
    assert_eq!(body["zulip_feature_level"], 478);
    assert!(body["zulip_version"]
        .as_str()
        .unwrap()
        .contains("chronicle"));
    assert_eq!(body["zulip_merge_base"], "12.0-dev");
    assert_eq!(body["realm_url"], server.url.as_str());
    assert_eq!(body["realm_uri"], server.url.as_str());
    assert_eq!(body["realm_name"], "Chronicle");
    assert_eq!(body["realm_description"], "");
    assert_eq!(body["authentication_methods"]["password"], true);
    assert_eq!(body["email_auth_enabled"], true);
    assert_eq!(body["require_email_format_usernames"], true);
    assert_eq!(body["push_notifications_enabled"], false);
    assert_eq!(body["is_incompatible"], false);
    assert!(body.get("ignored_parameters_unsupported").is_none());
}

#[tokio::test]
async fn credentials_errors_are_zulip_shaped() {
    let server = Server::start();
    let anon = server.api(None);
    let expect_401 = |headers: &reqwest::header::HeaderMap| {
        assert_eq!(
            headers.get("www-authenticate").unwrap(),
            "Basic realm=\"zulip\""
        );
    };

    // No Authorization header.
    let (status, headers, body) = anon.call_raw(Method::GET, "/users/me", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    expect_401(&headers);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        json!({"result":"error","msg":"Not logged in: API authentication or user session required","code":"UNAUTHORIZED"})
    );

    // Not Basic.
    let resp = anon
        .client
        .get(format!("{}/users/me", anon.base))
        .header("Authorization", "Bearer abc")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        resp.json::<serde_json::Value>().await.unwrap(),
        json!({"result":"error","msg":"This endpoint requires HTTP basic authentication.","code":"BAD_REQUEST"})
    );

    // Undecodable Basic value.
    let resp = anon
        .client
        .get(format!("{}/users/me", anon.base))
        .header("Authorization", "Basic !!!not-base64")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    expect_401(resp.headers());
    assert_eq!(
        resp.json::<serde_json::Value>().await.unwrap(),
        json!({"result":"error","msg":"Invalid authorization header for basic auth","code":"UNAUTHORIZED"})
    );

    // Malformed key, wrong key, wrong email.
    let cases = [
        (OWNER, "short".to_owned(), "Malformed API key"),
        (OWNER, "X".repeat(32), "Invalid API key"),
        (
            "nobody@example.com",
            server.owner_key.clone(),
            "Invalid API key",
        ),
    ];
    for (email, key, msg) in cases {
        let api = server.api(Some(&Creds {
            email: email.into(),
            key,
        }));
        let (status, headers, body) = api.call_raw(Method::GET, "/users/me", &[]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{msg}");
        expect_401(&headers);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&body).unwrap(),
            json!({"result":"error","msg":msg,"code":"UNAUTHORIZED"})
        );
    }

    // The email is matched case-insensitively, as in Zulip.
    let api = server.api(Some(&Creds {
        email: OWNER.to_uppercase(),
        key: server.owner_key.clone(),
    }));
    assert_eq!(api.get("/users/me", &[]).await.0, StatusCode::OK);
}

#[tokio::test]
async fn own_user_shape() {
    let server = Server::start();
    let (status, body) = server
        .api(Some(&server.owner()))
        .get("/users/me", &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        vec![
            "result",
            "msg",
            "avatar_url",
            "avatar_version",
            "email",
            "delivery_email",
            "full_name",
            "is_admin",
            "is_owner",
            "is_guest",
            "role",
            "is_bot",
            "is_active",
            "timezone",
            "date_joined",
            "max_message_id",
            "user_id",
            "profile_data"
        ]
    );
    assert_eq!(body["user_id"], 1);
    assert_eq!(body["role"], 100);
    assert_eq!(body["is_owner"], true);
    assert_eq!(body["is_admin"], true);
    assert_eq!(body["email"], OWNER);
    let joined = body["date_joined"].as_str().unwrap();
    assert!(joined.ends_with("+00:00") && joined.len() == 32, "{joined}");
}

#[tokio::test]
async fn routing_errors_are_json() {
    let server = Server::start();
    let anon = server.api(None);
    let (status, headers, body) = anon.call_raw(Method::POST, "/server_settings", &[]).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(headers.get("allow").unwrap(), "GET");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        json!({"result":"error","msg":"Method Not Allowed","allowed_methods":["GET"]})
    );
    let (status, body) = anon.get("/no/such/endpoint", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body,
        json!({"result":"error","msg":"Not Found","code":"BAD_REQUEST"})
    );
    // Outside /api/v1 too.
    let resp = anon
        .client
        .get(format!("{}/elsewhere", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        resp.json::<serde_json::Value>().await.unwrap()["code"],
        "BAD_REQUEST"
    );
}

#[tokio::test]
async fn parameters_missing_invalid_and_ignored() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (status, body) = owner
        .post(
            "/users",
            &[("email", "a@example.com"), ("password", "password1")],
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"result":"error","msg":"Missing 'full_name' argument","code":"REQUEST_VARIABLE_MISSING","var_name":"full_name"})
    );
    let (status, body) = owner.get("/admin/events", &[("after_seq", "soon")]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "BAD_REQUEST");
    assert_eq!(body["var_name"], "after_seq");
    let (status, body) = owner
        .get("/users/me", &[("frobnicate", "1"), ("also", "x")])
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["ignored_parameters_unsupported"],
        json!(["also", "frobnicate"])
    );
    // Parameters in the query string of a POST count too; the form body wins on conflict.
    let (status, body) = owner
        .post(
            "/users?email=b%40example.com&full_name=Query",
            &[("password", "password1"), ("full_name", "Body")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = owner.get("/admin/projections", &[]).await;
    let users = body["projections"]["users"].as_array().unwrap();
    assert_eq!(users.last().unwrap()["full_name"], "Body");
    // A path id that is not a number.
    let (status, body) = owner.delete("/users/abc", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "REQUEST_VARIABLE_INVALID");
    // Malformed bodies never crash anything.
    let resp = owner
        .client
        .post(format!("{}/users", owner.base))
        .basic_auth(OWNER, Some(&server.owner_key))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(vec![0xff, 0xfe, b'%', b'z'])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        resp.json::<serde_json::Value>().await.unwrap()["result"],
        "error"
    );
}

#[tokio::test]
async fn fetch_api_key_and_regenerate() {
    let server = Server::start();
    let anon = server.api(None);
    let password = std::fs::read_to_string(server.dir.join("initial-password")).unwrap();
    let (status, body) = anon
        .post(
            "/fetch_api_key",
            &[("username", OWNER), ("password", password.trim())],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"result":"success","msg":"","api_key":server.owner_key,"email":OWNER,"user_id":1})
    );
    for (username, pw) in [(OWNER, "wrong-password"), ("ghost@example.com", "whatever")] {
        let (status, body) = anon
            .post(
                "/fetch_api_key",
                &[("username", username), ("password", pw)],
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            body,
            json!({"result":"error","msg":"Your username or password is incorrect","code":"AUTHENTICATION_FAILED"})
        );
    }
    let (status, body) = anon.post("/fetch_api_key", &[("username", OWNER)]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["var_name"], "password");

    // Regenerating: the old key dies at once, the new one works, fetch_api_key returns it.
    let old = server.owner();
    let (status, body) = server
        .api(Some(&old))
        .post("/users/me/api_key/regenerate", &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let new_key = body["api_key"].as_str().unwrap().to_owned();
    assert_eq!(new_key.len(), 32);
    assert_ne!(new_key, old.key);
    let (status, body) = server.api(Some(&old)).get("/users/me", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["msg"], "Invalid API key");
    let new = Creds {
        email: OWNER.into(),
        key: new_key.clone(),
    };
    assert_eq!(
        server.api(Some(&new)).get("/users/me", &[]).await.0,
        StatusCode::OK
    );
    let (_, body) = anon
        .post(
            "/fetch_api_key",
            &[("username", OWNER), ("password", password.trim())],
        )
        .await;
    assert_eq!(body["api_key"], new_key.as_str());
}

#[tokio::test]
async fn user_lifecycle_and_permissions() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    assert_eq!(alice_id, 2);
    let as_alice = server.api(Some(&alice));

    // Duplicate (case-insensitive) and invalid input.
    let (status, body) = owner
        .post(
            "/users",
            &[
                ("email", "ALICE@example.com"),
                ("password", "password1"),
                ("full_name", "A2"),
            ],
        )
        .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result":"error","msg":"Email is already in use.","code":"BAD_REQUEST"})
        )
    );
    let (_, body) = owner
        .post(
            "/users",
            &[
                ("email", "not-an-email"),
                ("password", "password1"),
                ("full_name", "X"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Invalid email 'not-an-email'");
    let (_, body) = owner
        .post(
            "/users",
            &[
                ("email", "x@example.com"),
                ("password", "123"),
                ("full_name", "X"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "The password is too weak.");
    let (_, body) = owner
        .post(
            "/users",
            &[
                ("email", "x@example.com"),
                ("password", "password1"),
                ("full_name", "  "),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Name too short!");

    // Members may not use administrator endpoints.
    let must_be_admin = json!({"result":"error","msg":"Must be an organization administrator","code":"UNAUTHORIZED_PRINCIPAL"});
    let (status, body) = as_alice
        .post(
            "/users",
            &[
                ("email", "y@example.com"),
                ("password", "password1"),
                ("full_name", "Y"),
            ],
        )
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, must_be_admin.clone())
    );
    assert_eq!(as_alice.delete("/users/1", &[]).await.1, must_be_admin);

    // The only owner cannot be deactivated; unknown users are reported.
    let (_, body) = owner.delete("/users/1", &[]).await;
    assert_eq!(
        body,
        json!({"result":"error","msg":"Cannot deactivate the only organization owner","code":"BAD_REQUEST"})
    );
    assert_eq!(
        owner.delete("/users/999", &[]).await.1["msg"],
        "No such user"
    );

    // Deactivation: the key stops working, the password no longer yields a key.
    let (status, body) = owner.delete(&format!("/users/{alice_id}"), &[]).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"result":"success","msg":""}))
    );
    let (status, body) = as_alice.get("/users/me", &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::UNAUTHORIZED,
            json!({"result":"error","msg":"Account is deactivated","code":"UNAUTHORIZED"})
        )
    );
    let (status, body) = server
        .api(None)
        .post(
            "/fetch_api_key",
            &[
                ("username", "alice@example.com"),
                ("password", "password123"),
            ],
        )
        .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::UNAUTHORIZED,
            json!({"result":"error","msg":"Account is deactivated","code":"USER_DEACTIVATED"})
        )
    );
    assert_eq!(
        owner.delete(&format!("/users/{alice_id}"), &[]).await.1["msg"],
        "User is deactivated"
    );

    // Reactivation restores access with the same key.
    let (status, _) = owner
        .post(&format!("/users/{alice_id}/reactivate"), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(as_alice.get("/users/me", &[]).await.0, StatusCode::OK);
    assert_eq!(
        owner
            .post(&format!("/users/{alice_id}/reactivate"), &[])
            .await
            .1["msg"],
        "User is already active"
    );
}

/// Rate limits as Zulip's (per user, per address without credentials, failed logins per
/// username), here with small numbers: 429 `RATE_LIMIT_HIT` with `retry-after` and
/// `Retry-After`, and the `X-RateLimit-*` headers on counted responses.
#[tokio::test]
async fn rate_limits_answer_like_zulip() {
    let server = crate::support::Server::start_with(&[
        "--rate-limit-user",
        "5",
        "--rate-limit-ip",
        "3",
        "--rate-limit-logins",
        "2",
    ]);
    let (_, bob) = server.create_member("bob@example.com", "Bob").await;
    let bob = server.api(Some(&bob));
    for remaining in (0..5).rev() {
        let (status, headers, _) = bob.call_raw(reqwest::Method::GET, "/users/me", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["x-ratelimit-limit"], "5");
        assert_eq!(
            headers["x-ratelimit-remaining"],
            remaining.to_string().as_str()
        );
        assert!(
            headers["x-ratelimit-reset"]
                .to_str()
                .unwrap()
                .parse::<i64>()
                .unwrap()
                > 0
        );
    }
    let (status, headers, body) = bob.call_raw(reqwest::Method::GET, "/users/me", &[]).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["code"], "RATE_LIMIT_HIT");
    assert_eq!(body["msg"], "API usage exceeded rate limit");
    let wait = body["retry-after"].as_f64().unwrap();
    assert!(wait > 0.0 && wait <= 60.0, "{wait}");
    let header: f64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(header >= wait.floor() && header <= 60.0);
    // Another user has a budget of their own.
    let owner = server.api(Some(&server.owner()));
    assert_eq!(owner.get("/users/me", &[]).await.0, StatusCode::OK);

    // Without credentials: per address.
    // (Bob's sign-in, `fetch_api_key`, already counted: it came without credentials.)
    let anonymous = server.api(None);
    loop {
        let (status, headers, _) = anonymous
            .call_raw(reqwest::Method::GET, "/server_settings", &[])
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["x-ratelimit-limit"], "3");
        if headers["x-ratelimit-remaining"] == "0" {
            break;
        }
    }
    let (status, body) = anonymous.get("/server_settings", &[]).await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::TOO_MANY_REQUESTS, json!("RATE_LIMIT_HIT"))
    );

    // Failed logins: counted per username once they fail; then even the right password waits.
    let server = crate::support::Server::start_with(&["--rate-limit-logins", "2"]);
    let login = |password: &'static str| {
        let anonymous = server.api(None);
        async move {
            anonymous
                .post(
                    "/fetch_api_key",
                    &[("username", crate::support::OWNER), ("password", password)],
                )
                .await
        }
    };
    for _ in 0..2 {
        assert_eq!(
            login("wrong-password").await.1["code"],
            "AUTHENTICATION_FAILED"
        );
    }
    let password = std::fs::read_to_string(server.dir.join("initial-password")).unwrap();
    let (status, body) = server
        .api(None)
        .post(
            "/fetch_api_key",
            &[
                ("username", crate::support::OWNER),
                ("password", password.trim()),
            ],
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::TOO_MANY_REQUESTS, json!("RATE_LIMIT_HIT"))
    );
}

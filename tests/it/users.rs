//! Users and bots: `GET /users`, `GET /users/{user_id|email}`, `POST /bots`, `GET /bots`.

use crate::realtime::{drain, kinds, register};
use crate::support::{Server, OWNER};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The domain the server makes addresses in (bots, placeholders): its host name, or a reserved
/// domain when it is reached by IP address.
pub fn email_domain(server: &Server) -> String {
    let host = server
        .url
        .split("://")
        .nth(1)
        .unwrap()
        .split(':')
        .next()
        .unwrap();
    if host.chars().any(|c| c.is_ascii_alphabetic()) {
        host.to_owned()
    } else {
        "chronicle.invalid".to_owned()
    }
}

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

    // user_ids narrows the list; ids that name nobody are left out.
    let (_, body) = as_alice
        .get("/users", &[("user_ids", &format!("[{alice_id}]"))])
        .await;
    assert_eq!(body["members"].as_array().unwrap().len(), 1);
    assert_eq!(body["members"][0]["full_name"], "Alice");
    let (status, body) = as_alice.get("/users", &[("user_ids", "[999, 1, 1]")]).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&Value> = body["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["user_id"])
        .collect();
    assert_eq!(ids, vec![&json!(1)]);
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

    // The organization decides who sees real addresses.
    let set = |code: &'static str| {
        let owner = &owner;
        async move {
            owner
                .call(
                    reqwest::Method::PATCH,
                    "/realm",
                    &[("email_address_visibility", code)],
                )
                .await
        }
    };
    assert_eq!(set("1").await.0, StatusCode::OK);
    let (_, body) = as_alice.get("/users/1", &[]).await;
    assert_eq!(body["user"]["delivery_email"], OWNER);
    assert_eq!(body["user"]["email"], OWNER);
    // The list, whose people's texts are kept between answers, says so too, and shows a
    // new name at once.
    let (_, body) = as_alice.get("/users", &[]).await;
    assert_eq!(body["members"][0]["delivery_email"], OWNER);
    let renamed = owner
        .call(
            reqwest::Method::PATCH,
            &format!("/users/{alice_id}"),
            &[("full_name", "Alice Liddell")],
        )
        .await;
    assert_eq!(renamed.0, StatusCode::OK, "{}", renamed.1);
    let (_, body) = as_alice.get("/users", &[]).await;
    assert_eq!(body["members"][1]["full_name"], "Alice Liddell");
    let (_, body) = owner
        .get("/users", &[("include_custom_profile_fields", "true")])
        .await;
    assert_eq!(body["members"][1]["full_name"], "Alice Liddell");
    assert_eq!(body["members"][1]["profile_data"], json!({}));
    assert_eq!(set("4").await.0, StatusCode::OK);
    let (_, body) = owner.get(&format!("/users/{alice_id}"), &[]).await;
    assert_eq!(body["user"]["delivery_email"], Value::Null);
    let (status, body) = set("7").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "REQUEST_VARIABLE_INVALID");

    // Credentials are required.
    assert_eq!(
        server.api(None).get("/users", &[]).await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn bots_are_created_listed_announced_and_deactivated() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let as_alice = server.api(Some(&alice));
    let (owner_queue, _) = register(&owner, &[]).await;
    let (alice_queue, _) = register(&as_alice, &[]).await;
    let domain = email_domain(&server);

    // A member creates a generic bot; the answer carries its key but no email.
    let (status, body) = as_alice
        .post(
            "/bots",
            &[("full_name", "Helper Bot"), ("short_name", "helper")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        keys(&body),
        vec![
            "result",
            "msg",
            "user_id",
            "api_key",
            "avatar_url",
            "default_sending_stream",
            "default_events_register_stream",
            "default_all_public_streams",
        ]
    );
    let bot_id = body["user_id"].as_u64().unwrap();
    let bot_key = body["api_key"].as_str().unwrap().to_owned();
    assert_eq!(bot_key.len(), 32);
    assert_eq!(body["default_sending_stream"], Value::Null);
    assert_eq!(body["default_all_public_streams"], false);
    let bot_email = format!("helper-bot@{domain}");

    // The bot authenticates with its key and is a member that is a bot.
    let as_bot = server.api(Some(&crate::support::Creds {
        email: bot_email.clone(),
        key: bot_key.clone(),
    }));
    let (status, me) = as_bot.get("/users/me", &[]).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["is_bot"], true);
    assert_eq!(me["role"], 400);
    let (_, body) = owner.get(&format!("/users/{bot_id}"), &[]).await;
    assert_eq!(body["user"]["bot_type"], 1);
    assert_eq!(body["user"]["bot_owner_id"], alice_id);
    assert_eq!(body["user"]["delivery_email"], bot_email.as_str());
    assert!(body["user"].get("profile_data").is_none());

    // GET /bots: the caller's own bots only, even for administrators.
    let (_, body) = as_alice.get("/bots", &[]).await;
    assert_eq!(
        body["bots"],
        json!([{
            "username": bot_email,
            "full_name": "Helper Bot",
            "api_key": bot_key,
            "avatar_url": body["bots"][0]["avatar_url"],
            "default_sending_stream": null,
            "default_events_register_stream": null,
            "default_all_public_streams": false,
        }])
    );
    assert_eq!(owner.get("/bots", &[]).await.1["bots"], json!([]));
    let (_, body) = as_bot.get("/bots", &[]).await;
    assert_eq!(body["msg"], "This endpoint does not accept bot requests.");

    // Everyone hears of the new user and the system groups its role puts it in (members and
    // full members, as Zulip's bots); the owner and administrators of the bot itself.
    let owner_events = drain(&owner, &owner_queue).await;
    let alice_events = drain(&as_alice, &alice_queue).await;
    assert_eq!(
        kinds(&owner_events),
        vec![
            "realm_user:add",
            "user_group:add_members",
            "user_group:add_members",
            "realm_bot:add"
        ]
    );
    assert_eq!(
        owner_events[1]["user_ids"],
        json!([owner_events[0]["person"]["user_id"]])
    );
    assert_eq!(kinds(&alice_events), kinds(&owner_events));
    let added = &alice_events[3]["bot"];
    assert_eq!(added["user_id"], bot_id);
    assert_eq!(added["owner_id"], alice_id);
    assert_eq!(added["api_key"], bot_key.as_str());
    assert_eq!(added["services"], json!([]));
    let (_, bob) = server.create_member("bob@example.com", "Bob").await;
    let as_bob = server.api(Some(&bob));
    let (_, state) = register(&as_bob, &[("fetch_event_types", "[\"realm_bot\"]")]).await;
    assert_eq!(state["realm_bots"], json!([]));
    let (_, state) = register(&owner, &[("fetch_event_types", "[\"realm_bot\"]")]).await;
    assert_eq!(state["realm_bots"][0]["email"], bot_email.as_str());

    // Validation, in Zulip's words.
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[("full_name", "Other"), ("short_name", "helper")],
            "Email is already in use.",
        ),
        (
            &[("full_name", "Helper Bot"), ("short_name", "x")],
            "Name is already in use.",
        ),
        (
            &[("full_name", "Bot"), ("short_name", "  ")],
            "Bad name or username",
        ),
        (
            &[("full_name", "B@d"), ("short_name", "bad")],
            "Invalid characters in name!",
        ),
        (
            &[("full_name", "B"), ("short_name", "b"), ("bot_type", "9")],
            "Invalid bot type",
        ),
        (
            &[("full_name", "E"), ("short_name", "e"), ("bot_type", "4")],
            "Embedded bots are not enabled.",
        ),
        (
            &[
                ("full_name", "O"),
                ("short_name", "o"),
                ("bot_type", "3"),
                ("payload_url", "\"ftp://x\""),
            ],
            "payload_url is not a URL",
        ),
        (
            &[
                ("full_name", "S"),
                ("short_name", "s"),
                ("default_sending_stream", "nowhere"),
            ],
            "Invalid channel name 'nowhere'",
        ),
    ];
    for (params, msg) in cases {
        let (status, body) = as_alice.post("/bots", params).await;
        assert_eq!(
            (status, body),
            (
                StatusCode::BAD_REQUEST,
                json!({"result": "error", "msg": msg, "code": "BAD_REQUEST"})
            ),
            "{params:?}"
        );
    }

    // An outgoing webhook bot keeps its service.
    let (status, body) = as_alice
        .post(
            "/bots",
            &[
                ("full_name", "Hook"),
                ("short_name", "hook"),
                ("bot_type", "3"),
                ("payload_url", "\"https://example.com/hook\""),
                ("interface_type", "2"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let events = drain(&as_alice, &alice_queue).await;
    let service = &events.last().unwrap()["bot"]["services"][0];
    assert_eq!(service["base_url"], "https://example.com/hook");
    assert_eq!(service["interface"], 2);
    assert_eq!(service["token"].as_str().unwrap().len(), 32);

    // Bots are deactivated through DELETE /bots/{id}, by their owner or an administrator;
    // the key stops working and the owner hears of it.
    assert_eq!(
        as_bob.delete(&format!("/bots/{bot_id}"), &[]).await.1["msg"],
        "Insufficient permission"
    );
    assert_eq!(owner.delete("/bots/1", &[]).await.1["msg"], "No such bot");
    let (status, _) = as_alice.delete(&format!("/bots/{bot_id}"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        as_bot.get("/users/me", &[]).await.0,
        StatusCode::UNAUTHORIZED
    );
    let events = drain(&as_alice, &alice_queue).await;
    assert_eq!(
        events.iter().find(|e| e["type"] == "realm_bot").unwrap()["bot"],
        json!({"user_id": bot_id, "is_active": false})
    );
    let (_, body) = as_alice.get("/bots", &[]).await;
    assert_eq!(body["bots"].as_array().unwrap().len(), 1);

    // Deactivating the owner deactivates the bots they own.
    let (_, body) = owner.get("/users", &[]).await;
    let hook_id = body["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["full_name"] == "Hook")
        .unwrap()["user_id"]
        .clone();
    assert_eq!(
        owner.delete(&format!("/users/{alice_id}"), &[]).await.0,
        StatusCode::OK
    );
    let (_, body) = owner.get(&format!("/users/{hook_id}"), &[]).await;
    assert_eq!(body["user"]["is_active"], false);

    // Guests may not create bots.
    let (guest_id, guest) = server.create_member("guest@example.com", "Guest").await;
    owner
        .call(
            reqwest::Method::PATCH,
            &format!("/users/{guest_id}"),
            &[("role", "600")],
        )
        .await;
    let (_, body) = server
        .api(Some(&guest))
        .post("/bots", &[("full_name", "G"), ("short_name", "g")])
        .await;
    assert_eq!(body["msg"], "Not allowed for guest users");
}

#[tokio::test]
async fn custom_profile_fields_and_values() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let (bob_id, _) = server.create_member("bob@example.com", "Bob").await;
    let as_alice = server.api(Some(&alice));
    let (queue, _) = register(&as_alice, &[]).await;
    let create = |params: Vec<(&'static str, String)>| {
        let owner = &owner;
        async move {
            let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            owner.post("/realm/profile_fields", &params).await
        }
    };
    let s = |v: &str| v.to_owned();

    // Administrators only.
    let (_, body) = as_alice
        .post(
            "/realm/profile_fields",
            &[("name", "Phone"), ("field_type", "1")],
        )
        .await;
    assert_eq!(body["code"], "UNAUTHORIZED_PRINCIPAL");

    let (status, body) = create(vec![
        ("name", s("Phone")),
        ("hint", s("Your number")),
        ("field_type", s("1")),
        ("display_in_profile_summary", s("true")),
    ])
    .await;
    assert_eq!((status, &body["id"]), (StatusCode::OK, &json!(1)), "{body}");
    let (_, body) = create(vec![
        ("name", s("Editor")),
        ("field_type", s("3")),
        (
            "field_data",
            s(r#"{"vim": {"text": "Vim", "order": "1"}, "emacs": {"text": "Emacs", "order": "2"}}"#),
        ),
        ("editable_by_user", s("false")),
    ])
    .await;
    assert_eq!(body["id"], 2, "{body}");
    create(vec![("name", s("Mentor")), ("field_type", s("6"))]).await;
    create(vec![("name", s("Site")), ("field_type", s("5"))]).await;
    create(vec![("name", s("Birthday")), ("field_type", s("4"))]).await;

    let (_, body) = as_alice.get("/realm/profile_fields", &[]).await;
    let fields = body["custom_fields"].as_array().unwrap();
    assert_eq!(fields.len(), 5);
    assert_eq!(
        fields[0],
        json!({"id": 1, "name": "Phone", "type": 1, "hint": "Your number", "field_data": "",
               "order": 1, "required": false, "editable_by_user": true,
               "display_in_profile_summary": true})
    );
    let data: Value = serde_json::from_str(fields[1]["field_data"].as_str().unwrap()).unwrap();
    assert_eq!(data["vim"], json!({"text": "Vim", "order": "1"}));
    let events = drain(&as_alice, &queue).await;
    assert_eq!(events.len(), 5);
    assert_eq!(events[4]["type"], "custom_profile_fields");
    assert_eq!(events[4]["fields"].as_array().unwrap().len(), 5);

    // Definition errors, in Zulip's words.
    let cases: Vec<(Vec<(&'static str, String)>, &str)> = vec![
        (
            vec![("name", s(" ")), ("field_type", s("1"))],
            "Label cannot be blank.",
        ),
        (
            vec![("name", "n".repeat(41)), ("field_type", s("1"))],
            "name is too long (limit: 40 characters)",
        ),
        (
            vec![
                ("name", s("H")),
                ("hint", "h".repeat(81)),
                ("field_type", s("1")),
            ],
            "hint is too long (limit: 80 characters)",
        ),
        (
            vec![("name", s("Phone")), ("field_type", s("2"))],
            "A field with that label already exists.",
        ),
        (
            vec![("name", s("X")), ("field_type", s("9"))],
            "Invalid field type.",
        ),
        (
            vec![("name", s("Pick")), ("field_type", s("3"))],
            "Field must have at least one choice.",
        ),
        (
            vec![
                ("name", s("Pick")),
                ("field_type", s("3")),
                (
                    "field_data",
                    s(r#"{"a": {"text": "A", "order": "1"}, "b": {"text": "A", "order": "2"}}"#),
                ),
            ],
            "Field must not have duplicate choices.",
        ),
        (
            vec![
                ("name", s("Pick")),
                ("field_type", s("3")),
                ("field_data", s(r#"{"a": {"order": "1"}}"#)),
            ],
            "text key is missing from field_data",
        ),
        (
            vec![
                ("name", s("Who")),
                ("field_type", s("6")),
                ("display_in_profile_summary", s("true")),
            ],
            "Field type not supported for display in profile summary.",
        ),
        (
            vec![
                ("name", s("When")),
                ("field_type", s("4")),
                ("use_for_user_matching", s("true")),
            ],
            "Field type not supported for use for user matching.",
        ),
        (
            vec![
                ("name", s("Acct")),
                ("field_type", s("7")),
                ("field_data", s(r#"{"subtype": "myspace"}"#)),
            ],
            "Invalid external account type",
        ),
        (
            vec![
                ("name", s("Acct")),
                ("field_type", s("7")),
                (
                    "field_data",
                    s(r#"{"subtype": "custom", "url_pattern": "https://x.example/"}"#),
                ),
            ],
            "URL pattern must contain '%(username)s'.",
        ),
    ];
    for (params, msg) in cases {
        let (status, body) = create(params.clone()).await;
        assert_eq!(
            (status, body),
            (
                StatusCode::BAD_REQUEST,
                json!({"result": "error", "msg": msg, "code": "BAD_REQUEST"})
            ),
            "{params:?}"
        );
    }
    create(vec![
        ("name", s("Pronouns")),
        ("field_type", s("8")),
        ("display_in_profile_summary", s("true")),
    ])
    .await;
    let (_, body) = create(vec![
        ("name", s("Team")),
        ("field_type", s("1")),
        ("display_in_profile_summary", s("true")),
    ])
    .await;
    assert_eq!(
        body["msg"],
        "Only 2 custom profile fields can be displayed in the profile summary."
    );
    let (_, body) = create(vec![
        ("name", s("GH")),
        ("field_type", s("7")),
        ("field_data", s(r#"{"subtype": "github"}"#)),
    ])
    .await;
    let github_id = body["id"].as_u64().unwrap();
    drain(&as_alice, &queue).await;

    // Own values: checked against the field's type.
    let set = |data: String| {
        let api = &as_alice;
        async move {
            api.call(
                reqwest::Method::PATCH,
                "/users/me/profile_data",
                &[("data", data.as_str())],
            )
            .await
        }
    };
    let (status, body) = set(format!(
        r#"[{{"id": 1, "value": "+1 *555*"}}, {{"id": 3, "value": [{bob_id}]}}, {{"id": 4, "value": "https://alice.example"}}, {{"id": 5, "value": "1990-02-28"}}]"#
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let errors = [
        (
            r#"[{"id": 4, "value": "not a link"}]"#.to_owned(),
            "Site is not a URL",
        ),
        (
            r#"[{"id": 5, "value": "1990-02-30"}]"#.to_owned(),
            "Birthday is not a date",
        ),
        (
            r#"[{"id": 1, "value": 5}]"#.to_owned(),
            "Phone is not a string",
        ),
        (
            format!(r#"[{{"id": 1, "value": "{}"}}]"#, "9".repeat(51)),
            "Phone is too long (limit: 50 characters)",
        ),
        (
            r#"[{"id": 3, "value": [999]}]"#.to_owned(),
            "Invalid user ID: 999",
        ),
        (
            r#"[{"id": 3, "value": "1"}]"#.to_owned(),
            "User IDs is not a list",
        ),
        (
            r#"[{"id": 99, "value": "x"}]"#.to_owned(),
            "Field id 99 not found.",
        ),
        (
            r#"[{"id": 2, "value": "vim"}]"#.to_owned(),
            "You are not allowed to change this field. Contact an administrator to update it.",
        ),
    ];
    for (data, msg) in errors {
        let (status, body) = set(data.clone()).await;
        assert_eq!(
            (status, body),
            (
                StatusCode::BAD_REQUEST,
                json!({"result": "error", "msg": msg, "code": "BAD_REQUEST"})
            ),
            "{data}"
        );
    }
    let events = drain(&as_alice, &queue).await;
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(
        events[0]["person"],
        json!({"user_id": alice_id, "custom_profile_field": {"id": 1, "value": "+1 *555*", "rendered_value": "<p>+1 <em>555</em></p>"}})
    );
    assert_eq!(
        events[1]["person"]["custom_profile_field"],
        json!({"id": 3, "value": format!("[{bob_id}]")})
    );
    // A user clears one of their own values with null (an empty string is refused as a URL).
    let (status, body) = set(r#"[{"id": 4, "value": null}]"#.to_owned()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, me) = as_alice.get("/users/me", &[]).await;
    assert!(me["profile_data"].get("4").is_none(), "{me}");
    let events = drain(&as_alice, &queue).await;
    assert_eq!(
        events[0]["person"]["custom_profile_field"],
        json!({"id": 4, "value": null})
    );
    let (status, _) = set(r#"[{"id": 4, "value": "https://alice.example"}]"#.to_owned()).await;
    assert_eq!(status, StatusCode::OK);
    drain(&as_alice, &queue).await;

    // An administrator sets the field users cannot edit, and removes a value with null.
    let (status, body) = owner
        .call(
            reqwest::Method::PATCH,
            &format!("/users/{alice_id}"),
            &[(
                "profile_data",
                r#"[{"id": 2, "value": "emacs"}, {"id": 5, "value": null}]"#,
            )],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = owner
        .get(
            &format!("/users/{alice_id}"),
            &[("include_custom_profile_fields", "true")],
        )
        .await;
    assert_eq!(
        body["user"]["profile_data"],
        json!({
            "1": {"value": "+1 *555*", "rendered_value": "<p>+1 <em>555</em></p>"},
            "2": {"value": "emacs"},
            "3": {"value": format!("[{bob_id}]")},
            "4": {"value": "https://alice.example"},
        })
    );

    // Dropping a dropdown choice clears the values that used it.
    let (status, body) = owner
        .call(
            reqwest::Method::PATCH,
            "/realm/profile_fields/2",
            &[
                ("field_data", r#"{"vim": {"text": "Vim", "order": "1"}}"#),
                ("name", "Favorite editor"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, me) = as_alice.get("/users/me", &[]).await;
    assert!(me["profile_data"].get("2").is_none(), "{me}");
    let (_, body) = owner
        .call(
            reqwest::Method::PATCH,
            &format!("/realm/profile_fields/{github_id}"),
            &[("name", "Hub")],
        )
        .await;
    assert_eq!(body["msg"], "Default custom field cannot be updated.");

    // Reordering names every field; deleting removes the field and its values.
    let (_, body) = owner
        .call(
            reqwest::Method::PATCH,
            "/realm/profile_fields",
            &[("order", "[2, 1]")],
        )
        .await;
    assert_eq!(body["msg"], "Invalid order mapping.");
    let (_, body) = as_alice.get("/realm/profile_fields", &[]).await;
    let mut ids: Vec<u64> = body["custom_fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_u64().unwrap())
        .collect();
    ids.reverse();
    let order = serde_json::to_string(&ids).unwrap();
    let (status, _) = owner
        .call(
            reqwest::Method::PATCH,
            "/realm/profile_fields",
            &[("order", order.as_str())],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = as_alice.get("/realm/profile_fields", &[]).await;
    assert_eq!(body["custom_fields"][0]["id"], ids[0]);
    assert_eq!(
        owner.delete("/realm/profile_fields/99", &[]).await.1["msg"],
        "Field id 99 not found."
    );
    assert_eq!(
        owner.delete("/realm/profile_fields/4", &[]).await.0,
        StatusCode::OK
    );
    let (_, body) = create(vec![("name", s("New")), ("field_type", s("1"))]).await;
    assert!(
        body["id"].as_u64().unwrap() > github_id,
        "ids are never reused: {body}"
    );

    // Values survive a restart.
    let server = server.stop().restart();
    let (_, me) = server.api(Some(&alice)).get("/users/me", &[]).await;
    assert_eq!(
        me["profile_data"],
        json!({
            "1": {"value": "+1 *555*", "rendered_value": "<p>+1 <em>555</em></p>"},
            "3": {"value": format!("[{bob_id}]")},
        })
    );
}

#[tokio::test]
async fn own_settings_name_and_password() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let as_alice = server.api(Some(&alice));
    let (queue, _) = register(&owner, &[("event_types", r#"["realm_user"]"#)]).await;
    let patch = |params: &'static [(&'static str, &'static str)]| {
        let as_alice = &as_alice;
        async move {
            as_alice
                .call(reqwest::Method::PATCH, "/settings", params)
                .await
        }
    };

    // A new address is confirmed from itself (web.rs covers the link): the answer says so.
    let (status, body) = patch(&[
        ("full_name", "Alice Liddell"),
        ("email", "liddell@example.com"),
    ])
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["ignored_parameters_unsupported"], Value::Null);
    assert_eq!(
        body["account_email"],
        "Check your email for a confirmation link."
    );
    assert_eq!(
        as_alice.get("/users/me", &[]).await.1["full_name"],
        "Alice Liddell"
    );
    let events = drain(&owner, &queue).await;
    assert_eq!(
        events[0]["person"],
        json!({"user_id": alice_id, "full_name": "Alice Liddell"})
    );
    assert_eq!(
        patch(&[("full_name", " ")]).await.1["msg"],
        "Name too short!"
    );

    // Passwords: the old one is required and checked; the new one replaces it.
    let (_, body) = patch(&[("new_password", "another-password")]).await;
    assert_eq!(body["msg"], "Missing 'old_password' argument");
    let (_, body) = patch(&[
        ("old_password", "wrong"),
        ("new_password", "another-password"),
    ])
    .await;
    assert_eq!(
        body,
        json!({"result": "error", "msg": "Wrong password!", "code": "BAD_REQUEST"})
    );
    let (_, body) = patch(&[("old_password", "password123"), ("new_password", "abc")]).await;
    assert_eq!(body["msg"], "New password is too weak!");
    let (status, _) = patch(&[
        ("old_password", "password123"),
        ("new_password", "another-password"),
    ])
    .await;
    assert_eq!(status, StatusCode::OK);
    let login = |password: &'static str| {
        let server = &server;
        async move {
            server
                .api(None)
                .post(
                    "/fetch_api_key",
                    &[("username", "alice@example.com"), ("password", password)],
                )
                .await
                .0
        }
    };
    assert_eq!(login("another-password").await, StatusCode::OK);
    assert_eq!(login("password123").await, StatusCode::UNAUTHORIZED);
    let (_, log) = owner.get("/admin/events", &[("limit", "1000")]).await;
    let changed = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "PasswordChanged")
        .unwrap();
    assert_eq!(changed["payload"]["password_hash"], "[redacted]");

    // Organizations may freeze names (administrators still change theirs).
    owner
        .call(
            reqwest::Method::PATCH,
            "/realm",
            &[("name_changes_disabled", "true")],
        )
        .await;
    assert_eq!(
        patch(&[("full_name", "Someone Else")]).await.1["msg"],
        "Name changes are disabled in this organization. Contact an administrator to change your name."
    );
    let (status, _) = owner
        .call(
            reqwest::Method::PATCH,
            "/settings",
            &[("full_name", "The Owner")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn deactivation_actions_remove_what_was_asked() {
    let chat = crate::messages::chat().await;
    let server = &chat.server;
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = &chat.alice;
    let (bob_id, bob) = &chat.bob;
    let send = |api: &'static str, params: Vec<(&'static str, String)>| {
        let api = match api {
            "alice" => alice,
            _ => bob,
        };
        async move {
            let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            crate::messages::send(api, &params).await
        }
    };
    let s = |v: &str| v.to_owned();
    let channel = chat.channel.to_string();
    let public = send(
        "alice",
        vec![
            ("type", s("stream")),
            ("to", channel.clone()),
            ("topic", s("t")),
            ("content", s("public")),
        ],
    )
    .await;
    let (_, body) = alice
        .post(
            "/channels/create",
            &[
                ("name", "secret"),
                ("invite_only", "true"),
                ("subscribers", &format!("[{alice_id}, {bob_id}]")),
            ],
        )
        .await;
    let secret = body["id"].as_u64().unwrap().to_string();
    let private = send(
        "alice",
        vec![
            ("type", s("stream")),
            ("to", secret),
            ("topic", s("t")),
            ("content", s("private")),
        ],
    )
    .await;
    let direct = send(
        "alice",
        vec![
            ("type", s("direct")),
            ("to", format!("[{bob_id}]")),
            ("content", s("psst")),
        ],
    )
    .await;
    let kept = send(
        "bob",
        vec![
            ("type", s("stream")),
            ("to", channel.clone()),
            ("topic", s("t")),
            ("content", s("bob's")),
        ],
    )
    .await;
    let (_, body) = alice
        .post(
            "/bots",
            &[("full_name", "Alice Bot"), ("short_name", "alicebot")],
        )
        .await;
    let bot = crate::support::Creds {
        email: format!("alicebot-bot@{}", email_domain(server)),
        key: body["api_key"].as_str().unwrap().to_owned(),
    };
    let bot_id = body["user_id"].as_u64().unwrap();
    let bot_api = server.api(Some(&bot));
    let (_, body) = bot_api
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", &channel),
                ("topic", "t"),
                ("content", "beep"),
            ],
        )
        .await;
    let by_bot = body["id"].as_u64().unwrap();

    let path = format!("/users/{alice_id}");
    let (status, body) = owner
        .delete(
            &path,
            &[("actions", r#"{"delete_profile": true, "explode": true}"#)],
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "REQUEST_VARIABLE_INVALID");
    let (status, body) = owner
        .delete(
            &path,
            &[
                ("actions", r#"{"delete_profile": true, "delete_public_channel_messages": true, "delete_direct_messages": true}"#),
                ("deactivation_notification_comment", "Thanks for everything."),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let readable =
        |id: u64| async move { bob.get(&format!("/messages/{id}"), &[]).await.0 == StatusCode::OK };
    assert!(!readable(public).await, "public message deleted");
    assert!(!readable(by_bot).await, "the bot's public message deleted");
    assert!(!readable(direct).await, "direct message deleted");
    assert!(
        readable(private).await,
        "private channel messages were not asked for"
    );
    assert!(readable(kept).await, "other people's messages stay");
    for id in [*alice_id, bot_id] {
        let (_, body) = owner.get(&format!("/users/{id}"), &[]).await;
        assert_eq!(body["user"]["full_name"], "Deleted user");
        assert_eq!(body["user"]["is_active"], false);
    }
    // (Login alerts and missed-message emails to long-lived test accounts are not what this
    // test is about.)
    let mails: Vec<String> = std::fs::read_dir(server.dir.join("outbox"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.to_string_lossy();
            !name.contains("-login-") && !name.contains("-missed_messages-")
        })
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(mails.len(), 1);
    assert!(
        mails[0]
            .starts_with("To: alice@example.com\nSubject: Notification of account deactivation on"),
        "{}",
        mails[0]
    );
    assert!(mails[0].contains("Thanks for everything."));
}

/// A service an outgoing webhook bot calls: it records each payload and answers `answer`.
fn start_service(answer: Value) -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use actix_web::{web, App, HttpResponse, HttpServer};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let recorded = seen.clone();
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            let server = HttpServer::new(move || {
                let recorded = recorded.clone();
                let answer = answer.clone();
                App::new().route(
                    "/hook",
                    web::post().to(move |body: web::Bytes| {
                        let recorded = recorded.clone();
                        let answer = answer.clone();
                        async move {
                            let payload: Value = serde_json::from_slice(&body)
                                .unwrap_or_else(|_| json!(String::from_utf8_lossy(&body)));
                            recorded.lock().unwrap().push(payload);
                            HttpResponse::Ok().json(answer)
                        }
                    }),
                )
            })
            .workers(1)
            .bind("127.0.0.1:0")
            .unwrap();
            let port = server.addrs()[0].port();
            tx.send(port).unwrap();
            server.run().await.unwrap();
        });
    });
    let port = rx.recv().unwrap();
    (format!("http://127.0.0.1:{port}/hook"), seen)
}

#[tokio::test]
async fn outgoing_webhook_bots_are_called_and_answer() {
    // The service runs on this machine: an operator allows loopback for it.
    let chat = crate::messages::chat_with(&["--outgoing-allow", "127.0.0.1"]).await;
    let (_, alice) = &chat.alice;
    let (url, seen) = start_service(json!({"content": "pong @**Pinger**"}));
    let payload_url = serde_json::to_string(&url).unwrap();
    let (status, body) = alice
        .post(
            "/bots",
            &[
                ("full_name", "Pinger"),
                ("short_name", "pinger"),
                ("bot_type", "3"),
                ("payload_url", &payload_url),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let channel = chat.channel.to_string();
    crate::messages::send(
        alice,
        &[
            ("type", "stream"),
            ("to", &channel),
            ("topic", "t"),
            ("content", "@**Pinger** ping"),
        ],
    )
    .await;
    // The answer arrives as the bot's message in the same topic (a round trip through the
    // bot's HTTP server: up to 30 s on a loaded machine).
    let mut answer = None;
    for _ in 0..600 {
        let body = crate::messages::fetch(
            alice,
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("apply_markdown", "false"),
            ],
        )
        .await;
        if body["messages"][0]["content"] == "pong @**Pinger**" {
            answer = Some(body["messages"][0].clone());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let answer = answer.expect("the bot answered");
    assert_eq!(answer["sender_full_name"], "Pinger");
    assert_eq!(answer["subject"], "t");
    assert_eq!(answer["client"], "OutgoingWebhook");
    let payloads = seen.lock().unwrap().clone();
    assert_eq!(payloads.len(), 1);
    let payload = &payloads[0];
    assert_eq!(payload["trigger"], "mention");
    assert_eq!(payload["data"], "@**Pinger** ping");
    assert_eq!(payload["bot_full_name"], "Pinger");
    assert_eq!(payload["token"].as_str().unwrap().len(), 32);
    assert_eq!(payload["message"]["subject"], "t");
    // Its own answer (a bot's message) set nothing else off.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// `DELETE /users/me`: a person leaves on their own; their key stops working and everyone
/// hears of it. The only owner, and the only active account, may not, with Zulip's error.
#[tokio::test]
async fn people_deactivate_their_own_accounts_but_the_last_owner_cannot() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let as_alice = server.api(Some(&alice));
    let (queue, _) = register(&owner, &[("event_types", r#"["realm_user"]"#)]).await;

    let (status, body) = owner.delete("/users/me", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"result": "error", "code": "CANNOT_DEACTIVATE_LAST_USER",
               "msg": "Cannot deactivate the only organization owner.",
               "is_last_owner": true, "entity": "organization owner"})
    );

    let (status, body) = as_alice.delete("/users/me", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    let (status, body) = as_alice.get("/users/me", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["msg"], "Account is deactivated");
    let events = drain(&owner, &queue).await;
    assert!(
        events.iter().any(|e| e["type"] == "realm_user"
            && e["person"]["user_id"] == alice_id
            && e["person"]["is_active"] == false),
        "{events:?}"
    );
    let (_, body) = owner.get(&format!("/users/{alice_id}"), &[]).await;
    assert_eq!(body["user"]["is_active"], false);

    // Alone in the organization, the owner is the only active account.
    let (status, body) = owner.delete("/users/me", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "CANNOT_DEACTIVATE_LAST_USER");
    assert_eq!(body["is_last_owner"], false);
    assert_eq!(body["msg"], "Cannot deactivate the only user.");
}

/// `PATCH /users/{email}`: an administrator changes someone named by address as by id; an
/// address nobody has, or that the caller may not see, is "No such user".
#[tokio::test]
async fn administrators_change_people_named_by_address() {
    let server = Server::start();
    let (alice_id, alice) = server.create_member("alice@example.com", "Alice").await;
    let owner = server.api(Some(&server.owner()));
    let alice = server.api(Some(&alice));
    let (queue, _) = register(&alice, &[("event_types", r#"["realm_user"]"#)]).await;
    let (status, body) = owner
        .call(
            reqwest::Method::PATCH,
            "/users/alice@example.com",
            &[("full_name", "Alice Adams"), ("role", "300")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = owner.get(&format!("/users/{alice_id}"), &[]).await;
    assert_eq!(
        (&body["user"]["full_name"], &body["user"]["role"]),
        (&json!("Alice Adams"), &json!(300))
    );
    let events = drain(&alice, &queue).await;
    assert!(
        events
            .iter()
            .any(|e| e["person"]["full_name"] == "Alice Adams"),
        "{events:?}"
    );
    let (status, body) = owner
        .call(
            reqwest::Method::PATCH,
            "/users/nobody@example.com",
            &[("full_name", "X")],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("No such user"))
    );
    let (status, body) = alice
        .call(
            reqwest::Method::PATCH,
            "/users/alice@example.com",
            &[("full_name", "Me")],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Must be an organization administrator")
        )
    );
}

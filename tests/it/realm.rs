//! `PATCH /realm`: who may change what, the answers and events, and the rules that read the
//! settings.

use crate::messages::{chat, send};
use crate::realtime::{drain, register};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn patch(api: &crate::support::Api, params: &[(&str, &str)]) -> (StatusCode, Value) {
    api.call(Method::PATCH, "/realm", params).await
}

#[tokio::test]
async fn realm_settings_permissions_answers_and_events() {
    let chat = chat().await;
    let server = &chat.server;
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = &chat.alice;
    let (_, bob) = &chat.bob;
    let (queue, _) = register(bob, &[]).await;

    // Members may not; administrators may, except owner-only settings.
    let (status, body) = patch(alice, &[("name", "Mine")]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result":"error","msg":"Must be an organization administrator","code":"UNAUTHORIZED_PRINCIPAL"})
        )
    );
    let (status, _) = owner
        .call(
            Method::PATCH,
            &format!("/users/{alice_id}"),
            &[("role", "200")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, groups) = owner.get("/user_groups", &[]).await;
    let group_id = |name: &str| {
        groups["user_groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap()["id"]
            .as_u64()
            .unwrap()
    };
    let admins = group_id("role:administrators").to_string();
    let everyone = group_id("role:everyone").to_string();
    let (_, body) = patch(
        alice,
        &[("can_invite_users_group", &format!("{{\"new\": {admins}}}"))],
    )
    .await;
    assert_eq!(body["msg"], "Must be an organization owner");
    drain(bob, &queue).await;

    // Changes answer with what changed (text as "updated") and reach every user.
    let (status, body) = patch(
        alice,
        &[
            ("name", "Renamed"),
            ("message_content_edit_limit_seconds", "\"unlimited\""),
            ("message_content_delete_limit_seconds", "1200"),
            ("can_create_bots_group", &format!("{{\"new\": {admins}}}")),
            ("allow_message_editing", "true"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({
            "result": "success",
            "msg": "",
            "name": "updated",
            "message_content_edit_limit_seconds": null,
            "message_content_delete_limit_seconds": 1200,
            "can_create_bots_group": admins.parse::<u64>().unwrap(),
        })
    );
    let events: Vec<Value> = drain(bob, &queue)
        .await
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(
        events,
        vec![
            json!({"type": "realm", "op": "update", "property": "name", "value": "Renamed"}),
            json!({"type": "realm", "op": "update_dict", "property": "default", "data": {"message_content_edit_limit_seconds": null}}),
            json!({"type": "realm", "op": "update", "property": "message_content_delete_limit_seconds", "value": 1200}),
            json!({"type": "realm", "op": "update_dict", "property": "default", "data": {"can_create_bots_group": admins.parse::<u64>().unwrap()}}),
        ]
    );
    let (_, state) = register(bob, &[]).await;
    assert_eq!(state["realm_name"], "Renamed");
    assert_eq!(
        state["realm_message_content_edit_limit_seconds"],
        Value::Null
    );
    assert_eq!(state["realm_message_content_delete_limit_seconds"], 1200);
    assert_eq!(
        state["realm_can_create_bots_group"],
        admins.parse::<u64>().unwrap()
    );

    // The bot permission now keeps members out.
    let (_, body) = bob
        .post("/bots", &[("full_name", "B"), ("short_name", "b")])
        .await;
    assert_eq!(body["msg"], "Insufficient permission");

    // Bad values, in Zulip's words.
    let too_long = "x".repeat(41);
    let to_everyone = format!("{{\"new\": {everyone}}}");
    let cases: Vec<(Vec<(&str, &str)>, Value)> = vec![
        (
            vec![("name", "  ")],
            json!({"result":"error","msg":"name cannot be blank","code":"BAD_REQUEST"}),
        ),
        (
            vec![("name", too_long.as_str())],
            json!({"result":"error","msg":"name is too long (limit: 40 characters)","code":"BAD_REQUEST"}),
        ),
        (
            vec![("message_edit_history_visibility_policy", "some")],
            json!({"result":"error","msg":"Bad value for 'message_edit_history_visibility_policy': some","code":"REQUEST_VARIABLE_INVALID","var_name":"message_edit_history_visibility_policy","bad_value":"some"}),
        ),
        (
            vec![("message_content_edit_limit_seconds", "0")],
            json!({"result":"error","msg":"Bad value for 'message_content_edit_limit_seconds': 0","code":"REQUEST_VARIABLE_INVALID","var_name":"message_content_edit_limit_seconds","bad_value":"0"}),
        ),
        (
            vec![("allow_message_editing", "maybe")],
            json!({"result":"error","msg":"allow_message_editing is not a boolean","code":"BAD_REQUEST","var_name":"allow_message_editing"}),
        ),
        (
            vec![("new_stream_announcements_stream_id", "999")],
            json!({"result":"error","msg":"Invalid channel ID","code":"BAD_REQUEST"}),
        ),
        (
            vec![("can_create_bots_group", to_everyone.as_str())],
            json!({"result":"error","msg":"'can_create_bots_group' setting cannot be set to 'role:everyone' group.","code":"BAD_REQUEST"}),
        ),
        (
            vec![("can_create_bots_group", "{\"new\": 99999}")],
            json!({"result":"error","msg":"Invalid user group","code":"BAD_REQUEST"}),
        ),
    ];
    for (params, expected) in cases {
        let (status, body) = patch(&owner, &params).await;
        assert_eq!(
            (status, body),
            (StatusCode::BAD_REQUEST, expected),
            "{params:?}"
        );
    }
    // A failed request changes nothing, even the valid parts before the bad one.
    let (_, body) = patch(
        &owner,
        &[
            ("name", "Other"),
            ("new_stream_announcements_stream_id", "999"),
        ],
    )
    .await;
    assert_eq!(body["msg"], "Invalid channel ID");
    assert_eq!(register(bob, &[]).await.1["realm_name"], "Renamed");

    // Retention is the owners' choice; "unlimited" is shown as -1.
    let (_, body) = patch(alice, &[("message_retention_days", "30")]).await;
    assert_eq!(body["msg"], "Must be an organization owner");
    let (_, body) = patch(&owner, &[("message_retention_days", "30")]).await;
    assert_eq!(body["message_retention_days"], 30);
    let (_, body) = patch(&owner, &[("message_retention_days", "unlimited")]).await;
    assert_eq!(body["message_retention_days"], -1);
    let (_, body) = patch(&owner, &[("message_retention_days", "0")]).await;
    assert_eq!(body["code"], "REQUEST_VARIABLE_INVALID");

    // Unchanged values: nothing to report, no event.
    let (queue, _) = register(bob, &[]).await;
    let (_, body) = patch(&owner, &[("name", "Renamed")]).await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    assert_eq!(drain(bob, &queue).await, Vec::<Value>::new());

    // Settings survive a restart (they are events in the log).
    let server = chat.server.stop().restart();
    let owner = server.api(Some(&server.owner()));
    let (_, state) = register(&owner, &[]).await;
    assert_eq!(state["realm_name"], "Renamed");
    assert_eq!(state["realm_message_content_delete_limit_seconds"], 1200);
    assert_eq!(
        state["realm_can_create_bots_group"],
        admins.parse::<u64>().unwrap()
    );
}

#[tokio::test]
async fn realm_settings_govern_editing_history_topics_and_names() {
    let chat = chat().await;
    let server = &chat.server;
    let owner = server.api(Some(&server.owner()));
    let (_, alice) = &chat.alice;
    let channel = chat.channel.to_string();
    let id = send(
        alice,
        &[
            ("type", "stream"),
            ("to", &channel),
            ("topic", "t"),
            ("content", "first"),
        ],
    )
    .await;
    let edit = |content: &'static str| {
        let path = format!("/messages/{id}");
        async move {
            alice
                .call(Method::PATCH, &path, &[("content", content)])
                .await
        }
    };
    assert_eq!(edit("second").await.0, StatusCode::OK);
    let (status, _) = alice
        .call(
            Method::PATCH,
            &format!("/messages/{id}"),
            &[("topic", "moved")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // Editing turned off.
    assert_eq!(
        patch(&owner, &[("allow_message_editing", "false")]).await.0,
        StatusCode::OK
    );
    let (status, body) = edit("third").await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result":"error","msg":"Your organization has turned off message editing","code":"BAD_REQUEST"})
        )
    );

    // Edit history: all, then moves only (no earlier content), then none.
    let (_, body) = alice.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(body["message"]["edit_history"].as_array().unwrap().len(), 2);
    patch(
        &owner,
        &[("message_edit_history_visibility_policy", "moves")],
    )
    .await;
    let (_, body) = alice.get(&format!("/messages/{id}"), &[]).await;
    let history = body["message"]["edit_history"].as_array().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["prev_topic"], "t");
    assert!(history[0].get("prev_content").is_none());
    let (_, body) = alice.get(&format!("/messages/{id}/history"), &[]).await;
    let snapshots = body["message_history"].as_array().unwrap();
    assert_eq!(snapshots.len(), 2);
    assert!(
        snapshots.iter().all(|s| s["content"] == "second"),
        "{snapshots:?}"
    );
    patch(
        &owner,
        &[("message_edit_history_visibility_policy", "none")],
    )
    .await;
    let (_, body) = alice.get(&format!("/messages/{id}"), &[]).await;
    assert!(body["message"].get("edit_history").is_none());
    let (status, body) = alice.get(&format!("/messages/{id}/history"), &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result":"error","msg":"Message edit history is disabled in this organization","code":"BAD_REQUEST"})
        )
    );

    // The organization's topics policy applies to channels that inherit it.
    patch(&owner, &[("topics_policy", "disable_empty_topic")]).await;
    let (_, body) = alice
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", &channel),
                ("topic", ""),
                ("content", "x"),
            ],
        )
        .await;
    assert_eq!(
        body["msg"],
        "Sending messages to the general chat is not allowed in this channel."
    );
    let (_, state) = register(alice, &[]).await;
    assert_eq!(state["realm_topics_policy"], "disable_empty_topic");
    assert_eq!(state["realm_mandatory_topics"], true);

    // Unique names.
    patch(&owner, &[("require_unique_names", "true")]).await;
    let (_, body) = owner
        .post(
            "/users",
            &[
                ("email", "twin@example.com"),
                ("password", "password1"),
                ("full_name", "alice adams"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Unique names required in this organization.");

    // Limits as large as a number can be do not overflow.
    patch(&owner, &[("allow_message_editing", "true")]).await;
    let (status, _) = patch(
        &owner,
        &[("message_content_edit_limit_seconds", "9223372036854775807")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(edit("still editable").await.0, StatusCode::OK);
}

#[tokio::test]
async fn linkifiers_are_validated_applied_and_announced() {
    let chat = chat().await;
    let server = &chat.server;
    let owner = server.api(Some(&server.owner()));
    let (_, alice) = &chat.alice;
    let (_, bob) = &chat.bob;
    let (status, body) = bob
        .post(
            "/register",
            &[("client_capabilities", r#"{"linkifier_url_template": true}"#)],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let with_capability = body["queue_id"].as_str().unwrap().to_owned();
    let (without_capability, _) = register(bob, &[]).await;
    let add = |params: Vec<(&'static str, &'static str)>| {
        let owner = &owner;
        async move { owner.post("/realm/filters", &params).await }
    };

    // Administrators only.
    let (_, body) = alice
        .post(
            "/realm/filters",
            &[
                ("pattern", "#(?P<id>[0-9]+)"),
                ("url_template", "https://t.example/{id}"),
            ],
        )
        .await;
    assert_eq!(body["code"], "UNAUTHORIZED_PRINCIPAL");

    let (status, body) = add(vec![
        ("pattern", "#(?P<id>[0-9]+)"),
        ("url_template", "https://trac.example.com/ticket/{id}"),
        ("example_input", "#123"),
        ("reverse_template", "#{id}"),
    ])
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["id"], 1);

    // Validation, in Zulip's words, with the failing field under `errors`.
    type Case = (
        Vec<(&'static str, &'static str)>,
        &'static str,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            vec![("pattern", " "), ("url_template", "https://x.example")],
            "pattern",
            "This field cannot be blank.",
        ),
        (
            vec![("pattern", "a"), ("url_template", "https://x.example/{id")],
            "url_template",
            "Invalid URL template.",
        ),
        (
            vec![
                ("pattern", "(?P<id>[0-9]+"),
                ("url_template", "https://x.example/{id}"),
            ],
            "__all__",
            "",
        ),
        (
            vec![
                ("pattern", "T-(?P<id>[0-9]+)"),
                ("url_template", "https://x.example/{id}/{other}"),
            ],
            "__all__",
            "Group 'other' in URL template is not present in linkifier pattern.",
        ),
        (
            vec![
                ("pattern", "T-(?P<id>[0-9]+)"),
                ("url_template", "https://x.example/"),
            ],
            "__all__",
            "Group 'id' in linkifier pattern is not present in URL template.",
        ),
        (
            vec![
                ("pattern", "#(?P<id>[0-9]+)"),
                ("url_template", "https://x.example/{id}"),
            ],
            "__all__",
            "Realm filter with this Realm and Pattern already exists.",
        ),
        (
            vec![
                ("pattern", "T-(?P<id>[0-9]+)"),
                ("url_template", "https://x.example/{id}"),
                ("example_input", "nope"),
            ],
            "example_input",
            "Example input does not match the linkifier pattern.",
        ),
        (
            vec![
                ("pattern", "T-(?P<id>[0-9]+)"),
                ("url_template", "https://x.example/{id}"),
                ("example_input", "T-1"),
                ("reverse_template", "T{id}"),
            ],
            "reverse_template",
            "Example text does not match auto-conversion field.",
        ),
    ];
    for (params, field, msg) in cases {
        let (status, body) = owner.post("/realm/filters", &params).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{params:?}: {body}");
        let got = body["msg"].as_str().unwrap();
        if msg.is_empty() {
            assert!(got.starts_with("Bad regular expression: "), "{body}");
        } else {
            assert_eq!(got, msg, "{params:?}");
        }
        assert_eq!(body["errors"][field][0], got, "{body}");
    }

    let (_, body) = alice.get("/realm/linkifiers", &[]).await;
    assert_eq!(
        body["linkifiers"],
        json!([{"pattern": "#(?P<id>[0-9]+)", "url_template": "https://trac.example.com/ticket/{id}", "id": 1,
                "example_input": "#123", "reverse_template": "#{id}", "alternative_url_templates": []}])
    );

    // Applied to content (not in code or links) and to topics.
    let channel = chat.channel.to_string();
    let id = send(
        alice,
        &[
            ("type", "stream"),
            ("to", &channel),
            ("topic", "fix #99"),
            (
                "content",
                "See #224, `#225` and [#226](https://other.example), not x#227.",
            ),
        ],
    )
    .await;
    let (_, body) = bob.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(
        body["message"]["content"],
        "<p>See <a href=\"https://trac.example.com/ticket/224\">#224</a>, <code>#225</code> and \
         <a href=\"https://other.example\">#226</a>, not x#227.</p>"
    );
    assert_eq!(
        body["message"]["topic_links"],
        json!([{"url": "https://trac.example.com/ticket/99", "text": "#99"}])
    );

    // Events only to clients that declared linkifier_url_template.
    let events = drain(bob, &with_capability).await;
    let linkifier_events: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "realm_linkifiers")
        .collect();
    assert_eq!(linkifier_events.len(), 1);
    assert_eq!(linkifier_events[0]["realm_linkifiers"][0]["id"], 1);
    assert!(drain(bob, &without_capability)
        .await
        .iter()
        .all(|e| e["type"] != "realm_linkifiers"));
    let (_, state) = register(bob, &[("fetch_event_types", r#"["realm_linkifiers"]"#)]).await;
    assert_eq!(state["realm_linkifiers"], json!([]));

    // Change, reorder, remove.
    let (status, body) = owner
        .call(
            Method::PATCH,
            "/realm/filters/1",
            &[
                ("pattern", "#(?P<id>[0-9]+)"),
                ("url_template", "https://bugs.example/{id}"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = add(vec![
        ("pattern", "PR-(?P<n>[0-9]+)"),
        ("url_template", "https://pr.example/{n}"),
    ])
    .await;
    assert_eq!(body["id"], 2);
    let reorder = |ids: &'static str| {
        let owner = &owner;
        async move {
            owner
                .call(
                    Method::PATCH,
                    "/realm/linkifiers",
                    &[("ordered_linkifier_ids", ids)],
                )
                .await
        }
    };
    assert_eq!(
        reorder("[1, 1]").await.1["msg"],
        "The ordered list must not contain duplicated linkifiers"
    );
    assert_eq!(
        reorder("[1]").await.1["msg"],
        "The ordered list must enumerate all existing linkifiers exactly once"
    );
    assert_eq!(reorder("[2, 1]").await.0, StatusCode::OK);
    let (_, body) = alice.get("/realm/linkifiers", &[]).await;
    assert_eq!(body["linkifiers"][0]["id"], 2);
    assert_eq!(
        body["linkifiers"][1]["url_template"],
        "https://bugs.example/{id}"
    );
    assert_eq!(
        owner.delete("/realm/filters/9", &[]).await.1["msg"],
        "Linkifier not found."
    );
    assert_eq!(
        owner.delete("/realm/filters/2", &[]).await.0,
        StatusCode::OK
    );

    // Survives a restart; old messages keep the links they were rendered with.
    let server = chat.server.stop().restart();
    let owner = server.api(Some(&server.owner()));
    let (_, body) = owner.get("/realm/linkifiers", &[]).await;
    assert_eq!(body["linkifiers"].as_array().unwrap().len(), 1);
    let (_, body) = owner.get(&format!("/messages/{id}"), &[]).await;
    assert!(body["message"]["content"]
        .as_str()
        .unwrap()
        .contains("trac.example.com/ticket/224"));
    assert_eq!(
        body["message"]["topic_links"],
        json!([{"url": "https://bugs.example/99", "text": "#99"}])
    );
}

#[tokio::test]
async fn allowed_email_domains_are_kept_announced_and_enforced() {
    let chat = chat().await;
    let server = &chat.server;
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = &chat.alice;
    let (_, bob) = &chat.bob;
    let (queue, _) = register(bob, &[]).await;

    // Owners only, as Zulip; an administrator is refused.
    let (status, _) = owner
        .call(
            Method::PATCH,
            &format!("/users/{alice_id}"),
            &[("role", "200")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = alice
        .post(
            "/realm/domains",
            &[("domain", "example.org"), ("allow_subdomains", "false")],
        )
        .await;
    assert_eq!(body["msg"], "Must be an organization owner");
    drain(bob, &queue).await;

    // Zulip's validation, in its words.
    for (domain, msg) in [
        ("", "Invalid domain: Domain can't be empty."),
        (
            "localhost",
            "Invalid domain: Domain must have at least one dot (.)",
        ),
        (
            ".example.org",
            "Invalid domain: Domain cannot start or end with a dot (.)",
        ),
        ("a..org", "Invalid domain: Consecutive '.' are not allowed."),
        (
            "-a.org",
            "Invalid domain: Subdomains cannot start or end with a '-'.",
        ),
        (
            "a_b.org",
            "Invalid domain: Domain can only have letters, numbers, '.' and '-'s.",
        ),
    ] {
        let (status, body) = owner
            .post(
                "/realm/domains",
                &[("domain", domain), ("allow_subdomains", "false")],
            )
            .await;
        assert_eq!(
            (status, body),
            (
                StatusCode::BAD_REQUEST,
                json!({"result": "error", "msg": msg, "code": "BAD_REQUEST"})
            ),
            "{domain:?}"
        );
    }
    let (_, body) = owner.post("/realm/domains", &[("domain", "x.org")]).await;
    assert_eq!(body["msg"], "Missing 'allow_subdomains' argument");

    // Added (trimmed, lowercased), listed, announced.
    let (status, body) = owner
        .post(
            "/realm/domains",
            &[("domain", " Example.ORG "), ("allow_subdomains", "false")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["new_domain"], json!([1, "example.org"]));
    let (_, body) = owner
        .post(
            "/realm/domains",
            &[("domain", "example.org"), ("allow_subdomains", "true")],
        )
        .await;
    assert_eq!(
        body["msg"],
        "The domain example.org is already a part of your organization."
    );
    let (status, _) = owner
        .call(
            Method::PATCH,
            "/realm/domains/example.org",
            &[("allow_subdomains", "true")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = owner
        .call(
            Method::PATCH,
            "/realm/domains/nowhere.org",
            &[("allow_subdomains", "true")],
        )
        .await;
    assert_eq!(body["msg"], "No entry found for domain nowhere.org.");
    let (_, body) = bob.get("/realm/domains", &[]).await;
    assert_eq!(
        body["domains"],
        json!([{"domain": "example.org", "allow_subdomains": true}])
    );
    let events = drain(bob, &queue).await;
    let kinds: Vec<(Value, Value)> = events
        .iter()
        .filter(|e| e["type"] == "realm_domains")
        .map(|e| (e["op"].clone(), e["realm_domain"].clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (
                json!("add"),
                json!({"domain": "example.org", "allow_subdomains": false})
            ),
            (
                json!("change"),
                json!({"domain": "example.org", "allow_subdomains": true})
            ),
        ]
    );
    let (_, body) = bob
        .post(
            "/register",
            &[("fetch_event_types", r#"["realm_domains", "realm"]"#)],
        )
        .await;
    assert_eq!(
        body["realm_domains"],
        json!([{"domain": "example.org", "allow_subdomains": true}])
    );
    assert_eq!(body["realm_emails_restricted_to_domains"], false);

    // While the organization is not restricted, any address may be invited.
    let invite = |emails: &'static str| {
        let owner = &owner;
        async move {
            owner
                .post(
                    "/invites",
                    &[("invitee_emails", emails), ("stream_ids", "[]")],
                )
                .await
        }
    };
    let (status, body) = invite("carol@elsewhere.com").await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Restricted (owners only): the domain and its subdomains, and no `+`.
    let (_, body) = alice
        .call(
            Method::PATCH,
            "/realm",
            &[("emails_restricted_to_domains", "true")],
        )
        .await;
    assert_eq!(body["msg"], "Must be an organization owner");
    let (status, body) = owner
        .call(
            Method::PATCH,
            "/realm",
            &[("emails_restricted_to_domains", "true")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = invite("dan@elsewhere.com, erin+chat@example.org").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["msg"],
        "Some emails did not validate, so we didn't send any invitations."
    );
    assert_eq!(
        body["errors"],
        json!([
            ["dan@elsewhere.com", "Outside your domain.", false],
            [
                "erin+chat@example.org",
                "Email addresses containing + are not allowed.",
                false
            ]
        ])
    );
    let (status, body) = invite("frank@example.org, gina@eu.example.org").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = owner
        .call(
            Method::PATCH,
            "/realm/domains/example.org",
            &[("allow_subdomains", "false")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = invite("hank@eu.example.org").await;
    assert_eq!(body["errors"][0][1], "Outside your domain.");

    // Removing the last domain lifts the restriction, as Zulip does.
    drain(bob, &queue).await;
    let (status, _) = owner
        .call(Method::DELETE, "/realm/domains/example.org", &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let events = drain(bob, &queue).await;
    assert!(events.iter().any(|e| e["type"] == "realm_domains"
        && e["op"] == "remove"
        && e["domain"] == "example.org"));
    assert!(events.iter().any(|e| e["type"] == "realm"
        && e["property"] == "emails_restricted_to_domains"
        && e["value"] == false));
    let (_, body) = owner
        .call(Method::DELETE, "/realm/domains/example.org", &[])
        .await;
    assert_eq!(body["msg"], "No entry found for domain example.org.");
    let (_, body) = bob.get("/realm/domains", &[]).await;
    assert_eq!(body["domains"], json!([]));
}

/// Code playgrounds: administrators add and remove them, everyone is told
/// (`realm_playgrounds`) and reads them in `/register`; they survive a restart.
#[tokio::test]
async fn code_playgrounds_are_added_announced_and_removed_by_administrators() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let owner = c.server.api(Some(&c.server.owner()));
    let (queue, _) = register(alice, &[("event_types", r#"["realm_playgrounds"]"#)]).await;
    let params = [
        ("name", "Python playground"),
        ("pygments_language", "Python"),
        ("url_template", "https://python.example.com?code={code}"),
    ];
    let (status, body) = alice.post("/realm/playgrounds", &params).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Must be an organization administrator")
        )
    );
    let (status, body) = owner.post("/realm/playgrounds", &params).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "", "id": 1})
        )
    );
    let expected = json!([{"id": 1, "name": "Python playground", "pygments_language": "Python",
                           "url_template": "https://python.example.com?code={code}"}]);
    let events = drain(alice, &queue).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (&events[0]["type"], &events[0]["realm_playgrounds"]),
        (&json!("realm_playgrounds"), &expected)
    );
    let (status, body) = owner.post("/realm/playgrounds", &params).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Realm playground with this Realm, Pygments language and Name already exists.")
        )
    );
    let (status, body) = owner
        .post(
            "/realm/playgrounds",
            &[
                ("name", "Bad"),
                ("pygments_language", "Python"),
                ("url_template", "https://python.example.com?src={source}"),
            ],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("\"code\" should be the only variable present in the URL template")
        )
    );
    let creds = alice.creds.clone().unwrap();
    let server = c.server.stop().restart();
    let alice = server.api(Some(&creds));
    let owner = server.api(Some(&server.owner()));
    let (_, body) = register(&alice, &[("fetch_event_types", r#"["realm_playgrounds"]"#)]).await;
    assert_eq!(body["realm_playgrounds"], expected);
    let (status, body) = alice.delete("/realm/playgrounds/1", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = owner.delete("/realm/playgrounds/1", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = owner.delete("/realm/playgrounds/1", &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Invalid playground"))
    );
    let (_, body) = register(&alice, &[("fetch_event_types", r#"["realm_playgrounds"]"#)]).await;
    assert_eq!(body["realm_playgrounds"], json!([]));
}

/// The organization's defaults for new people (`PATCH /realm/user_settings_defaults`):
/// administrators only, Zulip's checks, the event to everyone, the defaults in `/register`,
/// applied to accounts made later and to nobody's existing settings, kept across a restart.
#[tokio::test]
async fn defaults_for_new_users_apply_to_accounts_made_later() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let owner = c.server.api(Some(&c.server.owner()));
    let path = "/realm/user_settings_defaults";
    let (queue, _) = register(
        alice,
        &[("event_types", r#"["realm_user_settings_defaults"]"#)],
    )
    .await;
    let (status, body) = alice
        .call(Method::PATCH, path, &[("twenty_four_hour_time", "true")])
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Must be an organization administrator")
        )
    );
    // One bad value refuses the whole request.
    let (status, body) = owner
        .call(
            Method::PATCH,
            path,
            &[("twenty_four_hour_time", "true"), ("emojiset", "comic")],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Invalid emojiset"))
    );
    let (status, body) = owner
        .call(
            Method::PATCH,
            path,
            &[
                ("twenty_four_hour_time", "true"),
                ("emojiset", "twitter"),
                ("web_font_size_px", "14"),
                ("left_side_userlist", "true"),
                // Each person's own: not an organization default.
                ("default_language", "fr"),
            ],
        )
        .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "",
                   "ignored_parameters_unsupported": ["default_language"]})
        )
    );
    let events = drain(alice, &queue).await;
    let seen: Vec<(Value, Value, Value)> = events
        .iter()
        .map(|e| (e["type"].clone(), e["property"].clone(), e["value"].clone()))
        .collect();
    let kind = json!("realm_user_settings_defaults");
    assert_eq!(
        seen,
        vec![
            (kind.clone(), json!("twenty_four_hour_time"), json!(true)),
            (kind.clone(), json!("emojiset"), json!("twitter")),
            (kind.clone(), json!("web_font_size_px"), json!(14)),
            (kind.clone(), json!("left_side_userlist"), json!(true)),
        ]
    );
    assert!(events.iter().all(|e| e["op"] == "update"), "{events:?}");
    // The same value again changes nothing and tells nobody.
    let (status, _) = owner
        .call(Method::PATCH, path, &[("emojiset", "twitter")])
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(drain(alice, &queue).await, Vec::<Value>::new());

    let (_, state) = register(alice, &[]).await;
    let defaults = &state["realm_user_settings_defaults"];
    assert_eq!(
        (
            &defaults["twenty_four_hour_time"],
            &defaults["emojiset"],
            &defaults["web_font_size_px"],
            &defaults["default_language"],
            &defaults["emojiset_choices"][1]["key"],
        ),
        (
            &json!(true),
            &json!("twitter"),
            &json!(14),
            &json!("en"),
            &json!("google-blob")
        )
    );
    // Alice's own settings did not change.
    assert_eq!(
        (
            &state["user_settings"]["twenty_four_hour_time"],
            &state["user_settings"]["emojiset"]
        ),
        (&json!(false), &json!("google"))
    );
    // Someone who joins later starts with them, and may change them.
    let (_, dana) = c
        .server
        .create_member("dana@example.com", "Dana Diaz")
        .await;
    let dana = c.server.api(Some(&dana));
    let (_, state) = register(&dana, &[]).await;
    let mine = &state["user_settings"];
    assert_eq!(
        (
            &mine["twenty_four_hour_time"],
            &mine["emojiset"],
            &mine["web_font_size_px"],
            &mine["left_side_userlist"],
            &mine["color_scheme"]
        ),
        (
            &json!(true),
            &json!("twitter"),
            &json!(14),
            &json!(true),
            &json!(1)
        )
    );
    let (status, _) = dana
        .call(Method::PATCH, "/settings", &[("emojiset", "google")])
        .await;
    assert_eq!(status, StatusCode::OK);

    let creds = dana.creds.clone().unwrap();
    let server = c.server.stop().restart();
    let dana = server.api(Some(&creds));
    let (_, state) = register(&dana, &[]).await;
    assert_eq!(
        (
            &state["user_settings"]["emojiset"],
            &state["user_settings"]["twenty_four_hour_time"],
            &state["realm_user_settings_defaults"]["emojiset"]
        ),
        (&json!("google"), &json!(true), &json!("twitter"))
    );
}

/// `/register`'s descriptions of what the server offers: the incoming webhook integrations for
/// the bot form, the search's stop words, the password limits (enforced), and the facts of
/// features Chronicle does not have.
#[tokio::test]
async fn register_describes_integrations_stop_words_and_limits() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (_, state) = register(
        alice,
        &[(
            "fetch_event_types",
            r#"["realm_incoming_webhook_bots", "stop_words", "realm", "realm_embedded_bots"]"#,
        )],
    )
    .await;
    let bots = state["realm_incoming_webhook_bots"].as_array().unwrap();
    let names: Vec<&str> = bots.iter().map(|b| b["name"].as_str().unwrap()).collect();
    for name in [
        "slack_incoming",
        "github",
        "gitlab",
        "alertmanager",
        "grafana",
        "sentry",
        "jira",
        "pagerduty",
        "zendesk",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let github = &bots[1];
    assert_eq!(github["display_name"], "GitHub");
    assert_eq!(
        github["config_options"],
        json!([
            {"key": "branches", "label": "Branches (comma-separated) to send push notifications for",
             "validator": "check_string"},
            {"key": "ignore_private_repositories",
             "label": "Exclude notifications from private repositories", "validator": "check_bool"},
        ])
    );
    let events = github["all_event_types"].as_array().unwrap();
    assert!(events.contains(&json!("push_commits")) && events.contains(&json!("star")));
    assert_eq!(bots[0]["all_event_types"], Value::Null);
    assert_eq!(state["realm_embedded_bots"], json!([]));
    let stop_words = state["stop_words"].as_array().unwrap();
    assert_eq!(stop_words.len(), 149);
    assert!(stop_words.contains(&json!("the")) && !stop_words.contains(&json!("deploy")));
    assert_eq!(
        (
            &state["password_min_length"],
            &state["password_max_length"],
            &state["realm_email_changes_disabled"],
            &state["realm_bot_domain"],
        ),
        (
            &json!(6),
            &json!(100),
            &json!(false),
            &json!("chronicle.invalid")
        )
    );
    let long = "p".repeat(101);
    let (status, body) = alice
        .call(
            Method::PATCH,
            "/settings",
            &[("old_password", "password123"), ("new_password", &long)],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("New password is too long!"))
    );
}

/// The organization's icon and logos: administrators upload them (bounded, resized as Zulip
/// does) and remove them; everyone is told (`realm` `update_dict`) and anyone may fetch them.
#[tokio::test]
async fn the_organization_icon_and_logos_are_uploaded_and_removed() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let owner = c.server.api(Some(&c.server.owner()));
    let size = |bytes: &[u8]| {
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        (be(16), be(20))
    };
    let (_, state) = register(alice, &[("fetch_event_types", r#"["realm"]"#)]).await;
    let url = |name: &str| format!("{}/avatar/realm{name}", c.server.url);
    assert_eq!(
        (
            &state["realm_icon_source"],
            &state["realm_icon_url"],
            &state["realm_logo_source"],
            &state["realm_logo_url"],
            &state["realm_night_logo_source"],
            &state["max_logo_file_size_mib"],
        ),
        (
            &json!("G"),
            &json!(url("")),
            &json!("D"),
            &json!(url("/logo")),
            &json!("D"),
            &json!(5)
        )
    );
    let (queue, _) = register(alice, &[("event_types", r#"["realm"]"#)]).await;
    let square = chronicle::avatars::generated("icon", 300);
    let (status, body) = crate::uploads::post_files(
        alice,
        "/realm/icon",
        &[("file", "icon.png", "image/png", &square)],
    )
    .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Must be an organization administrator")
        )
    );
    let (status, body) = owner.post("/realm/icon", &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("You must upload exactly one icon.")
        )
    );
    let (status, body) = crate::uploads::post_files(
        &owner,
        "/realm/icon",
        &[("file", "icon.png", "image/png", &square)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let icon_url = body["icon_url"].as_str().unwrap().to_owned();
    assert!(
        icon_url.starts_with(&format!("{}?version=", url(""))),
        "{icon_url}"
    );
    // Anyone may fetch it, signed in or not.
    let fetched = reqwest::get(&icon_url).await.unwrap();
    assert_eq!(fetched.status(), StatusCode::OK);
    assert_eq!(size(&fetched.bytes().await.unwrap()), (100, 100));

    // A wide logo is fitted in 800 × 100; the dark theme's is apart.
    let wide = {
        let mut image = image::RgbaImage::new(1600, 400);
        for p in image.pixels_mut() {
            *p = image::Rgba([20, 120, 200, 255]);
        }
        let mut out = Vec::new();
        image::DynamicImage::ImageRgba8(image)
            .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    };
    let (status, body) = crate::uploads::post_files(
        &owner,
        "/realm/logo?night=true",
        &[("file", "logo.png", "image/png", &wide)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let events = crate::realtime::drain(alice, &queue).await;
    let changes: Vec<(Value, Value)> = events
        .iter()
        .map(|e| (e["property"].clone(), e["data"].clone()))
        .collect();
    assert_eq!(changes.len(), 2, "{events:?}");
    assert_eq!(
        changes[0],
        (
            json!("icon"),
            json!({"icon_url": icon_url, "icon_source": "U"})
        )
    );
    let night_url = changes[1].1["night_logo_url"].as_str().unwrap().to_owned();
    assert_eq!(
        (&changes[1].0, &changes[1].1["night_logo_source"]),
        (&json!("night_logo"), &json!("U"))
    );
    assert_eq!(
        size(
            &reqwest::get(&night_url)
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap()
        ),
        (400, 100)
    );
    let (_, state) = register(alice, &[("fetch_event_types", r#"["realm"]"#)]).await;
    assert_eq!(
        (
            &state["realm_logo_source"],
            &state["realm_night_logo_url"],
            &state["realm_icon_url"]
        ),
        (&json!("D"), &json!(night_url), &json!(icon_url))
    );
    let (status, body) = crate::uploads::post_files(
        &owner,
        "/realm/logo",
        &[("file", "evil.png", "image/png", b"<svg onload=alert(1)>")],
    )
    .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("BAD_IMAGE"))
    );

    // Removed: the generated icon and the default logo again.
    let (status, body) = owner.delete("/realm/icon", &[]).await;
    assert_eq!(
        (status, body["icon_url"].clone()),
        (StatusCode::OK, json!(url("")))
    );
    let (status, _) = owner.delete("/realm/logo", &[("night", "true")]).await;
    assert_eq!(status, StatusCode::OK);
    let (_, state) = register(alice, &[("fetch_event_types", r#"["realm"]"#)]).await;
    assert_eq!(
        (
            &state["realm_icon_source"],
            &state["realm_night_logo_source"]
        ),
        (&json!("G"), &json!("D"))
    );
}

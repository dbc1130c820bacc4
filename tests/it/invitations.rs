//! Invitations: by email and reusable links, their rules, the outbox, and creating an account
//! through the registration page a link opens.

use crate::messages::chat;
use crate::realtime::{drain, register};
use crate::support::{Creds, Server};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The invitation emails written so far, oldest first (not the login alerts or missed-message
/// emails a slow test's accounts may get).
fn outbox(server: &Server) -> Vec<String> {
    let dir = server.dir.join("outbox");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.to_string_lossy();
                    !name.contains("-login-") && !name.contains("-missed_messages-")
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// The `/join/...` link in an email.
fn link_in(email: &str) -> String {
    email
        .lines()
        .find(|l| l.contains("/join/"))
        .unwrap()
        .trim()
        .to_owned()
}

async fn page(url: &str, form: Option<&[(&str, &str)]>) -> (StatusCode, String) {
    let client = reqwest::Client::new();
    let request = match form {
        None => client.get(url),
        Some(fields) => client.post(url).form(fields),
    };
    let response = request.send().await.unwrap();
    (response.status(), response.text().await.unwrap())
}

async fn login(server: &Server, email: &str, password: &str) -> Option<Creds> {
    let (status, body) = server
        .api(None)
        .post(
            "/fetch_api_key",
            &[("username", email), ("password", password)],
        )
        .await;
    (status == StatusCode::OK).then(|| Creds {
        email: email.to_owned(),
        key: body["api_key"].as_str().unwrap().to_owned(),
    })
}

#[tokio::test]
async fn email_invitations_from_invite_to_account() {
    let chat = chat().await;
    let server = &chat.server;
    let owner = server.api(Some(&server.owner()));
    let (alice_id, alice) = &chat.alice;
    let general = chat.channel.to_string();
    let (admin_queue, _) = register(&owner, &[("event_types", r#"["invites_changed"]"#)]).await;

    // Refusals, in Zulip's words and order.
    let stream_ids = format!("[{general}]");
    let invite = |params: Vec<(&'static str, String)>| async move {
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        alice.post("/invites", &params).await
    };
    let s = |v: &str| v.to_owned();
    let cases: Vec<(Vec<(&'static str, String)>, Value)> = vec![
        (
            vec![("invitee_emails", s("")), ("stream_ids", s("[]"))],
            json!({"result": "error", "msg": "You must specify at least one email address.", "code": "BAD_REQUEST"}),
        ),
        (
            vec![
                ("invitee_emails", s("x@example.com")),
                ("stream_ids", s("[]")),
                ("invite_as", s("200")),
            ],
            json!({"result": "error", "msg": "Must be an organization administrator", "code": "UNAUTHORIZED_PRINCIPAL"}),
        ),
        (
            vec![
                ("invitee_emails", s("x@example.com")),
                ("stream_ids", s("[999]")),
            ],
            json!({"result": "error", "msg": "Invalid channel ID 999. No invites were sent.", "code": "BAD_REQUEST"}),
        ),
        (
            vec![
                ("invitee_emails", s("x@example.com")),
                ("stream_ids", s("[]")),
                ("welcome_message_custom_text", s("hi")),
            ],
            json!({"result": "error", "msg": "Must be an organization administrator", "code": "UNAUTHORIZED_PRINCIPAL"}),
        ),
        (
            vec![
                ("invitee_emails", s("x@example.com, not an address")),
                ("stream_ids", s("[]")),
            ],
            json!({"result": "error", "code": "INVITATION_FAILED",
                   "msg": "Some emails did not validate, so we didn't send any invitations.",
                   "errors": [["not an address", "Invalid address.", false]],
                   "sent_invitations": false, "license_limit_reached": false, "daily_limit_reached": false}),
        ),
        (
            vec![
                ("invitee_emails", s("bob@example.com")),
                ("stream_ids", s("[]")),
            ],
            json!({"result": "error", "code": "INVITATION_FAILED", "msg": "We weren't able to invite anyone.",
                   "errors": [["bob@example.com", "Already has an account.", false]],
                   "sent_invitations": false, "license_limit_reached": false, "daily_limit_reached": false}),
        ),
    ];
    for (params, expected) in cases {
        let (status, body) = invite(params.clone()).await;
        assert_eq!(
            (status, body),
            (StatusCode::BAD_REQUEST, expected),
            "{params:?}"
        );
    }
    let (admin_id, admin) = server.create_member("adm@example.com", "Adm").await;
    owner
        .call(
            reqwest::Method::PATCH,
            &format!("/users/{admin_id}"),
            &[("role", "200")],
        )
        .await;
    let (_, body) = server
        .api(Some(&admin))
        .post(
            "/invites",
            &[
                ("invitee_emails", "x@example.com"),
                ("stream_ids", "[]"),
                ("invite_as", "100"),
            ],
        )
        .await;
    assert_eq!(body["msg"], "Must be an organization owner");
    assert!(outbox(server).is_empty());

    // A partial success: the new address is invited, the taken one reported.
    let (status, body) = invite(vec![
        ("invitee_emails", s("dora@example.com,\nbob@example.com")),
        ("stream_ids", stream_ids.clone()),
        ("invite_as", s("400")),
    ])
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "INVITATION_FAILED");
    assert_eq!(body["sent_invitations"], true);
    assert_eq!(
        body["errors"],
        json!([["bob@example.com", "Already has an account.", false]])
    );
    let emails = outbox(server);
    assert_eq!(emails.len(), 1);
    assert!(
        emails[0].starts_with("To: dora@example.com\n"),
        "{}",
        emails[0]
    );
    let link = link_in(&emails[0]);
    assert!(link.starts_with(&format!("{}/join/", server.url)), "{link}");
    let key = link
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();

    // Listed for the inviter and administrators; the key is nowhere in the audit log.
    let (_, body) = alice.get("/invites", &[]).await;
    let listed = &body["invites"][0];
    assert_eq!(listed["email"], "dora@example.com");
    assert_eq!(listed["invited_by_user_id"], *alice_id);
    assert_eq!(listed["invited_as"], 400);
    assert_eq!(listed["is_multiuse"], false);
    assert_eq!(
        listed["expiry_date"].as_i64().unwrap() - listed["invited"].as_i64().unwrap(),
        14_400 * 60
    );
    assert_eq!(
        owner.get("/invites", &[]).await.1["invites"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        chat.bob.1.get("/invites", &[]).await.1["invites"],
        json!([])
    );
    let (_, log) = owner.get("/admin/events", &[("limit", "1000")]).await;
    assert!(
        !log.to_string().contains(&key),
        "the link key leaked into the log listing"
    );
    let created = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "InvitationCreated")
        .unwrap();
    assert_eq!(created["payload"]["link_nonce"], "[redacted]", "{created}");
    assert!(
        !drain(&owner, &admin_queue).await.is_empty(),
        "invites_changed"
    );

    // Resending writes the same link again.
    let id = listed["id"].as_u64().unwrap();
    let (status, _) = alice.post(&format!("/invites/{id}/resend"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    let emails = outbox(server);
    assert_eq!(emails.len(), 2);
    assert_eq!(link_in(&emails[1]), link);

    // The registration page creates the account with what the invitation grants.
    let (status, html) = page(&link, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("dora@example.com") && html.contains("name=\"password\""),
        "{html}"
    );
    let (status, html) = page(&link, Some(&[("full_name", "Dora"), ("password", "123")])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("The password is too weak."), "{html}");
    let (status, html) = page(
        &link,
        Some(&[("full_name", "Dora Dee"), ("password", "dora-password")]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains("is ready") && html.contains("key="), "{html}");
    let dora = login(server, "dora@example.com", "dora-password")
        .await
        .expect("Dora can log in");
    let (_, me) = server.api(Some(&dora)).get("/users/me", &[]).await;
    assert_eq!(me["role"], 400);
    assert_eq!(me["full_name"], "Dora Dee");
    let (_, subs) = server
        .api(Some(&dora))
        .get("/users/me/subscriptions", &[])
        .await;
    assert_eq!(subs["subscriptions"][0]["name"], "general");
    // The inviter hears of it from the notification bot.
    let (_, body) = alice
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", r#"[["is", "dm"]]"#),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    assert_eq!(
        body["messages"][0]["content"],
        format!(
            "@_**Dora Dee|{}** accepted your invitation to join Zulip!",
            me["user_id"]
        )
    );

    // A used link is spent; the invitation is no longer listed.
    let (status, html) = page(&link, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("expired or been deactivated"), "{html}");
    assert_eq!(alice.get("/invites", &[]).await.1["invites"], json!([]));

    // Revoking: by the inviter or an administrator; a revoked link is dead.
    invite(vec![
        ("invitee_emails", s("eve@example.com")),
        ("stream_ids", s("[]")),
    ])
    .await;
    let eve_link = link_in(outbox(server).last().unwrap());
    let (_, body) = alice.get("/invites", &[]).await;
    let eve_id = body["invites"][0]["id"].as_u64().unwrap();
    let (_, body) = chat.bob.1.delete(&format!("/invites/{eve_id}"), &[]).await;
    assert_eq!(body["msg"], "Must be an organization administrator");
    assert_eq!(
        owner.delete(&format!("/invites/{eve_id}"), &[]).await.0,
        StatusCode::OK
    );
    assert_eq!(
        owner.delete(&format!("/invites/{eve_id}"), &[]).await.1["msg"],
        "No such invitation"
    );
    assert_eq!(page(&eve_link, None).await.0, StatusCode::NOT_FOUND);

    // Deactivating the inviter revokes what they sent.
    invite(vec![
        ("invitee_emails", s("fay@example.com")),
        ("stream_ids", s("[]")),
    ])
    .await;
    let fay_link = link_in(outbox(server).last().unwrap());
    assert_eq!(page(&fay_link, None).await.0, StatusCode::OK);
    assert_eq!(
        owner.delete(&format!("/users/{alice_id}"), &[]).await.0,
        StatusCode::OK
    );
    assert_eq!(page(&fay_link, None).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        owner
            .post(&format!("/users/{alice_id}/reactivate"), &[])
            .await
            .0,
        StatusCode::OK
    );

    // An invitation that has expired opens nothing.
    invite(vec![
        ("invitee_emails", s("late@example.com")),
        ("stream_ids", s("[]")),
        ("invite_expires_in_minutes", s("0")),
    ])
    .await;
    let late_link = link_in(outbox(server).last().unwrap());
    assert_eq!(page(&late_link, None).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn reusable_links_let_several_people_join() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (_, member) = server.create_member("m@example.com", "Member").await;
    let member = server.api(Some(&member));

    // Administrators by default.
    let (_, body) = member
        .post("/invites/multiuse", &[("invite_as", "400")])
        .await;
    assert_eq!(body["msg"], "Insufficient permission");
    let (status, body) = owner
        .post(
            "/invites/multiuse",
            &[("invite_as", "600"), ("invite_expires_in_minutes", "null")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let link = body["invite_link"].as_str().unwrap().to_owned();
    assert!(
        link.starts_with(&format!("{}/join/", server.url)) && link.ends_with('/'),
        "{link}"
    );
    let (_, body) = owner.get("/invites", &[]).await;
    let listed = &body["invites"][0];
    assert_eq!(listed["is_multiuse"], true);
    assert_eq!(listed["link_url"], link.as_str());
    assert_eq!(listed["expiry_date"], Value::Null);
    assert!(listed.get("notify_referrer_on_join").is_none());

    for (email, name) in [
        ("g1@example.com", "Guest One"),
        ("g2@example.com", "Guest Two"),
    ] {
        let (status, html) = page(
            &link,
            Some(&[
                ("email", email),
                ("full_name", name),
                ("password", "guest-password"),
            ]),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{html}");
        let creds = login(&server, email, "guest-password").await.unwrap();
        let (_, me) = server.api(Some(&creds)).get("/users/me", &[]).await;
        assert_eq!(me["role"], 600);
    }
    let (status, html) = page(
        &link,
        Some(&[
            ("email", "g1@example.com"),
            ("full_name", "Again"),
            ("password", "guest-password"),
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("Email is already in use."), "{html}");

    let id = listed["id"].as_u64().unwrap();
    assert_eq!(
        owner
            .delete(&format!("/invites/multiuse/{id}"), &[])
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        owner
            .delete(&format!("/invites/multiuse/{id}"), &[])
            .await
            .1["msg"],
        "Invitation has already been revoked"
    );
    assert_eq!(page(&link, None).await.0, StatusCode::NOT_FOUND);
    // Survives a restart as revoked.
    let server = server.stop().restart();
    assert_eq!(
        page(
            &link.replace(&link[..link.find("/join").unwrap()], &server.url),
            None
        )
        .await
        .0,
        StatusCode::NOT_FOUND
    );
}

/// A small SMTP server that takes every mail and keeps what came after DATA.
async fn smtp_sink() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let mails = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = mails.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut lines = BufReader::new(read).lines();
                write.write_all(b"220 sink ESMTP\r\n").await.unwrap();
                let mut data: Option<String> = None;
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Some(body) = &mut data {
                        if line == "." {
                            kept.lock().unwrap().push(std::mem::take(body));
                            data = None;
                            write.write_all(b"250 queued\r\n").await.unwrap();
                        } else {
                            body.push_str(&line);
                            body.push('\n');
                        }
                        continue;
                    }
                    let verb = line
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_ascii_uppercase();
                    let reply: &[u8] = match verb.as_str() {
                        "EHLO" | "HELO" => b"250 sink\r\n",
                        "DATA" => {
                            data = Some(String::new());
                            b"354 go on\r\n"
                        }
                        "QUIT" => {
                            write.write_all(b"221 bye\r\n").await.unwrap();
                            break;
                        }
                        _ => b"250 ok\r\n",
                    };
                    write.write_all(reply).await.unwrap();
                }
            });
        }
    });
    (port, mails)
}

#[tokio::test]
async fn invitation_emails_go_through_an_smtp_relay() {
    let (port, mails) = smtp_sink().await;
    let url = format!("smtp://127.0.0.1:{port}");
    let server = Server::start_with(&["--smtp-url", &url]);
    let owner = server.api(Some(&server.owner()));
    let (status, body) = owner
        .post(
            "/invites",
            &[("invitee_emails", "gil@example.com"), ("stream_ids", "[]")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Sent from a task of its own after the answer: up to 30 s on a loaded machine.
    let mut mail = None;
    for _ in 0..600 {
        if let Some(m) = mails.lock().unwrap().first().cloned() {
            mail = Some(m);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mail = mail.expect("the relay received the invitation");
    assert!(mail.contains("To: gil@example.com"), "{mail}");
    assert!(mail.contains("invited you to join"), "{mail}");
    let link = mail
        .lines()
        .find(|l| l.contains("/join/"))
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(page(&link, None).await.0, StatusCode::OK);
    assert!(
        outbox(&server).is_empty(),
        "nothing fell back to the outbox"
    );
}

/// Welcome Bot: people who join through an invitation are greeted, then given the
/// administrators' note (the invitation's own, else the organization's); administrators test
/// the note on themselves; accounts made through `POST /users` are not greeted.
#[tokio::test]
async fn welcome_bot_greets_people_who_join() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let (status, _) = owner
        .call(
            reqwest::Method::PATCH,
            "/realm",
            &[("welcome_message_custom_text", "Read #**general** first.")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, member) = server.create_member("m@example.com", "Member").await;
    let member = server.api(Some(&member));
    let (_, mine) = member
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
            ],
        )
        .await;
    assert_eq!(
        mine["messages"],
        json!([]),
        "an account made by the API is not greeted"
    );

    let invite = |note: Option<&'static str>| {
        let owner = &owner;
        async move {
            let mut params = vec![("invite_as", "400"), ("invite_expires_in_minutes", "null")];
            if let Some(note) = note {
                params.push(("welcome_message_custom_text", note));
            }
            let (status, body) = owner.post("/invites/multiuse", &params).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body["invite_link"].as_str().unwrap().to_owned()
        }
    };
    let join = |link: String, email: &'static str, name: &'static str| {
        let server = &server;
        async move {
            let (status, html) = page(
                &link,
                Some(&[
                    ("email", email),
                    ("full_name", name),
                    ("password", "a-password"),
                ]),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{html}");
            let creds = login(server, email, "a-password").await.unwrap();
            let api = server.api(Some(&creds));
            let (_, body) = api
                .get(
                    "/messages",
                    &[
                        ("anchor", "oldest"),
                        ("num_before", "0"),
                        ("num_after", "10"),
                    ],
                )
                .await;
            let messages: Vec<(String, String)> = body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    (
                        m["sender_email"].as_str().unwrap().to_owned(),
                        m["content"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            (api, messages)
        }
    };
    // The organization's note.
    let (api, messages) = join(invite(None).await, "a@example.com", "Ann").await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages
            .iter()
            .all(|(sender, _)| sender == "welcome-bot@zulip.com"),
        "{messages:?}"
    );
    assert!(messages[0].1.contains("I'm Welcome Bot"), "{messages:?}");
    assert!(
        messages[1].1.contains("A note from") && messages[1].1.contains("Read"),
        "{messages:?}"
    );
    let (_, state) =
        crate::realtime::register(&api, &[("fetch_event_types", r#"["realm_user"]"#)]).await;
    let bots: Vec<&str> = state["cross_realm_bots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["email"].as_str().unwrap())
        .collect();
    assert!(bots.contains(&"welcome-bot@zulip.com"), "{bots:?}");
    // An invitation's own note replaces it; an empty one means none.
    let (_, messages) = join(
        invite(Some("Hello from the invitation")).await,
        "b@example.com",
        "Ben",
    )
    .await;
    assert!(
        messages[1].1.contains("Hello from the invitation"),
        "{messages:?}"
    );
    let (_, messages) = join(invite(Some("")).await, "c@example.com", "Cid").await;
    assert_eq!(messages.len(), 1, "{messages:?}");

    // Administrators see the note as it would arrive.
    let (status, body) = member
        .post(
            "/realm/test_welcome_bot_custom_message",
            &[("welcome_message_custom_text", "x")],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Must be an organization administrator")
        )
    );
    let long = "x".repeat(8001);
    let (_, body) = owner
        .post(
            "/realm/test_welcome_bot_custom_message",
            &[("welcome_message_custom_text", &long)],
        )
        .await;
    assert_eq!(
        body["msg"],
        "welcome_message_custom_text is too long (limit: 8000 characters)"
    );
    let (status, body) = owner
        .post(
            "/realm/test_welcome_bot_custom_message",
            &[("welcome_message_custom_text", "Try **this**")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["message_id"].as_u64().unwrap();
    let (_, message) = owner.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(message["message"]["sender_email"], "welcome-bot@zulip.com");
    assert!(
        message["raw_content"]
            .as_str()
            .unwrap()
            .contains("A note from @_*role:administrators*:"),
        "{message}"
    );
}

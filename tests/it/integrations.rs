//! Incoming webhooks (`/api/v1/external/{integration}`): a bot's key in the URL, the payload
//! turned into messages in the channel and topic the URL names (or to the bot's owner), and
//! Zulip's answers for unsupported events, missing headers, bad keys and unknown channels.
//! The formats themselves are checked message by message in `src/integrations`.

use crate::messages::{chat, newest, newest_messages};
use crate::support::Api;
use reqwest::StatusCode;
use serde_json::{json, Value};

fn fixture(path: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/webhooks/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// An incoming webhook bot of `owner`'s: its id and API key.
async fn webhook_bot(owner: &Api) -> (u64, String) {
    named_webhook_bot(owner, "Deploy Hooks", "hooks").await
}

async fn named_webhook_bot(owner: &Api, full_name: &str, short_name: &str) -> (u64, String) {
    let (status, body) = owner
        .post(
            "/bots",
            &[
                ("full_name", full_name),
                ("short_name", short_name),
                ("bot_type", "2"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (
        body["user_id"].as_u64().unwrap(),
        body["api_key"].as_str().unwrap().to_owned(),
    )
}

/// A POST to the webhook URL with `query`, these headers and this body.
async fn hook(
    api: &Api,
    integration: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
    content_type: &str,
    body: String,
) -> (StatusCode, Value) {
    let mut req = api
        .client
        .post(format!("{}/external/{integration}", api.base))
        .query(query)
        .header("Content-Type", content_type)
        .body(body);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap())
}

#[tokio::test]
async fn a_github_push_becomes_a_message_from_the_bot_in_the_named_channel() {
    let c = chat().await;
    let (alice_id, alice) = &c.alice;
    let (bot_id, key) = webhook_bot(alice).await;
    let anonymous = c.server.api(None);
    let push = fixture("github/push_1_commit.json");
    let (status, body) = hook(
        &anonymous,
        "github",
        &[("api_key", &key), ("stream", "general")],
        &[("X-GitHub-Event", "push")],
        "application/json",
        push.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    let narrow = format!(r#"[{{"operator":"channel","operand":{}}}]"#, c.channel);
    let message = newest(alice, &narrow).await;
    assert_eq!(message["sender_id"], json!(bot_id));
    assert_eq!(message["subject"], "chronicle-demo / main");
    assert_eq!(message["client"], "ZulipGitHubWebhook");
    let content = message["content"].as_str().unwrap();
    assert!(content.starts_with("<p>ada <a href=\"https://github.com/ada/chronicle-demo/compare/1111111111aa...2222222222bb\">pushed</a> 1 commit to branch main.</p>"), "{content}");
    // The `topic` parameter wins, and the channel may be named by id.
    let (status, _) = hook(
        &anonymous,
        "github",
        &[
            ("api_key", &key),
            ("stream", &c.channel.to_string()),
            ("topic", "CI"),
        ],
        &[("X-GitHub-Event", "push")],
        "application/json",
        push.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(newest(alice, &narrow).await["subject"], "CI");
    // Without a channel, the owner gets it as a direct message.
    let (status, _) = hook(
        &anonymous,
        "github",
        &[("api_key", &key)],
        &[("X-GitHub-Event", "push")],
        "application/json",
        push.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let dm = newest(alice, r#"[{"operator":"is","operand":"dm"}]"#).await;
    assert_eq!(dm["sender_id"], json!(bot_id));
    let recipients: Vec<u64> = dm["display_recipient"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert!(recipients.contains(alice_id));
    // only_events filters by Zulip's event names.
    let before = newest(alice, &narrow).await["id"].clone();
    let (status, body) = hook(
        &anonymous,
        "github",
        &[
            ("api_key", &key),
            ("stream", "general"),
            ("only_events", r#"["pull_request*"]"#),
        ],
        &[("X-GitHub-Event", "push")],
        "application/json",
        push,
    )
    .await;
    assert_eq!(
        (status, body["result"].clone()),
        (StatusCode::OK, json!("success"))
    );
    assert_eq!(newest(alice, &narrow).await["id"], before);
}

#[tokio::test]
async fn webhooks_answer_zulips_errors() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (_, key) = webhook_bot(alice).await;
    let anonymous = c.server.api(None);
    let push = fixture("github/push_1_commit.json");
    type Case<'a> = (
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        String,
        StatusCode,
        Value,
    );
    let cases: Vec<Case> = vec![
        (
            &[("stream", "general")],
            &[("X-GitHub-Event", "push")],
            push.clone(),
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "msg": "Missing 'api_key' argument", "code": "REQUEST_VARIABLE_MISSING", "var_name": "api_key"}),
        ),
        (
            &[("api_key", "short")],
            &[("X-GitHub-Event", "push")],
            push.clone(),
            StatusCode::UNAUTHORIZED,
            json!({"result": "error", "msg": "Malformed API key", "code": "INVALID_API_KEY"}),
        ),
        (
            &[("api_key", "abcdefghijklmnopqrstuvwxyz123456")],
            &[("X-GitHub-Event", "push")],
            push.clone(),
            StatusCode::UNAUTHORIZED,
            json!({"result": "error", "msg": "Invalid API key", "code": "INVALID_API_KEY"}),
        ),
    ];
    for (query, headers, body, status, expected) in cases {
        let (got_status, got) = hook(
            &anonymous,
            "github",
            query,
            headers,
            "application/json",
            body,
        )
        .await;
        assert_eq!((got_status, got), (status, expected));
    }
    let with_key = [("api_key", key.as_str()), ("stream", "general")];
    let (status, body) = hook(
        &anonymous,
        "github",
        &with_key,
        &[],
        "application/json",
        push.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"result": "error", "msg": "Missing the HTTP event header 'X-GitHub-Event'", "code": "MISSING_HTTP_EVENT_HEADER", "header": "X-GitHub-Event"})
    );
    // The owner hears of it from the notification bot.
    let notice = newest(alice, r#"[{"operator":"is","operand":"dm"}]"#).await;
    assert_eq!(notice["sender_email"], "notification-bot@zulip.com");
    assert!(notice["content"]
        .as_str()
        .unwrap()
        .contains("is missing the HTTP X-GitHub-Event header."));
    let (status, body) = hook(
        &anonymous,
        "github",
        &with_key,
        &[("X-GitHub-Event", "marketplace_purchase")],
        "application/json",
        r#"{"action": "purchased"}"#.into(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({
            "result": "success",
            "msg": "The 'marketplace_purchase:purchased' event isn't currently supported by the GitHub webhook; ignoring",
            "webhook_name": "GitHub",
            "event_type": "marketplace_purchase:purchased",
            "code": "UNSUPPORTED_WEBHOOK_EVENT_TYPE",
        })
    );
    let (status, body) = hook(
        &anonymous,
        "github",
        &with_key,
        &[("X-GitHub-Event", "push")],
        "application/json",
        "{not json".into(),
    )
    .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (StatusCode::BAD_REQUEST, json!("Malformed JSON"))
    );
    let (status, body) = hook(
        &anonymous,
        "github",
        &with_key,
        &[("X-GitHub-Event", "push")],
        "application/json",
        "{}".into(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "ANOMALOUS_WEBHOOK_PAYLOAD");
    assert_eq!(
        body["msg"],
        "Unable to parse request: Did GitHub generate this event?"
    );
    let (status, _) = hook(
        &anonymous,
        "no_such_integration",
        &with_key,
        &[],
        "application/json",
        "{}".into(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A channel by id that does not exist is an error; by name, the owner is told instead.
    let (status, body) = hook(
        &anonymous,
        "github",
        &[("api_key", &key), ("stream", "999")],
        &[("X-GitHub-Event", "push")],
        "application/json",
        push.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "STREAM_DOES_NOT_EXIST");
    // Another bot: the owner's notices come at most once a minute per bot.
    let (_, other_key) = named_webhook_bot(alice, "Other Hooks", "other-hooks").await;
    let (status, body) = hook(
        &anonymous,
        "github",
        &[("api_key", &other_key), ("stream", "nowhere")],
        &[("X-GitHub-Event", "push")],
        "application/json",
        push,
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"result": "success", "msg": ""}))
    );
    let notice = newest(alice, r#"[{"operator":"is","operand":"dm"}]"#).await;
    assert_eq!(notice["sender_email"], "notification-bot@zulip.com");
    assert!(notice["content"]
        .as_str()
        .unwrap()
        .contains("tried to send a message to channel"));
}

#[tokio::test]
async fn slack_style_senders_post_form_payloads_and_webhook_bots_use_nothing_else() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (bot_id, key) = webhook_bot(alice).await;
    let anonymous = c.server.api(None);
    let payload = fixture("slack_incoming/text.json");
    let form = serde_urlencoded::to_string([("payload", payload.as_str())]).unwrap();
    let (status, body) = hook(
        &anonymous,
        "slack_incoming",
        &[("api_key", &key), ("stream", "general")],
        &[],
        "application/x-www-form-urlencoded",
        form,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"result": "success", "msg": "", "ok": true}));
    let narrow = format!(r#"[{{"operator":"channel","operand":{}}}]"#, c.channel);
    let message = newest(alice, &narrow).await;
    assert_eq!(message["sender_id"], json!(bot_id));
    assert_eq!(message["subject"], "deploys");
    assert_eq!(
        message["content"],
        "<p>Build 118 of chronicle-demo finished.</p>"
    );
    // Errors past authentication come in Slack's shape.
    let (status, body) = hook(
        &anonymous,
        "slack_incoming",
        &[("api_key", &key), ("stream", "general")],
        &[],
        "text/plain",
        String::new(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"ok": false, "error": "Missing 'payload' argument"})
    );
    // The bot's key opens nothing but sending messages.
    let (_, me) = alice.get(&format!("/users/{bot_id}"), &[]).await;
    let email = me["user"]["email"].as_str().unwrap().to_owned();
    let bot_api = Api {
        client: alice.client.clone(),
        base: alice.base.clone(),
        creds: Some(crate::support::Creds {
            email,
            key: key.clone(),
        }),
    };
    let (status, body) = bot_api.get("/users/me", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(
        body["msg"],
        "This API is not available to incoming webhook bots."
    );
}

#[tokio::test]
async fn grafana_alerts_are_filtered_one_by_one() {
    let c = chat().await;
    let (_, alice) = &c.alice;
    let (_, key) = webhook_bot(alice).await;
    let anonymous = c.server.api(None);
    let mut payload: Value =
        serde_json::from_str(&fixture("grafana/unified_resolved.json")).unwrap();
    let mut firing = payload["alerts"][0].clone();
    firing["status"] = json!("firing");
    firing["labels"]["alertname"] = json!("CpuHot");
    payload["alerts"].as_array_mut().unwrap().push(firing);
    let (status, body) = hook(
        &anonymous,
        "grafana",
        &[
            ("api_key", &key),
            ("stream", "general"),
            ("only_events", r#"["firing"]"#),
        ],
        &[],
        "application/json",
        payload.to_string(),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"result": "success", "msg": ""}))
    );
    let narrow = format!(r#"[{{"operator":"channel","operand":{}}}]"#, c.channel);
    let fetched = newest_messages(alice, &narrow, 5).await;
    let topics: Vec<&str> = fetched
        .iter()
        .map(|m| m["subject"].as_str().unwrap())
        .collect();
    assert_eq!(topics, ["[CpuHot]"]);
}

/// Zulip's own fixtures for the integrations Chronicle serves, and what Zulip's tests expect of
/// each: the topic and the message, an event ignored, or the error
/// (`tests/fixtures/webhooks/zulip/<integration>/expected.json`, from Zulip's test suite).
/// Each goes through the server as the service would send it.
#[tokio::test]
async fn zulips_fixtures_give_the_messages_zulips_tests_expect() {
    // Some two hundred requests a minute from one person: no rate limit here.
    let c = crate::messages::chat_with(&["--rate-limit-user", "0"]).await;
    let (_, alice) = &c.alice;
    let anonymous = c.server.api(None);
    let narrow = format!(r#"[{{"operator":"channel","operand":{}}}]"#, c.channel);
    // The newest message of the channel but `from_last` (0: the newest).
    let raw_from_last = |from_last: usize| {
        let narrow = narrow.clone();
        async move {
            let n = (from_last + 1).to_string();
            let body = crate::messages::fetch(
                alice,
                &[
                    ("anchor", "newest"),
                    ("num_before", &n),
                    ("num_after", "0"),
                    ("narrow", &narrow),
                    ("apply_markdown", "false"),
                ],
            )
            .await;
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            messages
                .len()
                .checked_sub(from_last + 1)
                .and_then(|i| messages.get(i).cloned())
                .unwrap_or(Value::Null)
        }
    };
    let raw_newest = || raw_from_last(0);
    let root = format!(
        "{}/tests/fixtures/webhooks/zulip",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut integrations: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.contains('.'))
        .collect();
    integrations.sort();
    let mut checked = 0;
    for integration in &integrations {
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{root}/{integration}/expected.json")).unwrap(),
        )
        .unwrap();
        // A bot of its own, as an organization sets each integration up (the notices to its
        // owner are one a minute per bot).
        let (bot_id, key) =
            named_webhook_bot(alice, &format!("{integration} hooks"), integration).await;
        let (_, bot) = alice.get(&format!("/users/{bot_id}"), &[]).await;
        let bot_email = bot["user"]["email"].as_str().unwrap().to_owned();
        // The people an integration's messages mention (`{key}` in them becomes the id).
        let mut ids: Vec<(String, u64)> = Vec::new();
        for person in expected["people"].as_array().cloned().unwrap_or_default() {
            let email = person["email"].as_str().unwrap();
            let id = match ids.iter().find(|_| false) {
                Some(_) => unreachable!(),
                None => {
                    let (_, users) = alice.get("/users", &[]).await;
                    let known = users["members"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|u| u["email"] == email)
                        .and_then(|u| u["user_id"].as_u64());
                    match known {
                        Some(id) => id,
                        None => {
                            c.server
                                .create_member(email, person["full_name"].as_str().unwrap())
                                .await
                                .0
                        }
                    }
                }
            };
            ids.push((person["key"].as_str().unwrap().to_owned(), id));
        }
        let cases = expected
            .get("cases")
            .unwrap_or(&expected)
            .as_array()
            .unwrap()
            .clone();
        for mut case in cases {
            let what = format!("{integration} {}", case["test"]);
            if case["method"] == "HEAD" {
                // The service checking the address: 200, before any key is looked at.
                let resp = anonymous
                    .client
                    .head(format!("{}/external/{integration}", anonymous.base))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(resp.status(), StatusCode::OK, "{what}");
                checked += 1;
                continue;
            }
            if let Some(message) = case["message"].as_str() {
                let mut message = message.to_owned();
                for (key, id) in &ids {
                    message = message.replace(&format!("{{{key}}}"), &id.to_string());
                }
                case["message"] = json!(message);
            }
            let text = match (case["fixture"].as_str(), case.get("payload")) {
                (Some(f), _) => {
                    std::fs::read_to_string(format!("{root}/{integration}/{f}")).unwrap()
                }
                (None, Some(payload)) => payload.to_string(),
                (None, None) => String::new(),
            };
            let form = "application/x-www-form-urlencoded";
            let (content_type, body) = match case["body"].as_str().unwrap() {
                "json" => ("application/json", text),
                // Some services label their JSON as a form (Opsgenie, in Zulip's tests).
                "json-as-form" => (form, text),
                "form-file" => (form, text),
                "form-payload" => (
                    form,
                    serde_urlencoded::to_string([("payload", text.as_str())]).unwrap(),
                ),
                // A form labelled as JSON (Librato, in Zulip's tests of a bad request).
                "form-payload-as-json" => (
                    "application/json",
                    serde_urlencoded::to_string([("payload", text.as_str())]).unwrap(),
                ),
                "form" => (
                    form,
                    serde_urlencoded::to_string(
                        case["form"]
                            .as_object()
                            .unwrap()
                            .iter()
                            .map(|(k, v)| (k.as_str(), v.as_str().unwrap()))
                            .collect::<Vec<_>>(),
                    )
                    .unwrap(),
                ),
                other => panic!("{what}: body {other}"),
            };
            let basic = case["basic_auth"] == true;
            let mut query: Vec<(String, String)> = vec![("stream".into(), "general".into())];
            if !basic {
                query.push(("api_key".into(), key.clone()));
            }
            for (k, v) in case["params"].as_object().unwrap() {
                query.push((k.clone(), v.as_str().unwrap().to_owned()));
            }
            let query: Vec<(&str, &str)> = query
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let mut headers: Vec<(String, String)> = case["headers"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect();
            if basic {
                use base64::Engine;
                let credentials =
                    base64::engine::general_purpose::STANDARD.encode(format!("{bot_email}:{key}"));
                headers.push(("Authorization".into(), format!("Basic {credentials}")));
            }
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let before = raw_newest().await["id"].clone();
            let (status, answer) = hook(
                &anonymous,
                integration,
                &query,
                &headers,
                content_type,
                body,
            )
            .await;
            if let Some(error) = case["error"].as_str() {
                assert_eq!(
                    (status, answer["msg"].as_str().unwrap_or_default()),
                    (StatusCode::BAD_REQUEST, error),
                    "{what}"
                );
                assert_eq!(raw_newest().await["id"], before, "{what}");
                if let Some(notice) = case["owner_notice"].as_str() {
                    let told = newest(alice, r#"[{"operator":"is","operand":"dm"}]"#).await;
                    let text = told["content"].as_str().unwrap_or_default();
                    assert!(text.contains(notice), "{what}: the owner is told: {told}");
                }
            } else if case["message"].is_null() {
                assert_eq!(status, StatusCode::OK, "{what}: {answer}");
                if case["answers_bot"] == true {
                    assert_eq!(
                        (&answer["email"], &answer["id"], &answer["full_name"]),
                        (
                            &json!(bot_email),
                            &json!(bot_id),
                            &json!(format!("{integration} hooks"))
                        ),
                        "{what}"
                    );
                }
                assert_eq!(
                    raw_newest().await["id"],
                    before,
                    "{what}: nothing is posted"
                );
            } else {
                assert_eq!(status, StatusCode::OK, "{what}: {answer}");
                let from_last = case["from_last"].as_u64().unwrap_or(0) as usize;
                let message = raw_from_last(from_last).await;
                assert_eq!(
                    (&message["subject"], &message["content"]),
                    (&case["topic"], &case["message"]),
                    "{what}"
                );
                assert_eq!(message["sender_id"], json!(bot_id), "{what}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 250, "only {checked} cases");
}

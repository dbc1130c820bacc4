//! Missed-message emails, end to end through the outbox (no relay configured): who gets one,
//! when, and that a restart neither forgets nor repeats one. (The same through a real SMTP
//! server: tests/compat/test_notifications.py.)

use crate::messages::chat_with;
use crate::realtime::register;
use crate::support::Api;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::time::Duration;

/// These tests watch the notifier's state closely: no rate limit on their requests.
const UNLIMITED: &[&str] = &["--rate-limit-user", "0"];

/// The outbox's emails of `kind` (`missed_messages`, `login`): file name and text, oldest first.
fn mails(dir: &std::path::Path, kind: &str) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir.join("outbox")) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = entries
        .map(|e| e.unwrap())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .contains(&format!("-{kind}-"))
        })
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            // Quoted-printable soft line breaks joined again.
            (
                e.file_name().to_string_lossy().into_owned(),
                text.replace("=\r\n", ""),
            )
        })
        .collect();
    out.sort();
    out
}

/// Waits (up to a minute) until `check` holds.
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..300 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out waiting until {what}");
}

/// The notifier's area of the admin dump.
async fn notifier_state(owner: &Api) -> Value {
    let (status, dump) = owner.get("/admin/projections", &[]).await;
    assert_eq!(status, StatusCode::OK, "{dump}");
    dump["projections"]["notifications"].clone()
}

/// Whether nothing is pending or queued any more.
async fn settled(owner: &Api) -> bool {
    let state = notifier_state(owner).await;
    state["pending"].as_object().is_some_and(|p| p.is_empty())
        && state["queued_emails"]
            .as_array()
            .is_some_and(|q| q.is_empty())
}

async fn set(api: &Api, name: &str, value: &str) {
    let (status, body) = api.call(Method::PATCH, "/settings", &[(name, value)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

async fn dm(from: &Api, to: u64, text: &str) -> u64 {
    let (status, body) = from
        .post(
            "/messages",
            &[
                ("type", "direct"),
                ("to", &format!("[{to}]")),
                ("content", text),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["id"].as_u64().unwrap()
}

fn sent_at(name: &str) -> i64 {
    name.split('-').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_direct_message_to_someone_away_is_mailed_once_after_their_batching_period() {
    let chat = chat_with(UNLIMITED).await;
    let (bob_id, bob) = &chat.bob;
    let alice = &chat.alice.1;
    let owner = chat.server.api(Some(&chat.server.owner()));
    set(bob, "email_notifications_batching_period_seconds", "2").await;
    let before = chronicle::time::now_ms();
    let id = dm(alice, *bob_id, "Lunch at noon?").await;
    let dir = chat.server.dir.clone();
    until("the email is written", || {
        let dir = dir.clone();
        async move { !mails(&dir, "missed_messages").is_empty() }
    })
    .await;
    let found = mails(&dir, "missed_messages");
    assert_eq!(found.len(), 1);
    let (name, mail) = &found[0];
    assert!(
        // (Zulip's message times are whole seconds.)
        sent_at(name) >= before / 1000 * 1000 + 2000,
        "not before the batching period"
    );
    assert!(
        mail.contains("To: \"Bob Brown\" <bob@example.com>"),
        "{mail}"
    );
    assert!(mail.contains("Subject: DMs with Alice Adams"), "{mail}");
    assert!(mail.contains("Lunch at noon?"), "{mail}");
    assert!(mail.contains("Content-Type: text/html"), "{mail}");
    assert!(
        mail.contains(&format!("/#narrow/dm/{},{bob_id}/near/{id}", chat.alice.0)),
        "{mail}"
    );
    // The unsubscribe link works, once, without signing in.
    let unsubscribe = mail
        .lines()
        .find_map(|l| l.strip_prefix("List-Unsubscribe: <"))
        .unwrap()
        .trim_end_matches('>')
        .to_owned();
    assert!(unsubscribe.contains("/accounts/unsubscribe/missed_messages/"));
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client.get(&unsubscribe).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let forged = unsubscribe.replace("missed_messages", "digest");
    let page = client
        .get(&forged)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("not valid"), "a key is for one kind of email");
    let (_, state) = register(bob, &[("fetch_event_types", "[\"user_settings\"]")]).await;
    assert_eq!(
        state["user_settings"]["enable_offline_email_notifications"],
        false
    );
    // Everything sent is recorded: a restart sends nothing again.
    until("the notifier settles", || settled(&owner)).await;
    assert_eq!(notifier_state(&owner).await["emails_sent"], 1);
    let server = chat.server.stop().restart_with(UNLIMITED);
    let owner = server.api(Some(&server.owner()));
    assert!(settled(&owner).await);
    assert_eq!(mails(&server.dir, "missed_messages").len(), 1);
}

#[tokio::test]
async fn a_message_read_before_the_deadline_is_not_mailed() {
    let chat = chat_with(UNLIMITED).await;
    let (bob_id, bob) = &chat.bob;
    let owner = chat.server.api(Some(&chat.server.owner()));
    set(bob, "email_notifications_batching_period_seconds", "2").await;
    let id = dm(&chat.alice.1, *bob_id, "read me").await;
    until("the notice is recorded", || {
        let owner = &owner;
        async move {
            notifier_state(owner).await["pending"][bob_id.to_string()]
                .as_array()
                .is_some_and(|p| !p.is_empty())
        }
    })
    .await;
    let (status, body) = bob
        .post(
            "/messages/flags",
            &[
                ("messages", &format!("[{id}]")),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    until("the notice is settled", || settled(&owner)).await;
    assert!(mails(&chat.server.dir, "missed_messages").is_empty());
    assert_eq!(notifier_state(&owner).await["emails_sent"], 0);
}

#[tokio::test]
async fn someone_at_a_client_gets_no_email_and_the_switch_turns_email_off() {
    let chat = chat_with(UNLIMITED).await;
    let (bob_id, bob) = &chat.bob;
    let (carol_id, carol) = &chat.carol;
    let alice = &chat.alice.1;
    let owner = chat.server.api(Some(&chat.server.owner()));
    for who in [bob, carol] {
        set(who, "email_notifications_batching_period_seconds", "1").await;
    }
    // Bob is at a client: a queue that hears of messages, and an active presence report.
    let (_queue, _) = register(bob, &[]).await;
    let (status, body) = bob
        .post("/users/me/presence", &[("status", "active")])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    dm(alice, *bob_id, "you are here").await;
    // Carol is away, but has switched email about direct messages off; then on again.
    set(carol, "enable_offline_email_notifications", "false").await;
    dm(alice, *carol_id, "first").await;
    set(carol, "enable_offline_email_notifications", "true").await;
    dm(alice, *carol_id, "second").await;
    let dir = chat.server.dir.clone();
    until("carol's email is written", || {
        let dir = dir.clone();
        async move { !mails(&dir, "missed_messages").is_empty() }
    })
    .await;
    until("the notifier settles", || settled(&owner)).await;
    let found = mails(&dir, "missed_messages");
    assert_eq!(found.len(), 1, "{found:?}");
    let mail = &found[0].1;
    assert!(mail.contains("carol@example.com"), "{mail}");
    assert!(mail.contains("second") && !mail.contains("first"), "{mail}");
}

#[tokio::test]
async fn a_restart_before_the_deadline_sends_the_email_once() {
    let chat = chat_with(UNLIMITED).await;
    let (bob_id, bob) = &chat.bob;
    set(bob, "email_notifications_batching_period_seconds", "3").await;
    let owner = chat.server.api(Some(&chat.server.owner()));
    dm(&chat.alice.1, *bob_id, "before the restart").await;
    until("the notice is recorded", || {
        let owner = &owner;
        async move {
            notifier_state(owner).await["pending"][bob_id.to_string()]
                .as_array()
                .is_some_and(|p| !p.is_empty())
        }
    })
    .await;
    // A clean stop with the notice pending, then a crash right after a message.
    let alice_creds = chat.alice.1.creds.clone().unwrap();
    let server = chat.server.stop().restart_with(UNLIMITED);
    let alice = server.api(Some(&alice_creds));
    let dir = server.dir.clone();
    until("the first email is written", || {
        let dir = dir.clone();
        async move { mails(&dir, "missed_messages").len() == 1 }
    })
    .await;
    dm(&alice, *bob_id, "before the crash").await;
    let server = server.kill9().restart_with(UNLIMITED);
    let owner = server.api(Some(&server.owner()));
    until("the second email is written", || {
        let dir = dir.clone();
        async move { mails(&dir, "missed_messages").len() >= 2 }
    })
    .await;
    until("the notifier settles", || settled(&owner)).await;
    let found = mails(&dir, "missed_messages");
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].1.contains("before the restart"));
    assert!(found[1].1.contains("before the crash"));
}

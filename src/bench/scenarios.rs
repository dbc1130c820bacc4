//! The scenarios. Each returns rows of (Chronicle figure, same-run baseline, ratio).

use super::load::{client, drive, Stats};
use super::Row;
use crate::events::{Envelope, Event, Role, SCHEMA_VERSION};
use crate::ids::{Seq, UserId};
use crate::server::{serve_with, Fatal, Running, ServeConfig};
use crate::store::{read_envelopes, EventLog, SledLog};
use reqwest::Client;
use std::time::{Duration, Instant};

/// A Chronicle server in this process, on a temporary data directory.
pub(super) struct InProcess {
    running: Running,
    thread: std::thread::JoinHandle<Result<(), String>>,
    pub(super) owner_key: String,
    _tmp: tempfile::TempDir,
}

pub(super) const OWNER: &str = "owner@bench.local";

impl InProcess {
    fn start() -> Result<InProcess, Fatal> {
        let tmp = tempfile::tempdir()?;
        InProcess::start_in(tmp)
    }

    /// Serves `tmp/data` (which may hold a seeded organization).
    pub(super) fn start_in(tmp: tempfile::TempDir) -> Result<InProcess, Fatal> {
        let dir = tmp.path().join("data");
        let config = ServeConfig {
            data_dir: dir.clone(),
            bind: "127.0.0.1:0".into(),
            owner_email: OWNER.into(),
            realm_name: "Bench".into(),
            external_url: None,
            heartbeat: None,
            mail: Default::default(),
            email_gateway: None,
            push: None,
            video: Default::default(),
            retention_interval: None,
            snapshot_every: crate::server::DEFAULT_SNAPSHOT_EVERY,
            // The load generator is one client sending thousands of requests a second.
            rate_limits: crate::http::rate_limit::Limits::unlimited(),
            client_timeouts: Default::default(),
            uploads: Default::default(),
            cluster: None,
            advertise_url: None,
            check_whole_log: false,
            min_free_space_mib: None,
            outgoing_allow: Vec::new(),
            metrics_bind: None,
            metrics_token: None,
            identity: Default::default(),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            actix_web::rt::System::new()
                .block_on(serve_with(config, move |running| {
                    let _ = tx.send(running);
                }))
                .map(drop)
                .map_err(|e| e.to_string())
        });
        let running = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(running) => running,
            // The server gave up before it was ready: say why.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let reason = match thread.join() {
                    Ok(Err(e)) => e,
                    Ok(Ok(())) => "it stopped".to_owned(),
                    Err(_) => "it panicked".to_owned(),
                };
                return Err(format!("the in-process server did not start: {reason}").into());
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                return Err("the in-process server did not start within 60 s".into());
            }
        };
        let zuliprc = std::fs::read_to_string(dir.join("zuliprc"))?;
        let owner_key = zuliprc
            .lines()
            .find_map(|l| l.strip_prefix("key="))
            .ok_or("no key in zuliprc")?
            .to_owned();
        Ok(InProcess {
            running,
            thread,
            owner_key,
            _tmp: tmp,
        })
    }

    pub(super) fn api(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.running.url)
    }

    pub(super) async fn stop(self) -> Result<(), Fatal> {
        self.running.handle.stop(true).await;
        let joined = tokio::task::spawn_blocking(move || self.thread.join()).await?;
        joined.map_err(|_| "server thread panicked")??;
        Ok(())
    }
}

pub(super) fn row(
    scenario: &str,
    case: &str,
    stats: &Stats,
    unit: &str,
    baseline: Option<f64>,
    label: &str,
) -> Row {
    Row {
        scenario: scenario.into(),
        case: case.into(),
        value: stats.per_second,
        unit: unit.into(),
        p50_ms: Some(stats.p50_ms),
        p99_ms: Some(stats.p99_ms),
        baseline,
        baseline_label: label.into(),
        ratio: baseline.map(|b| stats.per_second / b.max(1e-9)),
        higher_is_better: true,
        samples: stats.ok,
        errors: stats.errors,
    }
}

/// Scenario 1: an authenticated cheap read vs a bare actix-web JSON route.
pub async fn http_ceiling(quick: bool) -> Result<Vec<Row>, Fatal> {
    let (budget, deadline) = if quick { (3_000, 5) } else { (60_000, 30) };
    let deadline = Duration::from_secs(deadline);
    let concurrency = 32;

    let bare = actix_web::HttpServer::new(|| {
        actix_web::App::new().route(
            "/api/v1/users/me",
            actix_web::web::get().to(|| async {
                actix_web::HttpResponse::Ok()
                    .json(serde_json::json!({"result": "success", "msg": "", "user_id": 1}))
            }),
        )
    })
    .bind("127.0.0.1:0")?;
    let bare_addr = bare.addrs()[0];
    let bare = bare.run();
    let bare_handle = bare.handle();
    let bare_thread = std::thread::spawn(move || actix_web::rt::System::new().block_on(bare));

    let http = client()?;
    let url = format!("http://{bare_addr}/api/v1/users/me");
    let (base, _) = drive(concurrency, budget, deadline, |_| (), {
        let http = http.clone();
        move |()| {
            let http = http.clone();
            let url = url.clone();
            async move {
                let ok = matches!(http.get(&url).send().await, Ok(r) if r.status().is_success());
                ((), ok)
            }
        }
    })
    .await;
    bare_handle.stop(true).await;
    let _ = tokio::task::spawn_blocking(move || bare_thread.join()).await;

    let server = InProcess::start()?;
    let url = server.api("/users/me");
    let key = server.owner_key.clone();
    let (ours, _) = drive(concurrency, budget, deadline, |_| (), {
        let http = http.clone();
        move |()| {
            let http = http.clone();
            let url = url.clone();
            let key = key.clone();
            async move {
                let sent = http.get(&url).basic_auth(OWNER, Some(&key)).send().await;
                ((), matches!(sent, Ok(r) if r.status().is_success()))
            }
        }
    })
    .await;
    server.stop().await?;
    let mut baseline_row = row("http", "bare actix JSON route", &base, "req/s", None, "");
    baseline_row.errors = base.errors;
    Ok(vec![
        baseline_row,
        row(
            "http",
            "GET /users/me (32 clients)",
            &ours,
            "req/s",
            Some(base.per_second),
            "bare actix route, same load",
        ),
    ])
}

/// The fsync rate of this disk: serial sled insert + flush for `seconds`.
fn sled_flush_rate(seconds: f64) -> Result<f64, Fatal> {
    let tmp = tempfile::tempdir()?;
    let db = sled::Config::new()
        .path(tmp.path())
        .flush_every_ms(None)
        .open()?;
    let value = [7u8; 200];
    let started = Instant::now();
    let mut n: u64 = 0;
    while started.elapsed().as_secs_f64() < seconds && n < 1_000_000 {
        db.insert(n.to_be_bytes(), &value[..])?;
        db.flush()?;
        n += 1;
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
}

/// Scenario 2: durable writes at several concurrencies vs the disk's serial fsync rate.
///
/// Each client is its own user, subscribed (like every other client) to one channel, and sends
/// `POST /messages` to it: a channel message with one copy per subscriber.
pub async fn durable_writes(quick: bool) -> Result<Vec<Row>, Fatal> {
    let levels: &[usize] = if quick {
        &[1, 16, 64]
    } else {
        &[1, 16, 32, 64, 256]
    };
    let (budget, seconds) = if quick {
        (3_000u64, 2u64)
    } else {
        (200_000, 8)
    };
    let users = levels.iter().copied().max().unwrap_or(1);
    let server = InProcess::start()?;
    let http = client()?;

    // One account per client (hashing passwords is the slow part of setup, not of the test).
    let mut creds = Vec::with_capacity(users);
    for chunk in (0..users).collect::<Vec<_>>().chunks(8) {
        let mut pending = Vec::new();
        for &i in chunk {
            let http = http.clone();
            let create = server.api("/users");
            let fetch = server.api("/fetch_api_key");
            let owner_key = server.owner_key.clone();
            pending.push(tokio::spawn(async move {
                let email = format!("writer{i}@bench.local");
                let form = [
                    ("email", email.as_str()),
                    ("password", "bench-password"),
                    ("full_name", "Writer"),
                ];
                http.post(&create)
                    .basic_auth(OWNER, Some(&owner_key))
                    .form(&form)
                    .send()
                    .await?
                    .error_for_status()?;
                let form = [("username", email.as_str()), ("password", "bench-password")];
                let body: serde_json::Value =
                    http.post(&fetch).form(&form).send().await?.json().await?;
                let key = body["api_key"].as_str().unwrap_or_default().to_owned();
                Ok::<_, reqwest::Error>((email, key))
            }));
        }
        for task in pending {
            creds.push(task.await??);
        }
    }

    let baseline = sled_flush_rate(if quick { 1.0 } else { 4.0 })?;
    let mut rows = vec![Row {
        scenario: "writes".into(),
        case: "sled insert+flush, serial".into(),
        value: baseline,
        unit: "flushes/s".into(),
        p50_ms: None,
        p99_ms: None,
        baseline: None,
        baseline_label: String::new(),
        ratio: None,
        higher_is_better: true,
        samples: 0,
        errors: 0,
    }];
    // One channel with every client subscribed.
    let subscribers: Vec<String> = {
        let me = server.api("/users/me");
        let mut ids = Vec::new();
        for (email, key) in &creds {
            let body: serde_json::Value = http
                .get(&me)
                .basic_auth(email, Some(key))
                .send()
                .await?
                .json()
                .await?;
            ids.push(body["user_id"].to_string());
        }
        ids
    };
    let form = [
        ("name", "bench".to_owned()),
        ("subscribers", format!("[{}]", subscribers.join(","))),
    ];
    http.post(server.api("/channels/create"))
        .basic_auth(OWNER, Some(&server.owner_key))
        .form(&form)
        .send()
        .await?
        .error_for_status()?;
    let url = server.api("/messages");
    for &clients in levels {
        let current = creds.clone();
        let (stats, _) = drive(
            clients,
            budget,
            Duration::from_secs(seconds),
            |i| (current[i].clone(), i, 0u64),
            {
                let http = http.clone();
                let url = url.clone();
                move |((email, key), i, n): ((String, String), usize, u64)| {
                    let http = http.clone();
                    let url = url.clone();
                    async move {
                        let topic = format!("load {}", i % 10);
                        let content =
                            format!("Message {n} from writer {i}, with some **Markdown**.");
                        let form = [
                            ("type", "stream"),
                            ("to", "bench"),
                            ("topic", &topic),
                            ("content", &content),
                        ];
                        let sent = http
                            .post(&url)
                            .basic_auth(&email, Some(&key))
                            .form(&form)
                            .send()
                            .await;
                        let ok = matches!(sent, Ok(r) if r.status().is_success());
                        (((email, key), i, n + 1), ok)
                    }
                }
            },
        )
        .await;
        rows.push(row(
            "writes",
            &format!(
                "POST /messages, {clients} sender{} ({users} subscribers)",
                if clients == 1 { "" } else { "s" }
            ),
            &stats,
            "writes/s",
            Some(baseline),
            "sled insert+flush, serial",
        ));
    }
    server.stop().await?;
    Ok(rows)
}

fn user_created(i: u64) -> Event {
    Event::UserCreated {
        user_id: UserId(i),
        email: format!("user{i}@example.com"),
        full_name: format!("User Number {i}"),
        role: Role::Member,
        bot_type: None,
        bot_owner_id: None,
        timezone: "Europe/Berlin".into(),
        can_create_users: false,
        // A realistic PHC string length, not a real hash.
        password_hash: Some(format!(
            "$argon2id$v=19$m=19456,t=2,p=1${:022}${:043}",
            i, i
        )),
        api_key_nonce: format!("{i:032x}"),
        bot: None,
    }
}

/// A deterministic mix resembling a chat server's life: accounts first, one busy channel with
/// 100 subscribers, then mostly messages (channel and direct), with read flags, reactions,
/// typing, topic policies, subscription churn and key regenerations in between.
fn generated_event(i: u64, users: u64) -> Event {
    use crate::events::{
        ChannelPermissions, GroupSetting, MessageFlag, NewSubscription, Recipient, TopicsPolicy,
        TypingTarget,
    };
    use crate::ids::{ChannelId, GroupId, MessageId};
    if i == 1 {
        return Event::RealmCreated {
            name: "Bench".into(),
            description: "Generated".into(),
        };
    }
    if i <= users + 1 {
        return user_created(i - 1);
    }
    let channel_id = ChannelId(1);
    let nobody = GroupSetting::Group(GroupId(0));
    if i == users + 2 {
        return Event::ChannelCreated {
            channel_id,
            name: "general".into(),
            description: "Busy".into(),
            invite_only: false,
            is_web_public: false,
            history_public_to_subscribers: true,
            message_retention_days: None,
            folder_id: None,
            topics_policy: TopicsPolicy::Inherit,
            is_default: true,
            permissions: Box::new(ChannelPermissions {
                can_add_subscribers_group: nobody.clone(),
                can_remove_subscribers_group: nobody.clone(),
                can_administer_channel_group: nobody.clone(),
                can_delete_any_message_group: nobody.clone(),
                can_delete_own_message_group: nobody.clone(),
                can_move_messages_out_of_channel_group: nobody.clone(),
                can_move_messages_within_channel_group: nobody.clone(),
                can_send_message_group: nobody.clone(),
                can_subscribe_group: nobody.clone(),
                can_resolve_topics_group: nobody.clone(),
                can_create_topic_group: nobody,
            }),
        };
    }
    if i == users + 3 {
        return Event::Subscribed {
            channel_id,
            subscriptions: (1..=100.min(users))
                .map(|u| NewSubscription {
                    user_id: UserId(u),
                    color: "#76ce90".into(),
                })
                .collect(),
        };
    }
    let user_id = UserId(1 + (i * 7919) % 100.min(users));
    let message_id = MessageId(i);
    let topic = format!("topic {}", i % 37);
    // Someone outside the channel's first hundred subscribers, for subscription churn.
    let churner = UserId(users - (i / 40) % 50);
    match i % 20 {
        0..=10 => Event::MessageSent {
            message_id,
            sender_id: user_id,
            recipient: Recipient::Channel { channel_id, topic },
            content: format!("Message number {i}, about **something** worth saying.").into(),
            rendered_content: format!(
                "<p>Message number {i}, about <strong>something</strong> worth saying.</p>"
            )
            .into(),
            client: "bench".into(),
            is_me_message: false,
            mentioned: Vec::new(),
            stream_wildcard: false,
            topic_wildcard: false,
            sender_queue: None,
            alerted: Vec::new(),
        },
        11 => Event::MessageSent {
            message_id,
            sender_id: user_id,
            recipient: Recipient::Direct {
                user_ids: vec![UserId(1), user_id],
            },
            content: "a direct message".into(),
            rendered_content: "<p>a direct message</p>".into(),
            client: "bench".into(),
            is_me_message: false,
            mentioned: Vec::new(),
            stream_wildcard: false,
            topic_wildcard: false,
            sender_queue: None,
            alerted: Vec::new(),
        },
        12 | 13 => Event::MessageFlagsChanged {
            user_id,
            flag: MessageFlag::Read,
            add: true,
            message_ids: (i.saturating_sub(40)..i).map(MessageId).collect(),
        },
        // A reaction to the channel message sent 14 events earlier (i % 20 == 0).
        14 => Event::ReactionAdded {
            message_id: MessageId(i - 14),
            user_id,
            emoji_name: "octopus".into(),
            emoji_code: "1f419".into(),
            reaction_type: crate::events::ReactionType::UnicodeEmoji,
        },
        15 => Event::TypingStarted {
            user_id,
            target: TypingTarget::Channel { channel_id, topic },
        },
        16 => Event::TypingStopped {
            user_id,
            target: TypingTarget::Channel { channel_id, topic },
        },
        17 => Event::TopicVisibilitySet {
            user_id,
            channel_id,
            topic,
            policy: crate::events::TopicPolicy::from_code((i % 4) as u8)
                .unwrap_or(crate::events::TopicPolicy::None),
        },
        18 if (i / 20) % 2 == 0 => Event::Subscribed {
            channel_id,
            subscriptions: vec![NewSubscription {
                user_id: churner,
                color: "#76ce90".into(),
            }],
        },
        18 => Event::Unsubscribed {
            channel_id,
            user_ids: vec![churner],
        },
        _ => Event::ApiKeyRegenerated {
            user_id,
            api_key_nonce: format!("{:032x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        },
    }
}

/// Scenario 3: what a user runs, `chronicle replay` in a process of its own on a generated
/// log, against a raw scan with decode and no fold of the same log opened afresh; plus the
/// space amplification of the log on disk.
pub fn replay(quick: bool) -> Result<Vec<Row>, Fatal> {
    let total: u64 = if quick { 50_000 } else { 1_000_000 };
    let users = 10_000.min(total / 2);
    let tmp = tempfile::tempdir()?;
    let log_dir = crate::server::Layout::new(tmp.path()).log();
    let mut encoded_bytes: u64 = 0;
    {
        let log = SledLog::open(&log_dir)?;
        let mut batch = Vec::with_capacity(10_000);
        let mut chain = crate::events::Chain::after(crate::events::GENESIS);
        for i in 1..=total {
            let env = Envelope {
                seq: Seq(i),
                at: 1_700_000_000_000 + i as i64,
                actor: Some(UserId(1)),
                schema_version: SCHEMA_VERSION,
                event: generated_event(i, users),
            };
            let record = chain.seal(&env)?;
            encoded_bytes += record.len() as u64;
            batch.push((Seq(i), record));
            if batch.len() == 10_000 {
                log.append_batch(&batch)?;
                batch.clear();
            }
        }
        log.append_batch(&batch)?;
        log.flush()?;
    }
    // Opened afresh, as a new process finds it (sled iterates a tree it has just written in
    // the same process more slowly); one untimed pass so that every timed pass reads from a
    // warm page cache.
    let log = SledLog::open(&log_dir)?;
    read_envelopes(&log, Seq(1)).for_each(drop);
    let started = Instant::now();
    let mut decoded = 0u64;
    for env in read_envelopes(&log, Seq(1)) {
        env?;
        decoded += 1;
    }
    let raw_rate = decoded as f64 / started.elapsed().as_secs_f64();
    let disk = log.size_on_disk()? as f64;
    drop(log);
    let fold_rate = replay_in_a_process(tmp.path(), total)?;
    let plain = |case: &str, value: f64, unit: &str, baseline: Option<f64>, label: &str| Row {
        scenario: "replay".into(),
        case: case.into(),
        value,
        unit: unit.into(),
        p50_ms: None,
        p99_ms: None,
        baseline,
        baseline_label: label.into(),
        ratio: baseline.map(|b| value / b.max(1e-9)),
        higher_is_better: true,
        samples: 0,
        errors: 0,
    };
    Ok(vec![
        plain(
            &format!("raw scan + decode, {total} events"),
            raw_rate,
            "events/s",
            None,
            "",
        ),
        plain(
            &format!("chronicle replay (a process of its own), {total} events"),
            fold_rate,
            "events/s",
            Some(raw_rate),
            "raw scan + decode",
        ),
        plain(
            "log bytes on disk per encoded byte",
            disk / encoded_bytes as f64,
            "ratio",
            None,
            "",
        ),
    ])
}

/// Runs `chronicle replay --data-dir DIR` (through `$CHRONICLE_BENCH_SERVER_WRAPPER` when it
/// is set, to profile it) and returns the rate it reports, after checking that it folded
/// `total` events.
fn replay_in_a_process(dir: &std::path::Path, total: u64) -> Result<f64, Fatal> {
    match replay_of(dir)? {
        (events, seconds) if events as u64 == total => Ok(events / seconds.max(1e-9)),
        (events, _) => Err(format!("chronicle replay folded {events} events, not {total}").into()),
    }
}

/// `chronicle replay` of a data directory in a process of its own: (events, seconds).
pub(super) fn replay_of(dir: &std::path::Path) -> Result<(f64, f64), Fatal> {
    let output = super::sustained::server_command()?
        .arg("replay")
        .arg("--data-dir")
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    match (output.status.success(), field("events"), field("seconds")) {
        (true, Some(events), Some(seconds)) => Ok((events, seconds)),
        _ => Err(format!("chronicle replay failed ({}): {text}", output.status).into()),
    }
}

fn percentiles(mut samples: Vec<f64>) -> (f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.99))
}

fn latency_row(scenario: &str, case: &str, samples: Vec<f64>, errors: u64) -> Row {
    let count = samples.len() as u64;
    let (p50, p99) = percentiles(samples);
    Row {
        scenario: scenario.into(),
        case: case.into(),
        value: p99,
        unit: "ms p99".into(),
        p50_ms: Some(p50),
        p99_ms: Some(p99),
        baseline: None,
        baseline_label: String::new(),
        ratio: None,
        higher_is_better: false,
        samples: count,
        errors,
    }
}

impl Row {
    /// The same row, compared with a baseline of the same unit.
    fn against(mut self, baseline: &Row, label: &str) -> Row {
        self.baseline = Some(baseline.value);
        self.baseline_label = label.into();
        self.ratio = Some(self.value / baseline.value.max(1e-9));
        self
    }
}

/// Scenario 4: one message to a channel whose every subscriber has a parked long-poll: latency
/// from the moment the send request leaves to each delivery (deliveries can finish before the
/// sender has its response, so that is the fair starting line), against waking as many parked
/// requests of a bare actix route the same way.
pub async fn fan_out(quick: bool) -> Result<Vec<Row>, Fatal> {
    use super::seed::{seed, SeedSpec};
    let users = if quick { 100 } else { 1000 };
    let seeded = seed(&SeedSpec {
        users,
        channels: 1,
        subscribers_per_channel: 0,
        messages: 0,
    })?;
    let creds = seeded.users.clone();
    let server = InProcess::start_in(seeded.tmp)?;
    let http = Client::builder()
        .pool_max_idle_per_host(4096)
        .timeout(Duration::from_secs(60))
        .build()?;
    let mut queues = Vec::new();
    for (_, email, key) in &creds {
        let body: serde_json::Value = http
            .post(server.api("/register"))
            .basic_auth(email, Some(key))
            .form(&[
                ("event_types", r#"["message"]"#),
                ("fetch_event_types", "[]"),
            ])
            .send()
            .await?
            .json()
            .await?;
        queues.push(body["queue_id"].as_str().unwrap_or_default().to_owned());
    }
    let mut waiters = Vec::new();
    for ((_, email, key), queue) in creds.iter().zip(&queues) {
        let (http, url, email, key, queue) = (
            http.clone(),
            server.api("/events"),
            email.clone(),
            key.clone(),
            queue.clone(),
        );
        waiters.push(tokio::spawn(async move {
            let sent = http
                .get(&url)
                .basic_auth(&email, Some(&key))
                .query(&[("queue_id", queue.as_str()), ("last_event_id", "-1")])
                .send()
                .await;
            let arrived = Instant::now();
            (arrived, matches!(sent, Ok(r) if r.status().is_success()))
        }));
    }
    tokio::time::sleep(Duration::from_millis(if quick { 500 } else { 2000 })).await;
    let (_, owner_email, owner_key) = &creds[0];
    let form = [
        ("type", "stream"),
        ("to", "channel 1"),
        ("topic", "fan-out"),
        ("content", "To everyone at once"),
    ];
    let sent_at = Instant::now();
    http.post(server.api("/messages"))
        .basic_auth(owner_email, Some(owner_key))
        .form(&form)
        .send()
        .await?
        .error_for_status()?;
    let mut ours = Vec::new();
    let mut errors = 0;
    for waiter in waiters {
        let (arrived, ok) = waiter.await?;
        if ok {
            ours.push(arrived.saturating_duration_since(sent_at).as_secs_f64() * 1000.0);
        } else {
            errors += 1;
        }
    }
    server.stop().await?;

    // Baseline: the same number of requests parked on a bare actix route, woken together.
    let notify = std::sync::Arc::new(tokio::sync::Notify::new());
    let bare = {
        let notify = notify.clone();
        actix_web::HttpServer::new(move || {
            let wait = notify.clone();
            let wake = notify.clone();
            actix_web::App::new()
                .route(
                    "/wait",
                    actix_web::web::get().to(move || {
                        let wait = wait.clone();
                        async move {
                            wait.notified().await;
                            actix_web::HttpResponse::Ok().json(serde_json::json!({"events": []}))
                        }
                    }),
                )
                .route(
                    "/wake",
                    actix_web::web::post().to(move || {
                        let wake = wake.clone();
                        async move {
                            wake.notify_waiters();
                            actix_web::HttpResponse::Ok().finish()
                        }
                    }),
                )
        })
        .bind("127.0.0.1:0")?
    };
    let addr = bare.addrs()[0];
    let bare = bare.run();
    let handle = bare.handle();
    let thread = std::thread::spawn(move || actix_web::rt::System::new().block_on(bare));
    let mut waiters = Vec::new();
    for _ in 0..users {
        let (http, url) = (http.clone(), format!("http://{addr}/wait"));
        waiters.push(tokio::spawn(async move {
            let sent = http.get(&url).send().await;
            (
                Instant::now(),
                matches!(sent, Ok(r) if r.status().is_success()),
            )
        }));
    }
    tokio::time::sleep(Duration::from_millis(if quick { 500 } else { 2000 })).await;
    let woken_at = Instant::now();
    http.post(format!("http://{addr}/wake")).send().await?;
    let mut base = Vec::new();
    for waiter in waiters {
        let (arrived, ok) = waiter.await?;
        if ok {
            base.push(arrived.saturating_duration_since(woken_at).as_secs_f64() * 1000.0);
        }
    }
    handle.stop(true).await;
    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    let base = latency_row(
        "fan-out",
        &format!("bare wake of {users} parked requests"),
        base,
        0,
    );
    let ours = latency_row(
        "fan-out",
        &format!("one message to {users} parked long-polls"),
        ours,
        errors,
    )
    .against(&base, "bare wake, p99");
    Ok(vec![base, ours])
}

/// Scenario 5: `POST /register` in an organization with many users, channels and messages,
/// from sending the request to the last byte of the answer (the client's parse is not timed),
/// against serializing the same response with serde_json alone.
/// The organization `register` measures in (and `chronicle bench --write-org` writes).
pub fn register_organization(quick: bool) -> super::seed::SeedSpec {
    use super::seed::SeedSpec;
    if quick {
        SeedSpec {
            users: 100,
            channels: 20,
            subscribers_per_channel: 10,
            messages: 10_000,
        }
    } else {
        SeedSpec {
            users: 1000,
            channels: 200,
            subscribers_per_channel: 50,
            messages: 100_000,
        }
    }
}

pub async fn register(quick: bool) -> Result<Vec<Row>, Fatal> {
    let spec = register_organization(quick);
    let seeded = super::seed::seed(&spec)?;
    let (_, email, key) = seeded.users[1].clone();
    let server = InProcess::start_in(seeded.tmp)?;
    let http = client()?;
    let rounds = if quick { 20 } else { 100 };
    let mut ours = Vec::new();
    let mut base = Vec::new();
    let mut last_body = serde_json::Value::Null;
    let mut errors = 0;
    // Five rounds first, not timed: the first answer after a start writes every user's entry
    // (`render::users::UserCards`), which later ones copy until a user changes.
    for round in 0..rounds + 5 {
        let timed = round >= 5;
        let started = Instant::now();
        let sent = http
            .post(server.api("/register"))
            .basic_auth(&email, Some(&key))
            .send()
            .await?;
        let ok = sent.status().is_success();
        // Timed until the last byte arrives: parsing the answer is the client's work.
        let bytes = sent.bytes().await?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        let body: serde_json::Value = serde_json::from_slice(&bytes)?;
        if ok {
            // The baseline, right after: serializing this answer with serde_json, in the same
            // moments of a machine whose speed moves by half from minute to minute.
            let started = Instant::now();
            let bytes = serde_json::to_vec(&body)?;
            std::hint::black_box(bytes);
            if timed {
                ours.push(elapsed);
                base.push(started.elapsed().as_secs_f64() * 1000.0);
            }
            last_body = body;
        } else {
            errors += 1;
        }
        // Deregister, so queues do not pile up.
        if let Some(queue) = last_body["queue_id"].as_str() {
            let _ = http
                .delete(server.api("/events"))
                .basic_auth(&email, Some(&key))
                .form(&[("queue_id", queue)])
                .send()
                .await;
        }
    }
    let web = web_first_screen(&server, &email, rounds).await?;
    server.stop().await?;
    let case = format!(
        "{} users, {} channels, {} messages",
        spec.users, spec.channels, spec.messages
    );
    let base = latency_row("register", "serde_json of the same response", base, 0);
    let ours = latency_row("register", &format!("POST /register, {case}"), ours, errors)
        .against(&base, "serde_json alone, p99");
    // The medians too: a p99 of 100 requests is their second slowest, which the machine's
    // hiccups decide as often as the code does.
    let median = Row {
        case: format!("POST /register, {case}, median"),
        value: ours.p50_ms.unwrap_or_default(),
        unit: "ms p50".into(),
        ..ours.clone()
    }
    .against(
        &Row {
            value: base.p50_ms.unwrap_or_default(),
            ..base.clone()
        },
        "serde_json alone, p50",
    );
    let web = web.against(&ours, "POST /register, p99");
    Ok(vec![base, ours, median, web])
}

/// What the web client sends to `/json/register` (`src/http/web/js/requests.js`).
const WEB_CLIENT_REGISTER: [(&str, &str); 6] = [
    ("apply_markdown", "true"),
    ("client_gravatar", "false"),
    ("slim_presence", "true"),
    ("include_subscribers", "false"),
    (
        "client_capabilities",
        r#"{"notification_settings_null":true,"bulk_message_deletion":true,"user_avatar_url_field_optional":false,"stream_typing_notifications":true,"user_settings_object":true,"empty_topic_name":true}"#,
    ),
    (
        "fetch_event_types",
        r#"["realm","realm_user","subscription","message","update_message_flags","starred_messages","user_topic","presence","user_settings","realm_emoji","recent_private_conversations","user_status"]"#,
    ),
];

/// The server's part of the web client's first screen, after the login: the page, every file
/// it names (one after another: a browser fetches them six at a time), then
/// `/json/register` beside the first page of messages, as the client asks for them. What the
/// browser does with them is not timed here (docs/web-client.md has that measured in Chromium).
async fn web_first_screen(server: &InProcess, email: &str, rounds: usize) -> Result<Row, Fatal> {
    use crate::http::auth::SESSION_COOKIE;
    use crate::http::webclient::CSRF_COOKIE;
    let http = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let base = &server.running.url;
    let login = http
        .post(format!("{base}/login/"))
        .header("Origin", base.as_str())
        .form(&[("username", email), ("password", super::seed::WEB_PASSWORD)])
        .send()
        .await?;
    let mut cookies = Vec::new();
    let mut csrf = String::new();
    for value in login.headers().get_all("set-cookie") {
        let pair = value.to_str()?.split(';').next().unwrap_or_default();
        if pair.starts_with(&format!("{CSRF_COOKIE}=")) {
            csrf = pair[CSRF_COOKIE.len() + 1..].to_owned();
        }
        if pair.starts_with(&format!("{SESSION_COOKIE}="))
            || pair.starts_with(&format!("{CSRF_COOKIE}="))
        {
            cookies.push(pair.to_owned());
        }
    }
    if cookies.len() != 2 {
        return Err("the bench user could not sign in to the web client".into());
    }
    let cookie = cookies.join("; ");
    // The files at the addresses the page names (under the build's version), as a browser
    // with nothing cached fetches them (taking gzip, as every browser does).
    let app = http
        .get(format!("{base}/"))
        .header("Cookie", &cookie)
        .send()
        .await?
        .text()
        .await?;
    let prefix = app
        .split_once("\"/static/web/")
        .and_then(|(_, rest)| rest.get(..13))
        .filter(|v| v.ends_with('/'))
        .ok_or("the web client's page names no versioned files")?
        .to_owned();
    // What the page names: its stylesheet, icons, scripts and the modules they import
    // (`modulepreload`, which a test keeps equal to the first screen's imports); the modules
    // loaded later (settings, dialogs) are not part of the first screen.
    let marker = format!("\"/static/web/{prefix}");
    let mut files: Vec<String> = app
        .split(marker.as_str())
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(name, _)| name.to_owned()))
        .collect();
    files.sort();
    files.dedup();
    let (mut samples, mut errors) = (Vec::new(), 0);
    for _ in 0..rounds {
        let started = Instant::now();
        let mut ok = http
            .get(format!("{base}/"))
            .header("Cookie", &cookie)
            .send()
            .await?
            .bytes()
            .await
            .is_ok();
        for file in &files {
            let got = http
                .get(format!("{base}/static/web/{prefix}{file}"))
                .header("Cookie", &cookie)
                .header("Accept-Encoding", "gzip, deflate, br, zstd")
                .send()
                .await?;
            ok &= got.status().is_success() && got.bytes().await.is_ok();
        }
        let register = http
            .post(format!("{base}/json/register"))
            .header("Cookie", &cookie)
            .header("X-CSRFToken", &csrf)
            .form(&WEB_CLIENT_REGISTER)
            .send();
        let page = http
            .get(format!("{base}/json/messages"))
            .header("Cookie", &cookie)
            .query(&[
                ("anchor", "newest"),
                ("num_before", "50"),
                ("num_after", "0"),
                ("narrow", "[]"),
                ("apply_markdown", "true"),
            ])
            .send();
        let (register, page) = tokio::join!(register, page);
        let (register, page) = (register?, page?);
        ok &= register.status().is_success() && page.status().is_success();
        let registered: serde_json::Value = serde_json::from_slice(&register.bytes().await?)?;
        page.bytes().await?;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        if !ok {
            errors += 1;
        }
        if let Some(queue) = registered["queue_id"].as_str() {
            let _ = http
                .delete(format!("{base}/json/events"))
                .header("Cookie", &cookie)
                .header("X-CSRFToken", &csrf)
                .form(&[("queue_id", queue)])
                .send()
                .await;
        }
    }
    let case = format!(
        "web client's first screen, server side: / + {} files + /json/register and /json/messages",
        files.len()
    );
    Ok(latency_row("register", &case, samples, errors))
}

/// Scenario 6: `GET /messages` narrowed by channel and topic, and by search, over many messages.
pub async fn narrow_reads(quick: bool) -> Result<Vec<Row>, Fatal> {
    use super::seed::{seed, SeedSpec};
    let messages = if quick { 10_000 } else { 1_000_000 };
    let seeded = seed(&SeedSpec {
        users: 200,
        channels: 11,
        subscribers_per_channel: 5,
        messages,
    })?;
    let (_, email, key) = seeded.users[0].clone();
    let server = InProcess::start_in(seeded.tmp)?;
    // Searches are measured on the index, not on the scan that answers while it is built.
    let waited = std::time::Instant::now();
    while !server
        .running
        .indexed
        .load(std::sync::atomic::Ordering::SeqCst)
    {
        if waited.elapsed() > Duration::from_secs(300) {
            return Err("the search index was not built within 300 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let http = client()?;
    let (budget, seconds) = if quick { (300, 3) } else { (3_000, 15) };
    let mut rows = Vec::new();
    for (case, narrow) in [
        (
            "channel + topic",
            r#"[{"operator":"channel","operand":"channel 5"},{"operator":"topic","operand":"topic 7"}]"#,
        ),
        (
            "search",
            r#"[{"operator":"search","operand":"fox number 123"}]"#,
        ),
    ] {
        let (stats, _) = drive(8, budget, Duration::from_secs(seconds), |_| (), {
            let http = http.clone();
            let url = server.api("/messages");
            let (email, key) = (email.clone(), key.clone());
            move |()| {
                let (http, url, email, key) =
                    (http.clone(), url.clone(), email.clone(), key.clone());
                async move {
                    let sent = http
                        .get(&url)
                        .basic_auth(&email, Some(&key))
                        .query(&[
                            ("anchor", "newest"),
                            ("num_before", "50"),
                            ("num_after", "0"),
                            ("narrow", narrow),
                        ])
                        .send()
                        .await;
                    ((), matches!(sent, Ok(r) if r.status().is_success()))
                }
            }
        })
        .await;
        let mut row = row(
            "narrow",
            &format!("GET /messages by {case}, {messages} messages"),
            &stats,
            "req/s",
            None,
            "",
        );
        row.higher_is_better = true;
        rows.push(row);
    }
    server.stop().await?;
    Ok(rows)
}

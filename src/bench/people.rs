//! `people`: how many people one server serves, the yardstick a buyer can turn into a machine
//! size (Mattermost's "supported concurrent users": 217 on a 2-vCPU application node with its
//! database on another machine).
//!
//! Simulated people are added step by step to `chronicle serve` (a child process, the process a
//! user runs). Each registers an event queue and keeps a long-poll parked on `GET /events`, as
//! an open client does, and acts on average every [`THINK_SECONDS`] seconds (exponentially
//! distributed), with a mix after Mattermost's load test: switch channel (read its newest
//! messages and mark them read), post once per 6.5 switches, react (2 %), type (4 %), search
//! (2 %), open a direct conversation (3 %), load the user list (1 %). After each step has
//! settled, one window is measured; the largest number of people whose window stayed within
//! Mattermost's three health limits (average request time ≤ 100 ms, p99 ≤ 2 s, errors ≤
//! 0.025 %) is the figure. The load generator runs on the same two cores as the server, which
//! the figure carries.

use super::seed::{seed, SeedSpec};
use super::sustained::ChildServer;
use super::Row;
use crate::server::Fatal;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Mean seconds between one person's actions.
pub const THINK_SECONDS: f64 = 5.0;
/// Mattermost's health limits.
const MAX_MEAN_MS: f64 = 100.0;
const MAX_P99_MS: f64 = 2000.0;
const MAX_ERROR_RATE: f64 = 0.00025;

/// What one window saw: each action's time (ms) and the failures.
#[derive(Default)]
struct Window {
    times_ms: Vec<f64>,
    /// Per kind of action: total milliseconds and count.
    by_kind: [(f64, u64); 7],
    errors: u64,
    /// What the errors were: timed out, refused or cut, answered 4xx/5xx.
    timeouts: u64,
    connects: u64,
    statuses: u64,
}

struct Shared {
    window: Mutex<Window>,
    stop: AtomicBool,
    polls: AtomicU64,
    poll_errors: AtomicU64,
    /// People whose registration ended (well or not).
    registered: AtomicU64,
}

/// One simulated person.
struct Person {
    id: u64,
    email: String,
    key: String,
    channels: Vec<u64>,
    peers: Vec<u64>,
    seed: u64,
}

impl Person {
    fn next(&mut self) -> f64 {
        // xorshift64*: a person's own reproducible stream of choices.
        self.seed ^= self.seed >> 12;
        self.seed ^= self.seed << 25;
        self.seed ^= self.seed >> 27;
        (self.seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn raise_open_files() {
    // Every person holds a parked long-poll: thousands of sockets on both sides.
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to an rlimit of this process.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The kinds of action, for the per-kind times printed with each step.
const KINDS: [&str; 7] = ["switch", "post", "react", "type", "search", "dm", "users"];

async fn act(
    http: &reqwest::Client,
    base: &str,
    person: &mut Person,
    switches: &mut u64,
) -> Result<usize, reqwest::Error> {
    let roll = person.next();
    let pick = person.next();
    let channel =
        person.channels[(pick * person.channels.len() as f64) as usize % person.channels.len()];
    // Channel 1 holds everyone, as an organization's all-hands channel does: it is read like the
    // others, but people post and type in their team channels (an all-hands channel of 20,000
    // is for announcements); a person in no other channel writes nowhere.
    let teams: Vec<u64> = person
        .channels
        .iter()
        .copied()
        .filter(|c| *c != 1)
        .collect();
    let team =
        (!teams.is_empty()).then(|| teams[(pick * teams.len() as f64) as usize % teams.len()]);
    let auth = (person.email.clone(), person.key.clone());
    let get = |path: &str| {
        http.get(format!("{base}/api/v1/{path}"))
            .basic_auth(&auth.0, Some(&auth.1))
    };
    let post = |path: &str| {
        http.post(format!("{base}/api/v1/{path}"))
            .basic_auth(&auth.0, Some(&auth.1))
    };
    let search_word = format!("{}", (person.next() * 997.0) as u64);
    let mut kind = 0;
    if roll < 0.02 {
        kind = 2;
        let ids = read_channel(&get, channel).await?;
        if let Some(id) = ids.last() {
            post(&format!("messages/{id}/reactions"))
                .form(&[("emoji_name", "thumbs_up")])
                .send()
                .await?;
        }
    } else if roll < 0.06 {
        kind = 3;
        if let Some(team) = team {
            post("typing")
                .form(&[
                    ("op", "start"),
                    ("type", "stream"),
                    ("stream_id", &team.to_string()),
                    ("topic", "topic 1"),
                ])
                .send()
                .await?
                .error_for_status()?;
        }
    } else if roll < 0.08 {
        kind = 4;
        // A word a few hundred of the seeded messages hold (every one holds "fox").
        newest(
            &get,
            serde_json::json!([{"operator": "search", "operand": search_word}]),
            20,
        )
        .send()
        .await?
        .error_for_status()?;
    } else if roll < 0.11 {
        kind = 5;
        let pick = person.next();
        let peer = person.peers[(pick * person.peers.len() as f64) as usize % person.peers.len()];
        newest(
            &get,
            serde_json::json!([{"operator": "dm", "operand": [peer]}]),
            30,
        )
        .send()
        .await?
        .error_for_status()?;
    } else if roll < 0.12 {
        kind = 6;
        get("users").send().await?.error_for_status()?;
    } else {
        // Switch channel: its newest messages, marked read; every 6.5 switches, a post.
        *switches += 1;
        let ids = read_channel(&get, channel).await?;
        if !ids.is_empty() {
            post("messages/flags")
                .form(&[
                    ("op", "add"),
                    ("flag", "read"),
                    ("messages", &serde_json::to_string(&ids).unwrap_or_default()),
                ])
                .send()
                .await?
                .error_for_status()?;
        }
        let posting = person.next() < 1.0 / 6.5;
        if posting && channel != 1 {
            kind = 1;
            post("messages")
                .form(&[
                    ("type", "stream"),
                    ("to", &channel.to_string()),
                    ("topic", "topic 1"),
                    (
                        "content",
                        &super::corpus::text(person.id * 7919 + *switches, || {
                            format!("Person {} says hello on switch {switches}", person.id)
                        }),
                    ),
                ])
                .send()
                .await?
                .error_for_status()?;
        }
    }
    Ok(kind)
}

/// `GET /messages`: the newest `count` messages of `narrow`.
fn newest(
    get: &impl Fn(&str) -> reqwest::RequestBuilder,
    narrow: Value,
    count: u32,
) -> reqwest::RequestBuilder {
    get("messages").query(&[
        ("anchor", "newest".to_owned()),
        ("num_before", count.to_string()),
        ("num_after", "0".to_owned()),
        ("narrow", narrow.to_string()),
    ])
}

/// The ids of a channel's newest 30 messages.
async fn read_channel(
    get: &impl Fn(&str) -> reqwest::RequestBuilder,
    channel: u64,
) -> Result<Vec<u64>, reqwest::Error> {
    let body: Value = newest(
        get,
        serde_json::json!([{"operator": "channel", "operand": channel}]),
        30,
    )
    .send()
    .await?
    .error_for_status()?
    .json()
    .await?;
    Ok(body["messages"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["id"].as_u64()).collect())
        .unwrap_or_default())
}

/// Registers `person` and runs it until told to stop: a parked long-poll, and actions.
async fn live(
    person: Person,
    base: String,
    http: reqwest::Client,
    polls: reqwest::Client,
    shared: Arc<Shared>,
) {
    let mut person = person;
    let registered = async {
        let body: Value = http
            .post(format!("{base}/api/v1/register"))
            .basic_auth(&person.email, Some(&person.key))
            .form(&[
                (
                    "event_types",
                    r#"["message","update_message_flags","reaction","typing"]"#,
                ),
                (
                    "fetch_event_types",
                    r#"["message","update_message_flags","subscription"]"#,
                ),
            ])
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok::<_, reqwest::Error>(body)
    }
    .await;
    shared.registered.fetch_add(1, Ordering::SeqCst);
    let Ok(registered) = registered else {
        shared
            .window
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .errors += 1;
        return;
    };
    let queue = registered["queue_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut last = registered["last_event_id"].as_i64().unwrap_or(-1);
    // The open client: one long-poll parked at a time.
    let poller = {
        let (shared, base, email, key) = (
            shared.clone(),
            base.clone(),
            person.email.clone(),
            person.key.clone(),
        );
        tokio::spawn(async move {
            while !shared.stop.load(Ordering::Relaxed) {
                let answer = polls
                    .get(format!("{base}/api/v1/events"))
                    .basic_auth(&email, Some(&key))
                    .query(&[
                        ("queue_id", queue.as_str()),
                        ("last_event_id", &last.to_string()),
                    ])
                    .send()
                    .await;
                let body: Result<Value, _> = match answer {
                    Ok(answer) => answer.json().await,
                    Err(e) => Err(e),
                };
                match body {
                    Ok(body) if body["result"] == "success" => {
                        shared.polls.fetch_add(1, Ordering::Relaxed);
                        for event in body["events"].as_array().into_iter().flatten() {
                            last = last.max(event["id"].as_i64().unwrap_or(last));
                        }
                    }
                    _ => {
                        if !shared.stop.load(Ordering::Relaxed) {
                            shared.poll_errors.fetch_add(1, Ordering::Relaxed);
                        }
                        return;
                    }
                }
            }
        })
    };
    let mut switches = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        // Exponential think time, checked for the stop every second.
        let mut think = -THINK_SECONDS * (1.0 - person.next()).max(1e-9).ln();
        while think > 0.0 && !shared.stop.load(Ordering::Relaxed) {
            let nap = think.min(1.0);
            tokio::time::sleep(Duration::from_secs_f64(nap)).await;
            think -= nap;
        }
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let started = Instant::now();
        let done = act(&http, &base, &mut person, &mut switches).await;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let mut window = shared.window.lock().unwrap_or_else(|p| p.into_inner());
        match done {
            Ok(kind) => {
                window.times_ms.push(ms);
                window.by_kind[kind].0 += ms;
                window.by_kind[kind].1 += 1;
            }
            Err(error) => {
                window.errors += 1;
                if error.is_timeout() {
                    window.timeouts += 1;
                } else if error.is_connect() {
                    window.connects += 1;
                } else if error.status().is_some() {
                    window.statuses += 1;
                }
            }
        }
    }
    poller.abort();
}

/// The channels each person is subscribed to in a seeded organization (index: user id).
fn channels_of_everyone(spec: &SeedSpec) -> Vec<Vec<u64>> {
    let mut out = vec![vec![1]; spec.users as usize + 1];
    for c in 2..=spec.channels {
        for u in super::seed::members(spec, c) {
            out[u as usize].push(c);
        }
    }
    out
}

/// The scenario: steps of people until a health limit is crossed.
pub async fn people(quick: bool) -> Result<Vec<Row>, Fatal> {
    raise_open_files();
    let (spec, first, step, settle, window) = if quick {
        (
            SeedSpec {
                users: 240,
                channels: 12,
                subscribers_per_channel: 40,
                messages: 3_000,
            },
            60,
            60,
            Duration::from_secs(2),
            Duration::from_secs(3),
        )
    } else {
        (
            SeedSpec {
                users: 20_000,
                channels: 500,
                subscribers_per_channel: 200,
                messages: 200_000,
            },
            100,
            100,
            Duration::from_secs(10),
            Duration::from_secs(20),
        )
    };
    let seeded = seed(&spec)?;
    let data = seeded.tmp.path().join("data");
    let server = ChildServer::start(&data)?;
    server.wait_indexed()?;
    let base = server.url.clone();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .timeout(Duration::from_secs(30))
        .build()?;
    let polls = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .timeout(Duration::from_secs(120))
        .build()?;
    let shared = Arc::new(Shared {
        window: Mutex::new(Window::default()),
        stop: AtomicBool::new(false),
        polls: AtomicU64::new(0),
        poll_errors: AtomicU64::new(0),
        registered: AtomicU64::new(0),
    });
    // People 2.. (1 is the owner); each person's peers are a few others.
    let everyone: Vec<&(u64, String, String)> = seeded.users.iter().skip(1).collect();
    let subscriptions = channels_of_everyone(&spec);
    let mut tasks = Vec::new();
    let mut served = 0usize;
    let mut best: Option<(usize, f64, f64, f64, u64)> = None;
    let mut crossed: Option<String> = None;
    let mut rows = Vec::new();
    let mut count = first.min(everyone.len());
    loop {
        while tasks.len() < count {
            let (id, email, key) = everyone[tasks.len()];
            let person = Person {
                id: *id,
                email: email.clone(),
                key: key.clone(),
                channels: subscriptions[*id as usize].clone(),
                peers: (1..=3)
                    .map(|k| 2 + (id + k * 97) % (spec.users - 1))
                    .collect(),
                seed: 0x9e37_79b9_7f4a_7c15 ^ id.wrapping_mul(0x1000_0001),
            };
            tasks.push(tokio::spawn(live(
                person,
                base.clone(),
                http.clone(),
                polls.clone(),
                shared.clone(),
            )));
        }
        // A step's people sign in first (their registrations are not what is measured), then
        // the step settles, then one window is measured.
        let deadline = Instant::now() + Duration::from_secs(600);
        while (shared.registered.load(Ordering::SeqCst) as usize) < count
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(settle).await;
        *shared.window.lock().unwrap_or_else(|p| p.into_inner()) = Window::default();
        tokio::time::sleep(window).await;
        let seen = std::mem::take(&mut *shared.window.lock().unwrap_or_else(|p| p.into_inner()));
        let mut times = seen.times_ms;
        times.sort_by(f64::total_cmp);
        let n = times.len() as f64;
        let mean = times.iter().sum::<f64>() / n.max(1.0);
        let p99 = times
            .get(((n - 1.0) * 0.99).max(0.0) as usize)
            .copied()
            .unwrap_or(0.0);
        let error_rate = seen.errors as f64 / (n + seen.errors as f64).max(1.0);
        println!(
            "people: {count} people, {:.0} actions/s, mean {mean:.1} ms, p99 {p99:.1} ms, errors {error_rate:.5} ({} timed out, {} not connected, {} refused by status); {} polls answered, {} failed",
            n / window.as_secs_f64(),
            seen.timeouts,
            seen.connects,
            seen.statuses,
            shared.polls.load(Ordering::Relaxed),
            shared.poll_errors.load(Ordering::Relaxed),
        );
        let kinds: Vec<String> = KINDS
            .iter()
            .zip(seen.by_kind.iter())
            .map(|(name, (ms, n))| format!("{name} {:.1} ms ×{n}", ms / (*n).max(1) as f64))
            .collect();
        println!("        mean by kind: {}", kinds.join(", "));
        let healthy = mean <= MAX_MEAN_MS && p99 <= MAX_P99_MS && error_rate <= MAX_ERROR_RATE;
        if healthy {
            served = count;
            best = Some((count, n / window.as_secs_f64(), mean, p99, seen.errors));
        } else {
            crossed = Some(format!(
                "at {count}: mean {mean:.0} ms, p99 {p99:.0} ms, errors {:.3} %",
                error_rate * 100.0
            ));
            break;
        }
        if count >= everyone.len() {
            break;
        }
        // Steps grow with the crowd (half again, at least `step`), so that a large organization
        // is reached in a dozen steps.
        count = (count + step.max(count / 2)).min(everyone.len());
    }
    shared.stop.store(true, Ordering::SeqCst);
    for task in tasks {
        task.abort();
    }
    let resident = server.resident_bytes()?;
    server.stop()?;
    let limit = match &crossed {
        Some(why) => format!("largest step within the limits; crossed {why}"),
        None => format!(
            "every person of the organization ({}); no limit crossed",
            everyone.len()
        ),
    };
    let (_, actions, mean, p99, errors) = best.unwrap_or_default();
    rows.push(Row {
        scenario: "people".into(),
        case: format!(
            "people served (one action per {THINK_SECONDS:.0} s each, a long-poll parked each; generator on the same 2 cores); {limit}"
        ),
        value: served as f64,
        unit: "people".into(),
        p50_ms: None,
        p99_ms: Some(p99),
        baseline: Some(217.0),
        baseline_label: "Mattermost, 2-vCPU app node + DB machine".into(),
        ratio: Some(served as f64 / 217.0),
        higher_is_better: true,
        samples: (actions * window.as_secs_f64()) as u64,
        errors: 0,
    });
    rows.push(Row {
        scenario: "people".into(),
        case: format!("mean action time at {served} people (limit 100 ms); {errors} errors"),
        value: mean,
        unit: "ms".into(),
        p50_ms: None,
        p99_ms: Some(p99),
        baseline: Some(MAX_MEAN_MS),
        baseline_label: "Mattermost's limit".into(),
        ratio: Some(mean / MAX_MEAN_MS),
        higher_is_better: false,
        samples: 0,
        errors: 0,
    });
    rows.push(Row {
        scenario: "people".into(),
        case: format!("resident memory with {served}+ people connected"),
        value: resident as f64 / 1e6,
        unit: "MB".into(),
        p50_ms: None,
        p99_ms: None,
        baseline: None,
        baseline_label: String::new(),
        ratio: None,
        higher_is_better: false,
        samples: 0,
        errors: 0,
    });
    Ok(rows)
}

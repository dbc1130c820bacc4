//! `people`: how many people one server serves, the yardstick a buyer can turn into a machine
//! size (Mattermost's "supported concurrent users": 217 on a 2-vCPU application node with its
//! database on another machine).
//!
//! Simulated people are added step by step to `chronicle serve` (a child process, the process a
//! user runs). Each registers an event queue and keeps a long-poll parked on `GET /events`, as
//! an open client does, and acts as Mattermost's load test has its people act: the same mix of
//! actions at the same frequencies ([`KINDS`]: switch channel, scroll, open a direct
//! conversation, post, react, recent conversations, read or mark a topic, follow a permalink,
//! edit, list people or channels, search), each followed by the same pause (uniform between 1
//! and 39 s, 20 s on average). After each step has settled, one window is measured; the largest
//! number of people whose window stayed within Mattermost's three health limits (average
//! request time ≤ 100 ms, p99 ≤ 2 s, errors ≤ 0.025 %) is the figure. The load generator runs
//! on the same two cores as the server, which the figure carries.
//!
//! Two organizations are served, one after the other ([`organizations`]): a large one (25,000
//! people, 200,000 messages), and one of 10,000 people with ten million messages of real text
//! that everyone has read.

use super::seed::{seed_styled, SeedSpec, SeedStyle};
use super::sustained::ChildServer;
use super::Row;
use crate::server::Fatal;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Mattermost's pause after each action: uniform in [1 s, 39 s), 20 s on average (its load
/// test's `MinIdleTimeMs` and `AvgIdleTimeMs`).
pub const MIN_IDLE_SECONDS: f64 = 1.0;
pub const AVG_IDLE_SECONDS: f64 = 20.0;
/// Issue 33's goal: people served on this machine.
const GOAL: usize = 20_000;
/// Mattermost's health limits.
const MAX_MEAN_MS: f64 = 100.0;
const MAX_P99_MS: f64 = 2000.0;
const MAX_ERROR_RATE: f64 = 0.00025;

/// What one window saw: each action's time (ms) and the failures.
#[derive(Default)]
struct Window {
    times_ms: Vec<f64>,
    /// Per kind of action: total milliseconds and count.
    by_kind: [(f64, u64); KINDS.len()],
    errors: u64,
    /// What the errors were: timed out, refused or cut, answered 4xx/5xx.
    timeouts: u64,
    connects: u64,
    statuses: u64,
    /// The first few failures: the action, the status and the path.
    failures: Vec<String>,
}

struct Shared {
    window: Mutex<Window>,
    stop: AtomicBool,
    polls: AtomicU64,
    poll_errors: AtomicU64,
    /// The first few failed polls, and why.
    poll_failures: Mutex<Vec<String>>,
    /// People whose registration ended (well or not).
    registered: AtomicU64,
    /// People who could not sign in at all (after [`SIGN_IN_ATTEMPTS`]).
    unregistered: AtomicU64,
    /// Sign-ins under way at once, at most [`SIGNING_IN`].
    signing_in: tokio::sync::Semaphore,
    /// What people search for (empty: numbers of the synthetic history).
    searches: Vec<String>,
}

/// One simulated person.
struct Person {
    id: u64,
    /// The `Authorization` header of the person's requests (HTTP basic with the API key),
    /// encoded once.
    auth: reqwest::header::HeaderValue,
    channels: Vec<u64>,
    peers: Vec<u64>,
    seed: u64,
    /// What the person looks at: a channel, or a direct conversation with one of `peers`.
    view: View,
    /// The messages of the view last read (oldest first), and the person's newest own message.
    seen: Vec<Seen>,
    own: Option<u64>,
}

#[derive(Clone, Copy, PartialEq)]
enum View {
    Channel(u64),
    Dm(u64),
}

/// A message as the person saw it.
struct Seen {
    id: u64,
    read: bool,
    /// The person's own thumbs-up is on it.
    reacted: bool,
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

/// Open files the generator (and the server, its child) may have: every person holds a
/// parked long-poll, a socket on both sides. The production unit's `LimitNOFILE`
/// (`docs/systemd/chronicle.service`), where this process may raise its hard limit; else its
/// hard limit, which bounds the people it can simulate.
const OPEN_FILES: u64 = 65_536;

/// The actions, after the frequencies of Mattermost's load test (its `simulcontroller`), each
/// mapped to what Zulip's web client sends for it. Mattermost's "unread check" (1.0) and
/// "reconnect WebSocket" (0.144) are left out: a Zulip client keeps its unread counts from its
/// events and asks nothing, and its long-poll is parked all along; actions under 0.01 are left
/// out too.
const KINDS: [(&str, f64); 13] = [
    ("switch", 6.5219),
    ("scroll", 1.9873),
    ("dm", 0.9843),
    ("post", 1.0),
    ("react", 0.1306),
    ("recent", 0.6023),
    ("topic", 0.2841),
    ("topic-read", 0.3236),
    ("permalink", 0.3),
    ("edit", 0.04),
    ("users", 0.032),
    ("search", 0.0218),
    ("channels", 0.015),
];

/// Sign-ins (`POST /register`) under way at once: a step's thousands of newcomers arrive over
/// a minute or so rather than in one second, whose answers (a large organization's
/// subscriptions) would outlast the client's timeout and lose people unseen.
const SIGNING_IN: usize = 32;
/// Tries at signing in, a second apart, before a person counts as not served.
const SIGN_IN_ATTEMPTS: u32 = 3;

/// The loopback addresses (127.0.1.1 and on) people's long-polls come from.
const POLL_SOURCES: u8 = 16;

/// Topics per channel that people write in.
const TOPICS: u64 = 8;

async fn act(
    http: &reqwest::Client,
    base: &str,
    person: &mut Person,
    actions: &mut u64,
    searches: &[String],
) -> (usize, Result<(), reqwest::Error>) {
    *actions += 1;
    let total: f64 = KINDS.iter().map(|(_, f)| f).sum();
    let mut roll = person.next() * total;
    let mut kind = 0;
    while kind + 1 < KINDS.len() && roll >= KINDS[kind].1 {
        roll -= KINDS[kind].1;
        kind += 1;
    }
    let pick = person.next();
    let one_of = |list: &[u64], pick: f64| list[(pick * list.len() as f64) as usize % list.len()];
    // Channel 1 holds everyone, as an organization's all-hands channel does: it is read and
    // reacted to like the others, but people write in their team channels (an all-hands channel
    // of 25,000 is for announcements).
    let teams: Vec<u64> = person
        .channels
        .iter()
        .copied()
        .filter(|c| *c != 1)
        .collect();
    let topic = format!("topic {}", (person.next() * TOPICS as f64) as u64);
    let auth = person.auth.clone();
    let get = |path: &str| {
        http.get(format!("{base}/api/v1/{path}"))
            .header(reqwest::header::AUTHORIZATION, auth.clone())
    };
    let send = |method: reqwest::Method, path: &str| {
        http.request(method, format!("{base}/api/v1/{path}"))
            .header(reqwest::header::AUTHORIZATION, auth.clone())
    };
    let post = |path: &str| send(reqwest::Method::POST, path);
    let view_narrow = |view: View| match view {
        View::Channel(c) => serde_json::json!([{"operator": "channel", "operand": c}]),
        View::Dm(peer) => serde_json::json!([{"operator": "dm", "operand": [peer]}]),
    };
    let done = async {
        match KINDS[kind].0 {
            "switch" | "dm" => {
                person.view = if KINDS[kind].0 == "dm" {
                    View::Dm(one_of(&person.peers, pick))
                } else {
                    View::Channel(one_of(&person.channels, pick))
                };
                let narrow = view_narrow(person.view);
                person.seen = read(&get, narrow, "newest", 30, 0, person.id).await?;
                mark_read(&post, person).await?;
            }
            "scroll" => {
                if let Some(oldest) = person.seen.first().map(|m| m.id) {
                    let narrow = view_narrow(person.view);
                    let older = read(&get, narrow, &oldest.to_string(), 30, 0, person.id).await?;
                    person.seen = older.into_iter().filter(|m| m.id != oldest).collect();
                    mark_read(&post, person).await?;
                }
            }
            "post" => {
                let to = match person.view {
                    View::Channel(1) if !teams.is_empty() => {
                        person.view = View::Channel(one_of(&teams, pick));
                        person.view
                    }
                    view => view,
                };
                if to != View::Channel(1) {
                    let (kind, to_field) = match to {
                        View::Channel(c) => ("stream", c.to_string()),
                        View::Dm(peer) => ("private", format!("[{peer}]")),
                    };
                    // Typing first, as the composer reports it.
                    let typing_type = if kind == "stream" { "stream" } else { "direct" };
                    let mut typing =
                        vec![("op", "start".to_owned()), ("type", typing_type.to_owned())];
                    match to {
                        View::Channel(c) => {
                            typing.push(("stream_id", c.to_string()));
                            typing.push(("topic", topic.clone()));
                        }
                        View::Dm(peer) => typing.push(("to", format!("[{peer}]"))),
                    }
                    post("typing")
                        .form(&typing)
                        .send()
                        .await?
                        .error_for_status()?;
                    let content = super::corpus::text(person.id * 7919 + *actions, || {
                        format!("Person {} says hello in action {actions}", person.id)
                    });
                    let sent: SentMessage = post("messages")
                        .form(&[
                            ("type", kind),
                            ("to", &to_field),
                            ("topic", &topic),
                            ("content", &content),
                        ])
                        .send()
                        .await?
                        .error_for_status()?
                        .json()
                        .await?;
                    person.own = Some(sent.id);
                }
            }
            "react" => {
                // On the newest message in view; a second click takes the reaction back, as in the
                // web client.
                if let Some(message) = person.seen.last_mut() {
                    let method = if message.reacted {
                        reqwest::Method::DELETE
                    } else {
                        reqwest::Method::POST
                    };
                    send(method, &format!("messages/{}/reactions", message.id))
                        .form(&[("emoji_name", "thumbs_up")])
                        .send()
                        .await?
                        .error_for_status()?;
                    message.reacted = !message.reacted;
                }
            }
            "recent" => {
                // Recent conversations: the newest messages of every conversation.
                read(&get, serde_json::json!([]), "newest", 50, 0, person.id).await?;
            }
            "topic" | "topic-read" => {
                if let Some(&team) = teams.get((pick * teams.len() as f64) as usize) {
                    let narrow = serde_json::json!([
                        {"operator": "channel", "operand": team},
                        {"operator": "topic", "operand": topic},
                    ]);
                    if KINDS[kind].0 == "topic" {
                        read(&get, narrow, "newest", 30, 0, person.id).await?;
                    } else {
                        post("messages/flags/narrow")
                            .form(&[
                                ("anchor", "oldest".to_owned()),
                                ("num_before", "0".to_owned()),
                                ("num_after", "1000".to_owned()),
                                ("include_anchor", "true".to_owned()),
                                ("op", "add".to_owned()),
                                ("flag", "read".to_owned()),
                                ("narrow", narrow.to_string()),
                            ])
                            .send()
                            .await?
                            .error_for_status()?;
                    }
                }
            }
            "permalink" => {
                if let Some(message) = person.seen.get((pick * person.seen.len() as f64) as usize) {
                    let anchor = message.id.to_string();
                    read(&get, view_narrow(person.view), &anchor, 25, 25, person.id).await?;
                }
            }
            "edit" => {
                if let Some(own) = person.own {
                    // Another text each time: an edit that changes nothing is refused.
                    let text = super::corpus::text(own, || format!("edited {own}"));
                    send(reqwest::Method::PATCH, &format!("messages/{own}"))
                        .form(&[("content", format!("{text}\n\n(edit {actions})"))])
                        .send()
                        .await?
                        .error_for_status()?;
                }
            }
            "users" => {
                get("users").send().await?.error_for_status()?;
            }
            "search" => {
                // What people search for in a history of real text: words, a phrase, a
                // prefix, drawn from the same text. In the synthetic history, a number a few
                // hundred of the seeded messages hold.
                let word = match searches.len() {
                    0 => format!("{}", (person.next() * 997.0) as u64),
                    n => searches[(person.next() * n as f64) as usize % n].clone(),
                };
                let narrow = serde_json::json!([{"operator": "search", "operand": word}]);
                read(&get, narrow, "newest", 20, 0, person.id).await?;
            }
            _ => {
                get("streams").send().await?.error_for_status()?;
            }
        }
        Ok(())
    }
    .await;
    (kind, done)
}

/// `GET /messages` of `narrow` around `anchor`: what `me` sees of them.
async fn read(
    get: &impl Fn(&str) -> reqwest::RequestBuilder,
    narrow: Value,
    anchor: &str,
    before: u32,
    after: u32,
    me: u64,
) -> Result<Vec<Seen>, reqwest::Error> {
    let body: Fetched = get("messages")
        .query(&[
            ("anchor", anchor.to_owned()),
            ("num_before", before.to_string()),
            ("num_after", after.to_string()),
            ("narrow", narrow.to_string()),
        ])
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(body
        .messages
        .into_iter()
        .map(|m| Seen {
            id: m.id,
            read: m.flags.iter().any(|f| f == "read"),
            reacted: m
                .reactions
                .iter()
                .any(|r| r.user_id == me && r.emoji_name == "thumbs_up"),
        })
        .collect())
}

// What the generator reads of the server's answers. The rest of each answer is skipped as it
// is parsed, not built: the generator shares the two cores with the server, and building every
// answer as a `Value` (a long-poll's whole message events, a register's megabytes) took more of
// them than the reading needs.

/// `GET /events`: the events' ids, or the error.
#[derive(serde::Deserialize)]
struct Polled {
    result: String,
    #[serde(default)]
    events: Vec<EventId>,
    #[serde(default)]
    code: String,
    #[serde(default)]
    msg: String,
}

#[derive(serde::Deserialize)]
struct EventId {
    id: i64,
}

/// A long-poll without an answer the generator could read.
enum PollFailure {
    /// No answer, or not all of it.
    Http(reqwest::Error),
    /// An answer that is not `Polled`: its status, why, and its bytes (their start and end are
    /// shown).
    Unreadable(reqwest::StatusCode, serde_json::Error, bytes::Bytes),
}

impl std::fmt::Display for PollFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PollFailure::Http(e) if e.is_timeout() => write!(f, "timed out"),
            PollFailure::Http(e) if e.is_connect() => write!(f, "not connected"),
            PollFailure::Http(e) => write!(f, "{e}"),
            PollFailure::Unreadable(status, e, bytes) => {
                let start = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]);
                let end = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(80)..]);
                write!(
                    f,
                    "{status}, {e}, {} bytes: {start:?} … {end:?}",
                    bytes.len()
                )
            }
        }
    }
}

/// `POST /register`: the queue.
#[derive(serde::Deserialize)]
struct Registered {
    queue_id: String,
    last_event_id: i64,
}

/// `GET /messages`: per message, what a person's next action looks at.
#[derive(serde::Deserialize)]
struct Fetched {
    messages: Vec<FetchedMessage>,
}

#[derive(serde::Deserialize)]
struct FetchedMessage {
    id: u64,
    flags: Vec<String>,
    reactions: Vec<FetchedReaction>,
}

#[derive(serde::Deserialize)]
struct FetchedReaction {
    user_id: u64,
    emoji_name: String,
}

/// `POST /messages`: the new message's id.
#[derive(serde::Deserialize)]
struct SentMessage {
    id: u64,
}

/// Marks what the person sees and had not read as read, as the web client does on sight.
async fn mark_read(
    post: &impl Fn(&str) -> reqwest::RequestBuilder,
    person: &mut Person,
) -> Result<(), reqwest::Error> {
    let unread: Vec<u64> = person
        .seen
        .iter()
        .filter(|m| !m.read)
        .map(|m| m.id)
        .collect();
    if !unread.is_empty() {
        post("messages/flags")
            .form(&[
                ("op", "add"),
                ("flag", "read"),
                (
                    "messages",
                    &serde_json::to_string(&unread).unwrap_or_default(),
                ),
            ])
            .send()
            .await?
            .error_for_status()?;
        for m in &mut person.seen {
            m.read = true;
        }
    }
    Ok(())
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
    // Only the queue is kept: the answer (every subscription with its subscribers, the
    // unread messages) is megabytes in a large organization.
    let register = || async {
        let body: Registered = http
            .post(format!("{base}/api/v1/register"))
            .header(reqwest::header::AUTHORIZATION, person.auth.clone())
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
        Ok::<_, reqwest::Error>((body.queue_id, body.last_event_id))
    };
    // People sign in a few at a time ([`SIGNING_IN`]), as a crowd arriving over minutes does,
    // and a client whose sign-in failed tries again a second later. Someone who still cannot
    // sign in is counted: the step has not served them.
    let mut registered = None;
    for attempt in 1..=SIGN_IN_ATTEMPTS {
        let answer = match shared.signing_in.acquire().await {
            Ok(_slot) => register().await.ok(),
            Err(_) => None,
        };
        if answer.is_some() {
            registered = answer;
            break;
        }
        if attempt < SIGN_IN_ATTEMPTS {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    if registered.is_none() {
        shared.unregistered.fetch_add(1, Ordering::SeqCst);
    }
    shared.registered.fetch_add(1, Ordering::SeqCst);
    let Some((queue, mut last)) = registered else {
        return;
    };
    // The open client: one long-poll parked at a time.
    let poller = {
        let (shared, base, auth) = (shared.clone(), base.clone(), person.auth.clone());
        tokio::spawn(async move {
            while !shared.stop.load(Ordering::Relaxed) {
                let answer = polls
                    .get(format!("{base}/api/v1/events"))
                    .header(reqwest::header::AUTHORIZATION, auth.clone())
                    .query(&[
                        ("queue_id", queue.as_str()),
                        ("last_event_id", &last.to_string()),
                    ])
                    .send()
                    .await;
                let body: Result<Polled, PollFailure> = match answer {
                    Ok(answer) => {
                        let status = answer.status();
                        match answer.bytes().await {
                            Ok(bytes) => serde_json::from_slice(&bytes)
                                .map_err(|e| PollFailure::Unreadable(status, e, bytes)),
                            Err(e) => Err(PollFailure::Http(e)),
                        }
                    }
                    Err(e) => Err(PollFailure::Http(e)),
                };
                match body {
                    Ok(body) if body.result == "success" => {
                        shared.polls.fetch_add(1, Ordering::Relaxed);
                        for event in &body.events {
                            last = last.max(event.id);
                        }
                    }
                    failed => {
                        if shared.stop.load(Ordering::Relaxed) {
                            return;
                        }
                        shared.poll_errors.fetch_add(1, Ordering::Relaxed);
                        let why = match &failed {
                            Ok(body) => format!("{} {}", body.code, body.msg),
                            Err(failure) => failure.to_string(),
                        };
                        {
                            let mut failures = shared
                                .poll_failures
                                .lock()
                                .unwrap_or_else(|p| p.into_inner());
                            if failures.len() < 5 {
                                failures.push(why);
                            }
                        }
                        // A client whose queue is gone registers again; this one stops
                        // polling (counted). A failed connection is tried again.
                        if matches!(&failed, Ok(body) if body.code == "BAD_EVENT_QUEUE_ID") {
                            return;
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        })
    };
    let mut actions = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        // Mattermost's pause, checked for the stop every second.
        let mut think =
            MIN_IDLE_SECONDS + person.next() * 2.0 * (AVG_IDLE_SECONDS - MIN_IDLE_SECONDS);
        while think > 0.0 && !shared.stop.load(Ordering::Relaxed) {
            let nap = think.min(1.0);
            tokio::time::sleep(Duration::from_secs_f64(nap)).await;
            think -= nap;
        }
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let started = Instant::now();
        let (kind, done) = act(&http, &base, &mut person, &mut actions, &shared.searches).await;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let mut window = shared.window.lock().unwrap_or_else(|p| p.into_inner());
        match done {
            Ok(()) => {
                window.times_ms.push(ms);
                window.by_kind[kind].0 += ms;
                window.by_kind[kind].1 += 1;
            }
            Err(error) => {
                window.errors += 1;
                if window.failures.len() < 5 {
                    let status = error.status().map(|s| s.to_string()).unwrap_or_default();
                    let path = error.url().map(|u| u.path().to_owned()).unwrap_or_default();
                    window
                        .failures
                        .push(format!("{} {status} {path}: {error}", KINDS[kind].0));
                }
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

/// The `Authorization` header of HTTP basic authentication.
fn basic_auth(email: &str, key: &str) -> reqwest::header::HeaderValue {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}"));
    let mut value = reqwest::header::HeaderValue::from_str(&format!("Basic {encoded}"))
        .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static(""));
    value.set_sensitive(true);
    value
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

/// An organization the scenario serves, and the ramp of people over it.
struct Org {
    /// How the report names it.
    name: String,
    spec: SeedSpec,
    style: SeedStyle,
    /// The first step, and the least a step adds.
    first: usize,
    step: usize,
}

/// The organizations: a large one (25,000 people, 200,000 messages of history), and one of
/// 10,000 people with ten million messages of real text, all of them read, as in an
/// organization with years behind it.
fn organizations(quick: bool) -> Vec<Org> {
    let large = SeedSpec {
        users: if quick { 240 } else { 25_000 },
        channels: if quick { 12 } else { 500 },
        subscribers_per_channel: if quick { 40 } else { 200 },
        messages: if quick { 3_000 } else { 200_000 },
    };
    let history = SeedSpec {
        users: if quick { 120 } else { 10_000 },
        channels: if quick { 6 } else { 200 },
        subscribers_per_channel: if quick { 40 } else { 200 },
        messages: if quick { 5_000 } else { 10_000_000 },
    };
    let name = |spec: &SeedSpec, text: &str| {
        format!(
            "organization of {} people, {} channels, {} messages{text}",
            count_text(spec.users),
            spec.channels,
            count_text(spec.messages),
        )
    };
    vec![
        Org {
            name: name(&large, ""),
            spec: large,
            style: SeedStyle::default(),
            first: if quick { 60 } else { 1000 },
            step: if quick { 60 } else { 500 },
        },
        Org {
            name: name(&history, " of real text, all read"),
            spec: history,
            style: SeedStyle {
                corpus_text: true,
                history_read: true,
            },
            first: if quick { 60 } else { 2500 },
            step: if quick { 60 } else { 1250 },
        },
    ]
}

/// `25000` as "25,000".
fn count_text(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// The scenario: for each organization, steps of people until a health limit is crossed.
pub async fn people(quick: bool) -> Result<Vec<Row>, Fatal> {
    let open_files = crate::server::raise_open_files_limit(Some(OPEN_FILES));
    println!(
        "people: up to {open_files} open files for the generator and the server: at most {} people with a connection each",
        ceiling(open_files)
    );
    let (settle, window) = if quick {
        (Duration::from_secs(1), Duration::from_secs(2))
    } else {
        (Duration::from_secs(20), Duration::from_secs(30))
    };
    let mut rows = Vec::new();
    for org in organizations(quick) {
        rows.extend(serve(org, settle, window, open_files).await?);
    }
    Ok(rows)
}

/// The most people whose parked long-polls the server can hold under `open_files`: each takes a
/// socket, and the rest is kept for the actions' connections ([`ACTION_CONNECTIONS`]) and the
/// server's own files (its log, listeners, event descriptors).
fn ceiling(open_files: u64) -> usize {
    open_files.saturating_sub(2 * ACTION_CONNECTIONS as u64) as usize
}

/// The connections the people's actions share, at most, kept open between requests (a
/// thousand actions a second of some ten milliseconds each keep a few dozen busy).
const ACTION_CONNECTIONS: usize = 256;

/// Ramps people up on one organization until a health limit is crossed.
async fn serve(
    org: Org,
    settle: Duration,
    window: Duration,
    open_files: u64,
) -> Result<Vec<Row>, Fatal> {
    let ceiling = ceiling(open_files);
    let Org {
        name,
        spec,
        style,
        first,
        step,
    } = org;
    println!("people: {name}");
    let seeded = seed_styled(&spec, style)?;
    let data = seeded.tmp.path().join("data");
    let server = ChildServer::start(&data)?;
    server.wait_indexed()?;
    let base = server.url.clone();
    // Idle connections are dropped before the server's keep-alive (5 s) closes them, as a
    // browser's are: a request sent on a connection the server is closing fails.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(ACTION_CONNECTIONS)
        .pool_idle_timeout(Duration::from_secs(3))
        .timeout(Duration::from_secs(30))
        .build()?;
    // Each person's parked long-poll holds a connection. All from one address to the
    // server's one port, they would share that address's 28,232 ephemeral ports
    // (`ip_local_port_range`), as no real crowd does: at 11,389 people the kernel's search for a
    // free port (`__inet_hash_connect`) took two fifths of the generator's time, and near
    // 17,000 connections failed. People's polls come from several loopback addresses instead.
    let polls = (0..POLL_SOURCES)
        .map(|k| {
            reqwest::Client::builder()
                .pool_max_idle_per_host(usize::MAX)
                .timeout(Duration::from_secs(120))
                .local_address(std::net::IpAddr::V4(std::net::Ipv4Addr::new(
                    127,
                    0,
                    1,
                    k + 1,
                )))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let shared = Arc::new(Shared {
        window: Mutex::new(Window::default()),
        stop: AtomicBool::new(false),
        polls: AtomicU64::new(0),
        poll_errors: AtomicU64::new(0),
        poll_failures: Mutex::new(Vec::new()),
        registered: AtomicU64::new(0),
        unregistered: AtomicU64::new(0),
        signing_in: tokio::sync::Semaphore::new(SIGNING_IN),
        searches: match style.corpus_text {
            true => super::corpus::search_queries(400),
            false => Vec::new(),
        },
    });
    // Everyone, the owner too; each person's peers are a few others.
    let everyone: Vec<&(u64, String, String)> = seeded.users.iter().collect();
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
                auth: basic_auth(email, key),
                channels: subscriptions[*id as usize].clone(),
                peers: (1..=3)
                    .map(|k| 2 + (id + k * 97) % (spec.users - 1))
                    .collect(),
                seed: 0x9e37_79b9_7f4a_7c15 ^ id.wrapping_mul(0x1000_0001),
                view: View::Channel(1),
                seen: Vec::new(),
                own: None,
            };
            tasks.push(tokio::spawn(live(
                person,
                base.clone(),
                http.clone(),
                polls[*id as usize % polls.len()].clone(),
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
        let polls_before = (
            shared.polls.load(Ordering::Relaxed),
            shared.poll_errors.load(Ordering::Relaxed),
        );
        tokio::time::sleep(window).await;
        let seen = std::mem::take(&mut *shared.window.lock().unwrap_or_else(|p| p.into_inner()));
        // A long-poll that failed is a request that failed, as an action is.
        let (polls_answered, polls_failed) = (
            shared.polls.load(Ordering::Relaxed) - polls_before.0,
            shared.poll_errors.load(Ordering::Relaxed) - polls_before.1,
        );
        let mut times = seen.times_ms;
        times.sort_by(f64::total_cmp);
        let n = times.len() as f64;
        let mean = times.iter().sum::<f64>() / n.max(1.0);
        let p99 = times
            .get(((n - 1.0) * 0.99).max(0.0) as usize)
            .copied()
            .unwrap_or(0.0);
        let failed = (seen.errors + polls_failed) as f64;
        let error_rate = failed / (n + polls_answered as f64 + failed).max(1.0);
        let unregistered = shared.unregistered.load(Ordering::SeqCst) as usize;
        println!(
            "people: {count} people ({} signed in), {:.0} actions/s, mean {mean:.1} ms, p99 {p99:.1} ms, errors {error_rate:.5} (actions: {} timed out, {} not connected, {} refused by status); {polls_answered} polls answered, {polls_failed} failed",
            count - unregistered.min(count),
            n / window.as_secs_f64(),
            seen.timeouts,
            seen.connects,
            seen.statuses,
        );
        let kinds: Vec<String> = KINDS
            .iter()
            .zip(seen.by_kind.iter())
            .map(|((name, _), (ms, n))| format!("{name} {:.1} ms ×{n}", ms / (*n).max(1) as f64))
            .collect();
        println!("        mean by kind: {}", kinds.join(", "));
        if !seen.failures.is_empty() {
            println!("        failures: {}", seen.failures.join("; "));
        }
        let poll_failures = std::mem::take(
            &mut *shared
                .poll_failures
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        if !poll_failures.is_empty() {
            println!("        failed polls: {}", poll_failures.join("; "));
        }
        // A person who could not sign in is not served, whatever the others' times.
        let healthy = mean <= MAX_MEAN_MS
            && p99 <= MAX_P99_MS
            && error_rate <= MAX_ERROR_RATE
            && unregistered == 0;
        if healthy {
            served = count;
            best = Some((count, n / window.as_secs_f64(), mean, p99, seen.errors));
        } else {
            crossed = Some(format!(
                "at {count}: mean {mean:.0} ms, p99 {p99:.0} ms, errors {:.3} %, {unregistered} could not sign in",
                error_rate * 100.0
            ));
            break;
        }
        if count >= everyone.len() {
            break;
        }
        // Steps grow with the crowd (half again, at least `step`), so that a large organization
        // is reached in a dozen steps; the goal is a step of its own, so that the figure says
        // whether it is met, and so is the most people the open-file limit lets the server
        // hold a connection for.
        let next = count + step.max(count / 2);
        count = [GOAL, ceiling]
            .into_iter()
            .filter(|c| count < *c && *c < next)
            .min()
            .unwrap_or(next)
            .min(everyone.len());
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
    let limit = format!(
        "{limit}; {open_files} open files allowed a process here, so at most {ceiling} people connected"
    );
    let (_, actions, mean, p99, errors) = best.unwrap_or_default();
    rows.push(Row {
        scenario: "people".into(),
        case: format!(
            "people served, {name} (Mattermost's action mix and pace, an action every {AVG_IDLE_SECONDS:.0} s on average; a long-poll parked each; generator on the same 2 cores); {limit}"
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
        case: format!(
            "mean action time at {served} people, {name} (limit 100 ms); {errors} errors"
        ),
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
        case: format!("resident memory with {served}+ people connected, {name}"),
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

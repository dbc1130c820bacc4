//! Scenarios measured on the process a user runs: `chronicle serve` started as a child process
//! on a data directory, loaded over loopback, its resident memory (VmRSS) read from
//! `/proc/PID/status`, then stopped with SIGTERM and started again on the same data.

use super::load::drive;
use super::seed::{seed, SeedSpec};
use super::Row;
use crate::server::Fatal;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `chronicle serve` child process.
pub struct ChildServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// From spawning to the line saying it listens.
    pub started_in: Duration,
    spawned: Instant,
    /// Tells when the line saying the search index is ready came, and the line.
    indexed: std::sync::mpsc::Receiver<(Instant, String)>,
}

/// What a server's `Search index ready (N messages, S s, W words, B bytes)` line says (zeros
/// for what it does not).
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexReport {
    pub seconds: f64,
    pub words: u64,
    pub bytes: u64,
}

impl IndexReport {
    fn parse(line: &str) -> IndexReport {
        let inside = line
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(')'))
            .map_or("", |(inside, _)| inside);
        let mut report = IndexReport::default();
        for part in inside.split(", ") {
            match part.split_once(' ') {
                Some((n, "s")) => report.seconds = n.parse().unwrap_or_default(),
                Some((n, "words")) => report.words = n.parse().unwrap_or_default(),
                Some((n, "bytes")) => report.bytes = n.parse().unwrap_or_default(),
                _ => {}
            }
        }
        report
    }
}

impl ChildServer {
    /// Starts `chronicle serve` on `data_dir` (rate limits off: the load generator is one
    /// client) and waits until it listens.
    pub fn start(data_dir: &Path) -> Result<ChildServer, Fatal> {
        let started = Instant::now();
        let mut child = server_command()?
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--bind", "127.0.0.1:0"])
            .args(["--rate-limit-user", "0", "--rate-limit-ip", "0"])
            .args(["--rate-limit-logins", "0"])
            .env("CHRONICLE_LIMITS_PASSWORD_CHECKS_PER_ADDRESS", "0")
            .stdout(Stdio::piped())
            .stderr(server_log()?)
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout from the server")?;
        // The server prints one line when it listens; read it on a thread so that a server
        // that dies or hangs cannot hang the bench.
        let (tx, rx) = std::sync::mpsc::channel();
        let (indexed_tx, indexed) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("Search index ready") {
                    let _ = indexed_tx.send((Instant::now(), line.clone()));
                }
                if let Some(rest) = line.strip_prefix("Chronicle listening on ") {
                    let url = rest
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    let _ = tx.send(url);
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(url) => Ok(ChildServer {
                child,
                url,
                started_in: started.elapsed(),
                spawned: started,
                indexed,
            }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err("the server did not start within 300 s".into())
            }
        }
    }

    /// Waits until the server's search index is built (it serves before), and returns the
    /// time from spawning to then.
    pub fn wait_indexed(&self) -> Result<Duration, Fatal> {
        self.wait_index_report().map(|(after, _)| after)
    }

    /// [`ChildServer::wait_indexed`], with what the server said of its index.
    pub fn wait_index_report(&self) -> Result<(Duration, IndexReport), Fatal> {
        match self.indexed.recv_timeout(Duration::from_secs(600)) {
            Ok((at, line)) => Ok((at - self.spawned, IndexReport::parse(&line))),
            Err(_) => Err("the server did not build its search index within 600 s".into()),
        }
    }

    /// The child's resident memory, in bytes.
    pub fn resident_bytes(&self) -> Result<u64, Fatal> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .ok_or("no VmRSS in /proc/PID/status")?;
        Ok(kb * 1024)
    }

    /// Stops the server as an operator does (SIGTERM), waiting at most a minute.
    pub fn stop(mut self) -> Result<(), Fatal> {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        Err("the server did not stop within 60 s of SIGTERM".into())
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        // A server still running when the bench gives up must not outlive it.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The command that runs the child server: this executable, or, when
/// `$CHRONICLE_BENCH_SERVER_WRAPPER` names a program (a profiler such as `heaptrack`), that
/// program with this executable as its argument. Resident memory is then the wrapper's.
pub(super) fn server_command() -> Result<Command, Fatal> {
    let exe = std::env::current_exe()?;
    Ok(match std::env::var_os("CHRONICLE_BENCH_SERVER_WRAPPER") {
        Some(wrapper) => {
            let mut command = Command::new(wrapper);
            command.arg(exe);
            command
        }
        None => Command::new(exe),
    })
}

/// Where a child server's own log goes: appended to `$CHRONICLE_BENCH_SERVER_LOG` when it is
/// set (to see where a start spends its time), else nowhere.
fn server_log() -> Result<Stdio, Fatal> {
    match std::env::var_os("CHRONICLE_BENCH_SERVER_LOG") {
        Some(path) => Ok(std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?
            .into()),
        None => Ok(Stdio::null()),
    }
}

/// Bytes of every file under `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// A row whose baseline is another figure of the same run.
#[allow(clippy::too_many_arguments)]
fn figure(
    case: &str,
    value: f64,
    unit: &str,
    baseline: Option<f64>,
    label: &str,
    higher_is_better: bool,
    samples: u64,
    errors: u64,
) -> Row {
    figure_in(
        "sustained",
        case,
        value,
        unit,
        baseline,
        label,
        higher_is_better,
        samples,
        errors,
    )
}

/// [`figure`] for another scenario.
#[allow(clippy::too_many_arguments)]
pub(super) fn figure_in(
    scenario: &str,
    case: &str,
    value: f64,
    unit: &str,
    baseline: Option<f64>,
    label: &str,
    higher_is_better: bool,
    samples: u64,
    errors: u64,
) -> Row {
    Row {
        scenario: scenario.into(),
        case: case.into(),
        value,
        unit: unit.into(),
        p50_ms: None,
        p99_ms: None,
        baseline,
        baseline_label: label.into(),
        ratio: baseline.map(|b| value / b.max(1e-9)),
        higher_is_better,
        samples,
        errors,
    }
}

/// What one channel size gave.
struct Sustained {
    rates: Vec<f64>,
    rows: Vec<Row>,
}

/// Sends messages to one channel of `subscribers` members from 64 connections for `windows`
/// windows of `window` each, sampling the server's resident memory after each; then stops and
/// starts it on the same data.
async fn one_size(subscribers: u64, windows: usize, window: Duration) -> Result<Sustained, Fatal> {
    let seeded = seed(&SeedSpec {
        users: subscribers,
        channels: 1,
        subscribers_per_channel: subscribers,
        messages: 0,
    })?;
    let data: PathBuf = seeded.tmp.path().join("data");
    let server = ChildServer::start(&data)?;
    server.wait_indexed()?;
    let client = super::load::client()?;
    let url = format!("{}/api/v1/messages", server.url);
    let idle = server.resident_bytes()?;
    let mut rates = Vec::new();
    let (mut sent, mut errors) = (0u64, 0u64);
    for w in 0..windows {
        let users = seeded.users.clone();
        let (client, url) = (client.clone(), url.clone());
        let (stats, _) = drive(
            64,
            u64::MAX,
            window,
            move |i| (i, 0u64),
            move |(i, n): (usize, u64)| {
                let (client, url) = (client.clone(), url.clone());
                let (_, email, key) = users[i % users.len()].clone();
                async move {
                    let text = super::corpus::text(i as u64 * 7919 + n, || {
                        format!("Window {w}, sender {i}, line {n}: a typical short chat line.")
                    });
                    let topic = format!("topic {}", (i as u64 + n) % 50);
                    let ok =
                        super::load::send_to_channel_one(&client, &url, (email, key), topic, text)
                            .await;
                    ((i, n + 1), ok)
                }
            },
        )
        .await;
        sent += stats.ok;
        errors += stats.errors;
        rates.push(stats.per_second);
    }
    let live = server.resident_bytes()?;
    server.stop()?;
    let disk = disk_bytes(&data);
    let restarted = ChildServer::start(&data)?;
    let restart_seconds = restarted.started_in.as_secs_f64();
    restarted.wait_indexed()?;
    let after_restart = restarted.resident_bytes()?;
    restarted.stop()?;
    let per = |bytes: u64| bytes.saturating_sub(idle) as f64 / sent.max(1) as f64;
    let disk_per_message = disk as f64 / sent.max(1) as f64;
    let first = rates.first().copied().unwrap_or(0.0);
    let last = rates.last().copied().unwrap_or(0.0);
    let label = format!("{subscribers} subscribers");
    let rows = vec![
        figure(
            &format!("messages/s, first window, {label}"),
            first,
            "msg/s",
            None,
            "",
            true,
            sent,
            errors,
        ),
        figure(
            &format!("messages/s, last of {windows} windows, {label}"),
            last,
            "msg/s",
            Some(first),
            "the first window",
            true,
            sent,
            errors,
        ),
        figure(
            &format!("resident bytes per message while serving, {label}"),
            per(live),
            "bytes",
            Some(disk_per_message),
            "bytes per message on disk",
            false,
            sent,
            0,
        ),
        figure(
            &format!("resident bytes per message after a restart, {label}"),
            per(after_restart),
            "bytes",
            Some(disk_per_message),
            "bytes per message on disk",
            false,
            sent,
            0,
        ),
        figure(
            &format!("restart until serving, {sent} messages, {label}"),
            restart_seconds,
            "s",
            None,
            "",
            false,
            sent,
            0,
        ),
        figure(
            &format!("disk bytes per message, {label}"),
            disk_per_message,
            "bytes",
            None,
            "",
            false,
            sent,
            0,
        ),
    ];
    Ok(Sustained { rates, rows })
}

/// Scenario `sustained`: the serving process under sustained sends to one channel of 10 and of
/// 256 subscribers (see `one_size`); the 256-subscriber rate is compared with the 10-subscriber
/// one.
pub async fn sustained(quick: bool) -> Result<Vec<Row>, Fatal> {
    let (windows, window) = if quick {
        (2, Duration::from_secs(2))
    } else {
        (4, Duration::from_secs(15))
    };
    let small = one_size(10, windows, window).await?;
    let large = one_size(256, windows, window).await?;
    let mean = |r: &[f64]| r.iter().sum::<f64>() / r.len().max(1) as f64;
    let mut rows = small.rows;
    rows.extend(large.rows);
    rows.push(figure(
        &format!(
            "messages/s at 256 subscribers, all windows; {}",
            super::corpus::source()
        ),
        mean(&large.rates),
        "msg/s",
        Some(mean(&small.rates)),
        "at 10 subscribers",
        true,
        0,
        0,
    ));
    Ok(rows)
}

/// Resident memory of a server started on a data directory seeded with `spec`, once it serves.
fn resident_after_start(spec: &SeedSpec) -> Result<(u64, u64), Fatal> {
    let seeded = seed(spec)?;
    let data = seeded.tmp.path().join("data");
    let server = ChildServer::start(&data)?;
    server.wait_indexed()?;
    // Let start-up's last allocations settle (snapshot writing, the first timers).
    std::thread::sleep(Duration::from_millis(500));
    let resident = server.resident_bytes()?;
    server.stop()?;
    Ok((resident, disk_bytes(&data)))
}

/// How long `chronicle serve` takes until it serves on `messages` seeded messages, and until
/// its search index is ready: from the log alone (a replay from event 1), then with a snapshot
/// at the log's end, written offline as a running server writes its own.
fn start_times(messages: u64) -> Result<[(f64, f64); 2], Fatal> {
    let seeded = seed(&SeedSpec {
        users: 10,
        channels: 1,
        subscribers_per_channel: 10,
        messages,
    })?;
    let data = seeded.tmp.path().join("data");
    let server = ChildServer::start(&data)?;
    let from_log = (
        server.started_in.as_secs_f64(),
        server.wait_indexed()?.as_secs_f64(),
    );
    server.stop()?;
    {
        let layout = crate::server::Layout::new(&data);
        let log = crate::store::SledLog::open(&layout.log())?;
        let state = crate::replay::fold(&log, None, |_| {})?;
        crate::snapshot::write(
            &layout.dir,
            &log,
            &state,
            2,
            crate::snapshot::StateDigest::Recorded,
        )?;
    }
    let server = ChildServer::start(&data)?;
    let from_snapshot = (
        server.started_in.as_secs_f64(),
        server.wait_indexed()?.as_secs_f64(),
    );
    server.stop()?;
    Ok([from_log, from_snapshot])
}

fn memory_row(case: &str, value: f64, baseline: Option<f64>, label: &str) -> Row {
    Row {
        scenario: "memory".into(),
        case: case.into(),
        value,
        unit: "bytes".into(),
        p50_ms: None,
        p99_ms: None,
        baseline,
        baseline_label: label.into(),
        ratio: baseline.map(|b| value / b.max(1.0)),
        higher_is_better: false,
        samples: 0,
        errors: 0,
    }
}

/// Scenario `memory`: the resident memory of `chronicle serve` itself, started on seeded data
/// directories that differ in one thing (10,000 more users; a million more messages in a
/// 10-member channel, 8,000 in quick mode and scaled; 10,000 registered event queues, 1,000 in
/// quick mode), against
/// the bytes those take on disk.
pub async fn memory(quick: bool) -> Result<Vec<Row>, Fatal> {
    let spec = |users, messages| SeedSpec {
        users,
        channels: 1,
        subscribers_per_channel: users,
        messages,
    };
    let (base, base_disk) = resident_after_start(&spec(10, 0))?;
    let (with_users, users_disk) = resident_after_start(&spec(10_010, 0))?;
    // Quick mode (the test command's smoke run, a debug build) keeps to a few seconds a part.
    let messages: u64 = if quick { 8_000 } else { 1_000_000 };
    let (with_messages, messages_disk) = resident_after_start(&spec(10, messages))?;
    let scale = 1_000_000.0 / messages as f64;
    let grown = |value: u64| value.saturating_sub(base) as f64;
    let disk = |value: u64| value.saturating_sub(base_disk) as f64;
    // Event queues: 10,000 registrations (25 a user; 2 or 3 in quick mode) on a running server.
    let seeded = seed(&spec(400, 0))?;
    let server = ChildServer::start(&seeded.tmp.path().join("data"))?;
    server.wait_indexed()?;
    let before = server.resident_bytes()?;
    let client = super::load::client()?;
    let url = format!("{}/api/v1/register", server.url);
    let queues: u64 = if quick { 1_000 } else { 10_000 };
    let users = seeded.users.clone();
    let (stats, _) = drive(
        8,
        queues,
        Duration::from_secs(300),
        move |i| i,
        move |i: usize| {
            let (client, url) = (client.clone(), url.clone());
            let (_, email, key) = users[i % users.len()].clone();
            async move {
                let ok = client
                    .post(&url)
                    .basic_auth(email, Some(key))
                    .form(&[("fetch_event_types", "[\"message\"]")])
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success());
                (i + 8, ok)
            }
        },
    )
    .await;
    let after = server.resident_bytes()?;
    server.stop()?;
    let (hashed, restarted, created) =
        // (Each an argon2id hash, slow in the debug build of the smoke run: 30 there.)
        people_through_the_api(if quick { 30 } else { 1000 }).await?;
    let [(from_log, log_indexed), (from_snapshot, snapshot_indexed)] = start_times(messages)?;
    let start_row = |case: String, value: f64, baseline: Option<f64>, label: &str| Row {
        unit: "s".into(),
        ..memory_row(&case, value, baseline, label)
    };
    Ok(vec![
        start_row(
            format!("start until serving, {messages} messages, from the log alone"),
            from_log,
            None,
            "",
        ),
        start_row(
            format!("start until serving, {messages} messages, from a snapshot at the log's end"),
            from_snapshot,
            Some(from_log),
            "from the log alone",
        ),
        start_row(
            format!("start until the search index is ready, {messages} messages, from the log alone (it serves before)"),
            log_indexed,
            Some(from_log),
            "until serving",
        ),
        start_row(
            format!("start until the search index is ready, {messages} messages, from a snapshot (it serves before)"),
            snapshot_indexed,
            Some(from_snapshot),
            "until serving",
        ),
        memory_row(
            "resident bytes per 10,000 users (the serving process)",
            grown(with_users),
            Some(disk(users_disk)),
            "their log on disk",
        ),
        memory_row(
            &format!("resident bytes per 1,000,000 messages (measured on {messages}, 10 recipients each, the serving process after start)"),
            grown(with_messages) * scale,
            Some(disk(messages_disk) * scale),
            "their log on disk",
        ),
        memory_row(
            "resident bytes per idle event queue (the serving process)",
            after.saturating_sub(before) as f64 / stats.ok.max(1) as f64,
            None,
            "",
        ),
        memory_row(
            &format!("resident bytes after creating {created} people through POST /users (an argon2id hash of 19 MiB each), the serving process"),
            hashed as f64,
            Some(restarted as f64),
            "the same organization restarted (no hash run)",
        ),
    ])
}

/// Creates `count` people with passwords through the API, two at a time, on a running server;
/// its resident memory then, and after a restart on the same data (the same state, no hash
/// ever run), and how many were created.
async fn people_through_the_api(count: u64) -> Result<(u64, u64, u64), Fatal> {
    let seeded = seed(&SeedSpec {
        users: 10,
        channels: 1,
        subscribers_per_channel: 10,
        messages: 0,
    })?;
    let data = seeded.tmp.path().join("data");
    let server = ChildServer::start(&data)?;
    server.wait_indexed()?;
    let client = super::load::client()?;
    let url = format!("{}/api/v1/users", server.url);
    let (_, owner, key) = seeded.users[0].clone();
    let (stats, _) = drive(
        2,
        count,
        Duration::from_secs(600),
        move |i| i,
        move |i: usize| {
            let (client, url, owner, key) =
                (client.clone(), url.clone(), owner.clone(), key.clone());
            async move {
                let ok = client
                    .post(&url)
                    .basic_auth(owner, Some(key))
                    .form(&[
                        ("email", format!("hashed{i}@bench.local")),
                        ("password", format!("a long password number {i}")),
                        ("full_name", format!("Hashed {i}")),
                    ])
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success());
                (i + 2, ok)
            }
        },
    )
    .await;
    if stats.ok < count {
        return Err(format!("only {} of {count} people were created", stats.ok).into());
    }
    let hashed = server.resident_bytes()?;
    server.stop()?;
    let server = ChildServer::start(&data)?;
    server.wait_indexed()?;
    let restarted = server.resident_bytes()?;
    server.stop()?;
    Ok((hashed, restarted, stats.ok))
}

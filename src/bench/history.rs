//! Scenario `history`: how the write path holds up as one channel's history grows to ten
//! million messages of real text (issue 37). 256 members, 500 topics and 64 senders send the
//! messages in ten windows of equal count to `chronicle serve` (a child process); each
//! window's rate is measured, and the serving process's resident memory and its restart after
//! the first tenth (one million) and at the end. At both points the restarted server's search
//! index is measured too (issue 38): its build time, its size a message, and the latency of
//! searches for words drawn from the same text, from one client.

use super::load::drive;
use super::seed::{seed, SeedSpec};
use super::sustained::{figure_in, ChildServer, IndexReport};
use super::Row;
use crate::server::Fatal;
use std::time::Duration;

const MEMBERS: u64 = 256;
const TOPICS: u64 = 500;
const SENDERS: usize = 64;
const WINDOWS: u64 = 10;

/// What was measured at one point of the history.
struct Point {
    messages: u64,
    serving_per_message: f64,
    restart_seconds: f64,
    restarted_per_message: f64,
    index: IndexReport,
    /// Resident growth while the index was built, a message (a cross-check of its count).
    index_resident_per_message: f64,
    /// Search latency: p50 and p99 in ms, and the searches that failed.
    search: (f64, f64, u64),
}

/// Stops `server`, starts it again on `data`, and measures: resident bytes a message while it
/// served and after the restart (above `idle`), and the restart until it serves.
fn measure(
    server: ChildServer,
    data: &std::path::Path,
    idle: u64,
    messages: u64,
) -> Result<(ChildServer, Point), Fatal> {
    let serving = server.resident_bytes()?;
    server.stop()?;
    let restarted = ChildServer::start(data)?;
    let restart_seconds = restarted.started_in.as_secs_f64();
    let unindexed = restarted.resident_bytes()?;
    let (_, index) = restarted.wait_index_report()?;
    let after = restarted.resident_bytes()?;
    let per = |bytes: u64| bytes.saturating_sub(idle) as f64 / messages.max(1) as f64;
    Ok((
        restarted,
        Point {
            messages,
            serving_per_message: per(serving),
            restart_seconds,
            restarted_per_message: per(after),
            index,
            index_resident_per_message: after.saturating_sub(unindexed) as f64
                / messages.max(1) as f64,
            search: (0.0, 0.0, 0),
        },
    ))
}

/// Runs `queries` one after another as `user` (newest 50 of each search's results): p50 and
/// p99 in ms, and how many failed.
async fn search_latency(
    client: &reqwest::Client,
    url: &str,
    (email, key): (&str, &str),
    queries: &[String],
) -> (f64, f64, u64) {
    let mut samples = Vec::with_capacity(queries.len());
    let mut errors = 0;
    for query in queries {
        let narrow = serde_json::json!([["search", query]]).to_string();
        let started = std::time::Instant::now();
        let answer = client
            .get(format!("{url}/api/v1/messages"))
            .basic_auth(email, Some(key))
            .query(&[
                ("anchor", "newest"),
                ("num_before", "50"),
                ("num_after", "0"),
                ("narrow", narrow.as_str()),
            ])
            .send()
            .await;
        let ok = match answer {
            Ok(answer) if answer.status().is_success() => answer.bytes().await.is_ok(),
            _ => false,
        };
        if ok {
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
        } else {
            errors += 1;
        }
    }
    samples.sort_by(f64::total_cmp);
    let at = |p: f64| {
        samples
            .get(((samples.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    (at(0.5), at(0.99), errors)
}

/// The number of messages: `$CHRONICLE_BENCH_HISTORY_MESSAGES` when it is set (to study one
/// size), else ten million (5,000 when quick: the test command's smoke run, on a debug
/// build, where 200,000 took a minute and a half of CI's twenty, 50,000 some 45 s, 20,000
/// some 20 s and 10,000 some 15 s).
fn total_messages(quick: bool) -> u64 {
    std::env::var("CHRONICLE_BENCH_HISTORY_MESSAGES")
        .ok()
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| *n >= WINDOWS)
        .unwrap_or(if quick { 5_000 } else { 10_000_000 })
}

/// Moves the data directory to `$CHRONICLE_BENCH_KEEP_DATA` when it is set (and names no
/// existing path), so that its start can be studied after the run; else it goes with the
/// scenario's temporary directory.
fn keep_data(data: &std::path::Path) {
    let Some(to) = std::env::var_os("CHRONICLE_BENCH_KEEP_DATA") else {
        return;
    };
    let to = std::path::PathBuf::from(to);
    if to.exists() {
        eprintln!("history: {} exists; the data was not kept", to.display());
        return;
    }
    let kept = std::fs::rename(data, &to).or_else(|_| {
        // Across filesystems: copy, then the temporary directory goes as usual.
        std::process::Command::new("cp")
            .arg("-a")
            .arg(data)
            .arg(&to)
            .status()
            .and_then(|status| match status.success() {
                true => Ok(()),
                false => Err(std::io::Error::other(format!("cp -a: {status}"))),
            })
    });
    match kept {
        Ok(()) => println!("history: data kept in {}", to.display()),
        Err(error) => eprintln!("history: the data was not kept: {error}"),
    }
}

pub async fn history(quick: bool) -> Result<Vec<Row>, Fatal> {
    let total = total_messages(quick);
    let per_window = total / WINDOWS;
    let seeded = seed(&SeedSpec {
        users: MEMBERS,
        channels: 1,
        subscribers_per_channel: MEMBERS,
        messages: 0,
    })?;
    let data = seeded.tmp.path().join("data");
    let mut server = ChildServer::start(&data)?;
    server.wait_indexed()?;
    let idle = server.resident_bytes()?;
    let client = super::load::client()?;
    let queries = super::corpus::search_queries(if quick { 40 } else { 400 });
    let (mut rates, mut sent, mut errors) = (Vec::new(), 0u64, 0u64);
    let mut points = Vec::new();
    for w in 0..WINDOWS {
        let users = seeded.users.clone();
        let (senders, url) = (client.clone(), format!("{}/api/v1/messages", server.url));
        let offset = sent;
        let (stats, _) = drive(
            SENDERS,
            per_window,
            Duration::from_secs(3600),
            move |i| (i, 0u64),
            move |(i, n): (usize, u64)| {
                let (client, url) = (senders.clone(), url.clone());
                let (_, email, key) = users[i % users.len()].clone();
                async move {
                    let serial = offset + n * SENDERS as u64 + i as u64;
                    let text = super::corpus::text(serial.wrapping_mul(7919), || {
                        format!("Message {serial}: a typical short chat line.")
                    });
                    let topic = format!("topic {}", serial % TOPICS);
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
        println!(
            "history: window {} of {WINDOWS}, {sent} messages, {:.0} msg/s",
            w + 1,
            stats.per_second
        );
        if w == 0 || w == WINDOWS - 1 {
            let (restarted, mut point) = measure(server, &data, idle, sent)?;
            server = restarted;
            let (_, email, key) = &seeded.users[1];
            point.search = search_latency(&client, &server.url, (email, key), &queries).await;
            points.push(point);
        }
    }
    server.stop()?;
    keep_data(&data);
    let first = rates.first().copied().unwrap_or(0.0);
    let last = rates.last().copied().unwrap_or(0.0);
    let slowest = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let row = |case: String, value: f64, unit: &str, baseline: Option<f64>, label: &str| {
        let higher = unit.ends_with("/s");
        figure_in(
            "history", &case, value, unit, baseline, label, higher, sent, errors,
        )
    };
    let source = super::corpus::source();
    let mut rows = vec![
        row(
            format!("messages/s, first window (the first {per_window}); {MEMBERS} members, {TOPICS} topics, {SENDERS} senders; {source}"),
            first,
            "msg/s",
            None,
            "",
        ),
        row(
            format!("messages/s, last window (to {sent} messages)"),
            last,
            "msg/s",
            Some(first),
            "the first window (goal: 0.8x or more)",
        ),
        row(
            format!("messages/s, slowest of {WINDOWS} windows"),
            slowest,
            "msg/s",
            Some(first),
            "the first window",
        ),
    ];
    for point in points {
        let m = point.messages;
        rows.push(row(
            format!("resident bytes per message while serving, {m} messages"),
            point.serving_per_message,
            "bytes",
            Some(600.0),
            "the goal: 600",
        ));
        rows.push(row(
            format!("resident bytes per message after a restart, {m} messages"),
            point.restarted_per_message,
            "bytes",
            Some(400.0),
            "the goal: 400",
        ));
        rows.push(row(
            format!("restart until serving, {m} messages"),
            point.restart_seconds,
            "s",
            Some(m as f64 / 2_000_000.0),
            "the goal: 1 s per 2 million",
        ));
        rows.push(row(
            format!(
                "search index built at start (it serves before), {m} messages, {} words",
                point.index.words
            ),
            point.index.seconds,
            "s",
            None,
            "",
        ));
        rows.push(row(
            format!(
                "search index heap bytes per message, counted by its allocations, {m} messages"
            ),
            point.index.bytes as f64 / m.max(1) as f64,
            "bytes",
            Some(150.0),
            "the goal: 150",
        ));
        rows.push(row(
            format!("resident growth per message while the search index was built, {m} messages (a cross-check)"),
            point.index_resident_per_message,
            "bytes",
            Some(150.0),
            "the goal: 150",
        ));
        let (p50, p99, failed) = point.search;
        let mut search = figure_in(
            "history",
            &format!("search, newest 50 of the results, one client, {} queries (a word, two words, a phrase, a prefix, drawn from the same text), {m} messages", queries.len()),
            p99,
            "ms p99",
            Some(50.0),
            "the goal: 50 ms",
            false,
            queries.len() as u64 - failed,
            failed,
        );
        search.p50_ms = Some(p50);
        search.p99_ms = Some(p99);
        rows.push(search);
    }
    Ok(rows)
}

//! The load generator: N concurrent workers, each looping over one request until a shared
//! request budget or a deadline runs out, recording latencies.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Throughput and latency of one run.
#[derive(Debug, Clone)]
pub struct Stats {
    pub ok: u64,
    pub errors: u64,
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// Runs `concurrency` workers; worker `i` gets its own state from `init(i)` and calls `step`
/// repeatedly; `step` returns whether the request succeeded. Returns the workers' final states
/// (in worker order) with the statistics.
pub async fn drive<S, I, F, Fut>(
    concurrency: usize,
    budget: u64,
    deadline: Duration,
    init: I,
    step: F,
) -> (Stats, Vec<S>)
where
    S: Send + 'static,
    I: Fn(usize) -> S,
    F: Fn(S) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = (S, bool)> + Send,
{
    let issued = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(concurrency);
    for i in 0..concurrency {
        let mut state = init(i);
        let issued = issued.clone();
        let errors = errors.clone();
        let step = step.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while issued.fetch_add(1, Ordering::Relaxed) < budget && started.elapsed() < deadline {
                let t = Instant::now();
                let (next, ok) = step(state).await;
                state = next;
                if ok {
                    latencies.push(t.elapsed());
                } else {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            (latencies, state)
        }));
    }
    let mut all = Vec::new();
    let mut states = Vec::with_capacity(concurrency);
    for task in tasks {
        if let Ok((latencies, state)) = task.await {
            all.extend(latencies);
            states.push(state);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let stats = Stats {
        ok: all.len() as u64,
        errors: errors.load(Ordering::Relaxed),
        per_second: all.len() as f64 / elapsed.max(1e-9),
        p50_ms: percentile(&all, 0.50),
        p99_ms: percentile(&all, 0.99),
    };
    (stats, states)
}

/// The load generator's HTTP client.
/// Sends `content` to `topic` of channel 1 as `email` (`POST url`, the messages endpoint);
/// whether it was accepted.
pub async fn send_to_channel_one(
    client: &reqwest::Client,
    url: &str,
    (email, key): (String, String),
    topic: String,
    content: String,
) -> bool {
    let body = [
        ("type", "stream".to_owned()),
        ("to", "1".to_owned()),
        ("topic", topic),
        ("content", content),
    ];
    client
        .post(url)
        .basic_auth(email, Some(key))
        .form(&body)
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}

pub fn client() -> Result<reqwest::Client, crate::server::Fatal> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(512)
        .timeout(Duration::from_secs(30))
        .build()?)
}

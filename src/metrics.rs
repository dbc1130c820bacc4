//! Metrics in Prometheus' text format (`GET /metrics`), through the `prometheus` crate.
//!
//! Counters and histograms are kept where things happen (the HTTP layer, the writer's group
//! commit, the fan-out to event queues, long-polls, rate limits); the sizes of things (the log's
//! seq, people, channels, messages, queues, snapshot age, a cluster node's lag) are read when a
//! scrape asks ([`Metrics::render`]), so they cost nothing between scrapes. One set per process
//! ([`get`]).
//!
//! Where `/metrics` is served (`[metrics]` in the configuration): on a separate address
//! (`metrics.bind`, typically loopback or a management network, no credentials), and/or on the
//! main address behind a bearer token (`metrics.token`, a secret). With neither it is not
//! served at all.

use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    Opts, Registry, TextEncoder,
};
use std::sync::OnceLock;

/// Everything the process counts.
pub struct Metrics {
    registry: Registry,
    /// One scrape at a time sets the read-at-scrape gauges and gathers them.
    rendering: std::sync::Mutex<()>,
    pub http_requests: IntCounterVec,
    pub http_seconds: HistogramVec,
    pub commit_batch_events: Histogram,
    pub commit_flush_seconds: Histogram,
    pub log_bytes_written: IntCounter,
    pub fanout_seconds: Histogram,
    pub parked_polls: IntGauge,
    pub rate_limited: IntCounterVec,
    pub start_seconds: Gauge,
    /// In a cluster: the NATS client's connection events (`connected`, `disconnected`); every
    /// `connected` after the first is a reconnect.
    pub nats_connections: IntCounterVec,
    /// Bytes the data directory's filesystem still has for the server (the reserve's watcher).
    pub disk_available: IntGauge,
    /// Bytes kept free: below this, writes are refused (0: no reserve).
    pub disk_reserve: IntGauge,
    /// 0: writes go through; 1: refused below the reserve; 2: paused after a storage error
    /// (the next write tries again); 3: stopped until restart.
    pub writes_state: IntGauge,
    /// Writes refused by the storage's state, by why (`disk_reserve`, `storage_error`,
    /// `slow_storage`, `unreachable`).
    pub writes_refused: IntCounterVec,
    // Read at scrape time.
    log_seq: IntGauge,
    people: IntGauge,
    channels: IntGauge,
    messages: IntGauge,
    event_queues: IntGauge,
    snapshot_age: Gauge,
    cluster_lag: IntGauge,
    cluster_writer: IntGauge,
}

/// What a scrape reads from the running server.
#[derive(Debug, Default, Clone)]
pub struct Sizes {
    pub log_seq: u64,
    pub people: usize,
    pub channels: usize,
    pub messages: usize,
    pub event_queues: usize,
    /// Seconds since the newest snapshot was written (`None`: there is none).
    pub snapshot_age_seconds: Option<f64>,
    /// In a cluster: events between this node's state and the stream's end, and whether this
    /// node holds the writer's lease.
    pub cluster: Option<(u64, bool)>,
}

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn histogram(name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn int_gauge(name: &str, help: &str) -> IntGauge {
    IntGauge::new(name, help).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn gauge(name: &str, help: &str) -> Gauge {
    Gauge::new(name, help).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Latency buckets from 100 µs to 10 s.
fn seconds_buckets() -> Vec<f64> {
    vec![
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
        5.0, 10.0,
    ]
}

impl Metrics {
    #[allow(clippy::expect_used)]
    fn new() -> Metrics {
        let registry = Registry::new();
        let m = Metrics {
            http_requests: counter_vec(
                "chronicle_http_requests_total",
                "HTTP requests answered, by route pattern, method and status",
                &["route", "method", "status"],
            ),
            http_seconds: HistogramVec::new(
                HistogramOpts::new(
                    "chronicle_http_request_duration_seconds",
                    "Time from a request's arrival to its answer (long-polls included), by route pattern and method",
                )
                .buckets({
                    let mut b = seconds_buckets();
                    b.extend([30.0, 60.0]);
                    b
                }),
                &["route", "method"],
            )
            .expect("valid histogram"),
            commit_batch_events: histogram(
                "chronicle_commit_batch_events",
                "Events written by one group commit (one append and one flush)",
                vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0],
            ),
            commit_flush_seconds: histogram(
                "chronicle_commit_flush_seconds",
                "Time to append and flush one group commit to the log",
                seconds_buckets(),
            ),
            log_bytes_written: IntCounter::new(
                "chronicle_log_written_bytes_total",
                "Bytes of records this process appended to the log",
            )
            .expect("valid counter"),
            fanout_seconds: histogram(
                "chronicle_fanout_seconds",
                "Time to put one durable batch's events into every event queue concerned",
                seconds_buckets(),
            ),
            parked_polls: int_gauge(
                "chronicle_parked_long_polls",
                "GET /events requests waiting for an event",
            ),
            rate_limited: counter_vec(
                "chronicle_rate_limited_total",
                "Requests refused by a rate limit, by what they were counted against",
                &["limit"],
            ),
            start_seconds: gauge(
                "chronicle_start_replay_seconds",
                "Seconds the last start took to load the state (snapshot and log) before serving",
            ),
            nats_connections: counter_vec(
                "chronicle_nats_connection_events_total",
                "In a cluster: the NATS connection's events (connected: first connection and every reconnect; disconnected: a connection lost)",
                &["event"],
            ),
            disk_available: int_gauge(
                "chronicle_disk_available_bytes",
                "Bytes still available to the server on the data directory's filesystem",
            ),
            disk_reserve: int_gauge(
                "chronicle_disk_reserve_bytes",
                "Free space kept in reserve: below it writes are refused (0: no reserve)",
            ),
            writes_state: int_gauge(
                "chronicle_writes_state",
                "0 writes go through, 1 refused below the disk reserve, 2 paused after a storage error (the next write tries again), 3 stopped until restart, 4 refused while the cluster's log does not answer",
            ),
            writes_refused: counter_vec(
                "chronicle_writes_refused_total",
                "Writes refused by the storage's state (disk_reserve, storage_error, slow_storage, unreachable)",
                &["reason"],
            ),
            log_seq: int_gauge(
                "chronicle_log_seq",
                "The last event applied to the state",
            ),
            people: int_gauge("chronicle_people", "Accounts (people and bots, active or not)"),
            channels: int_gauge("chronicle_channels", "Channels"),
            messages: int_gauge("chronicle_messages", "Messages kept"),
            event_queues: int_gauge("chronicle_event_queues", "Registered event queues"),
            snapshot_age: gauge(
                "chronicle_snapshot_age_seconds",
                "Seconds since the newest projection snapshot was written (-1: none)",
            ),
            cluster_lag: int_gauge(
                "chronicle_cluster_lag_events",
                "In a cluster: events between this node's state and the stream's end",
            ),
            cluster_writer: int_gauge(
                "chronicle_cluster_writer",
                "In a cluster: 1 when this node holds the writer's lease",
            ),
            registry,
            rendering: std::sync::Mutex::new(()),
        };
        let collectors: Vec<Box<dyn prometheus::core::Collector>> = vec![
            Box::new(m.http_requests.clone()),
            Box::new(m.http_seconds.clone()),
            Box::new(m.commit_batch_events.clone()),
            Box::new(m.commit_flush_seconds.clone()),
            Box::new(m.log_bytes_written.clone()),
            Box::new(m.fanout_seconds.clone()),
            Box::new(m.parked_polls.clone()),
            Box::new(m.rate_limited.clone()),
            Box::new(m.start_seconds.clone()),
            Box::new(m.nats_connections.clone()),
            Box::new(m.disk_available.clone()),
            Box::new(m.disk_reserve.clone()),
            Box::new(m.writes_state.clone()),
            Box::new(m.writes_refused.clone()),
            Box::new(m.log_seq.clone()),
            Box::new(m.people.clone()),
            Box::new(m.channels.clone()),
            Box::new(m.messages.clone()),
            Box::new(m.event_queues.clone()),
            Box::new(m.snapshot_age.clone()),
            Box::new(m.cluster_lag.clone()),
            Box::new(m.cluster_writer.clone()),
        ];
        for collector in collectors {
            m.registry
                .register(collector)
                .expect("each metric is registered once");
        }
        // The process's memory, CPU time, open files and threads (from /proc).
        #[cfg(target_os = "linux")]
        {
            let process = prometheus::process_collector::ProcessCollector::for_self();
            m.registry
                .register(Box::new(process))
                .expect("the process collector is registered once");
        }
        m
    }

    /// Every metric in Prometheus' text format, with the sizes read now.
    pub fn render(&self, sizes: &Sizes) -> Vec<u8> {
        let _one_at_a_time = self.rendering.lock().unwrap_or_else(|p| p.into_inner());
        self.log_seq.set(sizes.log_seq as i64);
        self.people.set(sizes.people as i64);
        self.channels.set(sizes.channels as i64);
        self.messages.set(sizes.messages as i64);
        self.event_queues.set(sizes.event_queues as i64);
        self.snapshot_age
            .set(sizes.snapshot_age_seconds.unwrap_or(-1.0));
        let (lag, writer) = sizes.cluster.unwrap_or((0, false));
        self.cluster_lag.set(lag as i64);
        self.cluster_writer.set(i64::from(writer));
        let mut out = Vec::new();
        if let Err(error) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::warn!(%error, "metrics not encoded");
        }
        out
    }
}

/// The process's metrics.
pub fn get() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_has_the_counted_and_the_read_metrics() {
        let m = get();
        m.http_requests
            .with_label_values(&["/api/v1/messages", "POST", "200"])
            .inc();
        m.commit_batch_events.observe(3.0);
        let text = String::from_utf8(m.render(&Sizes {
            log_seq: 42,
            people: 7,
            messages: 1000,
            cluster: Some((5, true)),
            ..Sizes::default()
        }))
        .unwrap();
        assert!(
            text.contains(
                "chronicle_http_requests_total{method=\"POST\",route=\"/api/v1/messages\",status=\"200\"}"
            ),
            "{text}"
        );
        for line in [
            "chronicle_log_seq 42",
            "chronicle_people 7",
            "chronicle_messages 1000",
            "chronicle_snapshot_age_seconds -1",
            "chronicle_cluster_lag_events 5",
            "chronicle_cluster_writer 1",
            "chronicle_commit_batch_events_count",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        #[cfg(target_os = "linux")]
        assert!(text.contains("process_resident_memory_bytes"), "{text}");
    }

    /// The Grafana dashboard in docs/ asks only for series that a scrape has.
    #[test]
    fn every_series_the_dashboard_queries_exists() {
        let dashboard = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/grafana/chronicle.json"),
        )
        .unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&dashboard).unwrap();
        let m = get();
        m.http_seconds
            .with_label_values(&["/api/v1/messages", "POST"])
            .observe(0.01);
        m.rate_limited.with_label_values(&["ip"]).inc();
        m.nats_connections
            .with_label_values(&["disconnected"])
            .inc();
        m.fanout_seconds.observe(0.001);
        m.commit_flush_seconds.observe(0.001);
        let text = String::from_utf8(m.render(&Sizes::default())).unwrap();
        let mut checked = 0;
        for panel in parsed["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = target["expr"].as_str().unwrap();
                for (at, _) in expr.match_indices(|c: char| c.is_ascii_lowercase()) {
                    let rest = &expr[at..];
                    let is_start = at == 0
                        || !expr[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
                    if !is_start
                        || !(rest.starts_with("chronicle_") || rest.starts_with("process_"))
                    {
                        continue;
                    }
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    assert!(
                        text.lines().any(|l| l.starts_with(&name)),
                        "the dashboard asks for {name}, which /metrics does not have"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 20, "{checked}");
    }
}

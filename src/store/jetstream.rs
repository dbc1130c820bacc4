//! The replicated backend: the log kept in one NATS JetStream stream (`chronicle serve
//! --cluster`), on servers that replicate it (R3 or R5) and sync every write before they
//! acknowledge it.
//!
//! ## How records sit in the stream
//!
//! One group-commit batch (what `append_batch` is given) is one payload: its records framed as
//! `seq (u64, big-endian) · length (u32, big-endian) · record`, the same sealed records the sled
//! backend stores (checksum and hash chain included), so `verify`, replay, dump and the fixtures
//! mean the same thing on both backends. A payload larger than a NATS message may be is cut into
//! parts, each one stream message with these headers:
//!
//! - `Chronicle-Batch`: the first seq of the batch;
//! - `Chronicle-Last`: the last seq of the batch;
//! - `Chronicle-Part`: `i/n`, this part's place among the batch's parts;
//! - `Nats-Msg-Id`: the hash of the batch's last record and the part's number, so that a part
//!   resent after a timeout is recognised as the one already stored, never stored twice;
//! - `Nats-Expected-Last-Sequence`: the stream sequence the writer believes is the last. The
//!   stream refuses the part if another writer got there first, so two writers can never
//!   interleave: a batch's parts are consecutive stream messages.
//!
//! A batch counts once its last part is stored. Parts of a batch whose writer failed half-way
//! (the rest of it refused or never sent) stay in the stream, which is never rewritten, and are
//! skipped by every reader: the writer's next batch starts again at the same seq.

use super::{EventLog, RecordIter, StoreError};
use crate::ids::Seq;
use async_nats::jetstream::{self, stream};
use futures_util::StreamExt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where a cluster's log lives.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// NATS server URLs, comma-separated (`nats://127.0.0.1:4222,nats://127.0.0.1:4223`).
    pub url: String,
    /// The stream's name.
    pub stream: String,
    /// How many servers keep each record (3 or 5).
    pub replicas: usize,
}

impl ClusterSpec {
    /// The one subject the stream holds.
    pub fn subject(&self) -> String {
        format!("chronicle.{}.log", self.stream)
    }
}

const BATCH: &str = "Chronicle-Batch";
const LAST: &str = "Chronicle-Last";
const PART: &str = "Chronicle-Part";
/// The most parts a batch is cut into (a batch of 64 GiB in 1 MiB messages).
const MAX_PARTS: u32 = 1 << 16;
/// What a frame adds to its record: seq and length.
const FRAME_HEAD: usize = 12;
/// Room left in a NATS message for its headers.
const HEADER_ROOM: usize = 4096;
/// How long a part is retried when its acknowledgement does not come (a leader election takes
/// 4-9 s) before the append is reported failed.
const RETRY_FOR: Duration = Duration::from_secs(30);
/// How long one publish waits for its acknowledgement.
const ACK_WAIT: Duration = Duration::from_secs(5);
/// How often a node looks for other writers' appends when no notification came.
const WATCH_EVERY: Duration = Duration::from_secs(1);
/// How long a request to the stream (info, a message) may take.
const REQUEST_WAIT: Duration = Duration::from_secs(10);
/// How long the look at the stream a node takes every [`WATCH_EVERY`] may take.
const PROBE_WAIT: Duration = Duration::from_secs(2);
/// How long the stream may not answer before a node calls it unreachable and takes no writes
/// (longer than a leader election, which appends wait out).
const UNREACHABLE_AFTER: Duration = Duration::from_secs(10);
/// How often the client pings its NATS server: after two unanswered pings it moves to another
/// server of the cluster (NATS's default of two minutes would keep a node on a server cut off
/// from the others for minutes).
const PING_EVERY: Duration = Duration::from_secs(2);

fn nats(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Io(format!("NATS: {what}: {e}"))
}

/// The stream's settings that make it a durable audit log, or what is wrong with `config`.
fn wanted_config(spec: &ClusterSpec) -> stream::Config {
    stream::Config {
        name: spec.stream.clone(),
        subjects: vec![spec.subject()],
        storage: stream::StorageType::File,
        num_replicas: spec.replicas,
        retention: stream::RetentionPolicy::Limits,
        discard: stream::DiscardPolicy::New,
        deny_delete: true,
        deny_purge: true,
        allow_rollup: false,
        max_age: Duration::ZERO,
        max_bytes: -1,
        max_messages: -1,
        max_messages_per_subject: -1,
        duplicate_window: Duration::from_secs(120),
        allow_direct: true,
        persist_mode: None,
        description: Some("Chronicle's event log: append-only, never purged".into()),
        ..Default::default()
    }
}

/// Every way `config` falls short of a durable, append-only, replicated log (none: it is fit).
pub fn config_problems(config: &stream::Config, spec: &ClusterSpec) -> Vec<String> {
    let mut problems = Vec::new();
    let mut want = |ok: bool, what: &str| {
        if !ok {
            problems.push(what.to_string());
        }
    };
    want(
        config.subjects == [spec.subject()],
        &format!("its subjects must be exactly [{}]", spec.subject()),
    );
    want(
        config.storage == stream::StorageType::File,
        "storage must be file, not memory",
    );
    want(
        config.num_replicas >= 3 && config.num_replicas % 2 == 1,
        "replicas must be 3 or 5 (an odd number of at least 3)",
    );
    want(
        config.num_replicas == spec.replicas,
        &format!(
            "it has {} replicas, not the {} asked for",
            config.num_replicas, spec.replicas
        ),
    );
    want(
        config.retention == stream::RetentionPolicy::Limits,
        "retention must be limits (work-queue and interest retention delete records)",
    );
    want(
        config.discard == stream::DiscardPolicy::New,
        "discard must be new (discard old drops the oldest records when full)",
    );
    want(config.deny_delete, "deny_delete must be set");
    want(config.deny_purge, "deny_purge must be set");
    want(
        !config.allow_rollup,
        "rollups must not be allowed (they purge)",
    );
    want(!config.sealed, "the stream is sealed (it takes no writes)");
    want(
        config.max_age.is_zero() && config.max_bytes < 0 && config.max_messages < 0,
        "it must have no age, size or count limit (an audit log is kept whole)",
    );
    want(
        config.max_messages_per_subject < 0,
        "it must have no per-subject message limit",
    );
    want(
        !matches!(config.persist_mode, Some(stream::PersistenceMode::Async)),
        "persist_mode must not be async (it acknowledges before the write is stored)",
    );
    want(
        !config.duplicate_window.is_zero(),
        "it needs a duplicate window (resent parts are recognised within it)",
    );
    problems
}

/// What `chronicle cluster init` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Init {
    Created,
    AlreadyFit,
}

/// Creates the stream with the settings a durable log needs, or checks an existing one and
/// refuses it if it lacks them.
pub fn init(spec: &ClusterSpec) -> Result<Init, StoreError> {
    if spec.replicas < 3 || spec.replicas % 2 == 0 {
        return Err(StoreError::Io(format!(
            "{} replicas cannot keep the log through a server's loss: use 3 or 5",
            spec.replicas
        )));
    }
    let runtime = runtime()?;
    let spec = spec.clone();
    on(&runtime, async move {
        let client = connect(&spec.url).await?;
        let js = jetstream::new(client);
        match js.get_stream(&spec.stream).await {
            Ok(mut found) => {
                let info = found.info().await.map_err(|e| nats("stream info", e))?;
                let problems = config_problems(&info.config, &spec);
                if problems.is_empty() {
                    Ok(Init::AlreadyFit)
                } else {
                    Err(StoreError::Io(format!(
                        "stream {} exists but is not fit to be a log: {}",
                        spec.stream,
                        problems.join("; ")
                    )))
                }
            }
            Err(e)
                if matches!(e.kind(), jetstream::context::GetStreamErrorKind::JetStream(inner)
                    if inner.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND) =>
            {
                js.create_stream(wanted_config(&spec))
                    .await
                    .map_err(|e| nats("creating the stream", e))?;
                Ok(Init::Created)
            }
            Err(e) => Err(nats("looking up the stream", e)),
        }
    })?
}

/// The head of a cluster's log, for `chronicle cluster status`.
#[derive(Debug)]
pub struct Status {
    /// Stream messages (batch parts) stored.
    pub messages: u64,
    /// The stream's last sequence.
    pub last_sequence: u64,
    /// The last event seq in a complete batch.
    pub last_seq: Seq,
    /// The server leading the stream, if one is elected.
    pub leader: Option<String>,
    /// The other servers keeping it: name, whether caught up, and how many operations behind.
    pub replicas: Vec<(String, bool, u64)>,
    /// Bytes stored (on each server).
    pub bytes: u64,
}

/// The NATS client's own runtime (one thread), which the log's synchronous methods wait on.
struct Runtime(Option<tokio::runtime::Runtime>);

fn runtime() -> Result<Runtime, StoreError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("chronicle-nats")
        .enable_all()
        .build()
        .map(|runtime| Runtime(Some(runtime)))
        .map_err(|e| StoreError::Io(format!("starting the NATS client's runtime: {e}")))
}

impl Runtime {
    fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        if let Some(runtime) = &self.0 {
            runtime.spawn(work);
        }
    }
}

impl Drop for Runtime {
    /// Without waiting: the log may be dropped on the server's own runtime, where waiting
    /// for another runtime's threads is not allowed.
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Runs `work` on `runtime` and waits for it from a plain thread, or from inside another
/// runtime (the server's), where blocking on a runtime directly would panic.
fn on<T: Send + 'static>(
    runtime: &Runtime,
    work: impl Future<Output = T> + Send + 'static,
) -> Result<T, StoreError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(work.await);
    });
    rx.recv()
        .map_err(|_| StoreError::Io("the NATS client's runtime stopped".into()))
}

async fn connect(url: &str) -> Result<async_nats::Client, StoreError> {
    let servers = url
        .split(',')
        .map(|one| one.trim().parse::<async_nats::ServerAddr>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| nats(&format!("the server list {url}"), e))?;
    async_nats::ConnectOptions::new()
        .name("chronicle")
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(5))
        .ping_interval(PING_EVERY)
        .event_callback(|event| async move {
            let name = match event {
                async_nats::Event::Connected => "connected",
                async_nats::Event::Disconnected => {
                    tracing::warn!("the connection to NATS was lost; reconnecting");
                    "disconnected"
                }
                _ => return,
            };
            crate::metrics::get()
                .nats_connections
                .with_label_values(&[name])
                .inc();
        })
        .connect(servers)
        .await
        .map_err(|e| nats(&format!("connecting to {url}"), e))
}

/// Where one stored part sits in its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Part {
    batch: Seq,
    last: Seq,
    index: u32,
    count: u32,
}

impl Part {
    fn read(headers: Option<&async_nats::HeaderMap>) -> Option<Part> {
        let headers = headers?;
        let number = |name: &str| headers.get(name)?.as_str().parse::<u64>().ok();
        let (index, count) = headers.get(PART)?.as_str().split_once('/')?;
        let part = Part {
            batch: Seq(number(BATCH)?),
            last: Seq(number(LAST)?),
            index: index.parse().ok()?,
            count: count.parse().ok()?,
        };
        // What a writer of ours can have written; anything else is not one of our parts.
        let sound = (1..=part.count).contains(&part.index)
            && part.count <= MAX_PARTS
            && part.batch <= part.last;
        sound.then_some(part)
    }

    fn is_last(&self) -> bool {
        self.index == self.count
    }
}

fn not_a_part(sequence: u64) -> StoreError {
    StoreError::Corrupt {
        seq: 0,
        reason: format!("stream message {sequence} is not a part of a Chronicle batch"),
    }
}

/// A batch's records, in order.
type Records = Vec<(Seq, Vec<u8>)>;

/// The records of an assembled batch payload.
fn unframe(payload: &[u8]) -> Result<Records, StoreError> {
    let mut records = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        let damaged = || StoreError::Corrupt {
            seq: records
                .last()
                .map_or(0, |(seq, _): &(Seq, Vec<u8>)| seq.0 + 1),
            reason: "a batch's framing is cut short".into(),
        };
        let head = rest.get(..FRAME_HEAD).ok_or_else(damaged)?;
        let seq = u64::from_be_bytes(head[..8].try_into().map_err(|_| damaged())?);
        let len = u32::from_be_bytes(head[8..].try_into().map_err(|_| damaged())?) as usize;
        let record = rest.get(FRAME_HEAD..FRAME_HEAD + len).ok_or_else(damaged)?;
        records.push((Seq(seq), record.to_vec()));
        rest = &rest[FRAME_HEAD + len..];
    }
    Ok(records)
}

fn frame(records: &[(Seq, Vec<u8>)]) -> Vec<u8> {
    let size = records.iter().map(|(_, r)| FRAME_HEAD + r.len()).sum();
    let mut payload = Vec::with_capacity(size);
    for (seq, record) in records {
        payload.extend_from_slice(&seq.0.to_be_bytes());
        payload.extend_from_slice(&(record.len() as u32).to_be_bytes());
        payload.extend_from_slice(record);
    }
    payload
}

/// Puts the parts of a stream read in order back together into batches: what every reader of
/// the stream (replay, tailing, the offline tools) goes through.
#[derive(Default)]
struct Assembler {
    pending: Option<(Part, Vec<u8>)>,
}

impl Assembler {
    /// Takes the next stream message; returns a whole batch's payload when `part` completes
    /// one. A part 1 while another batch is incomplete means that batch's writer gave up on
    /// it: it is dropped (its records were never acknowledged).
    fn take(&mut self, part: Part, payload: &[u8]) -> Option<Vec<u8>> {
        let continues = matches!(&self.pending, Some((p, _))
            if p.batch == part.batch && p.count == part.count && p.index + 1 == part.index);
        if !continues {
            self.pending = None;
            if part.index != 1 {
                return None;
            }
        }
        let mut bytes = match self.pending.take() {
            Some((_, bytes)) => bytes,
            None => Vec::with_capacity(
                payload
                    .len()
                    .saturating_mul(part.count as usize)
                    .min(64 << 20),
            ),
        };
        bytes.extend_from_slice(payload);
        if part.is_last() {
            Some(bytes)
        } else {
            self.pending = Some((part, bytes));
            None
        }
    }
}

/// How far a node has read and written the stream.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    /// The stream sequence the next append expects to be the last.
    expected: u64,
    /// The end of the last batch this node folded or wrote (unknown after a start), where
    /// reading others' batches resumes.
    resume: Option<u64>,
}

/// When the stream last answered this node: what tells a network partition from a pause.
#[derive(Debug)]
struct Contact {
    since: Instant,
    /// Milliseconds after `since` of the last answer.
    answered_ms: AtomicU64,
    /// Whether the stream counts as unreachable now (so that the change is logged once).
    cut: AtomicBool,
}

impl Contact {
    fn new() -> Contact {
        Contact {
            since: Instant::now(),
            answered_ms: AtomicU64::new(0),
            cut: AtomicBool::new(false),
        }
    }

    fn answered(&self) {
        let now = self.since.elapsed().as_millis() as u64;
        self.answered_ms.fetch_max(now, Ordering::Relaxed);
        if self.cut.swap(false, Ordering::Relaxed) {
            tracing::warn!("the cluster's log answers again: this node takes writes again");
        }
    }

    fn silent_for(&self) -> Duration {
        let answered = Duration::from_millis(self.answered_ms.load(Ordering::Relaxed));
        self.since.elapsed().saturating_sub(answered)
    }

    /// How long the stream has been silent, once that is [`UNREACHABLE_AFTER`] or more.
    fn unreachable(&self) -> Option<Duration> {
        let silent = self.silent_for();
        if silent < UNREACHABLE_AFTER {
            return None;
        }
        if !self.cut.swap(true, Ordering::Relaxed) {
            tracing::error!(
                silent_secs = silent.as_secs(),
                "this node cannot reach the cluster's log: it takes no writes, and what it \
                 serves may be out of date, until it can"
            );
        }
        Some(silent)
    }
}

/// The log in a JetStream stream.
pub struct JetStreamLog {
    runtime: Runtime,
    js: jetstream::Context,
    stream: String,
    subject: String,
    /// Largest part payload.
    part_bytes: usize,
    /// How far this node has read and written the stream.
    cursor: Mutex<Cursor>,
    /// When the stream last answered.
    contact: Arc<Contact>,
}

impl JetStreamLog {
    /// Connects to the cluster and opens the stream `chronicle cluster init` made, refusing one
    /// that is missing or lacks the settings of a durable log.
    pub fn open(spec: &ClusterSpec) -> Result<JetStreamLog, StoreError> {
        let runtime = runtime()?;
        let owned = spec.clone();
        let (js, head, max_payload) = on(&runtime, async move {
            let client = connect(&owned.url).await?;
            let max_payload = client.server_info().max_payload;
            let js = jetstream::new(client);
            let mut stream = js.get_stream(&owned.stream).await.map_err(|e| {
                StoreError::Io(format!(
                    "NATS stream {} is not there ({e}); create it with `chronicle cluster init`",
                    owned.stream
                ))
            })?;
            let info = stream.info().await.map_err(|e| nats("stream info", e))?;
            let problems = config_problems(&info.config, &owned);
            if !problems.is_empty() {
                return Err(StoreError::Io(format!(
                    "NATS stream {} is not fit to be a log: {}",
                    owned.stream,
                    problems.join("; ")
                )));
            }
            Ok((js, info.state.last_sequence, max_payload))
        })??;
        Ok(JetStreamLog {
            runtime,
            js,
            stream: spec.stream.clone(),
            subject: spec.subject(),
            part_bytes: max_payload.saturating_sub(HEADER_ROOM).max(HEADER_ROOM),
            cursor: Mutex::new(Cursor {
                expected: head,
                resume: None,
            }),
            contact: Arc::new(Contact::new()),
        })
    }

    /// Whether the stream answers a look at it within `wait`.
    fn answers(&self, wait: Duration) -> bool {
        let (js, name) = (self.js.clone(), self.stream.clone());
        let answered = self
            .on(async move { Ok(led(&js, &name, wait).await) })
            .unwrap_or(false);
        if answered {
            self.contact.answered();
        }
        answered
    }

    fn cursor(&self) -> Result<std::sync::MutexGuard<'_, Cursor>, StoreError> {
        self.cursor
            .lock()
            .map_err(|_| StoreError::Io("the log's cursor lock is poisoned".into()))
    }

    fn on<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        on(&self.runtime, work)?
    }

    async fn stream(js: &jetstream::Context, name: &str) -> Result<stream::Stream, StoreError> {
        tokio::time::timeout(REQUEST_WAIT, js.get_stream(name))
            .await
            .map_err(|_| nats("looking up the stream", "timed out"))?
            .map_err(|e| nats("looking up the stream", e))
    }

    /// The log's head as the stream knows it now.
    pub fn status(&self) -> Result<Status, StoreError> {
        let (js, name) = (self.js.clone(), self.stream.clone());
        let (info, last) = self.on(async move {
            let mut stream = Self::stream(&js, &name).await?;
            let info = stream
                .info()
                .await
                .map_err(|e| nats("stream info", e))?
                .clone();
            let last = last_complete(&stream, info.state.last_sequence).await?;
            Ok((info, last))
        })?;
        let cluster = info.cluster.unwrap_or_default();
        Ok(Status {
            messages: info.state.messages,
            last_sequence: info.state.last_sequence,
            last_seq: last.map_or(Seq(0), |(_, part)| part.last),
            leader: cluster.leader,
            replicas: cluster
                .replicas
                .into_iter()
                .map(|peer| (peer.name, peer.current, peer.lag.unwrap_or(0)))
                .collect(),
            bytes: info.state.bytes,
        })
    }
}

/// Whether the stream answers within `wait` with a leader: a server cut off from the others
/// answers from its own copy, with no leader, once it has stepped down.
async fn led(js: &jetstream::Context, name: &str, wait: Duration) -> bool {
    let Ok(Ok(stream)) = tokio::time::timeout(wait, js.get_stream(name)).await else {
        return false;
    };
    let info = stream.cached_info();
    info.cluster
        .as_ref()
        .and_then(|cluster| cluster.leader.as_deref())
        .is_some_and(|leader| !leader.is_empty())
}

/// The stream message holding the last part of the newest complete batch at or before
/// `sequence`, if any.
async fn last_complete(
    stream: &stream::Stream,
    mut sequence: u64,
) -> Result<Option<(u64, Part)>, StoreError> {
    while sequence > 0 {
        let message = get(stream, sequence).await?;
        let part = Part::read(Some(&message.headers)).ok_or_else(|| not_a_part(sequence))?;
        if part.is_last() {
            return Ok(Some((sequence, part)));
        }
        // An incomplete batch at the tail: its parts are consecutive, so step past them all.
        sequence = sequence.saturating_sub(u64::from(part.index));
    }
    Ok(None)
}

async fn get(
    stream: &stream::Stream,
    sequence: u64,
) -> Result<jetstream::message::StreamMessage, StoreError> {
    let message = tokio::time::timeout(REQUEST_WAIT, stream.get_raw_message(sequence))
        .await
        .map_err(|_| nats(&format!("reading stream message {sequence}"), "timed out"))?
        .map_err(|e| nats(&format!("reading stream message {sequence}"), e))?;
    Ok(message)
}

/// The stream sequence of the first part of the batch holding event `from` (or of the first
/// batch after it), by bisection over the batches' first seqs, which never decrease.
async fn start_of(stream: &stream::Stream, from: Seq, last: u64) -> Result<u64, StoreError> {
    let (mut low, mut high) = (1u64, last);
    // The greatest stream sequence whose batch starts at or before `from`.
    let mut found = None;
    while low <= high {
        let middle = low + (high - low) / 2;
        let message = get(stream, middle).await?;
        let part = Part::read(Some(&message.headers)).ok_or_else(|| not_a_part(middle))?;
        if part.batch <= from {
            found = Some((middle, part));
            low = middle + 1;
        } else {
            high = middle - 1;
        }
    }
    Ok(match found {
        Some((sequence, part)) if part.last >= from => {
            sequence.saturating_sub(u64::from(part.index) - 1).max(1)
        }
        Some((sequence, _)) => sequence + 1,
        None => 1,
    })
}

/// One part of a batch on its way into the stream.
#[derive(Debug, Clone)]
struct Outgoing {
    part: Part,
    /// Its `Nats-Msg-Id`: the same on every resend, different for any other content.
    id: String,
    payload: bytes::Bytes,
}

/// A batch's payload cut into parts of at most `part_bytes`, identified by `id` (the hash of
/// the batch's last record).
fn cut(records: &[(Seq, Vec<u8>)], id: &str, part_bytes: usize) -> Vec<Outgoing> {
    let (Some((first, _)), Some((last, _))) = (records.first(), records.last()) else {
        return Vec::new();
    };
    let payload = bytes::Bytes::from(frame(records));
    let count = payload.len().div_ceil(part_bytes).max(1);
    (0..count)
        .map(|index| Outgoing {
            part: Part {
                batch: *first,
                last: *last,
                index: index as u32 + 1,
                count: count as u32,
            },
            id: format!("{id}.{}", index + 1),
            payload: payload
                .slice(index * part_bytes..((index + 1) * part_bytes).min(payload.len())),
        })
        .collect()
}

/// What one attempt to store a part came to.
#[derive(Debug)]
enum Attempt {
    /// Stored at this stream sequence (now, or by an earlier attempt with the same id).
    Stored(u64),
    /// Refused: the stream's last sequence is not the one expected.
    Refused(String),
    /// No answer (a timeout, a lost connection, an election): it may or may not be stored.
    Unknown(String),
}

/// The stream as appending sees it: JetStream, or a model of it in the tests.
trait Sink {
    fn publish(&self, part: &Outgoing, expected: u64) -> impl Future<Output = Attempt> + Send;
}

/// How long an unknown outcome is resent for, and the pause between resends.
#[derive(Debug, Clone, Copy)]
struct Patience {
    retry_for: Duration,
    pause: Duration,
}

/// Appends `parts` in order, each expecting the one before it (the first, `expected`), and
/// returns the sequence of the last. A part whose outcome is unknown is resent, same id and
/// same expectation, until it is answered: a duplicate answer gives the sequence it was stored
/// at. A refusal is `StoreError::Conflict`: parts stored before it stay, as an abandoned batch
/// that readers skip.
async fn append_parts(
    sink: &impl Sink,
    parts: &[Outgoing],
    mut expected: u64,
    patience: Patience,
) -> Result<u64, StoreError> {
    for part in parts {
        let started = Instant::now();
        expected = loop {
            match sink.publish(part, expected).await {
                Attempt::Stored(sequence) => break sequence,
                Attempt::Refused(why) => {
                    return Err(StoreError::Conflict(format!(
                        "another writer appended to the stream first ({why})"
                    )))
                }
                Attempt::Unknown(why) if started.elapsed() < patience.retry_for => {
                    tracing::warn!(%why, "NATS publish not acknowledged; resending");
                    tokio::time::sleep(patience.pause).await;
                }
                Attempt::Unknown(why) => {
                    return Err(StoreError::Unconfirmed(format!(
                        "NATS: appending to the stream: {why}"
                    )))
                }
            }
        };
    }
    Ok(expected)
}

/// The JetStream stream as a `Sink`.
struct Published {
    js: jetstream::Context,
    subject: String,
}

impl Sink for Published {
    async fn publish(&self, out: &Outgoing, expected: u64) -> Attempt {
        use jetstream::context::PublishErrorKind as Kind;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(BATCH, out.part.batch.0.to_string());
        headers.insert(LAST, out.part.last.0.to_string());
        headers.insert(PART, format!("{}/{}", out.part.index, out.part.count));
        headers.insert(async_nats::header::NATS_MESSAGE_ID, out.id.as_str());
        headers.insert(
            async_nats::header::NATS_EXPECTED_LAST_SEQUENCE,
            expected.to_string(),
        );
        let sent = self
            .js
            .publish_with_headers(self.subject.clone(), headers, out.payload.clone())
            .await;
        let acked = match sent {
            Ok(ack) => tokio::time::timeout(ACK_WAIT, ack)
                .await
                .unwrap_or_else(|_| Err(Kind::TimedOut.into())),
            Err(e) => Err(e),
        };
        match acked {
            Ok(ack) => Attempt::Stored(ack.sequence),
            Err(e) if e.kind() == Kind::WrongLastSequence => Attempt::Refused(e.to_string()),
            Err(e) => Attempt::Unknown(e.to_string()),
        }
    }
}

impl EventLog for JetStreamLog {
    fn append_batch(&self, records: &[(Seq, Vec<u8>)]) -> Result<(), StoreError> {
        let Some((_, last_record)) = records.last() else {
            return Ok(());
        };
        let id = crate::events::record_hash(last_record)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>();
        let parts = cut(records, &id, self.part_bytes);
        let mut cursor = self.cursor()?;
        let sink = Published {
            js: self.js.clone(),
            subject: self.subject.clone(),
        };
        let expected = cursor.expected;
        let patience = Patience {
            retry_for: RETRY_FOR,
            pause: Duration::from_millis(250),
        };
        let stored = self.on(async move { append_parts(&sink, &parts, expected, patience).await });
        match stored {
            Ok(last) => {
                self.contact.answered();
                cursor.expected = last;
                cursor.resume = Some(last);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Nothing to do: a part is acknowledged only once the stream's servers have synced it.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn scan_from(&self, from: Seq) -> RecordIter<'_> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Records, StoreError>>(8);
        let (js, name) = (self.js.clone(), self.stream.clone());
        // Set when the scan ends as it should, so that a reading task that died (a panic)
        // is an error, not a log that seems to end early.
        let finished = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = finished.clone();
        self.runtime.spawn(async move {
            let failed = tx.clone();
            // A closed receiver means the reader stopped early: stop too.
            let sent = scan(js, name, from, None, move |records| {
                tx.send(Ok(records)).is_ok()
            })
            .await;
            match sent {
                Ok(_) => done.store(true, std::sync::atomic::Ordering::SeqCst),
                Err(e) => {
                    let _ = failed.send(Err(e));
                }
            }
        });
        let ended = std::iter::once(())
            .filter(move |()| !finished.load(std::sync::atomic::Ordering::SeqCst))
            .map(|()| Err(StoreError::Io("reading the stream stopped half-way".into())));
        Box::new(
            rx.into_iter()
                .flat_map(|batch| match batch {
                    Ok(records) => records
                        .into_iter()
                        .map(|(s, r)| Ok((s, r.into())))
                        .collect::<Vec<_>>(),
                    Err(e) => vec![Err(e)],
                })
                .chain(ended)
                .filter(move |item| item.as_ref().map_or(true, |(seq, _)| *seq >= from)),
        )
    }

    fn last_seq(&self) -> Result<Option<Seq>, StoreError> {
        let (js, name) = (self.js.clone(), self.stream.clone());
        self.on(async move {
            let mut stream = Self::stream(&js, &name).await?;
            let last = stream
                .info()
                .await
                .map_err(|e| nats("stream info", e))?
                .state
                .last_sequence;
            Ok(last_complete(&stream, last)
                .await?
                .map(|(_, part)| part.last))
        })
    }

    fn catch_up(&self, from: Seq) -> Result<Records, StoreError> {
        let mut cursor = self.cursor()?;
        let (js, name, known) = (self.js.clone(), self.stream.clone(), *cursor);
        let (records, reached) = self.on(async move {
            let mut records = Vec::new();
            // Most wake-ups find nothing new (a node is woken by its own appends too).
            let mut stream = JetStreamLog::stream(&js, &name).await?;
            let info = stream.info().await.map_err(|e| nats("stream info", e))?;
            if info.state.last_sequence <= known.expected {
                return Ok((records, None));
            }
            let reached = scan(js, name, from, known.resume, |batch| {
                records.extend(batch.into_iter().filter(|(seq, _)| *seq >= from));
                true
            })
            .await?;
            Ok((records, Some(reached)))
        })?;
        if let Some(reached) = reached {
            // Everything up to `through` has been read (another writer's batch still being
            // written included: its parts so far), so the next append may follow it; reading
            // resumes after the last whole batch.
            cursor.expected = cursor.expected.max(reached.through);
            cursor.resume = Some(reached.batch_end);
        }
        Ok(records)
    }

    fn watch(&self, wake: Box<dyn Fn() + Send + Sync>) {
        // A look at the stream every tick, apart from the appends and the catch-ups (which
        // stop while it is unreachable), tells when it answers again.
        let (js, name, contact) = (self.js.clone(), self.stream.clone(), self.contact.clone());
        self.runtime.spawn(async move {
            let mut tick = tokio::time::interval(WATCH_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if led(&js, &name, PROBE_WAIT).await {
                    contact.answered();
                }
            }
        });
        let (js, subject) = (self.js.clone(), self.subject.clone());
        self.runtime.spawn(async move {
            let mut tick = tokio::time::interval(WATCH_EVERY);
            let mut appended = match js.client().subscribe(subject).await {
                Ok(subscription) => Some(subscription),
                Err(error) => {
                    tracing::warn!(%error, "cannot follow the stream's appends; polling it");
                    None
                }
            };
            loop {
                tokio::select! {
                    _ = tick.tick() => wake(),
                    Some(_) = async {
                        match &mut appended {
                            Some(subscription) => subscription.next().await,
                            None => std::future::pending().await,
                        }
                    } => wake(),
                }
            }
        });
    }

    fn quarantine_from(&self, from: Seq) -> Result<usize, StoreError> {
        Err(StoreError::Io(format!(
            "record {from} of the replicated log is damaged; a stream is never rewritten, so \
             this is not a torn write to recover from: restore the stream from a backup"
        )))
    }

    /// The stream is never rewritten, so nothing is taken back: an append whose answer never
    /// came is in the stream or not, and the writer's next append, expecting the sequence it
    /// last knew, is refused if it is, and the writer folds it then like another writer's.
    fn recovers_in_process(&self) -> bool {
        true
    }

    fn recover(&self, _durable: Seq) -> Result<(), StoreError> {
        if self.answers(PROBE_WAIT) {
            Ok(())
        } else {
            Err(nats("looking at the stream", "no answer"))
        }
    }

    fn unreachable(&self) -> Option<Duration> {
        self.contact.unreachable()
    }
}

/// How long the writer's lease lasts without being renewed.
const LEASE_TTL: Duration = Duration::from_secs(5);
/// How often the lease is renewed (by its holder) or looked at (by the others).
const LEASE_EVERY: Duration = Duration::from_secs(1);
/// The key holding the writer's address in the lease bucket.
const WRITER: &str = "writer";
/// How long a node's entry in the registry outlives its last renewal.
const NODE_TTL: Duration = Duration::from_secs(30);

/// A node of a cluster, as the registry (`<stream>-nodes`) has it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Node {
    /// The URL the other nodes reach it at.
    pub url: String,
    /// The last event it had folded at its last renewal.
    pub seq: u64,
}

/// A node's short name: the start of its URL's SHA-256. Queue ids start with it.
pub fn node_tag(url: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(url.as_bytes())
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn bucket(
    js: &jetstream::Context,
    name: String,
    description: &str,
    max_age: Duration,
    replicas: usize,
) -> Result<jetstream::kv::Store, StoreError> {
    match js.get_key_value(&name).await {
        Ok(kv) => Ok(kv),
        Err(_) => js
            .create_key_value(jetstream::kv::Config {
                bucket: name.clone(),
                description: description.into(),
                history: 1,
                max_age,
                storage: stream::StorageType::File,
                num_replicas: replicas,
                ..Default::default()
            })
            .await
            .map_err(|e| nats(&format!("creating the bucket {name}"), e)),
    }
}

/// The writer's lease (`<stream>-writer`).
async fn lease_bucket(
    js: &jetstream::Context,
    spec: &ClusterSpec,
) -> Result<jetstream::kv::Store, StoreError> {
    let name = format!("{}-writer", spec.stream);
    let about = "Which Chronicle node takes the writes";
    bucket(js, name, about, LEASE_TTL, spec.replicas).await
}

/// The node registry (`<stream>-nodes`).
async fn node_bucket(
    js: &jetstream::Context,
    spec: &ClusterSpec,
) -> Result<jetstream::kv::Store, StoreError> {
    let name = format!("{}-nodes", spec.stream);
    let about = "The Chronicle nodes serving the stream";
    bucket(js, name, about, NODE_TTL, spec.replicas).await
}

/// Who serves a cluster, for `chronicle cluster status`.
#[derive(Debug)]
pub struct Members {
    /// The node holding the writer's lease.
    pub writer: Option<String>,
    /// The nodes in the registry, by tag.
    pub nodes: Vec<(String, Node)>,
}

/// The lease's holder and the registry's nodes, read once.
pub fn members(spec: &ClusterSpec) -> Result<Members, StoreError> {
    let runtime = runtime()?;
    let owned = spec.clone();
    on(&runtime, async move {
        let js = jetstream::new(connect(&owned.url).await?);
        let writer = match lease_bucket(&js, &owned).await?.entry(WRITER).await {
            Ok(Some(e)) if e.operation == jetstream::kv::Operation::Put => {
                Some(String::from_utf8_lossy(&e.value).into_owned())
            }
            _ => None,
        };
        let listed = read_nodes(&node_bucket(&js, &owned).await?).await;
        let nodes = listed.ok_or_else(|| nats("reading the node registry", "no answer"))?;
        Ok(Members { writer, nodes })
    })?
}

/// The registry's nodes, or `None` when NATS could not answer (keep what was known then).
async fn read_nodes(kv: &jetstream::kv::Store) -> Option<Vec<(String, Node)>> {
    let mut nodes = Vec::new();
    let mut keys = tokio::time::timeout(REQUEST_WAIT, kv.keys())
        .await
        .ok()?
        .ok()?;
    while let Some(key) = keys.next().await {
        let key = key.ok()?;
        let value = kv.get(&key).await.ok()?;
        if let Some(node) = value.and_then(|v| serde_json::from_slice::<Node>(&v).ok()) {
            nodes.push((key, node));
        }
    }
    nodes.sort_by(|a, b| a.1.url.cmp(&b.1.url));
    Some(nodes)
}

/// The writer's lease: which node takes the cluster's writes, kept in a JetStream key-value
/// bucket (`<stream>-writer`) whose entries expire after `LEASE_TTL`. The holder renews it every
/// second with a compare-and-set on its revision; when it stops, the entry expires and another
/// node creates it. Correctness never rests on the lease (a deposed writer's appends fail the
/// stream's sequence check); it only keeps the nodes from starving each other.
pub struct Lease {
    runtime: Runtime,
    registry: jetstream::kv::Store,
    holder: std::sync::Arc<std::sync::RwLock<Option<String>>>,
    /// The other nodes' URLs by tag, as last read from the registry.
    nodes: std::sync::Arc<std::sync::RwLock<std::collections::HashMap<String, String>>>,
    kv: jetstream::kv::Store,
    me: String,
}

impl Lease {
    /// Starts taking part in the lease as `me` (the URL other nodes reach this node at), and
    /// keeps this node in the registry with the seq `folded` reports.
    /// `folded` says the seq this node has folded, or `None` once its writes have stopped
    /// (then it gives the lease up and does not take it again).
    pub fn start(
        spec: &ClusterSpec,
        me: String,
        folded: impl Fn() -> Option<u64> + Send + 'static,
    ) -> Result<Lease, StoreError> {
        let runtime = runtime()?;
        let owned = spec.clone();
        let (kv, registry) = on(&runtime, async move {
            let js = jetstream::new(connect(&owned.url).await?);
            Ok::<_, StoreError>((
                lease_bucket(&js, &owned).await?,
                node_bucket(&js, &owned).await?,
            ))
        })??;
        // Known from the start, so that a node that has just started can tell whose event
        // queue a client asks about.
        let listed = {
            let registry = registry.clone();
            on(&runtime, async move { read_nodes(&registry).await })?.unwrap_or_default()
        };
        let holder = std::sync::Arc::new(std::sync::RwLock::new(None));
        let nodes = std::sync::Arc::new(std::sync::RwLock::new(
            listed.into_iter().map(|(t, n)| (t, n.url)).collect(),
        ));
        let registry_handle = registry.clone();
        let (store, seen, name, known) = (kv.clone(), holder.clone(), me.clone(), nodes.clone());
        let tag = node_tag(&me);
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(LEASE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let now_folded = folded();
                let entry = Node {
                    url: name.clone(),
                    seq: now_folded.unwrap_or(0),
                };
                if let Ok(value) = serde_json::to_vec(&entry) {
                    let _ = registry.put(&tag, value.into()).await;
                }
                if let Some(listed) = read_nodes(&registry).await {
                    if let Ok(mut map) = known.write() {
                        *map = listed.into_iter().map(|(t, n)| (t, n.url)).collect();
                    }
                }
                let now = Self::round(&store, &name, now_folded.is_some()).await;
                if let Ok(mut slot) = seen.write() {
                    if *slot != now {
                        tracing::info!(
                            writer = now.as_deref().unwrap_or("-"),
                            "the cluster's writer"
                        );
                    }
                    *slot = now;
                }
            }
        });
        Ok(Lease {
            runtime,
            registry: registry_handle,
            holder,
            nodes,
            kv,
            me,
        })
    }

    /// One look at the lease: renews it if this node holds it, takes it if nobody does (only
    /// while `can_write`; otherwise gives it up). Returns the holder, `None` when NATS cannot
    /// say or nobody holds it.
    async fn round(kv: &jetstream::kv::Store, me: &str, can_write: bool) -> Option<String> {
        let entry = tokio::time::timeout(REQUEST_WAIT, kv.entry(WRITER))
            .await
            .ok()?
            .ok()?;
        match entry {
            Some(entry) if entry.operation == jetstream::kv::Operation::Put => {
                let holder = String::from_utf8_lossy(&entry.value).into_owned();
                if holder != me {
                    return Some(holder);
                }
                if !can_write {
                    let _ = kv
                        .delete_expect_revision(WRITER, Some(entry.revision))
                        .await;
                    return None;
                }
                let renewed = kv
                    .update(WRITER, bytes::Bytes::from(me.to_owned()), entry.revision)
                    .await;
                renewed.ok().map(|_| me.to_owned())
            }
            _ if !can_write => None,
            _ => {
                let taken = kv.create(WRITER, bytes::Bytes::from(me.to_owned())).await;
                taken.ok().map(|_| me.to_owned())
            }
        }
    }

    /// The node holding the lease, as last seen (`None` before the first look or when NATS
    /// could not say).
    pub fn holder(&self) -> Option<String> {
        self.holder.read().ok().and_then(|h| h.clone())
    }

    /// This node's address in the lease.
    pub fn me(&self) -> &str {
        &self.me
    }

    /// The other live nodes' URLs, as last read from the registry.
    pub fn others(&self) -> Vec<String> {
        let Ok(nodes) = self.nodes.read() else {
            return Vec::new();
        };
        let mut urls: Vec<String> = nodes.values().filter(|u| **u != self.me).cloned().collect();
        urls.sort();
        urls
    }

    /// The URL of the node with this tag, if it is another live node. A tag not seen yet (a
    /// node that started in the last second) is looked up in the registry first.
    pub async fn node(&self, tag: &str) -> Option<String> {
        let known = self.nodes.read().ok()?.get(tag).cloned();
        let url = match known {
            Some(url) => url,
            None => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let registry = self.registry.clone();
                self.runtime.spawn(async move {
                    let _ = tx.send(read_nodes(&registry).await);
                });
                let listed = rx.await.ok()??;
                let mut map = self.nodes.write().ok()?;
                *map = listed.into_iter().map(|(t, n)| (t, n.url)).collect();
                map.get(tag).cloned()?
            }
        };
        (url != self.me).then_some(url)
    }

    /// Gives the lease up if this node holds it (on a clean stop), so that another node takes
    /// the writes at once instead of after it expires.
    pub fn release(&self) {
        if self.holder().as_deref() != Some(self.me.as_str()) {
            return;
        }
        let (kv, me) = (self.kv.clone(), self.me.clone());
        let released = on(&self.runtime, async move {
            if let Ok(Some(entry)) = kv.entry(WRITER).await {
                if entry.value.as_ref() == me.as_bytes() {
                    let _ = kv
                        .delete_expect_revision(WRITER, Some(entry.revision))
                        .await;
                }
            }
        });
        if released.is_err() {
            tracing::warn!("the writer's lease was not released; it expires by itself");
        }
    }
}

/// Snapshots kept in the object store.
const SHARED_SNAPSHOTS_KEPT: usize = 2;

/// Snapshots shared through the stream's object store (`<stream>-snapshots`), so that a node
/// starting with an empty data directory loads the newest one and folds only the stream after
/// it. A downloaded snapshot goes through every check a local one does (its hash, the log
/// record it was taken after, the digest of the state it decodes to).
pub struct SharedSnapshots {
    runtime: Runtime,
    store: jetstream::object_store::ObjectStore,
}

impl SharedSnapshots {
    pub fn open(spec: &ClusterSpec) -> Result<SharedSnapshots, StoreError> {
        let runtime = runtime()?;
        let owned = spec.clone();
        let store = on(&runtime, async move {
            let js = jetstream::new(connect(&owned.url).await?);
            let bucket = format!("{}-snapshots", owned.stream);
            match js.get_object_store(&bucket).await {
                Ok(store) => Ok(store),
                Err(_) => js
                    .create_object_store(jetstream::object_store::Config {
                        bucket: bucket.clone(),
                        description: Some("Chronicle's projection snapshots".into()),
                        storage: stream::StorageType::File,
                        num_replicas: owned.replicas,
                        ..Default::default()
                    })
                    .await
                    .map_err(|e| nats(&format!("creating the bucket {bucket}"), e)),
            }
        })??;
        Ok(SharedSnapshots { runtime, store })
    }

    /// The names of the shared snapshots, oldest first (names sort by seq).
    async fn names(
        store: &jetstream::object_store::ObjectStore,
    ) -> Result<Vec<String>, StoreError> {
        let mut listed = store
            .list()
            .await
            .map_err(|e| nats("listing snapshots", e))?;
        let mut names = Vec::new();
        while let Some(info) = listed.next().await {
            let info = info.map_err(|e| nats("listing snapshots", e))?;
            if !info.deleted && info.name.ends_with(".snap") {
                names.push(info.name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Shares the snapshot at `path` unless a node already has, and removes older ones.
    pub fn upload(&self, path: &std::path::Path) -> Result<(), StoreError> {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            return Ok(());
        };
        let (store, path) = (self.store.clone(), path.to_path_buf());
        on(&self.runtime, async move {
            let names = Self::names(&store).await?;
            if !names.contains(&name) {
                let mut file = tokio::fs::File::open(&path)
                    .await
                    .map_err(|e| StoreError::Io(e.to_string()))?;
                store
                    .put(name.as_str(), &mut file)
                    .await
                    .map_err(|e| nats("sharing a snapshot", e))?;
            }
            let names = Self::names(&store).await?;
            for old in names.iter().rev().skip(SHARED_SNAPSHOTS_KEPT) {
                let _ = store.delete(old).await;
            }
            Ok(())
        })?
    }

    /// Downloads the newest shared snapshot into `dir` (a data directory's snapshot
    /// directory); returns its path, or `None` when none is shared.
    pub fn download_newest(
        &self,
        dir: &std::path::Path,
    ) -> Result<Option<std::path::PathBuf>, StoreError> {
        let (store, dir) = (self.store.clone(), dir.to_path_buf());
        on(&self.runtime, async move {
            // Only names this code writes (`{seq:020}.snap`): never a path.
            let Some(name) = Self::names(&store).await?.into_iter().rfind(|n| {
                n.strip_suffix(".snap")
                    .is_some_and(|seq| seq.len() == 20 && seq.bytes().all(|b| b.is_ascii_digit()))
            }) else {
                return Ok(None);
            };
            let io = |e: std::io::Error| StoreError::Io(e.to_string());
            tokio::fs::create_dir_all(&dir).await.map_err(io)?;
            let (path, tmp) = (dir.join(&name), dir.join(format!("{name}.download")));
            let mut object = store
                .get(&name)
                .await
                .map_err(|e| nats("fetching a snapshot", e))?;
            let mut file = tokio::fs::File::create(&tmp).await.map_err(io)?;
            tokio::io::copy(&mut object, &mut file).await.map_err(io)?;
            file.sync_all().await.map_err(io)?;
            tokio::fs::rename(&tmp, &path).await.map_err(io)?;
            Ok(Some(path))
        })?
    }
}

/// Where a reader of the stream got to.
#[derive(Debug, Clone, Copy, Default)]
struct Reached {
    /// The last stream message read.
    through: u64,
    /// The last stream message that completed a batch: the next batch starts after it.
    batch_end: u64,
}

/// Fewer messages than this to read are fetched one by one instead of through a consumer.
const DIRECT_READS: u64 = 16;

/// Reads the stream's complete batches holding events from `from` on, up to the stream's last
/// message when the scan began, and hands each batch's records to `take` (which returns false
/// to stop). It starts after `resume` (a batch's end) when the caller knows one, else finds the
/// batch holding `from` by bisection.
async fn scan(
    js: jetstream::Context,
    name: String,
    from: Seq,
    resume: Option<u64>,
    mut take: impl FnMut(Records) -> bool,
) -> Result<Reached, StoreError> {
    let mut stream = JetStreamLog::stream(&js, &name).await?;
    let last = stream
        .info()
        .await
        .map_err(|e| nats("stream info", e))?
        .state
        .last_sequence;
    let start = match resume {
        Some(after) => after + 1,
        None if last == 0 => return Ok(Reached::default()),
        None => start_of(&stream, from, last).await?,
    };
    let mut reached = Reached {
        through: start.saturating_sub(1),
        batch_end: start.saturating_sub(1),
    };
    if start > last {
        reached.through = last.max(reached.through);
        return Ok(reached);
    }
    let mut assembler = Assembler::default();
    // One stream message: false once `take` wants no more.
    let mut message = |sequence: u64,
                       headers: Option<&async_nats::HeaderMap>,
                       payload: &[u8]|
     -> Result<bool, StoreError> {
        let part = Part::read(headers).ok_or_else(|| not_a_part(sequence))?;
        reached.through = sequence;
        if let Some(whole) = assembler.take(part, payload) {
            reached.batch_end = sequence;
            if !take(unframe(&whole)?) {
                return Ok(false);
            }
        }
        Ok(true)
    };
    if last - start < DIRECT_READS {
        for sequence in start..=last {
            let found = get(&stream, sequence).await?;
            if !message(sequence, Some(&found.headers), &found.payload)? {
                break;
            }
        }
        return Ok(reached);
    }
    let consumer = stream
        .create_consumer(jetstream::consumer::pull::OrderedConfig {
            deliver_policy: jetstream::consumer::DeliverPolicy::ByStartSequence {
                start_sequence: start,
            },
            ..Default::default()
        })
        .await
        .map_err(|e| nats("reading the stream", e))?;
    let mut messages = consumer
        .messages()
        .await
        .map_err(|e| nats("reading the stream", e))?;
    while let Some(next) = tokio::time::timeout(REQUEST_WAIT, messages.next())
        .await
        .map_err(|_| nats("reading the stream", "timed out"))?
    {
        let next = next.map_err(|e| nats("reading the stream", e))?;
        let sequence = next
            .info()
            .map_err(|e| nats("reading the stream", e))?
            .stream_sequence;
        let more = message(
            sequence,
            next.message.headers.as_ref(),
            &next.message.payload,
        )?;
        if !more || sequence >= last {
            return Ok(reached);
        }
    }
    Err(nats(
        "reading the stream",
        "it ended before its last message",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(batch: u64, last: u64, index: u32, count: u32) -> Part {
        Part {
            batch: Seq(batch),
            last: Seq(last),
            index,
            count,
        }
    }

    #[test]
    fn frames_round_trip() {
        let records = vec![(Seq(7), b"seven".to_vec()), (Seq(8), Vec::new())];
        assert_eq!(unframe(&frame(&records)).ok(), Some(records));
        let framed = frame(&[(Seq(1), b"abc".to_vec())]);
        assert!(matches!(
            unframe(&framed[..framed.len() - 1]),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn assembler_joins_parts_and_drops_abandoned_batches() {
        let mut a = Assembler::default();
        assert_eq!(a.take(part(1, 2, 1, 1), b"x"), Some(b"x".to_vec()));
        // A batch in two parts.
        assert_eq!(a.take(part(3, 9, 1, 2), b"ab"), None);
        assert_eq!(a.take(part(3, 9, 2, 2), b"cd"), Some(b"abcd".to_vec()));
        // A writer gave up after part 1 of 3; its next batch starts at the same seq.
        assert_eq!(a.take(part(10, 20, 1, 3), b"lost"), None);
        assert_eq!(a.take(part(10, 12, 1, 1), b"kept"), Some(b"kept".to_vec()));
        // A part that does not follow the pending one is not joined to it.
        assert_eq!(a.take(part(13, 14, 1, 2), b"p"), None);
        assert_eq!(a.take(part(13, 14, 1, 2), b"q"), None);
        assert_eq!(a.take(part(13, 14, 2, 2), b"r"), Some(b"qr".to_vec()));
        // A stray later part with nothing pending is skipped.
        assert_eq!(a.take(part(15, 15, 2, 2), b"s"), None);
    }

    /// A fault injected into one publish.
    #[derive(Debug, Clone, Copy)]
    enum Fault {
        /// The request is lost before the stream sees it.
        LoseRequest,
        /// The part is stored but its acknowledgement is lost.
        LoseAck,
        /// Another writer appends a whole batch just before this publish.
        Foreign,
    }

    /// A deterministic stream with JetStream's rules (duplicate ids answered with the original
    /// sequence, then the expected-sequence check) and scripted faults.
    #[derive(Default)]
    struct Model {
        state: std::sync::Mutex<ModelState>,
    }

    #[derive(Default)]
    struct ModelState {
        stored: Vec<(Part, String, Vec<u8>)>,
        ids: std::collections::HashMap<String, u64>,
        faults: std::collections::VecDeque<Option<Fault>>,
        foreign: u64,
    }

    impl Sink for Model {
        async fn publish(&self, out: &Outgoing, expected: u64) -> Attempt {
            let mut state = self.state.lock().unwrap();
            let fault = state.faults.pop_front().flatten();
            match fault {
                Some(Fault::LoseRequest) => return Attempt::Unknown("lost".into()),
                Some(Fault::Foreign) => {
                    state.foreign += 1;
                    let seq = Seq(1_000_000 + state.foreign);
                    let part = Part {
                        batch: seq,
                        last: seq,
                        index: 1,
                        count: 1,
                    };
                    let name = format!("foreign {}", state.foreign);
                    state.stored.push((part, name.clone(), name.into_bytes()));
                }
                _ => {}
            }
            if let Some(sequence) = state.ids.get(&out.id) {
                return Attempt::Stored(*sequence);
            }
            if expected != state.stored.len() as u64 {
                return Attempt::Refused("wrong last sequence".into());
            }
            state
                .stored
                .push((out.part, out.id.clone(), out.payload.to_vec()));
            let sequence = state.stored.len() as u64;
            state.ids.insert(out.id.clone(), sequence);
            match fault {
                Some(Fault::LoseAck) => Attempt::Unknown("ack lost".into()),
                _ => Attempt::Stored(sequence),
            }
        }
    }

    fn fault() -> impl proptest::strategy::Strategy<Value = Option<Fault>> {
        use proptest::prelude::*;
        prop_oneof![
            6 => Just(None),
            1 => Just(Some(Fault::LoseRequest)),
            1 => Just(Some(Fault::LoseAck)),
            1 => Just(Some(Fault::Foreign)),
        ]
    }

    proptest::proptest! {
        /// Appending batches through lost requests, lost acknowledgements and other writers'
        /// appends: a reader of the stream finds every batch the writer was told is stored,
        /// exactly once and in order, and nothing of the attempts that were refused.
        #[test]
        fn appends_survive_lost_answers_and_other_writers(
            sizes in proptest::collection::vec(1usize..300, 1..12),
            faults in proptest::collection::vec(fault(), 0..80),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            let model = Model::default();
            model.state.lock().unwrap().faults = faults.into();
            let patience = Patience { retry_for: Duration::from_secs(60), pause: Duration::ZERO };
            let mut expected = 0u64;
            let mut accepted = Vec::new();
            let mut next_seq = 1u64;
            for (batch, size) in sizes.iter().enumerate() {
                // A batch of records seq.., as the engine would seal them; each attempt after a
                // refusal is a new decision with new content (and so a new id).
                for attempt in 0.. {
                    let records: Vec<(Seq, Vec<u8>)> = (0..3)
                        .map(|i| (Seq(next_seq + i), vec![(batch * 7 + attempt) as u8; *size]))
                        .collect();
                    let parts = cut(&records, &format!("b{batch}a{attempt}"), 256);
                    match runtime.block_on(append_parts(&model, &parts, expected, patience)) {
                        Ok(last) => {
                            expected = last;
                            accepted.push(records);
                            break;
                        }
                        Err(StoreError::Conflict(_)) => {
                            // Catch up: the writer has now read the whole stream.
                            expected = model.state.lock().unwrap().stored.len() as u64;
                        }
                        Err(other) => panic!("unexpected {other}"),
                    }
                }
                next_seq += 3;
            }
            // Read the stream as every reader does.
            let state = model.state.lock().unwrap();
            let mut assembler = Assembler::default();
            let mut found = Vec::new();
            for (part, _, payload) in &state.stored {
                if let Some(whole) = assembler.take(*part, payload) {
                    if part.batch.0 < 1_000_000 {
                        found.push(unframe(&whole).unwrap());
                    }
                }
            }
            proptest::prop_assert_eq!(found, accepted);
        }
    }

    #[test]
    fn unfit_streams_are_named_as_such() {
        let spec = ClusterSpec {
            url: String::new(),
            stream: "log".into(),
            replicas: 3,
        };
        assert_eq!(
            config_problems(&wanted_config(&spec), &spec),
            Vec::<String>::new()
        );
        let mut loose = wanted_config(&spec);
        loose.num_replicas = 1;
        loose.deny_purge = false;
        loose.max_age = Duration::from_secs(3600);
        loose.persist_mode = Some(stream::PersistenceMode::Async);
        let problems = config_problems(&loose, &spec);
        assert_eq!(problems.len(), 5, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("deny_purge")));
        assert!(problems.iter().any(|p| p.contains("persist_mode")));
    }
}

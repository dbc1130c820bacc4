//! The single write path: decide → append → flush → apply → reply.
//!
//! One writer thread owns the decision state. Commands queue on a channel; the writer drains
//! whatever is waiting (up to `MAX_BATCH`), decides each command in order against the decision
//! state (which already includes the events of the commands decided before it, so every
//! decision is serializable), appends all resulting events as one atomic batch and flushes once
//! (group commit). Only then are the events applied to the read state and the callers answered:
//! nothing is visible or acknowledged before it is durable, and readers never wait on an fsync
//! because the read lock is taken only to apply already-durable events.
//!
//! Why two copies of the projections: deciding a batch needs the effects of its earlier,
//! not-yet-durable commands, and readers must not see them. `docs/adr/0001-two-states.md`
//! weighs this against the alternatives. The copies share the bulk of the state, the stored
//! messages: after each durable batch the read state adopts the decision state's changed
//! chunks, and the next change to a shared chunk copies it (ADR 0005).
//!
//! When the log fails to take a batch (a full disk, an I/O error), the batch's callers are told
//! so, the decision state is rolled back to the read state (what is durable), and writes pause:
//! the next write, at most once a second, asks the log to recover (`EventLog::recover`: sled is
//! opened again and anything stored past the last acknowledged record is quarantined) and goes
//! through once it has. A log that cannot recover in-process, or damage, stops writes until a
//! restart, which replays what is durable. Below the data directory's free-space reserve
//! (`store::space`) writes are refused before they reach the writer. A write waits at most
//! [`WRITE_WAIT`] for the writer to take it (a stalled disk): then it is withdrawn and refused
//! with `Retry-After`, and it changed nothing. Reads never wait on any of this.

use crate::commands::{Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::{Envelope, Event, SCHEMA_VERSION};
use crate::ids::{Seq, UserId};
use crate::projections::Projections;
use crate::store::{EventLog, StoreError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Most commands decided and flushed together.
pub const MAX_BATCH: usize = 4096;

/// Commands waiting for the writer. Bounded so that a flood of writes applies back-pressure to
/// the HTTP workers instead of growing memory without limit.
const QUEUE_CAPACITY: usize = 16_384;

type Completion = Box<dyn FnOnce(ApiResult<Seq>) + Send>;

/// How long a write waits for the writer to take it before it is withdrawn and refused (the
/// log's storage is stalled, or the queue is full behind it).
pub const WRITE_WAIT: Duration = Duration::from_secs(10);

/// How often a paused writer asks the log to recover.
const RECOVERY_EVERY: Duration = Duration::from_secs(1);

/// How long a refused write is asked to wait before trying again.
pub const RETRY_AFTER_SECONDS: f64 = 5.0;

/// A queued command's ticket: the writer takes it, or its caller withdraws it after waiting too
/// long, never both.
const QUEUED: u8 = 0;
const TAKEN: u8 = 1;
const WITHDRAWN: u8 = 2;

/// Whether writes go through, as the writer last found its storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writes {
    /// Going through.
    Open,
    /// Refused: the data directory's free space is below the reserve.
    BelowReserve { available: u64, keep: u64 },
    /// Paused after the log failed to take a batch; the next write tries to recover.
    Paused { why: String, no_space: bool },
    /// Stopped until the server is restarted.
    Stopped { why: String },
    /// Refused: a cluster's log has not answered this node for `silent_secs` (a network
    /// partition); writes go through again once it answers.
    Unreachable { silent_secs: u64 },
}

impl Writes {
    /// The metric's number for this state (`chronicle_writes_state`).
    pub fn code(&self) -> i64 {
        match self {
            Writes::Open => 0,
            Writes::BelowReserve { .. } => 1,
            Writes::Paused { .. } => 2,
            Writes::Stopped { .. } => 3,
            Writes::Unreachable { .. } => 4,
        }
    }

    /// Why a write refused in this state counts in `chronicle_writes_refused_total`.
    pub fn refused_as(&self) -> &'static str {
        match self {
            Writes::BelowReserve { .. } => "disk_reserve",
            Writes::Unreachable { .. } => "unreachable",
            Writes::Open | Writes::Paused { .. } | Writes::Stopped { .. } => "storage_error",
        }
    }

    /// The error a write is refused with in this state (`None`: open).
    pub fn refusal(&self) -> Option<ApiError> {
        use crate::error::ErrorCode;
        const MIB: u64 = 1 << 20;
        let error = match self {
            Writes::Open => return None,
            Writes::BelowReserve { available, keep } => ApiError::new(
                ErrorCode::StorageFull,
                format!(
                    "The server's disk is nearly full ({} MiB free, {} MiB kept in reserve): \
                     nothing can be saved until an administrator frees space. Reading still \
                     works.",
                    available / MIB,
                    keep / MIB
                ),
            ),
            Writes::Paused { no_space: true, .. } => ApiError::new(
                ErrorCode::StorageFull,
                "The server's disk is full: nothing can be saved until an administrator frees \
                 space. Reading still works.",
            ),
            Writes::Paused { .. } => ApiError::new(
                ErrorCode::StorageUnavailable,
                "The server could not save to its storage; it is trying again. Reading still \
                 works.",
            ),
            Writes::Stopped { .. } => ApiError::new(
                ErrorCode::StorageUnavailable,
                "The server's storage failed: nothing can be saved until the server is \
                 restarted. Reading still works.",
            ),
            Writes::Unreachable { silent_secs } => ApiError::new(
                ErrorCode::StorageUnavailable,
                format!(
                    "This server has not reached its cluster's log for {silent_secs} s: nothing \
                     was changed, and nothing can be saved through it until it does. Reading \
                     still works, but may be out of date; another server of the cluster may \
                     take the change."
                ),
            ),
        };
        Some(error.retry_after(RETRY_AFTER_SECONDS))
    }
}

/// The error a write is refused with in a state that refuses writes.
fn refused(writes: &Writes) -> ApiError {
    writes
        .refusal()
        .unwrap_or_else(|| ApiError::internal("a write refused while writes are open"))
}

/// `Writes::Unreachable` while `log` (a cluster's) does not answer this node.
fn cut_off(log: &dyn EventLog) -> Option<Writes> {
    let silent = log.unreachable()?;
    Some(Writes::Unreachable {
        silent_secs: silent.as_secs(),
    })
}

/// The error for the writes of a batch a replicated log never confirmed.
fn unconfirmed() -> ApiError {
    ApiError::new(
        crate::error::ErrorCode::StorageUnavailable,
        "The server's storage did not confirm this change: it may have been saved or not, and \
         shows up once the storage answers again if it was. The server is trying again.",
    )
    .retry_after(RETRY_AFTER_SECONDS)
}

/// The error for a write the writer did not take within [`WRITE_WAIT`].
fn too_slow() -> ApiError {
    crate::metrics::get()
        .writes_refused
        .with_label_values(&["slow_storage"])
        .inc();
    ApiError::new(
        crate::error::ErrorCode::StorageUnavailable,
        "The server's storage is too slow to save this now; nothing was changed. Try again.",
    )
    .retry_after(RETRY_AFTER_SECONDS)
}

/// The writer's own view of its storage (the reserve is the engine's).
#[derive(Default)]
struct Health {
    state: Mutex<Option<Writes>>,
    stopped: AtomicBool,
}

impl Health {
    fn get(&self) -> Writes {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or(Writes::Open)
    }

    fn set(&self, writes: Writes) {
        self.stopped
            .store(matches!(writes, Writes::Stopped { .. }), Ordering::SeqCst);
        crate::metrics::get().writes_state.set(writes.code());
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) =
            (writes != Writes::Open).then_some(writes);
    }
}

/// How many times a batch is decided again after another writer appended to a shared log
/// first, before its commands are answered with an error.
const MAX_REDECISIONS: usize = 16;

/// Called on the writer thread with each durable batch and the read state right after it (under
/// its read lock): real-time delivery hangs here.
pub type Publisher = Arc<dyn Fn(&Projections, &[Envelope], Origin) + Send + Sync>;

/// Who wrote a durable batch: effects that must happen once (outgoing webhooks) belong to the
/// node that wrote it; every node delivers events to its own queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// This node's writer.
    Here,
    /// Another node, writing to a shared log.
    Elsewhere,
}
/// A command's decision. It may run more than once: when a shared log refuses a batch because
/// another writer appended first, the writer folds what it missed and decides the batch's
/// commands again. Only the completion of the decision that became durable is called.
type Decide = Box<dyn Fn(&Projections, &Ctx) -> (Vec<Event>, Completion) + Send>;

enum Job {
    Command {
        actor: Option<UserId>,
        decide: Decide,
        /// `QUEUED` until the writer takes it or its caller withdraws it.
        ticket: Arc<AtomicU8>,
    },
    /// Another writer may have appended to the log: fold what it wrote.
    CatchUp,
    Shutdown(oneshot::Sender<()>),
}

/// Handle to the write path and the read state.
pub struct Engine {
    tx: mpsc::Sender<Job>,
    read: Arc<RwLock<Projections>>,
    log: Arc<dyn EventLog>,
    health: Arc<Health>,
    /// The data directory's free-space reserve, once the server has one.
    reserve: OnceLock<Arc<crate::store::space::Reserve>>,
    /// [`WRITE_WAIT`] in milliseconds (tests shorten it).
    write_wait_ms: AtomicU64,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// A committed command's reply and the seq of the batch that made it durable.
#[derive(Debug)]
pub struct Committed<T> {
    pub value: T,
    pub seq: Seq,
}

use crate::time::now_ms;

impl Engine {
    /// Starts the writer over a log whose contents are already folded into `state`.
    pub fn start(log: Arc<dyn EventLog>, state: Projections) -> std::io::Result<Engine> {
        Engine::start_with(log, state, None)
    }

    /// `start`, with a publisher for real-time delivery.
    pub fn start_with(
        log: Arc<dyn EventLog>,
        state: Projections,
        publisher: Option<Publisher>,
    ) -> std::io::Result<Engine> {
        Engine::start_full(log, state, publisher, None)
    }

    /// `start_with`, also writing a projection snapshot every so many events.
    pub fn start_full(
        log: Arc<dyn EventLog>,
        state: Projections,
        publisher: Option<Publisher>,
        snapshots: Option<SnapshotPolicy>,
    ) -> std::io::Result<Engine> {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        // Commands never need the search index fast; only the read state keeps one (and it is
        // not copied for the decision state only to be dropped).
        let mut state = state;
        let words = state.messages.take_word_index();
        let mut read = state.clone();
        if let Some(words) = words {
            read.messages.set_word_index(words);
        }
        let read = Arc::new(RwLock::new(read));
        // The read state shares every message the decision state has not changed since the
        // last durable batch (`Projections::adopt_shared`).
        state.messages.track_changes();
        let health = Arc::new(Health::default());
        crate::metrics::get().writes_state.set(0);
        // The next record links to the last one the state was folded from.
        let last_record = match state.seq {
            Seq(0) => None,
            seq => match log.scan_from(seq).next() {
                Some(Ok((found, record))) if found == seq => Some(record),
                _ => {
                    return Err(std::io::Error::other(format!(
                        "the log has no record {seq} to continue its hash chain from"
                    )))
                }
            },
        };
        // A log other writers share wakes the writer when they append.
        let pending = Arc::new(AtomicBool::new(false));
        // Weak, so that the log (which the writer holds) does not keep the writer's queue open.
        let (wake_tx, wake_pending) = (tx.downgrade(), pending.clone());
        log.watch(Box::new(move || {
            let Some(tx) = wake_tx.upgrade() else {
                return;
            };
            if !wake_pending.swap(true, Ordering::SeqCst) && tx.try_send(Job::CatchUp).is_err() {
                wake_pending.store(false, Ordering::SeqCst);
            }
        }));
        let snapshot_seq = snapshots
            .as_ref()
            .and_then(|policy| {
                crate::snapshot::list(&policy.data_dir)
                    .last()
                    .map(|(seq, _)| seq.0)
            })
            .unwrap_or(0);
        // The log's time goes on from its last record's, whatever the wall clock says now.
        let last_at = match (&last_record, state.seq) {
            (Some(record), seq) => Envelope::decode(seq, record).map_or(0, |env| env.at),
            (None, _) => 0,
        };
        let writer = Writer {
            catch_up_pending: pending,
            log: log.clone(),
            read: read.clone(),
            health: health.clone(),
            last_recovery: None,
            decided: state,
            last_at,
            clock: ClockWatch::default(),
            publisher,
            chain: crate::events::Chain::after_record(last_record.as_deref()),
            snapshots,
            snapshot_thread: None,
            snapshot_seq,
        };
        let handle = std::thread::Builder::new()
            .name("chronicle-writer".into())
            .spawn(move || writer.run(rx))?;
        Ok(Engine {
            tx,
            read,
            log,
            health,
            reserve: OnceLock::new(),
            write_wait_ms: AtomicU64::new(WRITE_WAIT.as_millis() as u64),
            writer: Mutex::new(Some(handle)),
        })
    }

    /// Runs `f` with the read state. The closure form makes it impossible to hold the lock
    /// across an `.await`.
    pub fn read<R>(&self, f: impl FnOnce(&Projections) -> R) -> R {
        let guard = self
            .read
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&guard)
    }

    /// Builds the read state's word index on a thread of its own when it keeps none (after a
    /// start from a snapshot or from the log alone), so that start-up does not wait for it.
    /// Until it is installed, a `search:` narrow checks each candidate's text instead, with the
    /// same answers; the writer goes on folding meanwhile, and what it changed is brought into
    /// the index as it is installed (`Messages::install_word_index`). `ready` is called once
    /// the read state has an index, with what was built (`None` when the state had one
    /// already).
    pub fn index_words_in_background(
        &self,
        ready: impl FnOnce(Option<crate::projections::messages::IndexBuilt>) + Send + 'static,
    ) {
        let Some(source) = self.read(|state| state.messages.word_index_source()) else {
            ready(None);
            return;
        };
        let read = self.read.clone();
        let spawned = std::thread::Builder::new()
            .name("chronicle-word-index".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                let messages = source.len();
                match catch_unwind(AssertUnwindSafe(|| source.build())) {
                    Ok(built) => {
                        read.write()
                            .unwrap_or_else(|p| p.into_inner())
                            .messages
                            .install_word_index(built);
                        let seconds = started.elapsed().as_secs_f64();
                        // Counted under the read lock: searches go on meanwhile.
                        let (words, bytes) = read
                            .read()
                            .unwrap_or_else(|p| p.into_inner())
                            .messages
                            .word_index_size();
                        ready(Some(crate::projections::messages::IndexBuilt {
                            messages,
                            seconds,
                            words,
                            bytes,
                        }));
                    }
                    Err(_) => tracing::error!(
                        "building the search index failed (a bug): searches check every \
                         message's text instead"
                    ),
                }
            });
        if let Err(error) = spawned {
            tracing::error!(
                %error,
                "the search index was not built: searches check every message's text instead"
            );
        }
    }

    /// The log, for the admin listing and time-travel dumps.
    pub fn log(&self) -> &Arc<dyn EventLog> {
        &self.log
    }

    /// True once a storage error has stopped writes until restart.
    pub fn has_failed(&self) -> bool {
        self.health.stopped.load(Ordering::SeqCst)
    }

    /// Refuses writes while the data directory's free space is below `reserve`.
    pub fn keep_reserve(&self, reserve: Arc<crate::store::space::Reserve>) {
        let _ = self.reserve.set(reserve);
    }

    /// The reserve in use, if any.
    pub fn reserve(&self) -> Option<&Arc<crate::store::space::Reserve>> {
        self.reserve.get()
    }

    /// How long a write waits for the writer to take it (default [`WRITE_WAIT`]).
    pub fn set_write_wait(&self, wait: Duration) {
        self.write_wait_ms
            .store(wait.as_millis() as u64, Ordering::Relaxed);
    }

    /// Whether writes go through now, and why not.
    pub fn writes(&self) -> Writes {
        self.below_reserve()
            .or_else(|| self.cut_off())
            .unwrap_or_else(|| self.health.get())
    }

    /// `Writes::Unreachable` while a cluster's log does not answer this node.
    fn cut_off(&self) -> Option<Writes> {
        cut_off(self.log.as_ref())
    }

    /// `Writes::BelowReserve` while the data directory's free space is below the reserve.
    fn below_reserve(&self) -> Option<Writes> {
        let low = self.reserve.get()?.low()?;
        Some(Writes::BelowReserve {
            available: low.available,
            keep: low.keep,
        })
    }

    /// Decides `f` on the writer and answers once its events are durable and applied.
    ///
    /// `f` must be pure: it reads the decision state and the context and returns the events to
    /// append plus the reply. Returning an error appends nothing. It is an `Fn` because it may
    /// be decided again against a newer state (see `Decide`); only the reply of the decision
    /// that became durable is sent.
    pub async fn execute<T, F>(&self, actor: Option<UserId>, f: F) -> ApiResult<Committed<T>>
    where
        T: Send + 'static,
        F: Fn(&Projections, &Ctx) -> ApiResult<Decision<T>> + Send + 'static,
    {
        let (reply_tx, reply_rx) = oneshot::channel::<ApiResult<Committed<T>>>();
        let reply_tx = Arc::new(Mutex::new(Some(reply_tx)));
        let decide: Decide = Box::new(move |state, ctx| {
            let reply_tx = reply_tx.clone();
            let send = move |answer: ApiResult<Committed<T>>| {
                let taken = reply_tx.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(tx) = taken {
                    let _ = tx.send(answer);
                }
            };
            match f(state, ctx) {
                Ok(Decision { events, reply }) => {
                    let done: Completion = Box::new(move |batch: ApiResult<Seq>| {
                        send(batch.map(|seq| Committed { value: reply, seq }));
                    });
                    (events, done)
                }
                Err(rejection) => {
                    // Even a rejection waits for its batch: it may rest on state that only
                    // becomes real once the batch is durable.
                    let done: Completion = Box::new(move |batch: ApiResult<Seq>| {
                        send(batch.and(Err(rejection)));
                    });
                    (Vec::new(), done)
                }
            }
        });
        // Refused before queueing: below the disk reserve, cut off from a cluster's log, or
        // stopped for good. (A paused writer is asked: the write may be the one that finds the
        // storage well again.)
        let refusal = self
            .below_reserve()
            .or_else(|| self.cut_off())
            .or_else(|| self.has_failed().then(|| self.health.get()));
        if let Some(writes) = refusal {
            crate::metrics::get()
                .writes_refused
                .with_label_values(&[writes.refused_as()])
                .inc();
            return Err(refused(&writes));
        }
        let wait = Duration::from_millis(self.write_wait_ms.load(Ordering::Relaxed));
        let deadline = tokio::time::Instant::now() + wait;
        let ticket = Arc::new(AtomicU8::new(QUEUED));
        let job = Job::Command {
            actor,
            decide,
            ticket: ticket.clone(),
        };
        match tokio::time::timeout_at(deadline, self.tx.send(job)).await {
            Err(_) => return Err(too_slow()),
            Ok(Err(_)) => return Err(ApiError::internal("the writer has stopped")),
            Ok(Ok(())) => {}
        }
        let mut reply_rx = reply_rx;
        let answer = match tokio::time::timeout_at(deadline, &mut reply_rx).await {
            Ok(answer) => answer,
            Err(_) => {
                // Still queued: withdrawn, and it never happens. Taken: its batch is being
                // written, and its caller learns how that ended.
                if ticket
                    .compare_exchange(QUEUED, WITHDRAWN, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    return Err(too_slow());
                }
                reply_rx.await
            }
        };
        answer.map_err(|_| ApiError::internal("the writer dropped a command"))?
    }

    /// Folds what other writers appended to a shared log, and returns once the read state
    /// holds it (at once on a log with one writer).
    pub async fn catch_up(&self) -> ApiResult<()> {
        self.tx
            .send(Job::CatchUp)
            .await
            .map_err(|_| ApiError::internal("the writer has stopped"))?;
        // Jobs are taken in order: this command is decided after the catch-up.
        self.execute(None, |_, _| {
            Ok(Decision {
                events: Vec::new(),
                reply: (),
            })
        })
        .await
        .map(|_| ())
    }

    /// Lets the writer finish every queued command, then stops it.
    pub async fn shutdown(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Job::Shutdown(tx)).await.is_ok() {
            let _ = rx.await;
        }
        let handle = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(handle) = handle {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
    }
}

/// A snapshot costs time in proportion to the whole state (it is encoded and hashed whole), so
/// writing one every so many events costs more and more as history grows: at ten million
/// messages, one every 100,000 events kept a core busy half the time. One is due when the log
/// has grown by `every` events since the last one, or by a quarter of the events before it,
/// whichever is more; then snapshots cost a bounded share of the write path however long the
/// history, and a start after a crash folds at most a fifth of the log after its snapshot (a
/// clean stop writes one at the end).
pub fn snapshot_due(every: u64, last_snapshot: u64, seq: u64) -> bool {
    const GROWTH: u64 = 4;
    seq.saturating_sub(last_snapshot) >= every.max(1).max(last_snapshot / GROWTH)
}

/// Notices the wall clock stepping back behind the log's time, to record it once.
#[derive(Default)]
struct ClockWatch {
    /// The step is in the log: not recorded again until the clock has caught up.
    recorded: bool,
    /// The batch being written records it.
    recording: bool,
}

/// How far behind the log's time the wall clock must be to count as a step back.
const CLOCK_SLACK_MS: i64 = 1000;

impl ClockWatch {
    /// The event to record for a batch decided at `wall`, when the log is at `log_ms`.
    fn read(&mut self, wall: i64, log_ms: i64) -> Option<Event> {
        self.recording = false;
        if wall >= log_ms {
            self.recorded = false;
            return None;
        }
        if self.recorded || wall + CLOCK_SLACK_MS > log_ms {
            return None;
        }
        self.recording = true;
        Some(Event::ClockWentBack {
            wall_ms: wall,
            log_ms,
        })
    }

    /// The batch decided last is durable.
    fn durable(&mut self) {
        self.recorded |= self.recording;
        self.recording = false;
    }
}

struct Writer {
    log: Arc<dyn EventLog>,
    /// Set while a `Job::CatchUp` is queued, so that a burst of other writers' appends queues
    /// one.
    catch_up_pending: Arc<AtomicBool>,
    read: Arc<RwLock<Projections>>,
    health: Arc<Health>,
    /// When a paused writer last asked the log to recover.
    last_recovery: Option<Instant>,
    /// The decision state: the read state plus the batch being written.
    decided: Projections,
    /// Keeps `at` non-decreasing along the log even if the wall clock steps back.
    last_at: i64,
    clock: ClockWatch,
    publisher: Option<Publisher>,
    /// Where the log's hash chain ends (what the next record links to).
    chain: crate::events::Chain,
    snapshots: Option<SnapshotPolicy>,
    /// The thread writing the last periodic snapshot (joined at a stop).
    snapshot_thread: Option<std::thread::JoinHandle<()>>,
    /// The seq of the newest snapshot (on disk at start, or written since).
    snapshot_seq: u64,
}

/// When and where the writer takes projection snapshots.
#[derive(Debug, Clone)]
pub struct SnapshotPolicy {
    pub data_dir: std::path::PathBuf,
    /// A snapshot once the log has grown by this many events since the last one, or by a
    /// quarter of the events before it, whichever is more ([`snapshot_due`]).
    pub every: u64,
    /// Snapshots kept (older ones are removed).
    pub keep: usize,
    /// Called with each snapshot written (a cluster shares it with the other nodes).
    pub written: Option<AfterSnapshot>,
}

/// What is done with a snapshot once it is written.
#[derive(Clone)]
pub struct AfterSnapshot(pub Arc<dyn Fn(&std::path::Path) + Send + Sync>);

impl std::fmt::Debug for AfterSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterSnapshot")
    }
}

/// Lowers the calling thread's scheduling priority (nice 10): background work (a snapshot,
/// the start-up log check) then takes the cores only when serving leaves them idle. On Linux
/// the nice value is per thread.
pub fn background_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority takes plain integers; `who` 0 is the calling thread on Linux.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

impl Writer {
    fn run(mut self, mut rx: mpsc::Receiver<Job>) {
        while let Some(first) = rx.blocking_recv() {
            let mut commands = Vec::new();
            let mut shutdown = None;
            let mut catch_up = false;
            let mut next = Some(first);
            while let Some(job) = next.take() {
                match job {
                    Job::Command {
                        actor,
                        decide,
                        ticket,
                    } => {
                        // A command its caller withdrew (it waited too long) never happens.
                        if ticket
                            .compare_exchange(QUEUED, TAKEN, Ordering::SeqCst, Ordering::SeqCst)
                            .is_ok()
                        {
                            commands.push((actor, decide));
                        }
                    }
                    Job::CatchUp => catch_up = true,
                    Job::Shutdown(ack) => {
                        shutdown = Some(ack);
                        break;
                    }
                }
                if commands.len() < MAX_BATCH {
                    next = rx.try_recv().ok();
                }
            }
            if catch_up {
                self.catch_up_pending.store(false, Ordering::SeqCst);
                // Nothing to read from a log that does not answer (each try would hold the
                // writer for the whole request wait); once it answers, a paused writer tries
                // it again here too, so that it folds the others' writes without a write of
                // its own.
                let reachable = self.log.unreachable().is_none();
                if reachable && matches!(self.health.get(), Writes::Paused { .. }) {
                    self.try_recover();
                }
                if reachable && self.health.get() == Writes::Open {
                    match self.catch_up() {
                        Ok(_) => {}
                        // The log could not be read now (a NATS election, say): nothing was
                        // folded, and the next append, refused if this node is behind, tries
                        // again.
                        Err(StoreError::Io(why)) => {
                            tracing::warn!(%why, "could not read other writers' batches yet");
                        }
                        Err(err) => self.fail(&err, None),
                    }
                }
            }
            self.write_batch(commands);
            if let Some(ack) = shutdown {
                self.snapshot_at_stop();
                if let Err(error) = self.log.close() {
                    tracing::warn!(%error, "the log was not closed well: the next start reads more of it");
                }
                let _ = ack.send(());
                return;
            }
        }
    }

    fn write_batch(&mut self, commands: Vec<(Option<UserId>, Decide)>) {
        if commands.is_empty() {
            return;
        }
        let writes = cut_off(self.log.as_ref()).unwrap_or_else(|| self.health.get());
        match writes {
            Writes::Open => {}
            Writes::Paused { .. } if self.try_recover() => {}
            writes => {
                crate::metrics::get()
                    .writes_refused
                    .with_label_values(&[writes.refused_as()])
                    .inc_by(commands.len() as u64);
                self.answer_all(&commands, || refused(&writes));
                return;
            }
        }
        let mut refusals = 0;
        loop {
            let (staged, completions) = self.decide(&commands);
            if staged.is_empty() {
                let seq = self.decided.seq;
                completions.into_iter().for_each(|done| done(Ok(seq)));
                return;
            }
            match self.persist(&staged) {
                Ok(()) => {
                    self.clock.durable();
                    self.fold_durable(&staged, Origin::Here);
                    let seq = self.decided.seq;
                    completions.into_iter().for_each(|done| done(Ok(seq)));
                    self.maybe_snapshot();
                    return;
                }
                Err(StoreError::Conflict(why)) => {
                    // Another writer appended first. Nothing of this batch counts in the log
                    // (parts stored before the refusal are an abandoned batch readers skip):
                    // forget its decisions, fold what the other wrote, and decide again.
                    refusals += 1;
                    tracing::info!(refusals, %why, "the log moved on; deciding the batch again");
                    drop(completions);
                    self.roll_back();
                    // Writers that keep colliding step aside for a random moment, longer each
                    // time, so that one of them gets through.
                    let spread = 1u64 << refusals.min(6);
                    let wait = (uuid::Uuid::new_v4().as_u128() as u64) % (spread + 1);
                    std::thread::sleep(std::time::Duration::from_millis(wait));
                    // From here the decision state is the read state: commands that are not
                    // decided again are answered without folding anything.
                    let caught_up = self.catch_up();
                    if let Err(err) = &caught_up {
                        if !matches!(err, StoreError::Io(_)) {
                            self.fail(err, None);
                            self.answer_all(&commands, || {
                                ApiError::internal(format!("storage: {err}"))
                            });
                            return;
                        }
                        tracing::warn!(error = %err, "could not read other writers' batches yet");
                    }
                    if refusals >= MAX_REDECISIONS || caught_up.is_err() {
                        self.answer_all(&commands, || {
                            ApiError::new(
                                crate::error::ErrorCode::Busy,
                                "The server is busy with other writers; try again",
                            )
                        });
                        return;
                    }
                }
                Err(err) => {
                    tracing::error!(
                        first_seq = staged[0].seq.0,
                        events = staged.len(),
                        error = %err,
                        "a batch was not made durable"
                    );
                    let transient = matches!(
                        err,
                        StoreError::Io(_) | StoreError::NoSpace(_) | StoreError::Unconfirmed(_)
                    );
                    if !(transient && self.log.recovers_in_process()) {
                        self.fail(&err, Some(completions));
                        return;
                    }
                    // Nothing of the batch counts: forget its decisions, tell its callers,
                    // and pause until the log recovers.
                    self.roll_back();
                    let paused = self.pause(&err);
                    let unknown = matches!(err, StoreError::Unconfirmed(_));
                    for done in completions {
                        done(Err(if unknown {
                            unconfirmed()
                        } else {
                            refused(&paused)
                        }));
                    }
                    return;
                }
            }
        }
    }

    /// Decides every command in order against the decision state, folding each one's events
    /// into it before the next is decided. Returns the events and the completions.
    fn decide(
        &mut self,
        commands: &[(Option<UserId>, Decide)],
    ) -> (Vec<Envelope>, Vec<Completion>) {
        let wall = now_ms();
        let mut staged: Vec<Envelope> = Vec::new();
        if let Some(event) = self.clock.read(wall, self.last_at) {
            tracing::warn!(
                wall_ms = wall,
                log_ms = self.last_at,
                "the wall clock is behind the log's time (it stepped back): events keep the \
                 log's time until the clock passes it"
            );
            let env = Envelope {
                seq: self.decided.seq.next(),
                at: self.last_at,
                actor: None,
                schema_version: SCHEMA_VERSION,
                event,
            };
            self.decided.apply(&env);
            staged.push(env);
        }
        self.last_at = self.last_at.max(wall);
        let mut completions: Vec<Completion> = Vec::with_capacity(commands.len());
        for (actor, decide) in commands {
            let actor = *actor;
            let ctx = self.ctx(actor);
            // A panicking command must not take the writer down; it only had `&` access to
            // the state, so nothing is half-applied.
            let decided = catch_unwind(AssertUnwindSafe(|| decide(&self.decided, &ctx)));
            let Ok((events, done)) = decided else {
                tracing::error!("a command panicked while deciding; it was rejected");
                continue;
            };
            for event in events {
                let env = Envelope {
                    seq: self.decided.seq.next(),
                    at: ctx.now_ms,
                    actor,
                    schema_version: SCHEMA_VERSION,
                    event,
                };
                self.decided.apply(&env);
                staged.push(env);
            }
            completions.push(done);
        }
        (staged, completions)
    }

    /// Folds durable events (this writer's batch, already in the decision state, or another
    /// writer's, folded into it first) into the read state and delivers them.
    fn fold_durable(&mut self, durable: &[Envelope], origin: Origin) {
        {
            let mut read = self.read.write().unwrap_or_else(|p| p.into_inner());
            for env in durable {
                read.apply(env);
            }
            // The two states are at the same seq again: keep one copy of what changed.
            read.adopt_shared(&mut self.decided);
        }
        if let Some(publish) = &self.publisher {
            // Delivered before the callers are answered, so a client sees the client events
            // of its own request by the time it has the response.
            let read = self.read.read().unwrap_or_else(|p| p.into_inner());
            if catch_unwind(AssertUnwindSafe(|| publish(&read, durable, origin))).is_err() {
                tracing::error!("publishing client events panicked; the batch is durable");
            }
        }
    }

    /// Stops all writes after a storage error and answers `completions` with it.
    fn fail(&self, err: &StoreError, completions: Option<Vec<Completion>>) {
        let stopped = Writes::Stopped {
            why: err.to_string(),
        };
        self.health.set(stopped.clone());
        tracing::error!(
            error = %err,
            "STORAGE FAILURE: all writes are stopped until restart (restart replays what is \
             durable)"
        );
        for done in completions.into_iter().flatten() {
            done(Err(refused(&stopped)));
        }
    }

    /// Pauses writes after the log failed to take a batch (the decision state already rolled
    /// back); the next write asks the log to recover, no sooner than [`RECOVERY_EVERY`].
    fn pause(&mut self, err: &StoreError) -> Writes {
        let paused = Writes::Paused {
            why: err.to_string(),
            no_space: matches!(err, StoreError::NoSpace(_)),
        };
        if self.health.get() == Writes::Open {
            tracing::error!(
                error = %err,
                "STORAGE FAILURE: writes are paused; each write from now on, at most once a \
                 second, tries the storage again"
            );
        }
        self.health.set(paused.clone());
        self.last_recovery = Some(Instant::now());
        paused
    }

    /// Asks the log to recover, unless it was asked less than [`RECOVERY_EVERY`] ago. True
    /// when writes go through again.
    fn try_recover(&mut self) -> bool {
        if self
            .last_recovery
            .is_some_and(|at| at.elapsed() < RECOVERY_EVERY)
        {
            return false;
        }
        self.last_recovery = Some(Instant::now());
        match self.log.recover(self.decided.seq) {
            Ok(()) => {
                self.health.set(Writes::Open);
                tracing::warn!(
                    seq = self.decided.seq.0,
                    "the storage took writes again: writes resume"
                );
                true
            }
            Err(err @ (StoreError::Io(_) | StoreError::NoSpace(_))) => {
                tracing::warn!(error = %err, "the storage does not take writes yet");
                self.pause(&err);
                false
            }
            Err(err) => {
                self.fail(&err, None);
                false
            }
        }
    }

    /// Makes the decision state the read state again, forgetting a batch the log refused.
    fn roll_back(&mut self) {
        let mut copy = self
            .read
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone_without_word_index();
        copy.messages.track_changes();
        self.decided = copy;
    }

    /// Answers every command with `error` without folding anything: each is decided against
    /// the state as it is, only for its completion.
    fn answer_all(&self, commands: &[(Option<UserId>, Decide)], error: impl Fn() -> ApiError) {
        for (actor, decide) in commands {
            let decided = catch_unwind(AssertUnwindSafe(|| {
                decide(&self.decided, &self.ctx(*actor))
            }));
            if let Ok((_, done)) = decided {
                done(Err(error()));
            }
        }
    }

    /// Folds what other writers appended to a shared log since this writer's last batch into
    /// both states, checking that it continues the seqs and the hash chain, and delivers its
    /// events to this node's queues. Call only between batches (the states at one seq).
    ///
    /// `StoreError::Io` means the log could not be read and nothing was folded (the states
    /// are as they were); any other error is damage.
    fn catch_up(&mut self) -> Result<usize, StoreError> {
        let from = self.decided.seq.next();
        let records = self.log.catch_up(from)?;
        if records.is_empty() {
            return Ok(0);
        }
        let mut decoder = crate::store::Decoder::from(from);
        let mut chain = self.chain;
        let mut folded = Vec::with_capacity(records.len());
        for (seq, record) in records {
            if crate::events::record_link(&record) != Some(chain.link()) {
                return Err(StoreError::Corrupt {
                    seq: seq.0,
                    reason: "it does not link to the record before it (hash chain)".into(),
                });
            }
            chain = crate::events::Chain::after_record(Some(&record));
            folded.push(decoder.decode(Ok((seq, record.into())))?);
        }
        for env in &folded {
            self.decided.apply(env);
            self.last_at = self.last_at.max(env.at);
        }
        self.fold_durable(&folded, Origin::Elsewhere);
        self.chain = chain;
        tracing::debug!(
            events = folded.len(),
            last_seq = self.decided.seq.0,
            "folded other writers' batches"
        );
        self.maybe_snapshot();
        Ok(folded.len())
    }

    fn ctx(&self, actor: Option<UserId>) -> Ctx {
        Ctx {
            now_ms: self.last_at,
            actor,
        }
    }

    /// After a durable batch: when a snapshot is due ([`snapshot_due`]) and none is being
    /// written, a copy of the decision state (which holds no search index, so it is the cheaper
    /// copy) is written by a thread of its own; the writer only pays for the copy.
    fn maybe_snapshot(&mut self) {
        let Some(policy) = &self.snapshots else {
            return;
        };
        if !snapshot_due(policy.every, self.snapshot_seq, self.decided.seq.0) {
            return;
        }
        // One at a time: the next is written after the batch that follows this one's end.
        if self
            .snapshot_thread
            .as_ref()
            .is_some_and(|thread| !thread.is_finished())
        {
            return;
        }
        self.snapshot_seq = self.decided.seq.0;
        let state = self.decided.clone();
        let (policy, log) = (policy.clone(), self.log.clone());
        let spawned = std::thread::Builder::new()
            .name("chronicle-snapshot".into())
            .spawn(move || {
                background_priority();
                // A digest only for the other nodes' executables: this one trusts its own.
                let digest = match policy.written {
                    Some(_) => crate::snapshot::StateDigest::Recorded,
                    None => crate::snapshot::StateDigest::Skipped,
                };
                match crate::snapshot::write(
                    &policy.data_dir,
                    log.as_ref(),
                    &state,
                    policy.keep,
                    digest,
                ) {
                    Ok(path) => {
                        tracing::info!(seq = state.seq.0, path = %path.display(), "snapshot written");
                        if let Some(AfterSnapshot(written)) = &policy.written {
                            written(&path);
                        }
                    }
                    Err(error) => tracing::warn!(seq = state.seq.0, %error, "snapshot not written"),
                }
            });
        match spawned {
            Ok(thread) => self.snapshot_thread = Some(thread),
            Err(error) => tracing::warn!(%error, "snapshot not started"),
        }
    }

    /// On a clean stop, after any periodic snapshot under way is finished, a snapshot of the
    /// final state when the log has moved on by a tenth of the interval since the newest one,
    /// so that the next start decodes it instead of folding up to a whole interval of events
    /// again (about half a second for 100,000), or when the newest records no digest, so that
    /// an upgrade, which comes after a clean stop, has a snapshot it can check. Written on this
    /// thread from the decision state itself: nothing else runs any more. Kept on this node (a
    /// cluster shares only the periodic snapshots).
    fn snapshot_at_stop(&mut self) {
        let Some(policy) = &self.snapshots else {
            return;
        };
        // A periodic snapshot still being written is finished first: it may be the newest.
        if let Some(thread) = self.snapshot_thread.take() {
            let _ = thread.join();
        }
        if self.health.get() != Writes::Open {
            return;
        }
        let newest = crate::snapshot::list(&policy.data_dir).pop();
        let checkable = newest
            .as_ref()
            .is_none_or(|(_, path)| crate::snapshot::recorded_digest(path).is_some());
        let tail = self
            .decided
            .seq
            .0
            .saturating_sub(newest.map_or(0, |(seq, _)| seq.0));
        if checkable && (tail == 0 || tail < policy.every.max(1) / 10) {
            return;
        }
        let started = std::time::Instant::now();
        match crate::snapshot::write(
            &policy.data_dir,
            self.log.as_ref(),
            &self.decided,
            policy.keep,
            // With its digest: an upgrade starts from this one.
            crate::snapshot::StateDigest::Recorded,
        ) {
            Ok(path) => tracing::info!(
                seq = self.decided.seq.0,
                path = %path.display(),
                ms = started.elapsed().as_millis() as u64,
                "snapshot written at stop"
            ),
            Err(error) => {
                tracing::warn!(seq = self.decided.seq.0, %error, "snapshot at stop not written")
            }
        }
    }

    fn persist(&mut self, staged: &[Envelope]) -> Result<(), StoreError> {
        // The chain moves on only once the batch is durable (a failed batch stops all writes).
        let mut chain = self.chain;
        let records = staged
            .iter()
            .map(|env| {
                chain
                    .seal(env)
                    .map(|bytes| (env.seq, bytes))
                    .map_err(|e| StoreError::Encode(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let started = std::time::Instant::now();
        self.log.append_batch(&records)?;
        self.log.flush()?;
        let metrics = crate::metrics::get();
        metrics
            .commit_flush_seconds
            .observe(started.elapsed().as_secs_f64());
        metrics.commit_batch_events.observe(records.len() as f64);
        metrics
            .log_bytes_written
            .inc_by(records.iter().map(|(_, r)| r.len() as u64).sum());
        self.chain = chain;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::users::{create_realm, create_user, NewUser};
    use crate::events::Role;
    use crate::store::{RecordIter, StoreError};
    use std::sync::atomic::AtomicUsize;

    /// An in-memory log that counts flushes and can be told to fail.
    #[derive(Default)]
    struct MemLog {
        records: Mutex<Vec<(Seq, Vec<u8>)>>,
        flushes: AtomicUsize,
        fail: AtomicBool,
    }

    impl EventLog for MemLog {
        fn append_batch(&self, records: &[(Seq, Vec<u8>)]) -> Result<(), StoreError> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(StoreError::Io("disk on fire".into()));
            }
            self.records.lock().unwrap().extend_from_slice(records);
            Ok(())
        }
        fn flush(&self) -> Result<(), StoreError> {
            self.flushes.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        fn scan_from(&self, from: Seq) -> RecordIter<'_> {
            let records: Vec<_> = self.records.lock().unwrap().clone();
            Box::new(
                records
                    .into_iter()
                    .filter(move |(s, _)| *s >= from)
                    .map(|(s, r)| Ok((s, r.into()))),
            )
        }
        fn last_seq(&self) -> Result<Option<Seq>, StoreError> {
            Ok(self.records.lock().unwrap().last().map(|(s, _)| *s))
        }
        fn quarantine_from(&self, _: Seq) -> Result<usize, StoreError> {
            Ok(0)
        }
    }

    /// The records of a log several writers share.
    type Shared = Arc<Mutex<Vec<(Seq, Vec<u8>)>>>;

    /// One node's view of a log several writers share, as a JetStream stream is: an append is
    /// refused unless the node has read everything before it.
    struct SharedLog {
        records: Shared,
        /// How many records this node has read or written.
        seen: Mutex<usize>,
        refusals: AtomicUsize,
    }

    impl SharedLog {
        fn node(records: &Shared) -> Arc<SharedLog> {
            let seen = records.lock().unwrap().len();
            Arc::new(SharedLog {
                records: records.clone(),
                seen: Mutex::new(seen),
                refusals: AtomicUsize::new(0),
            })
        }
    }

    impl EventLog for SharedLog {
        fn append_batch(&self, batch: &[(Seq, Vec<u8>)]) -> Result<(), StoreError> {
            let mut records = self.records.lock().unwrap();
            let mut seen = self.seen.lock().unwrap();
            if *seen != records.len() {
                self.refusals.fetch_add(1, Ordering::SeqCst);
                return Err(StoreError::Conflict("another node appended first".into()));
            }
            records.extend_from_slice(batch);
            *seen = records.len();
            Ok(())
        }
        fn flush(&self) -> Result<(), StoreError> {
            Ok(())
        }
        fn scan_from(&self, from: Seq) -> RecordIter<'_> {
            let records: Vec<_> = self.records.lock().unwrap().clone();
            Box::new(
                records
                    .into_iter()
                    .filter(move |(s, _)| *s >= from)
                    .map(|(s, r)| Ok((s, r.into()))),
            )
        }
        fn last_seq(&self) -> Result<Option<Seq>, StoreError> {
            Ok(self.records.lock().unwrap().last().map(|(s, _)| *s))
        }
        fn quarantine_from(&self, _: Seq) -> Result<usize, StoreError> {
            Ok(0)
        }
        fn catch_up(&self, from: Seq) -> Result<Vec<(Seq, Vec<u8>)>, StoreError> {
            let records = self.records.lock().unwrap();
            let mut seen = self.seen.lock().unwrap();
            let new = records[*seen..]
                .iter()
                .filter(|(seq, _)| *seq >= from)
                .cloned()
                .collect();
            *seen = records.len();
            Ok(new)
        }
    }

    /// Two nodes write to one shared log at once. Every refused batch is decided again after
    /// folding the other node's: no acknowledged command is lost or applied twice, the log
    /// stays gapless and chained, and both nodes and a replay agree on the state.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_writers_on_a_shared_log_decide_again_when_refused() {
        let records = Arc::new(Mutex::new(Vec::new()));
        let first_log = SharedLog::node(&records);
        let first = Arc::new(Engine::start(first_log.clone(), Projections::default()).unwrap());
        first
            .execute(None, |s, _| {
                create_realm(s, "Org", "", user("owner@example.com", Role::Owner))
            })
            .await
            .unwrap();
        let second_log = SharedLog::node(&records);
        let replayed = crate::replay::fold(second_log.as_ref(), None, |_| {}).unwrap();
        let second = Arc::new(Engine::start(second_log.clone(), replayed).unwrap());
        // 300 sign-ups through both nodes at once; 100 emails, each asked for three times.
        let mut tasks = Vec::new();
        for i in 0..300 {
            let engine = if i % 2 == 0 { &first } else { &second }.clone();
            tasks.push(tokio::spawn(async move {
                let email = format!("u{}@example.com", i % 100);
                let asked = email.clone();
                engine
                    .execute(Some(UserId(1)), move |s, ctx| {
                        create_user(s, ctx, user(&asked, Role::Member))
                    })
                    .await
                    .map(|committed| (email, committed.value))
            }));
        }
        let mut created = std::collections::BTreeMap::new();
        let mut duplicates = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok((email, id)) => assert!(created.insert(email, id).is_none(), "twice"),
                Err(e) => {
                    assert_eq!(e.body()["msg"], "Email is already in use.");
                    duplicates += 1;
                }
            }
        }
        assert_eq!((created.len(), duplicates), (100, 200));
        let refusals =
            first_log.refusals.load(Ordering::SeqCst) + second_log.refusals.load(Ordering::SeqCst);
        assert!(
            refusals > 0,
            "the nodes never raced: the test proves nothing"
        );
        first.catch_up().await.unwrap();
        second.catch_up().await.unwrap();
        let replay = crate::replay::fold(first_log.as_ref(), None, |_| {}).unwrap();
        assert_eq!(first.read(Projections::digest), replay.digest());
        assert_eq!(second.read(Projections::digest), replay.digest());
        // Each acknowledged sign-up is there under the id its caller was told.
        for (email, id) in &created {
            assert_eq!(
                replay.users.get(*id).map(|u| u.email.as_str()),
                Some(email.as_str())
            );
        }
        assert_eq!(replay.users.len(), 101);
        let chain = crate::store::verify_chain(first_log.as_ref(), None).unwrap();
        assert_eq!(chain.first_break, None);
        // A node that caught up writes on at once.
        second
            .execute(Some(UserId(1)), |s, ctx| {
                create_user(s, ctx, user("late@example.com", Role::Member))
            })
            .await
            .unwrap();
    }

    fn user(email: &str, role: Role) -> NewUser {
        NewUser {
            email: email.into(),
            full_name: "Name".into(),
            role,
            password_hash: None,
            api_key_nonce: "n".into(),
        }
    }

    async fn started() -> (Arc<MemLog>, Arc<Engine>) {
        let log = Arc::new(MemLog::default());
        let engine = Arc::new(Engine::start(log.clone(), Projections::default()).unwrap());
        engine
            .execute(None, |s, _| {
                create_realm(s, "Org", "", user("owner@example.com", Role::Owner))
            })
            .await
            .unwrap();
        (log, engine)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_commands_share_flushes_and_see_each_other() {
        let (log, engine) = started().await;
        let flushes_before = log.flushes.load(Ordering::SeqCst);
        let seq_before = engine.read(|s| s.seq);
        // 200 concurrent sign-ups, 100 distinct emails each requested twice.
        let mut tasks = Vec::new();
        for i in 0..200 {
            let engine = engine.clone();
            tasks.push(tokio::spawn(async move {
                let email = format!("u{}@example.com", i % 100);
                engine
                    .execute(Some(UserId(1)), move |s, ctx| {
                        create_user(s, ctx, user(&email, Role::Member))
                    })
                    .await
            }));
        }
        let mut ok = 0;
        let mut duplicates = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert_eq!(e.body()["msg"], "Email is already in use.");
                    duplicates += 1;
                }
            }
        }
        assert_eq!((ok, duplicates), (100, 100));
        let flushes = log.flushes.load(Ordering::SeqCst) - flushes_before;
        assert!(
            flushes < 200,
            "group commit: {flushes} flushes for 200 commands"
        );
        // Ids are unique and the log is gapless.
        engine.read(|s| {
            assert_eq!(s.users.len(), 101);
            assert_eq!(s.users.max_id(), UserId(101));
            assert_eq!(
                s.seq,
                Seq(seq_before.0 + 100),
                "one event per successful command"
            );
        });
        let folded = crate::replay::fold(log.as_ref(), None, |_| {}).unwrap();
        assert_eq!(folded.digest(), engine.read(Projections::digest));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_storage_error_stops_writes_and_leaves_reads_intact() {
        let (log, engine) = started().await;
        let before = engine.read(Projections::digest);
        log.fail.store(true, Ordering::SeqCst);
        let err = engine
            .execute(Some(UserId(1)), |s, ctx| {
                create_user(s, ctx, user("x@example.com", Role::Member))
            })
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            Some(crate::error::ErrorCode::StorageUnavailable)
        );
        assert!(engine.has_failed());
        assert_eq!(engine.read(Projections::digest), before);
        // A log that cannot recover in-process: even after the disk recovers, writes stay
        // stopped until a restart, and say so.
        log.fail.store(false, Ordering::SeqCst);
        let err = engine
            .execute(Some(UserId(1)), |s, ctx| {
                create_user(s, ctx, user("y@example.com", Role::Member))
            })
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            Some(crate::error::ErrorCode::StorageUnavailable)
        );
        assert!(err.body()["msg"].as_str().unwrap().contains("restarted"));
        assert_eq!(engine.read(|s| s.users.len()), 1);
    }

    #[test]
    fn snapshots_come_every_so_many_events_then_as_the_log_grows_by_a_quarter() {
        assert!(!snapshot_due(100_000, 0, 99_999));
        assert!(snapshot_due(100_000, 0, 100_000));
        assert!(snapshot_due(100_000, 300_000, 400_000));
        // Past 400,000 events, a quarter of the log is more than the interval.
        assert!(!snapshot_due(100_000, 800_000, 900_000));
        assert!(snapshot_due(100_000, 800_000, 1_000_000));
        assert!(!snapshot_due(100_000, 8_000_000, 9_999_999));
        assert!(snapshot_due(100_000, 8_000_000, 10_000_000));
        // Ten million events take about twenty snapshots instead of a hundred.
        let (mut last, mut written) = (0, 0);
        for seq in (0..=10_000_000).step_by(1000) {
            if snapshot_due(100_000, last, seq) {
                (last, written) = (seq, written + 1);
            }
        }
        assert!((15..=25).contains(&written), "{written}");
    }

    #[test]
    fn a_clock_behind_the_log_is_recorded_once_until_it_catches_up() {
        let mut watch = ClockWatch::default();
        assert_eq!(watch.read(5_000, 4_000), None, "ahead");
        assert_eq!(watch.read(4_500, 5_000), None, "jitter under a second");
        let step = watch.read(1_000, 5_000);
        assert_eq!(
            step,
            Some(Event::ClockWentBack {
                wall_ms: 1_000,
                log_ms: 5_000
            })
        );
        // Not durable (the batch failed): recorded again with the next batch.
        assert!(watch.read(1_100, 5_000).is_some());
        watch.durable();
        assert_eq!(watch.read(1_200, 5_000), None, "once per episode");
        assert_eq!(watch.read(5_000, 5_000), None, "caught up");
        assert!(watch.read(1_000, 6_500).is_some(), "a new step");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_command_is_contained() {
        let (_, engine) = started().await;
        let result: ApiResult<Committed<()>> = engine
            .execute(Some(UserId(1)), |_, _| panic!("bug in a command"))
            .await;
        assert!(matches!(result, Err(ApiError::Internal(_))));
        // The writer is still alive.
        engine
            .execute(Some(UserId(1)), |s, ctx| {
                create_user(s, ctx, user("z@example.com", Role::Member))
            })
            .await
            .unwrap();
        engine.shutdown().await;
    }
}

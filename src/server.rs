//! Opening a data directory (integrity check, replay, the server secret), first-start setup of
//! the organization, and the HTTP server's life from bind to clean shutdown.

use crate::auth::{
    generate_password, hash_password, new_api_key_nonce, write_private_file, ServerSecret,
};
use crate::commands::users::{create_realm, NewUser};
use crate::engine::Engine;
use crate::events::Role;
use crate::http::{AppState, Site};
use crate::ids::{Seq, UserId};
use crate::projections::Projections;
use crate::store::jetstream::{ClusterSpec, JetStreamLog};
use crate::store::{check_integrity_from, EventLog, Integrity, SledLog};
use actix_web::web;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// A start-up or command-line failure, printed to the operator as it is.
pub type Fatal = Box<dyn std::error::Error + Send + Sync>;

/// Options of `chronicle serve`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub data_dir: PathBuf,
    pub bind: String,
    pub owner_email: String,
    pub realm_name: String,
    /// Overrides the URL clients are told to use (default: `http://<bound address>`).
    pub external_url: Option<String>,
    /// Long-poll heartbeat interval (default: Zulip's 45–55 s); for tests.
    pub heartbeat: Option<std::time::Duration>,
    /// The relay emails go through (none: they are written to the outbox).
    pub mail: crate::notify::relay::RelaySettings,
    /// The email gateway's listener, when configured.
    pub email_gateway: Option<GatewayConfig>,
    /// Mobile push through Zulip's push notification service, when configured.
    pub push: Option<crate::notify::PushConfig>,
    /// The video call services organizations may choose.
    pub video: crate::render::VideoCalls,
    /// How often the message retention job runs (default: hourly); for tests.
    pub retention_interval: Option<std::time::Duration>,
    /// A projection snapshot every this many events (0: none).
    pub snapshot_every: u64,
    /// Rate limits (Zulip's defaults; a `max` of 0 turns one off).
    pub rate_limits: crate::http::rate_limit::Limits,
    /// How long a client may take to send a request.
    pub client_timeouts: crate::http::ClientTimeouts,
    /// The largest upload and the organization's upload quota.
    pub uploads: crate::render::UploadLimits,
    /// The log in a NATS JetStream stream instead of `DATA_DIR/log` (`--cluster`).
    pub cluster: Option<ClusterSpec>,
    /// The URL the other nodes of a cluster reach this one at (default: `http://<bound
    /// address>`).
    pub advertise_url: Option<String>,
    /// Also verify the records before the newest snapshot, on a thread of its own once the
    /// state is ready (`--check-whole-log`). Off by default: sled keeps about as much memory as
    /// the records it read until the server stops (370 B a record, measured).
    pub check_whole_log: bool,
    /// Free space kept on the data directory's filesystem, in MiB (`None`: the default,
    /// `store::space::default_reserve`; 0: none).
    pub min_free_space_mib: Option<u64>,
    /// Private or loopback address ranges outgoing requests may reach all the same
    /// (`--outgoing-allow`; `outgoing::Guard`).
    pub outgoing_allow: Vec<crate::outgoing::Net>,
    /// A separate address serving `/metrics` without credentials (`metrics.bind`).
    pub metrics_bind: Option<String>,
    /// The bearer token that opens `/metrics` on the main address (`metrics.token`).
    pub metrics_token: Option<String>,
    /// The ways of signing in besides passwords (`[auth]`, `[ldap]`).
    pub identity: crate::identity::Identity,
}

pub use crate::config::DEFAULT_SNAPSHOT_EVERY;

/// Snapshots kept in a data directory.
pub const SNAPSHOTS_KEPT: usize = 2;

pub use crate::layout::Layout;

/// Opens the log: the stream `cluster` names, or the data directory's own.
pub fn open_log(dir: &Path, cluster: Option<&ClusterSpec>) -> Result<Arc<dyn EventLog>, Fatal> {
    Ok(match cluster {
        Some(spec) => Arc::new(JetStreamLog::open(spec)?),
        None => Arc::new(SledLog::open(&Layout::new(dir).log())?),
    })
}

/// Opens the log read-only in spirit (no recovery) and folds it up to `until`.
pub fn fold_data_dir(
    dir: &Path,
    cluster: Option<&ClusterSpec>,
    until: Option<Seq>,
) -> Result<(Projections, u64), Fatal> {
    let log = open_log(dir, cluster)?;
    let state = crate::replay::fold(log.as_ref(), until, |seq| {
        tracing::info!(seq = seq.0, "replaying");
    })?;
    let events = state.seq.0;
    Ok((state, events))
}

/// Opens the log for serving: integrity check (quarantining a torn tail), then replay. With
/// `check_whole_log`, the records before the newest snapshot are verified in the background.
pub fn open_for_serving(
    layout: &Layout,
    cluster: Option<&ClusterSpec>,
    check_whole_log: bool,
) -> Result<(Arc<dyn EventLog>, Projections), Fatal> {
    std::fs::create_dir_all(&layout.dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&layout.dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let log = open_log(&layout.dir, cluster)?;
    // A new node of a cluster starts from the newest snapshot the others shared.
    if let Some(spec) = cluster.filter(|_| crate::snapshot::list(&layout.dir).is_empty()) {
        let fetched = crate::store::jetstream::SharedSnapshots::open(spec)
            .and_then(|shared| shared.download_newest(&crate::snapshot::dir(&layout.dir)));
        match fetched {
            Ok(Some(path)) => {
                tracing::info!(path = %path.display(), "fetched the newest shared snapshot")
            }
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "no shared snapshot fetched; folding the stream"),
        }
    }
    // The tail after the newest snapshot is checked (and a torn write recovered) before
    // serving; the records before it, which start-up does not read, only when asked for
    // (`--check-whole-log`, `chronicle verify`, `GET /admin/verify`).
    let last = log.last_seq()?.unwrap_or(Seq(0));
    let checked_from = crate::snapshot::list(&layout.dir)
        .last()
        .map(|(seq, _)| *seq)
        .filter(|seq| *seq <= last)
        .unwrap_or(Seq(1));
    match check_integrity_from(log.as_ref(), checked_from)? {
        Integrity::Clean { last } => tracing::info!(last_seq = last.0, "log checked: clean"),
        Integrity::RecoveredTail {
            last,
            first_bad,
            quarantined,
            reason,
        } => tracing::error!(
            first_bad_seq = first_bad.0,
            quarantined,
            last_valid_seq = last.0,
            %reason,
            "LOG TAIL DAMAGED: the damaged records were never acknowledged (a torn write); they \
             were moved to the quarantine tree and the log continues from the last valid record"
        ),
    }
    let started = Instant::now();
    // The newest valid snapshot, then the log after it; the whole log without one.
    let snapshot = crate::snapshot::newest_valid(&layout.dir, log.as_ref(), None, |path, error| {
        tracing::warn!(path = %path.display(), %error, "snapshot ignored");
    });
    let mut state = match snapshot {
        Some(state) => {
            tracing::info!(seq = state.seq.0, "loaded the newest snapshot");
            state
        }
        // Folded without a word index: the server builds it once it serves.
        None => Projections::unindexed(),
    };
    let from = state.seq;
    crate::replay::continue_while(
        &mut state,
        log.as_ref(),
        |_| true,
        |seq| {
            tracing::info!(seq = seq.0, "replaying");
        },
    )?;
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(
        snapshot_seq = from.0,
        replayed = state.seq.0 - from.0,
        last_seq = state.seq.0,
        seconds,
        "state ready: snapshot plus the log after it"
    );
    // Started once the state is ready, so that it does not slow the start.
    if check_whole_log && checked_from > Seq(1) {
        check_in_background(log.clone(), checked_from);
    }
    Ok((log, state))
}

/// Tunes glibc's malloc for a server whose state is gigabytes of small blocks. Call once, first
/// thing, before any thread starts.
///
/// - It gives large blocks back to the kernel when they are freed. By default the threshold
///   above which a block gets its own mapping rises to the largest block freed so far (up to
///   32 MiB), so after the first password hash (argon2id's 19 MiB) every later one is carved
///   from a thread's heap and stays there: sixty people created through the API took the
///   server from 17 MB to 447 MB resident. A fixed threshold keeps blocks of 4 MiB and more in
///   mappings of their own, unmapped on free.
/// - Every thread gets a heap (an arena) of its own. malloc makes at most eight a core, and
///   past that a new thread shares one with another thread. On two cores sled's I/O threads
///   alone take nine, so one HTTP worker came to share the writer's, which holds the whole
///   state: each of its allocations waited for the writer's lock and took its free blocks
///   from a gigabyte of the state's, a cache miss each, more and more of them as history grew
///   (a tenth of the server's time at three million messages, sends 0.75x at ten million).
///   An idle arena costs a few pages.
/// - It keeps no "fast bins". By default a freed block of up to 128 bytes is set aside unmerged,
///   and every later request of 1 KiB or more first merges all of them (`malloc_consolidate`).
///   Answering a request frees hundreds of small blocks (the JSON it parsed and built) and asks
///   for large ones (the answer's text): with thousands of people connected, the merging alone
///   took a tenth of the server's time, and mean request times at 11,389 people were 2.8 times
///   longer. Small blocks still come first from each thread's cache (`tcache`).
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = (8 * cores).max(MIN_ARENAS);
        let arenas = libc::c_int::try_from(arenas).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only sets parameters of the allocator; no pointers are involved.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
            libc::mallopt(libc::M_ARENA_MAX, arenas);
            libc::mallopt(libc::M_MXFAST, 0);
        }
    }
}

/// Raises this process's limit of open files (sockets included) to its hard limit, or to
/// `at_least` where the process may raise the hard limit too (a privileged one), and returns the
/// limit now in force. Every open client parks a long-poll on a connection of its own, and a
/// shell's usual limit (1,024) would turn people away long before the processor is busy;
/// systemd's unit sets `LimitNOFILE` instead.
pub fn raise_open_files_limit(at_least: Option<u64>) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a valid pointer to an rlimit of this process.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        if let Some(wanted) = at_least.filter(|n| *n > limit.rlim_max) {
            let raised = libc::rlimit {
                rlim_cur: wanted,
                rlim_max: wanted,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return wanted;
            }
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                ..limit
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return raised.rlim_cur;
            }
        }
    }
    limit.rlim_cur
}

/// The fewest arenas malloc may make (see [`tune_allocator`]): more than the threads a server
/// keeps running on a small machine (HTTP workers, the writer, sled's I/O threads, the
/// snapshot, notification, disk and password threads).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MIN_ARENAS: usize = 64;

/// Hands the memory that start-up's replay allocated and freed back to the kernel. glibc's
/// malloc keeps freed blocks for reuse, and replaying a long log frees a lot (decoded events,
/// the words of every message) between the state's own allocations, none of it at the top of
/// the heap where malloc would trim it by itself.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Checks the checksums of the records before `until` on a thread of its own, logging what it
/// finds: damage there is not a torn write, and the operator must restore from a backup.
fn check_in_background(log: Arc<dyn EventLog>, until: Seq) {
    let spawned = std::thread::Builder::new()
        .name("chronicle-log-check".into())
        .spawn(move || {
            crate::engine::background_priority();
            let started = Instant::now();
            match crate::store::check_checksums(log.as_ref(), Seq(1), Seq(until.0 - 1)) {
                Ok(records) => tracing::info!(
                    records,
                    seconds = started.elapsed().as_secs_f64(),
                    "log checked in the background: clean"
                ),
                Err(error) => tracing::error!(
                    %error,
                    "LOG DAMAGED before the newest snapshot: this is not a torn write. The \
                     server serves from the snapshot, but the history is not intact; restore \
                     the data directory from a backup"
                ),
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "the background log check did not start");
    }
}

fn load_secret(layout: &Layout, realm_exists: bool) -> Result<ServerSecret, Fatal> {
    let path = layout.secret();
    if path.exists() {
        return Ok(ServerSecret::load(&path)?);
    }
    if realm_exists {
        return Err(format!(
            "{} is missing: API keys cannot be derived without it. Restore it from the backup \
             of this data directory.",
            path.display()
        )
        .into());
    }
    let secret = ServerSecret::generate();
    secret.store(&path)?;
    Ok(secret)
}

/// First start: writes the owner's credentials, then creates the organization.
///
/// The files are written before the events are committed (the owner's id is known: the log is
/// empty), so a crash in between leaves an empty log that the next start sets up afresh instead
/// of an owner nobody can log in as.
async fn create_organization(
    engine: &Engine,
    layout: &Layout,
    secret: &ServerSecret,
    config: &ServeConfig,
    realm_url: &str,
) -> Result<(), Fatal> {
    let password = generate_password(20);
    let hashed = {
        let password = password.clone();
        tokio::task::spawn_blocking(move || hash_password(&password)).await??
    };
    let nonce = new_api_key_nonce();
    let owner_id = UserId(1);
    let zuliprc = format!(
        "[api]\nemail={}\nkey={}\nsite={}\n",
        config.owner_email,
        secret.api_key(owner_id, &nonce),
        realm_url
    );
    for stale in [layout.zuliprc(), layout.initial_password()] {
        if stale.exists() {
            std::fs::remove_file(&stale)?;
        }
    }
    write_private_file(&layout.zuliprc(), zuliprc.as_bytes())?;
    write_private_file(
        &layout.initial_password(),
        format!("{password}\n").as_bytes(),
    )?;
    let owner = NewUser {
        email: config.owner_email.clone(),
        full_name: "Owner".into(),
        role: Role::Owner,
        password_hash: Some(hashed),
        api_key_nonce: nonce,
    };
    let name = config.realm_name.clone();
    let committed = engine
        .execute(None, move |state, _| {
            create_realm(state, &name, "", owner.clone())
        })
        .await
        .map_err(|e| format!("creating the organization failed: {e}"))?;
    if committed.value != owner_id {
        return Err("the first owner did not get user id 1".into());
    }
    println!(
        "Created the organization \"{}\" with owner {}.\n  Password: in {}\n  API credentials \
         (zuliprc for the official clients): {}",
        config.realm_name,
        config.owner_email,
        layout.initial_password().display(),
        layout.zuliprc().display()
    );
    Ok(())
}

/// Runs the server until SIGINT or SIGTERM, then stops cleanly: in-flight requests finish, the
/// writer drains its queue, and everything acknowledged is on disk.
pub async fn serve(config: ServeConfig) -> Result<(), Fatal> {
    let stopped = serve_with(config, |_| {}).await?;
    // The process exits next, and the kernel takes its memory back at once, where freeing the
    // state block by block took seconds at ten million messages (between `stopped cleanly`
    // and the process's end).
    std::mem::forget(stopped);
    Ok(())
}

/// What a stopped server leaves: its engine, with the state, for the caller to drop (an
/// in-process server) or not (a process about to exit).
pub struct Stopped {
    _engine: Arc<Engine>,
}

/// SIGINT and SIGTERM, watched from the moment this is made: made before the server says it
/// listens, so a signal that arrives at once is ours to handle (a signal with no handler yet
/// would kill the process on the spot).
struct StopSignals {
    #[cfg(unix)]
    watched: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl StopSignals {
    fn install() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let watched = match (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                (Ok(term), Ok(int)) => Some((term, int)),
                _ => {
                    tracing::warn!("cannot watch for SIGTERM/SIGINT; stop the server another way");
                    None
                }
            };
            StopSignals { watched }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// Returns on SIGINT or SIGTERM (never, if they could not be watched).
    async fn wait(self) {
        #[cfg(unix)]
        match self.watched {
            Some((mut term, mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            None => std::future::pending::<()>().await,
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// What a running server tells whoever started it.
#[derive(Clone)]
pub struct Running {
    pub url: String,
    /// Stops the HTTP server (gracefully with `stop(true)`); `serve_with` then drains the writer.
    pub handle: actix_web::dev::ServerHandle,
    /// Whether the search index is built (it is built while the server already serves).
    pub indexed: Arc<std::sync::atomic::AtomicBool>,
}

/// `serve`, calling `on_ready` once the listener accepts connections (for in-process use by
/// the benchmarks).
pub async fn serve_with(
    config: ServeConfig,
    on_ready: impl FnOnce(Running),
) -> Result<Stopped, Fatal> {
    let layout = Layout::new(&config.data_dir);
    let open_files = raise_open_files_limit(None);
    tracing::info!(
        open_files,
        "open files allowed (each connected client holds one)"
    );
    if open_files < 4096 {
        tracing::warn!(
            open_files,
            "few open files allowed: each open client parks a long-poll on a connection of its own; raise the limit (systemd: LimitNOFILE)"
        );
    }
    // The address is taken first, and answers `/health` (200) and `/ready` (503) while the state
    // is loaded, so that a load balancer or systemd sees a server that is starting, not one
    // that is gone.
    let listener = TcpListener::bind(&config.bind)
        .map_err(|e| format!("cannot listen on {}: {e}", config.bind))?;
    let addr: SocketAddr = listener.local_addr()?;
    let starting = crate::http::starting::Starting::answer(&listener)?;
    println!("Chronicle starting on {addr}: /ready answers 503 until the state is loaded");
    let loading = std::time::Instant::now();
    let opened = {
        let (layout, cluster, check) = (
            layout.clone(),
            config.cluster.clone(),
            config.check_whole_log,
        );
        tokio::task::spawn_blocking(move || {
            open_for_serving(&layout, cluster.as_ref(), check).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| format!("loading the state: {e}"))?
    };
    // Every connection it took is answered; new ones wait in the listener's queue.
    starting.hand_over().await;
    let (log, state) = opened?;
    crate::metrics::get()
        .start_seconds
        .set(loading.elapsed().as_secs_f64());
    let realm_exists = state.realm.exists;
    let secret = load_secret(&layout, realm_exists)?;
    let realm_url = config
        .external_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"))
        .trim_end_matches('/')
        .to_owned();
    let log_dyn: Arc<dyn EventLog> = log;
    // In a cluster, the URL the other nodes reach this one at; its tag starts queue ids.
    if config.cluster.is_some() && config.advertise_url.is_none() && addr.ip().is_unspecified() {
        return Err(format!(
            "bound to {addr}, which other nodes cannot reach: give --advertise-url"
        )
        .into());
    }
    let me = config.cluster.as_ref().map(|_| {
        config
            .advertise_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}"))
    });
    let site = Site {
        realm_url: realm_url.clone(),
        push_enabled: config.push.is_some(),
        video: config.video.clone(),
        uploads: config.uploads,
        cards: Default::default(),
        sign_in: crate::render::SignInMethods {
            email: config.identity.password,
            ldap: config.identity.ldap.is_some(),
            external: config
                .identity
                .oidc
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    // The first provider at Zulip's addresses (`oidc:oidc` there); others by name.
                    let path = if i == 0 {
                        "oidc".to_owned()
                    } else {
                        format!("oidc/{}", p.name)
                    };
                    crate::render::ExternalMethod {
                        name: format!("oidc:{}", p.name),
                        display_name: p.display_name.clone(),
                        display_icon: p.display_icon.clone(),
                        login_url: format!("/accounts/login/social/{path}"),
                        signup_url: format!("/accounts/register/social/{path}"),
                    }
                })
                .chain(
                    config
                        .identity
                        .saml
                        .iter()
                        .map(|p| crate::render::ExternalMethod {
                            name: format!("saml:{}", p.name),
                            display_name: p.display_name.clone(),
                            display_icon: p.display_icon.clone(),
                            login_url: format!("/accounts/login/social/saml/{}", p.name),
                            signup_url: format!("/accounts/register/social/saml/{}", p.name),
                        }),
                )
                .collect(),
        },
    };
    let queues = Arc::new(match &me {
        None => crate::realtime::Queues::new(site.clone(), secret.clone()),
        Some(me) => crate::realtime::Queues::of_node(
            site.clone(),
            secret.clone(),
            &crate::store::jetstream::node_tag(me),
        ),
    });
    // Outgoing webhook calls are picked out by the writer and made by their own task.
    let (webhook_tx, webhook_rx) = tokio::sync::mpsc::unbounded_channel();
    // The notifier hears of every durable batch's messages (whichever node wrote them).
    let (notify_tx, notify_rx) = tokio::sync::mpsc::unbounded_channel();
    let notify_tx_for_collector = notify_tx.clone();
    let publisher: crate::engine::Publisher = {
        let queues = queues.clone();
        let site = site.clone();
        let secret = secret.clone();
        Arc::new(move |state, batch, origin| {
            let started = std::time::Instant::now();
            queues.publish(state, batch);
            crate::metrics::get()
                .fanout_seconds
                .observe(started.elapsed().as_secs_f64());
            if let Some(input) = crate::notify::input_of(batch) {
                // The task only stops with the server.
                let _ = notify_tx.send(input);
            }
            // In a cluster, the node that wrote a batch makes its webhook calls, once.
            if origin != crate::engine::Origin::Here {
                return;
            }
            for delivery in crate::webhooks::deliveries(state, &site, &secret, batch) {
                // The task only stops with the server.
                let _ = webhook_tx.send(delivery);
            }
        })
    };
    // In a cluster, every snapshot written is shared through the object store.
    let shared_snapshots = match &config.cluster {
        None => None,
        Some(spec) => {
            let shared = Arc::new(crate::store::jetstream::SharedSnapshots::open(spec)?);
            Some(crate::engine::AfterSnapshot(Arc::new(
                move |path| match shared.upload(path) {
                    Ok(()) => tracing::info!(path = %path.display(), "snapshot shared"),
                    Err(error) => tracing::warn!(%error, "snapshot not shared"),
                },
            )))
        }
    };
    let snapshots = (config.snapshot_every > 0).then(|| crate::engine::SnapshotPolicy {
        data_dir: layout.dir.clone(),
        every: config.snapshot_every,
        keep: SNAPSHOTS_KEPT,
        written: shared_snapshots.clone(),
    });
    let engine = Arc::new(Engine::start_full(
        log_dyn,
        state,
        Some(publisher),
        snapshots,
    )?);
    let reserve = crate::store::space::Reserve::start(&layout.dir, config.min_free_space_mib)
        .map_err(|e| format!("the free space of {}: {e}", layout.dir.display()))?;
    if reserve.low().is_some() {
        eprintln!(
            "Warning: {} has {} MiB free, below the {} MiB kept in reserve: writes are refused \
             until space is freed (--min-free-space-mib sets the reserve; 0 turns it off)",
            layout.dir.display(),
            reserve.space().available >> 20,
            reserve.keep() >> 20
        );
    }
    engine.keep_reserve(reserve);
    release_free_memory();
    let indexed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let indexed_flag = indexed.clone();
    engine.index_words_in_background(move |built| {
        indexed_flag.store(true, std::sync::atomic::Ordering::SeqCst);
        let built = built.unwrap_or_default();
        let (messages, seconds, bytes) = (built.messages, built.seconds, built.bytes);
        tracing::info!(
            messages,
            seconds,
            words = built.words,
            bytes,
            "search index built"
        );
        println!(
            "Search index ready ({messages} messages, {seconds:.1} s, {} words, {bytes} bytes)",
            built.words
        );
    });
    let cluster = match (&config.cluster, me) {
        (Some(spec), Some(me)) => {
            let client = reqwest::Client::builder()
                .no_proxy()
                // A redirect would carry the cluster's token elsewhere.
                .redirect(reqwest::redirect::Policy::none())
                .timeout(std::time::Duration::from_secs(300))
                .build()
                .map_err(|e| format!("the client for the other nodes: {e}"))?;
            let folded = engine.clone();
            Some(Arc::new(crate::http::forward::Cluster {
                lease: crate::store::jetstream::Lease::start(spec, me, move || {
                    // A node whose writes stopped after a storage error gives the lease up.
                    (!folded.has_failed()).then(|| folded.read(|s| s.seq.0))
                })?,
                token: secret.cluster_token(),
                client,
                body_limit: (config.uploads.max_file_mib as usize + 1) << 20,
                body_timeout: config.client_timeouts.body,
            }))
        }
        _ => None,
    };
    let webhooks = actix_web::rt::spawn(crate::webhooks::run(
        webhook_rx,
        engine.clone(),
        Arc::new(crate::outgoing::Guard::new(config.outgoing_allow.clone())),
    ));
    if realm_exists {
        // Organizations created before system groups existed get them now (a no-op after).
        engine
            .execute(None, |state, _| {
                Ok(crate::commands::Decision::events(
                    crate::commands::groups::ensure_system_groups(state),
                ))
            })
            .await
            .map_err(|e| format!("creating the system groups failed: {e}"))?;
    } else {
        create_organization(&engine, &layout, &secret, &config, &realm_url).await?;
    }
    let mail_host = crate::render::users::email_domain(&site).to_owned();
    let gateway_domain = config
        .email_gateway
        .as_ref()
        .map(|g| g.domain.clone().unwrap_or_else(|| mail_host.clone()));
    let smtp = match &config.mail.url {
        None => None,
        Some(_) => Some(crate::notify::relay::Smtp::new(&config.mail, &mail_host)?),
    };
    let rate_limiter = Arc::new(crate::http::rate_limit::RateLimiter::new(
        config.rate_limits,
    ));
    // Uploads a crash cut short: no event names them.
    let _ = std::fs::remove_dir_all(layout.uploads().join("tmp"));
    let access_audit = Arc::new(crate::access_audit::AccessAudit::open(&layout.dir).map_err(
        |e| {
            format!(
                "cannot open the access audit in {}: {e}",
                layout.dir.display()
            )
        },
    )?);
    let sign_in_audit = Arc::new(
        crate::access_audit::AccessAudit::open_file(
            &layout.dir,
            crate::access_audit::SIGN_IN_FILE_NAME,
        )
        .map_err(|e| {
            format!(
                "cannot open the sign-in audit in {}: {e}",
                layout.dir.display()
            )
        })?,
    );
    let data = web::Data::new(AppState {
        access_audit,
        sign_in_audit,
        rate_limiter: rate_limiter.clone(),
        engine: engine.clone(),
        secret,
        site,
        queues: queues.clone(),
        heartbeat: config.heartbeat,
        outbox: Some(layout.outbox()),
        smtp,
        client_timeouts: config.client_timeouts,
        uploads: crate::uploads::UploadStore::new(&layout.uploads()),
        cluster: cluster.clone(),
        emoji_stills: Default::default(),
        metrics_token: config.metrics_token.clone(),
        data_dir: layout.dir.clone(),
        password_work: crate::http::rate_limit::PasswordWork::new(
            config.rate_limits.password_checks_per_address,
        ),
        identity: config.identity.clone(),
        outgoing: Arc::new(crate::outgoing::Guard::new(config.outgoing_allow.clone())),
        email_gateway_domain: gateway_domain.clone(),
        push: config.push.clone(),
    });
    let collector = actix_web::rt::spawn(collect_idle(
        queues.clone(),
        rate_limiter,
        notify_tx_for_collector,
    ));
    let leads: Arc<dyn Fn() -> bool + Send + Sync> = {
        let cluster = cluster.clone();
        Arc::new(move || match &cluster {
            None => true,
            Some(c) => c.lease.holder().as_deref() == Some(c.lease.me()),
        })
    };
    let notifier = crate::notify::Notifier {
        engine: engine.clone(),
        site: data.site.clone(),
        secret: data.secret.clone(),
        relay: crate::notify::relay::Relay {
            smtp: data.smtp.clone(),
            outbox: Some(layout.outbox()),
            from_address: config
                .mail
                .from_address
                .clone()
                .unwrap_or_else(|| format!("noreply@{mail_host}")),
        },
        leads,
        reply_domain: gateway_domain.clone(),
        push: config.push.clone(),
        present: {
            let queues = queues.clone();
            let clustered = cluster.is_some();
            Arc::new(move |state: &crate::projections::Projections, user| {
                crate::notify::present(state, user, clustered || queues.has_message_queue(user))
            })
        },
    }
    .spawn(notify_rx);
    let gateway = match (&config.email_gateway, &gateway_domain) {
        (Some(settings), Some(domain)) => {
            let listener = tokio::net::TcpListener::bind(&settings.listen)
                .await
                .map_err(|e| {
                    format!(
                        "the email gateway cannot listen on {}: {e}",
                        settings.listen
                    )
                })?;
            println!(
                "Email gateway listening on {} for {domain}",
                listener
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default()
            );
            let gateway = Arc::new(crate::notify::gateway::Gateway {
                engine: engine.clone(),
                secret: data.secret.clone(),
                domain: domain.clone(),
                max_bytes: settings.max_bytes,
                uploads: data.uploads.clone(),
                max_file_bytes: config.uploads.max_file_mib << 20,
                quota_bytes: data.site.uploads.quota_bytes(),
            });
            Some(actix_web::rt::spawn(
                crate::notify::gateway::listener::serve(listener, gateway),
            ))
        }
        _ => None,
    };
    let retention = actix_web::rt::spawn(retention_job(
        engine.clone(),
        config
            .retention_interval
            .unwrap_or(std::time::Duration::from_secs(3600)),
    ));
    let delivery = actix_web::rt::spawn(delivery_job(engine.clone()));
    let directory_sync = config.identity.sync_every.map(|every| {
        let cluster = cluster.clone();
        let leads: Box<dyn Fn() -> bool + Send> = Box::new(move || match &cluster {
            None => true,
            Some(c) => c.lease.holder().as_deref() == Some(c.lease.me()),
        });
        actix_web::rt::spawn(crate::identity::directory_sync_job(
            engine.clone(),
            config.identity.clone(),
            data.uploads.clone(),
            every,
            leads,
        ))
    });
    // `/metrics` on an address of its own, without credentials, when configured.
    let metrics_server = match &config.metrics_bind {
        None => None,
        Some(bind) => {
            let listener = TcpListener::bind(bind)
                .map_err(|e| format!("cannot listen on {bind} for metrics: {e}"))?;
            let at = listener.local_addr()?;
            let data = data.clone();
            let server = actix_web::HttpServer::new(move || {
                actix_web::App::new()
                    .app_data(data.clone())
                    .route("/metrics", web::get().to(crate::http::health::metrics))
                    .default_service(web::to(|| async {
                        actix_web::ResponseError::error_response(
                            &crate::error::ApiError::not_found(),
                        )
                    }))
            })
            .workers(1)
            .disable_signals()
            .listen(listener)?
            .run();
            let handle = server.handle();
            println!("Metrics on http://{at}/metrics");
            Some((handle, actix_web::rt::spawn(server)))
        }
    };
    // The client's files are compressed once, aside, rather than by the first visitor.
    std::thread::spawn(crate::http::webclient::prepare_files);
    let server = actix_web::HttpServer::new(move || crate::http::app(data.clone()))
        .listen(listener)?
        .shutdown_timeout(10)
        .client_request_timeout(config.client_timeouts.head)
        // Signals are ours: clients are told of the restart before the server stops.
        .disable_signals()
        .run();
    let signals = StopSignals::install();
    let on_signal = {
        let handle = server.handle();
        let queues = queues.clone();
        actix_web::rt::spawn(async move {
            signals.wait().await;
            tracing::info!("stopping: telling event queues to re-register");
            queues.announce_restart();
            // Parked long-polls were woken; let their answers go out before connections close.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            handle.stop(true).await;
        })
    };
    println!("Chronicle listening on {realm_url} (bound to {addr})");
    notify_systemd("READY=1\nSTATUS=Serving");
    on_ready(Running {
        url: realm_url.clone(),
        handle: server.handle(),
        indexed,
    });
    server.await?;
    if let Some(cluster) = &cluster {
        cluster.lease.release();
    }
    notify_systemd("STOPPING=1\nSTATUS=Stopping: draining the writer");
    on_signal.abort();
    if let Some((handle, task)) = metrics_server {
        handle.stop(true).await;
        let _ = task.await;
    }
    collector.abort();
    webhooks.abort();
    retention.abort();
    delivery.abort();
    for task in notifier {
        task.abort();
    }
    if let Some(task) = gateway {
        task.abort();
    }
    if let Some(job) = directory_sync {
        job.abort();
    }
    engine.shutdown().await;
    let seq = engine.read(|s| s.seq);
    tracing::info!(
        last_seq = seq.0,
        "stopped cleanly; everything acknowledged is on disk"
    );
    Ok(Stopped { _engine: engine })
}

/// Where the email gateway listens, and its addresses' domain (default: the server's host).
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub listen: String,
    pub domain: Option<String>,
    pub max_bytes: usize,
}

/// Tells systemd how the service stands (`sd_notify`: a datagram to the socket `NOTIFY_SOCKET`
/// names, when it names one), for `Type=notify` units: `READY=1` once the server serves,
/// `STOPPING=1` when it stops. Without systemd, nothing.
pub fn notify_systemd(state: &str) {
    #[cfg(unix)]
    {
        let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
            return;
        };
        let socket = match std::os::unix::net::UnixDatagram::unbound() {
            Ok(socket) => socket,
            Err(error) => {
                tracing::warn!(%error, "systemd not notified");
                return;
            }
        };
        // A name starting with @ is in the abstract namespace.
        let sent = match path.to_str().and_then(|p| p.strip_prefix('@')) {
            #[cfg(target_os = "linux")]
            Some(name) => {
                use std::os::linux::net::SocketAddrExt;
                std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
                    .and_then(|addr| socket.send_to_addr(state.as_bytes(), &addr))
            }
            _ => socket.send_to(state.as_bytes(), &path),
        };
        if let Err(error) = sent {
            tracing::warn!(%error, "systemd not notified");
        }
    }
}

/// Collects idle event queues and sweeps the rate limiter's windows every minute, as Zulip
/// does.
async fn collect_idle(
    queues: Arc<crate::realtime::Queues>,
    rate_limiter: Arc<crate::http::rate_limit::RateLimiter>,
    notifier: tokio::sync::mpsc::UnboundedSender<crate::notify::Input>,
) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
    loop {
        tick.tick().await;
        rate_limiter.sweep();
        let (dropped, abandoned) = queues.collect_garbage();
        if dropped > 0 {
            tracing::info!(dropped, "collected idle event queues");
        }
        // People whose last client went away are told about what it never handed over.
        for (user, messages) in abandoned {
            let _ = notifier.send(crate::notify::Input::Abandoned { user, messages });
        }
    }
}

/// The delivery job: every second, sends the scheduled messages and reminders whose time has
/// come (one command each, so they share a batch and are decided in order).
async fn delivery_job(engine: Arc<Engine>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = crate::time::now_ms() / 1000;
        let due = engine.read(|s| s.scheduled.due_at(now));
        let sends = due.into_iter().map(|id| {
            let engine = engine.clone();
            async move {
                engine
                    .execute(None, move |state, ctx| {
                        crate::commands::scheduled::deliver(state, ctx, id)
                    })
                    .await
            }
        });
        for result in futures_util::future::join_all(sends).await {
            if let Err(error) = result {
                tracing::warn!(%error, "delivering a scheduled message failed");
            }
        }
    }
}

/// The retention job: deletes what has outlived its retention period, a bounded batch at a
/// time, as ordinary logged deletions by the server itself.
async fn retention_job(engine: Arc<Engine>, every: std::time::Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        loop {
            let expired = engine
                .execute(None, |state, ctx| {
                    crate::commands::delete::expire_messages(state, ctx, 1000)
                })
                .await;
            match expired {
                Ok(done) if done.value > 0 => {
                    tracing::info!(deleted = done.value, "retention job");
                }
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(%error, "retention job failed");
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod allocator_tests {
    use std::sync::{Arc, Barrier};

    /// How many arenas malloc has made in this process: `malloc_info` lists each as a `heap`.
    fn arenas() -> usize {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("malloc-info.xml");
        let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a file opened here, written by malloc_info and closed before it is read.
        unsafe {
            let file = libc::fopen(c_path.as_ptr(), c"w".as_ptr());
            assert!(!file.is_null());
            assert_eq!(libc::malloc_info(0, file), 0);
            libc::fclose(file);
        }
        std::fs::read_to_string(&path)
            .unwrap()
            .matches("<heap nr=")
            .count()
    }

    /// malloc fixes its limit of arenas once it has made eight, for good: the server sets it
    /// first thing, before any thread starts. So the check runs in a process of its own (this
    /// test binary again, running `arenas_in_a_fresh_process` alone), which prints how many
    /// arenas forty threads at once made.
    #[test]
    fn forty_threads_at_once_get_forty_arenas_whatever_the_cores() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "server::allocator_tests::arenas_in_a_fresh_process",
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}{stderr}");
        let made: usize = stdout
            .lines()
            .find_map(|line| line.split("arenas made: ").nth(1))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("the check did not run: {stdout}{stderr}"));
        // With eight a core at most (the default), two cores would stop at sixteen, and the
        // threads would share them.
        assert!(made > THREADS, "{made} arenas for {THREADS} threads");
    }

    const THREADS: usize = 40;
    const CHILD: &str = "CHRONICLE_TEST_ARENAS_CHILD";

    #[test]
    #[ignore = "run alone in a process of its own by forty_threads_at_once_get_forty_arenas_whatever_the_cores"]
    fn arenas_in_a_fresh_process() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        super::tune_allocator();
        let barrier = Arc::new(Barrier::new(THREADS + 1));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let held = std::hint::black_box(vec![1u8; 4096]);
                    barrier.wait();
                    barrier.wait();
                    drop(held);
                })
            })
            .collect();
        barrier.wait();
        // Arenas are never destroyed: all the threads hold one now.
        let made = arenas();
        barrier.wait();
        for thread in threads {
            thread.join().unwrap();
        }
        println!("arenas made: {made}");
    }
}

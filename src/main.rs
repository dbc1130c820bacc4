//! The `chronicle` command line: `serve`, `dump`, `replay`, `log`, `diff`, `export`, `import`.

use chronicle::audit::EventFilter;
use chronicle::ids::Seq;
use chronicle::projections::Projections;
use chronicle::server::{fold_data_dir, open_log, serve, Fatal, Layout, ServeConfig};
use chronicle::store::jetstream::ClusterSpec;
use chronicle::store::read_envelopes;
use chronicle::store::{check_integrity, export_records, import_records, verify_chain, Integrity};
use chronicle::time::parse_rfc3339_ms;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "chronicle",
    version,
    about = "An event-sourced chat server speaking the Zulip API"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The formats `export-to` writes.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ExportFormat {
    Zulip,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server. The first start on an empty data directory creates the organization,
    /// its owner, and DIR/zuliprc.
    Serve(ServeArgs),
    /// The server's configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print the projection dump as JSON (the server must be stopped).
    Dump {
        #[arg(long)]
        data_dir: PathBuf,
        #[command(flatten)]
        cluster: ClusterArgs,
        /// Fold only up to and including this event.
        #[arg(long)]
        at_seq: Option<u64>,
        /// Print one area only (users, messages, ...).
        #[arg(long)]
        only: Option<String>,
    },
    /// The audit trail: one line per event (seq, time, actor, what happened), or JSON
    /// (the server must be stopped).
    Log {
        #[arg(long)]
        data_dir: PathBuf,
        #[command(flatten)]
        cluster: ClusterArgs,
        /// Only events after this seq.
        #[arg(long, default_value_t = 0)]
        after_seq: u64,
        /// Only events of these types (comma-separated: MessageSent,UserCreated).
        #[arg(long = "type")]
        types: Option<String>,
        /// Only events caused by this user (id or email; 0 for the server itself).
        #[arg(long)]
        actor: Option<String>,
        /// Only events at or after this time (RFC 3339).
        #[arg(long)]
        since: Option<String>,
        /// Only events at or before this time (RFC 3339).
        #[arg(long)]
        until: Option<String>,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check every record's checksum and the log's hash chain; report the first break (exit
    /// status 1 when there is one).
    Verify {
        #[arg(long)]
        data_dir: PathBuf,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Rewrite the log so that the content of deleted messages is gone from the data
    /// directory (the server must be stopped; see docs/operations.md).
    Erase {
        #[arg(long)]
        data_dir: PathBuf,
    },
    /// What changed in the projections between two points of the log, per area.
    Diff {
        #[arg(long)]
        data_dir: PathBuf,
        #[command(flatten)]
        cluster: ClusterArgs,
        #[arg(long)]
        from_seq: u64,
        #[arg(long)]
        to_seq: u64,
        /// One area only.
        #[arg(long)]
        only: Option<String>,
    },
    /// Write the organization out in Zulip's export format (a .tar.gz as `manage.py export`
    /// writes it; the server must be stopped): see docs/migration.md.
    ExportTo {
        /// The format: zulip.
        #[arg(value_enum)]
        format: ExportFormat,
        #[arg(long)]
        data_dir: PathBuf,
        #[command(flatten)]
        cluster: ClusterArgs,
        /// The tarball to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Move an organization in from another chat server's export, into a new data directory
    /// (absent or empty; all or nothing). DIR/zuliprc then holds the owner's API key and
    /// DIR/import-report.json what came along and what was skipped.
    ImportFrom {
        /// Where the export comes from.
        #[arg(value_enum)]
        source: chronicle::import::Source,
        /// The export: Zulip's .tar.gz (or its directory); Slack's zip (or its directory);
        /// Mattermost's mmctl zip, its import.jsonl, or a directory with import.jsonl (or the
        /// older export.json).
        export: PathBuf,
        #[arg(long)]
        data_dir: PathBuf,
        /// The imported person who becomes the owner (default: the source's primary owner).
        #[arg(long)]
        owner_email: Option<String>,
        /// The organization's name (Slack's export has none).
        #[arg(long)]
        realm_name: Option<String>,
        /// Slack: the answer of its users.list API (JSON), for the email addresses an export
        /// made without them lacks.
        #[arg(long)]
        slack_users: Option<PathBuf>,
        /// Mattermost: the one team to import (default: every team, each a channel folder).
        #[arg(long)]
        team: Option<String>,
        /// An archive that expands to more than 1 GiB and more than ten times its size is
        /// refused (Zulip's rule against archive bombs); a large organization's export may
        /// compress better than that: allow up to this many GiB for an export you trust.
        #[arg(long, value_name = "GIB")]
        max_expanded_gib: Option<u64>,
        /// Into a cluster's stream (which must be empty) instead of DATA_DIR/log; DATA_DIR
        /// keeps the uploads, the secret and the zuliprc for the first node.
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// A consistent backup, while the server runs or not: a data directory at BACKUP holding
    /// the log up to now, the uploads, the secret and the zuliprc (serve it, or run the
    /// offline commands on it). A running server is asked through its API with DIR/zuliprc.
    Backup {
        #[arg(long)]
        data_dir: PathBuf,
        /// The new directory to write.
        #[arg(long)]
        to: PathBuf,
    },
    /// Sync with the LDAP directory now (names, roles, synced groups, deactivation and
    /// reactivation), as the running server does on its timer; asked through its API with
    /// DIR/zuliprc (an administrator's).
    LdapSync {
        #[arg(long)]
        data_dir: PathBuf,
    },
    /// Write the log, byte for byte, to a portable file, and uploaded files to FILE.uploads/
    /// (a backup; the server must be stopped).
    Export {
        #[arg(long)]
        data_dir: PathBuf,
        #[command(flatten)]
        cluster: ClusterArgs,
        #[arg(long)]
        out: PathBuf,
    },
    /// Restore an exported log (and FILE.uploads/ when present) into an empty data directory
    /// (copy secret.key beside it too).
    Import {
        #[arg(long)]
        data_dir: PathBuf,
        #[command(flatten)]
        cluster: ClusterArgs,
        #[arg(long)]
        from: PathBuf,
    },
    /// Measure Chronicle against baselines measured in the same run (see docs/performance.md).
    Bench {
        /// Small sizes for a smoke run (under a minute); asserts nothing about speed.
        #[arg(long)]
        quick: bool,
        /// Run one scenario only: http, writes, replay, fan-out, register, narrow, memory,
        /// sustained, people, import.
        #[arg(long)]
        scenario: Option<String>,
        /// Where bench.json and bench.svg are written.
        #[arg(long, default_value = "./bench-out")]
        out: PathBuf,
        /// Measure nothing: write the register scenario's organization (1,000 users, 100,000
        /// messages) into this new data directory, to serve it and try a client on it.
        #[arg(long, conflicts_with_all = ["quick", "scenario"])]
        write_org: Option<PathBuf>,
    },
    /// A cluster's log in NATS JetStream: create its stream, or show its head.
    Cluster {
        #[command(subcommand)]
        action: ClusterAction,
    },
    /// Replay the log and report events, seconds, events/second and the projections' digest
    /// (the server must be stopped).
    Replay {
        #[arg(long)]
        data_dir: PathBuf,
        #[command(flatten)]
        cluster: ClusterArgs,
        #[arg(long, conflicts_with = "to_time")]
        to_seq: Option<u64>,
        /// Replay the events up to and including this time (RFC 3339).
        #[arg(long)]
        to_time: Option<String>,
        /// First check every checksum and the hash chain (as `verify`).
        #[arg(long)]
        verify: bool,
    },
}

/// Where the log is when it is not `DATA_DIR/log`: a NATS JetStream stream.
#[derive(clap::Args, Clone)]
struct ClusterArgs {
    /// Keep the log in a NATS JetStream stream on these servers (comma-separated
    /// nats://HOST:PORT URLs) instead of DATA_DIR/log.
    #[arg(long, value_name = "URLS")]
    cluster: Option<String>,
    /// The stream's name.
    #[arg(long, default_value = "chronicle")]
    stream: String,
    /// How many NATS servers keep each record (3 or 5).
    #[arg(long, default_value_t = 3)]
    replicas: usize,
}

impl ClusterArgs {
    fn spec(&self) -> Option<ClusterSpec> {
        self.cluster.as_ref().map(|url| ClusterSpec {
            url: url.clone(),
            stream: self.stream.clone(),
            replicas: self.replicas,
        })
    }

    fn required(&self) -> Result<ClusterSpec, Fatal> {
        self.spec()
            .ok_or_else(|| "--cluster nats://HOST:PORT,... is required".into())
    }
}

#[derive(Subcommand)]
enum ClusterAction {
    /// Create the log's stream (file storage, the replicas asked for, no limits, deletes and
    /// purges denied), or check that an existing one has those settings.
    Init {
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// The log's head (stream messages, last event, the stream's leader and replicas), the
    /// node taking the writes, and each node's folded position.
    Status {
        #[command(flatten)]
        cluster: ClusterArgs,
    },
}

/// The options of `chronicle serve`.
#[derive(Subcommand)]
enum ConfigAction {
    /// Print the configuration a `serve` with the same flags would use (the file, the
    /// environment, the flags, the defaults), each value with where it came from, secrets
    /// redacted; an unknown key or a bad value is an error naming it.
    Check(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// The configuration file (TOML; default: the one CHRONICLE_CONFIG names, if any). Every
    /// setting below can be in it, and in CHRONICLE_* environment variables; a flag wins over
    /// the environment, the environment over the file (docs/chronicle.example.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where the data is kept [default: ./data].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Keep the log in a NATS JetStream stream on these servers (comma-separated
    /// nats://HOST:PORT URLs) instead of DATA_DIR/log.
    #[arg(long, value_name = "URLS")]
    cluster: Option<String>,
    /// The stream's name [default: chronicle].
    #[arg(long)]
    stream: Option<String>,
    /// How many NATS servers keep each record (3 or 5) [default: 3].
    #[arg(long)]
    replicas: Option<usize>,
    /// In a cluster: the URL the other nodes reach this one at (default: http://<bound
    /// address>).
    #[arg(long)]
    advertise_url: Option<String>,
    /// How log lines are written to standard error [default: text].
    #[arg(long, value_enum)]
    log_format: Option<chronicle::config::LogFormat>,
    /// The address to listen on [default: 127.0.0.1:9991].
    #[arg(long)]
    bind: Option<String>,
    /// The first start's owner [default: owner@chronicle.local].
    #[arg(long)]
    owner_email: Option<String>,
    /// The first start's organization name [default: Chronicle].
    #[arg(long)]
    realm_name: Option<String>,
    /// The URL clients use to reach this server, when it is not http://<bind address>.
    #[arg(long)]
    external_url: Option<String>,
    /// Long-poll heartbeat in seconds (default: Zulip's 45-55); for tests.
    #[arg(long, hide = true)]
    heartbeat_secs: Option<u64>,
    /// Seconds between runs of the message retention job (default: an hour); for tests.
    #[arg(long, hide = true)]
    retention_interval_secs: Option<u64>,
    /// Send emails through this SMTP relay (smtp://HOST[:PORT] in the clear,
    /// smtp+starttls://HOST[:PORT] or smtps://HOST[:PORT]); without it emails are written to
    /// DATA_DIR/outbox.
    #[arg(long)]
    smtp_url: Option<String>,
    /// Write a projection snapshot once the log grew by N events since the last one, or by a
    /// quarter of its events before it, whichever is more (0: never), so starts replay only
    /// the log after the newest one [default: 100000].
    #[arg(long)]
    snapshot_every: Option<u64>,
    /// Also verify every record before the newest snapshot (checksum, decoding, gapless
    /// seqs), on a background thread once the server serves. Off by default: sled then keeps
    /// about as much memory as the records it read (370 B a record) until the server stops;
    /// `chronicle verify` and `GET /admin/verify` check the whole log when asked.
    #[arg(long)]
    check_whole_log: bool,
    /// Free space to keep on the data directory's filesystem, in MiB: below it writes are
    /// refused (507 STORAGE_FULL) until space returns, reads go on; 0 turns the reserve off
    /// [default: the larger of 1 GiB and 1 % of the filesystem, at most a tenth of it].
    #[arg(long, value_name = "MIB")]
    min_free_space_mib: Option<u64>,
    /// Authenticated API requests per minute per user (Zulip's 200; 0: no limit).
    #[arg(long)]
    rate_limit_user: Option<usize>,
    /// Unauthenticated API requests per minute per IP address (Zulip's 100; 0: no limit).
    #[arg(long)]
    rate_limit_ip: Option<usize>,
    /// Failed password logins per 30 minutes per username (Zulip's 5; 0: no limit).
    #[arg(long)]
    rate_limit_logins: Option<usize>,
    /// Seconds a client has to send a request's line and headers (then a bare 408)
    /// [default: 5].
    #[arg(long)]
    client_head_timeout_secs: Option<u64>,
    /// Seconds a client has to send a request's body (then 408 REQUEST_TIMEOUT); uploads get
    /// ten times as long [default: 30].
    #[arg(long)]
    client_body_timeout_secs: Option<u64>,
    /// The largest file a user may upload, in MiB (Zulip's default, 25).
    #[arg(long)]
    max_file_upload_mib: Option<u64>,
    /// The most the organization's uploads may take together, in MiB (default: no quota).
    #[arg(long)]
    upload_quota_mib: Option<u64>,
    /// An address or CIDR range (like 127.0.0.1 or 10.1.0.0/16) that outgoing requests, such
    /// as outgoing webhook bots' calls, may reach although it is private or loopback; repeat
    /// for several. Without it only public addresses are reached.
    #[arg(long = "outgoing-allow", value_name = "CIDR")]
    outgoing_allow: Vec<String>,
    /// Serve GET /metrics (Prometheus' text format) on this separate address, without
    /// credentials (for a main-address token, use metrics.token in the configuration).
    #[arg(long, value_name = "ADDR")]
    metrics_bind: Option<String>,
}

impl ServeArgs {
    /// What the flags say, as settings (`config::Settings`): only what was given.
    fn settings(&self) -> chronicle::config::Settings {
        use chronicle::config::{Cluster, Limits, Mail, Outgoing, Settings, Uploads};
        Settings {
            data_dir: self.data_dir.clone(),
            bind: self.bind.clone(),
            external_url: self.external_url.clone(),
            owner_email: self.owner_email.clone(),
            realm_name: self.realm_name.clone(),
            snapshot_every: self.snapshot_every,
            check_whole_log: self.check_whole_log.then_some(true),
            min_free_space_mib: self.min_free_space_mib,
            log_format: self.log_format,
            limits: Limits {
                requests_per_user: self.rate_limit_user,
                requests_per_ip: self.rate_limit_ip,
                failed_logins: self.rate_limit_logins,
                password_checks_per_address: None,
                client_head_timeout_secs: self.client_head_timeout_secs,
                client_body_timeout_secs: self.client_body_timeout_secs,
            },
            uploads: Uploads {
                max_file_mib: self.max_file_upload_mib,
                quota_mib: self.upload_quota_mib,
            },
            mail: Mail {
                smtp_url: self.smtp_url.clone(),
                ..Mail::default()
            },
            // The gateway: the file and environment only.
            email_gateway: Default::default(),
            push: Default::default(),
            video_calls: Default::default(),
            cluster: Cluster {
                nats: self.cluster.clone(),
                stream: self.stream.clone(),
                replicas: self.replicas,
                advertise_url: self.advertise_url.clone(),
            },
            outgoing: Outgoing {
                allow: (!self.outgoing_allow.is_empty()).then(|| self.outgoing_allow.clone()),
            },
            metrics: chronicle::config::MetricsSettings {
                bind: self.metrics_bind.clone(),
                token: None,
            },
            // Sign-in backends have nested settings and secrets: the file and environment only.
            auth: Default::default(),
            ldap: Default::default(),
            jwt: Default::default(),
            scim: Default::default(),
            oidc: Default::default(),
            saml: Default::default(),
        }
    }

    /// The configuration in force for this start (flags, environment, file, defaults).
    fn effective(&self) -> Result<chronicle::config::Effective, Fatal> {
        let env = |name: &str| std::env::var(name).ok();
        Ok(chronicle::config::resolve(
            &self.settings(),
            self.config.as_deref(),
            &env,
        )?)
    }
}

/// Runs the command; `serving` is the configuration `main` already resolved for `serve`.
fn run(cli: Cli, serving: Option<chronicle::config::Effective>) -> Result<(), Fatal> {
    match cli.command {
        Command::Serve(args) => {
            let effective = match serving {
                Some(effective) => effective,
                None => args.effective()?,
            };
            let config = serve_config(args, effective)?;
            actix_web::rt::System::new().block_on(serve(config))
        }
        Command::Config {
            action: ConfigAction::Check(args),
        } => {
            let effective = args.effective()?;
            let report = effective.report();
            // What serving would make of the values (addresses, ranges) is checked too.
            serve_config(args, effective)?;
            print!("{}", report.trim_start());
            Ok(())
        }
        Command::Dump {
            data_dir,
            cluster,
            at_seq,
            only,
        } => {
            let (state, _) = fold_data_dir(&data_dir, cluster.spec().as_ref(), at_seq.map(Seq))?;
            let dump = match only {
                None => state.dump(),
                Some(area) => chronicle::audit::only_area(&state.dump(), &area)?,
            };
            println!("{}", serde_json::to_string_pretty(&dump)?);
            Ok(())
        }
        Command::Log {
            data_dir,
            cluster,
            after_seq,
            types,
            actor,
            since,
            until,
            json,
        } => print_log(
            &data_dir, &cluster, after_seq, types, actor, since, until, json,
        ),
        Command::Diff {
            data_dir,
            cluster,
            from_seq,
            to_seq,
            only,
        } => {
            if from_seq > to_seq {
                return Err("--from-seq must not be after --to-seq".into());
            }
            let log = open_log(&data_dir, cluster.spec().as_ref())?;
            let log = log.as_ref();
            let mut state = chronicle::replay::fold(log, Some(Seq(from_seq)), |_| {})?;
            let before = state.dump();
            chronicle::replay::continue_while(&mut state, log, |env| env.seq.0 <= to_seq, |_| {})?;
            let after = state.dump();
            let diff = match only {
                None => chronicle::audit::diff(&before, &after),
                Some(area) => chronicle::audit::diff(
                    &chronicle::audit::only_area(&before, &area)?,
                    &chronicle::audit::only_area(&after, &area)?,
                ),
            };
            println!("{}", serde_json::to_string_pretty(&diff)?);
            Ok(())
        }
        Command::Bench {
            write_org: Some(dir),
            ..
        } => Ok(chronicle::bench::write_org(&dir)?),
        Command::Bench {
            quick,
            scenario,
            out,
            write_org: None,
        } => chronicle::bench::run(chronicle::bench::BenchOptions {
            quick,
            scenario,
            out,
        }),
        Command::ExportTo {
            format: ExportFormat::Zulip,
            data_dir,
            cluster,
            out,
        } => {
            if out.exists() {
                return Err(format!("{} already exists", out.display()).into());
            }
            let (state, _) = fold_data_dir(&data_dir, cluster.spec().as_ref(), None)?;
            let uploads = chronicle::uploads::UploadStore::new(&Layout::new(&data_dir).uploads());
            let counts = chronicle::import::export_zulip::export(&state, &uploads, &out)
                .map_err(|e| format!("export refused: {e}"))?;
            let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
            println!(
                "Exported in Zulip's format to {}: {}",
                out.display(),
                counts.join(", ")
            );
            Ok(())
        }
        Command::ImportFrom {
            source,
            export,
            data_dir,
            owner_email,
            realm_name,
            slack_users,
            team,
            max_expanded_gib,
            cluster,
        } => {
            let options = chronicle::import::Options {
                owner_email,
                realm_name,
                slack_users,
                team,
                max_expanded: max_expanded_gib
                    .map_or(chronicle::import::archive::MAX_EXPANDED, |g| {
                        g.saturating_mul(1 << 30)
                    }),
            };
            // A stream takes an organization only from its first event: checked before
            // anything is written.
            let stream = match cluster.spec() {
                Some(spec) => {
                    let stream = open_log(&data_dir, Some(&spec))?;
                    if stream.last_seq()?.is_some() {
                        return Err(format!(
                            "import refused: the stream {} already holds events; an import \
                             starts an organization (create another with chronicle cluster \
                             init --stream NAME)",
                            spec.stream
                        )
                        .into());
                    }
                    Some(stream)
                }
                None => None,
            };
            let report = chronicle::import::run(source, &export, &data_dir, &options)
                .map_err(|e| format!("import refused: {e}"))?;
            if let Some(stream) = stream {
                // Built and checked on disk, then moved into the stream whole; the local log
                // goes once the stream holds every record durably.
                let local_path = Layout::new(&data_dir).log();
                let local = open_log(&data_dir, None)?;
                let moved = chronicle::store::copy_records(local.as_ref(), stream.as_ref())
                    .map_err(|e| {
                        format!(
                        "moving the import into the stream failed: {e}. {} holds the whole import \
                         in its own log; the stream holds part of it and cannot take another \
                         organization",
                        data_dir.display()
                    )
                    })?;
                drop(local);
                std::fs::remove_dir_all(&local_path)?;
                println!("Moved {moved} events into the stream.");
            }
            let counts: Vec<String> = report
                .counts
                .iter()
                .map(|(kind, n)| format!("{n} {kind}"))
                .collect();
            println!(
                "Imported from {} into {}: {}; {} skipped (see {}). The owner is {}; their API \
                 key is in {}.",
                report.source,
                data_dir.display(),
                counts.join(", "),
                report.skipped.len(),
                data_dir.join("import-report.json").display(),
                report.owner_email,
                data_dir.join("zuliprc").display(),
            );
            Ok(())
        }
        Command::Backup { data_dir, to } => backup(&data_dir, &to),
        Command::LdapSync { data_dir } => ldap_sync(&data_dir),
        Command::Export {
            data_dir,
            cluster,
            out,
        } => {
            let log = open_log(&data_dir, cluster.spec().as_ref())?;
            let log = log.as_ref();
            let mut file = std::io::BufWriter::new(std::fs::File::create(&out)?);
            let count = export_records(log, &mut file)?;
            file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            println!("exported {count} events to {}", out.display());
            // Uploaded files go beside it, each checked against its name (its SHA-256).
            let files = copy_uploads(&Layout::new(&data_dir).uploads(), &uploads_beside(&out))?;
            if files > 0 {
                println!(
                    "exported {files} uploaded files to {}",
                    uploads_beside(&out).display()
                );
            }
            Ok(())
        }
        Command::Import {
            data_dir,
            cluster,
            from,
        } => {
            let bytes = std::fs::read(&from)?;
            std::fs::create_dir_all(&data_dir)?;
            let log = open_log(&data_dir, cluster.spec().as_ref())?;
            let log = log.as_ref();
            let count = import_records(log, &bytes)?;
            let files = copy_uploads(&uploads_beside(&from), &Layout::new(&data_dir).uploads())?;
            if files > 0 {
                println!("imported {files} uploaded files");
            }
            match check_integrity(log)? {
                Integrity::Clean { last } => {
                    println!(
                        "imported {count} events (last seq {last}) into {}",
                        data_dir.display()
                    )
                }
                damaged => return Err(format!("the imported log is damaged: {damaged:?}").into()),
            }
            Ok(())
        }
        Command::Erase { data_dir } => {
            let report = chronicle::erase::erase_deleted(&data_dir)?;
            println!("messages_erased: {}", report.messages);
            println!(
                "records_rewritten: {}",
                report
                    .records
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            );
            println!("previous_head: {}", report.previous_head);
            println!("upload_files_removed: {}", report.files_removed);
            println!("head: {}", report.new_head);
            Ok(())
        }
        Command::Verify { data_dir, cluster } => {
            let log = open_log(&data_dir, cluster.spec().as_ref())?;
            let log = log.as_ref();
            let report = verify_chain(log, None)?;
            print_chain_report(&report);
            match report.first_break {
                None => Ok(()),
                Some((seq, _)) => Err(format!("the log is broken at record {seq}").into()),
            }
        }
        Command::Replay {
            data_dir,
            cluster,
            to_seq,
            to_time,
            verify,
        } => replay(&data_dir, &cluster, to_seq, to_time, verify),
        Command::Cluster { action } => cluster_command(action),
    }
}

/// The server's configuration from its command-line options.
/// The server's configuration from the settings in force (`effective`) and the test-only flags.
fn serve_config(
    args: ServeArgs,
    effective: chronicle::config::Effective,
) -> Result<ServeConfig, Fatal> {
    let s = effective.settings;
    use chronicle::http::rate_limit::{Limits, Rule};
    let defaults = Limits::default();
    let want = |value: Option<u64>, key: &str| {
        value.ok_or_else(|| format!("configuration: {key} has no value"))
    };
    let want_usize = |value: Option<usize>, key: &str| {
        value.ok_or_else(|| format!("configuration: {key} has no value"))
    };
    let rate_limits = Limits {
        per_user: Rule {
            max: want_usize(s.limits.requests_per_user, "limits.requests_per_user")?,
            ..defaults.per_user
        },
        per_ip: Rule {
            max: want_usize(s.limits.requests_per_ip, "limits.requests_per_ip")?,
            ..defaults.per_ip
        },
        failed_logins: Rule {
            max: want_usize(s.limits.failed_logins, "limits.failed_logins")?,
            ..defaults.failed_logins
        },
        password_checks_per_address: want_usize(
            s.limits.password_checks_per_address,
            "limits.password_checks_per_address",
        )?,
    };
    let outgoing_allow = s
        .outgoing
        .allow
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|text| {
            text.parse::<chronicle::outgoing::Net>()
                .map_err(|e| format!("outgoing.allow: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let identity = chronicle::identity::Identity::from_settings(
        &s,
        std::sync::Arc::new(chronicle::outgoing::Guard::new(outgoing_allow.clone())),
    )?;
    Ok(ServeConfig {
        data_dir: s.data_dir.unwrap_or_else(|| PathBuf::from("./data")),
        bind: s.bind.unwrap_or_default(),
        owner_email: s.owner_email.unwrap_or_default(),
        realm_name: s.realm_name.unwrap_or_default(),
        external_url: s.external_url,
        heartbeat: args.heartbeat_secs.map(std::time::Duration::from_secs),
        retention_interval: args
            .retention_interval_secs
            .map(std::time::Duration::from_secs),
        mail: chronicle::notify::relay::RelaySettings {
            url: s.mail.smtp_url,
            username: s.mail.smtp_username,
            password: s.mail.smtp_password,
            ca_file: s.mail.ca_file,
            from_address: s.mail.from_address,
        },
        push: match (&s.push.zulip_org_id, &s.push.zulip_org_key) {
            (Some(id), Some(key)) => Some(chronicle::notify::PushConfig {
                bouncer: chronicle::notify::push::bouncer::Bouncer::new(
                    s.push.url.as_deref(),
                    id,
                    key,
                    &std::sync::Arc::new(chronicle::outgoing::Guard::new(outgoing_allow.clone())),
                )?,
                redact_content: s.push.redact_content.unwrap_or(false),
            }),
            (None, None) => None,
            _ => return Err("push.zulip_org_id and push.zulip_org_key go together".into()),
        },
        video: video_calls(&s.video_calls)?,
        email_gateway: match s.email_gateway.listen {
            None => None,
            Some(listen) => Some(chronicle::server::GatewayConfig {
                listen,
                domain: s.email_gateway.domain,
                max_bytes: (s.email_gateway.max_message_mib.unwrap_or(25) as usize) << 20,
            }),
        },
        snapshot_every: want(s.snapshot_every, "snapshot_every")?,
        check_whole_log: s.check_whole_log.unwrap_or(false),
        min_free_space_mib: s.min_free_space_mib,
        rate_limits,
        client_timeouts: chronicle::http::ClientTimeouts {
            head: std::time::Duration::from_secs(want(
                s.limits.client_head_timeout_secs,
                "limits.client_head_timeout_secs",
            )?),
            body: std::time::Duration::from_secs(want(
                s.limits.client_body_timeout_secs,
                "limits.client_body_timeout_secs",
            )?),
        },
        uploads: chronicle::render::UploadLimits {
            max_file_mib: want(s.uploads.max_file_mib, "uploads.max_file_mib")?,
            quota_mib: s.uploads.quota_mib,
        },
        cluster: s.cluster.nats.map(|url| ClusterSpec {
            url,
            stream: s.cluster.stream.unwrap_or_else(|| "chronicle".into()),
            replicas: s.cluster.replicas.unwrap_or(3),
        }),
        advertise_url: s.cluster.advertise_url,
        outgoing_allow,
        metrics_bind: s.metrics.bind,
        metrics_token: s.metrics.token,
        identity,
    })
}

/// Where an export's uploaded files go: `FILE.uploads/` beside the exported log `FILE`.
/// `[video_calls]` checked: URLs of http(s), a BigBlueButton URL with its secret, a Nextcloud
/// server with its Talk account, Constructor Groups with its keys.
fn video_calls(
    v: &chronicle::config::VideoCallSettings,
) -> Result<chronicle::render::VideoCalls, String> {
    let url = |key: &str, text: &str| -> Result<String, String> {
        let text = text.trim();
        if text.starts_with("https://") || text.starts_with("http://") {
            Ok(text.to_owned())
        } else {
            Err(format!("video_calls.{key}: not an http(s) URL: {text}"))
        }
    };
    let jitsi_server_url = match v.jitsi_server_url.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(
            url("jitsi_server_url", text)?
                .trim_end_matches('/')
                .to_owned(),
        ),
    };
    let big_blue_button = match (&v.big_blue_button_url, &v.big_blue_button_secret) {
        (None, None) => None,
        (Some(base), Some(secret)) if !secret.trim().is_empty() => {
            let base = url("big_blue_button_url", base)?;
            let base = if base.ends_with('/') {
                base
            } else {
                format!("{base}/")
            };
            Some(chronicle::render::BigBlueButton {
                url: base,
                secret: secret.trim().to_owned(),
            })
        }
        _ => return Err(
            "video_calls.big_blue_button_url and video_calls.big_blue_button_secret go together"
                .into(),
        ),
    };
    // The three settings of a service go together; a secret may not be blank.
    let all_or_none =
        |names: [&str; 3], values: [&Option<String>; 3]| -> Result<Option<[String; 3]>, String> {
            match values {
                [None, None, None] => Ok(None),
                [Some(a), Some(b), Some(c)] if [a, b, c].iter().all(|v| !v.trim().is_empty()) => {
                    Ok(Some([
                        a.trim().to_owned(),
                        b.trim().to_owned(),
                        c.trim().to_owned(),
                    ]))
                }
                _ => Err(format!(
                    "video_calls.{}, video_calls.{} and video_calls.{} go together",
                    names[0], names[1], names[2]
                )),
            }
        };
    let nextcloud_talk = match all_or_none(
        [
            "nextcloud_server",
            "nextcloud_talk_username",
            "nextcloud_talk_password",
        ],
        [
            &v.nextcloud_server,
            &v.nextcloud_talk_username,
            &v.nextcloud_talk_password,
        ],
    )? {
        None => None,
        Some([server, username, password]) => {
            let server = url("nextcloud_server", &server)?;
            let parsed = reqwest::Url::parse(&server)
                .map_err(|e| format!("video_calls.nextcloud_server: {e}: {server}"))?;
            Some(chronicle::render::NextcloudTalk {
                origin: parsed.origin().ascii_serialization(),
                username,
                password,
            })
        }
    };
    let constructor_groups = match all_or_none(
        [
            "constructor_groups_url",
            "constructor_groups_access_key",
            "constructor_groups_secret_key",
        ],
        [
            &v.constructor_groups_url,
            &v.constructor_groups_access_key,
            &v.constructor_groups_secret_key,
        ],
    )? {
        None => None,
        Some([base, access_key, secret_key]) => Some(chronicle::render::ConstructorGroups {
            url: url("constructor_groups_url", &base)?
                .trim_end_matches('/')
                .to_owned(),
            access_key,
            secret_key,
        }),
    };
    Ok(chronicle::render::VideoCalls {
        jitsi_server_url,
        big_blue_button,
        nextcloud_talk,
        constructor_groups,
    })
}

fn uploads_beside(file: &std::path::Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".uploads");
    PathBuf::from(name)
}

/// Copies every uploaded file from one upload directory to another (absent: none), checking
/// each against its hash; returns how many.
fn copy_uploads(from: &std::path::Path, to: &std::path::Path) -> Result<usize, Fatal> {
    use chronicle::uploads::UploadStore;
    let (source, target) = (UploadStore::new(from), UploadStore::new(to));
    let hashes = source.hashes()?;
    for hash in &hashes {
        target.copy_from(&source, hash)?;
    }
    Ok(hashes.len())
}

/// `chronicle backup`: offline when the data directory's log can be opened; otherwise the
/// server that holds it takes the backup (`POST /api/v1/admin/backup`, as the owner of
/// DIR/zuliprc) into DIR/backups/, and it is moved to `to`.
fn backup(data_dir: &std::path::Path, to: &std::path::Path) -> Result<(), Fatal> {
    if to.exists() {
        return Err(format!("{} already exists", to.display()).into());
    }
    let report = match open_log(data_dir, None) {
        Ok(log) => {
            let upto = log.last_seq()?.unwrap_or(Seq(0));
            chronicle::backup::take(log.as_ref(), data_dir, upto, to)?.json()
        }
        Err(offline) => {
            let answer = ask_server(
                data_dir,
                "admin/backup",
                std::time::Duration::from_secs(3600),
            )
            .map_err(|e| format!("the log is in use ({offline}): {e}"))?;
            if answer["result"] != "success" {
                return Err(format!("the server refused the backup: {}", answer["msg"]).into());
            }
            let taken = PathBuf::from(answer["path"].as_str().unwrap_or_default());
            if std::fs::rename(&taken, to).is_err() {
                copy_dir(&taken, to)?;
                std::fs::remove_dir_all(&taken)?;
            }
            answer
        }
    };
    println!(
        "backup of {} events ({} uploaded files) written to {}",
        report["seq"],
        report["uploads"],
        to.display()
    );
    Ok(())
}

/// Asks the server serving `data_dir` (POST `/api/v1/{path}`, as the owner of DIR/zuliprc):
/// its answer.
fn ask_server(
    data_dir: &std::path::Path,
    path: &str,
    timeout: std::time::Duration,
) -> Result<serde_json::Value, Fatal> {
    let layout = Layout::new(data_dir);
    let zuliprc = std::fs::read_to_string(layout.zuliprc()).map_err(|e| {
        format!(
            "there is no zuliprc to ask the server with ({}): {e}",
            layout.zuliprc().display()
        )
    })?;
    let value = |key: &str| {
        zuliprc
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(str::trim)
            .map(str::to_owned)
            .ok_or_else(|| format!("{key} is missing from {}", layout.zuliprc().display()))
    };
    let (site, email, key) = (value("site")?, value("email")?, value("key")?);
    let answer: serde_json::Value = actix_web::rt::System::new()
        .block_on(async {
            reqwest::Client::new()
                .post(format!("{}/api/v1/{path}", site.trim_end_matches('/')))
                .basic_auth(&email, Some(&key))
                .timeout(timeout)
                .send()
                .await?
                .json()
                .await
        })
        .map_err(|e| format!("the server at {site} did not answer: {e}"))?;
    Ok(answer)
}

/// `chronicle ldap-sync`: the server serving `data_dir` syncs with its directory now.
fn ldap_sync(data_dir: &std::path::Path) -> Result<(), Fatal> {
    let answer = ask_server(
        data_dir,
        "admin/ldap-sync",
        std::time::Duration::from_secs(600),
    )?;
    if answer["result"] != "success" {
        return Err(format!("the directory sync was refused: {}", answer["msg"]).into());
    }
    let count = |key: &str| answer[key].as_array().map_or(0, Vec::len);
    println!(
        "directory sync: {} deactivated, {} reactivated, {} renamed, {} with a new role, {} new avatars, {} with new profile values, {} groups changed, {} kept active (the last owner)",
        count("deactivated"),
        count("reactivated"),
        count("renamed"),
        count("role_changed"),
        count("new_avatar"),
        count("profile_changed"),
        answer["groups"].as_object().map_or(0, |g| g.len()),
        count("kept"),
    );
    Ok(())
}

/// Copies a directory tree (a backup moved to another file system).
fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> Result<(), Fatal> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// `chronicle replay`: folds the log (up to a seq or a time), optionally checking the chain
/// and the newest snapshot on the way, and prints the count, the rate and the digest.
fn replay(
    data_dir: &std::path::Path,
    cluster: &ClusterArgs,
    to_seq: Option<u64>,
    to_time: Option<String>,
    verify: bool,
) -> Result<(), Fatal> {
    if verify {
        let log = open_log(data_dir, cluster.spec().as_ref())?;
        let log = log.as_ref();
        let report = verify_chain(log, to_seq.map(Seq))?;
        print_chain_report(&report);
        if let Some((seq, _)) = report.first_break {
            return Err(format!("the log is broken at record {seq}; not replayed").into());
        }
    }
    let started = Instant::now();
    let until_ms = match to_time {
        None => None,
        Some(text) => Some(
            parse_rfc3339_ms(&text)
                .ok_or_else(|| format!("--to-time: not an RFC 3339 time: {text}"))?,
        ),
    };
    let log = open_log(data_dir, cluster.spec().as_ref())?;
    let log = log.as_ref();
    let keep = |env: &chronicle::events::Envelope| {
        to_seq.is_none_or(|s| env.seq.0 <= s) && until_ms.is_none_or(|t| env.at <= t)
    };
    let progress = |seq: Seq| {
        // A progress line on a terminal; scripts get the summary only.
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprint!("\rreplayed {} events…", seq.0);
        }
    };
    // The offline replay answers no searches: no word index.
    let mut state = Projections::unindexed();
    // With --verify, the replay passes through the newest snapshot within reach that records a
    // digest (a single server's periodic ones record none) and checks that it folds to that digest.
    let snapshot = verify
        .then(|| chronicle::snapshot::list(data_dir))
        .into_iter()
        .flatten()
        .rev()
        .filter_map(|(_, path)| chronicle::snapshot::recorded_digest(&path))
        .find(|(seq, _)| to_seq.is_none_or(|s| seq.0 <= s));
    let mut mismatch = None;
    if let Some((snap_seq, recorded)) = snapshot {
        chronicle::replay::continue_while(
            &mut state,
            log,
            |env| env.seq <= snap_seq && keep(env),
            progress,
        )?;
        if state.seq == snap_seq {
            let matches = state.digest() == recorded;
            println!("snapshot_seq: {snap_seq}");
            println!(
                "snapshot_digest: {}",
                if matches { "matches" } else { "DIFFERS" }
            );
            if !matches {
                mismatch = Some(snap_seq);
            }
        }
    }
    chronicle::replay::continue_while(&mut state, log, keep, progress)?;
    if events_were_shown(&state) {
        eprintln!();
    }
    let events = state.seq.0;
    let seconds = started.elapsed().as_secs_f64();
    println!("events: {events}");
    println!("seconds: {seconds:.3}");
    println!(
        "events_per_second: {:.0}",
        events as f64 / seconds.max(1e-9)
    );
    println!("last_seq: {}", state.seq);
    println!("digest: {}", state.digest());
    if let Some(seq) = mismatch {
        return Err(
            format!("the snapshot at {seq} does not match a replay of the log up to it").into(),
        );
    }
    Ok(())
}

/// `chronicle cluster init|status`.
fn cluster_command(action: ClusterAction) -> Result<(), Fatal> {
    use chronicle::store::jetstream::{self, Init, JetStreamLog};
    match action {
        ClusterAction::Init { cluster } => {
            let spec = cluster.required()?;
            match jetstream::init(&spec)? {
                Init::Created => println!(
                    "created stream {} (subject {}, {} replicas)",
                    spec.stream,
                    spec.subject(),
                    spec.replicas
                ),
                Init::AlreadyFit => println!(
                    "stream {} exists with the settings of a durable log",
                    spec.stream
                ),
            }
            Ok(())
        }
        ClusterAction::Status { cluster } => {
            let spec = cluster.required()?;
            let status = JetStreamLog::open(&spec)?.status()?;
            let jetstream::Members { writer, nodes } = jetstream::members(&spec)?;
            println!("last_seq: {}", status.last_seq);
            println!("stream_messages: {}", status.messages);
            println!("stream_last_sequence: {}", status.last_sequence);
            println!("stream_bytes: {}", status.bytes);
            println!("leader: {}", status.leader.as_deref().unwrap_or("-"));
            for (name, current, lag) in &status.replicas {
                let state = if *current { "current" } else { "behind" };
                println!("replica: {name} {state} lag {lag}");
            }
            println!("writer: {}", writer.as_deref().unwrap_or("-"));
            for (tag, node) in &nodes {
                println!("node: {tag} {} folded {}", node.url, node.seq);
            }
            Ok(())
        }
    }
}

/// Prints what `verify_chain` found, one `key: value` per line.
fn print_chain_report(report: &chronicle::store::ChainReport) {
    println!("records_checked: {}", report.records);
    println!("unchained_prefix: {}", report.unchained);
    println!("head: {}", report.head.as_deref().unwrap_or("-"));
    match &report.first_break {
        None => println!("chain: intact"),
        Some((seq, reason)) => println!("chain: broken at record {seq}: {reason}"),
    }
}

/// `chronicle log`: the filtered audit trail, as lines or JSON.
#[allow(clippy::too_many_arguments)]
fn print_log(
    data_dir: &std::path::Path,
    cluster: &ClusterArgs,
    after_seq: u64,
    types: Option<String>,
    actor: Option<String>,
    since: Option<String>,
    until: Option<String>,
    json: bool,
) -> Result<(), Fatal> {
    let log = open_log(data_dir, cluster.spec().as_ref())?;
    let log = log.as_ref();
    let time = |flag: &str, text: Option<String>| -> Result<Option<i64>, Fatal> {
        match text {
            None => Ok(None),
            Some(t) => parse_rfc3339_ms(&t)
                .map(Some)
                .ok_or_else(|| format!("--{flag}: not an RFC 3339 time: {t}").into()),
        }
    };
    let actor = match actor {
        None => None,
        Some(a) => Some(match a.parse::<u64>() {
            Ok(id) => id,
            // An address: the account it was created for, found in the log itself.
            Err(_) => read_envelopes(log, Seq(1))
                .filter_map(Result::ok)
                .find_map(|env| match env.event.inner() {
                    chronicle::events::Event::UserCreated { user_id, email, .. }
                        if email.eq_ignore_ascii_case(&a) =>
                    {
                        Some(user_id.0)
                    }
                    _ => None,
                })
                .ok_or_else(|| format!("--actor: no account {a} in this log"))?,
        }),
    };
    let filter = EventFilter {
        after_seq,
        types: types.as_deref().map(EventFilter::parse_types).transpose()?,
        actor,
        since_ms: time("since", since)?,
        until_ms: time("until", until)?,
    };
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for env in read_envelopes(log, Seq(after_seq.saturating_add(1))) {
        let env = env?;
        if filter.past_the_end(&env) {
            break;
        }
        if !filter.keeps(&env) {
            continue;
        }
        let written = if json {
            writeln!(out, "{}", chronicle::audit::event_json(&env))
        } else {
            writeln!(out, "{}", chronicle::audit::event_line(&env))
        };
        // A closed pipe (`| head`) ends the listing quietly.
        if written.is_err() {
            return Ok(());
        }
    }
    let _ = out.flush();
    Ok(())
}

/// Whether `replay` printed progress (so the summary starts on a fresh line).
fn events_were_shown(state: &Projections) -> bool {
    state.seq.0 >= 100_000 && std::io::IsTerminal::is_terminal(&std::io::stderr())
}

fn main() -> ExitCode {
    chronicle::server::tune_allocator();
    let cli = Cli::parse();
    // The server reports its life at info; the offline commands only warnings.
    let default_level = match cli.command {
        Command::Serve { .. } => "info",
        _ => "warn",
    };
    // The server's log format is part of its configuration, read once here (a bad one is
    // reported by `run`, which reads it again only then).
    let serving = match &cli.command {
        Command::Serve(args) => args.effective().ok(),
        _ => None,
    };
    let json = serving
        .as_ref()
        .and_then(|e| e.settings.log_format)
        .is_some_and(|f| f == chronicle::config::LogFormat::Json);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    if json {
        tracing_subscriber::fmt()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    } else {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    match run(cli, serving) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("chronicle: {err}");
            ExitCode::FAILURE
        }
    }
}

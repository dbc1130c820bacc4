//! The `chronicle` command line: `serve`, `dump`, `replay`, `export`, `import`.

use chronicle::ids::Seq;
use chronicle::server::{fold_data_dir, serve, Fatal, Layout, ServeConfig};
use chronicle::store::{check_integrity, export_records, import_records, Integrity, SledLog};
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

#[derive(Subcommand)]
enum Command {
    /// Run the server. The first start on an empty data directory creates the organization,
    /// its owner, and DIR/zuliprc.
    Serve {
        #[arg(long, default_value = "./data")]
        data_dir: PathBuf,
        #[arg(long, default_value = "127.0.0.1:9991")]
        bind: String,
        #[arg(long, default_value = "owner@chronicle.local")]
        owner_email: String,
        #[arg(long, default_value = "Chronicle")]
        realm_name: String,
        /// The URL clients use to reach this server, when it is not http://<bind address>.
        #[arg(long)]
        external_url: Option<String>,
        /// Long-poll heartbeat in seconds (default: Zulip's 45-55); for tests.
        #[arg(long, hide = true)]
        heartbeat_secs: Option<u64>,
        /// Seconds between runs of the message retention job (default: an hour); for tests.
        #[arg(long, hide = true)]
        retention_interval_secs: Option<u64>,
        /// Send emails through this SMTP relay (smtp://HOST[:PORT], no TLS: a local relay
        /// handles it); without it emails are written to DATA_DIR/outbox.
        #[arg(long)]
        smtp_url: Option<String>,
    },
    /// Print the projection dump as JSON (the server must be stopped).
    Dump {
        #[arg(long)]
        data_dir: PathBuf,
        /// Fold only up to and including this event.
        #[arg(long)]
        at_seq: Option<u64>,
    },
    /// Write the log, byte for byte, to a portable file (a backup; the server must be stopped).
    Export {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Restore an exported log into an empty data directory (copy secret.key beside it too).
    Import {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long)]
        from: PathBuf,
    },
    /// Measure Chronicle against baselines measured in the same run (see docs/performance.md).
    Bench {
        /// Small sizes for a smoke run (under a minute); asserts nothing about speed.
        #[arg(long)]
        quick: bool,
        /// Run one scenario only: http, writes, replay, fan-out, register, narrow, memory.
        #[arg(long)]
        scenario: Option<String>,
        /// Where bench.json and bench.svg are written.
        #[arg(long, default_value = "./bench-out")]
        out: PathBuf,
    },
    /// Internal: the benchmark's clean-process memory measurement.
    #[command(hide = true)]
    MemoryProbe {
        #[arg(long)]
        users: Option<u64>,
        #[arg(long)]
        messages: Option<u64>,
        #[arg(long)]
        queues: Option<u64>,
    },
    /// Replay the log and report events, seconds, events/second and the projections' digest
    /// (the server must be stopped).
    Replay {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long)]
        to_seq: Option<u64>,
    },
}

fn run(cli: Cli) -> Result<(), Fatal> {
    match cli.command {
        Command::Serve {
            data_dir,
            bind,
            owner_email,
            realm_name,
            external_url,
            heartbeat_secs,
            retention_interval_secs,
            smtp_url,
        } => {
            let config = ServeConfig {
                data_dir,
                bind,
                owner_email,
                realm_name,
                external_url,
                heartbeat: heartbeat_secs.map(std::time::Duration::from_secs),
                retention_interval: retention_interval_secs.map(std::time::Duration::from_secs),
                smtp_url,
            };
            actix_web::rt::System::new().block_on(serve(config))
        }
        Command::Dump { data_dir, at_seq } => {
            let (state, _) = fold_data_dir(&data_dir, at_seq.map(Seq))?;
            println!("{}", serde_json::to_string_pretty(&state.dump())?);
            Ok(())
        }
        Command::Bench {
            quick,
            scenario,
            out,
        } => chronicle::bench::run(chronicle::bench::BenchOptions {
            quick,
            scenario,
            out,
        }),
        Command::MemoryProbe {
            users,
            messages,
            queues,
        } => {
            use chronicle::bench::Probe;
            let probe = match (users, messages, queues) {
                (Some(n), None, None) => Probe::Users(n),
                (None, Some(n), None) => Probe::Messages(n),
                (None, None, Some(n)) => Probe::Queues(n),
                _ => return Err("give exactly one of --users, --messages, --queues".into()),
            };
            println!("{}", chronicle::bench::memory_probe(probe)?);
            Ok(())
        }
        Command::Export { data_dir, out } => {
            let log = SledLog::open(&Layout::new(&data_dir).log())?;
            let mut file = std::io::BufWriter::new(std::fs::File::create(&out)?);
            let count = export_records(&log, &mut file)?;
            file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            println!("exported {count} events to {}", out.display());
            Ok(())
        }
        Command::Import { data_dir, from } => {
            let bytes = std::fs::read(&from)?;
            std::fs::create_dir_all(&data_dir)?;
            let log = SledLog::open(&Layout::new(&data_dir).log())?;
            let count = import_records(&log, &bytes)?;
            match check_integrity(&log)? {
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
        Command::Replay { data_dir, to_seq } => {
            let started = Instant::now();
            let (state, events) = fold_data_dir(&data_dir, to_seq.map(Seq))?;
            let seconds = started.elapsed().as_secs_f64();
            println!("events: {events}");
            println!("seconds: {seconds:.3}");
            println!(
                "events_per_second: {:.0}",
                events as f64 / seconds.max(1e-9)
            );
            println!("last_seq: {}", state.seq);
            println!("digest: {}", state.digest());
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The server reports its life at info; the offline commands only warnings.
    let default_level = match cli.command {
        Command::Serve { .. } => "info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("chronicle: {err}");
            ExitCode::FAILURE
        }
    }
}

//! The `chronicle` command line: `serve`, `dump`, `replay`.

use chronicle::ids::Seq;
use chronicle::server::{fold_data_dir, serve, Fatal, ServeConfig};
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
    },
    /// Print the projection dump as JSON (the server must be stopped).
    Dump {
        #[arg(long)]
        data_dir: PathBuf,
        /// Fold only up to and including this event.
        #[arg(long)]
        at_seq: Option<u64>,
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
        } => {
            let config = ServeConfig {
                data_dir,
                bind,
                owner_email,
                realm_name,
                external_url,
            };
            actix_web::rt::System::new().block_on(serve(config))
        }
        Command::Dump { data_dir, at_seq } => {
            let (state, _) = fold_data_dir(&data_dir, at_seq.map(Seq))?;
            println!("{}", serde_json::to_string_pretty(&state.dump())?);
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
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("chronicle: {err}");
            ExitCode::FAILURE
        }
    }
}

//! `chronicle bench`: measures Chronicle against baselines measured in the same run, on the same
//! machine, with the same load generator, so that a noisy shared machine still gives meaningful
//! ratios. `docs/performance.md` explains each scenario and lists the latest numbers.
//!
//! The server runs in-process on a temporary data directory, driven over loopback HTTP by a
//! built-in generator (reqwest on tokio). Every loop is bounded in count and time.

mod chart;
pub(crate) mod corpus;
mod history;
mod import;
mod load;
mod notify;
mod people;
mod scenarios;
pub mod seed;
mod sustained;

use crate::server::Fatal;
use serde::Serialize;
use std::path::PathBuf;

/// Options of `chronicle bench`.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Small sizes: finishes in well under a minute; asserts nothing about speed.
    pub quick: bool,
    /// Run only this scenario (see `SCENARIOS`).
    pub scenario: Option<String>,
    /// Where `bench.json` and `bench.svg` go.
    pub out: PathBuf,
}

/// Writes the `register` scenario's organization (1,000 users, 200 channels, 100,000
/// messages) into the new data directory `dir`, for trying a client on it with
/// `chronicle serve --data-dir DIR`; the user who can sign in to the web client is printed.
pub fn write_org(dir: &std::path::Path) -> Result<(), Fatal> {
    let users = seed::seed_in(dir, &scenarios::register_organization(false))?;
    let email = users
        .get(1)
        .map(|(_, email, _)| email.as_str())
        .unwrap_or_default();
    println!(
        "Wrote the register scenario's organization to {}; sign in to the web client as {email} with the password {}",
        dir.display(),
        seed::WEB_PASSWORD
    );
    Ok(())
}

/// One measured figure next to its baseline.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub scenario: String,
    pub case: String,
    pub value: f64,
    pub unit: String,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub baseline: Option<f64>,
    pub baseline_label: String,
    /// value / baseline.
    pub ratio: Option<f64>,
    /// Rates: a ratio above 1 is good; sizes: below 1 is good.
    pub higher_is_better: bool,
    /// Successful requests measured (0 where the row is not a request count).
    pub samples: u64,
    pub errors: u64,
}

/// The whole run, as written to `bench.json`.
#[derive(Debug, Serialize)]
pub struct Report {
    pub chronicle_version: &'static str,
    pub started_unix: u64,
    pub machine: String,
    pub quick: bool,
    pub seconds: f64,
    pub rows: Vec<Row>,
}

pub const SCENARIOS: &[&str] = &[
    "http",
    "writes",
    "replay",
    "fan-out",
    "register",
    "narrow",
    "memory",
    "sustained",
    "history",
    "people",
    "import",
    "notifications",
];

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cpus} CPUs, {model}")
}

/// Runs the chosen scenarios and writes the report.
pub fn run(options: BenchOptions) -> Result<(), Fatal> {
    if let Some(name) = &options.scenario {
        if !SCENARIOS.contains(&name.as_str()) {
            return Err(format!("unknown scenario '{name}'; choose one of {SCENARIOS:?}").into());
        }
    }
    let wanted = |name: &str| options.scenario.as_deref().is_none_or(|s| s == name);
    let started = std::time::Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!("messages sent: {}", corpus::source());
    let mut rows = Vec::new();
    if wanted("http") {
        rows.extend(runtime.block_on(scenarios::http_ceiling(options.quick))?);
    }
    if wanted("writes") {
        rows.extend(runtime.block_on(scenarios::durable_writes(options.quick))?);
    }
    if wanted("replay") {
        rows.extend(scenarios::replay(options.quick)?);
    }
    if wanted("fan-out") {
        rows.extend(runtime.block_on(scenarios::fan_out(options.quick))?);
    }
    if wanted("register") {
        rows.extend(runtime.block_on(scenarios::register(options.quick))?);
    }
    if wanted("narrow") {
        rows.extend(runtime.block_on(scenarios::narrow_reads(options.quick))?);
    }
    if wanted("memory") {
        rows.extend(runtime.block_on(sustained::memory(options.quick))?);
    }
    if wanted("sustained") {
        rows.extend(runtime.block_on(sustained::sustained(options.quick))?);
    }
    if wanted("history") {
        rows.extend(runtime.block_on(history::history(options.quick))?);
    }
    if wanted("people") {
        rows.extend(runtime.block_on(people::people(options.quick))?);
    }
    if wanted("import") {
        rows.extend(import::import(options.quick)?);
    }
    if wanted("notifications") {
        rows.extend(runtime.block_on(notify::notifications(options.quick))?);
    }
    let report = Report {
        chronicle_version: env!("CARGO_PKG_VERSION"),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        machine: machine(),
        quick: options.quick,
        seconds: started.elapsed().as_secs_f64(),
        rows,
    };
    std::fs::create_dir_all(&options.out)?;
    let json_path = options.out.join("bench.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)?)?;
    let svg_path = options.out.join("bench.svg");
    chart::draw(&report, &svg_path)?;
    println!("{}", table(&report));
    println!(
        "report: {}\nchart:  {}",
        json_path.display(),
        svg_path.display()
    );
    let errors: u64 = report.rows.iter().map(|r| r.errors).sum();
    if errors > 0 {
        return Err(format!("{errors} requests failed during the benchmark").into());
    }
    Ok(())
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// The report as a Markdown table.
pub fn table(report: &Report) -> String {
    let mut out = format!(
        "Chronicle {} bench ({}; {}; {:.1} s)\n\n",
        report.chronicle_version,
        report.machine,
        if report.quick { "quick" } else { "full" },
        report.seconds
    );
    out.push_str(
        "| scenario | case | value | unit | p50 ms | p99 ms | baseline | baseline is | ratio |\n",
    );
    out.push_str("|---|---|---:|---|---:|---:|---:|---|---:|\n");
    let opt = |v: Option<f64>| v.map(fmt_num).unwrap_or_else(|| "–".into());
    for r in &report.rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.scenario,
            r.case,
            fmt_num(r.value),
            r.unit,
            opt(r.p50_ms),
            opt(r.p99_ms),
            opt(r.baseline),
            r.baseline_label,
            r.ratio
                .map(|x| format!("{x:.2}×"))
                .unwrap_or_else(|| "–".into()),
        ));
    }
    out
}

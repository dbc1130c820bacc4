//! `import`: how fast `chronicle import-from slack` (the process a user runs) brings in a large
//! Slack export, against the same run's `chronicle replay` of the log it wrote, and how much
//! memory it takes against `chronicle serve` serving the result.
//!
//! The export is generated here: 500 people, 100 channels of 60 members each, messages of real
//! text (Debian's fortunes) one second apart across the channels, in day files as Slack writes
//! them, one in ten a reply in a thread, one in twenty with a reaction, one in fifty mentioning
//! someone; deflated as Slack's zips are.
//!
//! The same organization then leaves as a Zulip export (`chronicle export-to zulip` of the
//! imported data directory, the tarball a Zulip server's `manage.py export` writes) and comes
//! back in through `chronicle import-from zulip`, measured the same way.

use super::sustained::{server_command, ChildServer};
use super::Row;
use crate::server::Fatal;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

const PEOPLE: u64 = 500;
const CHANNELS: u64 = 100;
const MEMBERS: u64 = 60;
/// 2020-01-01T00:00:00Z.
const START: u64 = 1_577_836_800;

/// Writes the export; answers its size in bytes.
fn generate(path: &Path, messages: u64) -> Result<u64, Fatal> {
    let users: Vec<serde_json::Value> = (1..=PEOPLE)
        .map(|u| {
            json!({
                "id": format!("U{u:05}"), "name": format!("person{u}"),
                "real_name": format!("Person {u}"), "tz": "Europe/Berlin",
                "is_primary_owner": u == 1, "is_admin": u <= 3,
                "profile": {"email": format!("person{u}@example.com")}
            })
        })
        .collect();
    let member = |c: u64, k: u64| 1 + (c * 37 + k * 7) % PEOPLE;
    let channels: Vec<serde_json::Value> = (1..=CHANNELS)
        .map(|c| {
            let members: Vec<String> = (0..MEMBERS)
                .map(|k| format!("U{:05}", member(c, k)))
                .collect();
            json!({
                "id": format!("C{c:05}"), "name": format!("channel-{c}"),
                "created": START - 86_400, "creator": "U00001",
                "is_general": c == 1, "members": members,
                "purpose": {"value": format!("Channel {c}")}
            })
        })
        .collect();
    // Day files: (channel, day) → messages.
    let mut days: BTreeMap<(u64, u64), Vec<serde_json::Value>> = BTreeMap::new();
    let mut last_root: BTreeMap<u64, String> = BTreeMap::new();
    for i in 0..messages {
        let c = 1 + i % CHANNELS;
        let ts_secs = START + i;
        let ts = format!("{ts_secs}.{:06}", i % 1_000_000);
        let sender = member(c, i % MEMBERS);
        let mut text = super::corpus::text(i, || format!("Message {i} about the plans"));
        if i % 50 == 7 {
            text = format!("<@U{:05}> {text}", member(c, (i + 3) % MEMBERS));
        }
        let mut message = json!({
            "type": "message", "user": format!("U{sender:05}"), "text": text, "ts": ts,
        });
        if i % 10 == 5 {
            if let Some(root) = last_root.get(&c) {
                message["thread_ts"] = json!(root);
            }
        } else if i % 10 == 0 {
            message["thread_ts"] = json!(ts);
            last_root.insert(c, ts.clone());
        }
        if i % 20 == 3 {
            message["reactions"] = json!([{
                "name": "+1", "count": 1,
                "users": [format!("U{:05}", member(c, (i + 1) % MEMBERS))]
            }]);
        }
        days.entry((c, (ts_secs - START) / 86_400))
            .or_default()
            .push(message);
    }
    let file = std::fs::File::create(path)?;
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1));
    let mut put = |name: &str, value: &serde_json::Value| -> Result<(), Fatal> {
        zip.start_file(name, options)
            .map_err(|e| format!("writing the export: {e}"))?;
        zip.write_all(&serde_json::to_vec(value)?)?;
        Ok(())
    };
    put("users.json", &json!(users))?;
    put("channels.json", &json!(channels))?;
    for ((c, day), messages) in &days {
        let date = crate::time::iso8601_ms(((START + day * 86_400) * 1000) as i64);
        put(
            &format!("channel-{c}/{}.json", &date[..10]),
            &json!(messages),
        )?;
    }
    zip.finish()
        .map_err(|e| format!("writing the export: {e}"))?;
    Ok(std::fs::metadata(path)?.len())
}

/// Runs a child to its end; its exit status and peak resident memory (bytes).
///
/// The peak is the child's own `VmHWM`, sampled from `/proc/PID/status` while it runs: the
/// high-water mark only grows, so the last sample before exit is the peak up to that moment.
/// (`getrusage`'s `ru_maxrss` cannot be used: it survives `exec`, so a child forked from this
/// large bench process would report the bench's own size.)
fn run_measured(command: &mut std::process::Command) -> Result<(bool, u64), Fatal> {
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .spawn()?;
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let status = loop {
        if let Some(hwm) = std::fs::read_to_string(&status_path)
            .ok()
            .as_deref()
            .and_then(vm_hwm)
        {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    Ok((status.success(), peak))
}

/// The `VmHWM` line of a `/proc/PID/status` text, in bytes.
fn vm_hwm(status: &str) -> Option<u64> {
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kib * 1024)
}

pub fn import(quick: bool) -> Result<Vec<Row>, Fatal> {
    let messages: u64 = if quick { 5_000 } else { 1_000_000 };
    let tmp = tempfile::tempdir()?;
    let export = tmp.path().join("slack-export.zip");
    let bytes = generate(&export, messages)?;
    let data = tmp.path().join("data");
    let slack = timed_import("slack", &export, &data, &[])?;
    let (events, seconds, importer_peak) = (slack.events, slack.seconds, slack.peak);
    let import_per_second = events / seconds.max(1e-9);
    let server = ChildServer::start(&data)?;
    server.wait_indexed()?;
    let serving = server.resident_bytes()?;
    server.stop()?;
    let zulip = zulip_round(tmp.path(), &data)?;
    let row =
        |case: String, value: f64, unit: &str, baseline: f64, label: &str, higher: bool| Row {
            scenario: "import".into(),
            case,
            value,
            unit: unit.into(),
            p50_ms: None,
            p99_ms: None,
            baseline: Some(baseline),
            baseline_label: label.into(),
            ratio: Some(value / baseline.max(1e-9)),
            higher_is_better: higher,
            samples: messages,
            errors: 0,
        };
    let mb = |b: u64| b as f64 / 1e6;
    Ok(vec![
        row(
            format!(
                "{messages} messages of a generated Slack export ({:.0} MB zip, {}): chronicle import-from slack, wall time",
                mb(bytes),
                super::corpus::source()
            ),
            seconds,
            "s",
            if quick { 60.0 * messages as f64 / 1e6 } else { 60.0 },
            "the goal: 1M messages in 60 s",
            false,
        ),
        row(
            format!("import rate, {events:.0} events written"),
            import_per_second,
            "events/s",
            slack.replay_per_second / 2.0,
            "half of chronicle replay of the result, same run",
            true,
        ),
        row(
            "importer's peak resident memory".into(),
            mb(importer_peak),
            "MB",
            mb(serving) * 1.5,
            "1.5 x chronicle serve serving the result",
            false,
        ),
        row(
            format!(
                "the same organization as a Zulip export ({:.0} MB tar.gz, written by chronicle export-to zulip): chronicle import-from zulip, wall time",
                mb(zulip.bytes)
            ),
            zulip.import.seconds,
            "s",
            if quick { 60.0 * messages as f64 / 1e6 } else { 60.0 },
            "the goal: 1M messages in 60 s",
            false,
        ),
        row(
            format!("Zulip import rate, {:.0} events written", zulip.import.events),
            zulip.import.events / zulip.import.seconds.max(1e-9),
            "events/s",
            zulip.import.replay_per_second / 2.0,
            "half of chronicle replay of the result, same run",
            true,
        ),
        row(
            "Zulip importer's peak resident memory".into(),
            mb(zulip.import.peak),
            "MB",
            mb(serving) * 1.5,
            "1.5 x chronicle serve serving the Slack import's result",
            false,
        ),
        row(
            format!(
                "chronicle export-to zulip of that organization ({:.0} s): peak resident memory",
                zulip.export_seconds
            ),
            mb(zulip.export_peak),
            "MB",
            mb(serving) * 1.5,
            "1.5 x chronicle serve serving the Slack import's result",
            false,
        ),
    ])
}

/// What one `chronicle import-from` measured.
struct Imported {
    seconds: f64,
    /// Events in the log it wrote.
    events: f64,
    /// `chronicle replay` of that log, events per second.
    replay_per_second: f64,
    /// Peak resident memory, bytes.
    peak: u64,
}

/// Runs `chronicle import-from SOURCE EXPORT --data-dir DATA EXTRA...`, timed and measured,
/// then replays what it wrote.
fn timed_import(
    source: &str,
    export: &Path,
    data: &Path,
    extra: &[&str],
) -> Result<Imported, Fatal> {
    let started = Instant::now();
    let (ok, peak) = run_measured(
        server_command()?
            .args(["import-from", source])
            .arg(export)
            .arg("--data-dir")
            .arg(data)
            .args(extra),
    )?;
    let seconds = started.elapsed().as_secs_f64();
    if !ok {
        return Err(format!(
            "chronicle import-from {source} failed on {}",
            export.display()
        )
        .into());
    }
    let (events, replay_seconds) = super::scenarios::replay_of(data)?;
    Ok(Imported {
        seconds,
        events,
        replay_per_second: events / replay_seconds.max(1e-9),
        peak,
    })
}

/// What the Zulip round measured: the export's size and the exporter's peak memory, and the
/// import of it.
struct ZulipRound {
    bytes: u64,
    export_seconds: f64,
    export_peak: u64,
    import: Imported,
}

/// Exports the organization in `data` to a Zulip tarball and imports it into a new directory,
/// timing both.
fn zulip_round(tmp: &Path, data: &Path) -> Result<ZulipRound, Fatal> {
    let tarball = tmp.join("zulip-export.tar.gz");
    let started = Instant::now();
    let (exported, export_peak) = run_measured(
        server_command()?
            .args(["export-to", "zulip", "--data-dir"])
            .arg(data)
            .arg("--out")
            .arg(&tarball),
    )?;
    let export_seconds = started.elapsed().as_secs_f64();
    if !exported {
        return Err("chronicle export-to zulip failed on the imported organization".into());
    }
    let bytes = std::fs::metadata(&tarball)?.len();
    // A million messages' copies compress better than ten to one: the export is our own, so
    // trusted past Zulip's 1 GiB rule, as its operator would (the refusal names the option).
    let import = timed_import(
        "zulip",
        &tarball,
        &tmp.join("data-from-zulip"),
        &["--max-expanded-gib", "64"],
    )?;
    std::fs::remove_file(&tarball)?;
    Ok(ZulipRound {
        bytes,
        export_seconds,
        export_peak,
        import,
    })
}

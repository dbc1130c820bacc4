//! Projection snapshots: the whole state as of one event, so a start loads the newest valid
//! snapshot and replays only the tail of the log.
//!
//! A snapshot is `DIR/snapshots/{seq:020}.snap`:
//! `MAGIC ‖ seq (u64 BE) ‖ SHA-256 of the log record at seq ‖ the state's digest (64 hex bytes)
//! ‖ SHA-256 of the payload ‖ payload`, where the payload is the projections as msgpack with
//! structs as arrays (field names are not repeated per message; `snap2`. A `snap1` file, which
//! named every field, is ignored like any snapshot that fails a check: the next start replays
//! the log and writes new ones. So is a snapshot from a build without a projection area this one
//! has: its recorded digest differs).
//! Loading checks, in order: the magic, the payload's hash (a torn or flipped file), that the
//! log's record at `seq` is the one the snapshot was taken after (a snapshot of another log, or
//! of a log since restored from an older backup, is not used), and, once decoded, that the
//! state's digest is the recorded one (a snapshot written by a build whose fold differs is not
//! used). A snapshot that fails any check is reported and ignored: the log is the truth, and a
//! full replay is always possible.

use crate::events::{record_hash, RecordHash};
use crate::ids::Seq;
use crate::projections::Projections;
use crate::store::EventLog;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 16] = b"chronicle-snap2\n";
const HEADER: usize = 16 + 8 + 32 + 64 + 32;

/// Why a snapshot was not used.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a Chronicle snapshot")]
    NotASnapshot,
    #[error("its contents do not match their hash (a torn or damaged file)")]
    Damaged,
    #[error("the log has no record {0}")]
    MissingRecord(u64),
    #[error("it was not taken from this log (record {0} differs)")]
    OtherLog(u64),
    #[error("cannot decode its state: {0}")]
    Decode(String),
    #[error(
        "its state's digest is not the recorded one (taken by a build that folds differently)"
    )]
    Digest,
    #[error("the log cannot be read: {0}")]
    Log(String),
}

/// Where the snapshots of a data directory live.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("snapshots")
}

fn file_name(seq: Seq) -> String {
    format!("{:020}.snap", seq.0)
}

/// The log record a snapshot is tied to.
fn record_at(log: &dyn EventLog, seq: Seq) -> Result<Vec<u8>, SnapshotError> {
    match log.scan_from(seq).next() {
        Some(Ok((found, record))) if found == seq => Ok(record.to_vec()),
        Some(Err(e)) => Err(SnapshotError::Log(e.to_string())),
        _ => Err(SnapshotError::MissingRecord(seq.0)),
    }
}

/// Writes a snapshot of `state` (its seq must be in `log`) atomically: a temporary file, synced,
/// then renamed. Keeps the newest `keep` snapshots and removes older ones. Returns the path.
pub fn write(
    data_dir: &Path,
    log: &dyn EventLog,
    state: &Projections,
    keep: usize,
) -> Result<PathBuf, SnapshotError> {
    use std::io::{Seek, Write};
    let link: RecordHash = record_hash(&record_at(log, state.seq)?);
    let digest = state.digest();
    let dir = dir(data_dir);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(file_name(state.seq));
    // A name of its own, so that two writers of the same seq never share a half-written file.
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
    {
        // The payload is streamed to the file and hashed on the way, so writing a snapshot
        // holds no second copy of the state in memory; the header, which carries the
        // payload's hash, is written last, over the placeholder at the start.
        let mut out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        out.write_all(&[0u8; HEADER])?;
        let mut hashing = crate::projections::HashingWriter::new(out);
        rmp_serde::encode::write(&mut hashing, state)
            .map_err(|e| SnapshotError::Decode(e.to_string()))?;
        let (out, payload_hash) = hashing.into_parts();
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&state.seq.0.to_be_bytes());
        header.extend_from_slice(&link);
        header.extend_from_slice(digest.as_bytes());
        header.extend_from_slice(&payload_hash);
        file.seek(std::io::SeekFrom::Start(0))?;
        file.write_all(&header)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, &path)?;
    let mut all = list(data_dir);
    all.sort();
    if all.len() > keep {
        for (_, old) in &all[..all.len() - keep] {
            let _ = std::fs::remove_file(old);
        }
    }
    Ok(path)
}

/// The snapshots of a data directory, as (seq, path), oldest first.
pub fn list(data_dir: &Path) -> Vec<(Seq, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir(data_dir)) else {
        return Vec::new();
    };
    let mut all: Vec<(Seq, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            let name = path.file_name()?.to_str()?;
            let seq = name.strip_suffix(".snap")?.parse::<u64>().ok()?;
            Some((Seq(seq), path))
        })
        .collect();
    all.sort();
    all
}

/// A snapshot's fixed-size header.
struct Header {
    seq: Seq,
    link: [u8; 32],
    digest: String,
    payload_hash: [u8; 32],
}

fn parse_header(bytes: &[u8]) -> Option<Header> {
    if bytes.len() < HEADER || &bytes[..16] != MAGIC {
        return None;
    }
    Some(Header {
        seq: Seq(u64::from_be_bytes(bytes[16..24].try_into().ok()?)),
        link: bytes[24..56].try_into().ok()?,
        digest: String::from_utf8(bytes[56..120].to_vec()).ok()?,
        payload_hash: bytes[120..152].try_into().ok()?,
    })
}

/// Reads and checks one snapshot against `log`.
pub fn load(path: &Path, log: &dyn EventLog) -> Result<Projections, SnapshotError> {
    let started = std::time::Instant::now();
    let bytes = std::fs::read(path)?;
    let header = parse_header(&bytes).ok_or(SnapshotError::NotASnapshot)?;
    let payload = &bytes[HEADER..];
    if record_hash(&record_at(log, header.seq)?) != header.link {
        return Err(SnapshotError::OtherLog(header.seq.0));
    }
    // The payload's hash is checked on a second thread while it is decoded; a decoded state
    // is used only once the hash matched.
    let (intact, decoded) = std::thread::scope(|scope| {
        let hashing = scope.spawn(|| Sha256::digest(payload).as_slice() == header.payload_hash);
        let decoded = Projections::decode_snapshot(payload);
        (hashing.join().unwrap_or(false), decoded)
    });
    if !intact {
        return Err(SnapshotError::Damaged);
    }
    let mut state = decoded.map_err(|e| SnapshotError::Decode(e.to_string()))?;
    let decoded_in = started.elapsed().as_secs_f64();
    let digest = state.restore_derived_and_digest();
    tracing::info!(
        seq = header.seq.0,
        bytes = bytes.len(),
        read_and_decode_seconds = decoded_in,
        digest_seconds = started.elapsed().as_secs_f64() - decoded_in,
        "snapshot loaded"
    );
    if state.seq != header.seq || digest != header.digest {
        return Err(SnapshotError::Digest);
    }
    Ok(state)
}

/// The newest snapshot of `data_dir` that passes every check, at or before `until` (the whole
/// log when `None`); the ones that fail are reported through `reject`.
pub fn newest_valid(
    data_dir: &Path,
    log: &dyn EventLog,
    until: Option<Seq>,
    mut reject: impl FnMut(&Path, &SnapshotError),
) -> Option<Projections> {
    for (seq, path) in list(data_dir).into_iter().rev() {
        if until.is_some_and(|u| seq > u) {
            continue;
        }
        match load(&path, log) {
            Ok(state) => return Some(state),
            Err(error) => reject(&path, &error),
        }
    }
    None
}

/// The recorded digest of a snapshot file (for `replay --verify`), from its header alone.
pub fn recorded_digest(path: &Path) -> Option<(Seq, String)> {
    use std::io::Read;
    let mut header = [0u8; HEADER];
    std::fs::File::open(path)
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    parse_header(&header).map(|h| (h.seq, h.digest))
}

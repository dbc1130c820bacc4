//! Projection snapshots: the whole state as of one event, so a start loads the newest valid
//! snapshot and replays only the tail of the log.
//!
//! A snapshot is `DIR/snapshots/{seq:020}.snap`:
//! `MAGIC ‖ seq (u64 BE) ‖ SHA-256 of the log record at seq ‖ the state's digest (64 hex bytes,
//! or 64 `-` when it was not computed)
//! ‖ SHA-256 of the payload ‖ the writing executable's identity (32 bytes) ‖ payload`, where
//! the payload is the projections as msgpack with structs as arrays (field names are not
//! repeated per message), in sections: the state without its messages, the messages in parts,
//! and a table of the sections' lengths (`Projections::encode_snapshot`), so that a start
//! decodes the parts on every core. That is `snap5`. A `snap4` file is the same, but a message
//! without a stored rendering there has its content as one paragraph, where `snap5` rebuilds
//! plain prose of several lines too (`message::rebuilt_rendering`): such renderings are stored
//! once it is decoded. A `snap3` file has the same header and the payload as one msgpack
//! value, and a `snap2` file is a `snap3` without the identity. A
//! `snap1` file, which named every field, is ignored like any snapshot that fails a check: the
//! next start replays the log and writes new ones. So is a snapshot from a build without a
//! projection area this one has: its recorded digest differs.
//! Loading checks, in order: the magic, the payload's hash (a torn or flipped file), that the
//! log's record at `seq` is the one the snapshot was taken after (a snapshot of another log, or
//! of a log since restored from an older backup, is not used), and, once decoded, that the
//! state's digest is the recorded one (a snapshot written by a build whose fold differs is not
//! used). The digest, a hash of the whole state's JSON (a third of a start from a snapshot), is
//! recomputed only for a snapshot another executable wrote: one this executable wrote, with its
//! payload's hash intact, decodes to the state it encoded (a property test checks the round
//! trip: `model_tests::incremental_fold_equals_replay_and_snapshot`). A snapshot that fails any
//! check is reported and ignored: the log is the truth, and a full replay is always possible.
//!
//! Since computing the digest costs more than encoding the state (16 s of a core at nine
//! million messages, against a write rate that shares two cores), the periodic snapshots a
//! single server writes carry none ([`StateDigest::Skipped`]): only this executable uses them. The
//! snapshot written at a clean stop, which an upgrade starts from, and the ones a cluster
//! shares with nodes running other copies of the executable carry it.

use crate::events::{record_hash, RecordHash};
use crate::ids::Seq;
use crate::projections::{Projections, Unreadable};
use crate::store::EventLog;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 16] = b"chronicle-snap5\n";
const MAGIC_4: &[u8; 16] = b"chronicle-snap4\n";
const MAGIC_3: &[u8; 16] = b"chronicle-snap3\n";
const MAGIC_2: &[u8; 16] = b"chronicle-snap2\n";
/// A `snap2` header; `snap3` and later add the writer's identity.
const HEADER_2: usize = 16 + 8 + 32 + 64 + 32;
const HEADER: usize = HEADER_2 + 32;

/// The running executable's identity: a hash of its file's device, inode, size and change
/// time, which every build and every install changes. Read once, from `/proc/self/exe` (the
/// file running, even if it has since been replaced); zeros where that cannot be read, which
/// no snapshot trusts.
pub fn build_identity() -> [u8; 32] {
    static IDENTITY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    *IDENTITY.get_or_init(|| {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata("/proc/self/exe") else {
            return [0; 32];
        };
        let mut hasher = Sha256::new();
        for part in [
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.ctime() as u64,
            meta.ctime_nsec() as u64,
            meta.mtime() as u64,
            meta.mtime_nsec() as u64,
        ] {
            hasher.update(part.to_be_bytes());
        }
        hasher.finalize().into()
    })
}

/// Whether a snapshot records its state's digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateDigest {
    /// Computed and recorded: any executable can check the snapshot and use it.
    Recorded,
    /// Not computed: only the executable that wrote it uses it.
    Skipped,
}

/// The header's digest field of a snapshot that records none.
const NO_DIGEST: [u8; 64] = [b'-'; 64];

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
    #[error(
        "another executable wrote it without its state's digest, so its fold cannot be checked"
    )]
    NoDigest,
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
/// then renamed, with the state's digest or without ([`StateDigest`]). Keeps the newest `keep`
/// snapshots and removes older ones. Returns the path.
pub fn write(
    data_dir: &Path,
    log: &dyn EventLog,
    state: &Projections,
    keep: usize,
    digest: StateDigest,
) -> Result<PathBuf, SnapshotError> {
    use std::io::{Seek, Write};
    let link: RecordHash = record_hash(&record_at(log, state.seq)?);
    let digest: Vec<u8> = match digest {
        StateDigest::Recorded => state.digest().into_bytes(),
        StateDigest::Skipped => NO_DIGEST.to_vec(),
    };
    let dir = dir(data_dir);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(file_name(state.seq));
    // A name of its own, so that two writers of the same seq never share a half-written file.
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
    {
        // The payload is streamed to the file and hashed on the way, so writing a snapshot
        // holds no second copy of the state in memory; the header, which carries the
        // payload's hash, is written last, over the placeholder at the start.
        let mut out = std::io::BufWriter::new(Paced::new(std::fs::File::create(&tmp)?));
        out.write_all(&[0u8; HEADER])?;
        let payload_hash = state
            .encode_snapshot(&mut out)
            .map_err(|e| SnapshotError::Decode(e.to_string()))?;
        let mut file = out.into_inner().map_err(|e| e.into_error())?.file;
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&state.seq.0.to_be_bytes());
        header.extend_from_slice(&link);
        header.extend_from_slice(&digest);
        header.extend_from_slice(&payload_hash);
        header.extend_from_slice(&build_identity());
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

/// A file written out to the disk as it is written, a few megabytes behind, instead of all at
/// the end. A snapshot at ten million messages is 1.9 GB, which the page cache of a large
/// machine holds whole (the kernel starts writing back at a tenth of memory, or after 30 s);
/// the final sync then queued it all on the disk at once, and the log's flushes, which every
/// send waits for, queued behind it for seconds. PostgreSQL paces its checkpoints the same way
/// (`checkpoint_flush_after`). A failure here only loses the pacing: the final `sync_all`
/// reports the file's errors.
struct Paced {
    file: std::fs::File,
    /// Bytes written, and the ends of what was handed to the disk and what it has finished.
    written: u64,
    started: u64,
    finished: u64,
}

/// How much is written between two hand-overs: at most twice this is waiting for the disk.
const PACE_BYTES: u64 = 8 << 20;

impl Paced {
    fn new(file: std::fs::File) -> Paced {
        Paced {
            file,
            written: 0,
            started: 0,
            finished: 0,
        }
    }

    /// Starts writing out what was written since the last call and waits for the part before
    /// it (which had a whole pace to get there).
    fn pace(&mut self) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let fd = self.file.as_raw_fd();
            let span = |from: u64, to: u64| (from as libc::off64_t, (to - from) as libc::off64_t);
            let (from, len) = span(self.started, self.written);
            // SAFETY: sync_file_range only reads the descriptor of a file this value owns.
            unsafe {
                libc::sync_file_range(fd, from, len, libc::SYNC_FILE_RANGE_WRITE);
            }
            if self.started > self.finished {
                let (from, len) = span(self.finished, self.started);
                // SAFETY: as above.
                unsafe {
                    libc::sync_file_range(
                        fd,
                        from,
                        len,
                        libc::SYNC_FILE_RANGE_WAIT_BEFORE
                            | libc::SYNC_FILE_RANGE_WRITE
                            | libc::SYNC_FILE_RANGE_WAIT_AFTER,
                    );
                }
            }
        }
        self.finished = self.started;
        self.started = self.written;
    }
}

impl std::io::Write for Paced {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= PACE_BYTES {
            self.pace();
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
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
    /// `None` when the writer skipped it.
    digest: Option<String>,
    payload_hash: [u8; 32],
    /// The identity of the executable that wrote it (`snap3` and later).
    writer: Option<[u8; 32]>,
    /// Where the payload starts.
    len: usize,
    /// The payload is in sections (`snap4` and `snap5`: `Projections::encode_snapshot`), else
    /// one value.
    sections: bool,
    /// A message without a stored rendering has its content as one paragraph (before
    /// `snap5`), where `snap5` rebuilds plain prose of several lines too.
    paragraph_rule: bool,
}

fn parse_header(bytes: &[u8]) -> Option<Header> {
    let identity = || bytes.get(HEADER_2..HEADER)?.try_into().ok();
    let (len, writer, sections) = match bytes.get(..16)? {
        magic if magic == MAGIC || magic == MAGIC_4 => (HEADER, Some(identity()?), true),
        magic if magic == MAGIC_3 => (HEADER, Some(identity()?), false),
        magic if magic == MAGIC_2 => (HEADER_2, None, false),
        _ => return None,
    };
    let paragraph_rule = bytes.get(..16)? != MAGIC;
    Some(Header {
        seq: Seq(u64::from_be_bytes(bytes.get(16..24)?.try_into().ok()?)),
        link: bytes.get(24..56)?.try_into().ok()?,
        digest: match bytes.get(56..120)? {
            field if field == NO_DIGEST => None,
            field => Some(String::from_utf8(field.to_vec()).ok()?),
        },
        payload_hash: bytes.get(120..152)?.try_into().ok()?,
        writer,
        len,
        sections,
        paragraph_rule,
    })
}

/// Reads and checks one snapshot against `log`.
pub fn load(path: &Path, log: &dyn EventLog) -> Result<Projections, SnapshotError> {
    let started = std::time::Instant::now();
    let bytes = Mapped::open(path)?;
    let header = parse_header(&bytes).ok_or(SnapshotError::NotASnapshot)?;
    let payload = &bytes[header.len..];
    if record_hash(&record_at(log, header.seq)?) != header.link {
        return Err(SnapshotError::OtherLog(header.seq.0));
    }
    let own = header.writer == Some(build_identity()) && build_identity() != [0; 32];
    if !own && header.digest.is_none() {
        return Err(SnapshotError::NoDigest);
    }
    let mut state = if header.sections {
        // Each section is checked against its hash by the thread that decodes it.
        Projections::decode_snapshot(payload, &header.payload_hash).map_err(|e| match e {
            Unreadable::Damaged => SnapshotError::Damaged,
            Unreadable::Undecodable(e) => SnapshotError::Decode(e),
        })?
    } else {
        // The payload's hash is checked on a second thread while it is decoded; a decoded
        // state is used only once the hash matched.
        let (intact, decoded) = std::thread::scope(|scope| {
            let hashing = scope.spawn(|| Sha256::digest(payload).as_slice() == header.payload_hash);
            let decoded = Projections::decode_snapshot_whole(payload);
            (hashing.join().unwrap_or(false), decoded)
        });
        if !intact {
            return Err(SnapshotError::Damaged);
        }
        decoded.map_err(|e| SnapshotError::Decode(e.to_string()))?
    };
    if header.paragraph_rule {
        state.messages.keep_paragraph_renderings();
    }
    let decoded_in = started.elapsed().as_secs_f64();
    let digest = if own {
        state.restore_derived();
        None
    } else {
        Some(state.restore_derived_and_digest())
    };
    tracing::info!(
        seq = header.seq.0,
        bytes = bytes.len(),
        read_and_decode_seconds = decoded_in,
        digest_seconds = started.elapsed().as_secs_f64() - decoded_in,
        digest_checked = digest.is_some(),
        "snapshot loaded"
    );
    if state.seq != header.seq || digest.is_some_and(|d| Some(d) != header.digest) {
        return Err(SnapshotError::Digest);
    }
    Ok(state)
}

/// A snapshot file's bytes, mapped into memory read-only: decoding reads the page cache
/// directly, on every thread at once, where reading the file first copied it whole (a second
/// or more at ten million messages) before decoding could begin.
struct Mapped {
    at: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value; shared references to its bytes are
// as safe to send and share as a `&[u8]`.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    fn open(path: &Path) -> std::io::Result<Mapped> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path)?;
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| std::io::Error::other("too large to map"))?;
        if len == 0 {
            // An empty file has no header: it fails the check that follows.
            return Ok(Mapped {
                at: std::ptr::null_mut(),
                len,
            });
        }
        // SAFETY: a fresh private read-only mapping of a file we opened; the kernel checks the
        // arguments. A snapshot file is never written in place (a snapshot is written under a
        // temporary name, synced and renamed), so its bytes do not change while mapped.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapped { at, len })
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.at.is_null() {
            return &[];
        }
        // SAFETY: `at` maps `len` readable bytes for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.at.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if !self.at.is_null() {
            // SAFETY: unmaps exactly the mapping `open` made; no reference to it outlives self.
            unsafe {
                libc::munmap(self.at, self.len);
            }
        }
    }
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

/// The recorded digest of a snapshot file (for `replay --verify`), from its header alone;
/// `None` for a snapshot that records none.
pub fn recorded_digest(path: &Path) -> Option<(Seq, String)> {
    use std::io::Read;
    let mut header = [0u8; HEADER];
    std::fs::File::open(path)
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    parse_header(&header).and_then(|h| Some((h.seq, h.digest?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::faulty::FaultyLog;
    use std::sync::Arc;

    #[test]
    fn a_paced_file_holds_every_byte_written_across_its_hand_overs() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paced");
        let bytes: Vec<u8> = (0..(3 * PACE_BYTES + 12_345))
            .map(|i| (i % 251) as u8)
            .collect();
        let mut out = std::io::BufWriter::new(Paced::new(std::fs::File::create(&path).unwrap()));
        for part in bytes.chunks(100_003) {
            out.write_all(part).unwrap();
        }
        let paced = out.into_inner().map_err(|e| e.into_error()).unwrap();
        // Handed over at least twice, and the part before the last waited for.
        assert!(paced.started >= 2 * PACE_BYTES, "{}", paced.started);
        assert!(paced.finished >= PACE_BYTES && paced.finished < paced.started);
        paced.file.sync_all().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }

    /// A state of a few events in a log of its own, and its snapshot.
    fn snapshot() -> (tempfile::TempDir, Arc<FaultyLog>, Projections, PathBuf) {
        let log = Arc::new(FaultyLog::new());
        let engine = crate::engine::Engine::start(log.clone(), Projections::default()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(engine.execute(None, |s, _| {
                crate::commands::users::create_realm(
                    s,
                    "Org",
                    "",
                    crate::commands::users::NewUser {
                        email: "owner@example.com".into(),
                        full_name: "Owner".into(),
                        role: crate::events::Role::Owner,
                        password_hash: None,
                        api_key_nonce: "n".into(),
                    },
                )
            }))
            .unwrap();
        let state = engine.read(|s| s.clone_without_word_index());
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), log.as_ref(), &state, 2, StateDigest::Recorded).unwrap();
        (dir, log, state, path)
    }

    fn rewrite(path: &Path, at: std::ops::Range<usize>, with: &[u8]) {
        let mut bytes = std::fs::read(path).unwrap();
        bytes[at].copy_from_slice(with);
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn a_snapshot_of_this_executable_loads_without_recomputing_its_digest() {
        let (_dir, log, state, path) = snapshot();
        assert_eq!(load(&path, log.as_ref()).unwrap().dump(), state.dump());
        // A wrong recorded digest goes unnoticed: this executable's own snapshot is not
        // checked against it (its payload's hash is).
        rewrite(&path, 56..120, &[b'0'; 64]);
        assert_eq!(load(&path, log.as_ref()).unwrap().dump(), state.dump());
    }

    #[test]
    fn a_snapshot_of_another_executable_is_used_only_if_its_digest_matches() {
        let (_dir, log, state, path) = snapshot();
        rewrite(&path, HEADER_2..HEADER, &[7; 32]);
        assert_eq!(load(&path, log.as_ref()).unwrap().dump(), state.dump());
        rewrite(&path, 56..120, &[b'0'; 64]);
        assert!(matches!(
            load(&path, log.as_ref()),
            Err(SnapshotError::Digest)
        ));
    }

    #[test]
    fn a_snapshot_without_its_digest_is_used_by_its_own_executable_only() {
        let (dir, log, state, recorded) = snapshot();
        std::fs::remove_file(&recorded).unwrap();
        let path = write(dir.path(), log.as_ref(), &state, 2, StateDigest::Skipped).unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[56..120], &NO_DIGEST);
        assert_eq!(recorded_digest(&path), None);
        assert_eq!(load(&path, log.as_ref()).unwrap().dump(), state.dump());
        rewrite(&path, HEADER_2..HEADER, &[7; 32]);
        assert!(matches!(
            load(&path, log.as_ref()),
            Err(SnapshotError::NoDigest)
        ));
        assert_eq!(
            newest_valid(dir.path(), log.as_ref(), None, |_, _| {}).map(|s| s.seq),
            None
        );
    }

    /// Rewrites a snapshot as the older builds wrote it: `magic`, the header up to the
    /// payload's hash, then (for `snap3`) the identity, and the state as one msgpack value.
    fn rewrite_whole(path: &Path, state: &Projections, magic: &[u8; 16]) -> Vec<u8> {
        let bytes = std::fs::read(path).unwrap();
        let payload = rmp_serde::to_vec(state).unwrap();
        let mut old = magic.to_vec();
        old.extend_from_slice(&bytes[16..120]);
        old.extend_from_slice(&Sha256::digest(&payload));
        if magic == MAGIC_3 {
            old.extend_from_slice(&bytes[HEADER_2..HEADER]);
        }
        old.extend_from_slice(&payload);
        std::fs::write(path, &old).unwrap();
        old
    }

    #[test]
    fn a_snap4_file_is_read() {
        let (_dir, log, state, path) = snapshot();
        rewrite(&path, 0..16, MAGIC_4);
        assert!(parse_header(&std::fs::read(&path).unwrap()).is_some_and(|h| h.paragraph_rule));
        assert_eq!(load(&path, log.as_ref()).unwrap().dump(), state.dump());
    }

    #[test]
    fn a_snap3_file_is_read_whole() {
        let (_dir, log, state, path) = snapshot();
        rewrite_whole(&path, &state, MAGIC_3);
        assert_eq!(load(&path, log.as_ref()).unwrap().dump(), state.dump());
    }

    #[test]
    fn a_flipped_byte_in_any_section_or_the_table_is_damage() {
        let (_dir, log, state, path) = snapshot();
        let written = std::fs::read(&path).unwrap();
        let mut payload = Vec::new();
        let hash = state.encode_snapshot(&mut payload).unwrap();
        assert_eq!(
            &written[HEADER..],
            &payload[..],
            "the same bytes as written"
        );
        assert_eq!(&written[120..152], &hash);
        // The state's section, the table, the count of sections.
        for at in [HEADER + 3, written.len() - 10, written.len() - 1] {
            let mut bytes = written.clone();
            bytes[at] ^= 0x40;
            std::fs::write(&path, &bytes).unwrap();
            assert!(
                matches!(load(&path, log.as_ref()), Err(SnapshotError::Damaged)),
                "byte {at} flipped"
            );
        }
        std::fs::write(&path, &written[..written.len() - 2]).unwrap();
        assert!(matches!(
            load(&path, log.as_ref()),
            Err(SnapshotError::Damaged)
        ));
        std::fs::write(&path, &written).unwrap();
        assert_eq!(load(&path, log.as_ref()).unwrap().dump(), state.dump());
    }

    #[test]
    fn a_snap2_file_is_read_and_its_digest_checked() {
        let (_dir, log, state, path) = snapshot();
        let mut old = rewrite_whole(&path, &state, MAGIC_2);
        assert_eq!(load(&path, log.as_ref()).unwrap().dump(), state.dump());
        assert_eq!(recorded_digest(&path).unwrap().1, state.digest());
        old[60] ^= 1;
        std::fs::write(&path, &old).unwrap();
        assert!(matches!(
            load(&path, log.as_ref()),
            Err(SnapshotError::Digest)
        ));
    }
}

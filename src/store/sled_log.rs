//! The sled backend: records in frames of consecutive records (`frames`: first seq → frame, see
//! [`super::frame`] and ADR 0007), after the records of logs written before frames
//! (`events`: seq → record, read first and never appended to again), and a quarantine tree.

use super::frame::{self, FrameBuf};
use super::space::is_no_space;
use super::{EventLog, RecordIter, StoreError};
use crate::ids::Seq;
use bytes::Bytes;
use sled::Transactional;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// Where the records of `events` end: its keys are 8-byte seqs, and [`FRAMES_MARK`] sorts after
/// every one of them.
const LAST_SINGLE: [u8; 8] = [0xff; 8];

/// Put in `events` before the first frame is written, where builds before frames would read
/// on from their last record: its key is no seq, so they stop with an error instead of taking
/// the log for empty (and creating a new organization on top of it).
const FRAMES_MARK: &[u8] = b"\xff\xff\xff\xff\xff\xff\xff\xffframes";
const FRAMES_MARK_VALUE: &[u8] =
    b"the records after these are in the frames tree (ADR 0007): a build before frames cannot read this log";

/// The embedded default log.
pub struct SledLog {
    dir: std::path::PathBuf,
    /// The open database. sled refuses all work after an I/O error until it is opened again,
    /// which [`EventLog::recover`] does: `None` only while it does.
    trees: RwLock<Option<Arc<Trees>>>,
    /// The log's end as this process last wrote or read it.
    tail: Mutex<Tail>,
    /// Whether `events` holds [`FRAMES_MARK`].
    marked: std::sync::atomic::AtomicBool,
}

/// The database and its trees.
struct Trees {
    db: sled::Db,
    /// One record per key, as logs were written before frames.
    singles: sled::Tree,
    frames: sled::Tree,
    quarantine: sled::Tree,
}

/// The newest frame, which an append extends while it is small, and the last stored seq.
#[derive(Default)]
struct Tail {
    frame: Option<FrameBuf>,
    last: Option<Seq>,
}

fn io(e: sled::Error) -> StoreError {
    match &e {
        sled::Error::Io(cause) if is_no_space(cause) => StoreError::NoSpace(e.to_string()),
        _ => StoreError::Io(e.to_string()),
    }
}

fn lock(tail: &Mutex<Tail>) -> MutexGuard<'_, Tail> {
    // A panic while the lock was held leaves at worst a stale tail; `reload_tail` renews it.
    tail.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes the snapshot files sled began and never finished (`snap.N.generating`). sled 0.34
/// counts them among its snapshots and, as their names sort last, reads one as the newest: an
/// empty one, which a snapshot written on a full disk leaves behind, makes it refuse to open
/// ("Read corrupted data"). A finished snapshot is renamed away from `.generating`, so one
/// still named so holds nothing sled's log and its older snapshot do not.
fn remove_unfinished_sled_snapshots(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => tracing::warn!(file = %name, "removed a snapshot sled never finished"),
                Err(error) => {
                    tracing::warn!(file = %name, %error, "an unfinished sled snapshot was not removed")
                }
            }
        }
    }
}

impl Trees {
    /// Opens the database in `dir`, waiting a little for a lock this process let go of.
    fn open(dir: &Path) -> Result<Trees, StoreError> {
        remove_unfinished_sled_snapshots(dir);
        let locked = |e: &sled::Error| {
            matches!(e, sled::Error::Io(io_err)
                if io_err.kind() == std::io::ErrorKind::WouldBlock
                    || io_err.to_string().contains("could not acquire lock"))
        };
        let open = || {
            sled::Config::new()
                .path(dir)
                // Durability comes from our explicit flush per batch, not from a timer.
                .flush_every_ms(None)
                // The log is read once, at start-up, and appended to after: sled's page cache
                // (1 GiB by default) would only hold pages nobody reads again.
                .cache_capacity(LOG_CACHE_BYTES)
                .open()
        };
        // A log closed by this process a moment ago can keep its lock until sled's background
        // work lets go of it; wait a little before calling the directory busy.
        let mut attempt = open();
        for _ in 0..50 {
            match &attempt {
                Err(e) if locked(e) => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    attempt = open();
                }
                _ => break,
            }
        }
        let db = attempt.map_err(|e| {
            if locked(&e) {
                StoreError::Io(format!(
                    "{} is in use by another process (is the server running?)",
                    dir.display()
                ))
            } else {
                io(e)
            }
        })?;
        Ok(Trees {
            singles: db.open_tree("events").map_err(io)?,
            frames: db.open_tree("frames").map_err(io)?,
            quarantine: db.open_tree("quarantine").map_err(io)?,
            db,
        })
    }
}

/// sled's page cache for the log.
const LOG_CACHE_BYTES: u64 = 64 * 1024 * 1024;

impl SledLog {
    /// Opens (or creates) the log in `dir`. Fails if another process holds it open.
    pub fn open(dir: &Path) -> Result<SledLog, StoreError> {
        let trees = Trees::open(dir)?;
        let log = SledLog {
            marked: trees.singles.contains_key(FRAMES_MARK).map_err(io)?.into(),
            dir: dir.to_owned(),
            trees: RwLock::new(Some(Arc::new(trees))),
            tail: Mutex::default(),
        };
        log.reload_tail()?;
        Ok(log)
    }

    /// The open database (an error while [`EventLog::recover`] opens it again).
    fn trees(&self) -> Result<Arc<Trees>, StoreError> {
        self.trees
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| StoreError::Io("the log is being opened again".into()))
    }

    /// Reads the log's end from storage again.
    fn reload_tail(&self) -> Result<(), StoreError> {
        let mut tail = lock(&self.tail);
        let frame = match self.trees()?.frames.last().map_err(io)? {
            Some((key, value)) => FrameBuf::reopen(frame_key(&key)?, &value),
            None => None,
        };
        *tail = Tail {
            frame,
            last: self.last_seq()?,
        };
        Ok(())
    }

    /// The frame holding `seq` or, when none does, the first one after it: where a scan from
    /// `seq` begins.
    fn frame_start(&self, seq: Seq) -> Result<[u8; 8], StoreError> {
        let holding = self
            .trees()?
            .frames
            .get_lt(Seq(seq.0.saturating_add(1)).to_key())
            .map_err(io)?;
        Ok(match holding {
            Some((key, value)) => {
                let first = frame_key(&key)?;
                match frame::last_seq(first, &value) {
                    Some(last) if last < seq => seq.to_key(),
                    // Holding it, or damaged (then the scan reports it).
                    _ => first.to_key(),
                }
            }
            None => seq.to_key(),
        })
    }

    /// Writes raw bytes under a seq, bypassing the codec, in place of the record stored there
    /// or as a frame of its own. Only for tests that damage a log.
    #[doc(hidden)]
    pub fn insert_raw_for_tests(&self, seq: Seq, bytes: &[u8]) -> Result<(), StoreError> {
        if self
            .trees()?
            .singles
            .contains_key(seq.to_key())
            .map_err(io)?
        {
            self.trees()?
                .singles
                .insert(seq.to_key(), bytes)
                .map_err(io)?;
            return self.flush();
        }
        let start = self.frame_start(seq)?;
        let holding = match self.trees()?.frames.get(start).map_err(io)? {
            Some(value) => {
                let first = frame_key(&start)?;
                frame::parse(first, &value)
                    .ok()
                    .filter(|records| first <= seq && seq.0 - first.0 < records.len() as u64)
                    .map(|records| (first, value, records))
            }
            None => None,
        };
        let rewritten = match holding {
            Some((first, value, records)) => {
                let mut rewritten: Option<FrameBuf> = None;
                for (n, range) in records.into_iter().enumerate() {
                    let at = Seq(first.0 + n as u64);
                    let record = if at == seq { bytes } else { &value[range] };
                    match &mut rewritten {
                        Some(frame) => frame.push(record),
                        None => rewritten = Some(FrameBuf::starting(at, record)),
                    }
                }
                rewritten
            }
            None => Some(FrameBuf::starting(seq, bytes)),
        };
        if let Some(frame) = rewritten {
            self.trees()?
                .frames
                .insert(frame.key(), frame.bytes())
                .map_err(io)?;
        }
        self.flush()?;
        self.reload_tail()
    }

    /// The records kept aside by tail recovery (a frame that did not parse is kept whole,
    /// under its first seq).
    pub fn quarantined(&self) -> Result<Vec<(Seq, Vec<u8>)>, StoreError> {
        self.trees()?
            .quarantine
            .iter()
            .map(|item| {
                let (k, v) = item.map_err(io)?;
                let seq = Seq::from_key(&k[k.len().saturating_sub(8)..]).unwrap_or(Seq(0));
                Ok((seq, v.to_vec()))
            })
            .collect()
    }

    /// Bytes the database occupies on disk.
    pub fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.trees()?.db.size_on_disk().map_err(io)
    }
}

/// The first seq a frame is stored under.
fn frame_key(key: &[u8]) -> Result<Seq, StoreError> {
    Seq::from_key(key).ok_or_else(|| StoreError::Corrupt {
        seq: 0,
        reason: format!("a frame's key of {} bytes is not a seq", key.len()),
    })
}

/// A scan: the single records from `from` on, then the records of the frames.
struct Scan {
    from: Seq,
    singles: Option<sled::Iter>,
    frames: sled::Iter,
    /// The frame being read, the seq of its next record and the ranges of the rest.
    current: Option<(Bytes, Seq, std::vec::IntoIter<std::ops::Range<usize>>)>,
}

impl Iterator for Scan {
    type Item = Result<(Seq, Bytes), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(singles) = &mut self.singles {
            match singles.next() {
                Some(item) => {
                    return Some(item.map_err(io).and_then(|(k, v)| {
                        let seq = Seq::from_key(&k).ok_or_else(|| StoreError::Corrupt {
                            seq: 0,
                            reason: format!("key of {} bytes is not a seq", k.len()),
                        })?;
                        Ok((seq, Bytes::from_owner(v)))
                    }))
                }
                None => self.singles = None,
            }
        }
        loop {
            if let Some((frame, seq, ranges)) = &mut self.current {
                if let Some(range) = ranges.next() {
                    let at = *seq;
                    *seq = seq.next();
                    if at >= self.from {
                        return Some(Ok((at, frame.slice(range))));
                    }
                    continue;
                }
                self.current = None;
            }
            let (key, value) = match self.frames.next()? {
                Ok(entry) => entry,
                Err(e) => return Some(Err(io(e))),
            };
            let first = match frame_key(&key) {
                Ok(first) => first,
                Err(e) => return Some(Err(e)),
            };
            match frame::parse(first, &value) {
                Ok(ranges) => {
                    self.current = Some((Bytes::from_owner(value), first, ranges.into_iter()))
                }
                // Reported at its first seq: what it held from there on cannot be told apart.
                Err(reason) => {
                    return Some(Err(StoreError::Corrupt {
                        seq: first.0,
                        reason: format!(
                            "the frame of the records from {first} on is damaged: {reason}"
                        ),
                    }))
                }
            }
        }
    }
}

impl EventLog for SledLog {
    fn append_batch(&self, records: &[(Seq, Vec<u8>)]) -> Result<(), StoreError> {
        let Some((first, _)) = records.first() else {
            return Ok(());
        };
        let mut tail = lock(&self.tail);
        if let Some(last) = tail.last.filter(|last| first <= last) {
            return Err(StoreError::Io(format!(
                "refusing to append record {first}: the log already holds records up to {last}"
            )));
        }
        if !self.marked.load(std::sync::atomic::Ordering::SeqCst) {
            self.trees()?
                .singles
                .insert(FRAMES_MARK, FRAMES_MARK_VALUE)
                .map_err(io)?;
            self.marked.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // The newest frame grows while it is small; full frames are stored as they fill.
        let mut open = tail.frame.clone();
        let mut batch = sled::Batch::default();
        for (seq, record) in records {
            match &mut open {
                Some(frame) if frame.takes(*seq, record) => frame.push(record),
                _ => {
                    if let Some(full) = open.replace(FrameBuf::starting(*seq, record)) {
                        batch.insert(&full.key(), full.bytes());
                    }
                }
            }
        }
        if let Some(frame) = &open {
            batch.insert(&frame.key(), frame.bytes());
        }
        // All or nothing: sled applies a batch atomically, rewritten frame included.
        self.trees()?.frames.apply_batch(batch).map_err(io)?;
        tail.last = records.last().map(|(seq, _)| *seq);
        tail.frame = open;
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.trees()?.db.flush().map(|_| ()).map_err(io)
    }

    fn scan_from(&self, from: Seq) -> RecordIter<'_> {
        let start = match self.frame_start(from) {
            Ok(start) => start,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        let trees = match self.trees() {
            Ok(trees) => trees,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        Box::new(Scan {
            from,
            singles: Some(trees.singles.range(from.to_key()..=LAST_SINGLE)),
            frames: trees.frames.range(start..),
            current: None,
        })
    }

    fn last_seq(&self) -> Result<Option<Seq>, StoreError> {
        match self.trees()?.frames.last().map_err(io)? {
            Some((key, value)) => {
                let first = frame_key(&key)?;
                Ok(Some(frame::last_seq(first, &value).unwrap_or(first)))
            }
            None => match self
                .trees()?
                .singles
                .range(..=LAST_SINGLE)
                .next_back()
                .transpose()
                .map_err(io)?
            {
                Some((key, _)) => Ok(Seq::from_key(&key)),
                None => Ok(None),
            },
        }
    }

    fn quarantine_from(&self, from: Seq) -> Result<usize, StoreError> {
        // Quarantine keys are (time of recovery, seq) so that repeated recoveries never
        // overwrite earlier evidence.
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let quarantine_key = |seq: Seq| {
            let mut key = stamp.to_be_bytes().to_vec();
            key.extend_from_slice(&seq.to_key());
            key
        };
        let mut keep = sled::Batch::default();
        let mut drop_singles = sled::Batch::default();
        let mut rewrite_frames = sled::Batch::default();
        let mut moved = 0;
        for item in self.trees()?.singles.range(from.to_key()..=LAST_SINGLE) {
            let (k, v) = item.map_err(io)?;
            let seq = Seq::from_key(&k).unwrap_or(Seq(0));
            keep.insert(quarantine_key(seq), v);
            drop_singles.remove(k);
            moved += 1;
        }
        for item in self.trees()?.frames.range(self.frame_start(from)?..) {
            let (k, v) = item.map_err(io)?;
            let first = frame_key(&k)?;
            match frame::parse(first, &v) {
                Ok(records) => {
                    // The records before `from` stay, in a frame of their own.
                    let mut kept: Option<FrameBuf> = None;
                    for (n, range) in records.into_iter().enumerate() {
                        let seq = Seq(first.0 + n as u64);
                        if seq < from {
                            match &mut kept {
                                Some(frame) => frame.push(&v[range]),
                                None => kept = Some(FrameBuf::starting(seq, &v[range])),
                            }
                        } else {
                            keep.insert(quarantine_key(seq), &v[range]);
                            moved += 1;
                        }
                    }
                    match kept {
                        Some(frame) => rewrite_frames.insert(&frame.key(), frame.bytes()),
                        None => rewrite_frames.remove(k),
                    }
                }
                // Kept whole: which records it held cannot be told.
                Err(_) => {
                    keep.insert(quarantine_key(first), v);
                    rewrite_frames.remove(k);
                    moved += 1;
                }
            }
        }
        self.trees()?.quarantine.apply_batch(keep).map_err(io)?;
        self.flush()?;
        // Both trees at once: a crash in between would leave a gap.
        let trees = self.trees()?;
        let removed = (&trees.singles, &trees.frames)
            .transaction(|(singles, frames)| {
                singles.apply_batch(&drop_singles)?;
                frames.apply_batch(&rewrite_frames)?;
                Ok::<(), sled::transaction::ConflictableTransactionError<()>>(())
            })
            .map_err(|e| StoreError::Io(format!("quarantine: {e:?}")))
            .and_then(|()| self.flush());
        // What the log now ends at, whether or not that worked.
        self.reload_tail()?;
        removed.map(|()| moved)
    }

    fn recovers_in_process(&self) -> bool {
        true
    }

    /// Opens the database once more and lets it go. sled 0.34 records where its data lies (a
    /// snapshot of its page table) only when it opens, and an open reads every segment written
    /// since that record: all that this run wrote, gigabytes after millions of messages (9.7 s
    /// of a start at ten million). Opened again here, it reads them now and records the result,
    /// so the next start reads nothing more. The database is closed after it: its lock is let
    /// go.
    fn close(&self) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        let mut trees = self.trees.write().unwrap_or_else(|p| p.into_inner());
        trees.take();
        Trees::open(&self.dir)?;
        tracing::info!(
            seconds = started.elapsed().as_secs_f64(),
            "log closed: its storage's index is up to date for the next start"
        );
        Ok(())
    }

    fn recover(&self, durable: Seq) -> Result<(), StoreError> {
        // sled keeps the error of a failed write and refuses everything after it until the
        // database is opened again; opening it runs sled's own recovery, which keeps what a
        // flush made durable. Ours is dropped first so that its lock is let go (an iterator
        // still held elsewhere keeps it: then this fails, and the next try succeeds).
        {
            let mut trees = self.trees.write().unwrap_or_else(|p| p.into_inner());
            trees.take();
            *trees = Some(Arc::new(Trees::open(&self.dir)?));
        }
        let last = self.last_seq()?.unwrap_or(Seq(0));
        if last < durable {
            return Err(StoreError::Gap {
                expected: durable.0,
                found: last.0,
            });
        }
        if last > durable {
            let moved = self.quarantine_from(durable.next())?;
            tracing::warn!(
                moved,
                durable = durable.0,
                "records stored after a failed write were never acknowledged: quarantined"
            );
        }
        self.marked.store(
            self.trees()?
                .singles
                .contains_key(FRAMES_MARK)
                .map_err(io)?,
            std::sync::atomic::Ordering::SeqCst,
        );
        self.reload_tail()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Envelope, Event, SCHEMA_VERSION};
    use crate::ids::UserId;
    use crate::store::{check_integrity, read_envelopes, Integrity};

    fn env(seq: u64) -> (Seq, Vec<u8>) {
        let e = Envelope {
            seq: Seq(seq),
            at: 0,
            actor: None,
            schema_version: SCHEMA_VERSION,
            event: Event::UserDeactivated {
                user_id: UserId(seq),
            },
        };
        (Seq(seq), e.encode(&crate::events::GENESIS).unwrap())
    }

    fn seqs_from(log: &SledLog, from: u64) -> Vec<u64> {
        read_envelopes(log, Seq(from))
            .map(|e| e.unwrap().seq.0)
            .collect()
    }

    #[test]
    fn a_closed_log_lets_its_directory_go_and_opens_with_everything() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path()).unwrap();
        for seq in 1..=50 {
            log.append_batch(&[env(seq)]).unwrap();
        }
        log.flush().unwrap();
        log.close().unwrap();
        // sled recorded where its data lies when it was opened again: a newer snapshot of its
        // own than the one of the first open.
        let sled_snapshots = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("snap."))
            .count();
        assert!(sled_snapshots >= 1, "sled's own snapshot is written");
        // Closed: the same process opens it again at once, with every record.
        let reopened = SledLog::open(dir.path()).unwrap();
        assert_eq!(seqs_from(&reopened, 1), (1..=50).collect::<Vec<_>>());
        assert!(
            log.append_batch(&[env(51)]).is_err(),
            "nothing goes through a closed log"
        );
    }

    #[test]
    fn appends_fill_frames_across_batches_and_a_reopened_log_goes_on_filling_its_last() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = SledLog::open(dir.path()).unwrap();
            // One record a batch, as a quiet server commits them.
            for seq in 1..=100 {
                log.append_batch(&[env(seq)]).unwrap();
            }
            log.flush().unwrap();
            let frames = log.trees().unwrap().frames.len();
            assert!(
                (2..=4).contains(&frames),
                "100 records of {} bytes fill frames of {} bytes: {frames} frames",
                env(1).1.len(),
                frame::TARGET_BYTES
            );
            // Only the mark that stops builds before frames.
            let keys: Vec<Vec<u8>> = log
                .trees()
                .unwrap()
                .singles
                .iter()
                .keys()
                .map(|k| k.unwrap().to_vec())
                .collect();
            assert_eq!(keys, vec![FRAMES_MARK.to_vec()]);
        }
        let log = SledLog::open(dir.path()).unwrap();
        let frames = log.trees().unwrap().frames.len();
        log.append_batch(&[env(101), env(102)]).unwrap();
        assert_eq!(
            log.trees().unwrap().frames.len(),
            frames,
            "the last frame had room"
        );
        assert_eq!(seqs_from(&log, 1), (1..=102).collect::<Vec<_>>());
        // From inside a frame, and past the end.
        assert_eq!(seqs_from(&log, 57), (57..=102).collect::<Vec<_>>());
        assert!(seqs_from(&log, 103).is_empty());
        assert_eq!(log.last_seq().unwrap(), Some(Seq(102)));
        // Each record is stored byte for byte.
        let (seq, record) = log.scan_from(Seq(20)).next().unwrap().unwrap();
        assert_eq!((seq, record.to_vec()), env(20));
    }

    #[test]
    fn an_unfinished_sled_snapshot_left_by_a_full_disk_does_not_stop_the_log_opening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = SledLog::open(dir.path()).unwrap();
            log.append_batch(&[env(1), env(2)]).unwrap();
            log.flush().unwrap();
        }
        // What sled leaves when its snapshot cannot be written: an empty file that sorts last.
        std::fs::write(dir.path().join("snap.FFFFFFFFFFFFFFF0.generating"), b"").unwrap();
        let log = SledLog::open(dir.path()).unwrap();
        assert_eq!(seqs_from(&log, 1), vec![1, 2]);
        assert!(!dir.path().join("snap.FFFFFFFFFFFFFFF0.generating").exists());
    }

    #[test]
    fn appending_at_or_before_the_end_is_refused_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path()).unwrap();
        log.append_batch(&[env(1), env(2), env(3)]).unwrap();
        let err = log.append_batch(&[env(3), env(4)]).unwrap_err();
        assert!(err.to_string().contains("up to 3"), "{err}");
        assert_eq!(seqs_from(&log, 1), vec![1, 2, 3]);
        log.append_batch(&[env(4)]).unwrap();
        assert_eq!(seqs_from(&log, 1), vec![1, 2, 3, 4]);
    }

    #[test]
    fn records_stored_one_per_key_before_frames_are_read_first() {
        let dir = tempfile::tempdir().unwrap();
        {
            // A log written before frames: one record per key.
            let log = SledLog::open(dir.path()).unwrap();
            for seq in 1..=3 {
                let (seq, record) = env(seq);
                log.trees()
                    .unwrap()
                    .singles
                    .insert(seq.to_key(), record)
                    .unwrap();
            }
            log.flush().unwrap();
        }
        let log = SledLog::open(dir.path()).unwrap();
        assert_eq!(log.last_seq().unwrap(), Some(Seq(3)));
        assert!(log.append_batch(&[env(3)]).is_err(), "3 is stored");
        log.append_batch(&[env(4), env(5)]).unwrap();
        // What a build before frames reads: its records, then a key that is no seq, where it
        // stops with an error rather than take 3 for the log's end.
        let keys: Vec<Vec<u8>> = log
            .trees()
            .unwrap()
            .singles
            .range(Seq(1).to_key()..)
            .keys()
            .map(|k| k.unwrap().to_vec())
            .collect();
        assert_eq!(keys.len(), 4);
        assert!(Seq::from_key(&keys[3]).is_none(), "{:?}", keys[3]);
        assert_eq!(
            log.trees().unwrap().singles.last().unwrap().unwrap().0,
            FRAMES_MARK
        );
        assert_eq!(seqs_from(&log, 1), vec![1, 2, 3, 4, 5]);
        assert_eq!(seqs_from(&log, 3), vec![3, 4, 5]);
        assert_eq!(seqs_from(&log, 5), vec![5]);
        assert_eq!(
            check_integrity(&log).unwrap(),
            Integrity::Clean { last: Seq(5) }
        );
        // Recovery reaches into both.
        assert_eq!(log.quarantine_from(Seq(3)).unwrap(), 3);
        assert_eq!(seqs_from(&log, 1), vec![1, 2]);
        assert_eq!(log.last_seq().unwrap(), Some(Seq(2)));
        log.append_batch(&[env(3)]).unwrap();
        assert_eq!(seqs_from(&log, 1), vec![1, 2, 3]);
    }

    #[test]
    fn quarantine_from_inside_a_frame_keeps_the_records_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path()).unwrap();
        log.append_batch(&(1..=6).map(env).collect::<Vec<_>>())
            .unwrap();
        assert_eq!(log.trees().unwrap().frames.len(), 1);
        assert_eq!(log.quarantine_from(Seq(4)).unwrap(), 3);
        assert_eq!(seqs_from(&log, 1), vec![1, 2, 3]);
        let kept: Vec<(Seq, Vec<u8>)> = log.quarantined().unwrap();
        assert_eq!(kept, vec![env(4), env(5), env(6)]);
        // The log goes on from 3, in the same frame.
        log.append_batch(&[env(4)]).unwrap();
        assert_eq!(seqs_from(&log, 1), vec![1, 2, 3, 4]);
        assert_eq!(log.trees().unwrap().frames.len(), 1);
    }

    #[test]
    fn a_damaged_frame_even_at_the_end_refuses_to_start_and_is_moved_aside_whole_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path()).unwrap();
        log.append_batch(&[env(1), env(2)]).unwrap();
        // A frame of its own for 3 and 4, then cut short.
        log.trees()
            .unwrap()
            .frames
            .insert(Seq(3).to_key(), {
                let mut frame = FrameBuf::starting(Seq(3), &env(3).1);
                frame.push(&env(4).1);
                frame.bytes()[..frame.bytes().len() - 5].to_vec()
            })
            .unwrap();
        let err = read_envelopes(&log, Seq(1)).nth(2).unwrap().unwrap_err();
        assert!(
            err.to_string()
                .contains("frame of the records from 3 on is damaged"),
            "{err}"
        );
        // Its header says 2 records; a frame that does not parse is not believed.
        assert_eq!(log.last_seq().unwrap(), Some(Seq(3)));
        // A frame is written whole: its damage is no torn write, and it may hold records
        // that were acknowledged, so start-up refuses rather than move them aside.
        let err = check_integrity(&log).unwrap_err();
        assert!(err.to_string().contains("not a torn write"), "{err}");
        assert_eq!(log.trees().unwrap().frames.len(), 2, "nothing was changed");
        // An operator's recovery moves it aside whole.
        assert_eq!(log.quarantine_from(Seq(3)).unwrap(), 1);
        assert_eq!(seqs_from(&log, 1), vec![1, 2]);
        assert_eq!(log.last_seq().unwrap(), Some(Seq(2)));
        assert_eq!(log.quarantined().unwrap()[0].0, Seq(3));
        log.append_batch(&[env(3)]).unwrap();
        assert_eq!(
            check_integrity(&log).unwrap(),
            Integrity::Clean { last: Seq(3) }
        );
    }

    #[test]
    fn a_damaged_frame_before_valid_records_refuses_and_verify_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path()).unwrap();
        let mut chain = crate::events::Chain::after(crate::events::GENESIS);
        let records: Vec<(Seq, Vec<u8>)> = (1..=4)
            .map(|seq| {
                let (seq, _) = env(seq);
                let envelope = crate::events::Envelope::decode(seq, &env(seq.0).1).unwrap();
                (seq, chain.seal(&envelope).unwrap())
            })
            .collect();
        log.append_batch(&records[..2]).unwrap();
        // A frame whose lengths do not add up, then good records.
        let mut damaged = FrameBuf::starting(Seq(3), &records[2].1).bytes().to_vec();
        damaged.push(0);
        log.trees()
            .unwrap()
            .frames
            .insert(Seq(3).to_key(), damaged)
            .unwrap();
        log.trees()
            .unwrap()
            .frames
            .insert(
                Seq(4).to_key(),
                FrameBuf::starting(Seq(4), &records[3].1).bytes(),
            )
            .unwrap();
        let err = check_integrity(&log).unwrap_err();
        assert!(err.to_string().contains("not a torn write"), "{err}");
        assert_eq!(log.last_seq().unwrap(), Some(Seq(4)), "nothing was changed");
        let report = crate::store::verify_chain(&log, None).unwrap();
        let (seq, reason) = report.first_break.unwrap();
        assert_eq!(seq, 3);
        assert!(reason.contains("1 bytes follow"), "{reason}");
        // Up to the record before it, the log verifies.
        let report = crate::store::verify_chain(&log, Some(Seq(2))).unwrap();
        assert_eq!((report.records, report.first_break), (2, None));
    }

    #[test]
    fn appends_scans_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = SledLog::open(dir.path()).unwrap();
            log.append_batch(&[env(1), env(2), env(3)]).unwrap();
            log.flush().unwrap();
        }
        let log = SledLog::open(dir.path()).unwrap();
        assert_eq!(log.last_seq().unwrap(), Some(Seq(3)));
        let seqs: Vec<u64> = read_envelopes(&log, Seq(2))
            .map(|e| e.unwrap().seq.0)
            .collect();
        assert_eq!(seqs, vec![2, 3]);
        assert_eq!(
            check_integrity(&log).unwrap(),
            Integrity::Clean { last: Seq(3) }
        );
    }

    #[test]
    fn damaged_tail_is_quarantined() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path()).unwrap();
        log.append_batch(&[env(1), env(2)]).unwrap();
        log.insert_raw_for_tests(Seq(3), b"\x00\x01garbage")
            .unwrap();
        match check_integrity(&log).unwrap() {
            Integrity::RecoveredTail {
                last,
                first_bad,
                quarantined,
                ..
            } => {
                assert_eq!((last, first_bad, quarantined), (Seq(2), Seq(3), 1));
            }
            other => panic!("expected recovery, got {other:?}"),
        }
        assert_eq!(log.last_seq().unwrap(), Some(Seq(2)));
        assert_eq!(log.quarantined().unwrap().len(), 1);
        assert_eq!(
            check_integrity(&log).unwrap(),
            Integrity::Clean { last: Seq(2) }
        );
    }

    #[test]
    fn damage_before_valid_records_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path()).unwrap();
        log.append_batch(&[env(1), env(2), env(3)]).unwrap();
        let (_, mut bad) = env(2);
        bad[10] ^= 0xff;
        log.insert_raw_for_tests(Seq(2), &bad).unwrap();
        let err = check_integrity(&log).unwrap_err();
        assert!(err.to_string().contains("not a torn tail"), "{err}");
        // Nothing was changed.
        assert_eq!(log.last_seq().unwrap(), Some(Seq(3)));
        assert!(log.quarantined().unwrap().is_empty());
    }

    #[test]
    fn the_startup_check_reads_from_the_snapshot_and_the_background_check_the_rest() {
        use crate::store::{check_checksums, check_integrity_from};
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path()).unwrap();
        log.append_batch(&[env(1), env(2), env(3), env(4)]).unwrap();
        let (_, mut bad) = env(2);
        bad[10] ^= 0xff;
        log.insert_raw_for_tests(Seq(2), &bad).unwrap();
        // From a snapshot at 3, the tail is clean; before it, record 2 is damaged.
        assert_eq!(
            check_integrity_from(&log, Seq(3)).unwrap(),
            Integrity::Clean { last: Seq(4) }
        );
        assert_eq!(check_checksums(&log, Seq(3), Seq(4)).unwrap(), 2);
        let err = check_checksums(&log, Seq(1), Seq(2)).unwrap_err();
        assert!(err.to_string().contains("record 2"), "{err}");
        // A torn tail after the snapshot is still recovered.
        log.insert_raw_for_tests(Seq(5), b"\x00\x01garbage")
            .unwrap();
        assert!(matches!(
            check_integrity_from(&log, Seq(3)).unwrap(),
            Integrity::RecoveredTail {
                first_bad: Seq(5),
                ..
            }
        ));
        assert_eq!(log.last_seq().unwrap(), Some(Seq(4)));
    }
}

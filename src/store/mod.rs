//! The append-only log: a small trait over ordered `seq → record` storage, the sled backend, and
//! the open-time integrity check that decides what happens to a damaged tail.
//!
//! The trait deals in encoded records so that every backend shares one codec
//! (`events::Envelope::encode`/`decode`) and one recovery policy (`check_integrity`).

pub mod faulty;
pub mod frame;
pub mod jetstream;
mod sled_log;
pub mod space;

pub use sled_log::SledLog;

use crate::events::{DecodeError, Envelope};
use crate::ids::Seq;
use bytes::Bytes;
use std::time::Duration;

/// A storage failure. Writes stop when one happens; it is never swallowed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage I/O: {0}")]
    Io(String),
    /// The filesystem had no room (ENOSPC, EDQUOT): an I/O error that freeing space cures.
    #[error("storage full: {0}")]
    NoSpace(String),
    #[error("log record {seq} is damaged: {reason}")]
    Corrupt { seq: u64, reason: String },
    #[error("the log has a gap: expected seq {expected}, found {found}")]
    Gap { expected: u64, found: u64 },
    #[error("encoding an event failed: {0}")]
    Encode(String),
    /// A replicated log refused an append because another writer appended first.
    #[error("the log moved on under this writer: {0}")]
    Conflict(String),
    /// A replicated log's servers never answered an append: it may be stored or not (it shows
    /// up when the log is read again, or never).
    #[error("the log did not confirm an append: {0}")]
    Unconfirmed(String),
}

/// Raw `(seq, record)` pairs in log order. A record is shared, not copied, out of what storage
/// read (a sled frame holds several). A damaged part of the log that cannot be split into
/// records is one `StoreError::Corrupt` at its first seq, and the scan goes on after it.
pub type RecordIter<'a> = Box<dyn Iterator<Item = Result<(Seq, Bytes), StoreError>> + Send + 'a>;

/// An append-only, ordered event log.
pub trait EventLog: Send + Sync + 'static {
    /// Writes records atomically (all or none); not yet durable until `flush`.
    fn append_batch(&self, records: &[(Seq, Vec<u8>)]) -> Result<(), StoreError>;
    /// Makes everything appended so far durable (one fsync for many appends: group commit).
    fn flush(&self) -> Result<(), StoreError>;
    /// Raw records with `seq >= from`, in order.
    fn scan_from(&self, from: Seq) -> RecordIter<'_>;
    /// The highest stored seq, if any record is stored.
    fn last_seq(&self) -> Result<Option<Seq>, StoreError>;
    /// Moves the records with `seq >= from` out of the log into a quarantine area, kept for
    /// forensics, and makes that durable. Used only by recovery of a damaged tail.
    fn quarantine_from(&self, from: Seq) -> Result<usize, StoreError>;
    /// Whether [`EventLog::recover`] can make the log take appends again after a failed append
    /// or flush, without a restart.
    fn recovers_in_process(&self) -> bool {
        false
    }
    /// After a failed append or flush: makes the log hold exactly the records up to `durable`
    /// (every one acknowledged) and take appends again, opening its storage anew if it must.
    /// Records after `durable` that reached storage anyway were never acknowledged: they go to
    /// the quarantine. An error means it cannot take appends yet (try again later).
    fn recover(&self, durable: Seq) -> Result<(), StoreError> {
        let _ = durable;
        Err(StoreError::Io(
            "this log takes appends again only after a restart".into(),
        ))
    }
    /// Called once after the last write of a clean stop: whatever makes the next open cheaper.
    /// Nothing is read or written through the log after it. Nothing for most logs.
    fn close(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// The records other writers appended from `from` on, up to the log's head; the next
    /// append then expects to follow them. A log with one writer has none.
    fn catch_up(&self, from: Seq) -> Result<Vec<(Seq, Vec<u8>)>, StoreError> {
        let _ = from;
        Ok(Vec::new())
    }
    /// Calls `wake` whenever another writer may have appended (a log with one writer never
    /// does).
    fn watch(&self, wake: Box<dyn Fn() + Send + Sync>) {
        drop(wake);
    }
    /// How long the log's servers have not answered, once that is long enough to call them
    /// unreachable (a replicated log cut off by the network); `None` while they answer, and
    /// always for a log on a local disk.
    fn unreachable(&self) -> Option<Duration> {
        None
    }
}

/// Decodes every record from `from` on, checking checksums and that seqs have no gap.
pub fn read_envelopes<'a>(
    log: &'a dyn EventLog,
    from: Seq,
) -> impl Iterator<Item = Result<Envelope, StoreError>> + 'a {
    let mut decoder = Decoder::from(from);
    log.scan_from(from).map(move |item| decoder.decode(item))
}

/// Decodes raw records in order, checking checksums and that seqs have no gap: what
/// `read_envelopes` does, for a caller that reads the records elsewhere (on another thread).
#[derive(Debug, Clone, Copy)]
pub struct Decoder {
    expected: Seq,
}

impl Decoder {
    /// A decoder whose first record must be `from`.
    pub fn from(from: Seq) -> Decoder {
        Decoder { expected: from }
    }

    /// The next record, decoded.
    pub fn decode(
        &mut self,
        item: Result<(Seq, Bytes), StoreError>,
    ) -> Result<Envelope, StoreError> {
        let (seq, record) = item?;
        if seq != self.expected {
            return Err(StoreError::Gap {
                expected: self.expected.0,
                found: seq.0,
            });
        }
        self.expected = seq.next();
        Envelope::decode(seq, &record).map_err(|e: DecodeError| StoreError::Corrupt {
            seq: seq.0,
            reason: e.to_string(),
        })
    }
}

/// What the open-time check found.
#[derive(Debug, PartialEq)]
pub enum Integrity {
    /// Every record decodes; `last` is the highest seq (0 for an empty log).
    Clean { last: Seq },
    /// The records from `first_bad` on were damaged and have been quarantined; the log now ends
    /// at `last`.
    RecoveredTail {
        last: Seq,
        first_bad: Seq,
        quarantined: usize,
        reason: String,
    },
}

/// How far a damaged record may sit from the end and still count as a torn tail.
///
/// sled applies a batch atomically, so a torn write can only ever damage the records of the last
/// batch written before a crash, which was never acknowledged. Damage followed by many valid
/// records is something else (bit rot, tampering): the server refuses to start rather than drop
/// acknowledged history.
pub const MAX_TORN_TAIL: u64 = 4096;

/// Checks the whole log at open. A damaged tail (no valid record after the damage) is moved to
/// quarantine and the log continues from the last valid record; damage anywhere else is an error
/// that stops start-up with a clear message.
pub fn check_integrity(log: &dyn EventLog) -> Result<Integrity, StoreError> {
    check_integrity_from(log, Seq(1))
}

/// `check_integrity` of the records from `from` on: what start-up checks before it serves,
/// from the newest snapshot (a torn write can only be at the tail, after every snapshot); the
/// records before it are checked when asked for (`check_checksums`, `verify_chain`).
pub fn check_integrity_from(log: &dyn EventLog, from: Seq) -> Result<Integrity, StoreError> {
    let from = Seq(from.0.max(1));
    let mut last = Seq(from.0 - 1);
    let mut damage: Option<(Seq, String)> = None;
    let mut expected = from;
    for item in log.scan_from(from) {
        let (seq, problem) = match item {
            Ok((seq, _)) if seq != expected => (
                seq,
                Some(format!("gap: expected seq {expected}, found {seq}")),
            ),
            // Checksums and framing only: the replay that follows decodes what it folds.
            Ok((seq, record)) => (
                seq,
                Envelope::checked_body(&record).err().map(|e| e.to_string()),
            ),
            // Storage that does not split into records (a damaged sled frame): sled writes a
            // frame whole, so this is no torn write, and the frame may hold acknowledged
            // records. Nothing is moved aside.
            Err(StoreError::Corrupt { seq, reason }) => {
                return Err(StoreError::Corrupt {
                    seq,
                    reason: format!(
                        "{reason}; storage writes it whole, so this is not a torn write, and \
                         nothing was changed. Restore the data directory from a backup."
                    ),
                })
            }
            Err(e) => return Err(e),
        };
        expected = seq.next();
        match (&damage, problem) {
            (None, None) => last = seq,
            (None, Some(reason)) => damage = Some((seq, reason)),
            (Some(_), Some(_)) => {}
            (Some((first_bad, reason)), None) => {
                return Err(StoreError::Corrupt {
                    seq: first_bad.0,
                    reason: format!(
                        "{reason}; valid records follow it (seq {seq}), so this is not a torn \
                         tail and nothing was changed. Restore the data directory from a backup."
                    ),
                });
            }
        }
    }
    let Some((first_bad, reason)) = damage else {
        return Ok(Integrity::Clean { last });
    };
    let end = log.last_seq()?.unwrap_or(first_bad);
    if end.0.saturating_sub(first_bad.0) >= MAX_TORN_TAIL {
        return Err(StoreError::Corrupt {
            seq: first_bad.0,
            reason: format!(
                "{reason}; the damage spans {} records, too many for a torn write. Nothing was \
                 changed. Restore the data directory from a backup.",
                end.0.saturating_sub(first_bad.0) + 1
            ),
        });
    }
    let quarantined = log.quarantine_from(first_bad)?;
    Ok(Integrity::RecoveredTail {
        last,
        first_bad,
        quarantined,
        reason,
    })
}

/// Checks the checksums and framing of the records from `from` up to and including `until`,
/// changing nothing: the number of records checked, or the first damaged one.
pub fn check_checksums(log: &dyn EventLog, from: Seq, until: Seq) -> Result<u64, StoreError> {
    let mut expected = from;
    for item in log.scan_from(from) {
        let (seq, record) = item?;
        if seq > until {
            break;
        }
        if seq != expected {
            return Err(StoreError::Gap {
                expected: expected.0,
                found: seq.0,
            });
        }
        Envelope::checked_body(&record).map_err(|e| StoreError::Corrupt {
            seq: seq.0,
            reason: e.to_string(),
        })?;
        expected = seq.next();
    }
    Ok(expected.0 - from.0)
}

/// What `verify_chain` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainReport {
    /// Records read.
    pub records: u64,
    /// Records at the start written before the log had a chain (they carry no link).
    pub unchained: u64,
    /// The hash of the last good record, hex: an operator who notes it can later tell that
    /// nothing before it changed (and that nothing was cut off).
    pub head: Option<String>,
    /// The first problem, if any: its seq and what is wrong.
    pub first_break: Option<(u64, String)>,
}

fn hex(hash: &crate::events::RecordHash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Walks the log checking every record's checksum and decoding, the gapless seqs and the hash
/// chain, up to and including `until` (the whole log when `None`); stops at the first break.
pub fn verify_chain(log: &dyn EventLog, until: Option<Seq>) -> Result<ChainReport, StoreError> {
    use crate::events::{record_hash, record_link, GENESIS};
    let mut report = ChainReport {
        records: 0,
        unchained: 0,
        head: None,
        first_break: None,
    };
    let mut expected = Seq(1);
    let mut previous: Option<crate::events::RecordHash> = None;
    for item in log.scan_from(Seq(1)) {
        let (seq, record) = match item {
            Ok(entry) => entry,
            // Storage that does not split into records there (a damaged sled frame).
            Err(StoreError::Corrupt { seq, .. }) if until.is_some_and(|u| seq > u.0) => break,
            Err(StoreError::Corrupt { seq, reason }) if seq > 0 => {
                report.first_break = Some((seq, format!("record {seq} is damaged: {reason}")));
                return Ok(report);
            }
            Err(e) => return Err(e),
        };
        if until.is_some_and(|u| seq > u) {
            break;
        }
        let problem = if seq != expected {
            Some(format!("gap: expected record {expected}, found {seq}"))
        } else if let Err(e) = Envelope::decode(seq, &record) {
            Some(format!("record {seq} is damaged: {e}"))
        } else {
            match (record_link(&record), previous) {
                (None, _) if report.records > report.unchained => Some(format!(
                    "record {seq} carries no link although the records before it do: it was                      written or replaced by something other than Chronicle"
                )),
                (None, _) => {
                    report.unchained += 1;
                    None
                }
                (Some(link), prev) if link != prev.unwrap_or(GENESIS) => Some(format!(
                    "record {seq} does not link to the record before it: record {} was changed,                      or records were removed or inserted before {seq}",
                    seq.0.saturating_sub(1)
                )),
                (Some(_), _) => None,
            }
        };
        if let Some(reason) = problem {
            report.first_break = Some((seq.0, reason));
            return Ok(report);
        }
        report.records += 1;
        let hash = record_hash(&record);
        report.head = Some(hex(&hash));
        previous = Some(hash);
        expected = seq.next();
    }
    Ok(report)
}

/// Magic first line of an exported log: the portable form used for backups and replay fixtures.
pub const EXPORT_MAGIC: &[u8; 16] = b"chronicle-log-1\n";

/// Writes every record, byte for byte as stored (checksums included), as
/// `magic ‖ (seq u64 BE ‖ length u32 BE ‖ record)*`. Returns the number of records.
pub fn export_records(log: &dyn EventLog, out: &mut dyn std::io::Write) -> Result<u64, StoreError> {
    let io = |e: std::io::Error| StoreError::Io(e.to_string());
    out.write_all(EXPORT_MAGIC).map_err(io)?;
    let mut count = 0;
    for item in log.scan_from(Seq(1)) {
        let (seq, record) = item?;
        let len = u32::try_from(record.len()).map_err(|_| StoreError::Corrupt {
            seq: seq.0,
            reason: "record larger than 4 GiB".into(),
        })?;
        out.write_all(&seq.to_key()).map_err(io)?;
        out.write_all(&len.to_be_bytes()).map_err(io)?;
        out.write_all(&record).map_err(io)?;
        count += 1;
    }
    out.flush().map_err(io)?;
    Ok(count)
}

/// Parses an export into `(seq, record)` pairs, without judging the records themselves.
pub fn parse_export(bytes: &[u8]) -> Result<Vec<(Seq, Vec<u8>)>, StoreError> {
    let bad = |reason: &str| StoreError::Corrupt {
        seq: 0,
        reason: format!("export file: {reason}"),
    };
    let mut rest = bytes
        .strip_prefix(EXPORT_MAGIC.as_slice())
        .ok_or_else(|| bad("missing the chronicle-log-1 header"))?;
    let mut records = Vec::new();
    while !rest.is_empty() {
        if rest.len() < 12 {
            return Err(bad("truncated record header"));
        }
        let (head, tail) = rest.split_at(12);
        let seq = Seq::from_key(&head[..8]).ok_or_else(|| bad("bad seq"))?;
        let len = u32::from_be_bytes([head[8], head[9], head[10], head[11]]) as usize;
        if tail.len() < len {
            return Err(bad("truncated record"));
        }
        let (record, tail) = tail.split_at(len);
        records.push((seq, record.to_vec()));
        rest = tail;
    }
    Ok(records)
}

/// Copies every record of `from`, byte for byte and in order, into the empty log `to`, in
/// batches, and makes them durable (an import built on disk, moved into a cluster's stream).
pub fn copy_records(from: &dyn EventLog, to: &dyn EventLog) -> Result<u64, StoreError> {
    if to.last_seq()?.is_some() {
        return Err(StoreError::Io(
            "refusing to copy into a log that is not empty".into(),
        ));
    }
    let mut batch = Vec::with_capacity(1_000);
    let mut count = 0;
    for item in from.scan_from(Seq(1)) {
        let (seq, record) = item?;
        batch.push((seq, record.to_vec()));
        count += 1;
        if batch.len() == 1_000 {
            to.append_batch(&batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        to.append_batch(&batch)?;
    }
    to.flush()?;
    Ok(count)
}

/// Loads an export into an empty log (byte for byte) and makes it durable.
pub fn import_records(log: &dyn EventLog, bytes: &[u8]) -> Result<u64, StoreError> {
    if log.last_seq()?.is_some() {
        return Err(StoreError::Io(
            "refusing to import into a log that is not empty".into(),
        ));
    }
    let records = parse_export(bytes)?;
    for chunk in records.chunks(10_000) {
        log.append_batch(chunk)?;
    }
    log.flush()?;
    Ok(records.len() as u64)
}

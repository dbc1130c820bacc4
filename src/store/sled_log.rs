//! The sled backend: one tree of `seq (big-endian u64) → record`, one quarantine tree.

use super::{EventLog, RecordIter, StoreError};
use crate::ids::Seq;
use std::path::Path;

/// The embedded default log.
pub struct SledLog {
    db: sled::Db,
    events: sled::Tree,
    quarantine: sled::Tree,
}

fn io(e: sled::Error) -> StoreError {
    StoreError::Io(e.to_string())
}

/// sled's page cache for the log.
const LOG_CACHE_BYTES: u64 = 64 * 1024 * 1024;

impl SledLog {
    /// Opens (or creates) the log in `dir`. Fails if another process holds it open.
    pub fn open(dir: &Path) -> Result<SledLog, StoreError> {
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
        let events = db.open_tree("events").map_err(io)?;
        let quarantine = db.open_tree("quarantine").map_err(io)?;
        Ok(SledLog {
            db,
            events,
            quarantine,
        })
    }

    /// Writes raw bytes under a seq, bypassing the codec. Only for tests that damage a log.
    #[doc(hidden)]
    pub fn insert_raw_for_tests(&self, seq: Seq, bytes: &[u8]) -> Result<(), StoreError> {
        self.events.insert(seq.to_key(), bytes).map_err(io)?;
        self.flush()
    }

    /// The records kept aside by tail recovery.
    pub fn quarantined(&self) -> Result<Vec<(Seq, Vec<u8>)>, StoreError> {
        self.quarantine
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
        self.db.size_on_disk().map_err(io)
    }
}

impl EventLog for SledLog {
    fn append_batch(&self, records: &[(Seq, Vec<u8>)]) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        for (seq, record) in records {
            batch.insert(&seq.to_key(), record.as_slice());
        }
        self.events.apply_batch(batch).map_err(io)
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush().map(|_| ()).map_err(io)
    }

    fn scan_from(&self, from: Seq) -> RecordIter<'_> {
        Box::new(self.events.range(from.to_key()..).map(|item| {
            let (k, v) = item.map_err(io)?;
            let seq = Seq::from_key(&k).ok_or_else(|| StoreError::Corrupt {
                seq: 0,
                reason: format!("key of {} bytes is not a seq", k.len()),
            })?;
            Ok((seq, v.to_vec()))
        }))
    }

    fn last_seq(&self) -> Result<Option<Seq>, StoreError> {
        match self.events.last().map_err(io)? {
            Some((k, _)) => Ok(Seq::from_key(&k)),
            None => Ok(None),
        }
    }

    fn quarantine_from(&self, from: Seq) -> Result<usize, StoreError> {
        // Quarantine keys are (time of recovery, seq) so that repeated recoveries never
        // overwrite earlier evidence.
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let moved: Vec<(sled::IVec, sled::IVec)> = self
            .events
            .range(from.to_key()..)
            .collect::<Result<_, _>>()
            .map_err(io)?;
        let mut keep = sled::Batch::default();
        let mut drop = sled::Batch::default();
        for (k, v) in &moved {
            let mut qkey = stamp.to_be_bytes().to_vec();
            qkey.extend_from_slice(k);
            keep.insert(qkey, v.clone());
            drop.remove(k.clone());
        }
        self.quarantine.apply_batch(keep).map_err(io)?;
        self.flush()?;
        self.events.apply_batch(drop).map_err(io)?;
        self.flush()?;
        Ok(moved.len())
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

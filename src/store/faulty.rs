//! A log that misbehaves on purpose, behind the same trait as sled: what the server does when
//! storage fails is tested against it (`engine` and `store` tests).
//!
//! It keeps records in memory in two parts: durable (flushed) and pending (appended, not yet
//! flushed). `crash()` loses the pending part, as power loss would. Faults can be armed:
//! failing the next flush or append, tearing the last durable record, flipping a bit of one.

use super::{EventLog, RecordIter, StoreError};
use crate::ids::Seq;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The fault-injecting log.
#[derive(Default)]
pub struct FaultyLog {
    durable: Mutex<Vec<(Seq, Vec<u8>)>>,
    pending: Mutex<Vec<(Seq, Vec<u8>)>>,
    quarantine: Mutex<Vec<(Seq, Vec<u8>)>>,
    fail_flush: AtomicBool,
    fail_append: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl FaultyLog {
    pub fn new() -> FaultyLog {
        FaultyLog::default()
    }

    /// The next flush fails (and loses nothing durable: the pending records stay pending).
    pub fn fail_next_flush(&self) {
        self.fail_flush.store(true, Ordering::SeqCst);
    }

    /// The next append fails.
    pub fn fail_next_append(&self) {
        self.fail_append.store(true, Ordering::SeqCst);
    }

    /// Power loss: whatever was appended but not flushed is gone.
    pub fn crash(&self) {
        lock(&self.pending).clear();
    }

    /// The last durable record loses its second half (a torn write).
    pub fn tear_last(&self) {
        if let Some((_, record)) = lock(&self.durable).last_mut() {
            record.truncate(record.len() / 2);
        }
    }

    /// Flips one bit of the durable record at `seq`.
    pub fn flip_bit(&self, seq: Seq, byte: usize) {
        if let Some((_, record)) = lock(&self.durable).iter_mut().find(|(s, _)| *s == seq) {
            if let Some(b) = record.get_mut(byte) {
                *b ^= 0x04;
            }
        }
    }

    /// Records moved to quarantine by recovery.
    pub fn quarantined(&self) -> Vec<(Seq, Vec<u8>)> {
        lock(&self.quarantine).clone()
    }

    /// Durable records (after a crash: all that is left).
    pub fn durable_len(&self) -> usize {
        lock(&self.durable).len()
    }
}

impl EventLog for FaultyLog {
    fn append_batch(&self, records: &[(Seq, Vec<u8>)]) -> Result<(), StoreError> {
        if self.fail_append.swap(false, Ordering::SeqCst) {
            return Err(StoreError::Io("injected append failure".into()));
        }
        lock(&self.pending).extend_from_slice(records);
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        if self.fail_flush.swap(false, Ordering::SeqCst) {
            return Err(StoreError::Io("injected flush failure".into()));
        }
        let pending: Vec<_> = lock(&self.pending).drain(..).collect();
        lock(&self.durable).extend(pending);
        Ok(())
    }

    /// Reads see what a reader of the device would: durable records, then pending ones (the
    /// page cache), as sled serves unflushed writes to its own readers.
    fn scan_from(&self, from: Seq) -> RecordIter<'_> {
        let mut all = lock(&self.durable).clone();
        all.extend(lock(&self.pending).iter().cloned());
        Box::new(
            all.into_iter()
                .filter(move |(s, _)| *s >= from)
                .map(|(s, r)| Ok((s, r.into()))),
        )
    }

    fn last_seq(&self) -> Result<Option<Seq>, StoreError> {
        let pending = lock(&self.pending).last().map(|(s, _)| *s);
        Ok(pending.or_else(|| lock(&self.durable).last().map(|(s, _)| *s)))
    }

    fn quarantine_from(&self, from: Seq) -> Result<usize, StoreError> {
        let mut durable = lock(&self.durable);
        let at = durable
            .iter()
            .position(|(s, _)| *s >= from)
            .unwrap_or(durable.len());
        let moved: Vec<_> = durable.drain(at..).collect();
        let count = moved.len();
        lock(&self.quarantine).extend(moved);
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::events::Role;
    use crate::projections::Projections;
    use crate::store::{check_integrity, Integrity};
    use std::sync::Arc;

    fn new_user(email: &str) -> crate::commands::users::NewUser {
        crate::commands::users::NewUser {
            email: email.into(),
            full_name: "Name".into(),
            role: Role::Member,
            password_hash: None,
            api_key_nonce: "n".into(),
        }
    }

    /// An organization with `n` members, each acknowledged.
    async fn organization(log: &Arc<FaultyLog>, n: usize) -> Arc<Engine> {
        let engine = Arc::new(Engine::start(log.clone(), Projections::default()).unwrap());
        engine
            .execute(None, |s, _| {
                crate::commands::users::create_realm(s, "Org", "", {
                    let mut owner = new_user("owner@example.com");
                    owner.role = Role::Owner;
                    owner
                })
            })
            .await
            .unwrap();
        for i in 0..n {
            let email = format!("u{i}@example.com");
            engine
                .execute(Some(crate::ids::UserId(1)), move |s, ctx| {
                    crate::commands::users::create_user(s, ctx, new_user(&email))
                })
                .await
                .unwrap();
        }
        engine
    }

    fn recovered(log: &FaultyLog) -> Result<(Integrity, Projections), StoreError> {
        let integrity = check_integrity(log)?;
        Ok((integrity, crate::replay::fold(log, None, |_| {})?))
    }

    #[tokio::test]
    async fn a_failed_flush_is_never_acknowledged_and_stops_writes() {
        let log = Arc::new(FaultyLog::new());
        let engine = organization(&log, 2).await;
        let before = engine.read(|s| s.dump());
        log.fail_next_flush();
        let refused = engine
            .execute(Some(crate::ids::UserId(1)), |s, ctx| {
                crate::commands::users::create_user(s, ctx, new_user("late@example.com"))
            })
            .await
            .unwrap_err();
        assert!(
            matches!(refused, crate::error::ApiError::Internal(_)),
            "{refused}"
        );
        // Nothing of it reached the read state; later writes are refused until a restart.
        assert_eq!(engine.read(|s| s.dump()), before);
        let after = engine
            .execute(Some(crate::ids::UserId(1)), |s, ctx| {
                crate::commands::users::create_user(s, ctx, new_user("later@example.com"))
            })
            .await;
        assert!(after.is_err());
        // The power goes: the unflushed record is lost, everything acknowledged is there.
        log.crash();
        let (integrity, state) = recovered(&log).unwrap();
        assert!(matches!(integrity, Integrity::Clean { .. }));
        assert_eq!(state.dump(), before);
    }

    #[tokio::test]
    async fn a_failed_append_is_never_acknowledged() {
        let log = Arc::new(FaultyLog::new());
        let engine = organization(&log, 1).await;
        let before = engine.read(|s| s.dump());
        log.fail_next_append();
        assert!(engine
            .execute(Some(crate::ids::UserId(1)), |s, ctx| {
                crate::commands::users::create_user(s, ctx, new_user("x@example.com"))
            })
            .await
            .is_err());
        assert_eq!(recovered(&log).unwrap().1.dump(), before);
    }

    #[tokio::test]
    async fn a_torn_last_record_is_quarantined_and_the_prefix_kept() {
        let log = Arc::new(FaultyLog::new());
        let engine = organization(&log, 3).await;
        let last = engine.read(|s| s.seq);
        drop(engine);
        log.tear_last();
        let (integrity, state) = recovered(&log).unwrap();
        assert!(
            matches!(integrity, Integrity::RecoveredTail { first_bad, quarantined: 1, .. } if first_bad == last),
            "{integrity:?}"
        );
        assert_eq!(state.seq.0, last.0 - 1);
        assert_eq!(log.quarantined().len(), 1);
        // The restarted engine continues the log (and its chain) from the valid prefix.
        let engine = Arc::new(Engine::start(log.clone(), state).unwrap());
        engine
            .execute(Some(crate::ids::UserId(1)), |s, ctx| {
                crate::commands::users::create_user(s, ctx, new_user("again@example.com"))
            })
            .await
            .unwrap();
        assert!(crate::store::verify_chain(log.as_ref(), None)
            .unwrap()
            .first_break
            .is_none());
    }

    #[tokio::test]
    async fn a_flipped_bit_before_valid_records_refuses_to_start() {
        let log = Arc::new(FaultyLog::new());
        let engine = organization(&log, 3).await;
        drop(engine);
        log.flip_bit(Seq(2), 40);
        let refused = check_integrity(log.as_ref()).unwrap_err();
        let StoreError::Corrupt { seq, reason } = &refused else {
            panic!("{refused}");
        };
        assert_eq!(*seq, 2);
        assert!(reason.contains("valid records follow"), "{reason}");
        assert!(log.quarantined().is_empty(), "nothing is changed");
    }

    #[tokio::test]
    async fn unflushed_writes_are_lost_by_a_crash_and_nothing_else() {
        let log = Arc::new(FaultyLog::new());
        let engine = organization(&log, 2).await;
        let acknowledged = engine.read(|s| s.dump());
        drop(engine);
        // A record appended behind the writer's back, never flushed.
        log.append_batch(&[(Seq(99), vec![1, 2, 3])]).unwrap();
        log.crash();
        let (integrity, state) = recovered(&log).unwrap();
        assert!(matches!(integrity, Integrity::Clean { .. }));
        assert_eq!(state.dump(), acknowledged);
    }
}

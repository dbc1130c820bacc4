//! A log that misbehaves on purpose, behind the same trait as sled: what the server does when
//! storage fails is tested against it (`engine` and `store` tests).
//!
//! It keeps records in memory in two parts: durable (flushed) and pending (appended, not yet
//! flushed). `crash()` loses the pending part, as power loss would. Faults can be armed:
//! failing the next flush or append, tearing the last durable record, flipping a bit of one.

use super::{EventLog, RecordIter, StoreError};
use crate::ids::Seq;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// The fault-injecting log.
#[derive(Default)]
pub struct FaultyLog {
    durable: Mutex<Vec<(Seq, Vec<u8>)>>,
    pending: Mutex<Vec<(Seq, Vec<u8>)>>,
    quarantine: Mutex<Vec<(Seq, Vec<u8>)>>,
    fail_flush: AtomicBool,
    fail_append: AtomicBool,
    /// Flushes fail as a full disk does until space is "freed".
    full: AtomicBool,
    /// While true, the log counts as unreachable (a cluster's log cut off by the network).
    cut: AtomicBool,
    /// While true, flushes wait (a stalled disk).
    held: Mutex<bool>,
    released: Condvar,
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

    /// Every flush fails with "no space" until [`FaultyLog::free_space`].
    pub fn fill_disk(&self) {
        self.full.store(true, Ordering::SeqCst);
    }

    /// Flushes succeed again.
    pub fn free_space(&self) {
        self.full.store(false, Ordering::SeqCst);
    }

    /// The log says it has not answered for a while, as a cluster's log cut off does, until
    /// [`FaultyLog::reconnect`].
    pub fn cut_off(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    pub fn reconnect(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }

    /// Flushes stall until [`FaultyLog::release_flushes`].
    pub fn hold_flushes(&self) {
        *lock(&self.held) = true;
    }

    /// A stalled flush goes on.
    pub fn release_flushes(&self) {
        *lock(&self.held) = false;
        self.released.notify_all();
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
        let mut held = lock(&self.held);
        while *held {
            held = self.released.wait(held).unwrap_or_else(|p| p.into_inner());
        }
        drop(held);
        if self.full.load(Ordering::SeqCst) {
            return Err(StoreError::NoSpace(
                "injected: no space left on device".into(),
            ));
        }
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

    fn recovers_in_process(&self) -> bool {
        true
    }

    /// As a reopened device: what was appended and not flushed is gone; a durable record past
    /// `durable` (never acknowledged) goes to the quarantine.
    fn recover(&self, durable: Seq) -> Result<(), StoreError> {
        if self.full.load(Ordering::SeqCst) {
            return Err(StoreError::NoSpace("injected: still no space".into()));
        }
        lock(&self.pending).clear();
        self.quarantine_from(durable.next())?;
        Ok(())
    }

    fn unreachable(&self) -> Option<std::time::Duration> {
        self.cut
            .load(Ordering::SeqCst)
            .then_some(std::time::Duration::from_secs(12))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::events::Role;
    use crate::projections::Projections;
    use crate::store::{check_integrity, Integrity};
    use actix_web::ResponseError;
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

    async fn create(engine: &Engine, email: &str) -> Result<(), crate::error::ApiError> {
        let email = email.to_owned();
        engine
            .execute(Some(crate::ids::UserId(1)), move |s, ctx| {
                crate::commands::users::create_user(s, ctx, new_user(&email))
            })
            .await
            .map(|_| ())
    }

    /// Tries to create `email` until it works (a paused writer asks the log to recover at
    /// most once a second), within ten seconds; the refusals seen on the way.
    async fn create_once_writes_resume(engine: &Engine, email: &str) -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut refusals = Vec::new();
        loop {
            match create(engine, email).await {
                Ok(()) => return refusals,
                Err(refused) => refusals.push(refused.body()["code"].to_string()),
            }
            assert!(
                std::time::Instant::now() < deadline,
                "writes did not resume: {refusals:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    fn emails(engine: &Engine) -> Vec<String> {
        engine.read(|s| s.users.iter().map(|u| u.email.clone()).collect())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_flush_is_never_acknowledged_and_writes_resume_once_the_log_recovers() {
        use crate::engine::Writes;
        let log = Arc::new(FaultyLog::new());
        let engine = organization(&log, 2).await;
        let before = engine.read(|s| s.dump());
        log.fail_next_flush();
        let refused = create(&engine, "late@example.com").await.unwrap_err();
        assert_eq!(
            (
                refused.status_code().as_u16(),
                refused.body()["code"].as_str()
            ),
            (503, Some("STORAGE_UNAVAILABLE")),
            "{refused}"
        );
        assert!(matches!(
            engine.writes(),
            Writes::Paused {
                no_space: false,
                ..
            }
        ));
        // Nothing of it reached the read state.
        assert_eq!(engine.read(|s| s.dump()), before);
        // The next write recovers the log (the unflushed record is dropped) and goes through.
        create_once_writes_resume(&engine, "later@example.com").await;
        assert_eq!(engine.writes(), Writes::Open);
        assert!(!emails(&engine).contains(&"late@example.com".to_owned()));
        // The power goes: everything acknowledged is there, and the chain links up.
        log.crash();
        let (integrity, state) = recovered(&log).unwrap();
        assert!(matches!(integrity, Integrity::Clean { .. }));
        assert_eq!(state.dump(), engine.read(|s| s.dump()));
        assert!(crate::store::verify_chain(log.as_ref(), None)
            .unwrap()
            .first_break
            .is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_log_cut_off_refuses_writes_with_503_keeps_reads_and_resumes_when_it_answers() {
        use crate::engine::Writes;
        let log = Arc::new(FaultyLog::new());
        let engine = organization(&log, 1).await;
        let before = engine.read(|s| s.dump());
        log.cut_off();
        assert_eq!(engine.writes(), Writes::Unreachable { silent_secs: 12 });
        let refused = create(&engine, "a@example.com").await.unwrap_err();
        assert_eq!(
            (
                refused.status_code().as_u16(),
                refused.body()["code"].as_str()
            ),
            (503, Some("STORAGE_UNAVAILABLE")),
            "{refused}"
        );
        assert!(
            refused.body()["msg"]
                .as_str()
                .is_some_and(|m| m.contains("has not reached its cluster's log for 12 s")),
            "{refused}"
        );
        assert_eq!(refused.body()["retry-after"], 5.0);
        // Nothing was appended, and reads go on.
        assert_eq!(engine.read(|s| s.dump()), before);
        assert_eq!(emails(&engine).len(), 2);
        log.reconnect();
        assert_eq!(engine.writes(), Writes::Open);
        create(&engine, "b@example.com").await.unwrap();
        assert!(emails(&engine).contains(&"b@example.com".to_owned()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_disk_refuses_writes_with_507_keeps_reads_and_resumes_when_space_returns() {
        use crate::engine::Writes;
        let log = Arc::new(FaultyLog::new());
        let engine = organization(&log, 1).await;
        log.fill_disk();
        let refused = create(&engine, "a@example.com").await.unwrap_err();
        assert_eq!(
            (
                refused.status_code().as_u16(),
                refused.body()["code"].as_str()
            ),
            (507, Some("STORAGE_FULL")),
            "{refused}"
        );
        assert_eq!(refused.body()["retry-after"], 5.0);
        assert!(matches!(
            engine.writes(),
            Writes::Paused { no_space: true, .. }
        ));
        // While the disk stays full, writes stay refused (a recovery attempt fails too), and
        // reads go on.
        let refused = create(&engine, "b@example.com").await.unwrap_err();
        assert_eq!(refused.body()["code"], "STORAGE_FULL");
        assert_eq!(engine.read(|s| s.users.len()), 2);
        log.free_space();
        create_once_writes_resume(&engine, "c@example.com").await;
        let emails = emails(&engine);
        assert!(emails.contains(&"c@example.com".to_owned()));
        assert!(!emails.contains(&"a@example.com".to_owned()));
        assert!(!emails.contains(&"b@example.com".to_owned()));
        assert!(crate::store::verify_chain(log.as_ref(), None)
            .unwrap()
            .first_break
            .is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stalled_disk_withdraws_waiting_writes_after_the_wait_and_keeps_reads() {
        let log = Arc::new(FaultyLog::new());
        let engine = organization(&log, 1).await;
        engine.set_write_wait(std::time::Duration::from_millis(300));
        log.hold_flushes();
        // The first write is taken and appended; its flush stalls.
        let first = tokio::spawn({
            let engine = engine.clone();
            async move { create(&engine, "first@example.com").await }
        });
        let appended = engine.read(|s| s.seq).next();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while log.last_seq().unwrap() != Some(appended) {
            assert!(std::time::Instant::now() < deadline, "never appended");
            tokio::task::yield_now().await;
        }
        // The next one waits its 300 ms behind it, then is withdrawn and refused.
        let refused = create(&engine, "second@example.com").await.unwrap_err();
        assert_eq!(
            (
                refused.status_code().as_u16(),
                refused.body()["code"].as_str()
            ),
            (503, Some("STORAGE_UNAVAILABLE")),
            "{refused}"
        );
        // Reads go on meanwhile, and the taken write waits for its own flush.
        assert_eq!(engine.read(|s| s.users.len()), 2);
        assert!(!first.is_finished());
        log.release_flushes();
        first.await.unwrap().unwrap();
        create(&engine, "third@example.com").await.unwrap();
        let emails = emails(&engine);
        assert!(emails.contains(&"first@example.com".to_owned()));
        assert!(
            !emails.contains(&"second@example.com".to_owned()),
            "withdrawn"
        );
        assert_eq!(
            crate::replay::fold(log.as_ref(), None, |_| {})
                .unwrap()
                .digest(),
            engine.read(Projections::digest)
        );
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

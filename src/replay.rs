//! Folding a log into projections: at start-up (after the newest snapshot), for time travel
//! (`?at_seq=`, `chronicle dump --at-seq`, `diff`, `replay --to-time`) and for the offline
//! tools. The same infallible `Projections::apply` folds live events, so a replay and the
//! running server cannot disagree.

use crate::events::Envelope;
use crate::ids::Seq;
use crate::projections::Projections;
use crate::store::{Decoder, EventLog, StoreError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// How often the fold reports its progress, in events.
const PROGRESS_EVERY: u64 = 100_000;

/// Folds the log from the start up to and including `until` (all of it when `None`) into a
/// state that keeps no word index ([`Projections::unindexed`]), calling `progress` every
/// 100,000 events.
pub fn fold(
    log: &dyn EventLog,
    until: Option<Seq>,
    progress: impl FnMut(Seq) + Send,
) -> Result<Projections, StoreError> {
    fold_while(log, |env| until.is_none_or(|u| env.seq <= u), progress)
}

/// Folds the log from the start while `keep` accepts the next event (the first one it
/// refuses ends the fold) into a state that keeps no word index, calling `progress` every
/// 100,000 events.
pub fn fold_while(
    log: &dyn EventLog,
    keep: impl Fn(&Envelope) -> bool + Sync,
    progress: impl FnMut(Seq) + Send,
) -> Result<Projections, StoreError> {
    let mut state = Projections::unindexed();
    continue_while(&mut state, log, keep, progress)?;
    Ok(state)
}

/// Records a worker reads and decodes at a time.
const READ_BATCH: usize = 1024;

/// Folds the events after `state`'s seq while `keep` accepts them.
///
/// Two workers or more (one per core, up to four) share the work: each takes the next batch
/// of records from the log, decodes it, waits for its turn, folds it, and drops what it
/// decoded. Reading and decoding overlap the fold, which takes the batches one at a time in
/// log order; and every decoded event is freed by the thread that allocated it, which
/// glibc's allocator does without taking another thread's arena lock (freeing another
/// thread's blocks cost as much as decoding them).
pub fn continue_while(
    state: &mut Projections,
    log: &dyn EventLog,
    keep: impl Fn(&Envelope) -> bool + Sync,
    progress: impl FnMut(Seq) + Send,
) -> Result<(), StoreError> {
    let from = state.seq.next();
    let source = Mutex::new(Source {
        records: log.scan_from(from),
        next: from,
        turns: 0,
        ended: false,
    });
    let folding = Mutex::new(Folding {
        state,
        progress,
        turn: 0,
        outcome: None,
    });
    let turned = Condvar::new();
    let stopped = AtomicBool::new(false);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    std::thread::scope(|scope| {
        for _ in 1..workers {
            scope.spawn(|| work(&source, &folding, &turned, &stopped, &keep));
        }
        work(&source, &folding, &turned, &stopped, &keep);
    });
    let outcome = lock(&folding).outcome.take();
    outcome.unwrap_or(Ok(()))
}

/// The log being read: the records left, the seq the next one must have, and the next batch's
/// turn to be folded.
struct Source<'a> {
    records: crate::store::RecordIter<'a>,
    next: Seq,
    turns: u64,
    ended: bool,
}

/// The state being folded, whose turn it is, and how the fold ended (once it has).
struct Folding<'s, P> {
    state: &'s mut Projections,
    progress: P,
    turn: u64,
    outcome: Option<Result<(), StoreError>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// One worker: batches until the log or the fold ends.
fn work<P: FnMut(Seq)>(
    source: &Mutex<Source<'_>>,
    folding: &Mutex<Folding<'_, P>>,
    turned: &Condvar,
    stopped: &AtomicBool,
    keep: &(impl Fn(&Envelope) -> bool + Sync),
) {
    // A worker that panics ends the fold, so that no other waits for its turn for ever.
    struct Ending<'a, 'f, P> {
        folding: &'a Mutex<Folding<'f, P>>,
        turned: &'a Condvar,
        stopped: &'a AtomicBool,
    }
    impl<P> Drop for Ending<'_, '_, P> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.stopped.store(true, Ordering::SeqCst);
                lock(self.folding)
                    .outcome
                    .get_or_insert(Err(StoreError::Io("a replay worker failed".into())));
                self.turned.notify_all();
            }
        }
    }
    let _ending = Ending {
        folding,
        turned,
        stopped,
    };
    loop {
        let (turn, first, records) = {
            let mut source = lock(source);
            if source.ended || stopped.load(Ordering::SeqCst) {
                return;
            }
            let records: Vec<_> = source.records.by_ref().take(READ_BATCH).collect();
            // After a failure to read, the rest is not read: the fold stops there.
            source.ended = records.len() < READ_BATCH || records.iter().any(Result::is_err);
            if records.is_empty() {
                return;
            }
            let (turn, first) = (source.turns, source.next);
            source.turns += 1;
            source.next = Seq(first.0 + records.len() as u64);
            (turn, first, records)
        };
        let mut decoder = Decoder::from(first);
        let mut decoded: Vec<_> = records.into_iter().map(|r| decoder.decode(r)).collect();
        let mut fold = lock(folding);
        while fold.turn != turn && fold.outcome.is_none() {
            fold = turned.wait(fold).unwrap_or_else(|e| e.into_inner());
        }
        if fold.outcome.is_none() {
            for at in 0..decoded.len() {
                let env = match &decoded[at] {
                    Ok(env) => env,
                    Err(_) => {
                        fold.outcome = Some(decoded.swap_remove(at).map(|_| ()));
                        break;
                    }
                };
                if !keep(env) {
                    fold.outcome = Some(Ok(()));
                    break;
                }
                fold.state.apply(env);
                if env.seq.0 % PROGRESS_EVERY == 0 {
                    (fold.progress)(env.seq);
                }
            }
        }
        if fold.outcome.is_some() {
            stopped.store(true, Ordering::SeqCst);
        }
        fold.turn += 1;
        drop(fold);
        turned.notify_all();
        // Freed here, by the thread that decoded it.
        drop(decoded);
    }
}

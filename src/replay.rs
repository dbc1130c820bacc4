//! Folding a log into projections: at start-up (after the newest snapshot), for time travel
//! (`?at_seq=`, `chronicle dump --at-seq`, `diff`, `replay --to-time`) and for the offline
//! tools. The same infallible `Projections::apply` folds live events, so a replay and the
//! running server cannot disagree.

use crate::events::Envelope;
use crate::ids::Seq;
use crate::projections::Projections;
use crate::store::{Decoder, EventLog, StoreError};

/// How often the fold reports its progress, in events.
const PROGRESS_EVERY: u64 = 100_000;

/// Folds the log from the start up to and including `until` (all of it when `None`),
/// calling `progress` every 100,000 events.
pub fn fold(
    log: &dyn EventLog,
    until: Option<Seq>,
    progress: impl FnMut(Seq),
) -> Result<Projections, StoreError> {
    fold_while(log, |env| until.is_none_or(|u| env.seq <= u), progress)
}

/// Folds the log from the start while `keep` accepts the next event (the first one it
/// refuses ends the fold), calling `progress` every 100,000 events.
pub fn fold_while(
    log: &dyn EventLog,
    keep: impl Fn(&Envelope) -> bool,
    progress: impl FnMut(Seq),
) -> Result<Projections, StoreError> {
    let mut state = Projections::default();
    continue_while(&mut state, log, keep, progress)?;
    Ok(state)
}

/// Records a reader thread reads ahead of the fold, per hand-over.
const READ_BATCH: usize = 1024;

/// Folds the events after `state`'s seq while `keep` accepts them.
///
/// Reading the log runs on a thread of its own, a few batches ahead, so that sled's scan
/// overlaps the fold on a machine with a second core. Records are decoded here, on the folding
/// thread, so that what the state keeps (message texts) is allocated where it lives, not among
/// the reader's short-lived buffers (which would keep the allocator from handing their pages
/// back).
pub fn continue_while(
    state: &mut Projections,
    log: &dyn EventLog,
    keep: impl Fn(&Envelope) -> bool,
    mut progress: impl FnMut(Seq),
) -> Result<(), StoreError> {
    type Record = Result<(Seq, Vec<u8>), StoreError>;
    let from = state.seq.next();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Record>>(4);
        scope.spawn(move || {
            let mut batch = Vec::with_capacity(READ_BATCH);
            for record in log.scan_from(from) {
                let failed = record.is_err();
                batch.push(record);
                if failed || batch.len() == READ_BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(READ_BATCH));
                    // The fold hung up (it stopped early): stop reading.
                    if tx.send(full).is_err() || failed {
                        return;
                    }
                }
            }
            let _ = tx.send(batch);
        });
        let mut decoder = Decoder::from(from);
        for batch in rx {
            for record in batch {
                let env = decoder.decode(record)?;
                if !keep(&env) {
                    return Ok(());
                }
                state.apply(&env);
                if env.seq.0 % PROGRESS_EVERY == 0 {
                    progress(env.seq);
                }
            }
        }
        Ok(())
    })
}

//! The free-space reserve: writes stop *before* the data directory's filesystem is full, and
//! start again by themselves once space returns.
//!
//! A log that fills its disk fails in the middle of a write, and sled then refuses everything
//! until it is opened again. Keeping a reserve free (as Elasticsearch's flood-stage watermark
//! and etcd's quota do) means that in the ordinary case the disk never fills: below the
//! reserve the engine refuses new writes with a clear error, reads go on, and a watcher that
//! looks at the filesystem four times a second lets writes through again when an
//! administrator has freed space. The reserve is also room for what must still be written
//! while writes are refused: snapshots, sled's own housekeeping, the server's logs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often the watcher reads the filesystem's free space.
pub const WATCH_EVERY: Duration = Duration::from_millis(250);

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// The filesystem holding a directory: bytes available to the server and bytes in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    pub available: u64,
    pub total: u64,
}

/// Reads the space of the filesystem that holds `dir` (`statvfs`).
pub fn space_of(dir: &Path) -> std::io::Result<Space> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("a path with a NUL byte"))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string that outlives the call, and `stat` points to
    // memory of the right size that statvfs fills in when it returns 0.
    let stat = unsafe {
        if libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        stat.assume_init()
    };
    let unit = stat.f_frsize as u64;
    Ok(Space {
        // What an unprivileged writer may still use (the root reserve is not ours).
        available: (stat.f_bavail as u64).saturating_mul(unit),
        total: (stat.f_blocks as u64).saturating_mul(unit),
    })
}

/// Whether an I/O error says the filesystem (or the user's quota) is full.
pub fn is_no_space(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::StorageFull
        || matches!(error.raw_os_error(), Some(code) if code == libc::ENOSPC || code == libc::EDQUOT)
}

/// The default reserve for a filesystem of `total` bytes: the larger of 1 GiB and 1 %, but
/// never more than a tenth of it (a small test disk keeps room to work).
pub fn default_reserve(total: u64) -> u64 {
    GIB.max(total / 100).min(total / 10)
}

/// The reserve's state, shared by the engine (which refuses writes below it), the watcher,
/// `/ready` and the metrics.
#[derive(Debug)]
pub struct Reserve {
    dir: PathBuf,
    /// Bytes to keep free; 0 turns the reserve off (the space is still watched and shown).
    keep: u64,
    available: AtomicU64,
    total: AtomicU64,
    low: AtomicBool,
}

/// What a refused write is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Low {
    pub available: u64,
    pub keep: u64,
}

impl Reserve {
    /// The reserve for `dir`: `keep_mib` MiB when given (0: off), else [`default_reserve`].
    /// Reads the space once now, then a watcher thread goes on reading it every
    /// [`WATCH_EVERY`] for as long as the reserve is in use.
    pub fn start(dir: &Path, keep_mib: Option<u64>) -> std::io::Result<Arc<Reserve>> {
        let space = space_of(dir)?;
        let keep = match keep_mib {
            Some(mib) => mib.saturating_mul(MIB),
            None => default_reserve(space.total),
        };
        let reserve = Arc::new(Reserve {
            dir: dir.to_owned(),
            keep,
            available: AtomicU64::new(space.available),
            total: AtomicU64::new(space.total),
            low: AtomicBool::new(false),
        });
        reserve.observe(space);
        let watched: Weak<Reserve> = Arc::downgrade(&reserve);
        std::thread::Builder::new()
            .name("chronicle-disk-watch".into())
            .spawn(move || loop {
                std::thread::sleep(WATCH_EVERY);
                let Some(reserve) = watched.upgrade() else {
                    return;
                };
                reserve.check();
            })?;
        Ok(reserve)
    }

    /// Reads the filesystem now (the watcher does this on its own; the engine also asks after
    /// a write that failed for want of space).
    pub fn check(&self) {
        match space_of(&self.dir) {
            Ok(space) => self.observe(space),
            Err(error) => {
                tracing::warn!(%error, dir = %self.dir.display(), "free space not readable")
            }
        }
    }

    fn observe(&self, space: Space) {
        self.available.store(space.available, Ordering::Relaxed);
        self.total.store(space.total, Ordering::Relaxed);
        let low = self.keep > 0 && space.available < self.keep;
        let metrics = crate::metrics::get();
        metrics.disk_available.set(space.available as i64);
        metrics.disk_reserve.set(self.keep as i64);
        if self.low.swap(low, Ordering::SeqCst) != low {
            if low {
                tracing::error!(
                    available_mib = space.available / MIB,
                    reserve_mib = self.keep / MIB,
                    dir = %self.dir.display(),
                    "DISK NEARLY FULL: free space is below the reserve; writes are refused \
                     until space is freed (reads go on)"
                );
            } else {
                tracing::warn!(
                    available_mib = space.available / MIB,
                    reserve_mib = self.keep / MIB,
                    "free space is above the reserve again: writes resume"
                );
            }
        }
    }

    /// `Some` while free space is below the reserve: writes are to be refused.
    pub fn low(&self) -> Option<Low> {
        self.low.load(Ordering::SeqCst).then(|| Low {
            available: self.available.load(Ordering::Relaxed),
            keep: self.keep,
        })
    }

    /// Bytes kept free (0: off).
    pub fn keep(&self) -> u64 {
        self.keep
    }

    /// The space as last read.
    pub fn space(&self) -> Space {
        Space {
            available: self.available.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_reserve_is_a_gib_or_a_hundredth_but_at_most_a_tenth() {
        assert_eq!(default_reserve(500 * GIB), 5 * GIB);
        assert_eq!(default_reserve(50 * GIB), GIB);
        assert_eq!(default_reserve(5 * GIB), GIB / 2);
        assert_eq!(default_reserve(0), 0);
    }

    #[test]
    fn a_reserve_larger_than_the_free_space_refuses_and_zero_turns_it_off() {
        let dir = tempfile::tempdir().unwrap();
        let space = space_of(dir.path()).unwrap();
        assert!(space.total >= space.available && space.total > 0);
        let above = space.available / MIB + 1024;
        let reserve = Reserve::start(dir.path(), Some(above)).unwrap();
        let low = reserve
            .low()
            .expect("below a reserve larger than the free space");
        assert_eq!(low.keep, above * MIB);
        let off = Reserve::start(dir.path(), Some(0)).unwrap();
        assert_eq!((off.low(), off.keep()), (None, 0));
        assert!(space_of(&dir.path().join("missing")).is_err());
    }
}

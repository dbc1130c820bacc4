//! Online backups: a consistent copy of a serving organization, taken without stopping it.
//!
//! A backup is itself a data directory: the log's records up to the last event applied when the
//! backup began (every change acknowledged before it, since nothing is acknowledged before it
//! is applied), byte for byte (checksums and hash chain included), in a log of its own, with the
//! uploaded files, the server secret, the owner's `zuliprc` and the access and sign-in audits.
//! So the offline tools (`dump`, `log`, `replay`, `verify`, `export`) work on it while the
//! server runs, and restoring is putting it where a data directory goes and serving it.
//!
//! It is written beside its destination under a temporary name and renamed into place when
//! complete, after its hash chain was verified: a backup directory that exists is whole.

use crate::ids::Seq;
use crate::layout::Layout;
use crate::store::{EventLog, SledLog, StoreError};
use serde_json::{json, Value};
use std::path::Path;

/// What a backup holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The last event in it.
    pub seq: u64,
    pub records: u64,
    pub uploads: usize,
}

impl Report {
    pub fn json(&self) -> Value {
        json!({"seq": self.seq, "records": self.records, "uploads": self.uploads})
    }
}

/// The manifest's name in a backup.
pub const MANIFEST: &str = "BACKUP.json";

fn io(context: &str) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |e| StoreError::Io(format!("{context}: {e}"))
}

/// Copies the organization whose log is `log` and whose files are in `source` (a data
/// directory) into the new directory `dest`, up to event `upto`.
pub fn take(
    log: &dyn EventLog,
    source: &Path,
    upto: Seq,
    dest: &Path,
) -> Result<Report, StoreError> {
    if dest.exists() {
        return Err(StoreError::Io(format!("{} already exists", dest.display())));
    }
    let parent = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io("creating the backup's parent"))?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "backup".into());
    let tmp = parent.join(format!(".{name}.partial-{}", uuid::Uuid::new_v4().simple()));
    let written = write(log, source, upto, &tmp);
    let report = match written {
        Ok(report) => report,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(error);
        }
    };
    std::fs::rename(&tmp, dest).map_err(io("moving the backup into place"))?;
    Ok(report)
}

fn write(log: &dyn EventLog, source: &Path, upto: Seq, tmp: &Path) -> Result<Report, StoreError> {
    let (from, to) = (Layout::new(source), Layout::new(tmp));
    std::fs::create_dir_all(tmp).map_err(io("creating the backup"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(0o700))
            .map_err(io("securing the backup"))?;
    }
    // The records, as they are, in batches.
    let records = {
        let target = SledLog::open(&to.log())?;
        let mut batch = Vec::with_capacity(10_000);
        let mut count = 0u64;
        for item in log.scan_from(Seq(1)) {
            let (seq, record) = item?;
            if seq > upto {
                break;
            }
            batch.push((seq, record.to_vec()));
            count += 1;
            if batch.len() == 10_000 {
                target.append_batch(&batch)?;
                batch.clear();
            }
        }
        target.append_batch(&batch)?;
        target.flush()?;
        if count != upto.0 {
            return Err(StoreError::Io(format!(
                "the log holds {count} records up to {upto}: a backup needs them all"
            )));
        }
        // What was copied is what was written: checksums and the chain, end to end.
        let report = crate::store::verify_chain(&target, Some(upto))?;
        if let Some((seq, reason)) = report.first_break {
            return Err(StoreError::Corrupt { seq, reason });
        }
        count
    };
    // Uploaded files are named by their SHA-256 and never change: every one is copied, checked.
    let (files_from, files_to) = (
        crate::uploads::UploadStore::new(&from.uploads()),
        crate::uploads::UploadStore::new(&to.uploads()),
    );
    let hashes = files_from.hashes().map_err(io("listing the uploads"))?;
    for hash in &hashes {
        files_to
            .copy_from(&files_from, hash)
            .map_err(io("copying an upload"))?;
    }
    // The secret (without it every API key changes), the owner's zuliprc, the access and
    // sign-in audits.
    for (from_path, to_path) in [
        (from.secret(), to.secret()),
        (from.zuliprc(), to.zuliprc()),
        (from.access_audit(), to.access_audit()),
        (from.sign_in_audit(), to.sign_in_audit()),
    ] {
        if from_path.exists() {
            std::fs::copy(&from_path, &to_path).map_err(io("copying a file"))?;
        }
    }
    let report = Report {
        seq: upto.0,
        records,
        uploads: hashes.len(),
    };
    let mut manifest = report.json();
    manifest["taken_at"] = json!(crate::time::iso8601_ms(crate::time::now_ms()));
    std::fs::write(tmp.join(MANIFEST), format!("{manifest:#}\n"))
        .map_err(io("writing the manifest"))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_holds_the_records_up_to_its_seq_and_appears_only_whole() {
        let source = tempfile::tempdir().unwrap();
        let log = SledLog::open(&Layout::new(source.path()).log()).unwrap();
        let mut chain = crate::events::Chain::after(crate::events::GENESIS);
        let records: Vec<(Seq, Vec<u8>)> = (1..=5)
            .map(|n| {
                let env = crate::events::Envelope {
                    seq: Seq(n),
                    at: n as i64,
                    actor: None,
                    schema_version: crate::events::SCHEMA_VERSION,
                    event: crate::events::Event::RealmCreated {
                        name: format!("r{n}"),
                        description: String::new(),
                    },
                };
                (Seq(n), chain.seal(&env).unwrap())
            })
            .collect();
        log.append_batch(&records).unwrap();
        std::fs::write(source.path().join("secret.key"), b"secret").unwrap();
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("b1");
        let report = take(&log, source.path(), Seq(3), &dest).unwrap();
        assert_eq!(
            report,
            Report {
                seq: 3,
                records: 3,
                uploads: 0
            }
        );
        let copied = SledLog::open(&Layout::new(&dest).log()).unwrap();
        assert_eq!(copied.last_seq().unwrap(), Some(Seq(3)));
        assert_eq!(std::fs::read(dest.join("secret.key")).unwrap(), b"secret");
        assert!(dest.join(MANIFEST).exists());
        // A second backup to the same place is refused; a failed one leaves nothing.
        assert!(take(&log, source.path(), Seq(3), &dest).is_err());
        let too_far = out.path().join("b2");
        assert!(take(&log, source.path(), Seq(9), &too_far).is_err());
        let left: Vec<_> = std::fs::read_dir(out.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}

//! The access audit: who read the organization through the inspector, what they asked for, and
//! when. The inspector (`GET /api/v1/admin/events`, `/projections`, `/diff`) shows every
//! conversation, direct messages and private channels included, so each use is written here,
//! and made durable, before anything is read for it.
//!
//! It is a file of its own (`DATA_DIR/access-audit.jsonl`, one JSON object a line, readable by
//! the server's user only), not events of the log: reading changes nothing in the organization,
//! and a record in the log would move the state's `seq` with every look, so that two dumps of
//! an unchanged organization would differ and replay would fold reads. Each record carries the
//! log's `seq` at the time, which places it among the log's events. Owners list it with
//! `GET /api/v1/admin/inspections`; in a cluster each node keeps the records of the looks it
//! served.

use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file's name in a data directory.
pub const FILE_NAME: &str = "access-audit.jsonl";
/// The sign-in audit's file: every sign-in attempt, accepted or refused ([`SignIn`]).
pub const SIGN_IN_FILE_NAME: &str = "sign-in-audit.jsonl";

/// One attempt to sign in (a password, the directory's, a JSON Web Token, a reset link), as
/// the sign-in audit keeps it: never the secret that was presented.
#[derive(Debug, Clone, PartialEq)]
pub struct SignIn {
    pub at_ms: i64,
    /// `password`, `ldap`, `jwt`, `oidc` or `password_reset`.
    pub method: &'static str,
    /// What the person typed as their login (cut to 100 characters), if anything.
    pub login: String,
    /// The account signed in, when it was.
    pub user_id: Option<u64>,
    /// `ok`, or the refusal's code (`AUTHENTICATION_FAILED`, `USER_DEACTIVATED`, ...).
    pub outcome: String,
    pub ip: Option<std::net::IpAddr>,
}

impl SignIn {
    fn json(&self) -> Value {
        json!({
            "at": crate::time::iso8601_ms(self.at_ms),
            "method": self.method,
            "login": self.login.chars().take(100).collect::<String>(),
            "user_id": self.user_id,
            "outcome": self.outcome,
            "ip": self.ip.map(|ip| ip.to_string()),
        })
    }
}

/// One look through the inspector.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    pub at_ms: i64,
    pub user_id: u64,
    pub email: String,
    /// `events`, `projections` or `diff`.
    pub endpoint: String,
    /// The request's parameters that say what was asked for (`Params::audit_text`).
    pub query: String,
    /// The log's last applied event when the look was made.
    pub log_seq: u64,
}

impl Look {
    fn json(&self) -> Value {
        json!({
            "at": crate::time::iso8601_ms(self.at_ms),
            "user_id": self.user_id,
            "email": self.email,
            "endpoint": self.endpoint,
            "query": self.query,
            "log_seq": self.log_seq,
        })
    }
}

/// The open file, appended to under a lock.
#[derive(Debug)]
pub struct AccessAudit {
    path: PathBuf,
    file: Mutex<File>,
}

impl AccessAudit {
    /// Opens (or creates, readable by the owner only) the file in `dir`.
    pub fn open(dir: &Path) -> std::io::Result<AccessAudit> {
        AccessAudit::open_file(dir, FILE_NAME)
    }

    /// Opens (or creates, readable by the owner only) the audit file `name` in `dir`.
    pub fn open_file(dir: &Path, name: &str) -> std::io::Result<AccessAudit> {
        let path = dir.join(name);
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(&path)?;
        Ok(AccessAudit {
            path,
            file: Mutex::new(file),
        })
    }

    /// Appends `look` and waits until it is on disk.
    pub fn record(&self, look: &Look) -> std::io::Result<()> {
        self.append(&look.json(), true)
    }

    /// Appends a sign-in attempt. Not waited for on disk: a sign-in does not wait on the
    /// audit, and the attempts are bounded by the limits on guessing.
    pub fn record_sign_in(&self, attempt: &SignIn) -> std::io::Result<()> {
        self.append(&attempt.json(), false)
    }

    fn append(&self, record: &Value, durable: bool) -> std::io::Result<()> {
        let mut line = record.to_string();
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(line.as_bytes())?;
        if durable {
            file.sync_data()?;
        }
        Ok(())
    }

    /// The newest `limit` records, oldest first. A line that does not parse (a write cut short
    /// by a crash) is skipped.
    pub fn newest(&self, limit: usize) -> std::io::Result<Vec<Value>> {
        let file = File::open(&self.path)?;
        let mut kept = std::collections::VecDeque::with_capacity(limit.min(1024));
        for line in BufReader::new(file).lines() {
            let Ok(value) = serde_json::from_str::<Value>(&line?) else {
                continue;
            };
            if kept.len() == limit {
                kept.pop_front();
            }
            kept.push_back(value);
        }
        Ok(kept.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_are_appended_kept_across_opens_and_listed_newest_last() {
        let dir = tempfile::tempdir().unwrap();
        let look = |n: u64| Look {
            at_ms: 1_700_000_000_000 + n as i64,
            user_id: n,
            email: format!("u{n}@example.com"),
            endpoint: "events".into(),
            query: format!("after_seq={n}"),
            log_seq: 10 + n,
        };
        let audit = AccessAudit::open(dir.path()).unwrap();
        audit.record(&look(1)).unwrap();
        drop(audit);
        let audit = AccessAudit::open(dir.path()).unwrap();
        audit.record(&look(2)).unwrap();
        audit.record(&look(3)).unwrap();
        // A torn last line is skipped, not an error.
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE_NAME))
            .unwrap()
            .write_all(b"{\"at\": \"2023")
            .unwrap();
        let newest = audit.newest(2).unwrap();
        assert_eq!(newest, vec![look(2).json(), look(3).json()]);
        assert_eq!(audit.newest(10).unwrap().len(), 3);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE_NAME))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}

//! Where things are in a data directory: one place names every file and folder, so that the
//! server, the offline commands, backups and the benchmark agree.

use std::path::{Path, PathBuf};

/// The files of a data directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub dir: PathBuf,
}

impl Layout {
    pub fn new(dir: &Path) -> Layout {
        Layout {
            dir: dir.to_path_buf(),
        }
    }
    /// Uploaded files' bytes (`crate::uploads`).
    pub fn uploads(&self) -> PathBuf {
        self.dir.join("uploads")
    }
    pub fn log(&self) -> PathBuf {
        self.dir.join("log")
    }
    pub fn secret(&self) -> PathBuf {
        self.dir.join("secret.key")
    }
    pub fn zuliprc(&self) -> PathBuf {
        self.dir.join("zuliprc")
    }
    pub fn initial_password(&self) -> PathBuf {
        self.dir.join("initial-password")
    }
    /// Invitation emails, one file each (Chronicle's mail delivery).
    pub fn outbox(&self) -> PathBuf {
        self.dir.join("outbox")
    }
    /// Who looked through the inspector (`crate::access_audit`).
    pub fn access_audit(&self) -> PathBuf {
        self.dir.join(crate::access_audit::FILE_NAME)
    }

    /// Every sign-in attempt (`access_audit::SignIn`).
    pub fn sign_in_audit(&self) -> PathBuf {
        self.dir.join(crate::access_audit::SIGN_IN_FILE_NAME)
    }
}

//! The bytes of an export: a zip file or a directory, read entry by entry within bounds.
//!
//! Nothing is unpacked to disk. Every entry name is checked before anything is read: names
//! are UTF-8 whether or not the zip marks them so (Slack does not), and a name that is absolute,
//! holds a `..` component, a backslash or a NUL, refuses the whole archive, since an export
//! that tries to climb out of its directory is not an export. What an archive may expand to is
//! bounded as Zulip bounds it (more than 1 GiB *and* more than ten times the archive is refused;
//! the operator may raise the 1 GiB for an export they trust), by the sizes it declares and
//! again by the bytes actually read.

use super::ImportError;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// More than this much expanded data *and* more than [`MAX_RATIO`] times the archive is
/// refused (Zulip's rule for uploaded exports), unless the operator allows more
/// (`--max-expanded-gib`: a large organization's export compresses better than ten to one).
pub const MAX_EXPANDED: u64 = 1 << 30;

/// The refusal of an archive that expands beyond what is allowed.
fn too_large(path: &Path, floor: u64) -> ImportError {
    ImportError::new(format!(
        "{}: the archive expands to more than {} GiB and more than ten times its own size; \
         refused (an export you trust may be allowed more with --max-expanded-gib)",
        path.display(),
        floor >> 30
    ))
}
pub const MAX_RATIO: u64 = 10;
/// At most this many entries in a tar.gz (each is a file in the scratch directory).
pub const MAX_ENTRIES: usize = 2_000_000;

/// A reader that fails once more than `left` bytes came through: the inflated stream of a
/// tar.gz is bounded before the tar reader sees it (its long-name and PAX headers are read
/// whole, at the size they claim).
struct Bounded<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("it expands to more than is allowed"));
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// An opened export.
pub struct Archive {
    kind: Kind,
    /// Entry name → declared size (files only, `/`-separated, no leading `./`).
    entries: BTreeMap<String, u64>,
    /// Hex SHA-256 of the file (or of a directory's names and contents in name order).
    pub sha256: String,
    /// Bytes read so far, and the most that may be.
    read: u64,
    allowed: u64,
}

enum Kind {
    Zip(Box<zip::ZipArchive<File>>, BTreeMap<String, usize>),
    Dir(PathBuf),
    /// One JSON or JSON Lines file (Mattermost's bare `import.jsonl`), its one entry.
    File(PathBuf),
}

/// Checks one entry name; returns it without a leading `./`.
fn checked_name(raw: &[u8], archive: &Path) -> Result<String, ImportError> {
    let name = std::str::from_utf8(raw).map_err(|_| {
        ImportError::new(format!(
            "{}: an entry's name is not UTF-8 ({})",
            archive.display(),
            String::from_utf8_lossy(raw)
        ))
    })?;
    let trimmed = name.trim_start_matches("./");
    let climbs = trimmed.starts_with('/')
        || trimmed.contains('\\')
        || trimmed.contains('\0')
        || trimmed.split('/').any(|part| part == "..")
        || trimmed.as_bytes().get(1) == Some(&b':');
    if climbs {
        return Err(ImportError::new(format!(
            "{}: the entry {name:?} would land outside the export's directory; refused",
            archive.display()
        )));
    }
    Ok(trimmed.to_owned())
}

impl Archive {
    /// Opens a zip file, a gzipped tar file (unpacked into `scratch`, an empty directory the
    /// caller removes), a JSON (Lines) file, or a directory.
    /// More than `floor` bytes expanded *and* more than ten times the archive is refused.
    pub fn open_in(path: &Path, scratch: &Path, floor: u64) -> Result<Archive, ImportError> {
        let mut magic = [0u8; 2];
        let gzipped = File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok()
            && magic == [0x1f, 0x8b];
        if !gzipped {
            return Archive::open(path, floor);
        }
        let size = std::fs::metadata(path)
            .map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?
            .len();
        let allowed = floor.max(size.saturating_mul(MAX_RATIO));
        let file =
            File::open(path).map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
        let mut tar = tar::Archive::new(Bounded {
            inner: flate2::read::GzDecoder::new(file),
            // The files, and their headers (a 512-byte block each, and some padding).
            left: allowed.saturating_add(allowed / 16).saturating_add(1 << 20),
        });
        let damaged = |e: std::io::Error| {
            ImportError::new(format!("{}: a damaged tar.gz file ({e})", path.display()))
        };
        let mut total: u64 = 0;
        for (count, entry) in tar.entries().map_err(damaged)?.enumerate() {
            if count >= MAX_ENTRIES {
                return Err(ImportError::new(format!(
                    "{}: more than {MAX_ENTRIES} entries; refused",
                    path.display()
                )));
            }
            let mut entry = entry.map_err(damaged)?;
            let name = checked_name(&entry.path_bytes(), path)?;
            let kind = entry.header().entry_type();
            if kind.is_dir() || name.is_empty() {
                continue;
            }
            if !kind.is_file() {
                return Err(ImportError::new(format!(
                    "{}: the entry {name:?} is a link or a device, not a file; refused",
                    path.display()
                )));
            }
            let declared = entry.header().size().map_err(damaged)?;
            total = total.saturating_add(declared);
            if total > allowed {
                return Err(too_large(path, floor));
            }
            let target = scratch.join(&name);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| ImportError::new(format!("{}: {e}", parent.display())))?;
            }
            let mut out = File::create(&target)
                .map_err(|e| ImportError::new(format!("{}: {e}", target.display())))?;
            let copied =
                std::io::copy(&mut (&mut entry).take(declared), &mut out).map_err(damaged)?;
            if copied != declared {
                return Err(ImportError::new(format!(
                    "{name}: cut short in the archive"
                )));
            }
        }
        let mut archive = Archive::open_dir(scratch)?;
        let mut hasher = Sha256::new();
        let mut file =
            File::open(path).map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
        std::io::copy(&mut file, &mut hasher)
            .map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
        archive.sha256 = hex(&hasher.finalize());
        Ok(archive)
    }

    /// Opens a zip file or a directory.
    pub fn open(path: &Path, floor: u64) -> Result<Archive, ImportError> {
        let meta = std::fs::metadata(path)
            .map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
        if meta.is_dir() {
            return Archive::open_dir(path);
        }
        let mut file =
            File::open(path).map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher)
            .map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
        let sha256 = hex(&hasher.finalize());
        let mut magic = [0u8; 4];
        let zip_magic = File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok()
            && magic == *b"PK\x03\x04";
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !zip_magic && (name.ends_with(".jsonl") || name.ends_with(".json")) {
            return Ok(Archive {
                kind: Kind::File(path.to_path_buf()),
                entries: BTreeMap::from([(name, meta.len())]),
                sha256,
                read: 0,
                allowed: u64::MAX,
            });
        }
        let file =
            File::open(path).map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
        let mut zip = zip::ZipArchive::new(file).map_err(|e| {
            ImportError::new(format!("{}: not a readable zip file ({e})", path.display()))
        })?;
        let mut entries = BTreeMap::new();
        let mut index = BTreeMap::new();
        let mut declared: u64 = 0;
        for i in 0..zip.len() {
            let entry = zip.by_index_raw(i).map_err(|e| {
                ImportError::new(format!("{}: a damaged zip entry ({e})", path.display()))
            })?;
            let name = checked_name(entry.name_raw(), path)?;
            if entry.is_dir() || name.ends_with('/') {
                continue;
            }
            declared = declared.saturating_add(entry.size());
            entries.insert(name.clone(), entry.size());
            index.insert(name, i);
        }
        let allowed = floor.max(meta.len().saturating_mul(MAX_RATIO));
        if declared > allowed {
            return Err(too_large(path, floor));
        }
        Ok(Archive {
            kind: Kind::Zip(Box::new(zip), index),
            entries,
            sha256,
            read: 0,
            allowed,
        })
    }

    fn open_dir(root: &Path) -> Result<Archive, ImportError> {
        let mut entries = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let listing = std::fs::read_dir(&dir)
                .map_err(|e| ImportError::new(format!("{}: {e}", dir.display())))?;
            for item in listing {
                let item = item.map_err(|e| ImportError::new(format!("{}: {e}", dir.display())))?;
                let path = item.path();
                let meta = std::fs::symlink_metadata(&path)
                    .map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
                if meta.file_type().is_symlink() {
                    return Err(ImportError::new(format!(
                        "{}: a symbolic link in an export is not followed; refused",
                        path.display()
                    )));
                }
                if meta.is_dir() {
                    stack.push(path);
                    continue;
                }
                let relative = path.strip_prefix(root).unwrap_or(&path);
                let name = relative
                    .to_str()
                    .ok_or_else(|| {
                        ImportError::new(format!("{}: a name that is not UTF-8", path.display()))
                    })?
                    .replace(std::path::MAIN_SEPARATOR, "/");
                entries.insert(name, meta.len());
            }
        }
        // A directory's digest: each name and its bytes, in name order.
        let mut hasher = Sha256::new();
        for name in entries.keys() {
            hasher.update(name.as_bytes());
            hasher.update([0]);
            let mut file = File::open(root.join(name))
                .map_err(|e| ImportError::new(format!("{name}: {e}")))?;
            std::io::copy(&mut file, &mut hasher)
                .map_err(|e| ImportError::new(format!("{name}: {e}")))?;
        }
        Ok(Archive {
            kind: Kind::Dir(root.to_path_buf()),
            entries,
            sha256: hex(&hasher.finalize()),
            read: 0,
            allowed: u64::MAX,
        })
    }

    /// Every file's name, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// The bytes of one entry, no more than it declared.
    pub fn read(&mut self, name: &str) -> Result<Vec<u8>, ImportError> {
        let declared = *self
            .entries
            .get(name)
            .ok_or_else(|| ImportError::new(format!("{name}: missing from the export")))?;
        if self.read.saturating_add(declared) > self.allowed {
            return Err(ImportError::new(format!(
                "{name}: the archive expands to more than is allowed; refused (an export you \
                 trust may be allowed more with --max-expanded-gib)"
            )));
        }
        let mut out = Vec::with_capacity(declared.min(1 << 24) as usize);
        match &mut self.kind {
            Kind::Zip(zip, index) => {
                let i = index[name];
                let entry = zip
                    .by_index(i)
                    .map_err(|e| ImportError::new(format!("{name}: damaged in the zip ({e})")))?;
                entry
                    .take(declared.saturating_add(1))
                    .read_to_end(&mut out)
                    .map_err(|e| ImportError::new(format!("{name}: damaged in the zip ({e})")))?;
            }
            Kind::File(path) => {
                File::open(path)
                    .and_then(|f| f.take(declared.saturating_add(1)).read_to_end(&mut out))
                    .map_err(|e| ImportError::new(format!("{name}: {e}")))?;
            }
            Kind::Dir(root) => {
                File::open(root.join(name))
                    .and_then(|f| f.take(declared.saturating_add(1)).read_to_end(&mut out))
                    .map_err(|e| ImportError::new(format!("{name}: {e}")))?;
            }
        }
        if out.len() as u64 > declared {
            return Err(ImportError::new(format!(
                "{name}: holds more bytes than the archive declares; refused"
            )));
        }
        self.read += out.len() as u64;
        Ok(out)
    }

    /// One entry parsed as JSON (serde_json bounds nesting at 128 levels).
    pub fn json(&mut self, name: &str) -> Result<serde_json::Value, ImportError> {
        self.json_as(name, "JSON")
    }

    /// An entry read as `T`; an error names the entry, the line and what was expected.
    pub fn json_as<T: serde::de::DeserializeOwned>(
        &mut self,
        name: &str,
        expected: &str,
    ) -> Result<T, ImportError> {
        let bytes = self.read(name)?;
        parse_json(name, &bytes, expected)
    }
}

/// The bytes of entry `name` read as `T`; an error names the entry, the line and what was
/// expected (serde_json bounds nesting at 128 levels).
pub fn parse_json<T: serde::de::DeserializeOwned>(
    name: &str,
    bytes: &[u8],
    expected: &str,
) -> Result<T, ImportError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let what = if e.is_data() {
            format!("not {expected}")
        } else {
            "not valid JSON".to_owned()
        };
        ImportError::new(format!(
            "{name}: {what} (line {}, column {}: {e})",
            e.line(),
            e.column()
        ))
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_climb_out_are_refused() {
        let here = Path::new("export.zip");
        for bad in [
            &b"../etc/passwd"[..],
            b"/etc/passwd",
            b"general/../../x.json",
            b"a\\..\\b",
            b"c:/x",
            b"a\0b",
        ] {
            let error = checked_name(bad, here).unwrap_err().to_string();
            assert!(error.contains("outside the export's directory"), "{error}");
        }
        assert_eq!(
            checked_name(b"./general/2018-01-20.json", here).unwrap(),
            "general/2018-01-20.json"
        );
        assert_eq!(
            checked_name("チャネル/2018-01-20.json".as_bytes(), here).unwrap(),
            "チャネル/2018-01-20.json"
        );
        assert!(checked_name(&[0xff, 0xfe], here)
            .unwrap_err()
            .to_string()
            .contains("not UTF-8"));
    }
}

//! The bytes of an export: a zip file, a gzipped tar file or a directory, read entry by entry
//! within bounds.
//!
//! A zip file is read in place. A tar.gz, which can only be read from its start, is unpacked by
//! a thread of its own while the import reads what has landed: the entries an importer names
//! as streamed (Zulip's message files) are held in memory until it takes them, within a
//! budget, and every other entry goes to a scratch directory. An export whose tar lists its
//! message files in order after what the import needs first (Chronicle's own exports) is thus
//! imported as it is inflated, without its messages touching the disk; one in another order
//! (Zulip's tar follows its file system's order) waits for what it needs, and the entries that
//! come before are written to scratch. Every entry name is checked before anything is read: names
//! are UTF-8 whether or not the zip marks them so (Slack does not), and a name that is absolute,
//! holds a `..` component, a backslash or a NUL, refuses the whole archive, since an export
//! that tries to climb out of its directory is not an export. What an archive may expand to is
//! bounded as Zulip bounds it (more than 1 GiB *and* more than ten times the archive is refused;
//! the operator may raise the 1 GiB for an export they trust), by the sizes it declares and
//! again by the bytes actually read.

use super::ImportError;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

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
    /// A tar.gz being unpacked (into its scratch directory, and memory) while it is read.
    Tar(Unpacking),
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
    /// caller removes after dropping the archive), a JSON (Lines) file, or a directory.
    /// More than `floor` bytes expanded *and* more than ten times the archive is refused.
    /// `streamed` names the entries of a tar.gz the importer takes one by one as it goes (see
    /// [`Archive::take`]): with it, the tar is read while the import runs; without it, it is
    /// unpacked whole before this returns.
    pub fn open_in(
        path: &Path,
        scratch: &Path,
        floor: u64,
        streamed: Option<fn(&str) -> bool>,
    ) -> Result<Archive, ImportError> {
        let mut magic = [0u8; 2];
        let gzipped = File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok()
            && magic == [0x1f, 0x8b];
        if !gzipped {
            return Archive::open(path, floor);
        }
        Archive::open_tar(path, scratch, floor, streamed, HELD_BUDGET)
    }

    /// [`Archive::open_in`] for a tar.gz, holding at most `budget` bytes of streamed entries.
    fn open_tar(
        path: &Path,
        scratch: &Path,
        floor: u64,
        streamed: Option<fn(&str) -> bool>,
        budget: u64,
    ) -> Result<Archive, ImportError> {
        let size = std::fs::metadata(path)
            .map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?
            .len();
        let sha256 = sha256_of(path)?;
        let file =
            File::open(path).map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
        let shared = Arc::new(Shared::default());
        let unpacker = Unpacker {
            path: path.to_path_buf(),
            scratch: scratch.to_path_buf(),
            floor,
            allowed: floor.max(size.saturating_mul(MAX_RATIO)),
            streamed,
            budget,
            shared: shared.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("import-unpack".into())
            .spawn(move || unpacker.run(file))?;
        let mut archive = Archive {
            kind: Kind::Tar(Unpacking {
                shared,
                thread: Some(thread),
                scratch: scratch.to_path_buf(),
            }),
            entries: BTreeMap::new(),
            sha256,
            read: 0,
            allowed: u64::MAX,
        };
        if streamed.is_none() {
            archive.finish()?;
        }
        Ok(archive)
    }

    /// Opens a zip file or a directory.
    pub fn open(path: &Path, floor: u64) -> Result<Archive, ImportError> {
        let meta = std::fs::metadata(path)
            .map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
        if meta.is_dir() {
            return Archive::open_dir(path);
        }
        let sha256 = sha256_of(path)?;
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

    /// Every file's name, in order. A streamed tar.gz lists them once [`Archive::finish`]ed.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Whether the export holds `name` (for a tar.gz being unpacked: once it has landed, or
    /// the unpacking has ended without it; an unpacking that failed is the error).
    pub fn contains(&self, name: &str) -> Result<bool, ImportError> {
        match &self.kind {
            Kind::Tar(unpacking) => Ok(unpacking.landed(name)?.is_some()),
            _ => Ok(self.entries.contains_key(name)),
        }
    }

    /// The entry named `file` at the top of the export or in its one top-level directory (the
    /// shortest such name; in a tar.gz being unpacked, the first to land).
    pub fn find_top(&self, file: &str) -> Result<Option<String>, ImportError> {
        let top = |name: &str| {
            name.strip_suffix(file)
                .is_some_and(|dir| dir.is_empty() || dir.find('/') == Some(dir.len() - 1))
        };
        match &self.kind {
            Kind::Tar(unpacking) => unpacking.first_landed(top),
            _ => Ok(self
                .names()
                .filter(|n| top(n))
                .min_by_key(|n| n.len())
                .map(str::to_owned)),
        }
    }

    /// Waits for a tar.gz's unpacking to end and answers its error if it failed (then lists
    /// its entries in [`Archive::names`]); nothing to wait for in other archives.
    pub fn finish(&mut self) -> Result<(), ImportError> {
        if let Kind::Tar(unpacking) = &self.kind {
            self.entries = unpacking.ended()?;
        }
        Ok(())
    }

    /// The bytes of a streamed entry, read once: held in memory, they are let go of (and a
    /// second take is an error); written to scratch, as [`Archive::read`].
    pub fn take(&mut self, name: &str) -> Result<Vec<u8>, ImportError> {
        self.read_entry(name, true)
    }

    /// The bytes of one entry, no more than it declared.
    pub fn read(&mut self, name: &str) -> Result<Vec<u8>, ImportError> {
        self.read_entry(name, false)
    }

    /// [`Archive::read`], or with `take` [`Archive::take`].
    fn read_entry(&mut self, name: &str, take: bool) -> Result<Vec<u8>, ImportError> {
        let (declared, mut held) = match &self.kind {
            Kind::Tar(unpacking) => unpacking.landed_bytes(name, take)?,
            _ => self.entries.get(name).map(|declared| (*declared, None)),
        }
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
            Kind::Tar(unpacking) => match held.take() {
                Some(bytes) => out = bytes,
                None => {
                    File::open(unpacking.scratch.join(name))
                        .and_then(|f| f.take(declared.saturating_add(1)).read_to_end(&mut out))
                        .map_err(|e| ImportError::new(format!("{name}: {e}")))?;
                }
            },
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

/// What a tar.gz's unpacking thread holds in memory at most, for the entries the importer
/// takes as it goes (a Zulip message file is some 5 MB): past it, the thread waits for the
/// importer to take some, or writes to scratch when the importer waits for a later entry.
const HELD_BUDGET: u64 = 64 << 20;

/// An entry that has landed: its declared size, and its bytes if they were held in memory.
type Landed = (u64, Option<Vec<u8>>);

/// A tar.gz being unpacked by its thread, seen from the reading side.
struct Unpacking {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    scratch: PathBuf,
}

/// What the unpacking thread and the reader share.
#[derive(Default)]
struct Shared {
    state: Mutex<Landing>,
    /// Signalled on every change of `state`.
    changed: Condvar,
}

/// The entries landed so far, and how the unpacking goes.
#[derive(Default)]
struct Landing {
    /// Entry name → declared size, for every entry landed (in memory or in scratch).
    entries: BTreeMap<String, u64>,
    /// The names in the order they landed (the tar's).
    order: Vec<String>,
    /// Streamed entries held in memory until taken, and their bytes in all.
    held: HashMap<String, Vec<u8>>,
    held_bytes: u64,
    /// Whether the reader waits for an entry that has not landed.
    waiting: bool,
    /// The end: every entry landed, or why the unpacking stopped.
    ended: Option<Result<(), String>>,
    /// The reader is gone: stop.
    cancelled: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Landing> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, Landing>) -> MutexGuard<'a, Landing> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }
}

impl Unpacking {
    /// Waits until an entry for which `found` answers something has landed, or the unpacking
    /// has ended (`None`; its error if it failed).
    fn until<T>(
        &self,
        mut found: impl FnMut(&Landing) -> Option<T>,
    ) -> Result<Option<T>, ImportError> {
        let mut landing = self.shared.lock();
        let answer = loop {
            if let Some(answer) = found(&landing) {
                break Ok(Some(answer));
            }
            match &landing.ended {
                Some(Ok(())) => break Ok(None),
                Some(Err(why)) => break Err(ImportError::new(why.clone())),
                None => {}
            }
            if !landing.waiting {
                landing.waiting = true;
                self.shared.changed.notify_all();
            }
            landing = self.shared.wait(landing);
        };
        landing.waiting = false;
        answer
    }

    /// The declared size of `name` once it has landed; `None` if the archive ended without it.
    fn landed(&self, name: &str) -> Result<Option<u64>, ImportError> {
        self.until(|l| l.entries.get(name).copied())
    }

    /// The first entry landed whose name `top` accepts.
    fn first_landed(&self, top: impl Fn(&str) -> bool) -> Result<Option<String>, ImportError> {
        let mut seen = 0;
        self.until(|l| {
            let found = l.order[seen..].iter().find(|n| top(n)).cloned();
            seen = l.order.len();
            found
        })
    }

    /// [`Unpacking::landed`], with `name`'s bytes if they are held in memory: a copy, or with
    /// `take` the bytes themselves, let go of.
    fn landed_bytes(&self, name: &str, take: bool) -> Result<Option<Landed>, ImportError> {
        let Some(declared) = self.landed(name)? else {
            return Ok(None);
        };
        let mut landing = self.shared.lock();
        let bytes = if take {
            let bytes = landing.held.remove(name);
            if let Some(bytes) = &bytes {
                landing.held_bytes -= bytes.len() as u64;
                self.shared.changed.notify_all();
            }
            bytes
        } else {
            landing.held.get(name).cloned()
        };
        Ok(Some((declared, bytes)))
    }

    /// Waits for the end of the unpacking; every entry, or why it failed.
    fn ended(&self) -> Result<BTreeMap<String, u64>, ImportError> {
        self.until(|_| None::<()>)?;
        Ok(self.shared.lock().entries.clone())
    }
}

impl Drop for Unpacking {
    fn drop(&mut self) {
        self.shared.lock().cancelled = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The unpacking thread's work.
struct Unpacker {
    path: PathBuf,
    scratch: PathBuf,
    floor: u64,
    allowed: u64,
    streamed: Option<fn(&str) -> bool>,
    /// At most this many bytes of streamed entries in memory.
    budget: u64,
    shared: Arc<Shared>,
}

impl Unpacker {
    fn run(self, file: File) {
        // A panic here would leave the reader waiting for an end that never comes.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.entries(file)))
            .unwrap_or_else(|_| {
                Err(ImportError::new(format!(
                    "{}: unpacking the tar.gz failed",
                    self.path.display()
                )))
            });
        let mut landing = self.shared.lock();
        landing.ended = Some(result.map_err(|e| e.to_string()));
        self.shared.changed.notify_all();
    }

    /// Whether a streamed entry of `size` bytes is to be held in memory: when the budget has
    /// room (waiting for the reader to take some while it reads on), not when the reader waits
    /// for a later entry. `None`: stop, the reader is gone.
    fn hold(&self, size: u64) -> Option<bool> {
        if size > self.budget {
            return Some(false);
        }
        let mut landing = self.shared.lock();
        loop {
            if landing.cancelled {
                return None;
            }
            if landing.held_bytes + size <= self.budget {
                return Some(true);
            }
            if landing.waiting {
                return Some(false);
            }
            landing = self.shared.wait(landing);
        }
    }

    fn entries(&self, file: File) -> Result<(), ImportError> {
        let path = &self.path;
        let mut tar = tar::Archive::new(Bounded {
            inner: flate2::read::GzDecoder::new(std::io::BufReader::with_capacity(1 << 16, file)),
            // The files, and their headers (a 512-byte block each, and some padding).
            left: self
                .allowed
                .saturating_add(self.allowed / 16)
                .saturating_add(1 << 20),
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
            if total > self.allowed {
                return Err(too_large(path, self.floor));
            }
            let streamed = self.streamed.is_some_and(|streamed| streamed(&name));
            let held = if streamed {
                match self.hold(declared) {
                    Some(held) => held,
                    None => return Ok(()),
                }
            } else {
                false
            };
            let short = || ImportError::new(format!("{name}: cut short in the archive"));
            let mut bytes = None;
            if held {
                let mut out = Vec::with_capacity(declared as usize);
                (&mut entry)
                    .take(declared)
                    .read_to_end(&mut out)
                    .map_err(damaged)?;
                if out.len() as u64 != declared {
                    return Err(short());
                }
                bytes = Some(out);
            } else {
                let target = self.scratch.join(&name);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| ImportError::new(format!("{}: {e}", parent.display())))?;
                }
                let mut out = File::create(&target)
                    .map_err(|e| ImportError::new(format!("{}: {e}", target.display())))?;
                let copied =
                    std::io::copy(&mut (&mut entry).take(declared), &mut out).map_err(damaged)?;
                if copied != declared {
                    return Err(short());
                }
            }
            let mut landing = self.shared.lock();
            if landing.cancelled {
                return Ok(());
            }
            // A name given twice: the later entry is the one read, as when unpacked by tar.
            if let Some(earlier) = landing.held.remove(&name) {
                landing.held_bytes -= earlier.len() as u64;
            }
            if let Some(bytes) = bytes {
                landing.held_bytes += bytes.len() as u64;
                landing.held.insert(name.clone(), bytes);
            }
            landing.order.push(name.clone());
            landing.entries.insert(name, declared);
            self.shared.changed.notify_all();
        }
        Ok(())
    }
}

/// Hex SHA-256 of the file at `path`.
fn sha256_of(path: &Path) -> Result<String, ImportError> {
    let mut hasher = Sha256::new();
    File::open(path)
        .and_then(|mut file| std::io::copy(&mut file, &mut hasher))
        .map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
    Ok(hex(&hasher.finalize()))
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

    /// A tar.gz of `entries` (name, bytes), in that order, at `path`; cut to `keep` bytes.
    fn tar_gz(path: &Path, entries: &[(&str, &[u8])], keep: Option<usize>) {
        let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::default(),
        ));
        for (name, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o600);
            header.set_cksum();
            tar.append_data(&mut header, name, *bytes).unwrap();
        }
        let mut gz = tar.into_inner().unwrap().finish().unwrap();
        if let Some(keep) = keep {
            gz.truncate(keep);
        }
        std::fs::write(path, gz).unwrap();
    }

    fn streamed(name: &str) -> bool {
        name.starts_with("x/m-")
    }

    #[test]
    fn a_tar_gz_is_read_while_it_unpacks_whatever_its_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("export.tar.gz");
        let big = vec![b'm'; 300];
        // Streamed entries before and after what the reader asks for first; a budget that
        // holds one of them, so that the others wait for it or go to scratch.
        tar_gz(
            &path,
            &[
                ("x/m-1", b"one"),
                ("x/m-2", &big),
                ("x/uploads/a/realm.json", b"an upload"),
                ("x/realm.json", b"{}"),
                ("x/m-3", b"three"),
                ("x/m-4", b"four"),
                ("x/notes.txt", b"notes"),
            ],
            None,
        );
        let scratch = dir.path().join("scratch");
        std::fs::create_dir(&scratch).unwrap();
        let mut archive = Archive::open_tar(&path, &scratch, 1 << 30, Some(streamed), 6).unwrap();
        assert_eq!(
            archive.find_top("realm.json").unwrap().as_deref(),
            Some("x/realm.json")
        );
        assert_eq!(archive.read("x/realm.json").unwrap(), b"{}");
        assert_eq!(archive.take("x/m-1").unwrap(), b"one");
        assert_eq!(archive.take("x/m-2").unwrap(), big);
        assert_eq!(archive.read("x/m-3").unwrap(), b"three");
        // (Whether m-3 was held or written to scratch depends on the two threads' timing:
        // taking it twice is checked below, where it is surely held.)
        assert_eq!(archive.take("x/m-3").unwrap(), b"three");
        assert_eq!(archive.take("x/m-4").unwrap(), b"four");
        assert!(!archive.contains("x/m-5").unwrap());
        assert!(archive.contains("x/notes.txt").unwrap());
        archive.finish().unwrap();
        assert_eq!(archive.names().count(), 7);
        assert_eq!(archive.read("x/notes.txt").unwrap(), b"notes");
    }

    #[test]
    fn a_streamed_entry_held_in_memory_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("export.tar.gz");
        tar_gz(&path, &[("x/realm.json", b"{}"), ("x/m-1", b"one")], None);
        let scratch = dir.path().join("scratch");
        std::fs::create_dir(&scratch).unwrap();
        // The budget has room for every streamed entry: m-1 is held whatever the timing.
        let mut archive =
            Archive::open_tar(&path, &scratch, 1 << 30, Some(streamed), 1 << 20).unwrap();
        assert_eq!(archive.take("x/m-1").unwrap(), b"one");
        assert!(archive.take("x/m-1").is_err(), "a held entry is taken once");
        archive.finish().unwrap();
    }

    #[test]
    fn a_tar_gz_damaged_past_what_was_read_fails_at_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("export.tar.gz");
        // Bytes that do not compress, so that the cut falls inside the second file.
        let mut x: u64 = 1;
        let noise: Vec<u8> = (0..200_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        tar_gz(
            &path,
            &[
                ("x/realm.json", b"{}"),
                ("x/m-1", &noise),
                ("x/m-2", &noise),
            ],
            Some(60_000),
        );
        let scratch = dir.path().join("scratch");
        std::fs::create_dir(&scratch).unwrap();
        let mut archive =
            Archive::open_tar(&path, &scratch, 1 << 30, Some(streamed), 1 << 20).unwrap();
        assert_eq!(archive.read("x/realm.json").unwrap(), b"{}");
        let error = archive.contains("x/m-2").unwrap_err().to_string();
        assert!(error.contains("a damaged tar.gz file"), "{error}");
        let error = archive.finish().unwrap_err().to_string();
        assert!(error.contains("a damaged tar.gz file"), "{error}");
        // Unpacked whole before it answers, the same archive is refused at once.
        let scratch = dir.path().join("scratch-whole");
        std::fs::create_dir(&scratch).unwrap();
        let error = Archive::open_in(&path, &scratch, 1 << 30, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("a damaged tar.gz file"), "{error}");
    }
}

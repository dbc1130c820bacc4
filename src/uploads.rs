//! The bytes of uploaded files: `DATA_DIR/uploads/{first two hex digits}/{SHA-256}`, one file
//! per distinct content, whoever uploaded it and however often.
//!
//! An upload is received into `uploads/tmp/` while it is hashed and counted, synced, then
//! renamed into place (and the directory synced) before its `AttachmentUploaded` event is
//! appended: an acknowledged upload is on disk, and a crash in between leaves at most a file no
//! event names, which `chronicle erase` removes. The log records the hash, never the bytes.

use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The upload directory of a data directory.
#[derive(Debug, Clone)]
pub struct UploadStore {
    dir: PathBuf,
}

/// Why an upload was not received.
#[derive(Debug)]
pub enum ReceiveError {
    /// More bytes than the limit.
    TooLarge,
    Io(io::Error),
}

impl From<io::Error> for ReceiveError {
    fn from(e: io::Error) -> Self {
        ReceiveError::Io(e)
    }
}

/// Whether `text` is a hex SHA-256 (so that a name read from the log never leaves the store).
fn is_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

impl UploadStore {
    pub fn new(dir: &Path) -> UploadStore {
        UploadStore {
            dir: dir.to_path_buf(),
        }
    }

    /// Where the bytes with this hash are (`None` for a malformed hash).
    pub fn path_of(&self, sha256: &str) -> Option<PathBuf> {
        is_sha256(sha256).then(|| self.dir.join(&sha256[..2]).join(sha256))
    }

    /// The bytes with this hash.
    pub fn read(&self, sha256: &str) -> io::Result<Vec<u8>> {
        let path = self
            .path_of(sha256)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a SHA-256"))?;
        std::fs::read(path)
    }

    /// Removes the bytes with this hash, and their thumbnails (absent already is fine).
    pub fn remove(&self, sha256: &str) -> io::Result<()> {
        let thumbnails = crate::thumbnails::FORMATS
            .iter()
            .filter_map(|f| self.thumbnail_path(sha256, &f.name()));
        for path in self.path_of(sha256).into_iter().chain(thumbnails) {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// Where a thumbnail of the bytes with this hash is kept:
    /// `uploads/thumbnails/{first two hex digits}/{SHA-256}-{format}` (`None` for a malformed
    /// hash or a name that is no thumbnail format's). Thumbnails are derived from the bytes
    /// (`crate::thumbnails`), made again when missing.
    pub fn thumbnail_path(&self, sha256: &str, format: &str) -> Option<PathBuf> {
        let known = crate::thumbnails::FORMATS
            .iter()
            .any(|f| f.name() == format);
        (is_sha256(sha256) && known).then(|| {
            self.dir
                .join("thumbnails")
                .join(&sha256[..2])
                .join(format!("{sha256}-{format}"))
        })
    }

    /// Makes and keeps the thumbnails of the stored bytes with this hash, if they are an image
    /// within the bounds (`crate::thumbnails`): its preview facts, else `None` (an ordinary
    /// file). Slow on a large image: for the blocking pool.
    pub fn make_thumbnails(&self, sha256: &str) -> Option<crate::events::UploadedImage> {
        let bytes = self.read(sha256).ok()?;
        // The same bytes uploaded again: their thumbnails are made already.
        if let Some(image) = crate::thumbnails::probe(&bytes) {
            if self.has_thumbnails(sha256, &image) {
                return Some(image);
            }
        }
        let (image, thumbnails) = crate::thumbnails::make_all(&bytes)?;
        for (format, thumbnail) in thumbnails {
            if let Err(error) = self.put_thumbnail(sha256, &format.name(), &thumbnail) {
                // Made again when asked for.
                tracing::warn!(%error, "a thumbnail was not kept");
            }
        }
        Some(image)
    }

    /// Whether every thumbnail of the image with this hash is kept.
    pub fn has_thumbnails(&self, sha256: &str, image: &crate::events::UploadedImage) -> bool {
        crate::thumbnails::FORMATS
            .iter()
            .filter(|f| image.animated || !f.animated)
            .all(|f| {
                self.thumbnail_path(sha256, &f.name())
                    .is_some_and(|p| p.exists())
            })
    }

    /// The hashes that have thumbnails kept (`chronicle erase` removes those no upload names).
    pub fn thumbnail_hashes(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(self.dir.join("thumbnails")) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            if !entry.file_type()?.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(entry.path())? {
                let file = file?.file_name().to_string_lossy().into_owned();
                if let Some((hash, _)) = file.split_once('-').filter(|(h, _)| is_sha256(h)) {
                    out.push(hash.to_owned());
                }
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// A kept thumbnail (`NotFound` when it has not been made).
    pub fn read_thumbnail(&self, sha256: &str, format: &str) -> io::Result<Vec<u8>> {
        let path = self
            .thumbnail_path(sha256, format)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a thumbnail"))?;
        std::fs::read(path)
    }

    /// Keeps a thumbnail: written aside, then renamed into place, so a reader sees all of it or
    /// none. Not synced: a thumbnail lost in a crash is made again.
    pub fn put_thumbnail(&self, sha256: &str, format: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self
            .thumbnail_path(sha256, format)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a thumbnail"))?;
        let parent = path.parent().ok_or_else(|| io::Error::other("path"))?;
        std::fs::create_dir_all(parent)?;
        let aside = parent.join(format!(".{}", uuid::Uuid::new_v4().simple()));
        std::fs::write(&aside, bytes)?;
        std::fs::rename(&aside, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&aside);
        })
    }

    /// Every stored hash.
    pub fn hashes(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.len() != 2 || !entry.file_type()?.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(entry.path())? {
                let file = file?.file_name().to_string_lossy().into_owned();
                if is_sha256(&file) && file.starts_with(&name) {
                    out.push(file);
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Starts receiving an upload of at most `limit` bytes.
    pub fn begin(&self, limit: u64) -> io::Result<Incoming> {
        let tmp_dir = self.dir.join("tmp");
        std::fs::create_dir_all(&tmp_dir)?;
        let tmp = tmp_dir.join(uuid::Uuid::new_v4().simple().to_string());
        Ok(Incoming {
            file: Some(File::create(&tmp)?),
            tmp,
            hasher: Sha256::new(),
            size: 0,
            limit,
            head: Vec::new(),
        })
    }

    /// Stores bytes already in memory (synced, like a received upload); returns their hash.
    pub fn put(&self, bytes: &[u8]) -> io::Result<String> {
        let mut incoming = self.begin(u64::MAX)?;
        incoming.write(bytes).map_err(|e| match e {
            ReceiveError::Io(e) => e,
            ReceiveError::TooLarge => io::Error::other("no limit was set"),
        })?;
        incoming.finish(self).map(|(hash, _, _)| hash)
    }

    /// Copies the bytes with this hash from another store, checking the hash.
    pub fn copy_from(&self, other: &UploadStore, sha256: &str) -> io::Result<()> {
        let hash = self.put(&other.read(sha256)?)?;
        if hash != sha256 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the file named {sha256} hashes to {hash}"),
            ));
        }
        Ok(())
    }
}

/// An upload being received: a temporary file, removed unless `finish` moves it into place.
pub struct Incoming {
    file: Option<File>,
    tmp: PathBuf,
    hasher: Sha256,
    size: u64,
    limit: u64,
    /// The first bytes, to tell what kind of file it is.
    head: Vec<u8>,
}

/// How many leading bytes `Incoming` keeps for `sniff_image`.
const HEAD_BYTES: usize = 16;

impl Incoming {
    /// Appends a chunk; refuses past the limit.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), ReceiveError> {
        self.size += chunk.len() as u64;
        if self.size > self.limit {
            return Err(ReceiveError::TooLarge);
        }
        if self.head.len() < HEAD_BYTES {
            let take = (HEAD_BYTES - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        self.hasher.update(chunk);
        match &mut self.file {
            Some(file) => file.write_all(chunk)?,
            None => {
                return Err(ReceiveError::Io(io::Error::other(
                    "upload already finished",
                )))
            }
        }
        Ok(())
    }

    /// Syncs the file and moves it into place: `(hex SHA-256, size, first bytes)`.
    pub fn finish(mut self, store: &UploadStore) -> io::Result<(String, u64, Vec<u8>)> {
        let file = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("upload already finished"))?;
        file.sync_all()?;
        drop(file);
        let hash: String = std::mem::take(&mut self.hasher)
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let target = store
            .path_of(&hash)
            .ok_or_else(|| io::Error::other("hash"))?;
        let parent = target.parent().ok_or_else(|| io::Error::other("path"))?;
        std::fs::create_dir_all(parent)?;
        if target.exists() {
            // The same bytes are stored already.
            std::fs::remove_file(&self.tmp)?;
        } else {
            std::fs::rename(&self.tmp, &target)?;
            File::open(parent)?.sync_all()?;
        }
        Ok((hash, self.size, std::mem::take(&mut self.head)))
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// The image type the first bytes show (PNG, JPEG, GIF, WebP), whatever the client declared:
/// only these are served inline.
pub fn sniff_image(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A file name safe in a URL path: ASCII letters, digits, `.`, `-` and `_` kept, spaces as
/// `-`, everything else dropped, no leading dot, at most 100 characters (`uploaded-file` when
/// nothing is left).
pub fn sanitize_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let mut out = String::new();
    for c in base.chars() {
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' => out.push(c),
            '-' | ' ' | '\t' if !out.ends_with('-') => out.push('-'),
            _ => {}
        }
    }
    // The end is kept (it has the extension); then no leading dot or dash.
    let skip = out.chars().count().saturating_sub(100);
    let tail: String = out.chars().skip(skip).collect();
    let trimmed = tail.trim_start_matches(['.', '-']).to_owned();
    if trimmed.is_empty() {
        "uploaded-file".to_owned()
    } else {
        trimmed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_are_content_addressed_and_limited() {
        let dir = tempfile::tempdir().unwrap();
        let store = UploadStore::new(dir.path());
        let mut one = store.begin(10).unwrap();
        one.write(b"hello").unwrap();
        let (hash, size, head) = one.finish(&store).unwrap();
        assert_eq!(
            hash,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!((size, head.as_slice()), (5, b"hello".as_slice()));
        assert_eq!(store.read(&hash).unwrap(), b"hello");
        // The same bytes again: one file.
        let mut two = store.begin(10).unwrap();
        two.write(b"hello").unwrap();
        two.finish(&store).unwrap();
        assert_eq!(store.hashes().unwrap(), vec![hash.clone()]);
        // Too large: refused, and nothing is left behind.
        let mut big = store.begin(4).unwrap();
        assert!(matches!(big.write(b"hello"), Err(ReceiveError::TooLarge)));
        drop(big);
        assert_eq!(
            std::fs::read_dir(dir.path().join("tmp")).unwrap().count(),
            0
        );
        // Names from the log never leave the directory.
        assert!(store.path_of("../../secret.key").is_none());
        // Thumbnails are kept beside the bytes, under a format's name only, and are not uploads.
        store
            .put_thumbnail(&hash, "840x560.webp", b"thumb")
            .unwrap();
        assert_eq!(
            store.read_thumbnail(&hash, "840x560.webp").unwrap(),
            b"thumb"
        );
        assert!(store.thumbnail_path(&hash, "../../x").is_none());
        assert!(store.put_thumbnail("../x", "840x560.webp", b"x").is_err());
        assert_eq!(store.hashes().unwrap(), vec![hash.clone()]);
        assert_eq!(store.thumbnail_hashes().unwrap(), vec![hash.clone()]);
        store.remove(&hash).unwrap();
        store.remove(&hash).unwrap();
        assert!(store.thumbnail_hashes().unwrap().is_empty());
        assert!(store.hashes().unwrap().is_empty());
        // Removing the bytes removed their thumbnails.
        assert_eq!(
            store
                .read_thumbnail(&hash, "840x560.webp")
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn names_and_types() {
        assert_eq!(sanitize_name("My Photo (1).PNG"), "My-Photo-1.PNG");
        assert_eq!(sanitize_name("../../etc/passwd"), "passwd");
        assert_eq!(sanitize_name("C:\\x\\report final.pdf"), "report-final.pdf");
        assert_eq!(sanitize_name(".hidden"), "hidden");
        assert_eq!(sanitize_name("日本語"), "uploaded-file");
        let long = format!("{}.{}.txt", "a".repeat(150), "b".repeat(95));
        assert_eq!(sanitize_name(&long), format!("{}.txt", "b".repeat(95)));
        assert_eq!(sniff_image(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff_image(b"GIF89a..."), Some("image/gif"));
        assert_eq!(sniff_image(b"<svg xmlns="), None);
    }
}

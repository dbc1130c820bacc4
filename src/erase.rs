//! Erasure: making the content of deleted messages unreadable from the data directory.
//!
//! The running server never serves a deleted message (the fold removes it), but its content is
//! still in the append-only log: in the `MessageSent` that created it and in every
//! `MessageEdited` that changed it, and in the scheduled messages, reminders, drafts and saved
//! snippets that held it or were deleted themselves. `chronicle erase` (server stopped) rewrites the log into a
//! fresh sled directory with that content blanked, relinks the hash chain from the first
//! rewritten record on, appends a `LogErased` event naming what it did (and the old chain head),
//! swaps the directories and removes the old one and every snapshot. `docs/adr/0003-erasure.md`
//! weighs this against per-message keys.

use crate::events::{Chain, Envelope, Event, SCHEMA_VERSION};
use crate::ids::{MessageId, ScheduledMessageId, Seq, UserId};
use crate::store::{read_envelopes, EventLog, SledLog, StoreError};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// What `erase` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EraseReport {
    /// Deleted messages whose content was blanked.
    pub messages: usize,
    /// Records whose bodies were rewritten.
    pub records: Vec<u64>,
    /// The chain head before and after (hex).
    pub previous_head: String,
    pub new_head: String,
    /// Uploaded files removed: those of deleted uploads (left behind when a removal failed),
    /// replaced avatars, and those no event names (a crash between storing and recording).
    pub files_removed: usize,
}

fn hex(hash: &[u8]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The record with its link replaced (the body, and so the event, byte for byte as it was):
/// `crc ‖ 0xC1 ‖ link ‖ body`, for chained and pre-chain records alike.
fn relink(record: &[u8], chain: &mut Chain, link: [u8; 32]) -> Vec<u8> {
    let body = match crate::events::record_link(record) {
        Some(_) => &record[4 + 33..],
        None => &record[4..],
    };
    let mut rest = Vec::with_capacity(body.len() + 33);
    rest.push(0xC1);
    rest.extend_from_slice(&link);
    rest.extend_from_slice(body);
    let mut out = crc32fast::hash(&rest).to_be_bytes().to_vec();
    out.extend_from_slice(&rest);
    *chain = Chain::after(crate::events::record_hash(&out));
    out
}

/// Blanks the content a record holds of a deleted message; the message, if it changed.
/// What else is gone whose text the log still holds: scheduled messages and reminders deleted
/// by their sender, or sent as a message since deleted; drafts and saved snippets deleted by
/// their owner. (A reminder stores only its note: the message is quoted when it is sent.)
#[derive(Debug, Default)]
struct Gone {
    scheduled: BTreeSet<ScheduledMessageId>,
    drafts: BTreeSet<(UserId, u64)>,
    snippets: BTreeSet<(UserId, u64)>,
}

/// What a record had blanked.
enum Blanked {
    Message(MessageId),
    Other,
}

/// Blanks the text in `event` that belongs to something deleted.
fn blank(event: &mut Event, deleted: &BTreeSet<MessageId>, gone: &Gone) -> Option<Blanked> {
    let empty: Arc<str> = Arc::from("");
    match event {
        // Imported history is erased like history written here.
        Event::Imported { event, .. } => blank(event, deleted, gone),
        Event::MessageSent {
            message_id,
            content,
            rendered_content,
            ..
        } if deleted.contains(message_id) && !content.is_empty() => {
            *content = empty.clone();
            *rendered_content = empty;
            Some(Blanked::Message(*message_id))
        }
        Event::MessageEdited {
            message_id,
            content: Some(edited),
            ..
        } if deleted.contains(message_id) && !edited.content.is_empty() => {
            edited.content = empty.clone();
            edited.rendered_content = empty;
            Some(Blanked::Message(*message_id))
        }
        Event::ScheduledMessageSaved {
            scheduled_message_id,
            content,
            rendered_content,
            ..
        } if gone.scheduled.contains(scheduled_message_id) && !content.is_empty() => {
            content.clear();
            rendered_content.clear();
            Some(Blanked::Other)
        }
        Event::DraftsSaved {
            user_id, drafts, ..
        } => {
            let mut any = false;
            for (id, draft) in drafts.iter_mut() {
                if gone.drafts.contains(&(*user_id, *id)) && !draft.content.is_empty() {
                    draft.content.clear();
                    any = true;
                }
            }
            any.then_some(Blanked::Other)
        }
        Event::SavedSnippetSaved {
            user_id,
            snippet_id,
            content,
            ..
        } if gone.snippets.contains(&(*user_id, *snippet_id)) && !content.is_empty() => {
            content.clear();
            Some(Blanked::Other)
        }
        _ => None,
    }
}

/// Removes the uploaded files whose hash no live upload names; returns how many.
fn remove_unnamed_uploads<'a>(
    data_dir: &Path,
    live: impl Iterator<Item = &'a String>,
) -> Result<usize, StoreError> {
    let io = |e: std::io::Error| StoreError::Io(e.to_string());
    let live: BTreeSet<&String> = live.collect();
    let store = crate::uploads::UploadStore::new(&data_dir.join("uploads"));
    let mut removed = 0;
    for hash in store.hashes().map_err(io)? {
        if !live.contains(&hash) {
            store.remove(&hash).map_err(io)?;
            removed += 1;
        }
    }
    // Thumbnails left of bytes already gone (they are derived, so not counted).
    for hash in store.thumbnail_hashes().map_err(io)? {
        if !live.contains(&hash) {
            store.remove(&hash).map_err(io)?;
        }
    }
    Ok(removed)
}

/// Rewrites the log of `data_dir` without the content of deleted messages (see the module
/// doc). Nothing is changed when no deleted message has content left in the log. Uploaded
/// files no live upload names are removed either way.
pub fn erase_deleted(data_dir: &Path) -> Result<EraseReport, StoreError> {
    let log_dir = data_dir.join("log");
    let fresh_dir = data_dir.join("log.erasing");
    let old_dir = data_dir.join("log.erased-old");
    let _ = std::fs::remove_dir_all(&fresh_dir);
    let old = SledLog::open(&log_dir)?;
    let mut deleted = BTreeSet::new();
    let mut uploads = std::collections::BTreeMap::new();
    let mut avatars = std::collections::BTreeMap::new();
    // The organization's icon and logos, by which picture.
    let mut pictures = std::collections::BTreeMap::new();
    let mut gone = Gone::default();
    // Scheduled messages by the message they became, until the deletions are known.
    let mut scheduled_messages: Vec<(ScheduledMessageId, MessageId)> = Vec::new();
    for env in read_envelopes(&old, Seq(1)) {
        // Imported history counts as history written here (its uploads are live).
        match env?.event.into_inner() {
            Event::MessagesDeleted { message_ids, .. } => deleted.extend(message_ids),
            Event::ScheduledMessageRemoved {
                scheduled_message_id,
                sent_as,
                ..
            } => match sent_as {
                Some(message) => scheduled_messages.push((scheduled_message_id, message)),
                None => {
                    gone.scheduled.insert(scheduled_message_id);
                }
            },
            Event::DraftRemoved { user_id, draft_id } => {
                gone.drafts.insert((user_id, draft_id));
            }
            Event::SavedSnippetRemoved {
                user_id,
                snippet_id,
            } => {
                gone.snippets.insert((user_id, snippet_id));
            }
            Event::AttachmentUploaded {
                attachment_id,
                sha256,
                ..
            } => {
                uploads.insert(attachment_id, sha256);
            }
            Event::AttachmentDeleted { attachment_id, .. } => {
                uploads.remove(&attachment_id);
            }
            Event::AvatarSet { user_id, image } => match image {
                Some(image) => {
                    avatars.insert(user_id, [image.sha256, image.medium_sha256]);
                }
                None => {
                    avatars.remove(&user_id);
                }
            },
            Event::RealmImageSet { image, sha256 } => match sha256 {
                Some(sha256) => {
                    pictures.insert(format!("{image:?}"), sha256);
                }
                None => {
                    pictures.remove(&format!("{image:?}"));
                }
            },
            _ => {}
        }
    }
    gone.scheduled.extend(
        scheduled_messages
            .into_iter()
            .filter(|(_, message)| deleted.contains(message))
            .map(|(scheduled, _)| scheduled),
    );
    let files_removed = remove_unnamed_uploads(
        data_dir,
        uploads
            .values()
            .chain(avatars.values().flatten())
            .chain(pictures.values()),
    )?;
    let fresh = SledLog::open(&fresh_dir)?;
    let mut chain = Chain::after(crate::events::GENESIS);
    let mut previous_head = [0u8; 32];
    let mut records = Vec::new();
    let mut erased = BTreeSet::new();
    let mut batch = Vec::new();
    let mut last = Seq(0);
    let mut last_at = 0;
    for item in old.scan_from(Seq(1)) {
        let (seq, record) = item?;
        let mut env = Envelope::decode(seq, &record).map_err(|e| StoreError::Corrupt {
            seq: seq.0,
            reason: e.to_string(),
        })?;
        previous_head = crate::events::record_hash(&record);
        last = seq;
        last_at = env.at;
        let rewritten = if let Some(blanked) = blank(&mut env.event, &deleted, &gone) {
            if let Blanked::Message(message) = blanked {
                erased.insert(message);
            }
            records.push(seq.0);
            // Written anew by this build, in its own schema version.
            env.schema_version = SCHEMA_VERSION;
            chain
                .seal(&env)
                .map_err(|e| StoreError::Encode(e.to_string()))?
        } else if records.is_empty() {
            // Before the first rewrite, records stay byte for byte.
            chain = Chain::after(crate::events::record_hash(&record));
            record.to_vec()
        } else {
            let link = chain.link();
            relink(&record, &mut chain, link)
        };
        batch.push((seq, rewritten));
        if batch.len() == 10_000 {
            fresh.append_batch(&batch)?;
            batch.clear();
        }
    }
    if records.is_empty() {
        drop(fresh);
        let _ = std::fs::remove_dir_all(&fresh_dir);
        let head = hex(&previous_head);
        return Ok(EraseReport {
            messages: 0,
            records,
            previous_head: head.clone(),
            new_head: head,
            files_removed,
        });
    }
    let note = Envelope {
        seq: last.next(),
        at: last_at.max(crate::time::now_ms()),
        actor: None,
        schema_version: SCHEMA_VERSION,
        event: Event::LogErased {
            message_ids: erased.iter().copied().collect(),
            records: records.clone(),
            previous_head: hex(&previous_head),
        },
    };
    batch.push((
        note.seq,
        chain
            .seal(&note)
            .map_err(|e| StoreError::Encode(e.to_string()))?,
    ));
    fresh.append_batch(&batch)?;
    fresh.flush()?;
    let new_head = hex(&chain.link());
    drop(fresh);
    drop(old);
    // The swap: the old directory goes, with every page sled kept of the erased content.
    let io = |e: std::io::Error| StoreError::Io(e.to_string());
    std::fs::rename(&log_dir, &old_dir).map_err(io)?;
    std::fs::rename(&fresh_dir, &log_dir).map_err(io)?;
    std::fs::remove_dir_all(&old_dir).map_err(io)?;
    // Snapshots taken before the deletions hold the content; later ones no longer fit the log.
    let _ = std::fs::remove_dir_all(crate::snapshot::dir(data_dir));
    Ok(EraseReport {
        messages: erased.len(),
        records,
        previous_head: hex(&previous_head),
        new_head,
        files_removed,
    })
}

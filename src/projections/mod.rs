//! In-memory projections: the state every read is answered from.
//!
//! Each area folds envelopes with an infallible `apply` that matches every event variant
//! explicitly, so a new event does not compile until each area decides what it means. Business
//! rules live in `commands`, never here: a log that was valid when written must always replay.

pub mod access;
pub mod alert_words;
pub mod attachments;
pub mod bot_storage;
pub mod channels;
pub mod copies;
pub mod devices;
pub mod drafts;
pub mod emoji;
pub mod folders;
pub mod groups;
pub mod id_set;
pub mod invitations;
pub mod linkifiers;
pub mod message;
pub mod messages;
pub mod mutes;
pub mod navigation_views;
pub mod notices;
pub mod presence;
pub mod profile_fields;
pub mod realm;
pub mod scheduled;
pub mod search;
pub mod sessions;
pub mod store;
pub mod typing;
pub mod user_settings;
pub mod user_status;
pub mod user_topics;
mod users;

pub use access::{access, can_read, shares_presence, Access};
pub use channels::{Channel, Channels, Subscription};
pub use emoji::{CustomEmoji, CustomEmojis};
pub use folders::{Folder, Folders};
pub use groups::{Group, Groups};
pub use invitations::Invitations;
pub use linkifiers::Linkifiers;
pub use messages::{Address, Message, Messages, Topic};
pub use presence::Presence;
pub use profile_fields::ProfileFields;
pub use realm::Realm;
pub use typing::Typing;
pub use user_topics::UserTopics;
pub use users::{email_key, User, Users};

/// Marks a projection's contents: a number never handed out before in this process, taken
/// anew whenever the projection changes, so that what was rendered from it under the same
/// stamp is still right. A projection made empty or loaded from a snapshot gets a new one; a
/// clone keeps its original's (and its contents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp(u64);

/// A hash map of the fold's hot paths: std's, with foldhash's randomly seeded hasher.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A hash set of the fold's hot paths (see [`FastMap`]).
pub type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

impl Stamp {
    /// Marks a change.
    pub fn renew(&mut self) {
        *self = Stamp::default();
    }
}

impl Default for Stamp {
    fn default() -> Stamp {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Stamp(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

use crate::events::{Envelope, Event};
use crate::ids::Seq;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// All projections, as of `seq`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Projections {
    /// The last event folded in (0 before any).
    pub seq: Seq,
    pub realm: Realm,
    pub users: Users,
    pub groups: Groups,
    pub channels: Channels,
    pub folders: Folders,
    pub user_topics: UserTopics,
    pub messages: Messages,
    pub typing: Typing,
    pub profile_fields: ProfileFields,
    pub linkifiers: Linkifiers,
    pub invitations: Invitations,
    pub custom_emoji: CustomEmojis,
    pub presence: Presence,
    pub user_settings: user_settings::UserSettings,
    /// Absent from snapshots written before it existed (those are ignored: see `snapshot`).
    pub user_status: user_status::UserStatuses,
    pub bot_storage: bot_storage::BotStorage,
    pub attachments: attachments::Attachments,
    pub mutes: mutes::Mutes,
    pub alert_words: alert_words::AlertWords,
    pub scheduled: scheduled::Scheduled,
    pub navigation_views: navigation_views::NavigationViews,
    pub devices: devices::Devices,
    pub drafts: drafts::Drafts,
    /// Absent from snapshots written before web sessions existed (they held none).
    #[serde(default)]
    pub sessions: sessions::Sessions,
    /// Absent from snapshots written before notifications existed (they owed none).
    #[serde(default)]
    pub notices: notices::Notices,
}

impl Projections {
    /// Each member asked to consent to an export of their private data, with their answer: the
    /// active people who are not bots, as Zulip lists them.
    pub fn export_consents(&self) -> impl Iterator<Item = (crate::ids::UserId, bool)> + '_ {
        self.users
            .iter()
            .filter(|u| u.is_active && u.bot_type.is_none())
            .map(|u| (u.user_id, self.user_settings.consents_to_export(u.user_id)))
    }

    /// An empty state that keeps no word index, for a fold that answers no searches (the
    /// offline tools, time travel): the index is a quarter of folding a message, and a search
    /// in such a state still answers, by reading each message's text.
    pub fn unindexed() -> Projections {
        let mut state = Projections::default();
        state.messages.without_word_index();
        state
    }

    /// Folds one envelope into every area.
    pub fn apply(&mut self, env: &Envelope) {
        if let Event::Imported {
            at,
            event,
            last_edit_at,
        } = &env.event
        {
            // Imported history folds as if written when it happened.
            self.apply(&Envelope {
                seq: env.seq,
                at: *at,
                actor: env.actor,
                schema_version: env.schema_version,
                event: (**event).clone(),
            });
            if let (Some(edited), Event::MessageSent { message_id, .. }) = (last_edit_at, &**event)
            {
                self.messages.set_last_edit_time(*message_id, edited / 1000);
            }
            return;
        }
        self.realm.apply(env);
        self.users.apply(env);
        self.groups.apply(env);
        self.channels.apply(env);
        self.folders.apply(env);
        self.user_topics.apply(env);
        // Messages read who is subscribed; no event changes both, so the order is immaterial.
        self.messages.apply(env, &self.channels, &self.users);
        self.typing.apply(env);
        self.profile_fields.apply(env);
        self.linkifiers.apply(env);
        self.invitations.apply(env);
        self.custom_emoji.apply(env);
        self.presence.apply(env);
        self.user_settings.apply(env);
        self.user_status.apply(env);
        self.bot_storage.apply(env);
        self.attachments.apply(env);
        self.mutes.apply(env);
        self.alert_words.apply(env);
        self.scheduled.apply(env);
        self.navigation_views.apply(env);
        self.devices.apply(env);
        self.drafts.apply(env);
        self.sessions.apply(env);
        self.notices.apply(env);
        self.seq = env.seq;
    }

    /// A copy without the search index, for the engine's decision state (which keeps none):
    /// cheaper than `clone`, and taken under a read lock.
    pub fn clone_without_word_index(&self) -> Projections {
        Projections {
            seq: self.seq,
            realm: self.realm.clone(),
            users: self.users.clone(),
            groups: self.groups.clone(),
            channels: self.channels.clone(),
            folders: self.folders.clone(),
            user_topics: self.user_topics.clone(),
            messages: self.messages.clone_without_word_index(),
            typing: self.typing.clone(),
            profile_fields: self.profile_fields.clone(),
            linkifiers: self.linkifiers.clone(),
            invitations: self.invitations.clone(),
            custom_emoji: self.custom_emoji.clone(),
            presence: self.presence.clone(),
            user_settings: self.user_settings.clone(),
            user_status: self.user_status.clone(),
            bot_storage: self.bot_storage.clone(),
            attachments: self.attachments.clone(),
            mutes: self.mutes.clone(),
            alert_words: self.alert_words.clone(),
            scheduled: self.scheduled.clone(),
            navigation_views: self.navigation_views.clone(),
            devices: self.devices.clone(),
            drafts: self.drafts.clone(),
            sessions: self.sessions.clone(),
            notices: self.notices.clone(),
        }
    }

    /// Makes this state (the engine's read state) share what `decided` (its decision state)
    /// changed since the last call, so the two hold one copy of it. Both must be at the same
    /// `seq`, having folded the same events.
    pub fn adopt_shared(&mut self, decided: &mut Projections) {
        debug_assert_eq!(
            self.seq, decided.seq,
            "adopting from a state at another seq"
        );
        self.messages.adopt_shared(&mut decided.messages);
    }

    /// Decodes a snapshot's payload written whole, as one msgpack value (`snap2`, `snap3`),
    /// before `restore_derived_and_digest`, with each topic, client name and participant list
    /// allocated once, not once per message.
    pub fn decode_snapshot_whole(payload: &[u8]) -> Result<Projections, rmp_serde::decode::Error> {
        let (decoded, shared) =
            message::decoding_shared(|| rmp_serde::from_slice::<Projections>(payload));
        let mut state = decoded?;
        state.messages.keep_interned(shared);
        Ok(state)
    }

    /// Writes the state as a snapshot's payload in sections: the state without its messages,
    /// then the messages in parts of `MESSAGES_PER_PART`, then a table of the sections (each
    /// one's length, 8 bytes, and CRC-32, 4 bytes, big-endian) and their number (4 bytes), so
    /// that `decode_snapshot` finds the parts without reading them, and checks and decodes them
    /// on every core. Returns the SHA-256 of the table, which the snapshot's header records:
    /// with the sections' checksums, it vouches for every byte. (A checksum finds a damaged
    /// section as surely as a hash for this purpose, at a tenth of a hash's time: SHA-256 of
    /// every section was a fifth of a start's work.)
    pub fn encode_snapshot(
        &self,
        out: &mut impl std::io::Write,
    ) -> Result<[u8; 32], rmp_serde::encode::Error> {
        self.encode_snapshot_in_parts_of(out, MESSAGES_PER_PART)
    }

    /// `encode_snapshot` with parts of `messages_per_part` (rounded up to a chunk of 64).
    pub(crate) fn encode_snapshot_in_parts_of(
        &self,
        out: &mut impl std::io::Write,
        messages_per_part: u64,
    ) -> Result<[u8; 32], rmp_serde::encode::Error> {
        let written = |e: std::io::Error| rmp_serde::encode::Error::Syntax(e.to_string());
        let mut head = Vec::new();
        store::without_messages(|| rmp_serde::encode::write(&mut head, self))?;
        out.write_all(&head).map_err(written)?;
        let per_part = messages_per_part.div_ceil(store::CHUNK) as usize;
        let mut sections = vec![(head.len() as u64, crc32fast::hash(&head))];
        sections.extend(self.messages.by_id.write_parts(out, per_part)?);
        let mut table = Vec::with_capacity(sections.len() * SECTION_ENTRY + 4);
        for (length, checksum) in &sections {
            table.extend_from_slice(&length.to_be_bytes());
            table.extend_from_slice(&checksum.to_be_bytes());
        }
        table.extend_from_slice(&(sections.len() as u32).to_be_bytes());
        out.write_all(&table).map_err(written)?;
        Ok(Sha256::digest(&table).into())
    }

    /// Decodes what `encode_snapshot` wrote (before `restore_derived`), if its table's SHA-256
    /// is `table_hash` and every section's CRC-32 the table's: the state on this thread while the
    /// parts of its messages are checked and decoded on the others (as many as the machine has
    /// cores, up to eight), all interning each topic, client name and participant list into
    /// one set.
    pub fn decode_snapshot(
        payload: &[u8],
        table_hash: &[u8; 32],
    ) -> Result<Projections, Unreadable> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::{Arc, Mutex};
        let sections = sections(payload, table_hash)?;
        let ((head, head_checksum), parts) = sections
            .split_first()
            .ok_or_else(|| Unreadable::Undecodable("no sections".into()))?;
        let common = Arc::new(Mutex::new(message::Shared::default()));
        let next = AtomicUsize::new(0);
        // Each thread takes the next part not yet taken, so that the cores stay busy however
        // the parts' costs differ.
        let work = || {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((bytes, checksum)) = parts.get(i) else {
                    return done;
                };
                let part = checked(bytes, *checksum).and_then(|bytes| {
                    message::decoding_into(&common, || store::MessageStore::read_part(bytes))
                        .map_err(Unreadable::from)
                });
                done.push((i, part));
            }
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8);
        let (state, mut decoded) = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            let state = checked(head, *head_checksum).and_then(|head| {
                message::decoding_into(&common, || rmp_serde::from_slice::<Projections>(head))
                    .map_err(Unreadable::from)
            });
            let mut decoded = work();
            for helper in helpers {
                match helper.join() {
                    Ok(more) => decoded.extend(more),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            (state, decoded)
        });
        let mut state = state?;
        decoded.sort_by_key(|(i, _)| *i);
        let parts = decoded
            .into_iter()
            .map(|(_, part)| part)
            .collect::<Result<Vec<_>, _>>()?;
        state.messages.by_id.take_parts(parts);
        let shared = std::mem::take(&mut *common.lock().unwrap_or_else(|p| p.into_inner()));
        state.messages.keep_interned(shared);
        Ok(state)
    }

    /// Rebuilds what snapshots leave out (compiled linkifiers, the set of deactivated users)
    /// after one is loaded (by `decode_snapshot`, which shares names and topics as it decodes),
    /// and returns the state's digest. The word index is not built here: a snapshot comes from
    /// the engine's decision state, which keeps none, and the server builds the read state's
    /// while it already serves (`Engine::index_words_in_background`).
    pub fn restore_derived_and_digest(&mut self) -> String {
        self.restore_derived();
        self.digest()
    }

    /// Rebuilds what snapshots leave out, without the digest (a snapshot this same executable
    /// wrote: its fold and its decoding are the ones that wrote it).
    pub fn restore_derived(&mut self) {
        self.linkifiers.recompile();
        self.users.restore_derived();
    }

    /// Every projection as ordered JSON, with no secrets: what `GET /admin/projections` and
    /// `chronicle dump` print.
    pub fn dump(&self) -> Value {
        self.dump_with(self.messages.dump())
    }

    /// The dump without its messages area (`null`): what is the size of the organization, not
    /// of its history (an export walks the messages one at a time instead).
    pub fn dump_without_messages(&self) -> Value {
        self.dump_with(Value::Null)
    }

    /// The dump, with `messages` as the messages area.
    fn dump_with(&self, messages: Value) -> Value {
        let (drafts, snippets) = self.drafts.dump();
        let mut dump = json!({
            "seq": self.seq.0,
            "realm": self.realm.dump(),
            "users": self.users.dump(),
            "groups": self.groups.dump(),
            "channels": self.channels.dump(),
            "channel_folders": self.folders.dump(),
            "user_topics": self.user_topics.dump(),
            "messages": messages,
            "typing": self.typing.dump(),
            "custom_profile_fields": self.profile_fields.dump(),
            "linkifiers": self.linkifiers.dump(),
            "invitations": self.invitations.dump(),
            "custom_emoji": self.custom_emoji.dump(),
            "presence": self.presence.dump(),
            "user_settings": self.user_settings.dump(),
            "user_status": self.user_status.dump(),
            "bot_storage": self.bot_storage.dump(),
            "attachments": self.attachments.dump(),
            "muted_users": self.mutes.dump(),
            "alert_words": self.alert_words.dump(),
            "scheduled_messages": self.scheduled.dump(),
            "navigation_views": self.navigation_views.dump(),
            "devices": self.devices.dump(),
            "drafts": drafts,
            "saved_snippets": snippets,
            "sessions": self.sessions.dump(),
        });
        if let Some(two_factor) = self.sessions.two_factor_dump() {
            dump["two_factor"] = two_factor;
        }
        if let Some(spent) = self.sessions.spent_dump() {
            dump["spent_sign_in_tokens"] = spent;
        }
        if let Some(defaults) = self.user_settings.realm_defaults_dump() {
            dump["realm_user_settings_defaults"] = defaults;
        }
        if let Some(push) = self.devices.push_dump() {
            dump["push_devices"] = push;
        }
        if let Some(notices) = self.notices.dump() {
            dump["notifications"] = notices;
        }
        dump
    }

    /// An organization-level permission as a group-setting value: as last changed, else the
    /// system group of its default (`realm::SETTINGS`); `role:nobody` for an unknown name.
    pub fn realm_permission(&self, name: &str) -> crate::events::GroupSetting {
        if let Some(setting) = self.realm.changed_group(name) {
            return setting.clone();
        }
        let kind = match realm::setting(name).map(|s| s.default) {
            Some(realm::Initial::Group(kind)) => kind,
            _ => crate::events::SystemGroup::Nobody,
        };
        self.groups.system_setting(kind)
    }

    /// The empty-topic rule in force in `channel`: its own, or the organization's when it
    /// inherits.
    pub fn topics_policy(&self, channel: &Channel) -> crate::events::TopicsPolicy {
        use crate::events::TopicsPolicy;
        match channel.topics_policy {
            TopicsPolicy::Inherit if self.realm.text("topics_policy") == "disable_empty_topic" => {
                TopicsPolicy::DisableEmptyTopic
            }
            TopicsPolicy::Inherit => TopicsPolicy::AllowEmptyTopic,
            own => own,
        }
    }

    /// Who has read `message`, for `viewer`'s read receipts, by Zulip's rules: active users whose
    /// copy is read, without the sender, those who turned `send_read_receipts` off, and those on
    /// either side of a mute with the viewer.
    pub fn read_by(
        &self,
        message: &Message,
        viewer: crate::ids::UserId,
    ) -> Vec<crate::ids::UserId> {
        self.messages
            .holders(message.id)
            .into_iter()
            .filter(|&user| user != message.sender_id)
            // Neither users the viewer muted nor users who muted the viewer (who could
            // otherwise tell they were muted by reads that come at once).
            .filter(|&user| !self.mutes.mutes(viewer, user) && !self.mutes.mutes(user, viewer))
            .filter(|&user| self.users.get(user).is_some_and(|u| u.is_active))
            .filter(|&user| {
                self.messages
                    .flags(user, message.id)
                    .is_some_and(|bits| bits & messages::flags::READ != 0)
            })
            .filter(|&user| {
                self.user_settings.get(user, "send_read_receipts")
                    != crate::events::RealmValue::Bool(false)
            })
            .collect()
    }

    /// Whether `user` is covered by an organization-level permission.
    pub fn realm_allows(&self, user: crate::ids::UserId, name: &str) -> bool {
        self.groups
            .setting_allows(&self.users, user, &self.realm_permission(name))
    }

    /// SHA-256 of the dump's canonical JSON, with the message copies in their compact form
    /// instead of listed one by one (the same facts; see `Messages::digest_view`): two folds
    /// agree exactly when their digests do, and computing it does not grow with messages ×
    /// recipients.
    pub fn digest(&self) -> String {
        // Every area but messages as its dump; messages streamed one at a time, straight into
        // the hash (no copy of the state is built).
        let areas = self.dump_without_messages();
        let mut hashing = HashingWriter::new(std::io::sink());
        let written = match &areas {
            Value::Object(map) => {
                use serde::ser::{SerializeMap, Serializer};
                let mut serializer = serde_json::Serializer::new(&mut hashing);
                (|| {
                    let mut out = serializer.serialize_map(Some(map.len()))?;
                    for (key, value) in map {
                        if key == "messages" {
                            out.serialize_entry(key, &self.messages.digest_view())?;
                        } else {
                            out.serialize_entry(key, value)?;
                        }
                    }
                    out.end()
                })()
            }
            other => serde_json::to_writer(&mut hashing, other),
        };
        // Writing to a sink cannot fail; a serialization error would be a bug, and still
        // yields a (different) digest rather than a panic.
        let _ = written;
        hashing
            .finish()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Messages per part of a snapshot's messages (see `Projections::encode_snapshot`): about a
/// tenth of a second's decoding each, many parts for the cores to share at ten million.
const MESSAGES_PER_PART: u64 = 1 << 17;

/// A section's entry in a snapshot's table: its length (8 bytes) and CRC-32 (4).
const SECTION_ENTRY: usize = 8 + 4;

/// Why a snapshot's payload in sections was not decoded.
#[derive(Debug)]
pub enum Unreadable {
    /// Its bytes are not the ones written (a hash differs): a damaged file.
    Damaged,
    /// Its bytes are the ones written, but not a state this build decodes.
    Undecodable(String),
}

impl From<rmp_serde::decode::Error> for Unreadable {
    fn from(error: rmp_serde::decode::Error) -> Unreadable {
        Unreadable::Undecodable(error.to_string())
    }
}

/// `bytes`, if their CRC-32 is `checksum`.
fn checked(bytes: &[u8], checksum: u32) -> Result<&[u8], Unreadable> {
    match crc32fast::hash(bytes) == checksum {
        true => Ok(bytes),
        false => Err(Unreadable::Damaged),
    }
}

/// The table's bytes, if their SHA-256 is `hash`.
fn checked_table<'a>(table: &'a [u8], hash: &[u8; 32]) -> Result<&'a [u8], Unreadable> {
    match Sha256::digest(table).as_slice() == hash {
        true => Ok(table),
        false => Err(Unreadable::Damaged),
    }
}

/// The sections of a payload `Projections::encode_snapshot` wrote, with their checksums, by
/// its table, once the table's SHA-256 is `table_hash`.
fn sections<'a>(
    payload: &'a [u8],
    table_hash: &[u8; 32],
) -> Result<Vec<(&'a [u8], u32)>, Unreadable> {
    let count_at = payload.len().checked_sub(4).ok_or(Unreadable::Damaged)?;
    let count = u32::from_be_bytes(
        payload[count_at..]
            .try_into()
            .map_err(|_| Unreadable::Damaged)?,
    );
    let table_at = (count as usize)
        .checked_mul(SECTION_ENTRY)
        .and_then(|table| count_at.checked_sub(table))
        .ok_or(Unreadable::Damaged)?;
    checked_table(&payload[table_at..], table_hash)?;
    let mut sections = Vec::with_capacity(count as usize);
    let mut at = 0usize;
    for entry in payload[table_at..count_at].chunks_exact(SECTION_ENTRY) {
        let (length, checksum) = entry.split_at(8);
        let length = u64::from_be_bytes(length.try_into().map_err(|_| Unreadable::Damaged)?);
        let end = usize::try_from(length)
            .ok()
            .and_then(|length| at.checked_add(length))
            .filter(|end| *end <= table_at)
            .ok_or(Unreadable::Damaged)?;
        let checksum = u32::from_be_bytes(checksum.try_into().map_err(|_| Unreadable::Damaged)?);
        sections.push((&payload[at..end], checksum));
        at = end;
    }
    if at != table_at {
        return Err(Unreadable::Damaged);
    }
    Ok(sections)
}

/// Passes bytes on to `inner` while hashing them with SHA-256: a digest or a file's hash without
/// holding what was written.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W> HashingWriter<W> {
    pub fn new(inner: W) -> HashingWriter<W> {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// The hash of everything written, and the inner writer.
    pub fn into_parts(self) -> (W, [u8; 32]) {
        (self.inner, self.hasher.finalize().into())
    }

    /// The hash of everything written.
    pub fn finish(self) -> [u8; 32] {
        self.into_parts().1
    }
}

impl<W: std::io::Write> std::io::Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

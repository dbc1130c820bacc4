//! `chronicle import-from SOURCE EXPORT --data-dir DIR`: an organization moved in from another
//! chat server's export, written as ordinary events into a new data directory.
//!
//! The import is all or nothing: it is built in a directory beside `DIR` and moved into place
//! only when every event is durable, so a refused or interrupted import leaves `DIR` absent or
//! empty. The log it writes starts with `ImportStarted` (the source, the archive's SHA-256, this
//! version) and ends with `ImportFinished` (the counts); between them, each imported object is
//! the event the server writes for it, wrapped in `Imported` with the time it happened. The
//! importer folds each event into a state as it writes it, so messages render against the
//! organization as it stands (mentions, channel links), exactly as a live send would.
//!
//! Damage confined to one object (a message with no sender, an unparseable time) skips that
//! object and lists it in `DIR/import-report.json`; damage to the archive or a file the import
//! needs stops it with one line naming the file.

pub mod archive;
pub mod export_zulip;
pub mod mattermost;
pub mod mrkdwn;
pub mod slack;
pub mod zulip;

use crate::auth::{new_api_key_nonce, write_private_file, ServerSecret};
use crate::commands::markup::OrgResolver;
use crate::events::{
    Chain, ChannelPermissions, Envelope, Event, NewSubscription, ReactionType, ReadPlace,
    Recipient, Role, TopicsPolicy, SCHEMA_VERSION,
};
use crate::ids::{ChannelId, MessageId, Seq, UserId};
use crate::layout::Layout;
use crate::projections::message::Address;
use crate::projections::Projections;
use crate::store::{EventLog, SledLog};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why an import stopped: one line, naming the file (and line or message) where it applies.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportError(String);

impl ImportError {
    pub fn new(message: impl Into<String>) -> ImportError {
        ImportError(message.into())
    }
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ImportError {}

impl From<crate::store::StoreError> for ImportError {
    fn from(e: crate::store::StoreError) -> ImportError {
        ImportError(format!("writing the log: {e}"))
    }
}

impl From<std::io::Error> for ImportError {
    fn from(e: std::io::Error) -> ImportError {
        ImportError(format!("writing the data directory: {e}"))
    }
}

/// What the command line asks of an import.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The imported person who becomes the owner (made one if the source gave a lesser role).
    pub owner_email: Option<String>,
    /// The organization's name, where the export has none (Slack's has none).
    pub realm_name: Option<String>,
    /// Slack: the answer of its `users.list` API (a JSON file), for the email addresses an
    /// export made without them lacks.
    pub slack_users: Option<PathBuf>,
    /// Mattermost: the one team to import (default: every team, each a channel folder).
    pub team: Option<String>,
    /// What the archive may expand to, in bytes, when that is more than ten times its size
    /// ([`archive::MAX_EXPANDED`] unless the operator allows more).
    pub max_expanded: u64,
}

/// One object the import left out, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub kind: String,
    /// Where it was: the file inside the archive, and the object there.
    pub at: String,
    pub why: String,
}

/// `DIR/import-report.json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub source: String,
    pub archive_sha256: String,
    pub owner_email: String,
    pub counts: BTreeMap<String, u64>,
    pub skipped: Vec<Skipped>,
}

/// A user as a source describes them.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub full_name: String,
    pub role: Role,
    /// Zulip's bot type for a bot (1: generic), and its owner.
    pub bot_type: Option<u8>,
    pub bot_owner: Option<UserId>,
    pub timezone: String,
    pub joined_ms: Option<i64>,
}

/// A channel as a source describes it.
#[derive(Debug, Clone)]
pub struct NewChannel {
    pub name: String,
    pub description: String,
    pub invite_only: bool,
    pub is_default: bool,
    pub created_ms: Option<i64>,
    pub creator: Option<UserId>,
    pub folder: Option<crate::ids::FolderId>,
    /// Whether subscribers see the history from before they joined (default: public channels
    /// yes, private ones no).
    pub history_public: Option<bool>,
}

type Batch = Vec<Envelope>;

/// The log, sealed and stored by two threads of its own: while one links a batch's records
/// into the hash chain and the other has sled store the batch before, the import reads,
/// renders and folds the next (sled's own threads write its buffers to the disk).
struct LogThread {
    batches: Option<std::sync::mpsc::SyncSender<Batch>>,
    thread: Option<std::thread::JoinHandle<Result<(), ImportError>>>,
}

impl LogThread {
    fn start(log: SledLog) -> LogThread {
        let (batches, incoming) = std::sync::mpsc::sync_channel::<Batch>(1);
        let thread = std::thread::Builder::new()
            .name("import-log".into())
            .spawn(move || {
                std::thread::scope(|scope| {
                    let (sealed_out, sealed) =
                        std::sync::mpsc::sync_channel::<Vec<(Seq, Vec<u8>)>>(1);
                    let sealer = std::thread::Builder::new()
                        .name("import-seal".into())
                        .spawn_scoped(scope, move || seal(incoming, sealed_out))
                        .map_err(|e| ImportError::new(format!("writing the log: {e}")))?;
                    // Storing stops at the first error; the sealer then stops at its next
                    // batch, and the import at the one after.
                    let stored = (|| {
                        for records in sealed {
                            log.append_batch(&records)?;
                        }
                        log.flush()?;
                        Ok(())
                    })();
                    let sealing = sealer.join().unwrap_or_else(|_| {
                        Err(ImportError::new("writing the log: its thread failed"))
                    });
                    sealing.and(stored)
                })
            });
        match thread {
            Ok(thread) => LogThread {
                batches: Some(batches),
                thread: Some(thread),
            },
            // No thread to be had: the sender is dropped, and the first append says so.
            Err(_) => LogThread {
                batches: None,
                thread: None,
            },
        }
    }

    fn append(&mut self, batch: Batch) -> Result<(), ImportError> {
        let sent = match &self.batches {
            Some(batches) => batches.send(batch).is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            // The thread stopped: its error is the reason.
            self.finish()
                .and(Err(ImportError::new("writing the log: it has stopped")))
        }
    }

    /// Stores what was sent, flushes, and stops the thread.
    fn finish(&mut self) -> Result<(), ImportError> {
        self.batches = None;
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(ImportError::new("writing the log: its thread failed"))),
            None => Err(ImportError::new("writing the log: it has stopped")),
        }
    }
}

impl Drop for LogThread {
    /// An import given up: the thread ends before its directory is removed.
    fn drop(&mut self) {
        self.batches = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Encodes each batch's events into records linked into the hash chain, in order, for the
/// thread that stores them (until it stops taking them).
fn seal(
    incoming: std::sync::mpsc::Receiver<Batch>,
    sealed: std::sync::mpsc::SyncSender<Vec<(Seq, Vec<u8>)>>,
) -> Result<(), ImportError> {
    let mut chain = Chain::after(crate::events::GENESIS);
    for batch in incoming {
        let records = batch
            .iter()
            .map(|env| {
                let record = chain
                    .seal(env)
                    .map_err(|e| ImportError::new(format!("encoding an event: {e}")))?;
                Ok((env.seq, record))
            })
            .collect::<Result<Vec<_>, ImportError>>()?;
        drop(batch);
        if sealed.send(records).is_err() {
            break;
        }
    }
    Ok(())
}

/// The log being written and the state it folds to.
pub struct Writer {
    log: LogThread,
    seq: u64,
    batch: Batch,
    now_ms: i64,
    pub state: Projections,
    secret: ServerSecret,
    nonces: BTreeMap<UserId, String>,
    uploads: crate::uploads::UploadStore,
    /// Reactions name emoji as Slack and Mattermost do (iamcal's names), not as Zulip does.
    pub iamcal_names: bool,
    /// The client every imported message was sent from, one string for them all.
    client: Arc<str>,
    pub report: Report,
}

impl Writer {
    fn open(layout: &Layout, source: &str, sha256: &str) -> Result<Writer, ImportError> {
        let secret = ServerSecret::generate();
        secret.store(&layout.secret())?;
        let mut writer = Writer {
            log: LogThread::start(SledLog::open(&layout.log())?),
            seq: 0,
            batch: Vec::new(),
            now_ms: crate::time::now_ms(),
            state: Projections::unindexed(),
            secret,
            nonces: BTreeMap::new(),
            uploads: crate::uploads::UploadStore::new(&layout.uploads()),
            iamcal_names: false,
            client: "import".into(),
            report: Report {
                source: source.to_owned(),
                archive_sha256: sha256.to_owned(),
                ..Report::default()
            },
        };
        writer.push(
            None,
            Event::ImportStarted {
                source: source.to_owned(),
                archive_sha256: sha256.to_owned(),
                chronicle_version: env!("CARGO_PKG_VERSION").to_owned(),
            },
        )?;
        Ok(writer)
    }

    /// Appends one event and folds it.
    pub fn push(&mut self, actor: Option<UserId>, event: Event) -> Result<(), ImportError> {
        self.seq += 1;
        let env = Envelope {
            seq: Seq(self.seq),
            at: self.now_ms,
            actor,
            schema_version: SCHEMA_VERSION,
            event,
        };
        self.state.apply(&env);
        self.batch.push(env);
        if self.batch.len() >= 10_000 {
            self.log.append(std::mem::take(&mut self.batch))?;
        }
        Ok(())
    }

    /// Appends an event of the imported history that happened at `at_ms`.
    pub fn push_at(
        &mut self,
        actor: Option<UserId>,
        at_ms: i64,
        event: Event,
        last_edit_at: Option<i64>,
    ) -> Result<(), ImportError> {
        self.push(
            actor,
            Event::Imported {
                at: at_ms,
                event: Box::new(event),
                last_edit_at,
            },
        )
    }

    /// A command of the server, decided as `actor` by its own rules: its events are appended
    /// (as history of `at_ms` when given). A refusal comes back in Zulip's words, for the
    /// report.
    pub fn command<R>(
        &mut self,
        actor: UserId,
        at_ms: Option<i64>,
        decide: impl FnOnce(
            &Projections,
            &crate::commands::Ctx,
        ) -> crate::error::ApiResult<crate::commands::Decision<R>>,
    ) -> Result<Result<R, String>, ImportError> {
        let ctx = crate::commands::Ctx {
            now_ms: at_ms.unwrap_or(self.now_ms),
            actor: Some(actor),
        };
        let decision = match decide(&self.state, &ctx) {
            Ok(decision) => decision,
            Err(refused) => return Ok(Err(refused.to_string())),
        };
        for event in decision.events {
            match at_ms {
                Some(at) => self.push_at(Some(actor), at, event, None)?,
                None => self.push(Some(actor), event)?,
            }
        }
        Ok(Ok(decision.reply))
    }

    pub fn count(&mut self, kind: &str, n: u64) {
        *self.report.counts.entry(kind.to_owned()).or_default() += n;
    }

    pub fn skip(&mut self, kind: &str, at: impl Into<String>, why: impl Into<String>) {
        self.report.skipped.push(Skipped {
            kind: kind.to_owned(),
            at: at.into(),
            why: why.into(),
        });
    }

    /// The organization and its system groups.
    pub fn create_realm(&mut self, name: &str, description: &str) -> Result<(), ImportError> {
        self.push(
            None,
            Event::RealmCreated {
                name: name.to_owned(),
                description: description.to_owned(),
            },
        )?;
        for event in crate::commands::groups::ensure_system_groups(&self.state) {
            self.push(None, event)?;
        }
        Ok(())
    }

    /// An account (without a password: imported people get in by a reset, an invitation or
    /// single sign-on, as in Zulip).
    pub fn create_user(&mut self, user: NewUser) -> Result<UserId, ImportError> {
        let user_id = UserId(self.state.users.max_id().0 + 1);
        let is_bot = user.bot_type.is_some();
        let nonce = new_api_key_nonce();
        self.nonces.insert(user_id, nonce.clone());
        let event = Event::UserCreated {
            user_id,
            email: user.email,
            full_name: user.full_name,
            role: user.role,
            bot_type: user.bot_type,
            bot_owner_id: user.bot_owner,
            timezone: user.timezone,
            can_create_users: false,
            password_hash: None,
            api_key_nonce: nonce,
            bot: None,
        };
        match user.joined_ms {
            Some(at) => self.push_at(None, at, event, None)?,
            None => self.push(None, event)?,
        }
        self.count(if is_bot { "bots" } else { "users" }, 1);
        Ok(user_id)
    }

    /// A channel, with Zulip's default permissions for its creator (the owner when unknown).
    pub fn create_channel(
        &mut self,
        channel: NewChannel,
        owner: UserId,
    ) -> Result<ChannelId, ImportError> {
        let channel_id = ChannelId(self.state.channels.max_id().0 + 1);
        let creator = channel.creator.unwrap_or(owner);
        let permissions: ChannelPermissions =
            crate::commands::channels::default_permissions(&self.state, creator);
        let event = Event::ChannelCreated {
            channel_id,
            name: channel.name,
            description: channel.description,
            invite_only: channel.invite_only,
            is_web_public: false,
            history_public_to_subscribers: channel.history_public.unwrap_or(!channel.invite_only),
            message_retention_days: None,
            folder_id: channel.folder,
            topics_policy: TopicsPolicy::Inherit,
            is_default: channel.is_default,
            permissions: Box::new(permissions),
        };
        match channel.created_ms {
            Some(at) => self.push_at(Some(creator), at, event, None)?,
            None => self.push(Some(creator), event)?,
        }
        self.count("channels", 1);
        Ok(channel_id)
    }

    /// A channel folder (Mattermost's teams become folders).
    pub fn create_folder(
        &mut self,
        name: &str,
        description: &str,
    ) -> Result<crate::ids::FolderId, ImportError> {
        let folder_id = crate::ids::FolderId(self.state.folders.max_id().0 + 1);
        self.push(
            None,
            Event::ChannelFolderCreated {
                folder_id,
                name: name.chars().take(60).collect(),
                description: description.chars().take(1024).collect(),
            },
        )?;
        self.count("channel folders", 1);
        Ok(folder_id)
    }

    /// A subscription setting the source had (muted, pinned).
    pub fn subscription_property(
        &mut self,
        user_id: UserId,
        channel_id: ChannelId,
        property: crate::events::SubscriptionProperty,
    ) -> Result<(), ImportError> {
        self.push(
            Some(user_id),
            Event::SubscriptionPropertyChanged {
                user_id,
                channel_id,
                property,
            },
        )
    }

    /// Subscribes people (each gets the next color of Zulip's palette).
    pub fn subscribe(
        &mut self,
        channel_id: ChannelId,
        users: &BTreeSet<UserId>,
    ) -> Result<(), ImportError> {
        if users.is_empty() {
            return Ok(());
        }
        let subscriptions = users
            .iter()
            .map(|user_id| NewSubscription {
                user_id: *user_id,
                color: crate::commands::channels::next_color(&self.state, *user_id, &[]),
            })
            .collect();
        self.push(
            None,
            Event::Subscribed {
                channel_id,
                subscriptions,
            },
        )?;
        self.count("subscriptions", users.len() as u64);
        Ok(())
    }

    /// A message, rendered against the organization as it stands; its id is the next one.
    pub fn send(
        &mut self,
        sender: UserId,
        recipient: Recipient,
        content: &str,
        sent_ms: i64,
        last_edit_ms: Option<i64>,
    ) -> Result<Option<MessageId>, ImportError> {
        match prepare(&self.state, content) {
            Some(prepared) => self
                .send_prepared(sender, recipient, prepared, sent_ms, last_edit_ms)
                .map(Some),
            None => Ok(None),
        }
    }

    /// A message prepared beforehand; its id is the next one.
    pub fn send_prepared(
        &mut self,
        sender: UserId,
        recipient: Recipient,
        prepared: Prepared,
        sent_ms: i64,
        last_edit_ms: Option<i64>,
    ) -> Result<MessageId, ImportError> {
        let message_id = self.state.messages.next_id();
        let is_me_message =
            prepared.content.starts_with("/me ") && !prepared.content.contains('\n');
        let event = Event::MessageSent {
            message_id,
            sender_id: sender,
            recipient,
            content: prepared.content,
            rendered_content: prepared.html,
            client: self.client.clone(),
            is_me_message,
            mentioned: prepared.mentioned,
            stream_wildcard: prepared.stream_wildcard,
            topic_wildcard: prepared.topic_wildcard,
            sender_queue: None,
            alerted: Vec::new(),
        };
        self.push_at(Some(sender), sent_ms, event, last_edit_ms)?;
        self.count("messages", 1);
        Ok(message_id)
    }

    /// A reaction with an emoji named as Zulip names them, or one of the organization's custom
    /// emoji; `false` when the name is neither (the caller reports it).
    pub fn react(
        &mut self,
        message_id: MessageId,
        user_id: UserId,
        name: &str,
        at_ms: i64,
    ) -> Result<bool, ImportError> {
        // Slack's and Mattermost's names are iamcal's, some of which Zulip gives another emoji
        // (their `smile` is 😄, Zulip's is 🙂): for them the code point decides first.
        let iamcal =
            || crate::emoji::iamcal_code(name).filter(|c| crate::emoji::unicode_name(c).is_some());
        let unicode = if self.iamcal_names {
            iamcal().or_else(|| crate::emoji::unicode_code(name))
        } else {
            crate::emoji::unicode_code(name)
        };
        let (emoji_name, code, reaction_type) =
            if let Some(custom) = self.state.custom_emoji.active_named(name) {
                (
                    name.to_owned(),
                    custom.id.0.to_string(),
                    ReactionType::RealmEmoji,
                )
            } else if let Some(code) = unicode {
                (
                    crate::emoji::unicode_name(code).unwrap_or(name).to_owned(),
                    code.to_owned(),
                    ReactionType::UnicodeEmoji,
                )
            } else {
                return Ok(false);
            };
        let already = self.state.messages.get(message_id).is_some_and(|m| {
            m.reactions()
                .iter()
                .any(|r| r.user_id == user_id && r.emoji_code == code)
        });
        if already {
            return Ok(true);
        }
        self.push_at(
            Some(user_id),
            at_ms,
            Event::ReactionAdded {
                message_id,
                user_id,
                emoji_name,
                emoji_code: code,
                reaction_type,
            },
            None,
        )?;
        self.count("reactions", 1);
        Ok(true)
    }

    /// A custom emoji from its image; `Err` with the reason when the image is not one Zulip
    /// takes (the caller reports it).
    pub fn custom_emoji(
        &mut self,
        author: UserId,
        name: &str,
        image: Vec<u8>,
    ) -> Result<Result<(), String>, ImportError> {
        let name = crate::commands::emoji::normalized_name(name);
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
            && !name.ends_with(['-', '_']);
        if !valid {
            return Ok(Err(format!(
                "{name:?} is not a name Zulip takes for an emoji"
            )));
        }
        if self.state.custom_emoji.active_named(&name).is_some() {
            return Ok(Err(format!(":{name}: is there already")));
        }
        let Some(content_type) = crate::commands::emoji::image_type(&image) else {
            return Ok(Err("not a PNG, GIF, JPEG or WebP image".into()));
        };
        let image = match crate::avatars::prepare_emoji(&image) {
            Ok(small) => small.unwrap_or(image),
            Err(_) => {
                return Ok(Err(
                    "the image does not decode within the emoji bounds".into()
                ))
            }
        };
        let emoji_id = crate::ids::EmojiId(self.state.custom_emoji.max_id().0 + 1);
        self.push(
            Some(author),
            Event::CustomEmojiAdded {
                emoji_id,
                name,
                content_type: content_type.to_owned(),
                image: crate::events::ImageBytes(std::sync::Arc::from(image)),
            },
        )?;
        self.count("custom emoji", 1);
        Ok(Ok(()))
    }

    /// A file that a message will link: its bytes into `DIR/uploads`, its record into the log.
    /// Answers the `/user_uploads/…` path to link.
    pub fn upload(
        &mut self,
        owner: UserId,
        name: &str,
        bytes: &[u8],
        at_ms: i64,
    ) -> Result<String, ImportError> {
        let sha256 = self.uploads.put(bytes)?;
        let name = crate::uploads::sanitize_name(name);
        let path_id = format!(
            "{}/{}/{}",
            crate::projections::emoji::REALM_ID,
            &uuid::Uuid::new_v4().simple().to_string()[..24],
            name
        );
        let content_type = crate::uploads::sniff_image(bytes)
            .unwrap_or("application/octet-stream")
            .to_owned();
        let event = Event::AttachmentUploaded {
            attachment_id: self.state.attachments.next_id(),
            owner_id: owner,
            path_id: path_id.clone(),
            name,
            size: bytes.len() as u64,
            sha256,
            content_type,
            image: crate::thumbnails::probe(bytes),
        };
        self.push_at(Some(owner), at_ms, event, None)?;
        self.count("files", 1);
        Ok(format!("/user_uploads/{path_id}"))
    }

    /// A person's uploaded avatar: decoded within the server's bounds, cropped and resized to
    /// Zulip's two sizes as an upload through the API is; the reason when it is refused.
    pub fn avatar(
        &mut self,
        user_id: UserId,
        bytes: &[u8],
    ) -> Result<Result<(), String>, ImportError> {
        let (small, medium) = match crate::avatars::resize_upload(bytes) {
            Ok(sizes) => sizes,
            Err(crate::avatars::AvatarError::TooLarge) => {
                return Ok(Err(format!(
                    "larger than the avatar limit of {} MiB",
                    crate::avatars::MAX_AVATAR_FILE_SIZE_MIB
                )))
            }
            Err(_) => {
                return Ok(Err(
                    "not an image that decodes within the avatar bounds".into()
                ))
            }
        };
        let image = crate::events::AvatarImage {
            sha256: self.uploads.put(&small)?,
            medium_sha256: self.uploads.put(&medium)?,
        };
        self.push(
            Some(user_id),
            Event::AvatarSet {
                user_id,
                image: Some(image),
            },
        )?;
        self.count("avatars", 1);
        Ok(Ok(()))
    }

    /// Stars messages for a person.
    pub fn star(
        &mut self,
        user_id: UserId,
        message_ids: Vec<MessageId>,
    ) -> Result<(), ImportError> {
        if message_ids.is_empty() {
            return Ok(());
        }
        self.count("stars", message_ids.len() as u64);
        self.push(
            Some(user_id),
            Event::MessageFlagsChanged {
                user_id,
                flag: crate::events::MessageFlag::Starred,
                add: true,
                message_ids,
            },
        )
    }

    /// A person's read mark in one place.
    pub fn read_through(
        &mut self,
        user_id: UserId,
        place: ReadPlace,
        message_id: MessageId,
    ) -> Result<(), ImportError> {
        self.push(
            Some(user_id),
            Event::MessagesReadThrough {
                user_id,
                place,
                message_id,
            },
        )
    }

    /// The end of an import's history: people the source had deactivated, and its archived
    /// channels (after their messages, which they received).
    pub fn deactivate_and_archive(
        &mut self,
        owner: UserId,
        deactivate: Vec<UserId>,
        archived: Vec<ChannelId>,
    ) -> Result<(), ImportError> {
        for user_id in deactivate {
            self.push(None, Event::UserDeactivated { user_id })?;
            self.count("deactivated users", 1);
        }
        for channel_id in archived {
            self.push(
                Some(owner),
                Event::ChannelChanged {
                    channel_id,
                    change: crate::events::ChannelChange::Archived(true),
                },
            )?;
            self.count("archived channels", 1);
        }
        Ok(())
    }

    /// Everyone has read everything they hold (for a source that keeps no read state): one
    /// read mark per person and place, not a flag per message. `except` are the (person,
    /// place) pairs whose read state the source gave (left as they are).
    pub fn everything_read(
        &mut self,
        except: &BTreeSet<(UserId, ReadKey)>,
    ) -> Result<(), ImportError> {
        // Imports subscribe before they send, so a place's last message has every holder a
        // read mark matters to (a sender's own messages are read for them anyway).
        let mut last: BTreeMap<ReadKey, MessageId> = BTreeMap::new();
        for message in self.state.messages.all() {
            let place = match &message.recipient {
                Address::Channel { channel_id, .. } => ReadKey::Channel(*channel_id),
                Address::Direct { user_ids } => ReadKey::Direct(user_ids.to_vec()),
            };
            let mark = last.entry(place).or_insert(message.id);
            *mark = (*mark).max(message.id);
        }
        for (place, message_id) in last {
            for user_id in self.state.messages.holders(message_id) {
                if except.contains(&(user_id, place.clone())) {
                    continue;
                }
                let read_place = match &place {
                    ReadKey::Channel(c) => ReadPlace::Channel(*c),
                    ReadKey::Direct(users) => ReadPlace::Direct(users.clone()),
                };
                self.read_through(user_id, read_place, message_id)?;
            }
        }
        Ok(())
    }

    /// Ends the log, and writes the owner's zuliprc and the report.
    fn finish(mut self, layout: &Layout, owner: UserId) -> Result<Report, ImportError> {
        let counts = self.report.counts.clone();
        let skipped = self.report.skipped.len() as u64;
        self.push(None, Event::ImportFinished { counts, skipped })?;
        self.log.append(std::mem::take(&mut self.batch))?;
        self.log.finish()?;
        let owner_email = self
            .state
            .users
            .get(owner)
            .map(|u| u.email.clone())
            .unwrap_or_default();
        let nonce = self.nonces.get(&owner).cloned().unwrap_or_default();
        write_private_file(
            &layout.zuliprc(),
            format!(
                "[api]\nemail={owner_email}\nkey={}\nsite=http://127.0.0.1:9991\n",
                self.secret.api_key(owner, &nonce)
            )
            .as_bytes(),
        )?;
        self.report.owner_email = owner_email;
        let report = serde_json::to_vec_pretty(&self.report)
            .map_err(|e| ImportError::new(format!("writing the report: {e}")))?;
        std::fs::write(layout.dir.join("import-report.json"), report)?;
        Ok(self.report)
    }
}

/// A message's content, cleaned and rendered, in the form its event holds.
pub struct Prepared {
    pub content: Arc<str>,
    html: Arc<str>,
    mentioned: Vec<UserId>,
    stream_wildcard: bool,
    topic_wildcard: bool,
}

/// A message's content cleaned and rendered against `state`, ahead of its sending: the part of
/// it that reads no more than the organization's people, channels and settings, which an
/// importer may do on another thread while those stand still. `None` when nothing is left to
/// show.
pub fn prepare(state: &Projections, content: &str) -> Option<Prepared> {
    let content = clean_content(content);
    if content.trim().is_empty() {
        return None;
    }
    let rendered = crate::markdown::render_message(&content, &OrgResolver(state));
    Some(Prepared {
        content: content.into(),
        html: rendered.html.into(),
        mentioned: rendered.mentioned.into_iter().map(UserId).collect(),
        stream_wildcard: rendered.stream_wildcard,
        topic_wildcard: rendered.topic_wildcard,
    })
}

/// A message's content as a client could send it: without control characters (some exports
/// hold NULs), cut to Zulip's length.
pub fn clean_content(content: &str) -> String {
    let control = |c: char| c.is_control() && !matches!(c, '\n' | '\t');
    let content: std::borrow::Cow<str> = if content.contains(control) {
        content
            .chars()
            .filter(|c| !control(*c))
            .collect::<String>()
            .into()
    } else {
        content.into()
    };
    crate::commands::messages::truncate(
        content.trim_end(),
        crate::commands::messages::MAX_MESSAGE_LENGTH,
        "\n[message truncated]",
    )
}

/// A name or topic without control characters, cut to `max` characters.
pub fn clean_line(text: &str, max: usize) -> String {
    let cleaned: String = text.chars().filter(|c| !c.is_control()).take(max).collect();
    cleaned.trim().to_owned()
}

/// A thread's topic: the date it started and the beginning of its first message's first line,
/// markup left out, cut to Zulip's 60 characters (`fallback` when the first message is not in
/// the export or has no words).
pub fn thread_topic(started_ms: i64, root: Option<&str>, fallback: &str) -> String {
    let date = crate::time::iso8601_ms(started_ms)
        .get(..10)
        .unwrap_or_default()
        .to_owned();
    let snippet: String = root
        .unwrap_or_default()
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '~' | '`' | '#' | '>') && !c.is_control())
        .collect();
    let snippet = snippet.split_whitespace().collect::<Vec<_>>().join(" ");
    if snippet.is_empty() {
        return format!("{date} {fallback}");
    }
    let topic = format!("{date} {snippet}");
    if topic.chars().count() <= 60 {
        topic
    } else {
        let cut: String = topic.chars().take(59).collect();
        format!("{}…", cut.trim_end())
    }
}

/// The names taken in one place (channels in the organization, topics in a channel).
#[derive(Debug, Default)]
pub struct Taken {
    /// Lower-cased.
    names: BTreeSet<String>,
    /// For each lower-cased base name, the next suffix number to try.
    next: BTreeMap<String, u64>,
}

/// `name`, or `name (2)`, `name (3)` … : the first that `taken` lacks (case aside), within
/// `max` characters; the answer is added to `taken`. Each base name remembers where its
/// numbering stopped, so many alike names cost no more than a few.
pub fn unique_name(name: &str, max: usize, taken: &mut Taken) -> String {
    let base: String = name.chars().take(max).collect();
    let key = base.to_lowercase();
    let mut candidate = base.clone();
    let mut n = taken.next.get(&key).copied().unwrap_or(2);
    while taken.names.contains(&candidate.to_lowercase()) {
        let suffix = format!(" ({n})");
        let keep: String = name.chars().take(max - suffix.chars().count()).collect();
        candidate = format!("{}{suffix}", keep.trim_end());
        n += 1;
    }
    taken.next.insert(key, n);
    taken.names.insert(candidate.to_lowercase());
    candidate
}

/// A channel or a direct conversation (every participant, ascending): where a read mark is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReadKey {
    Channel(ChannelId),
    Direct(Vec<UserId>),
}

/// The sources `import-from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Source {
    Zulip,
    Slack,
    Mattermost,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Slack => "slack",
            Source::Mattermost => "mattermost",
            Source::Zulip => "zulip",
        }
    }
}

/// Refuses a data directory that holds anything.
fn check_target(data_dir: &Path) -> Result<(), ImportError> {
    match std::fs::read_dir(data_dir) {
        Ok(mut listing) => {
            if listing.next().is_some() {
                return Err(ImportError::new(format!(
                    "{}: not empty; an import goes into a new data directory",
                    data_dir.display()
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ImportError::new(format!("{}: {e}", data_dir.display()))),
    }
}

/// Runs an import into `data_dir` (absent or empty), all or nothing.
pub fn run(
    source: Source,
    input: &Path,
    data_dir: &Path,
    options: &Options,
) -> Result<Report, ImportError> {
    check_target(data_dir)?;
    let parent = match data_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)?;
    let name = data_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "data".into());
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.importing-"))
        .tempdir_in(&parent)?;
    // A tar.gz is unpacked beside the new directory, and removed with it.
    let scratch = tempfile::Builder::new()
        .prefix(&format!(".{name}.unpacking-"))
        .tempdir_in(&parent)?;
    // Zulip's message files are taken from a tar.gz as it is unpacked (see `archive`).
    let streamed = (source == Source::Zulip).then_some(zulip::streamed as fn(&str) -> bool);
    let mut archive =
        archive::Archive::open_in(input, scratch.path(), options.max_expanded, streamed)?;
    let layout = Layout::new(staging.path());
    let built = (|| {
        let mut writer = Writer::open(&layout, source.name(), &archive.sha256)?;
        writer.iamcal_names = source != Source::Zulip;
        let owner = match source {
            Source::Slack => slack::import(&mut archive, &mut writer, options)?,
            Source::Mattermost => mattermost::import(&mut archive, &mut writer, options)?,
            Source::Zulip => zulip::import(&mut archive, &mut writer, options)?,
        };
        // A tar.gz read while it was unpacked is whole and sound to its end, or nothing is kept.
        archive.finish()?;
        writer.finish(&layout, owner)
    })()?;
    // Into place: an empty target directory gives way to the finished one.
    if data_dir.exists() {
        std::fs::remove_dir(data_dir)?;
    }
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, data_dir) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(e.into());
    }
    Ok(built)
}

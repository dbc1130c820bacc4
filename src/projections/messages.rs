//! Messages, the per-user copies with their flags, and the indexes reads need (by channel, by
//! channel and topic, by direct conversation), so that no read scans every message.

use super::channels::Channels;
use super::user_topics::topic_key;
use super::users::Users;
use super::FastMap as HashMap;
use crate::events::{EditedContent, Envelope, Event, MessageFlag, ReadPlace, Recipient};
use crate::ids::{ChannelId, MessageId, UserId};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

use super::copies::{Copies, Place};
use super::id_set::IdSet;
pub use super::message::{
    flag_bit, flag_names, flags, Address, EditRecord, Message, MessageExtra, Reaction, Submessage,
    Topic,
};
use super::message::{intern, Shared};
use super::store::MessageStore;

/// The wildcard-mention bits of a message.
pub(super) fn wildcard_bits(stream_wildcard: bool, topic_wildcard: bool) -> u8 {
    let mut bits = 0;
    if stream_wildcard {
        bits |= flags::STREAM_WILDCARD;
    }
    if topic_wildcard {
        bits |= flags::TOPIC_WILDCARD;
    }
    bits
}

/// The resolved-topic prefix.
pub const RESOLVED_TOPIC_PREFIX: &str = "✔ ";

/// Whether a topic change only resolves or unresolves the topic (not a move).
pub fn is_resolve_toggle(old: &str, new: &str) -> bool {
    let strip = |t: &str| t.strip_prefix(RESOLVED_TOPIC_PREFIX).map(str::to_owned);
    strip(new).as_deref() == Some(old) || strip(old).as_deref() == Some(new)
}

/// A copy of the stored messages, to build a word index from away from the state
/// (`Messages::word_index_source`).
pub struct WordIndexSource {
    store: MessageStore,
}

impl WordIndexSource {
    /// Messages the index will cover.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// Builds the index on every core.
    pub fn build(self) -> BuiltWordIndex {
        BuiltWordIndex {
            words: index_words(&self.store),
            store: self.store,
        }
    }
}

/// What building a word index gave (`Engine::index_words_in_background`).
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexBuilt {
    pub messages: usize,
    pub seconds: f64,
    /// Distinct words indexed.
    pub words: usize,
    /// Its heap bytes (`WordIndex::heap_bytes`).
    pub bytes: u64,
}

/// A word index and the copy of the messages it covers (`Messages::install_word_index`).
pub struct BuiltWordIndex {
    words: super::search::WordIndex,
    store: MessageStore,
}

fn index_words(store: &MessageStore) -> super::search::WordIndex {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let messages = || {
        store
            .values()
            .map(|message| (message.id, message.topic(), &*message.content))
    };
    super::search::WordIndex::build(messages, threads)
}

/// All messages and their indexes.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Messages {
    pub(super) by_id: MessageStore,
    pub(super) by_channel: HashMap<ChannelId, IdSet>,
    by_topic: HashMap<(ChannelId, String), IdSet>,
    pub(super) by_conversation: HashMap<Vec<UserId>, IdSet>,
    /// Direct-message groups of three or more, numbered in order of their first message.
    group_ids: HashMap<Vec<UserId>, u64>,
    /// Who holds a copy of each message (Zulip's UserMessage rows) and its flags.
    pub(super) copies: Copies,
    /// The highest id ever sent: ids are never reused, even after deletions.
    highest_id: u64,
    /// Words of topics and contents, for `search:` narrows; `None` in a state that answers no
    /// searches (the engine's decision state: see `without_word_index`).
    words: Option<super::search::WordIndex>,
    /// The highest submessage id ever given (ids are never reused).
    highest_submessage_id: u64,
    /// Client names, topics and participant lists, interned; after a snapshot is loaded, the
    /// sets it was decoded with (`keep_interned`).
    #[serde(skip)]
    shared: Shared,
}

impl Default for Messages {
    fn default() -> Messages {
        Messages {
            by_id: MessageStore::default(),
            by_channel: HashMap::default(),
            by_topic: HashMap::default(),
            by_conversation: HashMap::default(),
            group_ids: HashMap::default(),
            copies: Copies::default(),
            highest_id: 0,
            words: Some(super::search::WordIndex::default()),
            highest_submessage_id: 0,
            shared: Shared::default(),
        }
    }
}

impl Messages {
    pub fn get(&self, id: MessageId) -> Option<&Message> {
        self.by_id.get(&id)
    }

    pub fn max_id(&self) -> MessageId {
        self.by_id
            .keys()
            .next_back()
            .copied()
            .unwrap_or(MessageId(0))
    }

    /// The id the next submessage gets.
    pub fn next_submessage_id(&self) -> u64 {
        self.highest_submessage_id + 1
    }

    /// The id the next message gets (ids are never reused).
    pub fn next_id(&self) -> MessageId {
        MessageId(self.highest_id.max(self.max_id().0) + 1)
    }

    /// Every message `user` sent, oldest first. It walks all messages: only a deactivation
    /// that deletes someone's messages asks, which is rare and not a read path.
    pub fn sent_by(&self, user: UserId) -> impl Iterator<Item = &Message> {
        self.by_id.values().filter(move |m| m.sender_id == user)
    }

    /// Users who hold a copy of a message, ascending.
    pub fn holders(&self, message: MessageId) -> Vec<UserId> {
        self.holders_of_any(&[message])
    }

    /// Users who lost their copy of any of `messages` when it was last moved to a channel they
    /// cannot read, ascending.
    pub fn lost_in_move(&self, messages: &[MessageId]) -> Vec<UserId> {
        let lost: BTreeSet<UserId> = messages
            .iter()
            .flat_map(|id| self.copies.lost_in_last_move(*id))
            .collect();
        lost.into_iter().collect()
    }

    /// Users holding a copy of any of `messages`, ascending.
    pub fn holders_of_any(&self, messages: &[MessageId]) -> Vec<UserId> {
        let mut out = BTreeSet::new();
        for message in messages.iter().filter_map(|id| self.by_id.get(id)) {
            out.extend(self.copies.holders(message));
        }
        out.into_iter().collect()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The user's flags on a message, if they hold a copy.
    pub fn flags(&self, user: UserId, message: MessageId) -> Option<u8> {
        self.copies.flags(user, self.by_id.get(&message)?)
    }

    /// Every message `user` holds a copy of, in id order (from either end).
    pub fn held_ids(&self, user: UserId) -> impl DoubleEndedIterator<Item = MessageId> + '_ {
        self.by_id
            .values()
            .filter(move |m| self.copies.holds(user, m))
            .map(|m| m.id)
    }

    /// The user's unread copies with their flags, newest first, at most `limit` of them, and
    /// whether there were more.
    pub fn unread_of(&self, user: UserId, limit: usize) -> (Vec<(MessageId, u8)>, bool) {
        let (found, more) = self.unread_messages_of(user, limit);
        (
            found.into_iter().map(|(m, bits)| (m.id, bits)).collect(),
            more,
        )
    }

    /// [`Messages::unread_of`] with the messages themselves, for callers that read them.
    pub fn unread_messages_of(&self, user: UserId, limit: usize) -> (Vec<(&Message, u8)>, bool) {
        // Unread copies lie above the read mark of their place, or are exceptions below it
        // (flipped), or are historical or moved copies (loose). A channel's messages above the
        // mark are checked with the user's copies of that channel looked up once.
        // The id is kept beside the message so that sorting does not read every message again.
        let mut found: Vec<(MessageId, &Message, u8)> = Vec::new();
        let (channels, loose) = self.copies.sources_of(user);
        for channel in channels {
            let Some(ids) = self.by_channel.get(&channel) else {
                continue;
            };
            let copies = self.copies.in_channel(user, channel);
            for id in ids.range(MessageId(copies.mark().saturating_add(1))..) {
                let Some(message) = self.by_id.get(id) else {
                    continue;
                };
                match copies.flags(message) {
                    Some(bits) if bits & flags::READ == 0 => found.push((*id, message, bits)),
                    _ => {}
                }
            }
        }
        let mut others: Vec<MessageId> = Vec::new();
        for (participants, ids) in &self.by_conversation {
            if participants.contains(&user) {
                let mark = self
                    .copies
                    .read_mark(user, &Place::Direct(participants.as_slice().into()));
                others.extend(ids.range(MessageId(mark.saturating_add(1))..));
            }
        }
        others.extend(loose);
        others.extend(self.copies.flipped_of(user));
        for id in others {
            let Some(message) = self.by_id.get(&id) else {
                continue;
            };
            match self.copies.flags(user, message) {
                Some(bits) if bits & flags::READ == 0 => found.push((id, message, bits)),
                _ => {}
            }
        }
        // Sorted once (places interleave); a copy found from two sources has the same flags.
        found.sort_unstable_by_key(|(id, ..)| std::cmp::Reverse(*id));
        found.dedup_by_key(|(id, ..)| *id);
        let more = found.len() > limit;
        found.truncate(limit);
        let found = found.into_iter().map(|(_, m, bits)| (m, bits)).collect();
        (found, more)
    }

    /// Every message, ascending (imports walk them to set read marks; tests check a rule
    /// message by message).
    pub fn all(&self) -> impl DoubleEndedIterator<Item = &Message> {
        self.by_id.values()
    }

    /// One user's copies in one channel (for tests of the fast flag view).
    #[cfg(test)]
    pub fn copies_in_channel(
        &self,
        user: UserId,
        channel: ChannelId,
    ) -> super::copies::ChannelCopies<'_> {
        self.copies.in_channel(user, channel)
    }

    /// The newest message the user holds a copy of.
    pub fn newest_held(&self, user: UserId) -> Option<MessageId> {
        self.held_ids(user).next_back()
    }

    /// The messages the user starred, ascending.
    pub fn starred_of(&self, user: UserId) -> Vec<MessageId> {
        self.copies
            .starred_of(user)
            .filter(|id| self.flags(user, *id).is_some())
            .collect()
    }

    /// What the word index offers a search: `None` when this state keeps no index (a search
    /// then checks each message's text).
    pub fn search_plan(&self, query: &crate::analyzer::Query) -> Option<super::search::Plan<'_>> {
        Some(self.words.as_ref()?.plan(query))
    }

    /// The word index's distinct words and heap bytes (zero without one).
    pub fn word_index_size(&self) -> (usize, u64) {
        self.words
            .as_ref()
            .map_or((0, 0), |index| (index.words(), index.heap_bytes()))
    }

    /// What a word index can be built from on another thread while this state goes on
    /// folding (`WordIndexSource::build`, then `install_word_index`): a copy of the stored
    /// messages, which shares every chunk of them. `None` when this state keeps an index.
    pub fn word_index_source(&self) -> Option<WordIndexSource> {
        self.words.is_none().then(|| WordIndexSource {
            store: self.by_id.clone(),
        })
    }

    /// Installs an index built from an earlier copy of the messages, brought up to date with
    /// every message changed since the copy (the chunks no longer shared with it): each one's
    /// old words are removed, then its new ones added. Returns false, leaving the state as it
    /// was, when the state already keeps an index.
    pub fn install_word_index(&mut self, built: BuiltWordIndex) -> bool {
        if self.words.is_some() {
            return false;
        }
        let BuiltWordIndex { mut words, store } = built;
        for (then, now) in self.by_id.differences(&store) {
            let unchanged = matches!((then, now), (Some(a), Some(b))
                if a.topic() == b.topic() && a.content == b.content);
            if unchanged {
                continue;
            }
            if let Some(m) = then {
                words.remove(m.id, m.topic(), &m.content);
            }
            if let Some(m) = now {
                words.add(m.id, m.topic(), &m.content);
            }
        }
        self.words = Some(words);
        true
    }

    /// Installs a word index taken from another state (`take_word_index`): the engine moves
    /// the one its starting state kept to its read state.
    pub fn set_word_index(&mut self, words: super::search::WordIndex) {
        self.words = Some(words);
    }

    /// Takes the word index out (leaving a state that keeps none).
    pub fn take_word_index(&mut self) -> Option<super::search::WordIndex> {
        self.words.take()
    }

    /// Interns into `shared` from now on: the sets a snapshot's messages were decoded with
    /// (`message::decoding_shared`).
    pub(super) fn keep_interned(&mut self, shared: Shared) {
        self.shared = shared;
    }

    /// Records which stored messages change, so that another copy can share them
    /// (`adopt_shared`).
    pub fn track_changes(&mut self) {
        self.by_id.track_changes();
    }

    /// Shares `decided`'s copy of every stored message it changed since the last call; both
    /// must have folded the same events (see `MessageStore::adopt_changed`).
    pub fn adopt_shared(&mut self, decided: &mut Messages) {
        self.by_id.adopt_changed(&mut decided.by_id);
    }

    /// After decoding a snapshot older than `snap5`: see `message::keep_paragraph_rendering`.
    pub fn keep_paragraph_renderings(&mut self) {
        for message in self.by_id.values_mut() {
            super::message::keep_paragraph_rendering(message);
        }
    }

    /// A copy without the word index (for the engine's decision state, which keeps none).
    pub fn clone_without_word_index(&self) -> Messages {
        Messages {
            by_id: self.by_id.clone(),
            by_channel: self.by_channel.clone(),
            by_topic: self.by_topic.clone(),
            by_conversation: self.by_conversation.clone(),
            group_ids: self.group_ids.clone(),
            copies: self.copies.clone(),
            highest_id: self.highest_id,
            words: None,
            highest_submessage_id: self.highest_submessage_id,
            shared: self.shared.clone(),
        }
    }

    /// Drops the word index and stops keeping it: for a copy of the state that never answers
    /// reads (the engine's decision state), which halves the index's memory.
    pub fn without_word_index(&mut self) {
        self.words = None;
    }

    pub fn in_channel(&self, channel: ChannelId) -> Option<&IdSet> {
        self.by_channel.get(&channel)
    }

    pub fn in_topic(&self, channel: ChannelId, topic: &str) -> Option<&IdSet> {
        self.by_topic.get(&(channel, topic_key(topic)))
    }

    /// Every direct-message conversation's messages, ascending.
    pub fn conversations(&self) -> impl Iterator<Item = &IdSet> {
        self.by_conversation.values()
    }

    /// The direct conversations `user` takes part in, as (participants, newest message id).
    pub fn conversations_of(&self, user: UserId) -> Vec<(&[UserId], MessageId)> {
        self.by_conversation
            .iter()
            .filter(|(participants, _)| participants.contains(&user))
            .filter_map(|(participants, ids)| Some((participants.as_slice(), *ids.last()?)))
            .collect()
    }

    pub fn in_conversation(&self, participants: &[UserId]) -> Option<&IdSet> {
        self.by_conversation.get(participants)
    }

    /// Zulip's `recipient_id` for a message: the channel's, a user's personal one for 1:1
    /// conversations, or the group's.
    pub fn recipient_id(&self, message: &Message) -> u64 {
        match &message.recipient {
            Address::Channel { channel_id, .. } => channel_id.0,
            Address::Direct { user_ids } if user_ids.len() <= 2 => {
                // The personal recipient of the other participant (or oneself).
                let other = user_ids
                    .iter()
                    .copied()
                    .find(|u| *u != message.sender_id)
                    .unwrap_or(message.sender_id);
                1_000_000 + other.0
            }
            Address::Direct { user_ids } => {
                2_000_000 + self.group_ids.get(&**user_ids).copied().unwrap_or(0)
            }
        }
    }

    /// Topics of a channel with their newest message id, newest first.
    pub fn topics(&self, channel: ChannelId) -> Vec<(String, MessageId)> {
        let mut topics: HashMap<String, (String, MessageId)> = HashMap::default();
        for id in self.by_channel.get(&channel).into_iter().flatten() {
            if let Some(m) = self.by_id.get(id) {
                let entry = topics
                    .entry(topic_key(m.topic()))
                    .or_insert((m.topic().to_owned(), *id));
                if *id >= entry.1 {
                    *entry = (m.topic().to_owned(), *id);
                }
            }
        }
        let mut out: Vec<(String, MessageId)> = topics.into_values().collect();
        out.sort_by_key(|t| std::cmp::Reverse(t.1));
        out
    }

    pub fn apply(&mut self, env: &Envelope, channels: &Channels, users: &Users) {
        match &env.event {
            Event::MessageSent { .. } => self.message_sent(env),
            Event::MessageFlagsChanged {
                user_id,
                flag,
                add,
                message_ids,
            } => self.flags_changed(*user_id, *flag, *add, message_ids),
            Event::ReactionAdded {
                message_id,
                user_id,
                emoji_name,
                emoji_code,
                reaction_type,
            } => {
                if let Some(message) = self.by_id.get_mut(message_id) {
                    message.extra_mut().reactions.push(Reaction {
                        user_id: *user_id,
                        emoji_name: emoji_name.clone(),
                        emoji_code: emoji_code.clone(),
                        reaction_type: *reaction_type,
                    });
                    // Reacting to a message of public history creates a (read) copy, as Zulip's
                    // historical rows do.
                    self.copies.take_historical(*user_id, message);
                }
            }
            Event::SubmessageAdded {
                submessage_id,
                message_id,
                sender_id,
                msg_type,
                content,
            } => {
                self.highest_submessage_id = self.highest_submessage_id.max(*submessage_id);
                if let Some(message) = self.by_id.get_mut(message_id) {
                    message.extra_mut().submessages.push(Submessage {
                        id: *submessage_id,
                        sender_id: *sender_id,
                        msg_type: msg_type.clone(),
                        content: content.clone(),
                    });
                }
            }
            Event::ReactionRemoved {
                message_id,
                user_id,
                emoji_code,
                reaction_type,
                ..
            } => {
                if let Some(extra) = self
                    .by_id
                    .get_mut(message_id)
                    .and_then(|m| m.extra.as_mut())
                {
                    extra.reactions.retain(|r| {
                        !(r.user_id == *user_id
                            && r.emoji_code == *emoji_code
                            && r.reaction_type == *reaction_type)
                    });
                }
            }
            Event::MessageEdited {
                message_id,
                user_id,
                content,
                moved,
                alerted,
            } => {
                let at = env.at / 1000;
                if let Some(new) = content {
                    self.edit_content(*message_id, *user_id, at, new, alerted.as_deref());
                }
                if let Some(moved) = moved {
                    for id in &moved.message_ids {
                        // The edited message's content change and move are one history entry.
                        let merge = content.is_some() && id == message_id;
                        self.move_message(*id, (*user_id, at), moved, merge, channels, users);
                    }
                }
            }
            Event::MessagesReadThrough {
                user_id,
                place,
                message_id,
            } => {
                let place = match place {
                    ReadPlace::Channel(channel) => Place::Channel(*channel),
                    ReadPlace::Direct(users) => Place::Direct(users.as_slice().into()),
                };
                let cleared: Vec<MessageId> = self
                    .copies
                    .flipped_of(*user_id)
                    .filter(|id| {
                        id.0 <= message_id.0
                            && self.by_id.get(id).is_some_and(|m| Place::of(m) == place)
                    })
                    .collect();
                self.copies
                    .read_through(*user_id, &place, message_id.0, &cleared);
            }
            Event::MessagesDeleted { message_ids, .. } => {
                for id in message_ids {
                    self.remove(*id);
                }
            }
            // Who receives a channel's next message: its active subscribers.
            Event::ChannelCreated { channel_id, .. }
            | Event::ChannelChanged { channel_id, .. }
            | Event::Subscribed { channel_id, .. }
            | Event::Unsubscribed { channel_id, .. } => {
                if let Some(channel) = channels.get(*channel_id) {
                    self.copies
                        .sync_channel(channel, users, self.highest_id + 1);
                }
            }
            Event::UserCreated { user_id, .. }
            | Event::UserDeactivated { user_id }
            | Event::UserReactivated { user_id } => {
                self.copies
                    .sync_user(*user_id, channels, users, self.highest_id + 1);
            }
            Event::RealmCreated { .. }
            | Event::RealmSettingChanged { .. }
            | Event::InvitationCreated { .. }
            | Event::InvitationResent { .. }
            | Event::InvitationRevoked { .. }
            | Event::InvitationAccepted { .. }
            | Event::CustomProfileFieldCreated { .. }
            | Event::CustomProfileFieldChanged { .. }
            | Event::CustomProfileFieldDeleted { .. }
            | Event::CustomProfileFieldsReordered { .. }
            | Event::ProfileDataSet { .. }
            | Event::LinkifierAdded { .. }
            | Event::LinkifierChanged { .. }
            | Event::LinkifierRemoved { .. }
            | Event::LinkifiersReordered { .. }
            | Event::ApiKeyRegenerated { .. }
            | Event::PasswordChanged { .. }
            | Event::UserChanged { .. }
            | Event::UserGroupCreated { .. }
            | Event::UserGroupMembersChanged { .. }
            | Event::UserGroupSubgroupsChanged { .. }
            | Event::UserGroupChanged { .. }
            | Event::SubscriptionPropertyChanged { .. }
            | Event::ChannelFolderCreated { .. }
            | Event::ChannelFolderChanged { .. }
            | Event::ChannelFoldersReordered { .. }
            | Event::TopicVisibilitySet { .. }
            | Event::CustomEmojiAdded { .. }
            | Event::CustomEmojiDeactivated { .. }
            | Event::PresenceUpdated { .. }
            | Event::UserSettingChanged { .. }
            | Event::UserStatusSet { .. }
            | Event::BotStorageSet { .. }
            | Event::BotStorageRemoved { .. }
            | Event::AttachmentUploaded { .. }
            | Event::AttachmentDeleted { .. }
            | Event::ScheduledMessageSaved { .. }
            | Event::ScheduledMessageFailed { .. }
            | Event::ScheduledMessageRemoved { .. }
            | Event::NavigationViewAdded { .. }
            | Event::NavigationViewChanged { .. }
            | Event::NavigationViewRemoved { .. }
            | Event::BotChanged { .. }
            | Event::ClientDeviceRegistered { .. }
            | Event::ClientDeviceRemoved { .. }
            | Event::SessionStarted { .. }
            | Event::SessionEnded { .. }
            | Event::TwoFactorChanged { .. }
            | Event::SignInTokenSpent { .. }
            | Event::NoticesRecorded { .. }
            | Event::NoticesSettled { .. }
            | Event::EmailQueued { .. }
            | Event::EmailSent { .. }
            | Event::EmailFailed { .. }
            | Event::PushDeviceChanged { .. }
            | Event::PushQueued { .. }
            | Event::PushSent { .. }
            | Event::PushFailed { .. }
            | Event::PushTestSent { .. }
            | Event::ClockWentBack { .. }
            | Event::UserEmailChanged { .. }
            | Event::DraftsSaved { .. }
            | Event::DraftRemoved { .. }
            | Event::SavedSnippetSaved { .. }
            | Event::SavedSnippetRemoved { .. }
            | Event::UserMuted { .. }
            | Event::AlertWordsAdded { .. }
            | Event::RealmDomainAdded { .. }
            | Event::RealmDomainChanged { .. }
            | Event::RealmDomainRemoved { .. }
            | Event::AlertWordsRemoved { .. }
            | Event::AvatarSet { .. }
            | Event::UserUnmuted { .. }
            | Event::LogErased { .. }
            | Event::ImportStarted { .. }
            | Event::ImportFinished { .. }
            | Event::RealmExported { .. }
            | Event::RealmExportDeleted { .. }
            | Event::Imported { .. }
            | Event::TypingStarted { .. }
            | Event::TypingStopped { .. }
            | Event::EditTyping { .. }
            | Event::PlaygroundAdded { .. }
            | Event::PlaygroundRemoved { .. }
            | Event::RealmUserDefaultChanged { .. }
            | Event::DefaultChannelGroupSaved { .. }
            | Event::DefaultChannelGroupRemoved { .. }
            | Event::RealmImageSet { .. } => {}
        }
    }

    /// An imported message's last edit time (seconds), from a source that kept when a message
    /// was last edited but not its earlier texts.
    pub fn set_last_edit_time(&mut self, id: MessageId, at: i64) {
        if let Some(message) = self.by_id.get_mut(&id) {
            message.extra_mut().last_edit_timestamp = Some(at);
        }
    }

    /// Stores a new message, indexes it, and gives each recipient a copy with its flags.
    fn message_sent(&mut self, env: &Envelope) {
        let Event::MessageSent {
            message_id,
            sender_id,
            recipient,
            content,
            rendered_content,
            client,
            is_me_message,
            mentioned,
            stream_wildcard,
            topic_wildcard,
            sender_queue: _,
            alerted,
        } = &env.event
        else {
            return;
        };
        let message = Message {
            id: *message_id,
            sender_id: *sender_id,
            recipient: self.shared.address(recipient),
            content: content.clone(),
            rendered: super::message::stored_rendering(content, rendered_content),
            client: intern(&mut self.shared.clients, &**client),
            timestamp: env.at / 1000,
            is_me_message: *is_me_message,
            mentioned: mentioned.clone().into_boxed_slice(),
            wildcards: wildcard_bits(*stream_wildcard, *topic_wildcard),
            extra: None,
        };
        let mut message = message;
        if !alerted.is_empty() {
            message.extra_mut().alerted = alerted.clone();
        }
        self.highest_id = self.highest_id.max(message_id.0);
        match recipient {
            Recipient::Channel { channel_id, topic } => {
                self.by_channel
                    .entry(*channel_id)
                    .or_default()
                    .insert(*message_id);
                self.by_topic
                    .entry((*channel_id, topic_key(topic)))
                    .or_default()
                    .insert(*message_id);
            }
            Recipient::Direct { user_ids } => {
                self.by_conversation
                    .entry(user_ids.clone())
                    .or_default()
                    .insert(*message_id);
                if user_ids.len() > 2 {
                    let next = self.group_ids.len() as u64 + 1;
                    self.group_ids.entry(user_ids.clone()).or_insert(next);
                }
            }
        }
        if let Some(words) = &mut self.words {
            words.add(*message_id, message.topic(), content);
        }
        // Who gets a copy follows from who was receiving the channel (or is in the
        // conversation) at this point of the log: nothing per recipient is stored.
        self.by_id.insert(*message_id, message);
    }

    fn edit_content(
        &mut self,
        id: MessageId,
        editor: UserId,
        at: i64,
        new: &EditedContent,
        alerted: Option<&[UserId]>,
    ) {
        let Some(message) = self.by_id.get_mut(&id) else {
            return;
        };
        if let Some(words) = &mut self.words {
            words.remove(id, message.topic(), &message.content);
            words.add(id, message.topic(), &new.content);
        }
        let prev = message.set_body(new.content.clone(), &new.rendered_content);
        message.is_me_message = new.is_me_message;
        let extra = message.extra_mut();
        extra.edits.push(EditRecord {
            user_id: editor,
            timestamp: at,
            prev_content: Some(prev),
            prev_topic: None,
            prev_channel: None,
        });
        extra.last_edit_timestamp = Some(at);
        // Alert words follow the new content (records from before they existed carry none).
        extra.alerted = alerted.map(<[UserId]>::to_vec).unwrap_or_default();
        // Mentions follow the new content for everyone holding a copy.
        message.mentioned = new.mentioned.clone().into_boxed_slice();
        message.wildcards = wildcard_bits(new.stream_wildcard, new.topic_wildcard);
        self.copies.mentions_follow(id);
    }

    /// Moves one message; `(editor, at)` is who moved it and when (seconds).
    fn move_message(
        &mut self,
        id: MessageId,
        (editor, at): (UserId, i64),
        moved: &crate::events::MessageMove,
        merge: bool,
        channels: &Channels,
        users: &Users,
    ) {
        let Some(message) = self.by_id.get_mut(&id) else {
            return;
        };
        // Who held it, and whether they had read it, before the move (a move between channels
        // changes the holders).
        let before = moved
            .new_channel_id
            .filter(|c| Some(*c) != message.channel())
            .map(|_| self.copies.before_move(message));
        let Address::Channel { channel_id, topic } = &mut message.recipient else {
            return;
        };
        let (old_channel, old_topic) = (*channel_id, topic.clone());
        let new_channel = moved.new_channel_id.unwrap_or(old_channel);
        let new_topic = match &moved.new_topic {
            Some(name) => self.shared.topic(name),
            None => old_topic.clone(),
        };
        *channel_id = new_channel;
        *topic = new_topic.clone();
        if let Some(words) = self.words.as_mut().filter(|_| new_topic != old_topic) {
            words.remove(id, &old_topic, &message.content);
            words.add(id, &new_topic, &message.content);
        }
        let extra = message.extra_mut();
        let topic_changed = new_topic != old_topic;
        let channel_changed = new_channel != old_channel;
        let record = EditRecord {
            user_id: editor,
            timestamp: at,
            prev_content: None,
            prev_topic: topic_changed.then(|| old_topic.to_string()),
            prev_channel: channel_changed.then_some(old_channel),
        };
        match extra.edits.last_mut() {
            Some(last) if merge => {
                last.prev_topic = record.prev_topic;
                last.prev_channel = record.prev_channel;
            }
            _ => extra.edits.push(record),
        }
        extra.last_edit_timestamp = Some(at);
        if channel_changed || !is_resolve_toggle(&old_topic, &new_topic) {
            extra.last_moved_timestamp = Some(at);
        }
        let old_key = (old_channel, topic_key(&old_topic));
        if let Some(set) = self.by_topic.get_mut(&old_key) {
            set.remove(&id);
            if set.is_empty() {
                self.by_topic.remove(&old_key);
            }
        }
        self.by_topic
            .entry((new_channel, topic_key(&new_topic)))
            .or_default()
            .insert(id);
        if !channel_changed {
            return;
        }
        if let Some(set) = self.by_channel.get_mut(&old_channel) {
            set.remove(&id);
        }
        self.by_channel.entry(new_channel).or_default().insert(id);
        // Copies follow the new channel: those who cannot read it lose theirs, its subscribers
        // get one (read: nothing new arrived for them).
        let (Some(channel), Some(before), Some(message)) =
            (channels.get(new_channel), before, self.by_id.get(&id))
        else {
            return;
        };
        self.copies
            .moved_to_channel(message, before, channel, users);
    }

    fn remove(&mut self, id: MessageId) {
        let Some(message) = self.by_id.remove(&id) else {
            return;
        };
        self.copies.remove(&message);
        if let Some(words) = &mut self.words {
            words.remove(id, message.topic(), &message.content);
        }
        match &message.recipient {
            Address::Channel { channel_id, topic } => {
                if let Some(set) = self.by_channel.get_mut(channel_id) {
                    set.remove(&id);
                }
                let key = (*channel_id, topic_key(topic));
                if let Some(set) = self.by_topic.get_mut(&key) {
                    set.remove(&id);
                    if set.is_empty() {
                        self.by_topic.remove(&key);
                    }
                }
            }
            Address::Direct { user_ids } => {
                if let Some(set) = self.by_conversation.get_mut(&**user_ids) {
                    set.remove(&id);
                }
            }
        }
    }

    /// `MessageFlagsChanged`: a flag set or cleared on the user's copies. Setting one on a
    /// message they hold no copy of (starring public history) creates a historical copy, as
    /// Zulip's rows do.
    fn flags_changed(&mut self, user: UserId, flag: MessageFlag, add: bool, ids: &[MessageId]) {
        let bit = flag_bit(flag);
        for id in ids {
            let Some(message) = self.by_id.get(id) else {
                continue;
            };
            self.copies.take_historical(user, message);
            if bit == flags::READ {
                self.copies.set_read(user, message, add);
            } else {
                self.copies.set_listed(user, *id, bit, add);
            }
        }
        if bit == flags::READ && add {
            self.advance_marks(user, ids);
        }
    }

    /// The facts of the dump with the copies in their compact form (see
    /// `Copies::compact_json`): what the state's digest covers, without listing every copy.
    /// It serializes one message at a time, so hashing it needs no copy of the whole state.
    pub fn digest_view(&self) -> DigestView<'_> {
        DigestView(self)
    }

    pub fn dump(&self) -> Value {
        let mut dump = self.dump_messages();
        dump["user_messages"] = self.dump_copies();
        dump
    }

    /// Every message, as the dump lists it.
    fn dump_messages(&self) -> Value {
        let messages: Vec<Value> = self.by_id.values().map(message_row).collect();
        json!({ "messages": messages })
    }

    /// Every copy with its flags, by user (the rows Zulip would hold).
    fn dump_copies(&self) -> Value {
        let mut by_user: BTreeMap<UserId, Vec<Value>> = BTreeMap::new();
        for m in self.by_id.values() {
            for user in self.copies.holders(m) {
                if let Some(bits) = self.copies.flags(user, m) {
                    by_user
                        .entry(user)
                        .or_default()
                        .push(json!([m.id.0, flag_names(bits, false)]));
                }
            }
        }
        let mut received: Vec<Value> = by_user
            .into_iter()
            .map(|(user, rows)| json!({"user_id": user.0, "messages": rows}))
            .collect();
        received.sort_by_key(|v| v["user_id"].as_u64());
        Value::Array(received)
    }
}

/// What Zulip shows in place of the empty topic (`realm_empty_topic_display_name`).
pub const EMPTY_TOPIC_DISPLAY_NAME: &str = "general chat";

/// A topic parameter: the display name of the empty topic means the empty topic.
pub fn topic_param(raw: &str) -> String {
    let trimmed = raw.trim();
    if trimmed == EMPTY_TOPIC_DISPLAY_NAME || trimmed == "(no topic)" {
        String::new()
    } else {
        trimmed.to_owned()
    }
}

/// Who receives a message: the active subscribers of its channel, or the participants of its
/// direct conversation; the sender always. The fold gives each a copy, and the real-time
/// translator sends each the `message` event.
pub fn recipients(
    channels: &Channels,
    users: &Users,
    recipient: &Address,
    sender: UserId,
) -> BTreeSet<UserId> {
    let mut out: BTreeSet<UserId> = match recipient {
        Address::Channel { channel_id, .. } => channels
            .get(*channel_id)
            .map(|c| {
                c.subscribers
                    .iter()
                    .copied()
                    .filter(|u| users.get(*u).is_some_and(|u| u.is_active))
                    .collect()
            })
            .unwrap_or_default(),
        Address::Direct { user_ids } => user_ids.iter().copied().collect(),
    };
    out.insert(sender);
    out
}

/// One message as the dump lists it.
fn message_row(m: &Message) -> Value {
    let mut row = json!({
        "id": m.id.0, "sender_id": m.sender_id.0,
        "recipient": serde_json::to_value(&m.recipient).unwrap_or(Value::Null),
        "content": &*m.content, "timestamp": m.timestamp, "client": &*m.client,
    });
    if !m.reactions().is_empty() {
        row["reactions"] = m
            .reactions()
            .iter()
            .map(|r| {
                json!([
                    r.user_id.0,
                    r.emoji_name,
                    r.emoji_code,
                    r.reaction_type.as_str()
                ])
            })
            .collect();
    }
    if !m.edits().is_empty() {
        row["edits"] = m
            .edits()
            .iter()
            .map(|e| {
                json!({
                    "user_id": e.user_id.0, "timestamp": e.timestamp,
                    "prev_content": e.prev_content.as_ref().map(|(raw, _)| &**raw),
                    "prev_topic": e.prev_topic, "prev_channel": e.prev_channel.map(|c| c.0),
                })
            })
            .collect();
    }
    if let Some(alerted) = m
        .extra
        .as_ref()
        .map(|e| &e.alerted)
        .filter(|a| !a.is_empty())
    {
        row["alerted"] = alerted.iter().map(|u| u.0).collect();
    }
    if !m.submessages().is_empty() {
        row["submessages"] = m
                .submessages()
                .iter()
                .map(|sm| json!({"id": sm.id, "sender_id": sm.sender_id.0, "msg_type": sm.msg_type, "content": sm.content}))
                .collect();
    }
    row
}

/// The messages area as the state's digest covers it: `{"messages": [rows], "copies": {...}}`,
/// serialized lazily.
pub struct DigestView<'a>(&'a Messages);

/// The message rows, serialized one at a time.
struct Rows<'a>(&'a Messages);

impl serde::Serialize for Rows<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.by_id.len()))?;
        for m in self.0.by_id.values() {
            if m.extra.is_none() {
                seq.serialize_element(&PlainRow(m))?;
            } else {
                seq.serialize_element(&message_row(m))?;
            }
        }
        seq.end()
    }
}

/// `message_row` of a message with no reactions, edits or submessages (most of them),
/// serialized straight from the message: the same bytes, without building a JSON value per
/// message (which made the digest, and so loading a snapshot, allocate for every message).
struct PlainRow<'a>(&'a Message);

impl serde::Serialize for PlainRow<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let m = self.0;
        let mut row = serializer.serialize_map(Some(6))?;
        row.serialize_entry("id", &m.id.0)?;
        row.serialize_entry("sender_id", &m.sender_id.0)?;
        row.serialize_entry("recipient", &m.recipient)?;
        row.serialize_entry("content", &*m.content)?;
        row.serialize_entry("timestamp", &m.timestamp)?;
        row.serialize_entry("client", &*m.client)?;
        row.end()
    }
}

impl serde::Serialize for DigestView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("messages", &Rows(self.0))?;
        map.serialize_entry("copies", &self.0.copies.compact_json())?;
        map.end()
    }
}

impl Messages {
    /// Moves the read marks of `user` forward in the places of `ids` (after marking them read).
    pub(super) fn advance_marks(&mut self, user: UserId, ids: &[MessageId]) {
        let mut seen: Vec<Place> = Vec::new();
        for id in ids {
            if let Some(m) = self.by_id.get(id) {
                let place = Place::of(m);
                if !seen.contains(&place) {
                    seen.push(place);
                }
            }
        }
        for place in seen {
            let mark = self.copies.read_mark(user, &place);
            let index = match &place {
                Place::Channel(c) => self.by_channel.get(c),
                Place::Direct(users) => self.by_conversation.get(&**users),
            };
            let Some(index) = index else { continue };
            let by_id = &self.by_id;
            let messages = index
                .range(MessageId(mark + 1)..)
                .filter_map(|id| by_id.get(id));
            self.copies.advance_mark(user, &place, messages);
        }
    }
}

#[cfg(test)]
mod row_tests {
    use super::*;
    use crate::commands::testing::{Given, OWNER};

    #[test]
    fn a_plain_row_serializes_as_the_dump_row() {
        let mut given = Given::org();
        let channel = given.channel("c", &[OWNER]);
        let sent = given.message(OWNER, channel, "Tëst \"topic\"", "a <b> & \"c\"\n");
        let message = given
            .state
            .messages
            .get(sent)
            .unwrap_or_else(|| panic!("the message was not stored"));
        let plain = serde_json::to_string(&PlainRow(message)).unwrap_or_default();
        let row = serde_json::to_string(&message_row(message)).unwrap_or_default();
        assert!(plain.contains("topic"), "{plain}");
        assert_eq!(plain, row);
    }
}

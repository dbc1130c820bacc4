//! Who holds a copy of each message (Zulip's `UserMessage` rows) and the flags of each copy,
//! kept so that memory grows with members × channels and with the exceptions people make,
//! never with messages × recipients.
//!
//! The rules, which give exactly the copies and flags Zulip's rows would hold:
//! - A channel message is held by its sender, by everyone whose *receiving span* of that
//!   channel covers its id (a span opens when a user becomes an active subscriber and closes
//!   when they stop being one: unsubscribed or deactivated; message ids only grow, so "was
//!   receiving when it was sent" is "the id falls in a span"), and by those who took a
//!   historical copy (a star or a reaction on a message of public history).
//! - A direct message is held by its participants.
//! - A message moved to another channel has its holders listed (moves are rare).
//! - A copy is read when the message is at or below the user's *read mark* of its place (its
//!   channel or conversation), or is the user's own, unless it is in the user's `flipped` set,
//!   which holds the exceptions either way. Marking messages read moves the mark forward over
//!   every copy that is read, so a user who reads in order keeps no exceptions.
//! - Starred and collapsed copies are listed per user; mention bits come from the message
//!   (its mentioned users and wildcards) except for copies taken after it was sent (historical
//!   and move-given copies), which have none until the next content edit, as in Zulip.

use super::channels::{Channel, Channels};
use super::message::Address;
use super::message::{flags, Message};
use super::users::Users;
use super::FastMap as HashMap;
use crate::events::Role;
use crate::ids::{ChannelId, MessageId, UserId};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A channel or a direct conversation: where a message is, for read marks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Place {
    Channel(ChannelId),
    Direct(Arc<[UserId]>),
}

impl Place {
    /// A stable text form: `c12` for a channel, `d1,5,9` for a conversation.
    fn key(&self) -> String {
        match self {
            Place::Channel(c) => format!("c{}", c.0),
            Place::Direct(users) => {
                let ids: Vec<String> = users.iter().map(|u| u.0.to_string()).collect();
                format!("d{}", ids.join(","))
            }
        }
    }

    pub fn of(message: &Message) -> Place {
        match &message.recipient {
            Address::Channel { channel_id, .. } => Place::Channel(*channel_id),
            Address::Direct { user_ids } => Place::Direct(user_ids.clone()),
        }
    }
}

/// Message ids `[from, to)` during which a user received a channel's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Span {
    from: u64,
    /// `u64::MAX` while the user still receives.
    to: u64,
}

/// One user's read marks and flag exceptions.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct UserFlags {
    /// Per place: copies at or below this id are read unless flipped.
    read_upto: HashMap<Place, u64>,
    /// Copies whose read bit is the opposite of what the mark says.
    flipped: BTreeSet<MessageId>,
    starred: BTreeSet<MessageId>,
    collapsed: BTreeSet<MessageId>,
    /// Copies taken after the message was sent, without its mention bits until it is edited.
    unmentioned: BTreeSet<MessageId>,
}

/// Every copy and its flags (see the module documentation for the rules).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Copies {
    /// Per user, per channel: the spans during which the user received it.
    receiving: HashMap<UserId, BTreeMap<ChannelId, Vec<Span>>>,
    /// Per channel: everyone who has a span of it (to find a message's holders).
    receivers: HashMap<ChannelId, BTreeSet<UserId>>,
    /// Holders of messages moved to another channel.
    moved: HashMap<MessageId, BTreeSet<UserId>>,
    /// Per user: the moved messages they hold.
    moved_held: HashMap<UserId, BTreeSet<MessageId>>,
    /// Per moved message: who lost their copy at its last move (they are told it is gone).
    lost_in_move: HashMap<MessageId, BTreeSet<UserId>>,
    /// Historical copies, per user and per message.
    extra: HashMap<UserId, BTreeSet<MessageId>>,
    extra_by_message: HashMap<MessageId, BTreeSet<UserId>>,
    flags: HashMap<UserId, UserFlags>,
}

impl Copies {
    fn covered(&self, user: UserId, channel: ChannelId, id: MessageId) -> bool {
        self.receiving
            .get(&user)
            .and_then(|channels| channels.get(&channel))
            .is_some_and(|spans| spans.iter().any(|s| s.from <= id.0 && id.0 < s.to))
    }

    /// Whether `user` holds a copy of `message`.
    pub fn holds(&self, user: UserId, message: &Message) -> bool {
        if let Some(holders) = self.moved.get(&message.id) {
            return holders.contains(&user);
        }
        let base = match &message.recipient {
            Address::Direct { user_ids } => user_ids.contains(&user),
            Address::Channel { channel_id, .. } => {
                message.sender_id == user || self.covered(user, *channel_id, message.id)
            }
        };
        base || self
            .extra
            .get(&user)
            .is_some_and(|s| s.contains(&message.id))
    }

    /// The holders of `message`, ascending.
    pub fn holders(&self, message: &Message) -> BTreeSet<UserId> {
        if let Some(holders) = self.moved.get(&message.id) {
            return holders.clone();
        }
        let mut out: BTreeSet<UserId> = match &message.recipient {
            Address::Direct { user_ids } => user_ids.iter().copied().collect(),
            Address::Channel { channel_id, .. } => {
                let mut out: BTreeSet<UserId> = self
                    .receivers
                    .get(channel_id)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|u| self.covered(*u, *channel_id, message.id))
                    .collect();
                out.insert(message.sender_id);
                out
            }
        };
        out.extend(self.extra_by_message.get(&message.id).into_iter().flatten());
        out
    }

    /// The user's read mark of a place (0: none yet).
    pub fn read_mark(&self, user: UserId, place: &Place) -> u64 {
        self.flags
            .get(&user)
            .and_then(|f| f.read_upto.get(place))
            .copied()
            .unwrap_or(0)
    }

    /// What the read mark alone says of a copy.
    fn read_by_default(&self, user: UserId, message: &Message) -> bool {
        message.sender_id == user || message.id.0 <= self.read_mark(user, &Place::of(message))
    }

    /// Whether the user's copy of `message` is read (the copy must exist).
    fn is_read(&self, user: UserId, message: &Message) -> bool {
        let flipped = self
            .flags
            .get(&user)
            .is_some_and(|f| f.flipped.contains(&message.id));
        self.read_by_default(user, message) != flipped
    }

    /// The flags of `user`'s copy of `message`, if they hold one.
    pub fn flags(&self, user: UserId, message: &Message) -> Option<u8> {
        if !self.holds(user, message) {
            return None;
        }
        let own = self.flags.get(&user);
        let mut bits = 0;
        if self.is_read(user, message) {
            bits |= flags::READ;
        }
        if own.is_some_and(|f| f.starred.contains(&message.id)) {
            bits |= flags::STARRED;
        }
        if own.is_some_and(|f| f.collapsed.contains(&message.id)) {
            bits |= flags::COLLAPSED;
        }
        if !own.is_some_and(|f| f.unmentioned.contains(&message.id)) {
            bits |= message.mention_bits(user);
        }
        Some(bits)
    }

    /// One user's copies in one channel, for walking many of its messages (see
    /// [`ChannelCopies`]).
    pub fn in_channel(&self, user: UserId, channel: ChannelId) -> ChannelCopies<'_> {
        ChannelCopies {
            copies: self,
            user,
            channel,
            spans: self
                .receiving
                .get(&user)
                .and_then(|channels| channels.get(&channel))
                .map_or(&[][..], Vec::as_slice),
            mark: self.read_mark(user, &Place::Channel(channel)),
            own: self.flags.get(&user),
            extra: self.extra.get(&user),
        }
    }

    /// Sets the read bit of an existing copy.
    pub fn set_read(&mut self, user: UserId, message: &Message, read: bool) {
        let by_default = self.read_by_default(user, message);
        let own = self.flags.entry(user).or_default();
        if read == by_default {
            own.flipped.remove(&message.id);
        } else {
            own.flipped.insert(message.id);
        }
    }

    /// Makes every copy `user` holds in `place` up to `upto` read: the mark moves there (never
    /// back), and `cleared` (the user's exceptions in that place at or below it) are dropped.
    pub fn read_through(&mut self, user: UserId, place: &Place, upto: u64, cleared: &[MessageId]) {
        let own = self.flags.entry(user).or_default();
        for id in cleared {
            own.flipped.remove(id);
        }
        let mark = own.read_upto.entry(place.clone()).or_insert(0);
        *mark = (*mark).max(upto);
    }

    /// Sets the starred or collapsed bit of an existing copy.
    pub fn set_listed(&mut self, user: UserId, id: MessageId, bit: u8, on: bool) {
        let own = self.flags.entry(user).or_default();
        let set = if bit == flags::STARRED {
            &mut own.starred
        } else {
            &mut own.collapsed
        };
        if on {
            set.insert(id);
        } else {
            set.remove(&id);
        }
    }

    /// Gives `user` a historical copy of `message` (read, without mention bits), as a star or
    /// a reaction on a message they did not receive does.
    pub fn take_historical(&mut self, user: UserId, message: &Message) {
        if self.holds(user, message) {
            return;
        }
        if let Some(holders) = self.moved.get_mut(&message.id) {
            holders.insert(user);
            self.moved_held.entry(user).or_default().insert(message.id);
        } else {
            self.extra.entry(user).or_default().insert(message.id);
            self.extra_by_message
                .entry(message.id)
                .or_default()
                .insert(user);
        }
        self.set_read(user, message, true);
        self.flags
            .entry(user)
            .or_default()
            .unmentioned
            .insert(message.id);
    }

    /// Moves the user's read mark of `place` forward over every copy that is read, walking
    /// `ids` (the place's messages above the mark, ascending).
    pub fn advance_mark<'a>(
        &mut self,
        user: UserId,
        place: &Place,
        ids: impl Iterator<Item = &'a Message>,
    ) {
        let mark = self.read_mark(user, place);
        let mut passed = mark;
        let mut cleared = Vec::new();
        for message in ids {
            if message.id.0 <= mark {
                continue;
            }
            if self.holds(user, message) {
                if !self.is_read(user, message) {
                    break;
                }
                if message.sender_id != user {
                    // Read above the mark was an exception; below it, it is the rule.
                    cleared.push(message.id);
                }
            }
            passed = message.id.0;
        }
        if passed == mark {
            return;
        }
        let own = self.flags.entry(user).or_default();
        for id in cleared {
            own.flipped.remove(&id);
        }
        own.read_upto.insert(place.clone(), passed);
    }

    /// Opens or closes receiving spans so that exactly the active subscribers of `channel`
    /// receive its next message (`next` is that message's id).
    pub fn sync_channel(&mut self, channel: &Channel, users: &Users, next: u64) {
        let mut candidates: BTreeSet<UserId> = channel.subscribers.clone();
        candidates.extend(self.receivers.get(&channel.id).into_iter().flatten());
        for user in candidates {
            let should =
                channel.subscribers.contains(&user) && users.get(user).is_some_and(|u| u.is_active);
            self.set_receiving(user, channel.id, should, next);
        }
    }

    /// The same for every channel `user` is or was receiving or subscribed to.
    pub fn sync_user(&mut self, user: UserId, channels: &Channels, users: &Users, next: u64) {
        let mut ids: BTreeSet<ChannelId> =
            channels.subscriptions_of(user).map(|(c, _)| c).collect();
        ids.extend(self.receiving.get(&user).into_iter().flat_map(|m| m.keys()));
        let active = users.get(user).is_some_and(|u| u.is_active);
        for channel_id in ids {
            let should = active
                && channels
                    .get(channel_id)
                    .is_some_and(|c| c.subscribers.contains(&user));
            self.set_receiving(user, channel_id, should, next);
        }
    }

    fn set_receiving(&mut self, user: UserId, channel: ChannelId, should: bool, next: u64) {
        let spans = self
            .receiving
            .entry(user)
            .or_default()
            .entry(channel)
            .or_default();
        let open = spans.last().is_some_and(|s| s.to == u64::MAX);
        if should && !open {
            spans.push(Span {
                from: next,
                to: u64::MAX,
            });
            self.receivers.entry(channel).or_default().insert(user);
        } else if !should && open {
            if let Some(last) = spans.last_mut() {
                last.to = next;
                if last.from >= last.to {
                    spans.pop();
                }
            }
        }
        // A user who never received anything of the channel keeps no entry.
        if spans.is_empty() {
            if let Some(channels) = self.receiving.get_mut(&user) {
                channels.remove(&channel);
                if channels.is_empty() {
                    self.receiving.remove(&user);
                }
            }
            if let Some(set) = self.receivers.get_mut(&channel) {
                set.remove(&user);
            }
        }
    }

    /// Clears everything `user` kept about their copy of `id` (the copy is gone).
    fn forget(&mut self, user: UserId, id: MessageId) {
        if let Some(own) = self.flags.get_mut(&user) {
            own.flipped.remove(&id);
            own.starred.remove(&id);
            own.collapsed.remove(&id);
            own.unmentioned.remove(&id);
        }
        if let Some(set) = self.extra.get_mut(&user) {
            set.remove(&id);
        }
        if let Some(set) = self.moved_held.get_mut(&user) {
            set.remove(&id);
        }
    }

    /// A message is deleted: its holders' records of it go.
    pub fn remove(&mut self, message: &Message) {
        for user in self.holders(message) {
            self.forget(user, message.id);
        }
        self.moved.remove(&message.id);
        self.lost_in_move.remove(&message.id);
        self.extra_by_message.remove(&message.id);
    }

    /// A content edit: every copy takes the message's mention bits again.
    pub fn mentions_follow(&mut self, id: MessageId) {
        let users: Vec<UserId> = self
            .extra_by_message
            .get(&id)
            .into_iter()
            .flatten()
            .chain(self.moved.get(&id).into_iter().flatten())
            .copied()
            .collect();
        for user in users {
            if let Some(own) = self.flags.get_mut(&user) {
                own.unmentioned.remove(&id);
            }
        }
    }

    /// Every copy's `(read, holder)` before a move, for `moved_to_channel`.
    pub fn before_move(&self, message: &Message) -> Vec<(UserId, bool)> {
        self.holders(message)
            .into_iter()
            .map(|u| (u, self.is_read(u, message)))
            .collect()
    }

    /// After `message` moved to another channel (already updated): those who cannot read the
    /// new channel lose their copy, its active subscribers get a read one when its history is
    /// public, and everyone else keeps theirs with the same flags.
    pub fn moved_to_channel(
        &mut self,
        message: &Message,
        before: Vec<(UserId, bool)>,
        channel: &Channel,
        users: &Users,
    ) {
        let id = message.id;
        let mut holders = BTreeSet::new();
        let mut kept = Vec::new();
        let mut lost = BTreeSet::new();
        for (user, read) in before {
            let keeps = channel.subscribers.contains(&user)
                || (!channel.invite_only && users.get(user).is_some_and(|u| u.role != Role::Guest));
            if keeps {
                holders.insert(user);
                kept.push((user, read));
                if let Some(set) = self.extra.get_mut(&user) {
                    set.remove(&id);
                }
            } else {
                // The copy goes, and its flags with it.
                self.forget(user, id);
                lost.insert(user);
            }
        }
        let public_history = !channel.invite_only || channel.history_public_to_subscribers;
        let mut given = Vec::new();
        if public_history {
            for user in &channel.subscribers {
                if users.get(*user).is_some_and(|u| u.is_active) && holders.insert(*user) {
                    given.push(*user);
                }
            }
        }
        self.extra_by_message.remove(&id);
        for user in &holders {
            self.moved_held.entry(*user).or_default().insert(id);
        }
        self.moved.insert(id, holders);
        self.lost_in_move.insert(id, lost);
        // The read bit is kept; the mark it is measured against is now the new channel's.
        for (user, read) in kept {
            self.set_read(user, message, read);
        }
        for user in given {
            self.set_read(user, message, true);
            self.flags.entry(user).or_default().unmentioned.insert(id);
        }
    }

    /// Who lost their copy of `id` when it was last moved between channels.
    pub fn lost_in_last_move(&self, id: MessageId) -> impl Iterator<Item = UserId> + '_ {
        self.lost_in_move.get(&id).into_iter().flatten().copied()
    }

    /// The user's read-bit exceptions.
    pub fn flipped_of(&self, user: UserId) -> impl Iterator<Item = MessageId> + '_ {
        self.flags
            .get(&user)
            .into_iter()
            .flat_map(|f| f.flipped.iter().copied())
    }

    /// Starred ids of `user`, ascending.
    pub fn starred_of(&self, user: UserId) -> impl Iterator<Item = MessageId> + '_ {
        self.flags
            .get(&user)
            .into_iter()
            .flat_map(|f| f.starred.iter().copied())
    }

    /// The channels `user` received, and the historical and moved copies they hold: with
    /// their conversations, where every copy of theirs is.
    pub fn sources_of(&self, user: UserId) -> (Vec<ChannelId>, Vec<MessageId>) {
        let channels = self
            .receiving
            .get(&user)
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        let mut loose: Vec<MessageId> = self
            .extra
            .get(&user)
            .into_iter()
            .flatten()
            .chain(self.moved_held.get(&user).into_iter().flatten())
            .copied()
            .collect();
        loose.sort();
        loose.dedup();
        (channels, loose)
    }
}

/// One user's copies in one channel, with every lookup that does not depend on the message
/// done once: `flags` is `Copies::flags` for the channel's messages at a fraction of the cost,
/// which is what finding the unread messages of many channels at `/register` needs.
pub struct ChannelCopies<'a> {
    copies: &'a Copies,
    user: UserId,
    channel: ChannelId,
    spans: &'a [Span],
    mark: u64,
    own: Option<&'a UserFlags>,
    extra: Option<&'a BTreeSet<MessageId>>,
}

impl ChannelCopies<'_> {
    /// The read mark of the channel.
    pub fn mark(&self) -> u64 {
        self.mark
    }

    /// Exactly `Copies::flags(user, message)`.
    pub fn flags(&self, message: &Message) -> Option<u8> {
        let moved = !self.copies.moved.is_empty() && self.copies.moved.contains_key(&message.id);
        if moved || message.channel() != Some(self.channel) {
            return self.copies.flags(self.user, message);
        }
        let id = message.id;
        let held = message.sender_id == self.user
            || self.spans.iter().any(|s| s.from <= id.0 && id.0 < s.to)
            || self.extra.is_some_and(|e| e.contains(&id));
        if !held {
            return None;
        }
        let read_by_default = message.sender_id == self.user || id.0 <= self.mark;
        let mut bits = 0;
        match self.own {
            None => {
                if read_by_default {
                    bits |= flags::READ;
                }
                bits |= message.mention_bits(self.user);
            }
            Some(own) => {
                if read_by_default != own.flipped.contains(&id) {
                    bits |= flags::READ;
                }
                if own.starred.contains(&id) {
                    bits |= flags::STARRED;
                }
                if own.collapsed.contains(&id) {
                    bits |= flags::COLLAPSED;
                }
                if !own.unmentioned.contains(&id) {
                    bits |= message.mention_bits(self.user);
                }
            }
        }
        Some(bits)
    }
}

impl Copies {
    /// The copies in their compact form, ordered, for the state's digest: the same facts as
    /// the listing of every copy in the dump, in memory that does not grow with messages ×
    /// recipients.
    pub fn compact_json(&self) -> Value {
        let ids = |set: &BTreeSet<MessageId>| set.iter().map(|id| id.0).collect::<Vec<_>>();
        let users = |set: &BTreeSet<UserId>| set.iter().map(|u| u.0).collect::<Vec<_>>();
        let receiving: BTreeMap<u64, BTreeMap<u64, Vec<(u64, u64)>>> = self
            .receiving
            .iter()
            .map(|(user, channels)| {
                let channels = channels
                    .iter()
                    .map(|(c, spans)| (c.0, spans.iter().map(|s| (s.from, s.to)).collect()))
                    .collect();
                (user.0, channels)
            })
            .collect();
        let sorted_users = |map: &HashMap<MessageId, BTreeSet<UserId>>| {
            map.iter()
                .map(|(id, set)| (id.0, users(set)))
                .collect::<BTreeMap<u64, Vec<u64>>>()
        };
        let flags: BTreeMap<u64, Value> = self
            .flags
            .iter()
            .map(|(user, f)| {
                let marks: BTreeMap<String, u64> = f
                    .read_upto
                    .iter()
                    .map(|(place, mark)| (place.key(), *mark))
                    .collect();
                let value = json!({
                    "read_upto": marks, "flipped": ids(&f.flipped), "starred": ids(&f.starred),
                    "collapsed": ids(&f.collapsed), "unmentioned": ids(&f.unmentioned),
                });
                (user.0, value)
            })
            .collect();
        let extra: BTreeMap<u64, Vec<u64>> =
            self.extra.iter().map(|(u, set)| (u.0, ids(set))).collect();
        json!({
            "receiving": receiving,
            "moved": sorted_users(&self.moved),
            "lost_in_move": sorted_users(&self.lost_in_move),
            "historical": extra,
            "flags": flags,
        })
    }
}

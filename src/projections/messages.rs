//! Messages, the per-user copies with their flags, and the indexes reads need (by channel, by
//! channel and topic, by direct conversation), so that no read scans every message.

use super::channels::Channels;
use super::user_topics::topic_key;
use super::users::Users;
use crate::events::{Envelope, Event, MessageFlag, Recipient};
use crate::ids::{ChannelId, MessageId, UserId};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Per-user flag bits.
pub mod flags {
    pub const READ: u8 = 1;
    pub const STARRED: u8 = 2;
    pub const COLLAPSED: u8 = 4;
    pub const MENTIONED: u8 = 8;
    pub const STREAM_WILDCARD: u8 = 16;
    pub const TOPIC_WILDCARD: u8 = 32;
}

/// The API names of a flag set, in Zulip's order.
pub fn flag_names(bits: u8, historical: bool) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (bit, name) in [
        (flags::READ, "read"),
        (flags::STARRED, "starred"),
        (flags::COLLAPSED, "collapsed"),
        (flags::MENTIONED, "mentioned"),
        (flags::STREAM_WILDCARD, "stream_wildcard_mentioned"),
        (flags::TOPIC_WILDCARD, "topic_wildcard_mentioned"),
    ] {
        if bits & bit != 0 {
            out.push(name);
        }
    }
    if bits & (flags::STREAM_WILDCARD | flags::TOPIC_WILDCARD) != 0 {
        out.push("wildcard_mentioned");
    }
    if historical {
        out.push("historical");
    }
    out
}

pub fn flag_bit(flag: MessageFlag) -> u8 {
    match flag {
        MessageFlag::Read => flags::READ,
        MessageFlag::Starred => flags::STARRED,
        MessageFlag::Collapsed => flags::COLLAPSED,
    }
}

/// One message. Bodies are shared (`Arc`) between the engine's two copies of the state.
#[derive(Debug, Clone)]
pub struct Message {
    pub id: MessageId,
    pub sender_id: UserId,
    pub recipient: Recipient,
    pub content: Arc<str>,
    pub rendered_content: Arc<str>,
    pub client: Arc<str>,
    pub timestamp: i64,
    pub is_me_message: bool,
}

impl Message {
    pub fn channel(&self) -> Option<ChannelId> {
        match &self.recipient {
            Recipient::Channel { channel_id, .. } => Some(*channel_id),
            Recipient::Direct { .. } => None,
        }
    }

    pub fn topic(&self) -> &str {
        match &self.recipient {
            Recipient::Channel { topic, .. } => topic,
            Recipient::Direct { .. } => "",
        }
    }
}

/// All messages and their indexes.
#[derive(Debug, Clone, Default)]
pub struct Messages {
    by_id: BTreeMap<MessageId, Message>,
    by_channel: HashMap<ChannelId, BTreeSet<MessageId>>,
    by_topic: HashMap<(ChannelId, String), BTreeSet<MessageId>>,
    by_conversation: HashMap<Vec<UserId>, BTreeSet<MessageId>>,
    /// Direct-message groups of three or more, numbered in order of their first message.
    group_ids: HashMap<Vec<UserId>, u64>,
    /// Each user's copies (Zulip's UserMessage rows) with their flags.
    received: HashMap<UserId, BTreeMap<MessageId, u8>>,
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

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// A user's copies with their flags.
    pub fn received(&self, user: UserId) -> Option<&BTreeMap<MessageId, u8>> {
        self.received.get(&user)
    }

    /// The user's flags on a message, if they received it.
    pub fn flags(&self, user: UserId, message: MessageId) -> Option<u8> {
        self.received
            .get(&user)
            .and_then(|m| m.get(&message))
            .copied()
    }

    pub fn in_channel(&self, channel: ChannelId) -> Option<&BTreeSet<MessageId>> {
        self.by_channel.get(&channel)
    }

    pub fn in_topic(&self, channel: ChannelId, topic: &str) -> Option<&BTreeSet<MessageId>> {
        self.by_topic.get(&(channel, topic_key(topic)))
    }

    pub fn in_conversation(&self, participants: &[UserId]) -> Option<&BTreeSet<MessageId>> {
        self.by_conversation.get(participants)
    }

    /// Zulip's `recipient_id` for a message: the channel's, a user's personal one for 1:1
    /// conversations, or the group's.
    pub fn recipient_id(&self, message: &Message) -> u64 {
        match &message.recipient {
            Recipient::Channel { channel_id, .. } => channel_id.0,
            Recipient::Direct { user_ids } if user_ids.len() <= 2 => {
                // The personal recipient of the other participant (or oneself).
                let other = user_ids
                    .iter()
                    .copied()
                    .find(|u| *u != message.sender_id)
                    .unwrap_or(message.sender_id);
                1_000_000 + other.0
            }
            Recipient::Direct { user_ids } => {
                2_000_000 + self.group_ids.get(user_ids).copied().unwrap_or(0)
            }
        }
    }

    /// Topics of a channel with their newest message id, newest first.
    pub fn topics(&self, channel: ChannelId) -> Vec<(String, MessageId)> {
        let mut topics: HashMap<String, (String, MessageId)> = HashMap::new();
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
            Event::MessageSent {
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
            } => {
                let message = Message {
                    id: *message_id,
                    sender_id: *sender_id,
                    recipient: recipient.clone(),
                    content: content.clone(),
                    rendered_content: rendered_content.clone(),
                    client: client.clone(),
                    timestamp: env.at / 1000,
                    is_me_message: *is_me_message,
                };
                // Who gets a copy: decided by the state at this point of the log.
                let mut copies: BTreeSet<UserId> = match recipient {
                    Recipient::Channel { channel_id, topic } => {
                        self.by_channel
                            .entry(*channel_id)
                            .or_default()
                            .insert(*message_id);
                        self.by_topic
                            .entry((*channel_id, topic_key(topic)))
                            .or_default()
                            .insert(*message_id);
                        channels
                            .get(*channel_id)
                            .map(|c| {
                                c.subscribers
                                    .iter()
                                    .copied()
                                    .filter(|u| users.get(*u).is_some_and(|u| u.is_active))
                                    .collect()
                            })
                            .unwrap_or_default()
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
                        user_ids.iter().copied().collect()
                    }
                };
                copies.insert(*sender_id);
                let wildcard = if *stream_wildcard {
                    flags::STREAM_WILDCARD
                } else {
                    0
                } | if *topic_wildcard {
                    flags::TOPIC_WILDCARD
                } else {
                    0
                };
                for user in copies {
                    let mut bits = wildcard;
                    if user == *sender_id {
                        bits |= flags::READ;
                    }
                    if mentioned.contains(&user) {
                        bits |= flags::MENTIONED;
                    }
                    self.received
                        .entry(user)
                        .or_default()
                        .insert(*message_id, bits);
                }
                self.by_id.insert(*message_id, message);
            }
            Event::MessageFlagsChanged {
                user_id,
                flag,
                add,
                message_ids,
            } => {
                let bit = flag_bit(*flag);
                let copies = self.received.entry(*user_id).or_default();
                for id in message_ids {
                    // Starring a message one never received (public history) creates the copy,
                    // as Zulip's "historical" rows do.
                    let entry = copies.entry(*id).or_insert(flags::READ);
                    if *add {
                        *entry |= bit;
                    } else {
                        *entry &= !bit;
                    }
                }
            }
            Event::RealmCreated { .. }
            | Event::UserCreated { .. }
            | Event::ApiKeyRegenerated { .. }
            | Event::UserDeactivated { .. }
            | Event::UserReactivated { .. }
            | Event::UserChanged { .. }
            | Event::UserGroupCreated { .. }
            | Event::UserGroupMembersChanged { .. }
            | Event::UserGroupSubgroupsChanged { .. }
            | Event::UserGroupChanged { .. }
            | Event::ChannelCreated { .. }
            | Event::ChannelChanged { .. }
            | Event::Subscribed { .. }
            | Event::Unsubscribed { .. }
            | Event::SubscriptionPropertyChanged { .. }
            | Event::ChannelFolderCreated { .. }
            | Event::ChannelFolderChanged { .. }
            | Event::ChannelFoldersReordered { .. }
            | Event::TopicVisibilitySet { .. }
            | Event::TypingStarted { .. }
            | Event::TypingStopped { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        let messages: Vec<Value> = self
            .by_id
            .values()
            .map(|m| {
                json!({
                    "id": m.id.0, "sender_id": m.sender_id.0,
                    "recipient": serde_json::to_value(&m.recipient).unwrap_or(Value::Null),
                    "content": &*m.content, "timestamp": m.timestamp, "client": &*m.client,
                })
            })
            .collect();
        let mut received: Vec<Value> = self
            .received
            .iter()
            .map(|(user, copies)| {
                let rows: Vec<Value> = copies
                    .iter()
                    .map(|(id, bits)| json!([id.0, flag_names(*bits, false)]))
                    .collect();
                json!({"user_id": user.0, "messages": rows})
            })
            .collect();
        received.sort_by_key(|v| v["user_id"].as_u64());
        json!({"messages": messages, "user_messages": received})
    }
}

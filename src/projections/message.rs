//! One message as the projections keep it, its per-copy flag bits, and what it gathers after it
//! is sent (reactions, edits, submessages).

use crate::events::{MessageFlag, ReactionType, Recipient};
use crate::ids::{ChannelId, MessageId, UserId};
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Message {
    pub id: MessageId,
    pub sender_id: UserId,
    pub recipient: Recipient,
    pub content: Arc<str>,
    pub rendered_content: Arc<str>,
    pub client: Arc<str>,
    pub timestamp: i64,
    pub is_me_message: bool,
    /// Users mentioned by name (their copies carry `MENTIONED`); usually none.
    pub mentioned: Box<[UserId]>,
    /// `STREAM_WILDCARD` and `TOPIC_WILDCARD` bits for every copy.
    pub wildcards: u8,
    /// Reactions and edits; most messages have neither, so they cost one pointer.
    pub extra: Option<Box<MessageExtra>>,
}

/// What a message gathers after it is sent.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct MessageExtra {
    /// In the order they were added.
    pub reactions: Vec<Reaction>,
    /// Oldest first.
    pub edits: Vec<EditRecord>,
    /// Seconds; the last content edit or topic/channel change.
    pub last_edit_timestamp: Option<i64>,
    /// Seconds; the last topic/channel change (resolving a topic does not count).
    pub last_moved_timestamp: Option<i64>,
    /// Widget data attached to the message, oldest first.
    pub submessages: Vec<Submessage>,
}

/// One submessage (Zulip's widget data: a poll vote, a to-do item).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Submessage {
    pub id: u64,
    pub sender_id: UserId,
    pub msg_type: String,
    /// JSON text.
    pub content: String,
}

/// One reaction on a message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reaction {
    pub user_id: UserId,
    pub emoji_name: String,
    pub emoji_code: String,
    pub reaction_type: ReactionType,
}

/// One entry of a message's edit history: what it was before the edit.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EditRecord {
    pub user_id: UserId,
    /// Seconds.
    pub timestamp: i64,
    /// Set when the content changed.
    pub prev_content: Option<(Arc<str>, Arc<str>)>,
    /// Set when the topic changed.
    pub prev_topic: Option<String>,
    /// Set when the channel changed.
    pub prev_channel: Option<ChannelId>,
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

    pub fn reactions(&self) -> &[Reaction] {
        self.extra.as_deref().map_or(&[], |e| &e.reactions)
    }

    pub fn edits(&self) -> &[EditRecord] {
        self.extra.as_deref().map_or(&[], |e| &e.edits)
    }

    pub fn submessages(&self) -> &[Submessage] {
        self.extra.as_deref().map_or(&[], |e| &e.submessages)
    }

    pub(super) fn extra_mut(&mut self) -> &mut MessageExtra {
        self.extra.get_or_insert_with(Default::default)
    }
}

//! The messages themselves, by id, in chunks of consecutive ids: ids are handed out in order
//! and rarely leave gaps, so a chunk holds its messages side by side with no per-message node
//! or pointer, where an ordered map kept every message in a half-full tree node.

use super::message::Message;
use crate::ids::MessageId;
use std::collections::BTreeMap;

/// Messages per chunk.
const CHUNK: u64 = 64;

/// Messages by id.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct MessageStore {
    /// Chunk number (id / 64) → its 64 slots, `None` where no message has that id (never sent
    /// or deleted).
    chunks: BTreeMap<u64, Vec<Option<Message>>>,
    len: usize,
}

fn slot(id: MessageId) -> (u64, usize) {
    (id.0 / CHUNK, (id.0 % CHUNK) as usize)
}

impl MessageStore {
    pub fn get(&self, id: &MessageId) -> Option<&Message> {
        let (chunk, index) = slot(*id);
        self.chunks.get(&chunk)?.get(index)?.as_ref()
    }

    pub fn get_mut(&mut self, id: &MessageId) -> Option<&mut Message> {
        let (chunk, index) = slot(*id);
        self.chunks.get_mut(&chunk)?.get_mut(index)?.as_mut()
    }

    /// Stores a message under its id, replacing any there.
    pub fn insert(&mut self, id: MessageId, message: Message) {
        let (chunk, index) = slot(id);
        let slots = self
            .chunks
            .entry(chunk)
            .or_insert_with(|| (0..CHUNK).map(|_| None).collect());
        if slots[index].replace(message).is_none() {
            self.len += 1;
        }
    }

    pub fn remove(&mut self, id: &MessageId) -> Option<Message> {
        let (chunk, index) = slot(*id);
        let slots = self.chunks.get_mut(&chunk)?;
        let removed = slots.get_mut(index)?.take()?;
        self.len -= 1;
        if slots.iter().all(Option::is_none) {
            self.chunks.remove(&chunk);
        }
        Some(removed)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every message, in id order (from either end).
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Message> {
        self.chunks
            .values()
            .flat_map(|slots| slots.iter().flatten())
    }

    /// Every id, in order (from either end).
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &MessageId> {
        self.values().map(|m| &m.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_keep_order_across_gaps_and_removals() {
        let mut store = MessageStore::default();
        let message = |id: u64| {
            let mut given = crate::commands::testing::Given::org();
            let channel = given.channel("c", &[crate::commands::testing::OWNER]);
            let sent = given.message(crate::commands::testing::OWNER, channel, "t", "x");
            let mut m = given.state.messages.get(sent).cloned().unwrap_or_else(|| {
                panic!("the message was not stored");
            });
            m.id = MessageId(id);
            m
        };
        for id in [1, 63, 64, 65, 1000, 200] {
            store.insert(MessageId(id), message(id));
        }
        let ids: Vec<u64> = store.keys().map(|id| id.0).collect();
        assert_eq!(ids, vec![1, 63, 64, 65, 200, 1000]);
        assert_eq!(store.keys().next_back(), Some(&MessageId(1000)));
        assert_eq!(store.len(), 6);
        assert!(store.remove(&MessageId(64)).is_some());
        assert!(store.remove(&MessageId(64)).is_none());
        assert!(store.get(&MessageId(64)).is_none());
        assert_eq!(store.get(&MessageId(65)).map(|m| m.id), Some(MessageId(65)));
        assert!(store.remove(&MessageId(1000)).is_some());
        assert_eq!(store.len(), 4);
        let rev: Vec<u64> = store.values().rev().map(|m| m.id.0).collect();
        assert_eq!(rev, vec![200, 65, 63, 1]);
    }
}

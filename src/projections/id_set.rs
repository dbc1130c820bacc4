//! A set of message ids kept as one sorted vector: 8 bytes an id where an ordered tree set
//! spends about twice that in half-full nodes. New messages have the highest ids, so adding
//! one is a push; the rare removals and out-of-order adds (moves, deletions) shift the tail.

use crate::ids::MessageId;
use std::ops::RangeBounds;

/// Message ids, ascending, without repeats. Serialized as a plain sequence, as an ordered set
/// of ids was.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct IdSet(Vec<MessageId>);

/// The empty set, for lookups that find none.
pub static EMPTY: IdSet = IdSet(Vec::new());

impl IdSet {
    /// Adds `id`; false if it was there.
    pub fn insert(&mut self, id: MessageId) -> bool {
        if self.0.last().is_none_or(|last| *last < id) {
            self.0.push(id);
            return true;
        }
        match self.0.binary_search(&id) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, id);
                true
            }
        }
    }

    /// Removes `id`; false if it was not there.
    pub fn remove(&mut self, id: &MessageId) -> bool {
        match self.0.binary_search(id) {
            Ok(at) => {
                self.0.remove(at);
                if self.0.capacity() > 2 * self.0.len() + 16 {
                    self.0.shrink_to_fit();
                }
                true
            }
            Err(_) => false,
        }
    }

    pub fn contains(&self, id: &MessageId) -> bool {
        self.0.binary_search(id).is_ok()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn first(&self) -> Option<&MessageId> {
        self.0.first()
    }

    pub fn last(&self) -> Option<&MessageId> {
        self.0.last()
    }

    /// The ids, ascending (from either end).
    pub fn iter(&self) -> std::slice::Iter<'_, MessageId> {
        self.0.iter()
    }

    /// The ids within `range`, ascending (from either end).
    pub fn range(&self, range: impl RangeBounds<MessageId>) -> std::slice::Iter<'_, MessageId> {
        use std::ops::Bound;
        let start = match range.start_bound() {
            Bound::Included(id) => self.0.partition_point(|x| x < id),
            Bound::Excluded(id) => self.0.partition_point(|x| x <= id),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(id) => self.0.partition_point(|x| x <= id),
            Bound::Excluded(id) => self.0.partition_point(|x| x < id),
            Bound::Unbounded => self.0.len(),
        };
        self.0.get(start..end.max(start)).unwrap_or_default().iter()
    }

    /// The ids as a sorted slice.
    pub fn as_slice(&self) -> &[MessageId] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a IdSet {
    type Item = &'a MessageId;
    type IntoIter = std::slice::Iter<'a, MessageId>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl FromIterator<MessageId> for IdSet {
    fn from_iter<I: IntoIterator<Item = MessageId>>(ids: I) -> IdSet {
        let mut all: Vec<MessageId> = ids.into_iter().collect();
        all.sort_unstable();
        all.dedup();
        IdSet(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn behaves_as_an_ordered_set() {
        let mut set = IdSet::default();
        let mut model = BTreeSet::new();
        // Mostly ascending, with repeats, gaps and out-of-order adds and removals.
        let mut seed = 7u64;
        for step in 0..2000u64 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let id = MessageId(if seed % 5 == 0 {
                (seed >> 40) % (step + 1)
            } else {
                step
            });
            if seed % 7 == 0 {
                assert_eq!(set.remove(&id), model.remove(&id));
            } else {
                assert_eq!(set.insert(id), model.insert(id));
            }
        }
        assert_eq!(set.len(), model.len());
        assert!(set.iter().eq(model.iter()));
        assert_eq!(set.last(), model.last());
        assert_eq!(set.first(), model.first());
        for (lo, hi) in [(0, 0), (3, 900), (500, 2500), (1999, 1999)] {
            let (lo, hi) = (MessageId(lo), MessageId(hi));
            assert!(set.range(lo..hi).eq(model.range(lo..hi)));
            assert!(set.range(lo..=hi).rev().eq(model.range(lo..=hi).rev()));
            assert!(set.range(..hi).eq(model.range(..hi)));
            assert!(set.range(lo..).eq(model.range(lo..)));
            assert_eq!(set.contains(&lo), model.contains(&lo));
        }
        assert!(set.range(MessageId(9)..MessageId(3)).next().is_none());
        let encoded = rmp_serde::to_vec(&set).unwrap_or_default();
        assert_eq!(encoded, rmp_serde::to_vec(&model).unwrap_or_default());
    }
}

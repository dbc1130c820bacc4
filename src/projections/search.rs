//! The word index behind `search:` narrows: every word of a message's topic and content, with
//! the ids of the messages that contain it, ascending.
//!
//! Words are runs of letters and digits, lowercased (Unicode-aware), so `Deploy, deploy!` and
//! `deploy` are one word. A search matches messages that contain every word of the query, as
//! whole words: the shape of Zulip's full-text search, without its English stemming. Words are
//! keyed by a hash and posting lists are plain sorted vectors (8 bytes a posting; a word used
//! once costs no allocation): new messages have the highest ids, so sending appends; edits,
//! moves and deletions, which are rare, pay a binary search and a shift.

use crate::ids::MessageId;
use std::collections::{BTreeSet, HashMap};

/// The distinct words of a text, lowercased, in first-seen order.
pub fn words(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

fn message_words(topic: &str, content: &str) -> BTreeSet<String> {
    let mut all: BTreeSet<String> = words(topic).into_iter().collect();
    all.extend(words(content));
    all
}

/// The ids holding one word, ascending. Most words of a large organization occur once (numbers,
/// names, typos), so a single id is kept inline rather than in a vector of its own.
#[derive(Debug, Clone)]
enum Postings {
    One(MessageId),
    Many(Vec<MessageId>),
}

impl Postings {
    fn as_slice(&self) -> &[MessageId] {
        match self {
            Postings::One(id) => std::slice::from_ref(id),
            Postings::Many(ids) => ids,
        }
    }

    fn insert(&mut self, id: MessageId) {
        match self {
            Postings::One(existing) if *existing == id => {}
            Postings::One(existing) => {
                let mut ids = vec![*existing, id];
                ids.sort_unstable();
                *self = Postings::Many(ids);
            }
            // New messages have the highest ids: appending is the common case.
            Postings::Many(ids) if ids.last().is_none_or(|last| *last < id) => ids.push(id),
            Postings::Many(ids) => {
                if let Err(at) = ids.binary_search(&id) {
                    ids.insert(at, id);
                }
            }
        }
    }

    /// Removes `id`; false when nothing is left.
    fn remove(&mut self, id: MessageId) -> bool {
        match self {
            Postings::One(existing) => *existing != id,
            Postings::Many(ids) => {
                if let Ok(at) = ids.binary_search(&id) {
                    ids.remove(at);
                }
                !ids.is_empty()
            }
        }
    }
}

/// A word's key in the index: a 64-bit hash, so the index stores no text. Two words that share
/// a hash share a list, which can only add candidates: every candidate is checked against the
/// query's words (`text_matches`) before it is shown. Changes always remove a message's old
/// words before adding its new ones, so a shared list never loses an id it should keep.
fn key(word: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same word always has the same key within a process.
    let mut hasher = std::hash::DefaultHasher::new();
    word.hash(&mut hasher);
    hasher.finish()
}

/// Word → message ids.
#[derive(Debug, Clone, Default)]
pub struct WordIndex {
    postings: HashMap<u64, Postings>,
}

impl WordIndex {
    /// Indexes a message's topic and content.
    pub fn add(&mut self, id: MessageId, topic: &str, content: &str) {
        for word in message_words(topic, content) {
            match self.postings.entry(key(&word)) {
                std::collections::hash_map::Entry::Occupied(mut list) => list.get_mut().insert(id),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(Postings::One(id));
                }
            }
        }
    }

    /// Forgets a message's topic and content (as they were indexed).
    pub fn remove(&mut self, id: MessageId, topic: &str, content: &str) {
        for word in message_words(topic, content) {
            let key = key(&word);
            if let Some(list) = self.postings.get_mut(&key) {
                if !list.remove(id) {
                    self.postings.remove(&key);
                }
            }
        }
    }

    /// The posting lists of every word of `query`, shortest first; `None` when the query has
    /// no words (it then constrains nothing). A word nobody used gives an empty list.
    pub fn lists(&self, query: &str) -> Option<Vec<&[MessageId]>> {
        let wanted = words(query);
        if wanted.is_empty() {
            return None;
        }
        let mut lists: Vec<&[MessageId]> = wanted
            .iter()
            .map(|w| self.postings.get(&key(w)).map_or(&[][..], Postings::as_slice))
            .collect();
        lists.sort_by_key(|l| l.len());
        Some(lists)
    }

    /// The ids of messages containing every word of `query`, ascending (`None`: no words).
    pub fn matching(&self, query: &str) -> Option<Vec<MessageId>> {
        Some(intersect(self.lists(query)?).collect())
    }

    /// Distinct words indexed (for the memory benchmark and tests).
    pub fn len(&self) -> usize {
        self.postings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.postings.is_empty()
    }
}

/// The ids in every one of `lists` (shortest first), ascending and lazily, from either end: the
/// shortest list is walked and the others probed by binary search.
pub fn intersect<'a>(
    lists: Vec<&'a [MessageId]>,
) -> impl DoubleEndedIterator<Item = MessageId> + 'a {
    let (first, rest) = match lists.split_first() {
        Some((first, rest)) => (*first, rest.to_vec()),
        None => (&[][..], Vec::new()),
    };
    first
        .iter()
        .copied()
        .filter(move |id| rest.iter().all(|l| l.binary_search(id).is_ok()))
}

/// Whether a message's topic and content contain every word of `query` (the same rule as the
/// index, for checking one message).
pub fn text_matches(query: &str, topic: &str, content: &str) -> bool {
    let have = message_words(topic, content);
    words(query).iter().all(|w| have.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercased_alphanumeric_runs() {
        assert_eq!(
            words("Deploy, deploy! v2.0 Über"),
            ["deploy", "v2", "0", "über"]
        );
        assert!(words("  ...!  ").is_empty());
    }

    #[test]
    fn index_follows_adds_edits_and_removals() {
        let mut index = WordIndex::default();
        index.add(MessageId(1), "lunch", "Tacos at noon");
        index.add(MessageId(3), "lunch", "Pizza at one");
        index.add(MessageId(2), "deploy", "tacos shipped"); // out of order: inserted in place
        fn ids_in(index: &WordIndex, q: &str) -> Option<Vec<u64>> {
            index
                .matching(q)
                .map(|s| s.into_iter().map(|m| m.0).collect())
        }
        assert_eq!(ids_in(&index, "tacos"), Some(vec![1, 2]));
        assert_eq!(ids_in(&index, "LUNCH at"), Some(vec![1, 3]));
        assert_eq!(ids_in(&index, "lunch tacos"), Some(vec![1]));
        assert_eq!(ids_in(&index, "taco"), Some(vec![]));
        assert_eq!(ids_in(&index, "!!"), None);
        index.remove(MessageId(1), "lunch", "Tacos at noon");
        index.add(MessageId(1), "lunch", "Burritos at noon");
        assert_eq!(ids_in(&index, "tacos"), Some(vec![2]));
        assert_eq!(ids_in(&index, "burritos"), Some(vec![1]));
        index.remove(MessageId(2), "deploy", "tacos shipped");
        assert_eq!(ids_in(&index, "tacos"), Some(vec![]));
        assert_eq!(ids_in(&index, "deploy"), Some(vec![]));
        assert!(text_matches("Noon LUNCH", "lunch", "Burritos at noon"));
        assert!(!text_matches("noo", "lunch", "Burritos at noon"));
    }
}

//! The word index behind `search:` narrows: every word of a message's topic and content, with
//! the ids of the messages that contain it, ascending.
//!
//! Words are runs of letters and digits, lowercased (Unicode-aware), so `Deploy, deploy!` and
//! `deploy` are one word. A search matches messages that contain every word of the query, as
//! whole words: the shape of Zulip's full-text search, without its English stemming. Posting
//! lists are plain sorted vectors (8 bytes a posting): new messages have the highest ids, so
//! sending appends; edits, moves and deletions, which are rare, pay a binary search and a shift.

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

/// Word → message ids.
#[derive(Debug, Clone, Default)]
pub struct WordIndex {
    postings: HashMap<Box<str>, Vec<MessageId>>,
}

impl WordIndex {
    /// Indexes a message's topic and content.
    pub fn add(&mut self, id: MessageId, topic: &str, content: &str) {
        for word in message_words(topic, content) {
            let list = self.postings.entry(word.into_boxed_str()).or_default();
            match list.last() {
                None => list.push(id),
                Some(last) if *last < id => list.push(id),
                Some(_) => {
                    if let Err(at) = list.binary_search(&id) {
                        list.insert(at, id);
                    }
                }
            }
        }
    }

    /// Forgets a message's topic and content (as they were indexed).
    pub fn remove(&mut self, id: MessageId, topic: &str, content: &str) {
        for word in message_words(topic, content) {
            let Some(list) = self.postings.get_mut(word.as_str()) else {
                continue;
            };
            if let Ok(at) = list.binary_search(&id) {
                list.remove(at);
            }
            if list.is_empty() {
                self.postings.remove(word.as_str());
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
            .map(|w| self.postings.get(w.as_str()).map_or(&[][..], Vec::as_slice))
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

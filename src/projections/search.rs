//! The word index behind `search:` narrows: every word of a message's topic and content, with
//! the ids of the messages that contain it, ascending.
//!
//! Words are runs of letters and digits, lowercased (Unicode-aware), so `Deploy, deploy!` and
//! `deploy` are one word. A search matches messages that contain every word of the query, as
//! whole words: the shape of Zulip's full-text search, without its English stemming. Words are
//! keyed by a hash. A word used once keeps its id inline, a word used a few times a sorted
//! vector, and a common word a compressed bitmap (`roaring`): new messages have the highest
//! ids, so sending appends.

use crate::ids::MessageId;
use roaring::RoaringTreemap;
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
/// names, typos), so a single id is kept inline; a few ids are a short vector; past that, a
/// compressed bitmap (`roaring`), where a word in every message costs about a bit a message
/// instead of eight bytes.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
enum Postings {
    One(MessageId),
    Few(Vec<MessageId>),
    Many(Box<Bitmap>),
}

/// Most ids a word keeps in a plain vector before it moves to a bitmap (a bitmap's fixed cost
/// is a few hundred bytes).
const FEW: usize = 48;

/// A common word's ids: a compressed bitmap, and its newest ids in a short vector that is
/// appended to the bitmap when it fills. Roaring's `insert` finds an id's container by a binary
/// search over all of the bitmap's containers and then within the container, a cache miss a
/// step: at ten million messages it was a seventh of the server's time, and it grew with the
/// history (a container holds 65,536 ids). Its `append` takes the last container as it is.
///
/// Every id in `newest` is above every id in `bits`, and `newest` is ascending. After an
/// append it keeps its last id, so that a new id is known to be the highest by one comparison.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(from = "RoaringTreemap", into = "RoaringTreemap")]
pub struct Bitmap {
    bits: RoaringTreemap,
    newest: Vec<MessageId>,
}

/// How many of a common word's newest ids wait to be appended to its bitmap together.
const NEWEST: usize = 32;

impl From<RoaringTreemap> for Bitmap {
    fn from(mut bits: RoaringTreemap) -> Bitmap {
        let newest = bits.max().map(MessageId).into_iter().collect::<Vec<_>>();
        if let Some(last) = newest.first() {
            bits.remove(last.0);
        }
        Bitmap { bits, newest }
    }
}

impl From<Bitmap> for RoaringTreemap {
    fn from(mut bitmap: Bitmap) -> RoaringTreemap {
        bitmap.settle(0);
        bitmap.bits
    }
}

impl Bitmap {
    fn insert(&mut self, id: MessageId) {
        let above_bits = match (self.newest.first(), self.newest.last()) {
            (Some(first), Some(last)) if *last < id || *first <= id => true,
            (Some(_), _) => false,
            // None kept (all were removed): the bitmap's highest is looked up.
            (None, _) => self.bits.max().is_none_or(|max| max < id.0),
        };
        if !above_bits {
            self.bits.insert(id.0);
        } else if self.newest.last().is_none_or(|last| *last < id) {
            self.newest.push(id);
        } else if let Err(at) = self.newest.binary_search(&id) {
            self.newest.insert(at, id);
        }
        if self.newest.len() >= NEWEST {
            self.settle(1);
        }
    }

    /// Appends all but the last `keep` of the newest ids to the bitmap.
    fn settle(&mut self, keep: usize) {
        let moved = self.newest.len().saturating_sub(keep);
        let ids = || self.newest[..moved].iter().map(|id| id.0);
        // Cannot fail while the invariant holds; if it did, every id still goes in.
        if self.bits.append(ids()).is_err() {
            for id in ids() {
                self.bits.insert(id);
            }
        }
        self.newest.drain(..moved);
    }

    /// Removes `id`; false when nothing is left.
    fn remove(&mut self, id: MessageId) -> bool {
        match self.newest.binary_search(&id) {
            Ok(at) => {
                self.newest.remove(at);
            }
            Err(_) => {
                self.bits.remove(id.0);
            }
        }
        !(self.newest.is_empty() && self.bits.is_empty())
    }

    fn len(&self) -> u64 {
        self.bits.len() + self.newest.len() as u64
    }

    fn contains(&self, id: MessageId) -> bool {
        match self.newest.first() {
            Some(first) if *first <= id => self.newest.binary_search(&id).is_ok(),
            _ => self.bits.contains(id.0),
        }
    }
}

impl Postings {
    fn list(&self) -> List<'_> {
        match self {
            Postings::One(id) => List::Ids(std::slice::from_ref(id)),
            Postings::Few(ids) => List::Ids(ids),
            Postings::Many(bitmap) => List::Bits(bitmap),
        }
    }

    fn insert(&mut self, id: MessageId) {
        match self {
            Postings::One(existing) if *existing == id => {}
            Postings::One(existing) => {
                let mut ids = vec![*existing, id];
                ids.sort_unstable();
                *self = Postings::Few(ids);
            }
            Postings::Few(ids) => {
                // New messages have the highest ids: appending is the common case.
                if ids.last().is_none_or(|last| *last < id) {
                    ids.push(id);
                } else if let Err(at) = ids.binary_search(&id) {
                    ids.insert(at, id);
                }
                if ids.len() > FEW {
                    let bits: RoaringTreemap = ids.iter().map(|id| id.0).collect();
                    *self = Postings::Many(Box::new(Bitmap::from(bits)));
                }
            }
            Postings::Many(bitmap) => bitmap.insert(id),
        }
    }

    /// Removes `id`; false when nothing is left.
    fn remove(&mut self, id: MessageId) -> bool {
        match self {
            Postings::One(existing) => *existing != id,
            Postings::Few(ids) => {
                if let Ok(at) = ids.binary_search(&id) {
                    ids.remove(at);
                }
                !ids.is_empty()
            }
            Postings::Many(bitmap) => bitmap.remove(id),
        }
    }
}

/// One word's ids, as the index keeps them.
#[derive(Debug, Clone, Copy)]
pub enum List<'a> {
    Ids(&'a [MessageId]),
    Bits(&'a Bitmap),
}

impl<'a> List<'a> {
    pub const EMPTY: List<'static> = List::Ids(&[]);

    pub fn len(&self) -> u64 {
        match self {
            List::Ids(ids) => ids.len() as u64,
            List::Bits(bitmap) => bitmap.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, id: MessageId) -> bool {
        match self {
            List::Ids(ids) => ids.binary_search(&id).is_ok(),
            List::Bits(bitmap) => bitmap.contains(id),
        }
    }

    /// The ids, ascending (from either end).
    pub fn iter(&self) -> Box<dyn DoubleEndedIterator<Item = MessageId> + 'a> {
        match *self {
            List::Ids(ids) => Box::new(ids.iter().copied()),
            List::Bits(bitmap) => Box::new(
                bitmap
                    .bits
                    .iter()
                    .map(MessageId)
                    .chain(bitmap.newest.iter().copied()),
            ),
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

/// Calls `f` with the key of every word of `text`, repeats included. The key is that of the
/// word as [`words`] gives it (lowercased); a word of ASCII, the usual case, is lowercased on
/// the stack instead of into a new string.
fn each_key(text: &str, mut f: impl FnMut(u64)) {
    let mut buffer = [0u8; 64];
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        match buffer.get_mut(..word.len()) {
            Some(lower) if word.is_ascii() => {
                lower.copy_from_slice(word.as_bytes());
                lower.make_ascii_lowercase();
                // ASCII stays valid UTF-8 when lowercased.
                f(key(std::str::from_utf8(lower).unwrap_or(word)));
            }
            _ => f(key(&word.to_lowercase())),
        }
    }
}

/// The distinct word keys of a message's topic and content.
fn message_keys(topic: &str, content: &str) -> Vec<u64> {
    let mut keys = Vec::with_capacity(16);
    each_key(topic, |k| keys.push(k));
    each_key(content, |k| keys.push(k));
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Hashes a word key for the index's map: the key is already a hash, so it is used as is.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

/// Which of `threads` shares of a bulk build holds a word key: taken from bits of the key that
/// the index's table uses neither for a bucket (the low bits) nor for its tag (the top seven),
/// so each share's table still spreads its keys over all its buckets.
fn share_of(key: u64, threads: usize) -> usize {
    ((key >> 32) as u16 as usize) % threads
}

/// Word → message ids.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct WordIndex {
    postings: HashMap<u64, Postings, std::hash::BuildHasherDefault<KeyHasher>>,
}

impl WordIndex {
    /// Indexes a message's topic and content.
    pub fn add(&mut self, id: MessageId, topic: &str, content: &str) {
        for key in message_keys(topic, content) {
            self.insert(key, id);
        }
    }

    /// The index of many messages, built on up to `threads` threads: each scans every message
    /// and keeps the words whose key falls in its share, so the shares hold different words and
    /// join without merging any list. Inserting is most of the work (a lookup in a table of a
    /// million words, then the end of that word's list, each a cache miss), splitting the words
    /// is the rest; two threads take about 0.6 of one's time.
    pub fn build<'a, M>(messages: impl Fn() -> M + Sync, threads: usize) -> WordIndex
    where
        M: Iterator<Item = (MessageId, &'a str, &'a str)>,
    {
        let threads = threads.clamp(1, 8);
        let share = |part: usize| {
            let mut index = WordIndex::default();
            for (id, topic, content) in messages() {
                for key in message_keys(topic, content) {
                    if share_of(key, threads) == part {
                        index.insert(key, id);
                    }
                }
            }
            index
        };
        if threads == 1 {
            return share(0);
        }
        let shares: Vec<WordIndex> = std::thread::scope(|scope| {
            let others: Vec<_> = (1..threads)
                .map(|part| scope.spawn(move || share(part)))
                .collect();
            let mut shares = vec![share(0)];
            for other in others {
                match other.join() {
                    Ok(index) => shares.push(index),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            shares
        });
        let mut shares = shares.into_iter();
        let mut index = shares.next().unwrap_or_default();
        for other in shares {
            index.postings.reserve(other.postings.len());
            index.postings.extend(other.postings);
        }
        index
    }

    fn insert(&mut self, key: u64, id: MessageId) {
        match self.postings.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut list) => list.get_mut().insert(id),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(Postings::One(id));
            }
        }
    }

    /// Forgets a message's topic and content (as they were indexed).
    pub fn remove(&mut self, id: MessageId, topic: &str, content: &str) {
        for key in message_keys(topic, content) {
            if let Some(list) = self.postings.get_mut(&key) {
                if !list.remove(id) {
                    self.postings.remove(&key);
                }
            }
        }
    }

    /// The posting lists of every word of `query`, shortest first; `None` when the query has
    /// no words (it then constrains nothing). A word nobody used gives an empty list.
    pub fn lists(&self, query: &str) -> Option<Vec<List<'_>>> {
        let wanted = words(query);
        if wanted.is_empty() {
            return None;
        }
        let mut lists: Vec<List<'_>> = wanted
            .iter()
            .map(|w| {
                self.postings
                    .get(&key(w))
                    .map_or(List::EMPTY, Postings::list)
            })
            .collect();
        lists.sort_by_key(List::len);
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
/// shortest list is walked and each of its ids looked up in the others (a binary search in a
/// short list, a bit test in a bitmap).
pub fn intersect(lists: Vec<List<'_>>) -> Box<dyn DoubleEndedIterator<Item = MessageId> + '_> {
    let Some((first, rest)) = lists.split_first() else {
        return Box::new(std::iter::empty());
    };
    let rest = rest.to_vec();
    Box::new(
        first
            .iter()
            .filter(move |id| rest.iter().all(|list| list.contains(*id))),
    )
}

/// Whether a message's topic and content contain every word of `query` (the same rule as the
/// index, for checking one message).
pub fn text_matches(query: &str, topic: &str, content: &str) -> bool {
    has_words(&words(query), topic, content)
}

/// Whether a message's topic and content contain every one of `wanted` (already split and
/// lowercased by [`words`]).
pub fn has_words(wanted: &[String], topic: &str, content: &str) -> bool {
    if wanted.is_empty() {
        return true;
    }
    let have = message_words(topic, content);
    wanted.iter().all(|w| have.contains(w))
}

/// The longest `search:` operand accepted: a query is split once per request, but each
/// candidate is checked against every word of it.
pub const MAX_QUERY_CHARS: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn intersection_walks_both_ways() {
        let ids = |v: &[u64]| v.iter().map(|n| MessageId(*n)).collect::<Vec<_>>();
        let (a, b, c) = (
            ids(&[2, 5, 9, 12]),
            ids(&[1, 2, 3, 5, 7, 9, 11, 12, 13]),
            ids(&(0..100).collect::<Vec<_>>()),
        );
        let bits = Bitmap::from(c.iter().map(|id| id.0).collect::<RoaringTreemap>());
        let (a, b, c) = (List::Ids(&a), List::Ids(&b), List::Bits(&bits));
        let forward: Vec<u64> = intersect(vec![a, b, c]).map(|m| m.0).collect();
        assert_eq!(forward, [2, 5, 9, 12]);
        let backward: Vec<u64> = intersect(vec![a, b, c]).rev().map(|m| m.0).collect();
        assert_eq!(backward, [12, 9, 5, 2]);
        let d = ids(&[5, 12, 40]);
        let d = List::Ids(&d);
        let both: Vec<u64> = intersect(vec![d, a, b]).map(|m| m.0).collect();
        assert_eq!(both, [5, 12]);
        let back: Vec<u64> = intersect(vec![d, a, b]).rev().map(|m| m.0).collect();
        assert_eq!(back, [12, 5]);
        let walked: Vec<u64> = intersect(vec![c, d]).map(|m| m.0).collect();
        assert_eq!(walked, [5, 12, 40]);
        assert_eq!(intersect(vec![]).next(), None);
        assert_eq!(intersect(vec![a, List::EMPTY]).next_back(), None);
    }

    #[test]
    fn intersection_agrees_with_a_naive_one() {
        // A small linear congruential generator: deterministic lists of varied density.
        let mut seed = 42u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for round in 0..200 {
            let lists: Vec<Vec<MessageId>> = (0..3)
                .map(|k| {
                    let keep = 2 + (round + k) % 9;
                    (0..300u64)
                        .filter(|_| next() % keep == 0)
                        .map(MessageId)
                        .collect()
                })
                .collect();
            // Built id by id, so that some ids wait among the newest.
            let bitmaps: Vec<Bitmap> = lists
                .iter()
                .map(|l| {
                    let mut bitmap = Bitmap::from(RoaringTreemap::new());
                    l.iter().for_each(|id| bitmap.insert(*id));
                    bitmap
                })
                .collect();
            // Every other list as a bitmap, as the index keeps a common word's.
            let mut refs: Vec<List<'_>> = lists
                .iter()
                .zip(&bitmaps)
                .enumerate()
                .map(|(k, (ids, bits))| {
                    if (round as usize + k) % 2 == 0 {
                        List::Ids(ids)
                    } else {
                        List::Bits(bits)
                    }
                })
                .collect();
            refs.sort_by_key(List::len);
            let naive: Vec<MessageId> = refs[0]
                .iter()
                .filter(|id| refs[1..].iter().all(|l| l.iter().any(|x| x == *id)))
                .collect();
            assert_eq!(intersect(refs.clone()).collect::<Vec<_>>(), naive);
            let mut reversed: Vec<MessageId> = intersect(refs).rev().collect();
            reversed.reverse();
            assert_eq!(reversed, naive);
        }
    }

    #[test]
    fn a_bitmap_with_its_newest_ids_apart_holds_what_a_set_holds() {
        let mut seed = 7u64;
        let mut next = move |below: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % below
        };
        for round in 0..40u64 {
            let mut bitmap = Bitmap::from(RoaringTreemap::new());
            let mut model = BTreeSet::new();
            let mut top = 0u64;
            for _ in 0..(200 + round * 50) {
                let id = match next(10) {
                    // Mostly new messages (ids past any before, with gaps), as sends are.
                    0..=5 => {
                        top += 1 + next(3) + if round % 2 == 0 { 0 } else { next(70_000) };
                        top
                    }
                    // Edits re-index old ones, deletions and edits remove some.
                    6 | 7 => next(top + 1),
                    _ => {
                        let id = model.iter().nth(next(model.len() as u64 + 1) as usize);
                        let id = id.copied().unwrap_or(top);
                        model.remove(&id);
                        bitmap.remove(MessageId(id));
                        continue;
                    }
                };
                model.insert(id);
                bitmap.insert(MessageId(id));
                assert!(bitmap.newest.windows(2).all(|w| w[0] < w[1]));
                assert!(bitmap
                    .newest
                    .first()
                    .is_none_or(|first| bitmap.bits.max().is_none_or(|max| max < first.0)));
            }
            let list = List::Bits(&bitmap);
            let ids: Vec<u64> = list.iter().map(|id| id.0).collect();
            assert_eq!(
                ids,
                model.iter().copied().collect::<Vec<_>>(),
                "round {round}"
            );
            let back: Vec<u64> = list.iter().rev().map(|id| id.0).collect();
            assert_eq!(back, model.iter().rev().copied().collect::<Vec<_>>());
            assert_eq!(list.len(), model.len() as u64);
            let probes = (0..=top.min(5_000)).chain(model.iter().flat_map(|id| [*id, id + 1]));
            for id in probes {
                assert_eq!(list.contains(MessageId(id)), model.contains(&id), "{id}");
            }
            let round_trip: RoaringTreemap = bitmap.clone().into();
            assert!(round_trip.iter().eq(model.iter().copied()));
            let back = Bitmap::from(round_trip);
            assert!(List::Bits(&back)
                .iter()
                .map(|id| id.0)
                .eq(model.iter().copied()));
        }
    }

    #[test]
    fn a_common_word_moves_to_a_bitmap_and_keeps_its_ids() {
        let mut index = WordIndex::default();
        for id in (1..=299u64).rev().step_by(2).chain((2..=300).step_by(2)) {
            index.add(MessageId(id), "t", &format!("common word{}", id % 3));
        }
        for id in (10..=300).step_by(10) {
            index.remove(MessageId(id), "t", &format!("common word{}", id % 3));
        }
        let expected: Vec<MessageId> = (1..=300).filter(|id| id % 10 != 0).map(MessageId).collect();
        assert_eq!(index.matching("common"), Some(expected.clone()));
        assert!(matches!(
            index.postings.get(&key("common")),
            Some(Postings::Many(_))
        ));
        let with_word0: Vec<MessageId> = expected
            .iter()
            .copied()
            .filter(|id| id.0 % 3 == 0)
            .collect();
        assert_eq!(index.matching("COMMON word0"), Some(with_word0.clone()));
        let mut back: Vec<MessageId> = intersect(index.lists("word0 common").unwrap_or_default())
            .rev()
            .collect();
        back.reverse();
        assert_eq!(back, with_word0);
        for id in expected {
            index.remove(id, "t", &format!("common word{}", id.0 % 3));
        }
        assert_eq!(index.matching("common"), Some(Vec::new()));
        assert!(index.is_empty());
    }

    #[test]
    fn a_build_on_threads_equals_one_added_message_by_message() {
        let messages: Vec<(MessageId, String, String)> = (1..=400u64)
            .map(|n| {
                let topic = format!("topic {}", n % 7);
                let content = format!("Common words, number {n}, and {} twice {}", n % 13, n / 2);
                (MessageId(n), topic, content)
            })
            .collect();
        let mut added = WordIndex::default();
        for (id, topic, content) in &messages {
            added.add(*id, topic, content);
        }
        let lists = |index: &WordIndex| -> BTreeMap<u64, Vec<MessageId>> {
            index
                .postings
                .iter()
                .map(|(key, postings)| (*key, postings.list().iter().collect()))
                .collect()
        };
        let expected = lists(&added);
        assert!(expected.len() > 400, "{} words", expected.len());
        assert!(expected
            .values()
            .any(|ids| ids.len() > FEW && ids.len() < messages.len()));
        for threads in [1, 2, 3, 8, 64] {
            let built = WordIndex::build(
                || {
                    messages
                        .iter()
                        .map(|(id, t, c)| (*id, t.as_str(), c.as_str()))
                },
                threads,
            );
            assert_eq!(lists(&built), expected, "{threads} threads");
            assert_eq!(built.matching("twice 3"), added.matching("twice 3"));
        }
    }

    #[test]
    fn indexed_keys_are_the_keys_of_the_query_words() {
        let long = "X".repeat(70);
        let text = format!("Deploy, deploy! v2.0 Über ÖL {long} ΟΔΟΣ mixedCASE");
        let mut expected: Vec<u64> = words(&text).iter().map(|w| key(w)).collect();
        expected.extend(words("Topic ONE").iter().map(|w| key(w)));
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(message_keys("Topic ONE", &text), expected);
        assert_eq!(expected.len(), 10);
    }

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

//! The word index behind `search:` narrows: every searchable term of a message's topic and
//! content (`crate::analyzer`: a word's English stem, a CJK character or pair), with the ids
//! of the messages that hold it, ascending.
//!
//! Terms are keyed by a hash. A term used once keeps its id inline, one used a few times a
//! sorted vector, and a common one a compressed bitmap (`roaring`): new messages have the
//! highest ids, so sending appends. Beside the lists, every lowercased word ever indexed is
//! kept in order with its stem's key, so that the last word of a query can be looked up as the
//! start of words (`deplo`: deploy, deployment, deplorable).
//!
//! The index only narrows the candidates: each one is then checked against the whole query
//! (`Query::matches`), which decides.

use crate::analyzer::{Clause, Indexed, Needed, Query};
use crate::ids::MessageId;
use roaring::RoaringTreemap;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The distinct lowercased words and CJK runs of a text, in first-seen order (as queries and
/// the index split it).
pub fn words(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    crate::analyzer::tokens(text)
        .map(|t| t.text.to_lowercase())
        .filter(|w| seen.insert(w.clone()))
        .collect()
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

/// One term's ids, as the index keeps them, or the ids of any of several terms (the words a
/// prefix starts).
#[derive(Debug, Clone)]
pub enum List<'a> {
    Ids(&'a [MessageId]),
    Bits(&'a Bitmap),
    Any(Arc<[List<'a>]>),
}

impl<'a> List<'a> {
    pub const EMPTY: List<'static> = List::Ids(&[]);

    /// How many ids (for `Any`, the sum of its lists': at least as many as it holds).
    pub fn len(&self) -> u64 {
        match self {
            List::Ids(ids) => ids.len() as u64,
            List::Bits(bitmap) => bitmap.len(),
            List::Any(lists) => lists.iter().map(List::len).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, id: MessageId) -> bool {
        match self {
            List::Ids(ids) => ids.binary_search(&id).is_ok(),
            List::Bits(bitmap) => bitmap.contains(id),
            List::Any(lists) => lists.iter().any(|list| list.contains(id)),
        }
    }

    /// The ids, ascending (from either end).
    pub fn iter(&self) -> Box<dyn DoubleEndedIterator<Item = MessageId> + 'a> {
        match self {
            List::Ids(ids) => Box::new(ids.iter().copied()),
            List::Bits(bitmap) => Box::new(
                bitmap
                    .bits
                    .iter()
                    .map(MessageId)
                    .chain(bitmap.newest.iter().copied()),
            ),
            List::Any(lists) => Box::new(Union::new(lists.iter().map(List::iter).collect())),
        }
    }
}

/// The ids of several ascending lists, each once, ascending, from either end: each list's next
/// id at the front and at the back is held, and the lowest (highest) of them is taken.
struct Union<'a> {
    lists: Vec<Ends<'a>>,
    /// The last id taken from the front and from the back: the two ends never cross.
    front: Option<MessageId>,
    back: Option<MessageId>,
}

struct Ends<'a> {
    ids: Box<dyn DoubleEndedIterator<Item = MessageId> + 'a>,
    front: Option<MessageId>,
    back: Option<MessageId>,
}

impl<'a> Union<'a> {
    fn new(lists: Vec<Box<dyn DoubleEndedIterator<Item = MessageId> + 'a>>) -> Union<'a> {
        Union {
            lists: lists
                .into_iter()
                .map(|ids| Ends {
                    ids,
                    front: None,
                    back: None,
                })
                .collect(),
            front: None,
            back: None,
        }
    }
}

impl Iterator for Union<'_> {
    type Item = MessageId;

    fn next(&mut self) -> Option<MessageId> {
        for list in &mut self.lists {
            if list.front.is_none() {
                // A list whose middle is used up still holds the id kept at its back.
                list.front = list.ids.next().or_else(|| list.back.take());
            }
        }
        let lowest = self.lists.iter().filter_map(|l| l.front).min()?;
        if self.back.is_some_and(|back| lowest >= back) {
            return None;
        }
        for list in &mut self.lists {
            if list.front == Some(lowest) {
                list.front = None;
            }
        }
        self.front = Some(lowest);
        Some(lowest)
    }
}

impl DoubleEndedIterator for Union<'_> {
    fn next_back(&mut self) -> Option<MessageId> {
        for list in &mut self.lists {
            if list.back.is_none() {
                list.back = list.ids.next_back().or_else(|| list.front.take());
            }
        }
        let highest = self.lists.iter().filter_map(|l| l.back).max()?;
        if self.front.is_some_and(|front| highest <= front) {
            return None;
        }
        for list in &mut self.lists {
            if list.back == Some(highest) {
                list.back = None;
            }
        }
        self.back = Some(highest);
        Some(highest)
    }
}

/// A term's key in the index: a 64-bit hash, so the index stores no text. Two terms that share
/// a hash share a list, which can only add candidates: every candidate is checked against the
/// query (`Query::matches`) before it is shown. Changes always remove a message's old terms
/// before adding its new ones, so a shared list never loses an id it should keep.
fn key(term: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same term always has the same key within a process.
    let mut hasher = std::hash::DefaultHasher::new();
    term.hash(&mut hasher);
    hasher.finish()
}

/// A stop word's key: apart from the words' (whose keys are their stems').
fn stop_key(word: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write_u8(0xFF);
    word.hash(&mut hasher);
    hasher.finish()
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

type KeyMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// Which of `threads` shares of a bulk build holds a term key: taken from bits of the key that
/// the index's table uses neither for a bucket (the low bits) nor for its tag (the top seven),
/// so each share's table still spreads its keys over all its buckets.
fn share_of(key: u64, threads: usize) -> usize {
    ((key >> 32) as u16 as usize) % threads
}

/// How many words a prefix may stand for in the index's lookup: past that, the prefix is
/// checked on the candidates the rest of the query (or the narrow) gives, not looked up.
pub const PREFIX_WORDS: usize = 64;

/// What the index offers a search.
#[derive(Debug, Clone)]
pub enum Plan<'a> {
    /// The query finds nothing (no searchable word: empty, or only stop words).
    Nothing,
    /// The index cannot narrow this query (a short prefix of very many words): every message
    /// the narrow covers is a candidate.
    Everything,
    /// The messages in every one of these lists (shortest first) are the candidates.
    Lists(Vec<List<'a>>),
}

/// Term → message ids, and the words indexed.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct WordIndex {
    postings: KeyMap<Postings>,
    /// The key of a lowercased word → the key of its stem: the stemmer runs once per distinct
    /// word, and a word seen before is known by one lookup.
    stems: KeyMap<u64>,
    /// Every lowercased word indexed (not CJK, not a number), in order, for prefixes. Words
    /// are never taken out (a word whose messages were all deleted or edited only costs a
    /// lookup).
    vocabulary: BTreeSet<Box<str>>,
}

impl WordIndex {
    /// Indexes a message's topic and content.
    pub fn add(&mut self, id: MessageId, topic: &str, content: &str) {
        for key in self.message_keys(topic, content) {
            self.insert(key, id);
        }
    }

    /// The key a term is indexed under; a word not seen before is stemmed and remembered.
    fn term_key(&mut self, term: Indexed<'_>) -> u64 {
        match term {
            Indexed::Gram(gram) => key(gram),
            Indexed::Stop(word) => stop_key(word),
            // A number is its own stem and never a prefix's word: neither stemmed nor kept
            // in the vocabulary (an organization's ids and amounts would fill it).
            Indexed::Word(lower) if lower.chars().all(char::is_numeric) => key(lower),
            Indexed::Word(lower) => {
                let surface = key(lower);
                if let Some(stem) = self.stems.get(&surface) {
                    return *stem;
                }
                let stem = key(&crate::analyzer::stem(lower));
                self.stems.insert(surface, stem);
                self.vocabulary.insert(lower.into());
                stem
            }
        }
    }

    /// The distinct term keys of a message's topic and content.
    fn message_keys(&mut self, topic: &str, content: &str) -> Vec<u64> {
        let mut keys = Vec::with_capacity(16);
        for text in [topic, content] {
            crate::analyzer::each_indexed(text, |term| keys.push(self.term_key(term)));
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The index of many messages, built on up to `threads` threads: each scans every message
    /// and keeps the terms whose key falls in its share, so the shares hold different terms
    /// and join without merging any list. Inserting is most of the work (a lookup in a table
    /// of a million terms, then the end of that term's list, each a cache miss), splitting
    /// the words is the rest. Every share stems each distinct word once; the first share's
    /// words are kept.
    pub fn build<'a, M>(messages: impl Fn() -> M + Sync, threads: usize) -> WordIndex
    where
        M: Iterator<Item = (MessageId, &'a str, &'a str)>,
    {
        let threads = threads.clamp(1, 8);
        let share = |part: usize| {
            let mut index = WordIndex::default();
            for (id, topic, content) in messages() {
                for key in index.message_keys(topic, content) {
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
        for key in self.message_keys(topic, content) {
            if let Some(list) = self.postings.get_mut(&key) {
                if !list.remove(id) {
                    self.postings.remove(&key);
                }
            }
        }
    }

    fn list(&self, term: &Needed) -> List<'_> {
        let key = match term {
            Needed::Stem(stem) => key(stem),
            Needed::Gram(gram) => key(gram),
            Needed::Stop(word) => stop_key(word),
        };
        self.postings.get(&key).map_or(List::EMPTY, Postings::list)
    }

    /// The lists of the words starting with `prefix`, and of those with its stem; `None` when
    /// it starts more than [`PREFIX_WORDS`] words.
    fn prefix_list(&self, prefix: &str, stem: &str) -> Option<List<'_>> {
        let mut keys = vec![key(stem)];
        let starting = self
            .vocabulary
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|word| word.starts_with(prefix));
        for word in starting {
            if let Some(stem) = self.stems.get(&key(word)) {
                keys.push(*stem);
                if keys.len() > PREFIX_WORDS {
                    return None;
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        let lists: Vec<List<'_>> = keys
            .iter()
            .filter_map(|k| self.postings.get(k).map(Postings::list))
            .collect();
        Some(match lists.len() {
            0 => List::EMPTY,
            1 => lists.into_iter().next().unwrap_or(List::EMPTY),
            _ => List::Any(lists.into()),
        })
    }

    /// The candidates of a query: the lists of every term it needs, shortest first.
    pub fn plan(&self, query: &Query) -> Plan<'_> {
        if query.is_empty() {
            return Plan::Nothing;
        }
        let mut lists = Vec::new();
        for clause in &query.clauses {
            match clause {
                Clause::Prefix { lower, stem } => lists.extend(self.prefix_list(lower, stem)),
                _ => lists.extend(clause.needed_terms().iter().map(|t| self.list(t))),
            }
        }
        if lists.is_empty() {
            return Plan::Everything;
        }
        lists.sort_by_key(List::len);
        Plan::Lists(lists)
    }

    /// The ids of messages the index offers for `query`, ascending (`None`: every message).
    pub fn candidates(&self, query: &str) -> Option<Vec<MessageId>> {
        match self.plan(&Query::parse(query)) {
            Plan::Nothing => Some(Vec::new()),
            Plan::Everything => None,
            Plan::Lists(lists) => Some(intersect(lists).collect()),
        }
    }

    /// The bytes the index holds on the heap, counted from the sizes of its allocations (a
    /// hash table's buckets and control bytes, each list's and word's allocation with the
    /// allocator's 16 bytes of bookkeeping, a bitmap's containers as roaring stores them).
    pub fn heap_bytes(&self) -> u64 {
        fn table<K, V>(capacity: usize) -> u64 {
            // hashbrown keeps at most 7/8 of its buckets full, and a power of two of them.
            let buckets = (capacity * 8 / 7).next_power_of_two() as u64;
            buckets * (std::mem::size_of::<(K, V)>() as u64 + 1)
        }
        const CHUNK: u64 = 16;
        let lists: u64 = self
            .postings
            .values()
            .map(|postings| match postings {
                Postings::One(_) => 0,
                Postings::Few(ids) => CHUNK + 8 * ids.capacity() as u64,
                Postings::Many(bitmap) => {
                    CHUNK
                        + std::mem::size_of::<Bitmap>() as u64
                        + bitmap.bits.serialized_size() as u64
                        + CHUNK
                        + 8 * bitmap.newest.capacity() as u64
                }
            })
            .sum();
        // A set's entry: the string's allocation and its 16-byte handle in a B-tree node
        // (eleven to a node of about 200 bytes, at least half full).
        let words: u64 = self
            .vocabulary
            .iter()
            .map(|word| (word.len() as u64 + CHUNK).next_multiple_of(16) + 40)
            .sum();
        table::<u64, Postings>(self.postings.capacity())
            + lists
            + table::<u64, u64>(self.stems.capacity())
            + words
    }

    /// Distinct words indexed, with their stems.
    pub fn words(&self) -> usize {
        self.vocabulary.len()
    }

    /// Distinct terms indexed (for the memory benchmark and tests).
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

/// The longest `search:` operand accepted: a query is parsed once per request, but each
/// candidate is checked against every part of it.
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
        let abc = || vec![a.clone(), b.clone(), c.clone()];
        let forward: Vec<u64> = intersect(abc()).map(|m| m.0).collect();
        assert_eq!(forward, [2, 5, 9, 12]);
        let backward: Vec<u64> = intersect(abc()).rev().map(|m| m.0).collect();
        assert_eq!(backward, [12, 9, 5, 2]);
        let d = ids(&[5, 12, 40]);
        let d = List::Ids(&d);
        let dab = || vec![d.clone(), a.clone(), b.clone()];
        let both: Vec<u64> = intersect(dab()).map(|m| m.0).collect();
        assert_eq!(both, [5, 12]);
        let back: Vec<u64> = intersect(dab()).rev().map(|m| m.0).collect();
        assert_eq!(back, [12, 5]);
        let walked: Vec<u64> = intersect(vec![c.clone(), d.clone()]).map(|m| m.0).collect();
        assert_eq!(walked, [5, 12, 40]);
        assert_eq!(intersect(vec![]).next(), None);
        assert_eq!(intersect(vec![a.clone(), List::EMPTY]).next_back(), None);
        // Any of several lists: each id once, from either end, the ends never crossing.
        let any = List::Any(vec![a.clone(), d.clone(), List::EMPTY, c.clone()].into());
        let union: Vec<u64> = any.iter().map(|m| m.0).collect();
        let expected: Vec<u64> = (0..100).collect();
        assert_eq!(union, expected);
        let mut down: Vec<u64> = any.iter().rev().map(|m| m.0).collect();
        down.reverse();
        assert_eq!(down, expected);
        let mut both_ends = any.iter();
        let (mut low, mut high) = (Vec::new(), Vec::new());
        loop {
            match (both_ends.next(), both_ends.next_back()) {
                (None, None) => break,
                (x, y) => {
                    low.extend(x.map(|m| m.0));
                    high.extend(y.map(|m| m.0));
                }
            }
        }
        high.reverse();
        low.extend(high);
        assert_eq!(low, expected);
        assert!(any.contains(MessageId(40)) && !any.contains(MessageId(100)));
        let with_any: Vec<u64> = intersect(vec![b.clone(), any]).map(|m| m.0).collect();
        assert_eq!(with_any, [1, 2, 3, 5, 7, 9, 11, 12, 13]);
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
            // The same lists, any of them, agree with a naive union.
            let mut union: Vec<MessageId> = refs.iter().flat_map(|l| l.iter()).collect();
            union.sort_unstable();
            union.dedup();
            let any = List::Any(refs.clone().into());
            assert_eq!(any.iter().collect::<Vec<_>>(), union);
            assert_eq!(any.iter().rev().count(), union.len());
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

    fn found(index: &WordIndex, query: &str) -> Option<Vec<u64>> {
        index
            .candidates(query)
            .map(|ids| ids.into_iter().map(|m| m.0).collect())
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
        let expected: Vec<u64> = (1..=300).filter(|id| id % 10 != 0).collect();
        assert_eq!(found(&index, "common "), Some(expected.clone()));
        assert!(matches!(
            index.postings.get(&key("common")),
            Some(Postings::Many(_))
        ));
        let with_word0: Vec<u64> = expected.iter().copied().filter(|id| id % 3 == 0).collect();
        assert_eq!(found(&index, "COMMON word0 "), Some(with_word0.clone()));
        let Plan::Lists(lists) = index.plan(&Query::parse("word0 common ")) else {
            panic!("no lists");
        };
        let mut back: Vec<u64> = intersect(lists).rev().map(|m| m.0).collect();
        back.reverse();
        assert_eq!(back, with_word0);
        // "wor" starts three words: any of their lists.
        assert_eq!(found(&index, "wor"), Some(expected.clone()));
        for id in expected {
            index.remove(MessageId(id), "t", &format!("common word{}", id % 3));
        }
        assert_eq!(found(&index, "common "), Some(Vec::new()));
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
            assert_eq!(built.vocabulary, added.vocabulary);
            assert_eq!(built.stems, added.stems);
            assert_eq!(found(&built, "twice 3 "), found(&added, "twice 3 "));
            assert_eq!(found(&built, "numb"), found(&added, "numb"));
        }
    }

    #[test]
    fn a_message_is_indexed_under_stems_parts_grams_and_stop_words_apart() {
        use crate::analyzer::stem;
        let long = "X".repeat(70);
        let text = format!("Deploy, deploying! the v2.0 Über ÖL {long} ΟΔΟΣ mixedCASE 東京");
        let mut index = WordIndex::default();
        let keys = index.message_keys("Topic ONE", &text);
        let mut expected: Vec<u64> = [
            stem("deploy").into_owned(),
            "v2".into(),
            "0".into(),
            stem("über").into_owned(),
            stem("öl").into_owned(),
            long.to_lowercase(),
            stem("οδος").into_owned(),
            stem("mixedcase").into_owned(),
            stem("mixed").into_owned(),
            stem("case").into_owned(),
            "東".into(),
            "東京".into(),
            "京".into(),
            "topic".into(),
            "one".into(),
        ]
        .iter()
        .map(|t| key(t))
        .chain([stop_key("the")])
        .collect();
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(keys, expected);
        assert!(!keys.contains(&key("the")) && keys.contains(&stop_key("the")));
        assert!(index.vocabulary.contains("deploying") && index.vocabulary.contains("v2"));
        assert!(!index.vocabulary.contains("東京") && !index.vocabulary.contains("0"));
    }

    #[test]
    fn words_are_lowercased_runs() {
        assert_eq!(
            words("Deploy, deploy! v2.0 Über 東京タワー"),
            ["deploy", "v2", "0", "über", "東京タワー"]
        );
        assert!(words("  ...!  ").is_empty());
    }

    #[test]
    fn index_follows_adds_edits_and_removals() {
        let mut index = WordIndex::default();
        index.add(MessageId(1), "lunch", "Tacos at noon");
        index.add(MessageId(3), "lunch", "Pizza at one");
        index.add(MessageId(2), "deploy", "tacos shipped"); // out of order: inserted in place
        assert_eq!(found(&index, "tacos "), Some(vec![1, 2]));
        assert_eq!(found(&index, "LUNCH at"), Some(vec![1, 3]));
        assert_eq!(found(&index, "lunch tacos "), Some(vec![1]));
        assert_eq!(found(&index, "taco "), Some(vec![1, 2]));
        assert_eq!(found(&index, "ta"), Some(vec![1, 2]));
        assert_eq!(found(&index, "tap"), Some(vec![]));
        assert_eq!(found(&index, "!!"), Some(vec![]));
        assert_eq!(found(&index, "at the"), Some(vec![]));
        index.remove(MessageId(1), "lunch", "Tacos at noon");
        index.add(MessageId(1), "lunch", "Burritos at noon");
        assert_eq!(found(&index, "tacos "), Some(vec![2]));
        assert_eq!(found(&index, "burritos "), Some(vec![1]));
        index.remove(MessageId(2), "deploy", "tacos shipped");
        assert_eq!(found(&index, "tacos "), Some(vec![]));
        assert_eq!(found(&index, "deploy "), Some(vec![]));
    }

    #[test]
    fn a_prefix_of_too_many_words_leaves_the_choice_to_the_check() {
        let mut index = WordIndex::default();
        for n in 0..=PREFIX_WORDS as u64 {
            index.add(MessageId(n + 1), "", &format!("pre{n}x"));
        }
        assert!(matches!(index.plan(&Query::parse("pre")), Plan::Everything));
        assert_eq!(
            found(&index, "pre6"),
            Some(
                (6..=PREFIX_WORDS as u64)
                    .filter(|n| n.to_string().starts_with('6'))
                    .map(|n| n + 1)
                    .collect()
            )
        );
    }

    /// Whatever the messages and the query, the messages a narrow finds through the index are
    /// those a scan of every message with the same rules finds: the index never drops one.
    #[test]
    fn the_index_finds_what_a_scan_finds() {
        const WORDS: [&str; 24] = [
            "deploy",
            "deploying",
            "Deployed",
            "deployment",
            "the",
            "a",
            "failed",
            "fails",
            "sess.opts",
            "sess",
            "opts",
            "getUserName",
            "user",
            "example.com/path",
            "v2.0",
            "東京タワー",
            "東京",
            "京都",
            "서울에서",
            "x",
            "7",
            "70",
            "naïve",
            "NAÏVE",
        ];
        let mut seed = 11u64;
        let mut next = move |below: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % below
        };
        let separators = [" ", " ", ", ", "\n", ".", "/", "", "\""];
        let (mut found_some, mut asked) = (0, 0);
        for round in 0..60 {
            let text = |words: usize, next: &mut dyn FnMut(usize) -> usize| {
                let mut out = String::new();
                for _ in 0..words {
                    out.push_str(WORDS[next(WORDS.len())]);
                    out.push_str(separators[next(separators.len())]);
                }
                out
            };
            let messages: Vec<(MessageId, String, String)> = (1..=80u64)
                .map(|id| {
                    let topic = text(next(3), &mut next);
                    let content = text(1 + next(8), &mut next);
                    (MessageId(id), topic, content)
                })
                .collect();
            let mut index = WordIndex::default();
            for (id, topic, content) in &messages {
                index.add(*id, topic, content);
            }
            // Some edits: the index follows.
            let mut messages = messages;
            for _ in 0..10 {
                let at = next(messages.len());
                let (id, topic, content) = messages[at].clone();
                index.remove(id, &topic, &content);
                let content = text(1 + next(6), &mut next);
                index.add(id, &topic, &content);
                messages[at].2 = content;
            }
            for _ in 0..40 {
                let mut query = text(1 + next(3), &mut next);
                // Cut the last word short now and then, as while typing.
                if next(3) == 0 {
                    let mut cut = next(query.len() + 1);
                    while !query.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    query.truncate(cut);
                }
                let parsed = Query::parse(&query);
                let scan: Vec<u64> = messages
                    .iter()
                    .filter(|(_, t, c)| parsed.matches(t, c))
                    .map(|(id, _, _)| id.0)
                    .collect();
                let through_index: Vec<u64> = match index.plan(&parsed) {
                    Plan::Nothing => Vec::new(),
                    Plan::Everything => messages.iter().map(|m| m.0 .0).collect(),
                    Plan::Lists(lists) => intersect(lists).map(|m| m.0).collect(),
                }
                .into_iter()
                .filter(|id| {
                    let (_, t, c) = &messages[*id as usize - 1];
                    parsed.matches(t, c)
                })
                .collect();
                assert_eq!(through_index, scan, "round {round}, query {query:?}");
                found_some += usize::from(!scan.is_empty());
                asked += 1;
            }
        }
        // The queries are not all misses: the comparison means something.
        assert!(found_some * 3 > asked, "{found_some} of {asked}");
    }
}

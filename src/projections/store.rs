//! The messages themselves, by id, in chunks of consecutive ids: ids are handed out in order
//! and rarely leave gaps, so a chunk holds its messages side by side with no per-message node
//! or pointer, where an ordered map kept every message in a half-full tree node.
//!
//! Chunks are shared (`Arc`) and copied on write, so two copies of the state (the engine's
//! decision and read states, a snapshot being written) hold one copy of every chunk neither
//! has changed since: see `adopt_changed` and ADR 0005.

use super::message::Message;
use crate::ids::MessageId;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Messages per chunk.
pub(super) const CHUNK: u64 = 64;

/// The slots of one chunk, `None` where no message has that id (never sent or deleted).
type Chunk = Vec<Option<Message>>;

/// How far past the last chunk an id may land and still be kept in the vector (a million
/// messages ahead); beyond it, a chunk goes to a map instead of allocating the gap. The engine
/// hands ids out one after another, so only an odd log gets there.
const MAX_JUMP: usize = 1 << 14;

/// Chunks by number: a vector indexed by chunk number, which finds a message's chunk with one
/// index where a tree took several nodes, and a map for chunks far past its end (see
/// `MAX_JUMP`). Every chunk number in `far` is at least `dense.len()`.
#[derive(Debug, Clone, Default)]
struct Chunks {
    dense: Vec<Option<Arc<Chunk>>>,
    far: BTreeMap<u64, Arc<Chunk>>,
}

impl Chunks {
    fn index(&self, number: u64) -> Option<usize> {
        usize::try_from(number)
            .ok()
            .filter(|i| *i < self.dense.len())
    }

    fn get(&self, number: u64) -> Option<&Arc<Chunk>> {
        match self.index(number) {
            Some(i) => self.dense[i].as_ref(),
            None => self.far.get(&number),
        }
    }

    fn get_mut(&mut self, number: u64) -> Option<&mut Arc<Chunk>> {
        match self.index(number) {
            Some(i) => self.dense[i].as_mut(),
            None => self.far.get_mut(&number),
        }
    }

    /// The chunk numbered `number`, made by `make` if there is none.
    fn get_or_insert_with(&mut self, number: u64, make: impl FnOnce() -> Chunk) -> &mut Arc<Chunk> {
        let reach = usize::try_from(number)
            .ok()
            .filter(|i| *i < self.dense.len().saturating_add(MAX_JUMP));
        let Some(i) = reach else {
            return self.far.entry(number).or_insert_with(|| Arc::new(make()));
        };
        if i >= self.dense.len() {
            let from = self.dense.len() as u64;
            self.dense.resize(i + 1, None);
            let taken: Vec<u64> = self.far.range(from..=number).map(|(n, _)| *n).collect();
            for n in taken {
                let chunk = self.far.remove(&n);
                if let Some(slot) = usize::try_from(n).ok().and_then(|n| self.dense.get_mut(n)) {
                    *slot = chunk;
                }
            }
        }
        self.dense[i].get_or_insert_with(|| Arc::new(make()))
    }

    fn insert(&mut self, number: u64, chunk: Arc<Chunk>) {
        *self.get_or_insert_with(number, Vec::new) = chunk;
    }

    fn remove(&mut self, number: u64) {
        match self.index(number) {
            Some(i) => self.dense[i] = None,
            None => {
                self.far.remove(&number);
            }
        }
    }

    /// Every chunk with its number, ascending (from either end).
    fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &Arc<Chunk>)> {
        self.dense
            .iter()
            .enumerate()
            .filter_map(|(n, chunk)| Some((n as u64, chunk.as_ref()?)))
            .chain(self.far.iter().map(|(n, chunk)| (*n, chunk)))
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut Arc<Chunk>> {
        self.dense.iter_mut().flatten().chain(self.far.values_mut())
    }
}

thread_local! {
    /// Set while a snapshot's state is encoded without its messages, which follow it in parts
    /// of their own (`MessageStore::write_parts`).
    static APART: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `encode` with every message store written as an empty one (its messages are written
/// apart, in parts that decode on several threads).
pub(super) fn without_messages<R>(encode: impl FnOnce() -> R) -> R {
    /// Clears the mark even if `encode` panics.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            APART.with(|a| a.set(false));
        }
    }
    APART.with(|a| a.set(true));
    let _clear = Clear;
    encode()
}

/// Written as the map from chunk number to chunk that it replaced, so snapshots read the same.
/// The map's length is given up front: without it, msgpack's encoder would buffer the whole
/// store in memory before writing it, where a snapshot streams it.
impl serde::Serialize for Chunks {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if APART.with(|a| a.get()) {
            return serializer.serialize_map(Some(0))?.end();
        }
        let len = self.dense.iter().flatten().count() + self.far.len();
        let mut map = serializer.serialize_map(Some(len))?;
        for (number, chunk) in self.iter() {
            map.serialize_entry(&number, chunk)?;
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for Chunks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Chunks, D::Error> {
        let map = BTreeMap::<u64, Arc<Chunk>>::deserialize(deserializer)?;
        let mut chunks = Chunks::default();
        for (number, chunk) in map {
            chunks.insert(number, chunk);
        }
        Ok(chunks)
    }
}

/// Chunks decoded from one part of a snapshot, with their numbers.
pub struct Part(Vec<(u64, Arc<Chunk>)>);

/// Counts and checksums the bytes written through it.
struct Counted<W> {
    inner: W,
    written: u64,
    checksum: crc32fast::Hasher,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        self.checksum.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Messages by id.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct MessageStore {
    /// Chunk number (id / 64) → its 64 slots.
    chunks: Chunks,
    len: usize,
    /// Chunks changed since another copy last adopted them; `None` unless `track_changes` was
    /// called (only the engine's decision state is adopted from).
    #[serde(skip)]
    changed: Option<BTreeSet<u64>>,
}

fn slot(id: MessageId) -> (u64, usize) {
    (id.0 / CHUNK, (id.0 % CHUNK) as usize)
}

impl MessageStore {
    pub fn get(&self, id: &MessageId) -> Option<&Message> {
        let (chunk, index) = slot(*id);
        self.chunks.get(chunk)?.get(index)?.as_ref()
    }

    /// The message, to change it: its chunk is copied first if another state shares it.
    pub fn get_mut(&mut self, id: &MessageId) -> Option<&mut Message> {
        let (chunk, index) = slot(*id);
        self.chunks.get(chunk)?.get(index)?.as_ref()?;
        self.mark(chunk);
        Arc::make_mut(self.chunks.get_mut(chunk)?)
            .get_mut(index)?
            .as_mut()
    }

    /// Stores a message under its id, replacing any there.
    pub fn insert(&mut self, id: MessageId, message: Message) {
        let (chunk, index) = slot(id);
        self.mark(chunk);
        let slots = Arc::make_mut(
            self.chunks
                .get_or_insert_with(chunk, || (0..CHUNK).map(|_| None).collect()),
        );
        if slots[index].replace(message).is_none() {
            self.len += 1;
        }
    }

    pub fn remove(&mut self, id: &MessageId) -> Option<Message> {
        let (chunk, index) = slot(*id);
        self.chunks.get(chunk)?.get(index)?.as_ref()?;
        self.mark(chunk);
        let slots = Arc::make_mut(self.chunks.get_mut(chunk)?);
        let removed = slots.get_mut(index)?.take()?;
        self.len -= 1;
        if slots.iter().all(Option::is_none) {
            self.chunks.remove(chunk);
        }
        Some(removed)
    }

    fn mark(&mut self, chunk: u64) {
        if let Some(changed) = &mut self.changed {
            changed.insert(chunk);
        }
    }

    /// Starts recording which chunks change, for `adopt_changed`.
    pub fn track_changes(&mut self) {
        self.changed.get_or_insert_with(BTreeSet::new);
    }

    /// Makes this store share `other`'s copy of every chunk `other` changed since it last
    /// gave them away, and forgets those changes in `other`.
    ///
    /// Both stores must have folded exactly the same events: then the chunks are equal and this
    /// only drops a duplicate. The engine calls it once its read state has folded a durable
    /// batch that its decision state folded before, so the two keep one copy of every message
    /// between batches (the next change to a shared chunk copies that chunk, 64 messages).
    pub fn adopt_changed(&mut self, other: &mut MessageStore) {
        let changed = other
            .changed
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        for chunk in changed {
            match other.chunks.get(chunk) {
                Some(shared) => self.chunks.insert(chunk, shared.clone()),
                None => self.chunks.remove(chunk),
            }
        }
        debug_assert_eq!(self.len, other.len, "adopting from a store that differs");
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Writes the chunks to `out` in parts of `per_part` chunks each, every part a msgpack
    /// list of `[number, chunk]` pairs, and returns each part's length in bytes and CRC-32.
    pub(super) fn write_parts(
        &self,
        out: &mut impl std::io::Write,
        per_part: usize,
    ) -> Result<Vec<(u64, u32)>, rmp_serde::encode::Error> {
        let all: Vec<(u64, &Arc<Chunk>)> = self.chunks.iter().collect();
        let mut parts = Vec::new();
        for part in all.chunks(per_part.max(1)) {
            let mut counted = Counted {
                inner: &mut *out,
                written: 0,
                checksum: crc32fast::Hasher::new(),
            };
            rmp_serde::encode::write(&mut counted, part)?;
            parts.push((counted.written, counted.checksum.finalize()));
        }
        Ok(parts)
    }

    /// Decodes one part `write_parts` wrote.
    pub(super) fn read_part(bytes: &[u8]) -> Result<Part, rmp_serde::decode::Error> {
        rmp_serde::from_slice(bytes).map(Part)
    }

    /// Takes in the chunks of decoded parts (the store was decoded without them; its count
    /// was not).
    pub(super) fn take_parts(&mut self, parts: Vec<Part>) {
        for part in parts {
            for (number, chunk) in part.0 {
                self.chunks.insert(number, chunk);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every message, in id order (from either end).
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Message> {
        self.chunks
            .iter()
            .flat_map(|(_, slots)| slots.iter().flatten())
    }

    /// Every message, to change it (copying every shared chunk).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Message> {
        if let Some(changed) = &mut self.changed {
            changed.extend(self.chunks.iter().map(|(n, _)| n));
        }
        self.chunks
            .values_mut()
            .flat_map(|slots| Arc::make_mut(slots).iter_mut().flatten())
    }

    /// Every id, in order (from either end).
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &MessageId> {
        self.values().map(|m| &m.id)
    }

    /// The messages that may differ between `older`, an earlier copy of this store, and this
    /// one, as (then, now) pairs in id order, `None` where a slot is empty. A chunk both still
    /// share was changed by neither (changes copy a shared chunk first) and is skipped unread,
    /// so after a copy the cost is that of what changed since.
    pub fn differences<'a>(
        &'a self,
        older: &'a MessageStore,
    ) -> Vec<(Option<&'a Message>, Option<&'a Message>)> {
        let numbers: BTreeSet<u64> = self
            .chunks
            .iter()
            .filter(|(n, chunk)| !older.chunks.get(*n).is_some_and(|o| Arc::ptr_eq(chunk, o)))
            .map(|(n, _)| n)
            .chain(
                older
                    .chunks
                    .iter()
                    .filter(|(n, _)| self.chunks.get(*n).is_none())
                    .map(|(n, _)| n),
            )
            .collect();
        let slots = |store: &'a MessageStore, n: u64| {
            let chunk = store.chunks.get(n).map(|c| c.as_slice()).unwrap_or(&[]);
            (0..CHUNK as usize).map(move |i| chunk.get(i).and_then(Option::as_ref))
        };
        numbers
            .into_iter()
            .flat_map(|n| slots(older, n).zip(slots(self, n)))
            .filter(|(then, now)| then.is_some() || now.is_some())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks held by both stores (the same allocation).
    fn shared(a: &MessageStore, b: &MessageStore) -> usize {
        a.chunks
            .iter()
            .filter(|(n, chunk)| b.chunks.get(*n).is_some_and(|o| Arc::ptr_eq(chunk, o)))
            .count()
    }

    /// Messages with the given ids, otherwise one stored channel message.
    fn messages() -> impl Fn(u64) -> Message {
        let mut given = crate::commands::testing::Given::org();
        let channel = given.channel("c", &[crate::commands::testing::OWNER]);
        let sent = given.message(crate::commands::testing::OWNER, channel, "t", "x");
        let template = given.state.messages.get(sent).cloned().unwrap_or_else(|| {
            panic!("the message was not stored");
        });
        move |id| Message {
            id: MessageId(id),
            ..template.clone()
        }
    }

    #[test]
    fn an_adopting_copy_shares_chunks_until_one_side_writes() {
        let message = messages();
        let mut read = MessageStore::default();
        let mut decided = read.clone();
        decided.track_changes();
        for id in 1..=200 {
            decided.insert(MessageId(id), message(id));
            read.insert(MessageId(id), message(id));
        }
        assert_eq!(shared(&read, &decided), 0);
        read.adopt_changed(&mut decided);
        assert_eq!(shared(&read, &decided), 4, "ids 1..=200 fill chunks 0 to 3");
        // A change on the decision side copies that chunk only; the read side keeps the old.
        if let Some(m) = decided.get_mut(&MessageId(70)) {
            m.timestamp = 99;
        }
        decided.insert(MessageId(201), message(201));
        assert_eq!(shared(&read, &decided), 2);
        assert_ne!(read.get(&MessageId(70)).map(|m| m.timestamp), Some(99));
        assert!(read.get(&MessageId(201)).is_none());
        // Once the read side folds the same changes, adopting shares them again.
        if let Some(m) = read.get_mut(&MessageId(70)) {
            m.timestamp = 99;
        }
        read.insert(MessageId(201), message(201));
        decided.remove(&MessageId(3));
        read.remove(&MessageId(3));
        read.adopt_changed(&mut decided);
        assert_eq!(shared(&read, &decided), 4);
        assert_eq!(read.get(&MessageId(70)).map(|m| m.timestamp), Some(99));
        assert_eq!(read.len(), decided.len());
        // Nothing changed since: adopting again is a no-op.
        read.adopt_changed(&mut decided);
        assert_eq!(shared(&read, &decided), 4);
    }

    #[test]
    fn differences_are_the_changed_slots_of_unshared_chunks() {
        let message = messages();
        let mut store = MessageStore::default();
        for id in 1..=300 {
            store.insert(MessageId(id), message(id));
        }
        let older = store.clone();
        assert!(store.differences(&older).is_empty());
        if let Some(m) = store.get_mut(&MessageId(70)) {
            m.content = "changed".into();
        }
        store.remove(&MessageId(5));
        store.insert(MessageId(301), message(301));
        for id in 256..=300 {
            store.remove(&MessageId(id));
        }
        let ids = |m: Option<&Message>| m.map(|m| m.id.0);
        let found: Vec<(Option<u64>, Option<u64>)> = store
            .differences(&older)
            .into_iter()
            .map(|(then, now)| (ids(then), ids(now)))
            .collect();
        // Chunk 0 (ids 1 to 63), chunk 1 (64 to 127) and chunk 4 (256 to 319) were copied;
        // chunks 2 and 3 are still shared.
        let mut expected: Vec<(Option<u64>, Option<u64>)> = (1..128)
            .map(|id| (Some(id), (id != 5).then_some(id)))
            .collect();
        expected.extend((256..=300).map(|id| (Some(id), None)));
        expected.push((None, Some(301)));
        assert_eq!(found, expected);
        let changed = store.differences(&older);
        let seventy = changed.iter().find(|(then, _)| ids(*then) == Some(70));
        assert_eq!(
            seventy.map(|(then, now)| (&*then.unwrap().content, &*now.unwrap().content)),
            Some((&*message(70).content, "changed"))
        );
    }

    #[test]
    fn chunks_keep_order_across_gaps_and_removals() {
        let mut store = MessageStore::default();
        let message = messages();
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

    #[test]
    fn an_id_far_past_the_end_is_kept_without_allocating_the_gap_and_read_back_in_order() {
        let message = messages();
        let far = CHUNK * (MAX_JUMP as u64 + 5);
        let mut store = MessageStore::default();
        for id in [u64::MAX - 1, far, 3] {
            store.insert(MessageId(id), message(id));
        }
        assert!(store.chunks.dense.len() <= 1, "the gap is not allocated");
        assert_eq!(store.chunks.far.len(), 2);
        // Filling up to the far chunk pulls it into the vector, in order.
        let mut id = 3;
        while id < far {
            id += CHUNK * 1000;
            store.insert(MessageId(id), message(id));
        }
        assert_eq!(
            store.chunks.far.len(),
            1,
            "only the last id stays in the map"
        );
        assert_eq!(store.get(&MessageId(far)).map(|m| m.id.0), Some(far));
        let ids: Vec<u64> = store.keys().map(|id| id.0).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(ids, sorted);
        assert_eq!(store.keys().next_back(), Some(&MessageId(u64::MAX - 1)));

        // Written as a map from chunk number to chunk: the form snapshots have always had.
        let bytes = rmp_serde::to_vec(&store.chunks).unwrap_or_default();
        let map: BTreeMap<u64, Arc<Chunk>> =
            rmp_serde::from_slice(&bytes).unwrap_or_else(|e| panic!("not a map: {e}"));
        assert_eq!(map.len(), store.chunks.iter().count());
        let back: Chunks =
            rmp_serde::from_slice(&bytes).unwrap_or_else(|e| panic!("not read back: {e}"));
        let numbers = |c: &Chunks| c.iter().map(|(n, _)| n).collect::<Vec<u64>>();
        assert_eq!(numbers(&back), numbers(&store.chunks));
        assert_eq!(back.far.len(), 1);
    }
}

//! Frames: consecutive records stored together under one key of the sled log (ADR 0007).
//!
//! A frame is `mark (2 bytes) ‖ first seq (u64, big-endian) ‖ count (u32, big-endian)`
//! followed by `count` times `length (u32, big-endian) ‖ record`, the records being exactly the
//! bytes `Envelope::encode` made (checksum and chain link included). It is stored under its
//! first seq. The frame adds no checksum of its own: every record carries one, and a damaged
//! header or length shows as a frame that does not parse (its lengths must end exactly at the
//! end of the value) or as records that fail their checksums.

use crate::ids::Seq;
use std::ops::Range;

/// The first two bytes of every frame.
pub const MARK: [u8; 2] = [0xCF, 0x01];

/// Header bytes before the first record.
const HEADER: usize = 2 + 8 + 4;

/// A frame is closed to further records once it holds this many bytes (a record larger than
/// this is a frame of its own). sled splits a leaf past 16 entries and writes a page larger
/// than a quarter of its 512 KiB segment as a blob file of its own, so 17 frames of this size
/// stay well inside an ordinary page.
pub const TARGET_BYTES: usize = 4096;

/// A frame being written: the newest one of a log grows until it reaches [`TARGET_BYTES`].
#[derive(Debug, Clone, PartialEq)]
pub struct FrameBuf {
    first: Seq,
    count: u32,
    bytes: Vec<u8>,
}

impl FrameBuf {
    /// A frame holding the one record `record`, at `seq`.
    pub fn starting(seq: Seq, record: &[u8]) -> FrameBuf {
        let mut bytes = Vec::with_capacity(TARGET_BYTES.max(HEADER + 4 + record.len()));
        bytes.extend_from_slice(&MARK);
        bytes.extend_from_slice(&seq.to_key());
        bytes.extend_from_slice(&0u32.to_be_bytes());
        let mut frame = FrameBuf {
            first: seq,
            count: 0,
            bytes,
        };
        frame.push(record);
        frame
    }

    /// A stored frame, to append to (`None` if it does not parse).
    pub fn reopen(key: Seq, stored: &[u8]) -> Option<FrameBuf> {
        let records = parse(key, stored).ok()?;
        let mut bytes = Vec::with_capacity(TARGET_BYTES.max(stored.len()));
        bytes.extend_from_slice(stored);
        Some(FrameBuf {
            first: key,
            count: u32::try_from(records.len()).ok()?,
            bytes,
        })
    }

    /// Whether `record`, at `seq`, may go into this frame: it is the next seq and the frame
    /// stays within [`TARGET_BYTES`].
    pub fn takes(&self, seq: Seq, record: &[u8]) -> bool {
        seq == self.next()
            && self.count < u32::MAX
            && self.bytes.len() + 4 + record.len() <= TARGET_BYTES
    }

    /// Appends the record of the next seq.
    pub fn push(&mut self, record: &[u8]) {
        // A record is far below 4 GiB (a request body is bounded long before that).
        let len = u32::try_from(record.len()).unwrap_or(u32::MAX);
        self.bytes.extend_from_slice(&len.to_be_bytes());
        self.bytes.extend_from_slice(record);
        self.count += 1;
        self.bytes[HEADER - 4..HEADER].copy_from_slice(&self.count.to_be_bytes());
    }

    /// The sled key: the first seq.
    pub fn key(&self) -> [u8; 8] {
        self.first.to_key()
    }

    /// The seq the next record must have.
    pub fn next(&self) -> Seq {
        Seq(self.first.0 + u64::from(self.count))
    }

    /// The stored bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// The records of a stored frame, as ranges of `stored`, checking that it is a frame of the
/// records from `key` on and that its lengths end exactly where it does.
pub fn parse(key: Seq, stored: &[u8]) -> Result<Vec<Range<usize>>, String> {
    let (count, mut at) = header(key, stored)?;
    // Bounded by what the bytes can hold (a length each), not by a count that may be damaged.
    let mut records = Vec::with_capacity((count as usize).min((stored.len() - at) / 4));
    for n in 0..count {
        let len = stored
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(|b: [u8; 4]| u32::from_be_bytes(b) as usize)
            .ok_or_else(|| format!("the length of its record {} is cut off", key.0 + n as u64))?;
        let start = at + 4;
        let end = start
            .checked_add(len)
            .filter(|&end| end <= stored.len())
            .ok_or_else(|| {
                format!(
                    "its record {} claims {len} bytes, past the frame's end",
                    key.0 + n as u64
                )
            })?;
        records.push(start..end);
        at = end;
    }
    if at != stored.len() {
        return Err(format!(
            "{} bytes follow its {count} records",
            stored.len() - at
        ));
    }
    Ok(records)
}

/// The last seq of a stored frame (`None` if it does not parse: its header's count is not to
/// be believed then).
pub fn last_seq(key: Seq, stored: &[u8]) -> Option<Seq> {
    let records = parse(key, stored).ok()?;
    Some(Seq(key.0 + records.len() as u64 - 1))
}

/// The record count and where the records begin.
fn header(key: Seq, stored: &[u8]) -> Result<(u32, usize), String> {
    let head = stored
        .get(..HEADER)
        .ok_or_else(|| format!("it is {} bytes, shorter than a frame header", stored.len()))?;
    if head[..2] != MARK {
        return Err("it does not begin with a frame's mark".into());
    }
    let first = Seq::from_key(&head[2..10]).unwrap_or(Seq(0));
    if first != key {
        return Err(format!("it is stored under {key} but begins at {first}"));
    }
    let count = u32::from_be_bytes([head[10], head[11], head[12], head[13]]);
    if count == 0 {
        return Err("it holds no record".into());
    }
    if key.0.checked_add(u64::from(count)).is_none() {
        return Err(format!("its {count} records run past the last seq"));
    }
    Ok((count, HEADER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_close_at_their_size() {
        let mut frame = FrameBuf::starting(Seq(7), b"first");
        assert!(frame.takes(Seq(8), b"second"));
        assert!(!frame.takes(Seq(9), b"second"), "not the next seq");
        frame.push(b"second");
        let records = parse(Seq(7), frame.bytes()).unwrap();
        let texts: Vec<&[u8]> = records.iter().map(|r| &frame.bytes()[r.clone()]).collect();
        assert_eq!(texts, vec![&b"first"[..], &b"second"[..]]);
        assert_eq!(last_seq(Seq(7), frame.bytes()), Some(Seq(8)));
        assert_eq!(frame.next(), Seq(9));
        assert_eq!(FrameBuf::reopen(Seq(7), frame.bytes()), Some(frame.clone()));
        let big = vec![0u8; TARGET_BYTES];
        assert!(!frame.takes(Seq(9), &big), "a full frame takes no more");
        // A record larger than a frame is a frame of its own.
        let alone = FrameBuf::starting(Seq(9), &big);
        assert_eq!(parse(Seq(9), alone.bytes()).unwrap().len(), 1);
    }

    #[test]
    fn damaged_frames_do_not_parse() {
        let mut frame = FrameBuf::starting(Seq(1), b"one");
        frame.push(b"two");
        let good = frame.bytes().to_vec();
        assert!(parse(Seq(2), &good).unwrap_err().contains("begins at 1"));
        let mut bad = good.clone();
        bad[0] ^= 1;
        assert!(parse(Seq(1), &bad).unwrap_err().contains("mark"));
        // A length pointing past the end.
        let mut bad = good.clone();
        bad[HEADER] = 0xff;
        assert!(parse(Seq(1), &bad)
            .unwrap_err()
            .contains("past the frame's end"));
        // A count larger than the records stored.
        let mut bad = good.clone();
        bad[HEADER - 1] = 3;
        assert!(parse(Seq(1), &bad).unwrap_err().contains("cut off"));
        // A count smaller: bytes left over.
        let mut bad = good.clone();
        bad[HEADER - 1] = 1;
        assert!(parse(Seq(1), &bad).unwrap_err().contains("follow"));
        assert!(parse(Seq(1), &good[..5]).is_err());
        // A damaged count of four billion allocates nothing for it.
        let mut huge = good.clone();
        huge[HEADER - 4..HEADER].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse(Seq(1), &huge).unwrap_err().contains("cut off"));
        assert_eq!(last_seq(Seq(1), &good[..5]), None);
        assert_eq!(
            last_seq(Seq(1), &bad),
            None,
            "a damaged frame's count is not believed"
        );
        assert!(FrameBuf::reopen(Seq(1), &bad).is_none());
    }
}

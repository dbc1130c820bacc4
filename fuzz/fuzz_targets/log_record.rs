//! Stored log records: arbitrary bytes, and arbitrary bodies behind a valid checksum; and the
//! same bytes read as a sled frame of records (ADR 0007).
#![no_main]

use chronicle::events::{record_link, Envelope};
use chronicle::ids::Seq;
use chronicle::store::frame;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = Envelope::decode(Seq(1), data);
    let mut record = crc32fast::hash(data).to_be_bytes().to_vec();
    record.extend_from_slice(data);
    let _ = Envelope::decode(Seq(1), &record);
    let _ = record_link(&record);
    // A frame: every range it gives lies inside it, and its records decode or fail cleanly.
    if let Ok(ranges) = frame::parse(Seq(1), data) {
        assert!(!ranges.is_empty());
        for (n, range) in ranges.iter().enumerate() {
            let _ = Envelope::decode(Seq(1 + n as u64), &data[range.clone()]);
        }
        assert_eq!(frame::last_seq(Seq(1), data), Some(Seq(ranges.len() as u64)));
        assert!(frame::FrameBuf::reopen(Seq(1), data).is_some());
    }
    let _ = frame::last_seq(Seq(1), data);
    // A frame of the record itself round-trips.
    let built = frame::FrameBuf::starting(Seq(7), data);
    let ranges = frame::parse(Seq(7), built.bytes()).expect("a built frame parses");
    assert_eq!(&built.bytes()[ranges[0].clone()], data);
});

//! Stored log records: arbitrary bytes, and arbitrary bodies behind a valid checksum.
#![no_main]

use chronicle::events::{record_link, Envelope};
use chronicle::ids::Seq;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = Envelope::decode(Seq(1), data);
    let mut record = crc32fast::hash(data).to_be_bytes().to_vec();
    record.extend_from_slice(data);
    let _ = Envelope::decode(Seq(1), &record);
    let _ = record_link(&record);
});

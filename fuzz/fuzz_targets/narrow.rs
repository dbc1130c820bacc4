//! Narrows, in either form (`[["channel","x"]]` or `[{"operator":...}]`), from any JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let value = serde_json::from_slice::<serde_json::Value>(data).ok();
    let _ = chronicle::narrow::parse_narrow(value);
});

//! Request parameters: any name and value, read as every kind a handler asks for.
#![no_main]

use chronicle::http::params::Params;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (name, value) = text.split_once('=').unwrap_or(("p", &text));
    let mut params = Params::from_pairs([(name.to_owned(), value.to_owned())]);
    let _ = params.bool(name);
    let _ = params.int::<i64>(name);
    let _ = params.int::<u8>(name);
    let _ = params.json::<Vec<u64>>(name);
    let _ = params.json::<serde_json::Value>(name);
    let _ = params.str(name);
    let _ = params.ignored();
});

//! Mattermost exports (issue 34): any bytes as an mmctl zip, or as a bare import.jsonl (the
//! first byte picks which), are imported or refused with an error, never a crash, and a refused
//! import leaves no data directory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let name = if selector % 2 == 0 { "import.jsonl" } else { "export.zip" };
    let export = tmp.path().join(name);
    std::fs::write(&export, rest).expect("the export is written");
    let target = tmp.path().join("data");
    let options = chronicle::import::Options::default();
    let source = chronicle::import::Source::Mattermost;
    if chronicle::import::run(source, &export, &target, &options).is_err() {
        assert!(!target.exists(), "a refused import left its data directory");
    }
});

//! Zulip exports (issue 34): any bytes as an export tarball (`.tar.gz`) are imported or refused
//! with an error, never a crash, and a refused import leaves no data directory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let export = tmp.path().join("zulip-export.tar.gz");
    std::fs::write(&export, data).expect("the export is written");
    let target = tmp.path().join("data");
    let options = chronicle::import::Options::default();
    let source = chronicle::import::Source::Zulip;
    if chronicle::import::run(source, &export, &target, &options).is_err() {
        assert!(!target.exists(), "a refused import left its data directory");
    }
});

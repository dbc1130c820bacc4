//! Slack exports (issue 34): any bytes as an export zip are imported or refused with an error,
//! never a crash, and a refused import leaves no data directory; any text converts from
//! mrkdwn. The first byte picks which.
#![no_main]

use chronicle::import::mrkdwn::{convert, Names};
use libfuzzer_sys::fuzz_target;

/// Knows one user and one channel, so both branches of mentions and links are taken.
struct One;

impl Names for One {
    fn user(&self, slack_id: &str) -> Option<(u64, String)> {
        (slack_id == "U1").then(|| (7, "Ada".to_owned()))
    }
    fn channel(&self, slack_id: &str) -> Option<String> {
        (slack_id == "C1").then(|| "general".to_owned())
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if selector % 4 == 0 {
        let _ = convert(&String::from_utf8_lossy(rest), &One);
        return;
    }
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let export = tmp.path().join("export.zip");
    std::fs::write(&export, rest).expect("the export is written");
    let target = tmp.path().join("data");
    let options = chronicle::import::Options::default();
    if chronicle::import::run(chronicle::import::Source::Slack, &export, &target, &options).is_err() {
        assert!(!target.exists(), "a refused import left its data directory");
    }
});

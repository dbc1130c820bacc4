//! Incoming webhook payloads: any JSON, with any of the event headers, through every
//! integration's formatter gives messages, an ignore, or a refusal; never a crash.
//! The first byte picks the integration, the event header and whether `topic` is set.
#![no_main]

use chronicle::integrations::{Request, INTEGRATIONS};
use libfuzzer_sys::fuzz_target;

const EVENTS: &[&str] = &[
    "push",
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "issues",
    "issue_comment",
    "release",
    "ping",
    "create",
    "delete",
    "status",
    "check_run",
    "Push Hook",
    "Tag Push Hook",
    "Issue Hook",
    "Merge Request Hook",
    "Note Hook",
    "Pipeline Hook",
    "Release Hook",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(payload) = serde_json::from_slice::<serde_json::Value>(rest) else {
        return;
    };
    let integration = &INTEGRATIONS[selector as usize % INTEGRATIONS.len()];
    let event = EVENTS[(selector as usize / INTEGRATIONS.len()) % EVENTS.len()];
    let header = |_: &str| Some(event.to_owned());
    let with_topic = selector & 0x80 != 0;
    let param = |name: &str| (with_topic && name == "topic").then(|| "fixed".to_owned());
    let person = |_: &chronicle::integrations::PersonQuery<'_>| Some(("Ann".to_owned(), 7));
    let _ = (integration.format)(&Request {
        header: &header,
        payload: &payload,
        param: &param,
        person: &person,
    });
});

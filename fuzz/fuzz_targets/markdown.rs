//! Markdown of messages and descriptions: it renders, and raw HTML never passes through.
#![no_main]

use chronicle::markdown::{render_description, render_message, Resolver};
use libfuzzer_sys::fuzz_target;

/// Knows one user and one channel, so mentions and channel links take both branches.
struct One;

impl Resolver for One {
    fn user(&self, name: &str, id: Option<u64>) -> Option<(u64, String)> {
        (name == "Alice" || id == Some(7)).then(|| (7, "Alice".to_owned()))
    }

    fn channel(&self, name: &str) -> Option<(u64, String)> {
        (name == "general").then(|| (1, "general".to_owned()))
    }
}

fuzz_target!(|data: &[u8]| {
    let source = String::from_utf8_lossy(data);
    let message = render_message(&source, &One);
    assert!(!message.html.contains("<script"), "{}", message.html);
    let description = render_description(&source);
    assert!(!description.contains("<script"), "{description}");
});

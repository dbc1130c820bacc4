//! Fuzzing on the stable toolchain: property tests that throw arbitrary input at the code that
//! reads untrusted bytes (request parameters, narrows, Markdown, stored records, multipart-style
//! names, RFC 3339 times, HTML diffs) and require that it answers (an error is an answer) and
//! never panics, with proptest's shrinking to a minimal failing input. The coverage-guided
//! counterparts are the cargo-fuzz targets in `fuzz/` (`scripts/fuzz.sh`, stable toolchain with
//! `--sanitizer none`).

use crate::events::Envelope;
use crate::http::params::Params;
use crate::ids::Seq;
use proptest::prelude::*;

/// Arbitrary text, with the characters the parsers care about made likely.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[\\[\\]{}\"':,*_`#@<>&\\\\ a-z0-9\\n|~-]{0,80}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn parameter_decoding_answers(name in "[a-z_]{1,12}", value in text()) {
        let mut p = Params::from_pairs([(name.clone(), value)]);
        let _ = p.bool(&name);
        let _ = p.int::<i64>(&name);
        let _ = p.int::<u8>(&name);
        let _ = p.json::<Vec<u64>>(&name);
        let _ = p.json::<serde_json::Value>(&name);
        let _ = p.str(&name);
        let _ = p.ignored();
    }

    #[test]
    fn narrow_parsing_answers(raw in text()) {
        let value = serde_json::from_str::<serde_json::Value>(&raw).ok();
        let _ = crate::narrow::parse_narrow(value);
    }

    #[test]
    fn narrows_of_any_shape_answer(terms in proptest::collection::vec((text(), text(), any::<bool>()), 0..4)) {
        let json: Vec<serde_json::Value> = terms
            .into_iter()
            .map(|(operator, operand, negated)| serde_json::json!({"operator": operator, "operand": operand, "negated": negated}))
            .collect();
        let _ = crate::narrow::parse_narrow(Some(serde_json::Value::Array(json)));
    }

    #[test]
    fn slack_mrkdwn_converts_any_text(source in text()) {
        struct Nobody;
        impl crate::import::mrkdwn::Names for Nobody {
            fn user(&self, _: &str) -> Option<(u64, String)> { None }
            fn channel(&self, _: &str) -> Option<String> { None }
        }
        let _ = crate::import::mrkdwn::convert(&source, &Nobody);
    }

    #[test]
    fn markdown_rendering_escapes_and_answers(source in text()) {
        let rendered = crate::markdown::render_description(&source);
        // Raw HTML never passes through.
        prop_assert!(!rendered.contains("<script"), "{}", rendered);
        let with_tag = format!("{source}<script>alert(1)</script>");
        prop_assert!(!crate::markdown::render_description(&with_tag).contains("<script"));
    }

    #[test]
    fn stored_record_decoding_answers(bytes in proptest::collection::vec(any::<u8>(), 0..200), seq in 0u64..10) {
        let _ = Envelope::decode(Seq(seq), &bytes);
        // With a valid checksum in front, the body itself is what gets parsed.
        let mut record = crc32fast::hash(&bytes).to_be_bytes().to_vec();
        record.extend_from_slice(&bytes);
        let _ = Envelope::decode(Seq(seq), &record);
        let _ = crate::events::record_link(&record);
    }

    #[test]
    fn times_and_search_words_answer(raw in text()) {
        let _ = crate::time::parse_rfc3339_ms(&raw);
        let words = crate::projections::search::words(&raw);
        prop_assert!(words.iter().all(|w| !w.is_empty()));
        // Any text as a query, against itself as topic and content, and as HTML to highlight.
        let query = crate::analyzer::Query::parse(&raw);
        let _ = query.matches(&raw, &raw);
        let highlighted = query.highlight(&raw);
        prop_assert!(highlighted.len() >= raw.len());
        let mut index = crate::projections::search::WordIndex::default();
        index.add(crate::ids::MessageId(1), &raw, &raw);
        let _ = index.plan(&query);
        index.remove(crate::ids::MessageId(1), &raw, &raw);
        let _ = crate::commands::emoji::normalized_name(&raw);
        let _ = crate::commands::emoji::image_type(raw.as_bytes());
    }

    #[test]
    fn upload_names_and_links_answer(raw in text(), bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
        let name = crate::uploads::sanitize_name(&raw);
        prop_assert!(!name.is_empty() && name.len() <= 100);
        prop_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)));
        prop_assert!(!name.starts_with('.'));
        let _ = crate::uploads::sniff_image(&bytes);
        let _ = crate::projections::attachments::linked_paths(&raw).count();
    }

    #[test]
    fn html_diffs_answer_and_balance(a in text(), b in text()) {
        let old = crate::markdown::render_description(&a);
        let new = crate::markdown::render_description(&b);
        let diff = crate::html_diff::highlight_differences(&old, &new, &mut 10_000);
        prop_assert!(diff.starts_with("<div>") && diff.ends_with("</div>"));
        prop_assert_eq!(diff.matches("<span class=\"highlight").count(), diff.matches("</span>").count() - new.matches("</span>").count());
    }
}

/// Zulip's webhook fixtures (`tests/fixtures/webhooks/zulip`), each integration's, parsed once.
fn webhook_fixtures() -> &'static Vec<(&'static str, serde_json::Value)> {
    static FIXTURES: std::sync::OnceLock<Vec<(&'static str, serde_json::Value)>> =
        std::sync::OnceLock::new();
    FIXTURES.get_or_init(|| {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/webhooks/zulip");
        let mut out = Vec::new();
        for integration in crate::integrations::INTEGRATIONS {
            let Ok(dir) = std::fs::read_dir(format!("{root}/{}", integration.url_name)) else {
                continue;
            };
            for entry in dir.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name == "expected.json" || !name.ends_with(".json") {
                    continue;
                }
                if let Some(value) = std::fs::read_to_string(entry.path())
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
                {
                    out.push((integration.url_name, value));
                }
            }
        }
        out
    })
}

/// `value` with the node at position `at` (in a walk of the tree) replaced by `with`.
fn mutate(value: &mut serde_json::Value, at: &mut usize, with: &serde_json::Value) -> bool {
    if *at == 0 {
        *value = with.clone();
        return true;
    }
    *at -= 1;
    match value {
        serde_json::Value::Object(map) => map.values_mut().any(|v| mutate(v, at, with)),
        serde_json::Value::Array(items) => items.iter_mut().any(|v| mutate(v, at, with)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    /// Real payloads with one part replaced by something of another shape (nothing, a number,
    /// text, a list, an empty object) go through their integration's formatter, which answers.
    #[test]
    fn webhook_formatters_answer_damaged_payloads(
        pick in any::<usize>(),
        at in 0usize..400,
        with in prop_oneof![
            Just(serde_json::Value::Null),
            Just(serde_json::json!(-1)),
            Just(serde_json::json!(1e300)),
            text().prop_map(serde_json::Value::String),
            Just(serde_json::json!([])),
            Just(serde_json::json!({})),
        ],
        header in text(),
    ) {
        let fixtures = webhook_fixtures();
        prop_assert!(fixtures.len() > 50, "Zulip's fixtures are read");
        let (name, payload) = &fixtures[pick % fixtures.len()];
        let mut payload = payload.clone();
        let mut at = at;
        mutate(&mut payload, &mut at, &with);
        let integration = crate::integrations::find(name).expect("an integration");
        let header = |_: &str| Some(header.clone());
        let param = |name: &str| (name == "ignore_pull_requests").then(|| "false".to_owned());
        let person = |_: &crate::integrations::PersonQuery<'_>| Some(("Ann".to_owned(), 7));
        let _ = (integration.format)(&crate::integrations::Request {
            header: &header,
            payload: &payload,
            param: &param,
            person: &person,
        });
    }
}

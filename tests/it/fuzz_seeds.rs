//! The fuzz targets' checks (fuzz/checks.rs) in the ordinary test build: each runs on its seeds
//! (the tests' own fixtures: exports, emails, SAML responses, webhook payloads, pictures) and on
//! a fixed series of mutations of them (bit flips, interesting bytes, insertions, deletions,
//! repeats, truncations and splices, from a seeded generator, so every run tries the same
//! inputs). This is a regression net, not a search: the coverage-guided search is
//! `scripts/fuzz.sh`, with libFuzzer on an instrumented build of its own, which the suite does
//! not build (it took CI five minutes for two seconds of fuzzing a target).

#[path = "../../fuzz/checks.rs"]
mod checks;

use std::path::{Path, PathBuf};

fn fixture(path: &str) -> Vec<u8> {
    let full = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

fn fixtures_in(dir: &str, extension: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == extension))
        .collect();
    paths.sort();
    assert!(
        !paths.is_empty(),
        "no .{extension} file in {}",
        dir.display()
    );
    paths
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

fn with_selector(selector: u8, bytes: &[u8]) -> Vec<u8> {
    let mut input = vec![selector];
    input.extend_from_slice(bytes);
    input
}

/// xorshift64*: small, fast and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: &[u8] = b"\x00\xff\x7f\x80\"{}[]<>\\/&:=09\n -";

/// One to four stacked changes to a copy of a seed; the first byte (a target's selector, where
/// it has one) is changed as often as any other.
fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut input = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let len = input.len();
        let at = rng.below(len + 1);
        match rng.below(7) {
            0 if len > 0 => input[at.min(len - 1)] ^= 1 << rng.below(8),
            1 if len > 0 => input[at.min(len - 1)] = INTERESTING[rng.below(INTERESTING.len())],
            2 => {
                let bytes: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
                input.splice(at..at, bytes);
            }
            3 => {
                let end = (at + 1 + rng.below(16)).min(len);
                input.drain(at.min(end)..end);
            }
            4 if len > 0 => {
                let from = rng.below(len);
                let piece = input[from..(from + 1 + rng.below(64)).min(len)].to_vec();
                input.splice(at..at, piece);
            }
            5 => input.truncate(at),
            _ => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                input.truncate(at);
                input.extend_from_slice(&other[from..]);
            }
        }
    }
    input
}

/// Every seed, then `mutations` mutated inputs, through `check`. A panic names the input's
/// number and writes the input to `target/fuzz-seeds-failure-TARGET` for `cargo fuzz run`.
fn run(target: &str, seeds: Vec<Vec<u8>>, mutations: usize, check: fn(&[u8])) {
    assert!(!seeds.is_empty());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ target.len() as u64);
    let inputs = seeds
        .iter()
        .cloned()
        .chain((0..mutations).map(|_| mutate(&mut rng, &seeds)));
    for (n, input) in inputs.enumerate() {
        let outcome = std::panic::catch_unwind(|| check(&input));
        if let Err(panic) = outcome {
            let saved = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target")
                .join(format!("fuzz-seeds-failure-{target}"));
            let _ = std::fs::write(&saved, &input);
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or(panic.downcast_ref::<&str>().copied());
            panic!(
                "{target}: input {n} failed (saved in {}): {message:?}",
                saved.display()
            );
        }
    }
}

#[test]
fn pictures_are_decoded_or_refused() {
    // Small pictures, as decoding and thumbnailing a large one takes seconds in a debug build: a
    // custom emoji of the fixtures, a JPEG, and an animated GIF of two frames (for the animation
    // and still-frame paths).
    let mut jpeg = Vec::new();
    image::RgbImage::from_pixel(24, 16, image::Rgb([200, 120, 40]))
        .write_to(
            &mut std::io::Cursor::new(&mut jpeg),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    let mut seeds = vec![
        fixture("zulip/mattermost_fixtures/exported_emoji/7u7x8ytgp78q8jir81o9ejwwnr/image.png"),
        jpeg,
    ];
    let mut gif = Vec::new();
    {
        let mut encoder = image::codecs::gif::GifEncoder::new(&mut gif);
        for shade in [40, 220] {
            let frame = image::RgbaImage::from_pixel(12, 9, image::Rgba([shade, 90, 30, 255]));
            encoder.encode_frame(image::Frame::new(frame)).unwrap();
        }
    }
    seeds.push(gif);
    run("avatar_image", seeds, 300, checks::avatar_image::check);
}

#[test]
fn emails_are_read_or_refused() {
    let seeds = fixtures_in("email", "eml")
        .into_iter()
        .map(|(_, bytes)| bytes)
        .collect();
    run("email_gateway", seeds, 1500, checks::email_gateway::check);
}

#[test]
fn mattermost_exports_are_imported_or_refused() {
    let seeds = vec![
        with_selector(0, &fixture("zulip/mattermost_fixtures/export.json")),
        with_selector(0, &fixture("zulip/mattermost_fixtures/guestExport.json")),
        with_selector(
            0,
            &fixture("zulip/mattermost_v11.1.0_fixtures/raw_mmctl_output/import.jsonl"),
        ),
    ];
    run(
        "import_mattermost",
        seeds,
        80,
        checks::import_mattermost::check,
    );
}

#[test]
fn slack_exports_and_mrkdwn_are_imported_or_refused() {
    let mut seeds: Vec<Vec<u8>> = fixtures_in("zulip/slack_fixtures", "zip")
        .into_iter()
        .map(|(_, bytes)| with_selector(1, &bytes))
        .collect();
    seeds.push(with_selector(
        0,
        b"<@U1> *bold* _it_ ~gone~ <#C1|general> <#C9> <https://example.com|a link> <!here> \
          &amp; &lt;b&gt; `code` ```block``` :+1::skin-tone-3:",
    ));
    run("import_slack", seeds, 80, checks::import_slack::check);
}

#[test]
fn zulip_exports_are_imported_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tarball = super::import::zulip_export(dir.path());
    run(
        "import_zulip",
        vec![std::fs::read(tarball).unwrap()],
        40,
        checks::import_zulip::check,
    );
}

#[test]
fn json_web_tokens_are_verified_or_refused() {
    let claims = br#"{"email": "ana@example.com", "exp": 300000000, "iat": 1, "aud": "x"}"#;
    let token = "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJlbWFpbCI6ImFuYUBleGFtcGxlLmNvbSJ9.c2ln";
    let seeds = vec![with_selector(1, claims), with_selector(0, token.as_bytes())];
    run("jwt", seeds, 3000, checks::jwt::check);
}

#[test]
fn log_records_are_decoded_or_refused() {
    let frame = chronicle::store::frame::FrameBuf::starting(chronicle::ids::Seq(7), b"a record");
    let seeds = vec![
        frame.bytes().to_vec(),
        b"\x92\x01\xa4text".to_vec(),
        Vec::new(),
    ];
    run("log_record", seeds, 3000, checks::log_record::check);
}

#[test]
fn markdown_renders_without_script() {
    let seeds = vec![
        b"**bold** *it* ~~gone~~ `code` @**Alice** @_**Alice|7** #**general** #**general>t**\n\
          > quote\n\n```python\nprint(1)\n```\n- [x] list\n| a | b |\n|---|---|\n| 1 | 2 |\n\
          $$x^2$$ :smile: [link](https://example.com) <script>alert(1)</script> ![i](/x.png)"
            .to_vec(),
        b"```spoiler Title\nhidden\n```\n/me waves\n@*group* <time:2026-01-01T00:00:00Z>".to_vec(),
    ];
    run("markdown", seeds, 2000, checks::markdown::check);
}

#[test]
fn narrows_are_parsed_or_refused() {
    let seeds = vec![
        br#"[{"operator":"channel","operand":"general"},{"operator":"topic","operand":"t"}]"#
            .to_vec(),
        br#"[["is","starred"],{"operator":"dm","operand":[1,2],"negated":true}]"#.to_vec(),
        br#"[{"operator":"search","operand":"a \"b\" c"},{"operator":"id","operand":7}]"#.to_vec(),
    ];
    run("narrow", seeds, 3000, checks::narrow::check);
}

#[test]
fn parameters_are_decoded_or_refused() {
    let seeds = vec![
        b"anchor=123".to_vec(),
        b"to=[1,2,3]".to_vec(),
        b"apply_markdown=true".to_vec(),
        br#"narrow={"a":[1,{"b":null}]}"#.to_vec(),
    ];
    run("params", seeds, 3000, checks::params::check);
}

#[test]
fn saml_responses_are_checked_or_refused() {
    let seeds = fixtures_in("saml", "xml")
        .into_iter()
        .filter(|(path, _)| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("response-"))
        })
        .map(|(_, bytes)| bytes)
        .collect();
    run("saml_response", seeds, 300, checks::saml_response::check);
}

#[test]
fn scim_filters_are_parsed_or_refused() {
    let seeds = vec![
        br#"userName eq "ana@example.com""#.to_vec(),
        br#"emails[type eq "work" and value co "x"] or not (active eq true)"#.to_vec(),
        br#"meta.created gt "2026-01-01T00:00:00Z" and name.formatted sw "A""#.to_vec(),
    ];
    run("scim_filter", seeds, 3000, checks::scim_filter::check);
}

#[test]
fn upload_names_and_links_are_cleaned() {
    let seeds = vec![
        b"../../etc/passwd".to_vec(),
        b"see [a](/user_uploads/2/ab/cdef/report%20v2.pdf) and /user_uploads/2/x/y.png".to_vec(),
        b"\x89PNG\r\n\x1a\n name with spaces.tar.gz".to_vec(),
    ];
    run("upload_names", seeds, 3000, checks::upload_names::check);
}

#[test]
fn webhook_payloads_give_messages_an_ignore_or_a_refusal() {
    let integrations = chronicle::integrations::INTEGRATIONS;
    let mut seeds = Vec::new();
    for (index, integration) in integrations.iter().enumerate() {
        let dir = format!("webhooks/{}", integration.url_name);
        if !Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(&dir)
            .is_dir()
        {
            continue;
        }
        for (_, payload) in fixtures_in(&dir, "json") {
            // Every first byte that picks this payload's integration: every event header, with
            // and without the topic parameter.
            for selector in (0..=255u8).filter(|s| *s as usize % integrations.len() == index) {
                seeds.push(with_selector(selector, &payload));
            }
        }
    }
    assert!(seeds.len() > 100, "{} seeds", seeds.len());
    run("webhooks", seeds, 1500, checks::webhooks::check);
}

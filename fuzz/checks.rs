//! What each cargo-fuzz target checks, one module per target, shared by the libFuzzer
//! binaries in `fuzz_targets/` (coverage-guided, `scripts/fuzz.sh`) and by the test suite
//! (`tests/it/fuzz_seeds.rs`, which runs every check on its seeds and on a fixed series of
//! mutations of them in the ordinary debug build). Each `check` must answer any bytes without a
//! panic other than its own assertions.
#![allow(dead_code)]

/// `bytes` written as `file_name` and imported from `source` into a fresh directory: imported,
/// or refused with an error that leaves no data directory behind.
fn imported_or_refused(source: chronicle::import::Source, file_name: &str, bytes: &[u8]) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let export = tmp.path().join(file_name);
    std::fs::write(&export, bytes).expect("the export is written");
    let target = tmp.path().join("data");
    let options = chronicle::import::Options::default();
    if chronicle::import::run(source, &export, &target, &options).is_err() {
        assert!(!target.exists(), "a refused import left its data directory");
    }
}

pub mod avatar_image {
    //! Uploaded avatar and emoji pictures, and uploaded images with their thumbnails: any bytes
    //! are decoded within the bounds on size, dimensions and memory (the avatar bounds, the far
    //! smaller emoji bounds, the thumbnail bounds), or refused, and read for animation frames;
    //! never a crash.

    pub fn check(data: &[u8]) {
        let _ = chronicle::avatars::is_animated(data);
        if let Ok((small, medium)) = chronicle::avatars::resize_upload(data) {
            assert!(small.starts_with(b"\x89PNG") && medium.starts_with(b"\x89PNG"));
        }
        if let Ok(Some(small)) = chronicle::avatars::prepare_emoji(data) {
            assert!(small.starts_with(b"\x89PNG"));
        }
        if let Ok(still) = chronicle::avatars::still_frame(data) {
            assert!(still.starts_with(b"\x89PNG"));
        }
        if let Some((image, thumbnails)) = chronicle::thumbnails::make_all(data) {
            assert!(image.width > 0 && image.height > 0);
            for (format, webp) in thumbnails {
                // A lossless WebP, or for a JPEG a JPEG.
                let webp_file = webp.starts_with(b"RIFF") && &webp[8..12] == b"WEBP";
                assert!(webp_file || webp.starts_with(b"\xff\xd8\xff"));
                assert!(format.animated == image.animated || !format.animated);
            }
        }
    }
}

pub mod email_gateway {
    //! Incoming email (the email gateway): any bytes as a message read by the MIME parser, its text
    //! trimmed of quotes and signature, its subject made a topic, its bytes as an address; and any
    //! bytes as a client of the gateway's SMTP listener. Seeded with tests/fixtures/email.

    use chronicle::auth::ServerSecret;
    use chronicle::notify::gateway::{address, body, listener, read_email};

    pub fn check(data: &[u8]) {
        for prefer_html in [false, true] {
            if let Some(email) = read_email(data, prefer_html) {
                let _ = body::reply_text(&email.text, false, false);
                let _ = body::topic_from_subject(&email.subject);
            }
        }
        let text = String::from_utf8_lossy(data);
        let _ = address::parse(&ServerSecret::generate(), "gateway.test", &text);
        let (_, kept) = listener::converse(data);
        assert!(
            kept.iter().all(|(raw, _)| raw.len() <= 1024),
            "the size limit holds"
        );
    }
}

pub mod import_mattermost {
    //! Mattermost exports (issue 34): any bytes as an mmctl zip, or as a bare import.jsonl (the
    //! first byte picks which), are imported or refused with an error, never a crash, and a refused
    //! import leaves no data directory.

    pub fn check(data: &[u8]) {
        let Some((&selector, rest)) = data.split_first() else {
            return;
        };
        let name = if selector % 2 == 0 {
            "import.jsonl"
        } else {
            "export.zip"
        };
        super::imported_or_refused(chronicle::import::Source::Mattermost, name, rest);
    }
}

pub mod import_slack {
    //! Slack exports (issue 34): any bytes as an export zip are imported or refused with an error,
    //! never a crash, and a refused import leaves no data directory; any text converts from
    //! mrkdwn. The first byte picks which.

    use chronicle::import::mrkdwn::{convert, Names};

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

    pub fn check(data: &[u8]) {
        let Some((&selector, rest)) = data.split_first() else {
            return;
        };
        if selector % 4 == 0 {
            let _ = convert(&String::from_utf8_lossy(rest), &One);
            return;
        }
        super::imported_or_refused(chronicle::import::Source::Slack, "export.zip", rest);
    }
}

pub mod import_zulip {
    //! Zulip exports (issue 34): any bytes as an export tarball (`.tar.gz`) are imported or refused
    //! with an error, never a crash, and a refused import leaves no data directory.

    pub fn check(data: &[u8]) {
        super::imported_or_refused(
            chronicle::import::Source::Zulip,
            "zulip-export.tar.gz",
            data,
        );
    }
}

pub mod jwt {
    //! JSON Web Tokens (`POST /jwt/fetch_api_key`, `/accounts/login/jwt/`): any bytes as a token,
    //! and, to get past the signature, any JSON claims signed with the key.

    use chronicle::identity::jwt::{sign, verify, Algorithm, JwtKey};

    const KEY: &[u8] = b"the fuzzer's key, thirty-two bytes or more";

    pub fn check(data: &[u8]) {
        let key = JwtKey::new(KEY, vec![Algorithm::HS256, Algorithm::HS512]);
        let Some((first, rest)) = data.split_first() else {
            return;
        };
        let now = i64::from(*first) * 1_000_000;
        if first & 1 == 1 {
            if let Ok(claims) = serde_json::from_slice::<serde_json::Value>(rest) {
                let token = sign(&claims, KEY, Algorithm::HS512);
                let _ = verify(&token, &key, now);
            }
        }
        let _ = verify(&String::from_utf8_lossy(rest), &key, now);
    }
}

pub mod log_record {
    //! Stored log records: arbitrary bytes, and arbitrary bodies behind a valid checksum; and the
    //! same bytes read as a sled frame of records (ADR 0007).

    use chronicle::events::{record_link, Envelope};
    use chronicle::ids::Seq;
    use chronicle::store::frame;

    pub fn check(data: &[u8]) {
        let _ = Envelope::decode(Seq(1), data);
        let mut record = crc32fast::hash(data).to_be_bytes().to_vec();
        record.extend_from_slice(data);
        let _ = Envelope::decode(Seq(1), &record);
        let _ = record_link(&record);
        // A frame: every range it gives lies inside it, and its records decode or fail cleanly.
        if let Ok(ranges) = frame::parse(Seq(1), data) {
            assert!(!ranges.is_empty());
            for (n, range) in ranges.iter().enumerate() {
                let _ = Envelope::decode(Seq(1 + n as u64), &data[range.clone()]);
            }
            assert_eq!(
                frame::last_seq(Seq(1), data),
                Some(Seq(ranges.len() as u64))
            );
            assert!(frame::FrameBuf::reopen(Seq(1), data).is_some());
        }
        let _ = frame::last_seq(Seq(1), data);
        // A frame of the record itself round-trips.
        let built = frame::FrameBuf::starting(Seq(7), data);
        let ranges = frame::parse(Seq(7), built.bytes()).expect("a built frame parses");
        assert_eq!(&built.bytes()[ranges[0].clone()], data);
    }
}

pub mod markdown {
    //! Markdown of messages and descriptions: it renders, and raw HTML never passes through.

    use chronicle::markdown::{render_description, render_message, Resolver};

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

    pub fn check(data: &[u8]) {
        let source = String::from_utf8_lossy(data);
        let message = render_message(&source, &One);
        assert!(!message.html.contains("<script"), "{}", message.html);
        let description = render_description(&source);
        assert!(!description.contains("<script"), "{description}");
    }
}

pub mod narrow {
    //! Narrows, in either form (`[["channel","x"]]` or `[{"operator":...}]`), from any JSON.

    pub fn check(data: &[u8]) {
        let value = serde_json::from_slice::<serde_json::Value>(data).ok();
        let _ = chronicle::narrow::parse_narrow(value);
    }
}

pub mod params {
    //! Request parameters: any name and value, read as every kind a handler asks for.

    use chronicle::http::params::Params;

    pub fn check(data: &[u8]) {
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
    }
}

pub mod saml_response {
    //! SAML responses (`POST /complete/saml/`): any bytes as the response's XML, checked against
    //! the fixtures' identity provider as the server checks a posted one, and the bounded XML
    //! reader with its canonical form on the same bytes. Seeded with pysaml2's signed responses.

    use chronicle::identity::saml::{check_response_xml, parse_metadata};
    use chronicle::identity::xml::{Bounds, Document};

    const METADATA: &str = include_str!("../tests/fixtures/saml/idp-metadata.xml");
    const SP: &str = "https://chat.example.com";
    const ACS: &str = "https://chat.example.com/complete/saml/";

    pub fn check(data: &[u8]) {
        let meta = parse_metadata(METADATA.as_bytes(), None).expect("the fixture's metadata");
        if let Ok(doc) = Document::parse(data, Bounds::RESPONSE) {
            let _ = doc.exclusive_c14n(doc.root(), None, &["#default".to_owned()]);
        }
        // The fixtures' responses were issued on 2026-11-28 at 22:35 and hold for five minutes.
        let _ = check_response_xml(&meta, SP, ACS, data, "_request-1", 1_795_905_330_000);
    }
}

pub mod scim_filter {
    //! SCIM filters (`GET /scim/v2/Users?filter=`, `POST /scim/v2/Users/.search`): any text parsed,
    //! and what parses evaluated against a user resource. Neither may panic or overflow the stack.

    use chronicle::identity::scim_filter::{matches, parse};

    pub fn check(data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        if let Ok(filter) = parse(&text) {
            let user = serde_json::json!({
                "id": "7", "userName": "ana@example.com", "active": true,
                "name": {"formatted": "Ana Lima"},
                "emails": [{"value": "ana@example.com", "type": "work"}],
                "meta": {"created": "2026-01-01T00:00:00Z"},
            });
            let _ = matches(&filter, &user);
        }
    }
}

pub mod upload_names {
    //! What the server reads from an upload's untrusted parts: its file name, its first bytes, and
    //! the upload links in a message's text.

    pub fn check(data: &[u8]) {
        let _ = chronicle::uploads::sniff_image(data);
        let text = String::from_utf8_lossy(data);
        let name = chronicle::uploads::sanitize_name(&text);
        assert!(!name.is_empty() && name.len() <= 100);
        assert!(name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)));
        for path in chronicle::projections::attachments::linked_paths(&text) {
            assert!(!path.is_empty());
        }
    }
}

pub mod webhooks {
    //! Incoming webhook payloads: any JSON, with any of the event headers, through every
    //! integration's formatter gives messages, an ignore, or a refusal; never a crash.
    //! The first byte picks the integration, the event header and whether `topic` is set.

    use chronicle::integrations::{Request, INTEGRATIONS};

    pub const EVENTS: &[&str] = &[
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

    pub fn check(data: &[u8]) {
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
    }
}

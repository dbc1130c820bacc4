//! Moving in (issue 34): `chronicle import-from`, run on exports that others wrote (Zulip's own
//! test fixtures, kept under tests/fixtures/zulip with their licence), checked through the API
//! of the server that then serves the result.

use crate::messages::ids;
use crate::support::{bin, zuliprc_value, Creds, Server};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/zulip")
        .join(name)
}

/// Runs an import; its exit status, standard output and standard error.
fn import(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = Command::new(bin())
        .arg("import-from")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn report_of(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("import-report.json")).unwrap()).unwrap()
}

fn owner_of(dir: &Path) -> Creds {
    Creds {
        email: zuliprc_value(&dir.join("zuliprc"), "email"),
        key: zuliprc_value(&dir.join("zuliprc"), "key"),
    }
}

async fn channel_messages(server: &Server, creds: &Creds, channel: &str) -> Vec<Value> {
    let narrow = json!([{"operator": "channel", "operand": channel}]).to_string();
    let (status, body) = server
        .api(Some(creds))
        .get(
            "/messages",
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "1000"),
                ("narrow", &narrow),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_slack_export_comes_in_with_its_people_threads_mentions_and_reactions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let (ok, stdout, stderr) = import(&[
        "slack".as_ref(),
        fixture("slack_fixtures/test_slack_importer.zip").as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
        "--slack-users".as_ref(),
        fixture("slack_fixtures/user_data.json").as_os_str(),
        "--realm-name".as_ref(),
        "Plan 8".as_ref(),
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("82 messages"), "{stdout}");
    let report: Value = report_of(&dir);
    assert_eq!(report["source"], "slack");
    assert_eq!(report["counts"]["messages"], 82);
    assert_eq!(report["counts"]["users"], 4);
    assert_eq!(report["counts"]["channels"], 2);
    assert_eq!(report["skipped"], json!([]));
    // The primary owner owns it.
    let owner = owner_of(&dir);
    assert_eq!(owner.email, "rhtbot@protonmail.com");

    let server = Server::start_in(&dir).unwrap();
    let api = server.api(Some(&owner));
    let (_, settings) = server.api(None).get("/server_settings", &[]).await;
    assert_eq!(settings["realm_name"], "Plan 8");
    let (status, users) = api.get("/users", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let people: Vec<(String, String, u64, String)> = users["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["email"].as_str().unwrap().to_owned(),
                u["full_name"].as_str().unwrap().to_owned(),
                u["role"].as_u64().unwrap(),
                u["timezone"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let find = |email: &str| people.iter().find(|p| p.0 == email).unwrap().clone();
    assert_eq!(
        find("rhtbot@protonmail.com"),
        (
            "rhtbot@protonmail.com".into(),
            "Josef K.".into(),
            100,
            "Europe/Amsterdam".into()
        )
    );
    assert_eq!(find("rishiweb+0@mit.edu").1, "Rishi हिन्दी 汉语");
    assert_eq!(
        find("rishiweb+0@mit.edu").2,
        200,
        "Slack's admins are administrators"
    );
    assert_eq!(find("showell30@yahoo.com").2, 400);
    let id_of = |email: &str| {
        users["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["email"] == email)
            .unwrap()["user_id"]
            .as_u64()
            .unwrap()
    };
    let steve = id_of("showell30@yahoo.com");
    let rhea = id_of("rheaparekh12@gmail.com");

    let general = channel_messages(&server, &owner, "general").await;
    let random = channel_messages(&server, &owner, "random").await;
    assert_eq!(general.len() + random.len(), 82);
    // Time order is id order, and each message keeps its Slack time and sender.
    let mut all: Vec<&Value> = general.iter().chain(random.iter()).collect();
    all.sort_by_key(|m| m["id"].as_u64());
    assert!(all
        .windows(2)
        .all(|w| w[0]["timestamp"].as_i64() <= w[1]["timestamp"].as_i64()));
    let hi = general
        .iter()
        .find(|m| m["content"] == "Hi everybody.")
        .unwrap();
    assert_eq!(hi["timestamp"], 1516454482);
    assert_eq!(hi["sender_id"], steve);
    assert_eq!(hi["subject"], "imported from Slack");
    // Nothing imported from Slack is unread (its export keeps no read state).
    assert!(all
        .iter()
        .all(|m| m["flags"].as_array().unwrap().contains(&json!("read"))));

    // A Slack mention is a Zulip mention: the mentioned person's copy says so.
    let mention = general
        .iter()
        .find(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .ends_with("this is a test mention")
        })
        .unwrap();
    assert_eq!(
        mention["content"],
        format!("@**Rhea Parekh|{rhea}** this is a test mention")
    );
    // Entities decoded, links converted, a file kept as a link without the exporter's token.
    assert!(general.iter().any(|m| m["content"]
        .as_str()
        .unwrap()
        .contains("aggressively match <chars>://<chars>")));
    assert!(general.iter().any(|m| m["content"]
        .as_str()
        .unwrap()
        .contains("There is https://api.slack.com/incoming-webhooks")));
    let shared = general
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("This is Sammy."))
        .unwrap();
    assert!(shared["content"].as_str().unwrap().contains(
        "[IMG_0677.JPG](https://files.slack.com/files-pri/T5YFFM2QY-F8VDNT9FB/img_0677.jpg)"
    ));
    // The reaction on a message (one on a join notice went with the notice).
    let reacted = general
        .iter()
        .find(|m| m["content"] == "aoenaoeuta")
        .unwrap();
    let reactions = reacted["reactions"].as_array().unwrap();
    assert_eq!(reactions.len(), 1);
    assert_eq!(reactions[0]["emoji_code"], "1f636");
    // The edited message keeps its last edit time.
    let edited = general
        .iter()
        .find(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .ends_with("multiple mentioning")
        })
        .unwrap();
    assert_eq!(edited["last_edit_timestamp"], 1516468486);
    // A thread is a topic named after its date and first message; its replies follow it.
    let thread: Vec<&Value> = general
        .iter()
        .filter(|m| m["subject"] == "2018-01-23 rabbitduck")
        .collect();
    let texts: Vec<&str> = thread
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "***rabbitduck***",
            "thread 1?",
            "msg sent to general as well"
        ]
    );

    // The exporter's access token is nowhere in the organization or its log.
    server.stop();
    let dumped = crate::support::run_ok(["dump".as_ref(), "--data-dir".as_ref(), dir.as_os_str()]);
    assert!(!dumped.contains("xoxe"));
    // Rhea's copy of the message that mentions her has the mention flag.
    let dumped: Value = serde_json::from_str(&dumped).unwrap();
    let rheas = dumped["messages"]["user_messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["user_id"] == rhea)
        .unwrap();
    let copy = rheas["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row[0] == mention["id"])
        .unwrap();
    assert_eq!(copy[1], json!(["read", "mentioned"]));
    let log = crate::support::run_ok(["log".as_ref(), "--data-dir".as_ref(), dir.as_os_str()]);
    assert!(!log.contains("xoxe"));
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines[0].contains("ImportStarted"), "{}", lines[0]);
    assert!(lines[0].contains("source=\"slack\""), "{}", lines[0]);
    assert!(lines.last().unwrap().contains("ImportFinished"));
    // `--type MessageSent` lists the imported messages.
    let sent = crate::support::run_ok([
        "log".as_ref(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
        "--type".as_ref(),
        "MessageSent".as_ref(),
    ]);
    assert_eq!(sent.lines().count(), 82);
    let verified =
        crate::support::run_ok(["verify".as_ref(), "--data-dir".as_ref(), dir.as_os_str()]);
    assert!(verified.contains("chain: intact"), "{verified}");
}

#[tokio::test]
async fn a_slack_export_without_addresses_and_with_unicode_names_comes_in() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let (ok, _, stderr) = import(&[
        "slack".as_ref(),
        fixture("slack_fixtures/test_unicode_slack_importer.zip").as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let owner = owner_of(&dir);
    assert!(!owner.email.ends_with("@slack.invalid"), "{}", owner.email);
    // An export without addresses (older ones have none) and no users.list beside it: each
    // person gets a placeholder address, and the report says so.
    let bare = tmp.path().join("bare");
    let (ok, _, stderr) = import(&[
        "slack".as_ref(),
        fixture("slack_fixtures/test_slack_importer.zip").as_os_str(),
        "--data-dir".as_ref(),
        bare.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let report: Value = report_of(&bare);
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 4, "{skipped:?}");
    assert!(skipped.iter().all(|s| s["kind"] == "email"
        && s["why"]
            .as_str()
            .unwrap()
            .contains("@slack.invalid stands in")));
    assert_eq!(owner_of(&bare).email, "k._.u6006p1cn@slack.invalid");
    let server = Server::start_in(&dir).unwrap();
    let (status, channels) = server.api(Some(&owner)).get("/streams", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = channels["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // The zip does not mark its names UTF-8; they are.
    assert!(names.contains(&"チャネル"), "{names:?}");
    let messages = channel_messages(&server, &owner, "チャネル").await;
    assert!(!messages.is_empty());
}

/// A zip of `(name, bytes)` entries, written as Slack writes them (no UTF-8 flag needed).
fn zip_of(path: &Path, entries: &[(&str, &[u8])]) {
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in entries {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

const USERS: &str = r#"[{"id": "U1", "name": "ada", "real_name": "Ada", "is_primary_owner": true,
    "profile": {"email": "ada@example.com"}},
   {"id": "U2", "name": "bob", "real_name": "Bob", "profile": {"email": "bob@example.com"}}]"#;
const CHANNELS: &str =
    r#"[{"id": "C1", "name": "general", "created": 1500000000, "members": ["U1", "U2"]}]"#;

#[test]
fn damaged_or_hostile_exports_are_refused_and_leave_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let refused = |export: &Path, extra: &[&str]| {
        let dir = tmp.path().join("target");
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "slack".as_ref(),
            export.as_os_str(),
            "--data-dir".as_ref(),
            dir.as_os_str(),
        ];
        args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
        let out = Command::new(bin())
            .arg("import-from")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{export:?} was not refused");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!dir.exists(), "a refused import left {dir:?}");
        // Nothing half-built beside it either.
        let left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("importing") || n.contains("unpacking"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        stderr
    };
    let path = |name: &str| tmp.path().join(name);

    std::fs::write(path("page.zip"), "<html>Sign in to Slack</html>").unwrap();
    assert!(refused(&path("page.zip"), &[]).contains("not a readable zip file"));

    zip_of(
        &path("climb.zip"),
        &[("users.json", USERS.as_bytes()), ("../evil.json", b"[]")],
    );
    let error = refused(&path("climb.zip"), &[]);
    assert!(
        error.contains("\"../evil.json\"") && error.contains("outside"),
        "{error}"
    );

    zip_of(
        &path("nousers.zip"),
        &[("channels.json", CHANNELS.as_bytes())],
    );
    assert!(refused(&path("nousers.zip"), &[]).contains("users.json: missing from the export"));

    zip_of(
        &path("truncated.zip"),
        &[
            ("users.json", USERS.as_bytes()),
            ("channels.json", &CHANNELS.as_bytes()[..40]),
        ],
    );
    let error = refused(&path("truncated.zip"), &[]);
    assert!(
        error.contains("channels.json: not valid JSON (line 1"),
        "{error}"
    );

    zip_of(
        &path("good.zip"),
        &[
            ("users.json", USERS.as_bytes()),
            ("channels.json", CHANNELS.as_bytes()),
        ],
    );
    let error = refused(&path("good.zip"), &["--owner-email", "eve@example.com"]);
    assert!(
        error.contains("nobody in the export has that address"),
        "{error}"
    );

    // A tarball that claims to expand to 2 GiB (Zulip's rule: more than 1 GiB and more than
    // ten times its size) is refused before anything is unpacked; the operator may allow more
    // for an export they trust, and then it is read (and found cut short).
    let bomb = path("bomb.tar.gz");
    {
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&bomb).unwrap(),
            flate2::Compression::default(),
        );
        let mut header = tar::Header::new_gnu();
        header.set_path("export/realm.json").unwrap();
        header.set_size(2 << 30);
        header.set_mode(0o644);
        header.set_cksum();
        let mut gz = gz;
        gz.write_all(header.as_bytes()).unwrap();
        gz.write_all(&[b' '; 4096]).unwrap();
        gz.finish().unwrap();
    }
    let error = refused(&bomb, &[]);
    assert!(
        error.contains("more than 1 GiB and more than ten times its own size")
            && error.contains("--max-expanded-gib"),
        "{error}"
    );
    let error = refused(&bomb, &["--max-expanded-gib", "3"]);
    assert!(error.contains("cut short"), "{error}");

    // A data directory that holds something is not imported into.
    let full = path("full");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(full.join("keep.txt"), "mine").unwrap();
    let out = Command::new(bin())
        .args(["import-from", "slack"])
        .arg(path("good.zip"))
        .arg("--data-dir")
        .arg(&full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"));
    assert_eq!(
        std::fs::read_to_string(full.join("keep.txt")).unwrap(),
        "mine"
    );
}

#[tokio::test]
async fn damage_confined_to_one_message_is_skipped_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let day = r#"[
        {"type": "message", "user": "U1", "text": "first *bold*", "ts": "1500000100.000100"},
        {"type": "message", "user": "U9", "text": "from nobody known", "ts": "1500000200.000100"},
        {"type": "message", "user": "U2", "text": "bad time", "ts": "NaN"},
        {"type": "message", "user": "U2", "text": "reply to <@U1>", "ts": "1500000300.000100",
         "reactions": [{"name": "thumbsup::skin-tone-3", "users": ["U1"], "count": 1},
                       {"name": "our_custom_parrot", "users": ["U2"], "count": 1}]}
    ]"#;
    let export = tmp.path().join("export.zip");
    zip_of(
        &export,
        &[
            ("users.json", USERS.as_bytes()),
            ("channels.json", CHANNELS.as_bytes()),
            ("general/2017-07-14.json", day.as_bytes()),
        ],
    );
    // An empty target directory is fine.
    let dir = tmp.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    let (ok, _, stderr) = import(&[
        "slack".as_ref(),
        export.as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
        "--owner-email".as_ref(),
        "BOB@example.com".as_ref(),
    ]);
    assert!(ok, "{stderr}");
    let report: Value = report_of(&dir);
    assert_eq!(report["counts"]["messages"], 2);
    let skipped: Vec<(String, String)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["at"].as_str().unwrap().to_owned(),
                s["why"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert_eq!(skipped[0].0, "general/2017-07-14.json, message 2");
    assert!(skipped[0].1.contains("U9"));
    assert_eq!(skipped[1].0, "general/2017-07-14.json, message 3");
    assert!(skipped[1].1.contains("NaN"));
    assert!(skipped[2].1.contains(":our_custom_parrot:"));
    // The named person owns it, promoted from member.
    let owner = owner_of(&dir);
    assert_eq!(owner.email, "bob@example.com");
    let server = Server::start_in(&dir).unwrap();
    let (_, me) = server.api(Some(&owner)).get("/users/me", &[]).await;
    assert_eq!(me["role"], 100);
    let messages = channel_messages(&server, &owner, "general").await;
    let contents: Vec<&str> = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents[0], "first **bold**");
    assert!(
        contents[1].starts_with("reply to @**Ada|"),
        "{}",
        contents[1]
    );
    // A skin tone is dropped, Slack's name mapped to Zulip's.
    assert_eq!(messages[1]["reactions"][0]["emoji_code"], "1f44d");
}

#[tokio::test]
async fn a_mattermost_export_comes_in_with_teams_threads_emoji_and_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // The older command line's export.json in its directory (exported_emoji/ beside it).
    let (ok, _, stderr) = import(&[
        "mattermost".as_ref(),
        fixture("mattermost_fixtures").as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let report: Value = report_of(&dir);
    assert_eq!(report["source"], "mattermost");
    assert_eq!(report["counts"]["users"], 5);
    assert_eq!(report["counts"]["channels"], 5);
    assert_eq!(report["counts"]["messages"], 21);
    assert_eq!(report["counts"]["channel folders"], 2);
    // The fixture's two emoji images are damaged (a PNG whose "\r\n" became "\n"): they are
    // refused and listed, and so are the reactions with them; nothing is lost silently.
    let skipped = report["skipped"].as_array().unwrap();
    let why = |text: &str| {
        skipped
            .iter()
            .filter(|s| s["why"].as_str().unwrap().contains(text))
            .count()
    };
    assert_eq!(why("not a PNG, GIF, JPEG or WebP image"), 2, "{skipped:?}");
    assert_eq!(why(":tick:"), 2, "{skipped:?}");
    // Mattermost's `grin` is Zulip's `grinning_face_with_smiling_eyes` (iamcal's names).
    assert_eq!(why(":grin:"), 0, "{skipped:?}");
    // The first system admin owns it.
    let owner = owner_of(&dir);
    assert_eq!(owner.email, "harry@zulip.com");
    let server = Server::start_in(&dir).unwrap();
    let api = server.api(Some(&owner));
    let (_, users) = api.get("/users", &[]).await;
    let ron = users["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["email"] == "ron@zulip.com")
        .unwrap();
    assert_eq!(ron["full_name"], "Ron Weasley");
    assert_eq!(ron["role"], 400);
    let ron_id = ron["user_id"].as_u64().unwrap();
    // Each team is a folder of its channels, named by their display names.
    let (_, streams) = api.get("/streams", &[]).await;
    let (_, folders) = api.get("/channel_folders", &[]).await;
    let folder_of = |name: &str| {
        let channel = streams["streams"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no channel {name}: {streams}"));
        folders["channel_folders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == channel["folder_id"])
            .unwrap()["name"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(folder_of("Gryffindor quidditch team"), "Iago Realm");
    assert_eq!(folder_of("Slytherin common room"), "Othello Team");
    let quidditch = channel_messages(&server, &owner, "Gryffindor quidditch team").await;
    let welcome = quidditch
        .iter()
        .find(|m| m["content"].as_str().unwrap().ends_with("Welcome mate!"))
        .unwrap();
    assert_eq!(
        welcome["content"],
        format!("@**Ron Weasley|{ron_id}** Welcome mate!")
    );
    assert_eq!(welcome["timestamp"], 1553166519);
    // Built-in emoji reactions come along with their reacting people and times.
    let hello = quidditch
        .iter()
        .find(|m| m["content"] == "Hello world")
        .unwrap();
    let names: Vec<&str> = hello["reactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["emoji_name"].as_str().unwrap())
        .collect();
    // Mattermost's `smile` is 😄 (Zulip's `big_smile`; Zulip's `smile` is 🙂).
    assert_eq!(names, ["big_smile", "map"]);
    let army = channel_messages(&server, &owner, "Dumbledores army").await;
    let everyone = army
        .iter()
        .find(|m| m["content"] == "hey everyone")
        .unwrap();
    assert_eq!(
        everyone["reactions"][0]["emoji_name"],
        "grinning_face_with_smiling_eyes"
    );
    // A post with a reply is a topic of its own, named after the post; the reply is in it.
    let army = channel_messages(&server, &owner, "Dumbledores army").await;
    let thread: Vec<&str> = army
        .iter()
        .filter(|m| m["subject"] == "2019-03-21 harry joined the channel.")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    // The reply was written before its root in the file's clock: time order is kept.
    assert_eq!(
        thread,
        ["The weather is so hot!", "harry joined the channel."]
    );
    assert!(army
        .iter()
        .filter(|m| !thread.contains(&m["content"].as_str().unwrap()))
        .all(|m| m["subject"] == "imported from Mattermost"));
}

#[tokio::test]
async fn mattermost_direct_messages_and_their_files_come_along() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let (ok, _, stderr) = import(&[
        "mattermost".as_ref(),
        fixture("mattermost_fixtures/direct_channel").as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
        "--owner-email".as_ref(),
        "ron@zulip.com".as_ref(),
    ]);
    assert!(ok, "{stderr}");
    let owner = owner_of(&dir);
    assert_eq!(owner.email, "ron@zulip.com");
    let server = Server::start_in(&dir).unwrap();
    let api = server.api(Some(&owner));
    let narrow = json!([{"operator": "is", "operand": "dm"}]).to_string();
    let (_, dms) = api
        .get(
            "/messages",
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "100"),
                ("narrow", &narrow),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    let dms = dms["messages"].as_array().unwrap();
    let contents: Vec<&str> = dms.iter().map(|m| m["content"].as_str().unwrap()).collect();
    // Ron's direct and group messages, in time order, control characters gone.
    assert!(contents.contains(&"Hello How Are you"), "{contents:?}");
    assert!(contents.contains(&"Who is going to Hogsmeade this weekend?"));
    assert!(
        !contents.iter().any(|c| c.contains("Here we go again")),
        "not Ron's"
    );
    let group = dms
        .iter()
        .find(|m| m["content"] == "I am going as well")
        .unwrap();
    assert_eq!(group["display_recipient"].as_array().unwrap().len(), 3);
    // The attached picture, with its bytes, linked from the message and downloadable.
    let with_file = dms
        .iter()
        .find(|m| m["content"].as_str().unwrap().starts_with("hey harry"))
        .unwrap();
    let content = with_file["content"].as_str().unwrap();
    let link = content
        .split("](")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap();
    assert!(link.starts_with("/user_uploads/"), "{content}");
    let downloaded = api.fetch(&format!("{}{link}", server.url)).await;
    assert_eq!(downloaded.status(), StatusCode::OK);
    // `chronicle erase` counts imported uploads as live: the file survives it.
    server.stop();
    crate::support::run_ok(["erase".as_ref(), "--data-dir".as_ref(), dir.as_os_str()]);
    let server = Server::start_in(&dir).unwrap();
    let api = server.api(Some(&owner));
    let downloaded = api.fetch(&format!("{}{link}", server.url)).await;
    assert_eq!(downloaded.status(), StatusCode::OK);
    let expected = std::fs::read(fixture(
        "mattermost_fixtures/direct_channel/data/20210622/teams/noteam/channels/mcrm7xee5bnpzn7u9ktsd91dwy/users/knq189b88fdxbdkeeasdynia4o/o3to4ezua3bajj31mzpkn96n5e/harry-ron.jpg",
    ))
    .unwrap();
    assert_eq!(
        downloaded.bytes().await.unwrap().as_ref(),
        expected.as_slice()
    );
}

#[tokio::test]
async fn a_mattermost_team_is_chosen_by_name_and_guests_stay_guests() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // A bare JSON Lines file; its emoji images are not beside it, so they are reported.
    let (ok, _, stderr) = import(&[
        "mattermost".as_ref(),
        fixture("mattermost_fixtures/guestExport.json").as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
        "--team".as_ref(),
        "slytherin".as_ref(),
    ]);
    assert!(ok, "{stderr}");
    let report: Value = report_of(&dir);
    assert_eq!(report["counts"]["channels"], 2, "{report}");
    assert!(report["counts"].get("channel folders").is_none());
    let dumped: Value = serde_json::from_str(&crate::support::run_ok([
        "dump".as_ref(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
        "--only".as_ref(),
        "users".as_ref(),
    ]))
    .unwrap();
    let text = dumped.to_string();
    assert!(text.contains("sirius@zulip.com"));
    assert!(!text.contains("ron@zulip.com"), "Ron is not in that team");
    assert!(report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["kind"] == "custom emoji"));

    let (ok, _, stderr) = import(&[
        "mattermost".as_ref(),
        fixture("mattermost_fixtures/export.json").as_os_str(),
        "--data-dir".as_ref(),
        tmp.path().join("other").as_os_str(),
        "--team".as_ref(),
        "hufflepuff".as_ref(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains(
            "--team hufflepuff: no such team in the export (it has: gryffindor, slytherin)"
        ),
        "{stderr}"
    );
    // An mmctl zip: import.jsonl with the emoji's image under data/, a reaction with it.
    let mut png = Vec::new();
    image::RgbaImage::from_pixel(16, 16, image::Rgba([200, 30, 30, 255]))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let lines = [
        json!({"type": "version", "version": 1}),
        json!({"type": "emoji", "emoji": {"name": "party-parrot", "image": "data/emoji/abc/image"}}),
        json!({"type": "team", "team": {"name": "core", "display_name": "Core", "type": "O"}}),
        json!({"type": "channel", "channel": {"team": "core", "name": "town-square", "display_name": "Town Square", "type": "O"}}),
        json!({"type": "user", "user": {"username": "ada", "email": "ada@example.com", "roles": "system_admin system_user",
            "teams": [{"name": "core", "channels": [{"name": "town-square", "last_viewed_at": 1700000000500_i64}]}]}}),
        json!({"type": "user", "user": {"username": "bob", "email": "bob@example.com", "roles": "system_user",
            "teams": [{"name": "core", "channels": [{"name": "town-square", "last_viewed_at": 1700000000000_i64}]}]}}),
        json!({"type": "post", "post": {"team": "core", "channel": "town-square", "user": "ada", "message": "first",
            "create_at": 1700000000000_i64, "flagged_by": ["bob"],
            "reactions": [{"user": "bob", "emoji_name": "party-parrot", "create_at": 1700000000100_i64}]}}),
        json!({"type": "post", "post": {"team": "core", "channel": "town-square", "user": "ada", "message": "second",
            "create_at": 1700000000400_i64, "type": "system_join_channel"}}),
        json!({"type": "post", "post": {"team": "core", "channel": "town-square", "user": "ada", "message": "third",
            "create_at": 1700000000450_i64, "edit_at": 1700000000900_i64}}),
    ];
    let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let zipped = tmp.path().join("mmctl.zip");
    zip_of(
        &zipped,
        &[
            ("import.jsonl", jsonl.as_bytes()),
            ("data/emoji/abc/image", &png),
        ],
    );
    let mmctl = tmp.path().join("mmctl");
    let (ok, _, stderr) = import(&[
        "mattermost".as_ref(),
        zipped.as_os_str(),
        "--data-dir".as_ref(),
        mmctl.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let report: Value = report_of(&mmctl);
    assert_eq!(report["counts"]["custom emoji"], 1, "{report}");
    assert_eq!(report["counts"]["notices dropped"], 1, "{report}");
    assert_eq!(report["skipped"], json!([]));
    let dumped: Value = serde_json::from_str(&crate::support::run_ok([
        "dump".as_ref(),
        "--data-dir".as_ref(),
        mmctl.as_os_str(),
    ]))
    .unwrap();
    let messages = dumped["messages"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["reactions"][0][1], "party-parrot");
    assert_eq!(messages[0]["reactions"][0][3], "realm_emoji");
    // Bob starred the first and last looked before the third: it is unread for him; Ada had
    // seen everything.
    let copies = |email: &str| {
        let id = dumped["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["email"] == email)
            .unwrap()["user_id"]
            .clone();
        dumped["messages"]["user_messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["user_id"] == id)
            .unwrap()["messages"]
            .clone()
    };
    let (first, third) = (messages[0]["id"].clone(), messages[1]["id"].clone());
    assert_eq!(
        copies("bob@example.com"),
        json!([[first, ["read", "starred"]], [third, []]])
    );
    assert_eq!(
        copies("ada@example.com"),
        json!([[first, ["read"]], [third, ["read"]]])
    );
    // Mattermost's edit_at is the message's last edit time.
    let server = Server::start_in(&mmctl).unwrap();
    let (_, third) = server
        .api(Some(&owner_of(&mmctl)))
        .get(&format!("/messages/{third}"), &[])
        .await;
    assert_eq!(
        third["message"]["last_edit_timestamp"], 1700000000,
        "{third}"
    );

    // A broken line stops it, naming the file and the line.
    let broken = tmp.path().join("import.jsonl");
    std::fs::write(
        &broken,
        "{\"type\":\"version\",\"version\":1}\n{\"type\":\"user\",\"user\":{\"username\":\n",
    )
    .unwrap();
    let (ok, _, stderr) = import(&[
        "mattermost".as_ref(),
        broken.as_os_str(),
        "--data-dir".as_ref(),
        tmp.path().join("third").as_os_str(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("import.jsonl: line 2 is not valid JSON"),
        "{stderr}"
    );
    assert!(!tmp.path().join("third").exists());
}

#[tokio::test]
async fn an_mmctl_export_of_mattermost_11_comes_in() {
    // `mmctl export` of Mattermost 11.1.0's sample data (Zulip's fixture, Apache-2.0): roles,
    // bots, group messages of up to five people, replies out of order in the file. The files
    // it attaches are not in our copy of it, and are reported.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let (ok, _, stderr) = import(&[
        "mattermost".as_ref(),
        fixture("mattermost_v11.1.0_fixtures/raw_mmctl_output/import.jsonl").as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let report: Value = report_of(&dir);
    // 50 posts, 50 direct posts and 22 replies, less 4 system notices.
    assert_eq!(report["counts"]["messages"], 118, "{report}");
    assert_eq!(report["counts"]["users"], 17);
    assert_eq!(report["counts"]["bots"], 3);
    assert_eq!(report["counts"]["channels"], 4);
    assert_eq!(report["counts"]["notices dropped"], 4);
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(
        skipped.iter().filter(|s| s["kind"] == "file").count(),
        3,
        "{skipped:?}"
    );
    let owner = owner_of(&dir);
    assert_eq!(owner.email, "sysadmin@sample.mattermost.com");
    let server = Server::start_in(&dir).unwrap();
    let api = server.api(Some(&owner));
    let (_, users) = api.get("/users", &[]).await;
    let members = users["members"].as_array().unwrap();
    let guest = members
        .iter()
        .find(|u| u["email"] == "guest@sample.mattermost.com")
        .unwrap();
    assert_eq!(guest["role"], 600);
    assert_eq!(guest["is_active"], false, "deleted in Mattermost");
    let owner_id = members.iter().find(|u| u["email"] == owner.email).unwrap()["user_id"].clone();
    let lori = members.iter().find(|u| u["full_name"] == "Lori").unwrap();
    assert_eq!(lori["is_bot"], true);
    assert_eq!(lori["bot_owner_id"], owner_id);
    // Replies follow their root in time order, in the root's topic.
    let channel = channel_messages(&server, &owner, "nostrum").await;
    let root = channel
        .iter()
        .find(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .starts_with("qui qui ipsum minus quibusdam error.")
        })
        .unwrap();
    let thread: Vec<&str> = channel
        .iter()
        .filter(|m| m["subject"] == root["subject"])
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(thread.len(), 3, "{thread:?}");
    assert!(thread[1].starts_with("saepe non numquam"), "{thread:?}");
    assert!(thread[2].starts_with("natus culpa vero"), "{thread:?}");
    assert!(root["subject"]
        .as_str()
        .unwrap()
        .starts_with("2026-01-20 qui qui ipsum"));
}

/// A Zulip 10.2 export as `manage.py export` lays it out (table and key names from Zulip's
/// `zerver/lib/export.py` at tag 10.2), of a small organization with one of each thing the
/// importer reads, as `zulip-export-test.tar.gz`.
pub(crate) fn zulip_export(dir: &Path) -> PathBuf {
    let root = dir.join("zulip-export-test");
    std::fs::create_dir_all(root.join("uploads/2/ab/Xy7_token/")).unwrap();
    std::fs::create_dir_all(root.join("emoji/2/emoji/images")).unwrap();
    let mut png = Vec::new();
    image::RgbaImage::from_pixel(20, 20, image::Rgba([10, 200, 30, 255]))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    std::fs::write(root.join("emoji/2/emoji/images/17.png"), &png).unwrap();
    // Zulip (since 5.0) keeps the image an emoji was made from beside it, and lists both.
    std::fs::write(root.join("emoji/2/emoji/images/17.png.original"), &png).unwrap();
    // Max's uploaded avatar: the original, and Zulip's thumbnail beside it.
    std::fs::create_dir_all(root.join("avatars/2")).unwrap();
    let mut face = Vec::new();
    image::RgbImage::from_pixel(300, 200, image::Rgb([200, 20, 30]))
        .write_to(
            &mut std::io::Cursor::new(&mut face),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    std::fs::write(root.join("avatars/2/5f2b.original"), &face).unwrap();
    std::fs::write(root.join("avatars/2/5f2b.png"), &png).unwrap();
    std::fs::write(
        root.join("uploads/2/ab/Xy7_token/notes.txt"),
        b"the minutes\n",
    )
    .unwrap();
    let user = |id: u64, email: &str, name: &str, role: u64, active: bool| {
        json!({"id": id, "email": email, "delivery_email": email, "full_name": name, "role": role,
               "is_active": active, "is_bot": false, "bot_type": null, "bot_owner": null,
               "is_mirror_dummy": false, "timezone": "Asia/Tokyo", "date_joined": 1600000000.5,
               "realm": 2, "avatar_source": "G"})
    };
    let mut bot = user(15, "helper-bot@zulip.example", "Helper", 400, true);
    bot["is_bot"] = json!(true);
    bot["bot_type"] = json!(1);
    bot["bot_owner"] = json!(12);
    let realm = json!({
        "zerver_realm": [{"id": 2, "name": "Zulip Org", "string_id": "zulip",
                          "description": "Where we were", "date_created": 1590000000.0}],
        "zerver_userprofile": [
            user(11, "olivia@zulip.example", "Olivia", 100, true),
            user(12, "max@zulip.example", "Max", 400, true),
            user(13, "gus@zulip.example", "Gus", 600, true),
            user(14, "gone@zulip.example", "Gone", 400, false),
            bot,
        ],
        "zerver_userprofile_mirrordummy": [],
        "zerver_userprofile_crossrealm": [{"id": 1, "email": "notification-bot@zulip.com", "recipient_id": 1}],
        "zerver_stream": [
            {"id": 21, "name": "general", "description": "Everyone", "invite_only": false,
             "history_public_to_subscribers": true, "is_web_public": false, "deactivated": false,
             "date_created": 1590000100.0, "creator": 11, "realm": 2, "recipient": 32},
            {"id": 22, "name": "secret", "description": "", "invite_only": true,
             "history_public_to_subscribers": false, "is_web_public": false, "deactivated": false,
             "date_created": 1590000200.0, "creator": 12, "realm": 2, "recipient": 33},
            {"id": 23, "name": "old", "description": "", "invite_only": false,
             "history_public_to_subscribers": true, "is_web_public": false, "deactivated": true,
             "date_created": 1590000300.0, "creator": null, "realm": 2, "recipient": 34},
        ],
        "zerver_defaultstream": [{"id": 1, "stream": 21, "realm": 2}],
        "zerver_recipient": [
            {"id": 1, "type": 1, "type_id": 1},
            {"id": 31, "type": 1, "type_id": 11}, {"id": 35, "type": 1, "type_id": 12},
            {"id": 36, "type": 1, "type_id": 13},
            {"id": 32, "type": 2, "type_id": 21}, {"id": 33, "type": 2, "type_id": 22},
            {"id": 34, "type": 2, "type_id": 23},
            {"id": 40, "type": 3, "type_id": 5},
        ],
        "zerver_huddle": [{"id": 5, "huddle_hash": "x", "recipient": 40, "group_size": 3}],
        "zerver_subscription": [
            {"id": 1, "user_profile": 11, "recipient": 32, "active": true, "is_muted": false, "color": "#76ce90", "pin_to_top": true, "desktop_notifications": null},
            {"id": 2, "user_profile": 12, "recipient": 32, "active": true, "is_muted": true, "color": "#e79ab5", "pin_to_top": false, "email_notifications": true},
            {"id": 3, "user_profile": 13, "recipient": 32, "active": true, "is_muted": false, "color": "#a6c7e5", "pin_to_top": false},
            {"id": 4, "user_profile": 11, "recipient": 33, "active": true, "is_muted": false, "color": "#bfd56f", "pin_to_top": false},
            {"id": 5, "user_profile": 12, "recipient": 33, "active": true, "is_muted": false, "color": "#bfd56f", "pin_to_top": false},
            {"id": 6, "user_profile": 11, "recipient": 40, "active": true},
            {"id": 7, "user_profile": 12, "recipient": 40, "active": true},
            {"id": 8, "user_profile": 13, "recipient": 40, "active": true},
            // Gus joined the private channel after its message; Gone left general.
            {"id": 9, "user_profile": 13, "recipient": 33, "active": true, "is_muted": false, "color": "#bfd56f", "pin_to_top": false},
            {"id": 10, "user_profile": 14, "recipient": 32, "active": false, "is_muted": false, "color": "#76ce90", "pin_to_top": false},
        ],
        "zerver_realmemoji": [{"id": 17, "name": "zulip_party", "file_name": "17.png", "author": 11, "deactivated": false, "is_animated": false, "realm": 2}],
        "zerver_reaction": [
            {"id": 1, "message": 103, "user_profile": 12, "emoji_name": "+1", "emoji_code": "1f44d", "reaction_type": "unicode_emoji"},
            {"id": 2, "message": 103, "user_profile": 13, "emoji_name": "zulip_party", "emoji_code": "17", "reaction_type": "realm_emoji"},
        ],
        "zerver_usertopic": [{"id": 1, "user_profile": 12, "stream": 21, "recipient": 32, "topic_name": "plans", "last_updated": 1600000500.0, "visibility_policy": 3}],
        "zerver_muteduser": [{"id": 1, "user_profile": 13, "muted_user": 12, "date_muted": 1600000600.0}],
        "zerver_usergroup": [{"id": 50, "realm": 2}, {"id": 51, "realm": 2}],
        "zerver_namedusergroup": [
            {"usergroup_ptr": 50, "name": "role:members", "description": "", "is_system_group": true, "deactivated": false},
            {"usergroup_ptr": 51, "name": "design", "description": "The design team", "is_system_group": false, "deactivated": false},
        ],
        "zerver_usergroupmembership": [{"id": 1, "user_group": 51, "user_profile": 12}, {"id": 2, "user_group": 51, "user_profile": 13}],
        "zerver_realmfilter": [{"id": 3, "realm": 2, "pattern": "#(?P<id>[0-9]+)", "url_template": "https://github.com/zulip/zulip/issues/{id}", "order": 0}],
        "zerver_customprofilefield": [
            {"id": 7, "realm": 2, "name": "Team", "hint": "", "order": 1, "field_type": 3,
             "field_data": "{\"0\": {\"text\": \"Design\", \"order\": \"1\"}, \"1\": {\"text\": \"Ops\", \"order\": \"2\"}}",
             "display_in_profile_summary": true, "required": false, "editable_by_user": true},
            {"id": 8, "realm": 2, "name": "Mentor", "hint": "Who helps", "order": 2, "field_type": 6, "field_data": "",
             "display_in_profile_summary": false, "required": false, "editable_by_user": false},
            {"id": 9, "realm": 2, "name": "GitHub username", "hint": "", "order": 3, "field_type": 7, "field_data": "{\"subtype\": \"github\"}",
             "display_in_profile_summary": false, "required": false, "editable_by_user": true},
            // Damaged: its choices are not JSON.
            {"id": 10, "realm": 2, "name": "Floor", "hint": "", "order": 4, "field_type": 3, "field_data": "{", "required": false},
        ],
        "zerver_customprofilefieldvalue": [
            {"id": 1, "user_profile": 12, "field": 7, "value": "1", "rendered_value": null},
            {"id": 2, "user_profile": 13, "field": 8, "value": "[12]", "rendered_value": null},
            {"id": 3, "user_profile": 12, "field": 9, "value": "octocat", "rendered_value": null},
        ],
        "zerver_alertword": [{"id": 1, "realm": 2, "user_profile": 13, "word": "deploy"}],
        "zerver_userstatus": [
            {"id": 1, "user_profile": 12, "timestamp": 1600000700.0, "client": 1, "status_text": "On vacation",
             "emoji_name": "palm_tree", "emoji_code": "1f334", "reaction_type": "unicode_emoji"},
            {"id": 2, "user_profile": 13, "timestamp": 1600000800.0, "client": 1, "status_text": "",
             "emoji_name": "zulip_party", "emoji_code": "17", "reaction_type": "realm_emoji"},
        ],
    });
    let message = |id: u64, sender: u64, recipient: u64, subject: &str, content: &str, at: f64| {
        json!({"id": id, "sender": sender, "recipient": recipient, "realm": 2, "type": 1,
               "subject": subject, "content": content, "rendered_content": null,
               "date_sent": at, "sending_client": 1, "last_edit_time": null, "edit_history": null,
               "has_attachment": false, "has_image": false, "has_link": false, "is_channel_message": recipient == 32 || recipient == 33})
    };
    let mut edited = message(
        102,
        12,
        32,
        "plans",
        "Meet at 10, @**Olivia|11**",
        1600001000.0,
    );
    edited["last_edit_time"] = json!(1600001600.0);
    edited["edit_history"] = json!(serde_json::to_string(&json!([
        {"user_id": 12, "timestamp": 1600001600, "prev_content": "Meet at 9", "prev_rendered_content": "<p>Meet at 9</p>", "prev_rendered_content_version": 1},
    ])).unwrap());
    // Sent to "planning" with a typo; fixed and moved to "schedule" by Max, then moved to
    // "plans" by Olivia (Zulip's history: newest first, the older entry without `topic`).
    let mut moved = message(103, 13, 32, "plans", "Sounds good", 1600002000.0);
    moved["last_edit_time"] = json!(1600002600.0);
    moved["edit_history"] = json!(serde_json::to_string(&json!([
        {"user_id": 11, "timestamp": 1600002600, "prev_topic": "schedule", "topic": "plans"},
        {"user_id": 12, "timestamp": 1600002500, "prev_subject": "planning", "prev_content": "Sounds god",
         "prev_rendered_content": "<p>Sounds god</p>", "prev_rendered_content_version": 1},
    ])).unwrap());
    let mut with_file = message(
        104,
        11,
        33,
        "files",
        "[notes.txt](/user_uploads/2/ab/Xy7_token/notes.txt)",
        1600003000.0,
    );
    with_file["has_attachment"] = json!(true);
    // Two message files, as Zulip writes them (1,000 messages a file there); the copy of
    // message 105 Olivia holds is in the first, before its message.
    let first = json!({
        "zerver_message": [
            message(101, 11, 32, "plans", "Hello @**Max|12**", 1600000900.0),
            edited,
            moved,
            with_file,
        ],
        "zerver_usermessage": [
            {"id": 1, "user_profile": 11, "message": 101, "flags_mask": 1},
            {"id": 2, "user_profile": 12, "message": 101, "flags_mask": 1 + 8},
            {"id": 3, "user_profile": 13, "message": 101, "flags_mask": 1},
            {"id": 17, "user_profile": 14, "message": 101, "flags_mask": 1},
            {"id": 4, "user_profile": 11, "message": 102, "flags_mask": 8},
            {"id": 5, "user_profile": 12, "message": 102, "flags_mask": 1 + 2},
            {"id": 6, "user_profile": 13, "message": 102, "flags_mask": 1},
            {"id": 7, "user_profile": 11, "message": 103, "flags_mask": 1},
            {"id": 8, "user_profile": 12, "message": 103, "flags_mask": 1},
            {"id": 9, "user_profile": 13, "message": 103, "flags_mask": 1},
            {"id": 10, "user_profile": 11, "message": 104, "flags_mask": 1},
            {"id": 11, "user_profile": 12, "message": 104, "flags_mask": 0},
            {"id": 12, "user_profile": 11, "message": 105, "flags_mask": 0},
        ],
    });
    // Gone, who left general after 101, was back in it for 108 and left again.
    let second = json!({
        "zerver_message": [
            message(108, 11, 32, "plans", "Welcome back for a day", 1600007000.0),
            message(105, 12, 31, "", "A word in private", 1600004000.0),
            message(106, 13, 40, "", "All three of us", 1600005000.0),
            message(107, 1, 32, "channel events", "Max created a new channel", 1600006000.0),
        ],
        "zerver_usermessage": [
            {"id": 13, "user_profile": 12, "message": 105, "flags_mask": 1},
            {"id": 14, "user_profile": 11, "message": 106, "flags_mask": 1},
            {"id": 15, "user_profile": 12, "message": 106, "flags_mask": 1},
            {"id": 16, "user_profile": 13, "message": 106, "flags_mask": 1},
            {"id": 18, "user_profile": 11, "message": 108, "flags_mask": 1},
            {"id": 19, "user_profile": 12, "message": 108, "flags_mask": 1},
            {"id": 20, "user_profile": 13, "message": 108, "flags_mask": 1},
            {"id": 21, "user_profile": 14, "message": 108, "flags_mask": 1},
        ],
    });
    let write = |name: &str, value: &Value| {
        std::fs::write(root.join(name), serde_json::to_vec_pretty(value).unwrap()).unwrap();
    };
    write("realm.json", &realm);
    write("messages-000001.json", &first);
    write("messages-000002.json", &second);
    write("attachment.json", &json!({"zerver_attachment": []}));
    write(
        "migration_status.json",
        &json!({"migrations_by_app": {}, "zulip_version": "10.2"}),
    );
    write(
        "uploads/records.json",
        &json!([{"realm_id": 2, "user_profile_id": 11, "path": "2/ab/Xy7_token/notes.txt",
                 "s3_path": "2/ab/Xy7_token/notes.txt", "size": 12, "content_type": "text/plain",
                 "last_modified": 1600002900.0}]),
    );
    write(
        "avatars/records.json",
        &json!([
            {"realm_id": 2, "user_profile_id": 12, "user_profile_email": "max@zulip.example",
             "avatar_version": 2, "s3_path": "2/5f2b.original", "path": "2/5f2b.original",
             "size": face.len(), "last_modified": 1600000000.0, "content_type": "image/jpeg"},
            {"realm_id": 2, "user_profile_id": 12, "user_profile_email": "max@zulip.example",
             "avatar_version": 2, "s3_path": "2/5f2b.png", "path": "2/5f2b.png",
             "size": png.len(), "last_modified": 1600000000.0, "content_type": "image/png"},
        ]),
    );
    write(
        "emoji/records.json",
        &json!([{"realm_id": 2, "author": 11, "path": "2/emoji/images/17.png",
                 "s3_path": "2/emoji/images/17.png", "file_name": "17.png",
                 "name": "zulip_party", "deactivated": false},
                {"realm_id": 2, "author": 11, "path": "2/emoji/images/17.png.original",
                 "s3_path": "2/emoji/images/17.png.original", "file_name": "17.png",
                 "name": "zulip_party", "deactivated": false}]),
    );
    // The tarball, as `tar -czf` writes it: one top-level directory.
    let tarball = dir.join("zulip-export-test.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&tarball).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    tar.append_dir_all("zulip-export-test", &root).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    tarball
}

#[tokio::test]
async fn a_zulip_export_comes_in_with_ids_renumbered_history_flags_and_files() {
    let tmp = tempfile::tempdir().unwrap();
    let tarball = zulip_export(tmp.path());
    let dir = tmp.path().join("data");
    let (ok, _, stderr) = import(&[
        "zulip".as_ref(),
        tarball.as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let report: Value = report_of(&dir);
    assert_eq!(report["counts"]["messages"], 7, "{report}");
    assert_eq!(
        report["counts"]["messages from Zulip's system bots left out"],
        1
    );
    assert_eq!(report["counts"]["users"], 4);
    assert_eq!(report["counts"]["bots"], 1);
    assert_eq!(report["counts"]["edits"], 2);
    assert_eq!(report["counts"]["topic moves"], 2);
    assert_eq!(report["counts"]["custom emoji"], 1);
    assert_eq!(report["counts"]["files"], 1);
    assert_eq!(report["counts"]["avatars"], 1);
    assert_eq!(report["counts"]["linkifiers"], 1);
    assert_eq!(report["counts"]["profile values"], 3);
    assert_eq!(report["counts"]["statuses"], 2);
    // The one damaged object: a dropdown field whose choices are not JSON.
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{report}");
    assert_eq!(
        skipped[0]["at"],
        "zulip-export-test/realm.json: profile field 10"
    );
    // Nothing left unpacked beside it.
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let owner = owner_of(&dir);
    assert_eq!(owner.email, "olivia@zulip.example");
    let server = Server::start_in(&dir).unwrap();
    let api = server.api(Some(&owner));
    let (_, settings) = server.api(None).get("/server_settings", &[]).await;
    assert_eq!(settings["realm_name"], "Zulip Org");
    let (_, users) = api.get("/users", &[]).await;
    let member = |email: &str| {
        users["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["email"] == email)
            .unwrap()
            .clone()
    };
    let max = member("max@zulip.example");
    assert_eq!(member("gus@zulip.example")["role"], 600);
    assert_eq!(member("gone@zulip.example")["is_active"], false);
    assert_eq!(
        member("helper-bot@zulip.example")["bot_owner_id"],
        max["user_id"]
    );
    assert_eq!(member("olivia@zulip.example")["timezone"], "Asia/Tokyo");
    // Max's uploaded avatar: the original, cropped to its centre and resized as an upload is.
    let avatar = api.fetch(max["avatar_url"].as_str().unwrap()).await;
    assert_eq!(avatar.status(), StatusCode::OK);
    let avatar = image::load_from_memory(&avatar.bytes().await.unwrap())
        .unwrap()
        .to_rgb8();
    assert_eq!(avatar.dimensions(), (100, 100));
    let red = avatar.get_pixel(50, 50);
    assert!(red[0] > 150 && red[1] < 80, "{red:?}");
    let general = channel_messages(&server, &owner, "general").await;
    assert_eq!(
        general.len(),
        4,
        "the notification bot's notice is left out"
    );
    // The mention's id is the new one.
    assert_eq!(
        general[0]["content"],
        format!("Hello @**Max|{}**", max["user_id"])
    );
    assert_eq!(general[0]["timestamp"], 1600000900);
    // The edit is replayed: the history shows both texts, at Zulip's times.
    let edited = &general[1];
    assert!(edited["content"]
        .as_str()
        .unwrap()
        .starts_with("Meet at 10, @**Olivia|"));
    assert_eq!(edited["last_edit_timestamp"], 1600001600);
    let (_, history) = api
        .get(&format!("/messages/{}/history", edited["id"]), &[])
        .await;
    let history = history["message_history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[0]["content"], "Meet at 9");
    assert_eq!(history[0]["timestamp"], 1600001000);
    assert_eq!(history[1]["timestamp"], 1600001600);
    // A message moved twice: sent to "planning", then its content fixed and moved to
    // "schedule", then moved to "plans"; the history shows each topic at its time.
    let moved = &general[2];
    assert_eq!(moved["subject"], "plans");
    assert_eq!(moved["content"], "Sounds good");
    let (_, history) = api
        .get(&format!("/messages/{}/history", moved["id"]), &[])
        .await;
    let history = history["message_history"].as_array().unwrap();
    let topics: Vec<&Value> = history.iter().map(|h| &h["topic"]).collect();
    assert_eq!(topics, ["planning", "schedule", "plans"], "{history:?}");
    assert_eq!(history[0]["content"], "Sounds god");
    assert_eq!(history[1]["prev_topic"], "planning");
    assert_eq!(history[1]["timestamp"], 1600002500);
    assert_eq!(history[2]["timestamp"], 1600002600);
    // Reactions with a Unicode and the export's custom emoji.
    let reactions: Vec<&str> = general[2]["reactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reaction_type"].as_str().unwrap())
        .collect();
    assert_eq!(reactions, ["unicode_emoji", "realm_emoji"]);
    // The upload's link is rewritten to its new place, and it downloads.
    let secret = channel_messages(&server, &owner, "secret").await;
    let content = secret[0]["content"].as_str().unwrap();
    let link = content.split("](").nth(1).unwrap().trim_end_matches(')');
    assert_ne!(link, "/user_uploads/2/ab/Xy7_token/notes.txt");
    let file = api.fetch(&format!("{}{link}", server.url)).await;
    assert_eq!(file.bytes().await.unwrap().as_ref(), b"the minutes\n");
    // Channels: default, private, archived; Max's subscription keeps his settings.
    let (_, streams) = api.get("/streams", &[("include_all", "true")]).await;
    let names: Vec<&str> = streams["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"general") && names.contains(&"secret"),
        "{names:?}"
    );
    server.stop();

    // Per person: Max's flags as Zulip had them (read, starred, the one unread), Olivia's
    // unread direct message; a later reader of the history holds it read.
    let dumped: Value = serde_json::from_str(&crate::support::run_ok([
        "dump".as_ref(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
    ]))
    .unwrap();
    let copies = |user: &Value| {
        dumped["messages"]["user_messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["user_id"] == *user)
            .unwrap()["messages"]
            .clone()
    };
    let flags_of = |user: &Value, message: &Value| {
        copies(user)
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row[0] == *message)
            .map(|row| row[1].clone())
    };
    let olivia = member("olivia@zulip.example");
    assert_eq!(
        flags_of(&max["user_id"], &general[0]["id"]),
        Some(json!(["read", "mentioned"]))
    );
    assert_eq!(
        flags_of(&max["user_id"], &general[1]["id"]),
        Some(json!(["read", "starred"]))
    );
    assert_eq!(flags_of(&max["user_id"], &secret[0]["id"]), Some(json!([])));
    assert_eq!(
        flags_of(&olivia["user_id"], &general[1]["id"]),
        Some(json!(["mentioned"]))
    );
    // A later subscriber of a channel with protected history holds nothing from before; one
    // who left holds what came while they were in.
    let gus = member("gus@zulip.example");
    let gone = member("gone@zulip.example");
    assert_eq!(flags_of(&gus["user_id"], &secret[0]["id"]), None);
    assert_eq!(
        flags_of(&gone["user_id"], &general[0]["id"]),
        Some(json!(["read"]))
    );
    assert_eq!(flags_of(&gone["user_id"], &general[2]["id"]), None);
    // ...and what came while they were back, and nothing after.
    assert_eq!(general[3]["content"], "Welcome back for a day");
    assert_eq!(
        flags_of(&gone["user_id"], &general[3]["id"]),
        Some(json!(["read"]))
    );
    let general_id = general[0]["stream_id"].clone();
    let still_in: Vec<&Value> = dumped["channels"]["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["user_id"] == gone["user_id"] && s["stream_id"] == general_id)
        .collect();
    assert!(
        still_in.iter().all(|s| s["active"] == false),
        "{still_in:?}"
    );
    let topics = dumped["user_topics"].to_string();
    assert!(
        topics.contains(
            "\"topic_name\":\"plans\",\"visibility_policy\":3,\"last_updated\":1600000500"
        ),
        "{topics}"
    );
    assert!(dumped["groups"].to_string().contains("The design team"));
    assert!(dumped["muted_users"]
        .to_string()
        .contains(&max["user_id"].to_string()));
}

#[test]
fn a_tarball_that_climbs_out_or_lacks_realm_json_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let write_tar = |name: &str, entries: &[(&str, &[u8])]| {
        let path = tmp.path().join(name);
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        let mut tar = tar::Builder::new(gz);
        for (entry, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            // Written raw, so that a name tar::Builder itself would refuse gets in.
            let raw = &mut header.as_old_mut().name;
            raw[..entry.len()].copy_from_slice(entry.as_bytes());
            header.set_cksum();
            tar.append(&header, *bytes).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();
        path
    };
    let refused = |path: &Path| {
        let dir = tmp.path().join("data");
        let (ok, _, stderr) = import(&[
            "zulip".as_ref(),
            path.as_os_str(),
            "--data-dir".as_ref(),
            dir.as_os_str(),
        ]);
        assert!(!ok);
        assert!(!dir.exists());
        let left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        stderr
    };
    let climbing = write_tar("climb.tar.gz", &[("export/../../evil.json", b"{}")]);
    let error = refused(&climbing);
    assert!(error.contains("outside the export's directory"), "{error}");
    let empty = write_tar("empty.tar.gz", &[("export/stats.json", b"{}")]);
    let error = refused(&empty);
    assert!(
        error.contains("realm.json: missing from the export"),
        "{error}"
    );
    std::fs::write(tmp.path().join("cut.tar.gz"), [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
    let error = refused(&tmp.path().join("cut.tar.gz"));
    assert!(error.contains("damaged tar.gz"), "{error}");
}

/// The facts of a dump that must survive a round trip, with ids replaced by what they name
/// (emails, channel names, message positions).
fn comparable(dir: &Path) -> Value {
    let d: Value = serde_json::from_str(&crate::support::run_ok([
        "dump".as_ref(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
    ]))
    .unwrap();
    let email: std::collections::HashMap<u64, String> = d["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["user_id"].as_u64().unwrap(),
                u["email"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let of = |v: &Value| v.as_u64().map(|id| email[&id].clone());
    let channel: std::collections::HashMap<u64, String> = d["channels"]["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["stream_id"].as_u64().unwrap(),
                c["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut users: Vec<Value> = d["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            json!([
                u["email"],
                u["full_name"],
                u["role"],
                u["is_active"],
                u["bot_type"],
                u["timezone"],
                of(&u["bot_owner_id"]),
                u["avatar"]
            ])
        })
        .collect();
    users.sort_by_key(|v| v.to_string());
    let mut channels: Vec<Value> = d["channels"]["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            json!([
                c["name"],
                c["description"],
                c["invite_only"],
                c["is_default"],
                c["is_archived"],
                c["date_created_ms"]
            ])
        })
        .collect();
    channels.sort_by_key(|v| v.to_string());
    let mut subscriptions: Vec<Value> = d["channels"]["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            json!([
                of(&s["user_id"]),
                channel[&s["stream_id"].as_u64().unwrap()],
                s["color"],
                s["is_muted"],
                s["pin_to_top"]
            ])
        })
        .collect();
    subscriptions.sort_by_key(|v| v.to_string());
    let messages = d["messages"]["messages"].as_array().unwrap();
    let position: std::collections::HashMap<u64, usize> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| (m["id"].as_u64().unwrap(), i))
        .collect();
    // An upload's path is new in every import (as in Zulip's); its bytes are what count.
    let uploads: Vec<(String, String)> = d["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                format!("/user_uploads/{}", a["path_id"].as_str().unwrap()),
                format!("/user_uploads/sha256:{}", a["sha256"].as_str().unwrap()),
            )
        })
        .collect();
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| {
            let mut content = m["content"].as_str().unwrap().to_owned();
            for (path, bytes) in &uploads {
                content = content.replace(path.as_str(), bytes);
            }
            let recipient = &m["recipient"];
            let place = match recipient.get("Channel") {
                Some(c) => json!([channel[&c["channel_id"].as_u64().unwrap()], c["topic"]]),
                None => {
                    let mut who: Vec<String> = recipient["Direct"]["user_ids"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|u| email[&u.as_u64().unwrap()].clone())
                        .collect();
                    who.sort();
                    json!(who)
                }
            };
            let reactions: Vec<Value> = m["reactions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| json!([of(&r[0]), r[1], r[3]]))
                .collect();
            let edits: Vec<Value> = m["edits"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| {
                    json!([
                        of(&e["user_id"]),
                        e["timestamp"],
                        e["prev_content"],
                        e["prev_topic"]
                    ])
                })
                .collect();
            json!([
                of(&m["sender_id"]),
                place,
                content,
                m["timestamp"],
                reactions,
                edits
            ])
        })
        .collect();
    let mut flags: Vec<Value> = d["messages"]["user_messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|u| {
            let who = of(&u["user_id"]);
            let position = &position;
            u["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |row| json!([who, position[&row[0].as_u64().unwrap()], row[1]]))
        })
        .collect();
    flags.sort_by_key(|v| v.to_string());
    let emoji: Vec<Value> = d["custom_emoji"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!([e["name"], e["sha256"], e["deactivated"]]))
        .collect();
    let files: Vec<Value> = d["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| json!([of(&a["owner_id"]), a["name"], a["sha256"], a["size"]]))
        .collect();
    let groups: Vec<Value> = d["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["system"].is_null())
        .map(|g| {
            let members: Vec<Option<String>> =
                g["members"].as_array().unwrap().iter().map(of).collect();
            json!([g["name"], g["description"], members])
        })
        .collect();
    let topics: Vec<Value> = d["user_topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!([
                of(&t["user_id"]),
                channel[&t["stream_id"].as_u64().unwrap()],
                t["topic_name"],
                t["visibility_policy"],
                t["last_updated"]
            ])
        })
        .collect();
    let linkifiers: Vec<Value> = d["linkifiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["spec"].clone())
        .collect();
    let fields = &d["custom_profile_fields"]["fields"];
    let field_name: std::collections::HashMap<String, Value> = fields
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["id"].to_string(), f["spec"]["name"].clone()))
        .collect();
    let mut values: Vec<Value> = d["custom_profile_fields"]["values"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(user, v)| {
            let who = email[&user.parse::<u64>().unwrap()].clone();
            let field_name = &field_name;
            let email = &email;
            v.as_object().unwrap().iter().map(move |(field, value)| {
                // A users field names people by id.
                let value = match serde_json::from_str::<Vec<u64>>(value.as_str().unwrap()) {
                    Ok(ids) => json!(ids.iter().map(|i| email[i].clone()).collect::<Vec<_>>()),
                    Err(_) => value.clone(),
                };
                json!([who, field_name[field], value])
            })
        })
        .collect();
    values.sort_by_key(|v| v.to_string());
    let keyed_by_email = |v: &Value| -> Value {
        v.as_object()
            .unwrap()
            .iter()
            .map(|(user, x)| (email[&user.parse::<u64>().unwrap()].clone(), x.clone()))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let mut statuses = keyed_by_email(&d["user_status"]);
    // A custom emoji's code is its id: compared by name.
    for status in statuses.as_object_mut().unwrap().values_mut() {
        if status["reaction_type"] == "realm_emoji" {
            status["emoji_code"] = json!("(custom)");
        }
    }
    json!({"realm": [d["realm"]["name"], d["realm"]["description"]], "users": users,
           "linkifiers": linkifiers, "profile_fields": fields.as_array().unwrap().iter().map(|f| f["spec"].clone()).collect::<Vec<_>>(),
           "profile_values": values, "statuses": statuses,
           "alert_words": keyed_by_email(&d["alert_words"]),
           "channels": channels, "subscriptions": subscriptions, "messages": messages,
           "flags": flags, "emoji": emoji, "files": files, "groups": groups, "topics": topics,
           "muted": d["muted_users"].as_object().unwrap().len()})
}

#[test]
fn an_organization_exported_in_zulips_format_comes_back_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    // An organization with one of everything the format carries: a Zulip export's import.
    let first = tmp.path().join("first");
    let (ok, _, stderr) = import(&[
        "zulip".as_ref(),
        zulip_export(tmp.path()).as_os_str(),
        "--data-dir".as_ref(),
        first.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    // Out in Zulip's format (the server stopped), and into a fresh data directory.
    let tarball = tmp.path().join("out.tar.gz");
    let out = crate::support::run_ok([
        "export-to".as_ref(),
        "zulip".as_ref(),
        "--data-dir".as_ref(),
        first.as_os_str(),
        "--out".as_ref(),
        tarball.as_os_str(),
    ]);
    assert!(out.contains("7 messages"), "{out}");
    let second = tmp.path().join("second");
    let (ok, _, stderr) = import(&[
        "zulip".as_ref(),
        tarball.as_os_str(),
        "--data-dir".as_ref(),
        second.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let (a, b) = (comparable(&first), comparable(&second));
    // The organization's settings came in from Zulip's tables, through the server's rules.
    assert_eq!(
        a["linkifiers"],
        json!([{"pattern": "#(?P<id>[0-9]+)", "url_template": "https://github.com/zulip/zulip/issues/{id}",
                "example_input": null, "reverse_template": null, "alternative_url_templates": []}])
    );
    let names: Vec<&Value> = a["profile_fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["name"])
        .collect();
    assert_eq!(names, ["Team", "Mentor", "GitHub username"]);
    assert_eq!(
        a["profile_values"],
        json!([
            ["gus@zulip.example", "Mentor", ["max@zulip.example"]],
            ["max@zulip.example", "GitHub username", "octocat"],
            ["max@zulip.example", "Team", "1"]
        ])
    );
    assert_eq!(a["alert_words"], json!({"gus@zulip.example": ["deploy"]}));
    assert_eq!(
        a["statuses"]["max@zulip.example"]["status_text"],
        "On vacation"
    );
    assert_eq!(a["statuses"]["max@zulip.example"]["emoji_code"], "1f334");
    assert_eq!(
        a["statuses"]["gus@zulip.example"]["emoji_name"],
        "zulip_party"
    );
    let report = report_of(&first);
    assert!(
        report["skipped"].as_array().unwrap().iter().any(
            |s| s["kind"] == "profile field" && s["why"].as_str().unwrap().contains("not JSON")
        ),
        "{report}"
    );
    for key in a.as_object().unwrap().keys() {
        assert_eq!(a[key], b[key], "{key} differs after the round trip");
    }
    // The tarball holds one directory, laid out as Zulip's.
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(&tarball)
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&listing.stdout);
    for name in [
        "zulip-export-chronicle/realm.json",
        "zulip-export-chronicle/messages-000001.json",
        "zulip-export-chronicle/attachment.json",
        "zulip-export-chronicle/migration_status.json",
        "zulip-export-chronicle/uploads/records.json",
        "zulip-export-chronicle/emoji/records.json",
    ] {
        assert!(names.lines().any(|l| l == name), "{name} missing: {names}");
    }
    // Zulip 10.2's migrations, app by app, as its `manage.py import` compares them.
    let status = Command::new("tar")
        .arg("-xzOf")
        .arg(&tarball)
        .arg("zulip-export-chronicle/migration_status.json")
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["zulip_version"], "10.2");
    let zerver = status["migrations_by_app"]["zerver"].as_array().unwrap();
    assert_eq!(zerver.len(), 129);
    assert_eq!(
        zerver[0],
        "[X] 0001_squashed_0569 (545 squashed migrations)"
    );
    assert_eq!(
        zerver.last().unwrap(),
        "[X] 0697_empty_topic_name_for_dms_from_third_party_imports"
    );
    assert_eq!(
        status["migrations_by_app"]["two_factor"],
        json!(["(no migrations)"])
    );
}

/// What a queue holds so far, without waiting.
async fn queued_events(api: &crate::support::Api, queue_id: &str) -> Vec<Value> {
    let (status, body) = api
        .get(
            "/events",
            &[
                ("queue_id", queue_id),
                ("last_event_id", "-1"),
                ("dont_block", "true"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["events"].as_array().unwrap().clone()
}

#[tokio::test]
async fn administrators_export_the_public_data_through_the_api() {
    let server = Server::start();
    let owner = server.owner();
    let api = server.api(Some(&owner));
    let (_, member) = server.create_member("mia@example.com", "Mia").await;
    let subscribe = |name: &str, private: bool| {
        let subscriptions = json!([{"name": name}]).to_string();
        let invite_only = private.to_string();
        let api = server.api(Some(&owner));
        async move {
            let (status, body) = api
                .post(
                    "/users/me/subscriptions",
                    &[
                        ("subscriptions", &subscriptions),
                        ("invite_only", &invite_only),
                    ],
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    subscribe("lobby", false).await;
    subscribe("board", true).await;
    for (to, content) in [("lobby", "public words"), ("board", "board secrets")] {
        let (status, body) = api
            .post(
                "/messages",
                &[
                    ("type", "stream"),
                    ("to", to),
                    ("topic", "t"),
                    ("content", content),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = api
        .post(
            "/messages",
            &[("type", "direct"), ("to", "[2]"), ("content", "between us")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, queue) = api
        .post("/register", &[("event_types", r#"["realm_export"]"#)])
        .await;
    let queue_id = queue["queue_id"].as_str().unwrap().to_owned();

    // Members may not.
    let (status, body) = server.api(Some(&member)).post("/export/realm", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["msg"], "Must be an organization administrator");
    let (status, body) = api.post("/export/realm", &[("export_type", "7")]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = api.post("/export/realm", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["id"].as_u64().unwrap();
    let (_, listed) = api.get("/export/realm", &[]).await;
    let export = listed["exports"][0].clone();
    assert_eq!(export["id"], id);
    assert_eq!(export["pending"], false);
    assert_eq!(export["export_type"], 1);
    assert!(export["deleted_timestamp"].is_null());
    // The administrators hear of it.
    let events = queued_events(&api, &queue_id).await;
    let told = events
        .iter()
        .find(|e| e["type"] == "realm_export")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(told["exports"][0]["id"], id);
    // The tarball, for administrators only.
    let url = export["export_url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/user_uploads/exports/", server.url)),
        "{url}"
    );
    let refused = server.api(Some(&member)).fetch(url).await;
    assert_ne!(refused.status(), StatusCode::OK);
    let tarball = api.fetch(url).await;
    assert_eq!(tarball.status(), StatusCode::OK);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("export.tar.gz");
    std::fs::write(&file, tarball.bytes().await.unwrap()).unwrap();
    // What it holds: the public channel's message, not the private one's nor the direct one.
    let dir = tmp.path().join("data");
    let (ok, _, stderr) = import(&[
        "zulip".as_ref(),
        file.as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let dumped = crate::support::run_ok(["dump".as_ref(), "--data-dir".as_ref(), dir.as_os_str()]);
    assert!(dumped.contains("public words"));
    assert!(!dumped.contains("board secrets") && !dumped.contains("between us"));
    // Deleted: listed as such, no longer downloadable, not deleted twice.
    let (status, body) = api.delete(&format!("/export/realm/{id}"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, listed) = api.get("/export/realm", &[]).await;
    assert!(
        listed["exports"][0]["deleted_timestamp"].is_number(),
        "{listed}"
    );
    assert!(listed["exports"][0]["export_url"].is_null());
    assert_ne!(api.fetch(url).await.status(), StatusCode::OK);
    let (status, body) = api.delete(&format!("/export/realm/{id}"), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "Export already deleted");
    let (_, body) = api.delete("/export/realm/99", &[]).await;
    assert_eq!(body["msg"], "Invalid data export ID");
}

#[tokio::test]
async fn an_export_with_consent_holds_the_private_data_of_those_who_consented() {
    let server = Server::start();
    let owner = server.owner();
    let api = server.api(Some(&owner));
    let (mia_id, mia) = server.create_member("mia@example.com", "Mia").await;
    let (ned_id, _) = server.create_member("ned@example.com", "Ned").await;
    let (_, me) = api.get("/users/me", &[]).await;
    let owner_id = me["user_id"].as_u64().unwrap();
    let (_, queue) = api
        .post(
            "/register",
            &[("event_types", r#"["realm_export_consent"]"#)],
        )
        .await;
    let queue_id = queue["queue_id"].as_str().unwrap().to_owned();
    // The owner consents; Mia and Ned do not.
    let (status, body) = api
        .call(
            reqwest::Method::PATCH,
            "/settings",
            &[("allow_private_data_export", "true")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A new account is announced with its consent too (not given by default).
    let (ole_id, _) = server.create_member("ole@example.com", "Ole").await;
    let events = queued_events(&api, &queue_id).await;
    let told: Vec<(u64, bool)> = events
        .iter()
        .filter(|e| e["type"] == "realm_export_consent")
        .map(|e| {
            (
                e["user_id"].as_u64().unwrap(),
                e["consented"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(told, [(owner_id, true), (ole_id, false)], "{events:?}");
    let (status, body) = server
        .api(Some(&mia))
        .get("/export/realm/consents", &[])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["msg"], "Must be an organization administrator");
    let (status, body) = api.get("/export/realm/consents", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut consents = body["export_consents"].as_array().unwrap().clone();
    consents.sort_by_key(|c| c["user_id"].as_u64());
    assert_eq!(
        consents,
        vec![
            json!({"user_id": owner_id, "consented": true}),
            json!({"user_id": mia_id, "consented": false}),
            json!({"user_id": ned_id, "consented": false}),
            json!({"user_id": ole_id, "consented": false}),
        ]
    );

    // A private channel of the owner's, one of Mia's (with a file linked from it alone), and
    // direct messages.
    let mia_api = server.api(Some(&mia));
    let (status, uploaded) = crate::uploads::post_files(
        &mia_api,
        "/user_uploads",
        &[(
            "file",
            "hideout-plan.txt",
            "text/plain",
            b"the hideout plan",
        )],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{uploaded}");
    let hideout_words = format!(
        "hideout words [plan]({})",
        uploaded["url"].as_str().unwrap()
    );
    for (who, name, content) in [
        (&api, "board", "board secrets"),
        (&mia_api, "hideout", hideout_words.as_str()),
        (&api, "lobby", "public words"),
    ] {
        let subscriptions = json!([{"name": name}]).to_string();
        let private = (name != "lobby").to_string();
        let (status, body) = who
            .post(
                "/users/me/subscriptions",
                &[("subscriptions", &subscriptions), ("invite_only", &private)],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, body) = who
            .post(
                "/messages",
                &[
                    ("type", "stream"),
                    ("to", name),
                    ("topic", "t"),
                    ("content", content),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    for (who, to, content) in [
        (&api, mia_id, "between us"),
        (&mia_api, ned_id, "mia and ned"),
    ] {
        let to = format!("[{to}]");
        let (status, body) = who
            .post(
                "/messages",
                &[("type", "direct"), ("to", &to), ("content", content)],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    let (status, body) = api.post("/export/realm", &[("export_type", "2")]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, listed) = api.get("/export/realm", &[]).await;
    assert_eq!(listed["exports"][0]["export_type"], 2);
    let url = listed["exports"][0]["export_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let tarball = api.fetch(&url).await;
    assert_eq!(tarball.status(), StatusCode::OK);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("export.tar.gz");
    std::fs::write(&file, tarball.bytes().await.unwrap()).unwrap();
    let dir = tmp.path().join("data");
    let (ok, _, stderr) = import(&[
        "zulip".as_ref(),
        file.as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
        "--owner-email".as_ref(),
        crate::support::OWNER.as_ref(),
    ]);
    assert!(ok, "{stderr}");
    let dumped: Value = serde_json::from_str(&crate::support::run_ok([
        "dump".as_ref(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
    ]))
    .unwrap();
    let text = dumped.to_string();
    // The owner's private data came; the others' did not.
    for kept in ["public words", "board secrets", "between us"] {
        assert!(text.contains(kept), "{kept} is missing");
    }
    for left in ["hideout words", "mia and ned", "hideout"] {
        assert!(!text.contains(left), "{left} was exported");
    }
    // Nor the file linked only from Mia's private channel.
    assert_eq!(
        dumped["attachments"],
        json!([]),
        "{}",
        dumped["attachments"]
    );
    let listing = Command::new("tar").arg("-tzf").arg(&file).output().unwrap();
    let names = String::from_utf8_lossy(&listing.stdout);
    assert!(!names.contains("hideout-plan"), "{names}");
    // Those who did not consent come as deactivated accounts, as in Zulip.
    let active: Vec<(String, bool)> = dumped["users"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["bot_type"].is_null())
        .map(|u| {
            (
                u["email"].as_str().unwrap().to_owned(),
                u["is_active"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        active.contains(&(crate::support::OWNER.to_owned(), true)),
        "{active:?}"
    );
    assert!(
        active.contains(&("mia@example.com".to_owned(), false)),
        "{active:?}"
    );
    assert!(
        active.contains(&("ned@example.com".to_owned(), false)),
        "{active:?}"
    );
}

#[tokio::test]
async fn profile_pictures_of_a_mattermost_export_become_avatars() {
    // The mmctl export as its zip unpacks: import.jsonl, and data/ with two people's pictures,
    // one of them an HTML page where the picture should be.
    let tmp = tempfile::tempdir().unwrap();
    let export = tmp.path().join("export");
    std::fs::create_dir_all(export.join("data/users/nemz7fnh97gmifym1bd1yx4mzr")).unwrap();
    std::fs::create_dir_all(export.join("data/users/ouiyzynxmtfcmgret6by3freqc")).unwrap();
    std::fs::copy(
        fixture("mattermost_v11.1.0_fixtures/raw_mmctl_output/import.jsonl"),
        export.join("import.jsonl"),
    )
    .unwrap();
    let mut picture = Vec::new();
    image::RgbImage::from_pixel(640, 480, image::Rgb([20, 40, 220]))
        .write_to(
            &mut std::io::Cursor::new(&mut picture),
            image::ImageFormat::Png,
        )
        .unwrap();
    std::fs::write(
        export.join("data/users/nemz7fnh97gmifym1bd1yx4mzr/profile.png"),
        &picture,
    )
    .unwrap();
    std::fs::write(
        export.join("data/users/ouiyzynxmtfcmgret6by3freqc/profile.png"),
        b"<!DOCTYPE html><html>Sign in</html>",
    )
    .unwrap();
    let dir = tmp.path().join("data");
    let (ok, _, stderr) = import(&[
        "mattermost".as_ref(),
        export.as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let report = report_of(&dir);
    assert_eq!(report["counts"]["avatars"], 1, "{report}");
    let avatars: Vec<&Value> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "avatar")
        .collect();
    // 17 people: one picture came, one is damaged, the other 15 are not in the export.
    assert_eq!(avatars.len(), 16, "{avatars:?}");
    assert!(avatars.iter().any(|s| s["at"]
        .as_str()
        .unwrap()
        .ends_with("ouiyzynxmtfcmgret6by3freqc/profile.png")
        && s["why"].as_str().unwrap().contains("not an image")));
    let owner = owner_of(&dir);
    let server = Server::start_in(&dir).unwrap();
    let api = server.api(Some(&owner));
    let (_, users) = api.get("/users", &[]).await;
    let lois = users["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| {
            u["email"] == "lois.harper@sample.mattermost.com" || u["full_name"] == "Lois Harper"
        })
        .unwrap_or_else(|| panic!("{users}"))
        .clone();
    let avatar = api.fetch(lois["avatar_url"].as_str().unwrap()).await;
    assert_eq!(avatar.status(), StatusCode::OK);
    let avatar = image::load_from_memory(&avatar.bytes().await.unwrap())
        .unwrap()
        .to_rgb8();
    assert_eq!(avatar.dimensions(), (100, 100));
    assert!(avatar.get_pixel(50, 50)[2] > 180);
}

/// `anchor=date` on imported history, whose messages keep the times they were sent at.
#[tokio::test]
async fn an_anchor_date_is_the_first_message_sent_at_or_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let (ok, _, stderr) = import(&[
        "slack".as_ref(),
        fixture("slack_fixtures/test_slack_importer.zip").as_os_str(),
        "--data-dir".as_ref(),
        dir.as_os_str(),
        "--slack-users".as_ref(),
        fixture("slack_fixtures/user_data.json").as_os_str(),
    ]);
    assert!(ok, "{stderr}");
    let owner = owner_of(&dir);
    let server = Server::start_in(&dir).unwrap();
    let api = server.api(Some(&owner));
    let all = channel_messages(&server, &owner, "general").await;
    let sent: Vec<(u64, i64)> = all
        .iter()
        .map(|m| (m["id"].as_u64().unwrap(), m["timestamp"].as_i64().unwrap()))
        .collect();
    assert!(sent.windows(2).all(|w| w[0].1 <= w[1].1), "{sent:?}");
    let (first, last) = (sent[0], sent[sent.len() - 1]);
    assert!(last.1 - first.1 > 3600, "{sent:?}");
    let narrow = json!([{"operator": "channel", "operand": "general"}]).to_string();
    let at = |anchor_date: &str| {
        let (api, narrow, anchor_date) = (&api, narrow.clone(), anchor_date.to_owned());
        async move {
            api.get(
                "/messages",
                &[
                    ("anchor", "date"),
                    ("anchor_date", &anchor_date),
                    ("num_before", "1"),
                    ("num_after", "1"),
                    ("narrow", &narrow),
                ],
            )
            .await
        }
    };
    let iso = |secs: i64, offset_secs: i32| {
        let zone = chrono::FixedOffset::east_opt(offset_secs).unwrap();
        chrono::DateTime::from_timestamp(secs, 0)
            .unwrap()
            .with_timezone(&zone)
            .to_rfc3339()
    };
    // Every instant between the first and the last message, in two zones: the first message
    // sent then or later, with one on either side of it.
    let middle = sent.len() / 2;
    for (k, &(id, secs)) in sent.iter().enumerate().skip(1).take(middle) {
        let expected = sent.iter().find(|m| m.1 >= secs).unwrap().0;
        for offset in [0, 5 * 3600 + 1800, -8 * 3600] {
            let (status, body) = at(&iso(secs, offset)).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["anchor"], expected, "message {k} ({id}) at {secs}");
            assert_eq!(body["found_anchor"], true);
            let window = ids(&body);
            let place = sent.iter().position(|m| m.0 == expected).unwrap();
            assert_eq!(window[1 - usize::from(place == 0)], expected, "{body}");
        }
        // A second after a message with a later one: the later one.
        if let Some(next) = sent.iter().find(|m| m.1 > secs) {
            let (_, body) = at(&iso(secs + 1, 0)).await;
            assert_eq!(body["anchor"], next.0, "after {id}");
        }
    }
    // Before the first: the first (a date alone is midnight UTC); after the last: the newest.
    let (_, body) = at("2001-02-03").await;
    assert_eq!(
        (body["anchor"].clone(), ids(&body)),
        (json!(first.0), vec![first.0, sent[1].0])
    );
    assert_eq!(body["found_oldest"], true);
    let (_, body) = at(&iso(last.1 + 86_400, 0)).await;
    assert_eq!(body["anchor"], last.0);
    assert_eq!(
        (body["found_anchor"].clone(), body["found_newest"].clone()),
        (json!(true), json!(true))
    );
    // Without a time zone, UTC; minutes without seconds; a space for the `T`.
    let naive = iso(sent[middle].1, 0);
    let naive = naive.trim_end_matches("+00:00");
    let (_, body) = at(naive).await;
    assert_eq!(
        body["anchor"],
        sent.iter().find(|m| m.1 >= sent[middle].1).unwrap().0
    );
    let (_, with_space) = at(&naive.replacen('T', " ", 1)).await;
    assert_eq!(with_space["anchor"], body["anchor"]);
    // Refused as Zulip refuses them.
    for (anchor_date, msg) in [
        (None, "Missing 'anchor_date' argument."),
        (
            Some("not-a-date"),
            "anchor_date is not an ISO 8601 datetime string",
        ),
        (
            Some("2005-13-01"),
            "anchor_date is not an ISO 8601 datetime string",
        ),
        (
            Some("2005-04-18T25:00Z"),
            "anchor_date is not an ISO 8601 datetime string",
        ),
    ] {
        let mut params = vec![("anchor", "date"), ("num_before", "1"), ("num_after", "1")];
        if let Some(text) = anchor_date {
            params.push(("anchor_date", text));
        }
        let (status, body) = api.get("/messages", &params).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{anchor_date:?}");
        assert_eq!(
            body,
            json!({"result": "error", "code": "BAD_REQUEST", "msg": msg}),
            "{anchor_date:?}"
        );
    }
}

//! Custom emoji: upload (multipart, Zulip's checks), the list, the image, deactivation,
//! reactions and rendering with them, `realm_emoji` events, and the log after a restart.

use crate::support::{Api, Server};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A tiny PNG, 2 x 2 orange pixels (the server decodes what it is sent).
const PNG: &[u8] = b"\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x02\x00\x00\x00\x02\x08\x06\x00\x00\x00\x72\xb6\x0d\x24\x00\x00\x00\x11\x49\x44\x41\x54\x78\x9c\x63\xf8\xdf\xc0\xf0\x1f\x84\x19\x60\x0c\x00\x5a\xca\x09\xf9\xef\xae\x6a\xa1\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";

/// `POST /realm/emoji/{name}` with these files, as a browser or the Python client sends them.
async fn upload(api: &Api, name: &str, files: &[&[u8]]) -> (StatusCode, Value) {
    let boundary = "chronicle-boundary-7d3f";
    let mut body = Vec::new();
    for (i, bytes) in files.iter().enumerate() {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"f{i}\"; \
                 filename=\"emoji{i}.png\"\r\nContent-Type: image/png\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let creds = api.creds.as_ref().unwrap();
    let resp = api
        .client
        .post(format!("{}/realm/emoji/{name}", api.base))
        .basic_auth(&creds.email, Some(&creds.key))
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap())
}

fn error(status: StatusCode, body: &Value) -> (u16, String) {
    (
        status.as_u16(),
        body["msg"].as_str().unwrap_or_default().to_owned(),
    )
}

async fn realm_emoji(api: &Api) -> Value {
    let (status, body) = api.get("/realm/emoji", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["emoji"].clone()
}

#[tokio::test]
async fn upload_list_serve_react_render_and_deactivate() {
    let chat = crate::messages::chat().await;
    let (alice_id, alice) = &chat.alice;
    let (_, bob) = &chat.bob;
    let owner = chat.server.api(Some(&chat.server.owner()));
    let (status, body) = bob
        .post(
            "/register",
            &[
                ("event_types", r#"["realm_emoji"]"#),
                ("fetch_event_types", r#"["realm_emoji"]"#),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["realm_emoji"], json!({}));
    let queue = body["queue_id"].as_str().unwrap().to_owned();

    // Spaces and capitals are read as Zulip reads them.
    let (status, body) = upload(alice, "Party%20Parrot", &[PNG]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    let expected = json!({"1": {
        "id": "1", "name": "party_parrot", "source_url": "/user_avatars/1/emoji/images/1.png",
        "still_url": null, "deactivated": false, "author_id": alice_id,
    }});
    assert_eq!(realm_emoji(bob).await, expected);
    let (_, events) = bob
        .get(
            "/events",
            &[
                ("queue_id", &queue),
                ("last_event_id", "-1"),
                ("dont_block", "true"),
            ],
        )
        .await;
    assert_eq!(
        events["events"],
        json!([{"type": "realm_emoji", "op": "update", "realm_emoji": expected, "id": 0}])
    );

    // The image, byte for byte, without credentials (messages show it to anyone).
    let resp = reqwest::get(format!(
        "{}/user_avatars/1/emoji/images/1.png",
        chat.server.api(None).base.trim_end_matches("/api/v1")
    ))
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "image/png");
    assert_eq!(resp.bytes().await.unwrap().as_ref(), PNG);
    let missing = reqwest::get(format!(
        "{}/user_avatars/1/emoji/images/2.png",
        chat.server.api(None).base.trim_end_matches("/api/v1")
    ))
    .await
    .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);

    // Zulip's checks, in Zulip's order.
    let too_big = [PNG, &vec![0u8; 5 * 1024 * 1024]].concat();
    for (name, files, msg) in [
        ("tada_", vec![PNG], "Emoji names must end with either a letter or digit."),
        (
            "ta.da",
            vec![PNG],
            "Emoji names must contain only lowercase alphanumeric characters, hyphens, and underscores.",
        ),
        ("party_parrot", vec![PNG], "A custom emoji with this name already exists."),
        ("two", vec![PNG, PNG], "You must upload exactly one file."),
        ("octopus", vec![PNG], "Only administrators can override default emoji."),
        ("svg", vec![b"<svg/>".as_slice()], "Invalid image format"),
        ("big", vec![too_big.as_slice()], "Uploaded file is larger than the allowed limit of 5 MiB"),
    ] {
        let (status, body) = upload(alice, name, &files).await;
        assert_eq!(error(status, &body), (400, msg.to_owned()), "{name}");
    }
    // Bodies are bounded before they are parsed: size, then the number of fields.
    let huge = vec![0u8; 7 * 1024 * 1024];
    let (status, body) = upload(alice, "huge", &[&huge]).await;
    assert_eq!(error(status, &body), (400, "Request body too large".into()));
    let many: Vec<&[u8]> = vec![PNG; 70];
    let (status, body) = upload(alice, "many", &many).await;
    assert_eq!(
        error(status, &body),
        (400, "Too many fields in the request".into())
    );
    let (status, body) = alice.post("/realm/emoji/none", &[]).await;
    assert_eq!(
        error(status, &body),
        (400, "You must upload exactly one file.".into())
    );
    // Administrators may override a built-in emoji.
    let (status, body) = upload(&owner, "octopus", &[PNG]).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Reactions by name find the organization's emoji first.
    let id = crate::messages::send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "t"),
            ("content", "Hi :party_parrot: :octopus:"),
        ],
    )
    .await;
    let (_, m) = bob.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(
        m["message"]["content"],
        "<p>Hi <img alt=\":party_parrot:\" class=\"emoji\" src=\"/user_avatars/1/emoji/images/1.png\" \
         title=\"party parrot\"> <img alt=\":octopus:\" class=\"emoji\" \
         src=\"/user_avatars/1/emoji/images/2.png\" title=\"octopus\"></p>"
    );
    let path = format!("/messages/{id}/reactions");
    let (status, body) = bob.post(&path, &[("emoji_name", "party_parrot")]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for (params, msg) in [
        (
            vec![
                ("emoji_name", "octopus"),
                ("emoji_code", "9"),
                ("reaction_type", "realm_emoji"),
            ],
            "Invalid custom emoji.",
        ),
        (
            vec![
                ("emoji_name", "tada"),
                ("emoji_code", "2"),
                ("reaction_type", "realm_emoji"),
            ],
            "Invalid custom emoji name.",
        ),
    ] {
        let (status, body) = alice.post(&path, &params).await;
        assert_eq!(error(status, &body), (400, msg.to_owned()));
    }
    let (_, m) = bob.get(&format!("/messages/{id}"), &[]).await;
    let reaction = &m["message"]["reactions"][0];
    assert_eq!(
        (
            &reaction["emoji_name"],
            &reaction["emoji_code"],
            &reaction["reaction_type"]
        ),
        (&json!("party_parrot"), &json!("1"), &json!("realm_emoji"))
    );

    // Only administrators and the author deactivate; the name is then free, old reactions stay.
    let (status, body) = bob.delete("/realm/emoji/party_parrot", &[]).await;
    assert_eq!(
        error(status, &body),
        (
            400,
            "Must be an organization administrator or emoji author".into()
        )
    );
    let (status, body) = alice.delete("/realm/emoji/party_parrot", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = alice.delete("/realm/emoji/party_parrot", &[]).await;
    assert_eq!(
        (status.as_u16(), body["code"].clone(), body["msg"].clone()),
        (
            404,
            json!("BAD_REQUEST"),
            json!("Emoji 'party_parrot' does not exist")
        )
    );
    // Bob's reaction with it stays; a new one elsewhere is refused.
    let (_, m) = bob.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(m["message"]["reactions"][0]["emoji_code"], "1");
    let other = crate::messages::send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "t"),
            ("content", "again"),
        ],
    )
    .await;
    let (status, body) = alice
        .post(
            &format!("/messages/{other}/reactions"),
            &[
                ("emoji_name", "party_parrot"),
                ("emoji_code", "1"),
                ("reaction_type", "realm_emoji"),
            ],
        )
        .await;
    assert_eq!(
        error(status, &body),
        (400, "This custom emoji has been deactivated.".into())
    );
    assert_eq!(realm_emoji(bob).await["1"]["deactivated"], true);
    let (status, body) = upload(bob, "party_parrot", &[PNG]).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Everything comes back from the log; listings describe the image instead of holding it.
    let server = chat.server.stop().restart();
    let owner = server.api(Some(&server.owner()));
    let list = realm_emoji(&owner).await;
    assert_eq!(list.as_object().unwrap().len(), 3, "{list}");
    assert_eq!(list["3"]["name"], "party_parrot");
    let (_, log) = owner.get("/admin/events", &[("limit", "1000")]).await;
    let listed = log.to_string();
    let summary = format!("<{} bytes, sha256 ", PNG.len());
    assert!(listed.contains(&summary), "{listed}");
    assert!(!listed.contains("chronicle-test-image"), "{listed}");
}

#[tokio::test]
async fn the_organization_decides_who_adds_emoji() {
    let server = Server::start();
    let (_, member) = server.create_member("m@example.com", "Mem Ber").await;
    let member = server.api(Some(&member));
    let owner = server.api(Some(&server.owner()));
    let (_, groups) = owner.get("/user_groups", &[]).await;
    let admins = groups["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "role:administrators")
        .unwrap()["id"]
        .clone();
    let (status, body) = owner
        .call(
            reqwest::Method::PATCH,
            "/realm",
            &[(
                "can_add_custom_emoji_group",
                &json!({"new": admins}).to_string(),
            )],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = upload(&member, "mine", &[PNG]).await;
    assert_eq!(
        error(status, &body),
        (400, "Insufficient permission".into())
    );
    let (status, body) = upload(&owner, "mine", &[PNG]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn large_still_emoji_are_shrunk_to_64_pixels() {
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let picture = chronicle::avatars::generated("big emoji", 256);
    let (status, body) = crate::uploads::post_files(
        &owner,
        "/realm/emoji/big_one",
        &[("file", "big.png", "image/png", &picture)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, listed) = owner.get("/realm/emoji", &[]).await;
    let emoji = listed["emoji"]
        .as_object()
        .unwrap()
        .values()
        .find(|e| e["name"] == "big_one")
        .unwrap()
        .clone();
    let url = format!("{}{}", server.url, emoji["source_url"].as_str().unwrap());
    let bytes = reqwest::get(&url).await.unwrap().bytes().await.unwrap();
    let (w, h) = (
        u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
        u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
    );
    assert_eq!((w, h), (64, 64));
}

//! Uploaded files: `POST /user_uploads`, downloads and who may make them, temporary links,
//! `GET /attachments`, `DELETE /attachments/{id}`, `attachment` events, `has:` narrows, limits,
//! and the bytes on disk across a restart.

use crate::messages::{chat, fetch, ids, send};
use crate::realtime::{drain, register};
use crate::support::{Api, Server};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A PNG's signature, then anything: enough for the server to call it an image.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-not-really-an-image";

/// `POST /user_uploads` with these files (`(field, file name, type, bytes)`).
async fn upload_raw(api: &Api, files: &[(&str, &str, &str, &[u8])]) -> (StatusCode, Value) {
    post_files(api, "/user_uploads", files).await
}

/// A `multipart/form-data` POST of these files to `path`.
pub(crate) async fn post_files(
    api: &Api,
    path: &str,
    files: &[(&str, &str, &str, &[u8])],
) -> (StatusCode, Value) {
    let boundary = "chronicle-test-boundary-7d1f";
    let mut body = Vec::new();
    for (field, name, kind, bytes) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\nContent-Type: {kind}\r\n\r\n"
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
        .post(format!("{}{path}", api.base))
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

async fn upload(api: &Api, name: &str, kind: &str, bytes: &[u8]) -> String {
    let (status, body) = upload_raw(api, &[("file", name, kind, bytes)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["url"].as_str().unwrap().to_owned()
}

/// A download of `url` (a path) as `api`'s user, or anonymously.
async fn download(server: &Server, api: Option<&Api>, url: &str) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(format!("{}{url}", server.url));
    if let Some(creds) = api.and_then(|a| a.creds.as_ref()) {
        req = req.basic_auth(&creds.email, Some(&creds.key));
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn uploads_are_shared_through_messages_only() {
    let c = chat().await;
    let server = &c.server;
    let (alice_id, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let (_, carol) = &c.carol;
    let (queue, _) = register(alice, &[("event_types", r#"["attachment"]"#)]).await;

    let (status, body) = upload_raw(
        alice,
        &[("file", "notes draft.txt", "text/plain", b"hello")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let url = body["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with("/user_uploads/1/") && url.ends_with("/notes-draft.txt"),
        "{url}"
    );
    assert_eq!(
        body,
        json!({"result": "success", "msg": "", "uri": url, "url": url, "filename": "notes-draft.txt"})
    );
    // The owner downloads it; a text file is a download, never run or sniffed.
    let resp = download(server, Some(alice), &url).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/plain");
    assert_eq!(
        resp.headers()["content-disposition"],
        "attachment; filename=\"notes-draft.txt\""
    );
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    assert_eq!(resp.bytes().await.unwrap().as_ref(), b"hello");
    // Nobody else, until a message links it; no credentials at all is a 401.
    assert_eq!(
        download(server, Some(bob), &url).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        download(server, None, &url).await.status(),
        StatusCode::UNAUTHORIZED
    );

    let image = upload(alice, "cat.png", "image/png", PNG).await;
    let dm = send(
        alice,
        &[
            ("type", "direct"),
            ("to", &format!("[{bob_id}]")),
            ("content", &format!("[cat.png]({image})")),
        ],
    )
    .await;
    let in_channel = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "files"),
            ("content", &format!("[notes]({url})")),
        ],
    )
    .await;
    // Bob reads both messages; Carol reads the public channel's but not the direct message.
    let resp = download(server, Some(bob), &image).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "image/png");
    assert!(resp.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("inline"));
    assert_eq!(
        download(server, Some(carol), &url).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        download(server, Some(carol), &image).await.status(),
        StatusCode::NOT_FOUND
    );

    // The narrows.
    for (op, expected) in [("attachment", vec![dm, in_channel]), ("image", vec![dm])] {
        let narrow = json!([{"operator": "has", "operand": op}]).to_string();
        let params = [
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", narrow.as_str()),
        ];
        assert_eq!(ids(&fetch(bob, &params).await), expected, "has:{op}");
    }

    // The owner's list, and the events that built it.
    let (_, list) = alice.get("/attachments", &[]).await;
    let attachments = list["attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 2);
    assert_eq!(list["upload_space_used"], 5 + PNG.len());
    assert_eq!(attachments[0]["name"], "notes-draft.txt");
    assert_eq!(attachments[0]["size"], 5);
    assert_eq!(
        attachments[0]["path_id"],
        url.trim_start_matches("/user_uploads/")
    );
    assert_eq!(attachments[0]["messages"].as_array().unwrap().len(), 1);
    assert_eq!(attachments[0]["messages"][0]["id"], in_channel);
    let events = drain(alice, &queue).await;
    let ops: Vec<&str> = events.iter().map(|e| e["op"].as_str().unwrap()).collect();
    assert_eq!(ops, vec!["add", "add", "update", "update"], "{events:?}");
    assert_eq!(events[0]["attachment"]["messages"], json!([]));
    assert_eq!(events[3]["attachment"]["messages"][0]["id"], in_channel);
    assert_eq!(events[3]["upload_space_used"], 5 + PNG.len());
    let (_, bob_list) = bob.get("/attachments", &[]).await;
    assert_eq!(bob_list["attachments"], json!([]));
    // The space used is the organization's (Zulip's `upload_space_used`), as its quota counts.
    assert_eq!(bob_list["upload_space_used"], 5 + PNG.len());

    // A temporary link works without credentials, for a minute; a forged one does not.
    let api_path = format!("/user_uploads/{}", url.trim_start_matches("/user_uploads/"));
    let (status, body) = alice.get(&api_path, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let temporary = body["url"].as_str().unwrap().to_owned();
    assert!(
        temporary.starts_with("/user_uploads/temporary/"),
        "{temporary}"
    );
    let resp = download(server, None, &temporary).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.bytes().await.unwrap().as_ref(), b"hello");
    let forged = temporary.replacen("temporary/", "temporary/9", 1);
    assert_eq!(
        download(server, None, &forged).await.status(),
        StatusCode::NOT_FOUND
    );
    let (status, _) = bob.get("/user_uploads/1/nothing/here.txt", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Deleting: only the owner; the links die and the bytes go.
    let id = attachments[1]["id"].as_u64().unwrap();
    let (status, body) = bob.delete(&format!("/attachments/{id}"), &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "msg": "Invalid attachment", "code": "BAD_REQUEST"})
        )
    );
    let (status, _) = alice.delete(&format!("/attachments/{id}"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        download(server, Some(bob), &image).await.status(),
        StatusCode::NOT_FOUND
    );
    let events = drain(alice, &queue).await;
    assert_eq!(
        events[0],
        json!({"id": events[0]["id"], "type": "attachment", "op": "remove",
               "attachment": {"id": id}, "upload_space_used": 5})
    );
    let stored: Vec<_> = walk(&server.dir.join("uploads"));
    assert_eq!(stored.len(), 1, "{stored:?}");

    // After a restart the remaining file is still there for those who may see it.
    let creds = bob.creds.clone().unwrap();
    let server = c.server.stop().restart();
    let bob = server.api(Some(&creds));
    let resp = download(&server, Some(&bob), &url).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.bytes().await.unwrap().as_ref(), b"hello");
    let _ = alice_id;
}

/// The files under `dir` (recursively).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn upload_limits_and_malformed_requests() {
    let server = Server::start_with(&["--max-file-upload-mib", "1", "--upload-quota-mib", "2"]);
    let owner = server.api(Some(&server.owner()));
    let (_, body) = register(&owner, &[("fetch_event_types", r#"["realm"]"#)]).await;
    assert_eq!(body["max_file_upload_size_mib"], 1);
    assert_eq!(body["realm_upload_quota_mib"], 2);
    let big = vec![7u8; 1024 * 1024 + 1];
    let (status, body) = upload_raw(
        &owner,
        &[("file", "big.bin", "application/octet-stream", &big)],
    )
    .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "code": "BAD_REQUEST",
                   "msg": "Uploaded file is larger than the allowed limit of 1 MiB"})
        )
    );
    let (status, body) = upload_raw(
        &owner,
        &[
            ("a", "a.txt", "text/plain", b"a"),
            ("b", "b.txt", "text/plain", b"b"),
        ],
    )
    .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("You may only upload one file at a time")
        )
    );
    let (status, body) = owner.post("/user_uploads", &[("x", "y")]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("You must specify a file to upload")
        )
    );
    // A client's declared image type is not believed without the bytes to show it.
    let fake = upload(&owner, "fake.png", "image/png", b"<svg onload=alert(1)>").await;
    let resp = download(&server, Some(&owner), &fake).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/octet-stream");
    assert_eq!(
        resp.headers()["content-disposition"],
        "attachment; filename=\"fake.png\""
    );
    // The quota (2 MiB): these fit, the next byte does not.
    let mib = vec![1u8; 1024 * 1024];
    upload(&owner, "one.bin", "application/octet-stream", &mib).await;
    let rest = vec![2u8; 1024 * 1024 - 21];
    upload(&owner, "two.bin", "application/octet-stream", &rest).await;
    let (status, body) = upload_raw(
        &owner,
        &[("file", "three.bin", "application/octet-stream", b"x")],
    )
    .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"result": "error", "code": "REALM_UPLOAD_QUOTA",
                   "msg": "Upload would exceed your organization's upload quota."})
        )
    );
}

#[tokio::test]
async fn backups_carry_uploads_and_erasure_removes_unnamed_ones() {
    use std::process::Command;
    let server = Server::start();
    let owner = server.api(Some(&server.owner()));
    let url = upload(&owner, "report.pdf", "application/pdf", b"%PDF-1.7 tiny").await;
    let stopped = server.stop();
    let export = stopped.dir.with_extension("export");
    let out = Command::new(crate::support::bin())
        .args(["export", "--data-dir"])
        .arg(&stopped.dir)
        .arg("--out")
        .arg(&export)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("exported 1 uploaded files"), "{text}");
    let copy = stopped.dir.with_extension("copy");
    let out = Command::new(crate::support::bin())
        .args(["import", "--data-dir"])
        .arg(&copy)
        .arg("--from")
        .arg(&export)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in ["secret.key", "zuliprc"] {
        std::fs::copy(stopped.dir.join(file), copy.join(file)).unwrap();
    }
    // A file no upload names (as a crash between storing and recording leaves one).
    let orphan = "0".repeat(64);
    std::fs::create_dir_all(copy.join("uploads/00")).unwrap();
    std::fs::write(copy.join("uploads/00").join(&orphan), b"x").unwrap();
    let out = Command::new(crate::support::bin())
        .args(["erase", "--data-dir"])
        .arg(&copy)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("upload_files_removed: 1\n"), "{text}");
    assert!(!copy.join("uploads/00").join(&orphan).exists());
    // The copy serves the file to the same owner.
    let restored = Server::start_in(&copy).unwrap();
    let owner = restored.api(Some(&restored.owner()));
    let resp = download(&restored, Some(&owner), &url).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.bytes().await.unwrap().as_ref(), b"%PDF-1.7 tiny");
    // A recorded file missing from disk (a restore without the uploads) is a 404, not a 500.
    for file in walk(&copy.join("uploads")) {
        std::fs::remove_file(file).unwrap();
    }
    let resp = download(&restored, Some(&owner), &url).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert!(restored.stderr().contains("an uploaded file is missing"));
}

/// A real PNG of `width` × `height` pixels.
fn png_of(width: u32, height: u32) -> Vec<u8> {
    let picture = image::RgbImage::from_pixel(width, height, image::Rgb([20, 120, 200]));
    let mut out = std::io::Cursor::new(Vec::new());
    picture.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A GIF of two 100 × 50 frames.
fn moving_gif() -> Vec<u8> {
    use image::codecs::gif::GifEncoder;
    let mut out = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut out);
        let frames = [0u8, 200].map(|red| {
            let picture = image::RgbaImage::from_pixel(100, 50, image::Rgba([red, 10, 10, 255]));
            image::Frame::from_parts(picture, 0, 0, image::Delay::from_numer_denom_ms(80, 1))
        });
        encoder.encode_frames(frames).unwrap();
    }
    out
}

/// A message's rendered content, as `api` fetches it.
async fn rendered(api: &Api, id: u64) -> String {
    let (status, body) = api.get(&format!("/messages/{id}"), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["message"]["content"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn uploaded_images_are_previewed_with_thumbnails() {
    let c = chat().await;
    let server = &c.server;
    let (_, alice) = &c.alice;
    let (bob_id, bob) = &c.bob;
    let (_, carol) = &c.carol;

    // The formats clients choose from.
    let (_, state) = register(bob, &[]).await;
    assert_eq!(
        state["server_thumbnail_formats"],
        json!([
            {"name": "840x560-anim.webp", "max_width": 840, "max_height": 560, "format": "webp", "animated": true},
            {"name": "840x560.webp", "max_width": 840, "max_height": 560, "format": "webp", "animated": false},
        ])
    );

    let photo = upload(alice, "photo.png", "image/png", &png_of(1000, 500)).await;
    let path = photo.trim_start_matches("/user_uploads/").to_owned();
    let id = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "pictures"),
            ("content", &format!("Look: [photo.png]({photo})")),
        ],
    )
    .await;
    // Zulip's preview: the thumbnail is made with the upload, so the message has it at once.
    let expected = format!(
        "<p>Look: <a href=\"{photo}\">photo.png</a></p>\n\
         <div class=\"message_inline_image\"><a href=\"{photo}\" title=\"photo.png\">\
         <img data-original-content-type=\"image/png\" data-original-dimensions=\"1000x500\" \
         src=\"/user_uploads/thumbnail/{path}/840x560.webp\"></a></div>"
    );
    assert_eq!(rendered(bob, id).await, expected);

    // Bob (who may read the message) gets the thumbnail: 840 × 420, WebP, cached privately.
    let thumbnail = format!("/user_uploads/thumbnail/{path}/840x560.webp");
    let resp = download(server, Some(bob), &thumbnail).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "image/webp");
    assert_eq!(resp.headers()["cache-control"], "private, immutable");
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    let made = resp.bytes().await.unwrap().to_vec();
    let picture = image::load_from_memory(&made).unwrap();
    assert_eq!((picture.width(), picture.height()), (840, 420));
    // Another format a client may ask for gets the nearest one made; a malformed name and
    // anonymous callers get nothing.
    let nearest = download(
        server,
        Some(bob),
        &format!("/user_uploads/thumbnail/{path}/300x200-anim.webp"),
    )
    .await;
    assert_eq!(nearest.bytes().await.unwrap().to_vec(), made);
    for bad in ["840x560", "big.webp", ""] {
        let resp = download(
            server,
            Some(bob),
            &format!("/user_uploads/thumbnail/{path}/{bad}"),
        )
        .await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND, "{bad}");
    }
    assert_eq!(
        download(server, None, &thumbnail).await.status(),
        StatusCode::UNAUTHORIZED
    );

    // The same bytes again, under another name: previewed the same (from the thumbnails made).
    let again = upload(alice, "again.png", "image/png", &png_of(1000, 500)).await;
    let again_id = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "pictures"),
            ("content", &format!("[again.png]({again})")),
        ],
    )
    .await;
    assert!(rendered(bob, again_id)
        .await
        .contains("data-original-dimensions=\"1000x500\""),);

    // A photo's thumbnail is a JPEG (Zulip tells clients not to assume the format).
    let shot = {
        let picture = image::RgbImage::from_fn(1200, 900, |x, y| {
            image::Rgb([(x % 250) as u8, (y % 250) as u8, 60])
        });
        let mut out = std::io::Cursor::new(Vec::new());
        picture
            .write_to(&mut out, image::ImageFormat::Jpeg)
            .unwrap();
        out.into_inner()
    };
    let shot = upload(alice, "shot.jpg", "image/jpeg", &shot).await;
    let shot_path = shot.trim_start_matches("/user_uploads/");
    let resp = download(
        server,
        Some(alice),
        &format!("/user_uploads/thumbnail/{shot_path}/840x560.webp"),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "image/jpeg");
    let picture = image::load_from_memory(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!((picture.width(), picture.height()), (747, 560));

    // An image in a direct message: its thumbnail only for those who may see the image.
    let secret = upload(alice, "secret.gif", "image/gif", &moving_gif()).await;
    let secret_path = secret.trim_start_matches("/user_uploads/").to_owned();
    let dm = send(
        alice,
        &[
            ("type", "direct"),
            ("to", &format!("[{bob_id}]")),
            ("content", &format!("[secret.gif]({secret})")),
        ],
    )
    .await;
    let html = rendered(bob, dm).await;
    assert!(
        html.ends_with(&format!(
            "<img data-animated=\"true\" data-original-content-type=\"image/gif\" \
             data-original-dimensions=\"100x50\" \
             src=\"/user_uploads/thumbnail/{secret_path}/840x560-anim.webp\"></a></div>"
        )),
        "{html}"
    );
    let animated = format!("/user_uploads/thumbnail/{secret_path}/840x560-anim.webp");
    let resp = download(server, Some(bob), &animated).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let bytes = resp.bytes().await.unwrap().to_vec();
    let decoder = image::codecs::webp::WebPDecoder::new(std::io::Cursor::new(bytes)).unwrap();
    assert!(decoder.has_animation());
    assert_eq!(image::AnimationDecoder::into_frames(decoder).count(), 2);
    for path in [&animated, &secret] {
        assert_eq!(
            download(server, Some(carol), path).await.status(),
            StatusCode::NOT_FOUND
        );
    }

    // A file that is no image (whatever it says it is) is linked without a preview.
    let fake = upload(alice, "fake.png", "image/png", PNG).await;
    let plain = send(
        alice,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "pictures"),
            ("content", &format!("[fake.png]({fake})")),
        ],
    )
    .await;
    assert_eq!(
        rendered(bob, plain).await,
        format!("<p><a href=\"{fake}\">fake.png</a></p>")
    );

    // The uploader may ask whether they are made; nobody else, and not of a file.
    let status_of = |path: &str| format!("/thumbnail/status/{path}");
    let (status, body) = alice.get(&status_of(&path), &[]).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"result": "success", "msg": "", "has_thumbnail": true})
        )
    );
    let invalid = json!({"result": "error", "msg": "Invalid attachment", "code": "BAD_REQUEST"});
    for (who, path) in [
        (bob, path.clone()),
        (alice, fake.trim_start_matches("/user_uploads/").to_owned()),
        (alice, "1/nothing/here.png".to_owned()),
    ] {
        let (status, body) = who.get(&status_of(&path), &[]).await;
        assert_eq!(
            (status, &body),
            (StatusCode::BAD_REQUEST, &invalid),
            "{path}"
        );
    }

    // Thumbnails are derived: cleared, they are made again, the same.
    std::fs::remove_dir_all(server.dir.join("uploads/thumbnails")).unwrap();
    let (_, body) = alice.get(&status_of(&path), &[]).await;
    assert_eq!(body["has_thumbnail"], false);
    let again = download(server, Some(bob), &thumbnail).await;
    assert_eq!(again.bytes().await.unwrap().to_vec(), made);

    // After a restart: the same rendering (from the log) and the same thumbnail.
    let creds = bob.creds.clone().unwrap();
    let alice_creds = alice.creds.clone().unwrap();
    let server = c.server.stop().restart();
    let bob = server.api(Some(&creds));
    let alice = server.api(Some(&alice_creds));
    assert_eq!(rendered(&bob, id).await, expected);
    let resp = download(&server, Some(&bob), &thumbnail).await;
    assert_eq!(resp.bytes().await.unwrap().to_vec(), made);

    // Deleting the upload removes its thumbnails with its bytes, once no other upload holds
    // the same bytes (again.png does, until it goes too).
    let (_, list) = alice.get("/attachments", &[]).await;
    let id_of = |name: &str| {
        list["attachments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .unwrap()["id"]
            .as_u64()
            .unwrap()
    };
    // (Only the photo's thumbnail was made again since the clearing.)
    let kept = walk(&server.dir.join("uploads/thumbnails"));
    assert_eq!(kept.len(), 1, "{kept:?}");
    let (status, _) = alice
        .delete(&format!("/attachments/{}", id_of("photo.png")), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        download(&server, Some(&bob), &thumbnail).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(walk(&server.dir.join("uploads/thumbnails")).len(), 1);
    let (status, _) = alice
        .delete(&format!("/attachments/{}", id_of("again.png")), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let kept = walk(&server.dir.join("uploads/thumbnails"));
    assert!(kept.is_empty(), "{kept:?}");
}

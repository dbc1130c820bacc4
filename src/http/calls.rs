//! Video calls on a BigBlueButton server (`GET /calls/bigbluebutton/create`, then the browser's
//! `GET /calls/bigbluebutton/join`), on Nextcloud Talk (`POST /calls/nextcloud_talk/create`)
//! and on Constructor Groups (`POST /calls/constructorgroups/create`), as Zulip makes them.
//! Jitsi Meet calls need nothing from the server but its settings: clients make the room's URL
//! themselves. Every request to a call service goes through the outgoing-request guard.
//!
//! Creating a call hands the client a join link that carries the meeting's id and name and who
//! made it, sealed under the server's secret so nobody can point it at another meeting.
//! Following the link (signed in) asks the BigBlueButton server to create the meeting, through
//! the outgoing-request guard, and sends the browser to the meeting with the person's name: the
//! one who made the call as its moderator, everyone else as a viewer (Zulip 10, feature level
//! 337, for BigBlueButton 2.4 and later, which takes a role instead of passwords). Both requests
//! are signed with BigBlueButton's checksum (SHA-256 of the call's name, its query and the
//! shared secret).

use super::sealed::{sealed, unsealed};
use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult};
use crate::render::BigBlueButton;
use actix_web::{http::header, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// What a join link carries.
#[derive(Serialize, Deserialize)]
struct Meeting {
    meeting_id: String,
    name: String,
    /// Cameras off (`voice_only`).
    voice_only: bool,
    /// Who made the call: its moderator (none for links made before roles: all are viewers).
    #[serde(default)]
    creator: u64,
}

/// The purpose join links are sealed for.
const PURPOSE: &str = "bigbluebutton-join";
/// How long the BigBlueButton server may take, and how much of its answer is read.
const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Zulip's limit on a meeting's name (`MAX_TOPIC_NAME_LENGTH` of the topic it is made in).
const MAX_MEETING_NAME_CHARS: usize = 60;

fn configured(state: &AppState) -> ApiResult<&BigBlueButton> {
    state
        .site
        .video
        .big_blue_button
        .as_ref()
        .ok_or_else(|| ApiError::bad_request("BigBlueButton is not configured."))
}

/// `GET /calls/bigbluebutton/create`: a join link for a new meeting named `meeting_name`.
pub async fn create_bigbluebutton(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let name = params
        .str("meeting_name")
        .ok_or_else(|| ApiError::missing("meeting_name"))?;
    let voice_only = params.bool("voice_only")?.unwrap_or(false);
    configured(&state)?;
    let name: String = name.trim().chars().take(MAX_MEETING_NAME_CHARS).collect();
    let meeting = Meeting {
        meeting_id: format!("zulip-{}", random_digits(12)),
        name,
        voice_only,
        creator: auth.user_id.0,
    };
    let link = sealed(&state, PURPOSE, &meeting);
    Ok(params.success(json!({
        "url": format!("/calls/bigbluebutton/join?bigbluebutton={link}"),
    })))
}

/// `GET /calls/bigbluebutton/join?bigbluebutton=…`: for a signed-in browser, creates the
/// meeting on the BigBlueButton server and redirects to it; else to the login page.
pub async fn join_bigbluebutton(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    join(&req, &state).await
}

async fn join(req: &HttpRequest, state: &AppState) -> ApiResult<HttpResponse> {
    let Some(session) = super::auth::session_of(req, state) else {
        return Ok(HttpResponse::Found()
            .insert_header((header::LOCATION, "/login/"))
            .finish());
    };
    let server = configured(state)?.clone();
    let link =
        web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
            .ok()
            .and_then(|q| q.get("bigbluebutton").cloned())
            .ok_or_else(|| ApiError::missing("bigbluebutton"))?;
    let meeting: Meeting = unsealed(state, PURPOSE, &link)
        .ok_or_else(|| ApiError::bad_request("Invalid signature."))?;
    let full_name = state
        .engine
        .read(|s| s.users.get(session.user_id).map(|u| u.full_name.clone()))
        .unwrap_or_default();
    let create = query(&[
        ("meetingID", &meeting.meeting_id),
        ("name", &meeting.name),
        (
            "lockSettingsDisableCam",
            if meeting.voice_only { "true" } else { "false" },
        ),
    ]);
    let create_url = signed_url(&server, "create", &create);
    let created = ask(state, &create_url).await?;
    let role = if session.user_id.0 == meeting.creator {
        "MODERATOR"
    } else {
        "VIEWER"
    };
    let join = query(&[
        ("meetingID", &meeting.meeting_id),
        ("fullName", &full_name),
        ("role", role),
        ("createTime", &created),
    ]);
    Ok(HttpResponse::Found()
        .insert_header((header::LOCATION, signed_url(&server, "join", &join)))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish())
}

/// Asks the server to create the meeting: its `createTime`, or Zulip's error.
async fn ask(state: &AppState, url: &str) -> ApiResult<String> {
    let unreachable = || ApiError::bad_request("Error connecting to the BigBlueButton server.");
    let client = state.outgoing.client(TIMEOUT).map_err(|_| unreachable())?;
    let response = client.get(url).send().await.map_err(|e| {
        // Without the address: it carries the meeting and its checksum.
        tracing::warn!(error = %e.without_url(), "BigBlueButton server not reached");
        unreachable()
    })?;
    if !response.status().is_success() {
        tracing::warn!(status = %response.status(), "BigBlueButton server refused");
        return Err(unreachable());
    }
    let body = crate::outgoing::read_capped(response, MAX_ANSWER_BYTES)
        .await
        .map_err(|_| unreachable())?
        .ok_or_else(unreachable)?;
    created_time(&body)
}

/// The `createTime` of a BigBlueButton `create` answer, or Zulip's error for its refusals.
fn created_time(body: &[u8]) -> ApiResult<String> {
    use crate::identity::xml::{Bounds, Child, Document};
    let unexpected = || ApiError::bad_request("BigBlueButton server returned an unexpected error.");
    let bounds = Bounds {
        max_bytes: MAX_ANSWER_BYTES,
        max_depth: 8,
        max_elements: 256,
        max_attributes: 8,
    };
    let doc = Document::parse(body, bounds).map_err(|_| unexpected())?;
    let field = |name: &str| {
        doc.element_at(doc.root())
            .children
            .iter()
            .filter_map(|c| match c {
                Child::Element(i) => Some(*i),
                Child::Text(_) => None,
            })
            .find(|i| doc.element_at(*i).local == name)
            .map(|i| doc.text_of(i).trim().to_owned())
    };
    if field("messageKey").as_deref() == Some("checksumError") {
        return Err(ApiError::bad_request(
            "Error authenticating to the BigBlueButton server.",
        ));
    }
    if field("returncode").as_deref() != Some("SUCCESS") {
        return Err(unexpected());
    }
    field("createTime")
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(unexpected)
}

/// `BASE/api/CALL?QUERY&checksum=…`, the checksum as BigBlueButton's API defines it.
fn signed_url(server: &BigBlueButton, call: &str, query: &str) -> String {
    let checksum = checksum(call, query, &server.secret);
    format!("{}api/{call}?{query}&checksum={checksum}", server.url)
}

/// SHA-256 of the call's name, its query string and the shared secret, in hex.
fn checksum(call: &str, query: &str, secret: &str) -> String {
    let digest = Sha256::digest(format!("{call}{query}{secret}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A query string, each value percent-encoded (a space as `%20`, as BigBlueButton checks it).
fn query(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Nextcloud Talk's limit on a conversation's name.
const MAX_ROOM_NAME_CHARS: usize = 255;
/// How long Constructor Groups may take (Zulip's default for call services).
const CONSTRUCTOR_TIMEOUT: Duration = Duration::from_secs(5);

/// `POST /calls/nextcloud_talk/create` (Zulip 12, feature level 465): a public conversation
/// (guests may join) named `room_name` on the Nextcloud server, made with the server's Talk
/// account; answers its call URL.
pub async fn create_nextcloud_talk(
    state: web::Data<AppState>,
    _auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let name = params
        .str("room_name")
        .ok_or_else(|| ApiError::missing("room_name"))?;
    let server = state.site.video.nextcloud_talk.clone().ok_or_else(|| {
        ApiError::bad_request("Nextcloud Talk credentials have not been configured")
    })?;
    let name = if name.chars().count() > MAX_ROOM_NAME_CHARS {
        let kept: String = name.chars().take(MAX_ROOM_NAME_CHARS - 3).collect();
        format!("{kept}...")
    } else {
        name
    };
    let unreachable = |reason: String| {
        ApiError::bad_request(format!(
            "Error connecting to the Nextcloud Talk server: {reason}"
        ))
    };
    let client = state
        .outgoing
        .client(TIMEOUT)
        .map_err(|e| unreachable(e.to_string()))?;
    let response = client
        .post(format!(
            "{}/ocs/v2.php/apps/spreed/api/v4/room",
            server.origin
        ))
        .header("OCS-APIRequest", "true")
        .header(reqwest::header::ACCEPT, "application/json")
        .basic_auth(&server.username, Some(&server.password))
        .json(&json!({"roomType": 3, "roomName": name}))
        .send()
        .await
        .map_err(|e| {
            let e = e.without_url();
            tracing::warn!(error = %e, "Nextcloud Talk server not reached");
            unreachable(e.to_string())
        })?;
    let status = response.status();
    let body = crate::outgoing::read_capped(response, MAX_ANSWER_BYTES)
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    if !status.is_success() {
        let text: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        tracing::warn!(%status, "Nextcloud Talk server refused a new conversation");
        return Err(unreachable(format!("HTTP {}: {text}", status.as_u16())));
    }
    let failed = || ApiError::bad_request("Failed to create Nextcloud Talk call");
    let answer: serde_json::Value = serde_json::from_slice(&body).map_err(|_| failed())?;
    // A conversation's token is letters and digits; anything else is not put in a URL.
    let token = answer
        .pointer("/ocs/data/token")
        .and_then(serde_json::Value::as_str)
        .filter(|t| !t.is_empty() && t.len() <= 64 && t.bytes().all(|b| b.is_ascii_alphanumeric()))
        .ok_or_else(failed)?;
    Ok(params.success(json!({
        "url": format!("{}/index.php/call/{token}", server.origin),
    })))
}

/// `POST /calls/constructorgroups/create` (Zulip 12, feature level 460): a room on Constructor
/// Groups made for the caller, signed with the server's keys; answers its URL.
pub async fn create_constructor_groups(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let service = state.site.video.constructor_groups.clone().ok_or_else(|| {
        ApiError::bad_request("Constructor Groups credentials have not been configured")
    })?;
    let (email, full_name) = state
        .engine
        .read(|s| {
            s.users
                .get(auth.user_id)
                .map(|u| (u.email.clone(), u.full_name.clone()))
        })
        .ok_or_else(|| ApiError::internal("user missing"))?;
    let failed = || ApiError::bad_request("Failed to create Constructor Groups call");
    let signature: String =
        Sha256::digest(format!("{}|{}", service.access_key, service.secret_key).as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
    let room = format!("{full_name}'s Zulip room");
    let body = json!({
        "creator_email": email,
        "name": room,
        "fallback_name": format!(
            "{room} ({}-{})",
            crate::projections::emoji::REALM_ID,
            auth.user_id.0
        ),
    });
    let client = state
        .outgoing
        .client(CONSTRUCTOR_TIMEOUT)
        .map_err(|_| failed())?;
    let response = client
        .post(format!("{}/room/default", service.url))
        .header(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {}|{signature}", service.access_key),
        )
        .json(&body)
        .send()
        .await
        .map_err(|e| {
            tracing::warn!(error = %e.without_url(), "Constructor Groups not reached");
            failed()
        })?;
    if !response.status().is_success() {
        tracing::warn!(status = %response.status(), "Constructor Groups refused a new room");
        return Err(failed());
    }
    let answer = crate::outgoing::read_capped(response, MAX_ANSWER_BYTES)
        .await
        .ok()
        .flatten()
        .ok_or_else(failed)?;
    let answer: serde_json::Value = serde_json::from_slice(&answer).map_err(|_| failed())?;
    // Only a web address is handed to clients, which put it in a message.
    let url = answer
        .get("url")
        .and_then(serde_json::Value::as_str)
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
        .ok_or_else(|| {
            tracing::error!("Constructor Groups answered without a room URL");
            failed()
        })?;
    Ok(params.success(json!({ "url": url })))
}

fn random_digits(n: usize) -> String {
    crate::auth::random_bytes::<32>()
        .iter()
        .take(n)
        .map(|b| char::from(b'0' + b % 10))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_follow_bigbluebutton_s_definition() {
        // BigBlueButton's API documentation's example: the call name, the query, the secret.
        let q = query(&[("name", "Test Meeting"), ("meetingID", "abc123")]);
        assert_eq!(q, "name=Test%20Meeting&meetingID=abc123");
        let expected: String = Sha256::digest(b"createname=Test%20Meeting&meetingID=abc123s3cret")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(checksum("create", &q, "s3cret"), expected);
    }

    #[test]
    fn answers_are_read_within_bounds() {
        let ok = b"<response><returncode>SUCCESS</returncode><meetingID>m</meetingID>\
                   <createTime>1531155809613</createTime></response>";
        assert_eq!(created_time(ok).unwrap(), "1531155809613");
        let bad =
            b"<response><returncode>FAILED</returncode><messageKey>checksumError</messageKey>\
                    </response>";
        assert_eq!(
            created_time(bad).unwrap_err().body()["msg"],
            "Error authenticating to the BigBlueButton server."
        );
        for junk in [
            &b"<response><returncode>FAILED</returncode></response>"[..],
            b"not xml",
            b"<!DOCTYPE x [<!ENTITY a 'b'>]><response/>",
            b"<response><returncode>SUCCESS</returncode><createTime>x</createTime></response>",
        ] {
            assert_eq!(
                created_time(junk).unwrap_err().body()["msg"],
                "BigBlueButton server returned an unexpected error."
            );
        }
    }
}

//! Who may do what: one table of routes × kinds of caller, each cell the exact outcome.
//!
//! The callers are an owner, an administrator, a moderator, a member (subscribed to the private
//! channel), a guest, a generic bot owned by the member, a deactivated account, a wrong key and
//! no credentials at all. Each row runs once per caller; `{who}` in a path or value becomes the
//! caller's name, so that creations do not collide.

use crate::support::{Api, Creds, Server};
use reqwest::{Method, StatusCode};

const CALLERS: [&str; 9] = [
    "owner",
    "admin",
    "moderator",
    "member",
    "guest",
    "bot",
    "deactivated",
    "wrong_key",
    "anonymous",
];

/// An expected outcome: success, or an error message.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    Ok,
    Err(&'static str),
}
use Outcome::{Err as E, Ok as OK};

const ADMIN: Outcome = E("Must be an organization administrator");
const INSPECT: Outcome = E(
    "Not allowed to inspect the log: the organization's owners decide who may (can_inspect_log_group)",
);
const NO_CHANNEL: Outcome = E("Invalid channel ID");
const GUESTS: Outcome = E("Not allowed for guest users");
const NO_BOTS: Outcome = E("This endpoint does not accept bot requests.");
const DEACTIVATED: Outcome = E("Account is deactivated");
const WRONG_KEY: Outcome = E("Invalid API key");
const ANONYMOUS: Outcome = E("Not logged in: API authentication or user session required");

/// One route and its expected outcome per caller, in `CALLERS` order.
struct Row {
    method: Method,
    path: &'static str,
    params: &'static [(&'static str, &'static str)],
    expect: [Outcome; 9],
}

/// The three that never reach the route: deactivated, wrong key, anonymous.
const REFUSED: [Outcome; 3] = [DEACTIVATED, WRONG_KEY, ANONYMOUS];

/// Builds a row from six outcomes (owner … bot) plus the three refusals.
fn row(
    method: Method,
    path: &'static str,
    params: &'static [(&'static str, &'static str)],
    six: [Outcome; 6],
) -> Row {
    let mut expect = [OK; 9];
    expect[..6].copy_from_slice(&six);
    expect[6..].copy_from_slice(&REFUSED);
    Row {
        method,
        path,
        params,
        expect,
    }
}

fn rows() -> Vec<Row> {
    use Method as M;
    vec![
        row(M::GET, "/streams", &[], [OK, OK, OK, OK, OK, OK]),
        row(
            M::GET,
            "/streams/{public}",
            &[],
            [OK, OK, OK, OK, NO_CHANNEL, OK],
        ),
        // Administrators see a private channel's settings; other outsiders do not see it.
        row(
            M::GET,
            "/streams/{secret}",
            &[],
            [OK, OK, NO_CHANNEL, OK, NO_CHANNEL, NO_CHANNEL],
        ),
        row(
            M::GET,
            "/streams/{secret}/members",
            &[],
            // Subscriber lists are metadata: administrators see them.
            [OK, OK, NO_CHANNEL, OK, NO_CHANNEL, NO_CHANNEL],
        ),
        row(
            M::GET,
            "/get_stream_id",
            &[("stream", "public")],
            [OK, OK, OK, OK, E("Invalid channel name 'public'"), OK],
        ),
        row(
            M::POST,
            "/channels/create",
            &[("name", "made by {who}"), ("subscribers", "[]")],
            [OK, OK, OK, OK, GUESTS, OK],
        ),
        row(
            M::PATCH,
            "/streams/{public}",
            &[("description", "edited by {who}")],
            [
                OK,
                OK,
                E("You do not have permission to administer this channel."),
                E("You do not have permission to administer this channel."),
                NO_CHANNEL,
                E("You do not have permission to administer this channel."),
            ],
        ),
        row(
            M::POST,
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name": "public"}]"#)],
            [OK, OK, OK, OK, E("Unable to access channel (public)."), OK],
        ),
        row(
            M::POST,
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name": "secret"}]"#)],
            [
                E("Unable to access channel (secret)."),
                E("Unable to access channel (secret)."),
                E("Unable to access channel (secret)."),
                OK,
                E("Unable to access channel (secret)."),
                E("Unable to access channel (secret)."),
            ],
        ),
        row(
            M::PATCH,
            "/users/me/subscriptions/{public}",
            &[("property", "pin_to_top"), ("value", "true")],
            [
                OK,
                OK,
                OK,
                OK,
                E("Not subscribed to channel ID {public}"),
                OK,
            ],
        ),
        row(
            M::POST,
            "/user_topics",
            &[
                ("stream_id", "{public}"),
                ("topic", "t"),
                ("visibility_policy", "1"),
            ],
            [OK, OK, OK, OK, NO_CHANNEL, OK],
        ),
        row(
            M::POST,
            "/user_topics",
            &[
                ("stream_id", "{secret}"),
                ("topic", "t"),
                ("visibility_policy", "1"),
            ],
            [
                NO_CHANNEL, NO_CHANNEL, NO_CHANNEL, OK, NO_CHANNEL, NO_CHANNEL,
            ],
        ),
        row(M::GET, "/channel_folders", &[], [OK, OK, OK, OK, OK, OK]),
        row(
            M::POST,
            "/channel_folders/create",
            &[("name", "folder of {who}"), ("description", "")],
            [OK, OK, ADMIN, ADMIN, ADMIN, ADMIN],
        ),
        row(
            M::GET,
            "/user_groups",
            &[],
            [OK, OK, OK, OK, GUESTS, NO_BOTS],
        ),
        row(
            M::POST,
            "/user_groups/create",
            &[
                ("name", "group of {who}"),
                ("description", ""),
                ("members", "[]"),
            ],
            [OK, OK, OK, OK, GUESTS, NO_BOTS],
        ),
        row(
            M::GET,
            "/default_streams",
            &[],
            // Everyone learns the default channels (they are in /register too).
            [OK, OK, OK, OK, OK, OK],
        ),
        row(
            M::POST,
            "/default_streams",
            &[("stream_id", "{public}")],
            [OK, OK, ADMIN, ADMIN, ADMIN, ADMIN],
        ),
        row(M::GET, "/users", &[], [OK, OK, OK, OK, OK, OK]),
        // Only the first owner holds can_create_users.
        row(
            M::POST,
            "/users",
            &[
                ("email", "{who}-new@example.com"),
                ("password", "password1"),
                ("full_name", "New {who}"),
            ],
            [
                OK,
                E("User not authorized to create users"),
                ADMIN,
                ADMIN,
                ADMIN,
                ADMIN,
            ],
        ),
        // Account administration reaches the target only for administrators (999 is nobody).
        row(
            M::DELETE,
            "/users/999",
            &[],
            [
                E("No such user"),
                E("No such user"),
                ADMIN,
                ADMIN,
                ADMIN,
                ADMIN,
            ],
        ),
        row(
            M::PATCH,
            "/users/999",
            &[("full_name", "X")],
            [
                E("No such user"),
                E("No such user"),
                ADMIN,
                ADMIN,
                ADMIN,
                ADMIN,
            ],
        ),
        row(
            M::POST,
            "/users/999/reactivate",
            &[],
            [
                E("No such user"),
                E("No such user"),
                ADMIN,
                ADMIN,
                ADMIN,
                ADMIN,
            ],
        ),
        row(M::GET, "/realm/linkifiers", &[], [OK, OK, OK, OK, OK, OK]),
        row(
            M::POST,
            "/realm/filters",
            &[
                ("pattern", "{who}-(?P<id>[0-9]+)"),
                ("url_template", "https://x.example/{id}"),
            ],
            [OK, OK, ADMIN, ADMIN, ADMIN, ADMIN],
        ),
        row(
            M::DELETE,
            "/realm/profile_fields/999",
            &[],
            [
                E("Field id 999 not found."),
                E("Field id 999 not found."),
                ADMIN,
                ADMIN,
                ADMIN,
                ADMIN,
            ],
        ),
        row(
            M::POST,
            "/invites",
            &[
                ("invitee_emails", "{who}-invitee@example.com"),
                ("stream_ids", "[]"),
            ],
            [OK, OK, OK, OK, GUESTS, NO_BOTS],
        ),
        row(M::GET, "/invites", &[], [OK, OK, OK, OK, GUESTS, NO_BOTS]),
        row(
            M::POST,
            "/invites/multiuse",
            &[],
            [
                OK,
                OK,
                E("Insufficient permission"),
                E("Insufficient permission"),
                GUESTS,
                NO_BOTS,
            ],
        ),
        row(
            M::GET,
            "/users/1/subscriptions/{secret}",
            &[],
            [OK, OK, NO_CHANNEL, OK, NO_CHANNEL, NO_CHANNEL],
        ),
        row(
            M::POST,
            "/bots",
            &[
                ("full_name", "Bot of {who}"),
                ("short_name", "{who}-helper"),
            ],
            [OK, OK, OK, OK, GUESTS, NO_BOTS],
        ),
        row(M::GET, "/bots", &[], [OK, OK, OK, OK, GUESTS, NO_BOTS]),
        row(
            M::PATCH,
            "/realm",
            &[("description", "set by {who}")],
            [OK, OK, ADMIN, ADMIN, ADMIN, ADMIN],
        ),
        row(
            M::GET,
            "/realm/profile_fields",
            &[],
            [OK, OK, OK, OK, OK, OK],
        ),
        row(
            M::POST,
            "/realm/profile_fields",
            &[("name", "Field of {who}"), ("field_type", "1")],
            [OK, OK, ADMIN, ADMIN, ADMIN, ADMIN],
        ),
        row(
            M::PATCH,
            "/users/me/profile_data",
            &[("data", "[]")],
            [OK, OK, OK, OK, OK, NO_BOTS],
        ),
        row(M::GET, "/realm/emoji", &[], [OK, OK, OK, OK, OK, OK]),
        row(
            M::POST,
            "/users/me/presence",
            &[("status", "active")],
            [OK, OK, OK, OK, OK, OK],
        ),
        row(M::GET, "/realm/presence", &[], [OK, OK, OK, OK, OK, OK]),
        row(
            M::PATCH,
            "/settings",
            &[("enter_sends", "true")],
            [OK, OK, OK, OK, OK, OK],
        ),
        row(
            M::GET,
            "/admin/events",
            &[("limit", "1")],
            [OK, INSPECT, INSPECT, INSPECT, INSPECT, INSPECT],
        ),
        row(
            M::GET,
            "/admin/projections",
            &[("only", "realm")],
            [OK, INSPECT, INSPECT, INSPECT, INSPECT, INSPECT],
        ),
        row(
            M::GET,
            "/admin/verify",
            &[],
            [OK, OK, ADMIN, ADMIN, ADMIN, ADMIN],
        ),
        row(
            M::GET,
            "/admin/diff",
            &[("from_seq", "1"), ("to_seq", "2")],
            [OK, INSPECT, INSPECT, INSPECT, INSPECT, INSPECT],
        ),
    ]
}

/// The table as Markdown, for docs/security.md.
fn render_table() -> String {
    let mut out = String::from("| route | ");
    out.push_str(&CALLERS.join(" | "));
    out.push_str(" |\n|---|");
    out.push_str(&"---|".repeat(CALLERS.len()));
    out.push('\n');
    for row in rows() {
        let params: Vec<String> = row.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let route = if params.is_empty() {
            format!("`{} {}`", row.method, row.path)
        } else {
            format!("`{} {}` ({})", row.method, row.path, params.join(", "))
        };
        out.push_str(&format!("| {} |", route.replace('|', "\\|")));
        for outcome in row.expect {
            match outcome {
                OK => out.push_str(" ✓ |"),
                E(msg) => out.push_str(&format!(" {} |", msg.replace('|', "\\|"))),
            }
        }
        out.push('\n');
    }
    out
}

/// docs/security.md shows exactly this table (between its markers); `BLESS=1` rewrites it.
#[test]
fn the_security_document_shows_this_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/security.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = (
        "<!-- permission table: begin -->\n",
        "<!-- permission table: end -->",
    );
    let start = doc.find(begin).expect("begin marker") + begin.len();
    let stop = doc.find(end).expect("end marker");
    let table = render_table();
    if std::env::var("BLESS").as_deref() == Ok("1") {
        let updated = format!("{}{table}{}", &doc[..start], &doc[stop..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        &doc[start..stop],
        table,
        "docs/security.md is out of date: BLESS=1 cargo test security_document"
    );
}

/// Everyone the table calls, with the ids its paths need.
struct World {
    server: Server,
    callers: Vec<(&'static str, Option<Creds>)>,
    public: u64,
    secret: u64,
}

async fn world() -> World {
    // Hundreds of calls without valid credentials from one address: no per-address limit here
    // (it is tested in `security`).
    let server = Server::start_with(&["--rate-limit-ip", "0"]);
    let owner = server.owner();
    let as_owner = server.api(Some(&owner));
    let mut callers: Vec<(&'static str, Option<Creds>)> = vec![("owner", Some(owner.clone()))];
    for (who, role) in [
        ("admin", "200"),
        ("moderator", "300"),
        ("member", "400"),
        ("guest", "600"),
        ("deactivated", "400"),
    ] {
        let (id, creds) = server
            .create_member(&format!("{who}@example.com"), &format!("The {who}"))
            .await;
        let (status, body) = as_owner
            .call(Method::PATCH, &format!("/users/{id}"), &[("role", role)])
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if who == "deactivated" {
            assert_eq!(
                as_owner.delete(&format!("/users/{id}"), &[]).await.0,
                StatusCode::OK
            );
        }
        callers.push((who, Some(creds)));
    }
    let member = callers[3].1.clone().unwrap();
    let (_, body) = server
        .api(Some(&member))
        .post(
            "/bots",
            &[("full_name", "The bot"), ("short_name", "table")],
        )
        .await;
    let bot = Creds {
        email: format!("table-bot@{}", crate::users::email_domain(&server)),
        key: body["api_key"].as_str().unwrap().to_owned(),
    };
    callers.insert(5, ("bot", Some(bot)));
    callers.push((
        "wrong_key",
        Some(Creds {
            email: owner.email.clone(),
            key: "a".repeat(32),
        }),
    ));
    callers.push(("anonymous", None));
    let names: Vec<&str> = callers.iter().map(|(who, _)| *who).collect();
    assert_eq!(names, CALLERS);

    let (_, body) = as_owner
        .post(
            "/channels/create",
            &[("name", "public"), ("subscribers", "[]")],
        )
        .await;
    let public = body["id"].as_u64().unwrap();
    let member_id = server.api(Some(&member)).get("/users/me", &[]).await.1["user_id"]
        .as_u64()
        .unwrap();
    let (_, body) = as_owner
        .post(
            "/channels/create",
            &[
                ("name", "secret"),
                ("invite_only", "true"),
                ("subscribers", &format!("[{member_id}]")),
            ],
        )
        .await;
    let secret = body["id"].as_u64().unwrap();
    World {
        server,
        callers,
        public,
        secret,
    }
}

fn fill(text: &str, who: &str, world: &World) -> String {
    text.replace("{who}", who)
        .replace("{public}", &world.public.to_string())
        .replace("{secret}", &world.secret.to_string())
}

#[tokio::test]
async fn every_route_against_every_kind_of_caller() {
    let world = world().await;
    let mut failures = Vec::new();
    let mut checked = 0;
    for row in rows() {
        for (index, (who, creds)) in world.callers.iter().enumerate() {
            let api: Api = world.server.api(creds.as_ref());
            let path = fill(row.path, who, &world);
            let values: Vec<(String, String)> = row
                .params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), fill(v, who, &world)))
                .collect();
            let params: Vec<(&str, &str)> = values
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let (status, body) = api.call(row.method.clone(), &path, &params).await;
            let got = if status == StatusCode::OK {
                OK
            } else {
                // Messages are compared after the same substitution as the request.
                let msg = body["msg"].as_str().unwrap_or_default().to_owned();
                let expected = match row.expect[index] {
                    E(m) => fill(m, who, &world),
                    OK => String::new(),
                };
                if msg == expected {
                    row.expect[index]
                } else {
                    failures.push(format!("{} {path} as {who}: {status} {body}", row.method));
                    continue;
                }
            };
            if got != row.expect[index] {
                failures.push(format!(
                    "{} {path} as {who}: expected {:?}, got {status} {body}",
                    row.method, row.expect[index]
                ));
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cells differ:\n{}",
        failures.len(),
        rows().len() * CALLERS.len(),
        failures.join("\n")
    );
    assert_eq!(checked, rows().len() * CALLERS.len());
}

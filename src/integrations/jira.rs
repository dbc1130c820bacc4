//! `jira`: Jira Cloud and Server webhooks. The event type is the payload's `webhookEvent`:
//! issues created, updated (each changed field) and deleted, comments created, edited and
//! deleted (Jira's wiki markup turned into Markdown), attachments added. Links, sprints,
//! versions and worklogs are ignored. The topic is `KEY: summary`. People Jira names are
//! silently mentioned when the organization has them (by address), else named.

use super::text_at as text;
use super::{
    at, git::ends_with_punctuation, silent_mention, Outcome, PersonQuery, Post, Request, Res,
};
use regex::{Captures, Regex};
use serde_json::Value;
use std::sync::OnceLock;

/// The events that make messages (the event types).
pub const EVENT_TYPES: &[&str] = &[
    "jira:issue_created",
    "jira:issue_deleted",
    "jira:issue_updated",
    "comment_created",
    "comment_updated",
    "comment_deleted",
    "attachment_created",
];

/// Events Jira sends that say nothing worth a message.
const IGNORED: &[&str] = &[
    "issuelink_created",
    "issuelink_deleted",
    "jira:version_released",
    "jira:worklog_updated",
    "sprint_closed",
    "sprint_started",
    "worklog_created",
    "worklog_updated",
];

/// Formats a Jira webhook.
pub fn format(req: &Request<'_>) -> Outcome {
    let p = req.payload;
    let Some(event) = p.get("webhookEvent").and_then(Value::as_str) else {
        return Outcome::Malformed("no webhookEvent".into());
    };
    if IGNORED.contains(&event) {
        return Outcome::Ignored;
    }
    if !EVENT_TYPES.contains(&event) {
        return Outcome::Unsupported {
            event_type: event.to_owned(),
        };
    }
    match render(req, event) {
        Ok(post) => Outcome::Send {
            event_type: Some(event.to_owned()),
            posts: vec![post],
        },
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn render(req: &Request<'_>, event: &str) -> Res<Post> {
    let p = req.payload;
    let (key, title) = match p.get("issue") {
        Some(issue) => (
            text(issue, &["key"]).to_owned(),
            text(issue, &["fields", "summary"]).to_owned(),
        ),
        // Older Jira comment events carry no issue: its id is in the comment's address.
        None => {
            let address = text(p, &["comment", "self"]);
            let parts: Vec<&str> = address.split('/').collect();
            let id = parts.len().checked_sub(3).and_then(|i| parts.get(i));
            (
                id.copied().unwrap_or_default().to_owned(),
                "Upgrade Jira to get the issue title here.".to_owned(),
            )
        }
    };
    let issue = {
        let base = text(p, &["issue", "self"])
            .split_once("/rest/api/")
            .map(|(base, _)| base);
        match base {
            Some(base) if !base.is_empty() => format!("[{key}: {title}]({base}/browse/{key})"),
            _ => format!("{key}: {title}"),
        }
    };
    let person = |v: Option<&Value>| -> Res<String> { mention(req, v) };
    let assignee = match at(p, &["issue", "fields", "assignee"]) {
        Some(Value::Object(fields)) if !fields.is_empty() => {
            Some(person(at(p, &["issue", "fields", "assignee"]))?)
        }
        _ => None,
    };
    let assigned = assignee
        .as_ref()
        .map(|a| format!(" (assigned to {a})"))
        .unwrap_or_default();
    let body = match event {
        "jira:issue_created" => format!(
            "{} created {issue} with {} priority{assigned}.",
            person(p.get("user"))?,
            text(p, &["issue", "fields", "priority", "name"]).to_lowercase()
        ),
        "jira:issue_deleted" => {
            let end = if ends_with_punctuation(&title) {
                ""
            } else {
                "."
            };
            format!("{} deleted {issue}{end}", person(p.get("user"))?)
        }
        "jira:issue_updated" => {
            let mut body = format!("{} updated {issue}{assigned}:\n\n", person(p.get("user"))?);
            let items = at(p, &["changelog", "items"])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for item in &items {
                let field = text(item, &["field"]);
                let mut line = format!("* Changed {field}");
                if let Some(from) = item.get("fromString").and_then(Value::as_str) {
                    line.push_str(&format!(" from **{from}**"));
                }
                let target = match (&assignee, field) {
                    (Some(assignee), "assignee") => Some(assignee.clone()),
                    _ => match item.get("toString") {
                        Some(Value::String(to)) => Some(format!("**{to}**")),
                        Some(Value::Null) => Some("**None**".to_owned()),
                        _ => None,
                    },
                };
                if let Some(target) = target {
                    line.push_str(&format!(" to {target}"));
                }
                body.push_str(&line);
                body.push('\n');
            }
            body
        }
        "comment_created" | "comment_updated" | "comment_deleted" => {
            let verb = match event {
                "comment_created" => "commented on",
                "comment_updated" => "updated their comment on",
                _ => "deleted their comment on",
            };
            let mut comment = convert_markup(req, text(p, &["comment", "body"]));
            if event == "comment_deleted" {
                comment = format!("~~{comment}~~");
            }
            format!(
                "{} {verb} {issue}\n``` quote\n{comment}\n```",
                person(at(p, &["comment", "author"]))?
            )
        }
        "attachment_created" => format!(
            "{} uploaded [{}]({}) to {issue}.",
            person(at(p, &["attachment", "author"]))?,
            text(p, &["attachment", "filename"]),
            text(p, &["attachment", "content"])
        ),
        other => return Err(format!("unhandled event {other}")),
    };
    Ok(Post {
        topic: format!("{key}: {title}"),
        body,
    })
}

/// A person Jira names: silently mentioned when the organization has their address, else
/// their display name.
fn mention(req: &Request<'_>, user: Option<&Value>) -> Res<String> {
    let user = user.ok_or_else(|| "a person is missing".to_string())?;
    if let Some(email) = user.get("emailAddress").and_then(Value::as_str) {
        if let Some(found) = (req.person)(&PersonQuery::Email(email)) {
            return Ok(silent_mention(found));
        }
    }
    Ok(text(user, &["displayName"]).to_owned())
}

/// A regular expression made once (`None` if it did not compile, which leaves text as it is).
fn pattern(cell: &'static OnceLock<Option<Regex>>, source: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(source).ok()).as_ref()
}

/// `text` with every match of the pattern replaced by `with` (`$1` for a group).
fn replaced(
    cell: &'static OnceLock<Option<Regex>>,
    source: &str,
    text: &str,
    with: &str,
) -> String {
    match pattern(cell, source) {
        Some(regex) => regex.replace_all(text, with).into_owned(),
        None => text.to_owned(),
    }
}

/// Jira's wiki markup as Markdown: bold, monospace, quotes, code and quote blocks, links,
/// and `[~name]` mentions of people the organization has.
fn convert_markup(req: &Request<'_>, source: &str) -> String {
    static BOLD: OnceLock<Option<Regex>> = OnceLock::new();
    static MONO: OnceLock<Option<Regex>> = OnceLock::new();
    static BQ: OnceLock<Option<Regex>> = OnceLock::new();
    static QUOTE: OnceLock<Option<Regex>> = OnceLock::new();
    static NOFORMAT: OnceLock<Option<Regex>> = OnceLock::new();
    static CODE: OnceLock<Option<Regex>> = OnceLock::new();
    static LINK: OnceLock<Option<Regex>> = OnceLock::new();
    static TITLED: OnceLock<Option<Regex>> = OnceLock::new();
    static MENTION: OnceLock<Option<Regex>> = OnceLock::new();
    let text = replaced(&BOLD, r"\*([^*\n]+)\*", source, "**$1**");
    let text = replaced(&MONO, r"\{\{([^}\n]+)\}\}", &text, "`$1`");
    let text = replaced(&BQ, r"(?m)^bq\. ", &text, "> ");
    let text = replaced(
        &QUOTE,
        r"(?s)\{quote\}(.*?)\{quote\}",
        &text,
        "~~~ quote\n$1\n~~~",
    );
    let text = replaced(
        &NOFORMAT,
        r"(?s)\{noformat\}(.*?)\{noformat\}",
        &text,
        "~~~\n$1\n~~~",
    );
    let text = replaced(
        &CODE,
        r"(?s)\{code(?::[^}]*)?\}(.*?)\{code\}",
        &text,
        "~~~\n$1\n~~~",
    );
    let text = replaced(&LINK, r"\[([^\]|~\n]+)\]", &text, "[$1]($1)");
    let text = replaced(&TITLED, r"\[([^\]|\n]+)\|([^\]\n]+)\]", &text, "[$1]($2)");
    let text = match pattern(&MENTION, r"\[~([^\]\n]+)\]") {
        Some(regex) => regex
            .replace_all(&text, |c: &Captures<'_>| {
                match (req.person)(&PersonQuery::Name(&c[1])) {
                    Some(found) => silent_mention(found),
                    None => format!("**{}**", &c[1]),
                }
            })
            .into_owned(),
        None => text,
    };
    text.replace("\\!", "!")
}

//! `bitbucket2`: Bitbucket Cloud's webhooks. The payload's keys say what happened (a push, a
//! fork, a commit comment or status, an issue); pull requests and repository changes need the
//! `X-Event-Key` header. Pushes give one message per change (branches, tags, force pushes,
//! deletions; filtered by `branches`); the rest are worded as the other git integrations.

use super::git::{
    ends_with_punctuation, item_topic, push_commits_message, short_sha, Commit, ItemLine,
    COMMITS_LIMIT,
};
use super::number_at;
use super::text_at as s;
use super::{at, truthy, Outcome, Post, Request, Res};
use serde_json::Value;

/// The header that names pull request and repository events.
pub const EVENT_HEADER: &str = "X-Event-Key";

/// The event types (`only_events`/`exclude_events`).
pub const EVENT_TYPES: &[&str] = &[
    "change_commit_status",
    "pull_request_comment_created",
    "pull_request_updated",
    "pull_request_unapproved",
    "push",
    "pull_request_approved",
    "pull_request_fulfilled",
    "issue_created",
    "issue_commented",
    "fork",
    "pull_request_comment_updated",
    "pull_request_created",
    "pull_request_rejected",
    "repo:updated",
    "issue_updated",
    "commit_comment",
    "pull_request_comment_deleted",
];

const PULL_REQUEST_ACTIONS: &[&str] = &[
    "approved",
    "unapproved",
    "created",
    "updated",
    "rejected",
    "fulfilled",
    "comment_created",
    "comment_updated",
    "comment_deleted",
];

/// Formats a Bitbucket Cloud webhook.
pub fn format(req: &Request<'_>) -> Outcome {
    let p = req.payload;
    let has = |key: &str| p.get(key).is_some();
    let event = if has("push") {
        "push".to_owned()
    } else if has("fork") {
        "fork".to_owned()
    } else if has("comment") && has("commit") {
        "commit_comment".to_owned()
    } else if has("commit_status") {
        "change_commit_status".to_owned()
    } else if has("issue") {
        if has("changes") {
            "issue_updated"
        } else if has("comment") {
            "issue_commented"
        } else {
            "issue_created"
        }
        .to_owned()
    } else {
        let Some(header) = (req.header)(EVENT_HEADER) else {
            return Outcome::MissingHeader(EVENT_HEADER);
        };
        let action = header.strip_prefix("pullrequest:");
        match action {
            Some(action) if has("pullrequest") && PULL_REQUEST_ACTIONS.contains(&action) => {
                format!("pull_request_{action}")
            }
            None if header == "repo:updated" && !has("pullrequest") => header,
            _ => return Outcome::Unsupported { event_type: header },
        }
    };
    match render(req, &event) {
        Ok(posts) if posts.is_empty() => Outcome::Ignored,
        Ok(posts) => Outcome::Send {
            event_type: Some(event),
            posts,
        },
        Err(reason) => Outcome::Malformed(reason),
    }
}

/// A person as Bitbucket names them.
fn name(user: Option<&Value>) -> String {
    let user = user.cloned().unwrap_or(Value::Null);
    for key in ["display_name", "nickname"] {
        if let Some(n) = user.get(key).and_then(Value::as_str) {
            return n.to_owned();
        }
    }
    "Unknown user".to_owned()
}

fn render(req: &Request<'_>, event: &str) -> Res<Vec<Post>> {
    let p = req.payload;
    let repo = s(p, &["repository", "name"]);
    let actor = name(p.get("actor"));
    let include_title = (req.param)("topic").is_some();
    let one = |topic: String, body: String| Ok(vec![Post { topic, body }]);
    match event {
        "push" => push(req, repo, &actor),
        "fork" => one(
            repo.to_owned(),
            format!(
                "{actor} forked the repository into [{}]({}).",
                s(p, &["fork", "full_name"]),
                s(p, &["fork", "links", "html", "href"])
            ),
        ),
        "commit_comment" => {
            let sha = s(p, &["comment", "commit", "hash"]);
            let mut body = format!(
                "{actor} [commented]({}) on [{}]({})",
                s(p, &["comment", "links", "html", "href"]),
                short_sha(sha),
                s(p, &["comment", "commit", "links", "html", "href"])
            );
            match s(p, &["comment", "content", "raw"]) {
                "" => body.push('.'),
                text => body.push_str(&format!(":\n~~~ quote\n{text}\n~~~")),
            }
            one(repo.to_owned(), body)
        }
        "change_commit_status" => {
            let sha = s(p, &["commit_status", "links", "commit", "href"])
                .rsplit('/')
                .next()
                .unwrap_or_default();
            one(
                repo.to_owned(),
                format!(
                    "[System {}]({}) changed status of [{}]({}/commits/{sha}) to {}.",
                    s(p, &["commit_status", "key"]),
                    s(p, &["commit_status", "url"]),
                    short_sha(sha),
                    s(p, &["repository", "links", "html", "href"]),
                    s(p, &["commit_status", "state"])
                ),
            )
        }
        "issue_created" | "issue_updated" | "issue_commented" => {
            let issue = p.get("issue").cloned().unwrap_or(Value::Null);
            let id = number_at(&issue, &["id"]).unwrap_or_default();
            let title = s(&issue, &["title"]);
            let assignee = issue
                .get("assignee")
                .filter(|a| a.as_object().is_some_and(|o| !o.is_empty()))
                .map(|a| name(Some(a)));
            let comment_action = format!(
                "[commented]({}) on",
                s(p, &["comment", "links", "html", "href"])
            );
            let line = match event {
                "issue_created" => ItemLine {
                    user: &actor,
                    action: "created",
                    kind: "issue",
                    url: s(&issue, &["links", "html", "href"]),
                    number: Some(&id),
                    title: include_title.then_some(title),
                    message: Some(s(&issue, &["content", "raw"])),
                    assignee: assignee.as_deref(),
                    ..ItemLine::default()
                },
                "issue_updated" => ItemLine {
                    user: &actor,
                    action: "updated",
                    kind: "issue",
                    url: s(&issue, &["links", "html", "href"]),
                    number: Some(&id),
                    title: include_title.then_some(title),
                    ..ItemLine::default()
                },
                _ => ItemLine {
                    user: &actor,
                    action: &comment_action,
                    kind: "issue",
                    url: s(&issue, &["links", "html", "href"]),
                    number: Some(&id),
                    title: include_title.then_some(title),
                    ..ItemLine::default()
                },
            };
            one(item_topic(repo, "issue", &id, title), line.render())
        }
        "repo:updated" => {
            let mut lines = Vec::new();
            for field in [
                "website",
                "name",
                "links",
                "language",
                "full_name",
                "description",
            ] {
                let change = at(p, &["changes", field]).cloned().unwrap_or(Value::Null);
                let new = change.get("new");
                if !truthy(new) {
                    continue;
                }
                let new = value_text(new);
                let shown = if field == "full_name" {
                    "full name"
                } else {
                    field
                };
                let mut line = match change.get("old").filter(|o| truthy(Some(o))) {
                    Some(old) => format!(
                        "{actor} changed the {shown} of the **{repo}** repo from **{}** to **{new}**",
                        value_text(Some(old))
                    ),
                    None => format!("{actor} changed the {shown} of the **{repo}** repo to **{new}**"),
                };
                if !ends_with_punctuation(&new) {
                    line.push('.');
                }
                lines.push(line);
            }
            one(repo.to_owned(), lines.join("\n"))
        }
        _ => pull_request(req, event, repo, &actor, include_title),
    }
}

fn value_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => super::py_str(other),
        None => String::new(),
    }
}

fn pull_request(
    req: &Request<'_>,
    event: &str,
    repo: &str,
    actor: &str,
    include_title: bool,
) -> Res<Vec<Post>> {
    let p = req.payload;
    let pr = p.get("pullrequest").cloned().unwrap_or(Value::Null);
    let id = number_at(&pr, &["id"]).unwrap_or_default();
    let title = s(&pr, &["title"]);
    let url = s(&pr, &["links", "html", "href"]);
    let branches = (
        s(&pr, &["source", "branch", "name"]),
        s(&pr, &["destination", "branch", "name"]),
    );
    let reviewer = pr
        .get("reviewers")
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .map(|r| name(Some(r)));
    let comment_url = s(p, &["comment", "links", "html", "href"]);
    let comment_action = match event {
        "pull_request_comment_created" => format!("[commented]({comment_url}) on"),
        "pull_request_comment_updated" => format!("updated a [comment]({comment_url}) on"),
        _ => format!("deleted a [comment]({comment_url}) on"),
    };
    let base = ItemLine {
        user: actor,
        kind: "PR",
        url,
        number: Some(&id),
        title: include_title.then_some(title),
        ..ItemLine::default()
    };
    let line = match event {
        "pull_request_created" => ItemLine {
            action: "created",
            branches: Some(branches),
            assignee: reviewer.as_deref(),
            message: Some(s(&pr, &["description"])),
            ..base
        },
        "pull_request_updated" => ItemLine {
            action: "updated",
            assignee: reviewer.as_deref(),
            message: Some(s(&pr, &["description"])),
            ..base
        },
        "pull_request_approved" => ItemLine {
            action: "approved",
            ..base
        },
        "pull_request_unapproved" => ItemLine {
            action: "unapproved",
            ..base
        },
        "pull_request_rejected" => ItemLine {
            action: "rejected",
            ..base
        },
        "pull_request_fulfilled" => ItemLine {
            action: "merged",
            branches: Some(branches),
            ..base
        },
        _ => ItemLine {
            action: &comment_action,
            message: Some(s(p, &["comment", "content", "raw"])),
            ..base
        },
    };
    Ok(vec![Post {
        topic: item_topic(repo, "PR", &id, title),
        body: line.render(),
    }])
}

fn push(req: &Request<'_>, repo: &str, actor: &str) -> Res<Vec<Post>> {
    let p = req.payload;
    let changes = at(p, &["push", "changes"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let object = |change: &Value| -> Value {
        match change.get("new").filter(|n| !n.is_null()) {
            Some(new) => new.clone(),
            None => change.get("old").cloned().unwrap_or(Value::Null),
        }
    };
    // The last change's branch decides for the whole request (a tag decides nothing).
    if let Some(last) = changes.last() {
        let last = object(last);
        if s(&last, &["type"]) != "tag" {
            let branch = s(&last, &["name"]);
            if let Some(wanted) = (req.param)("branches") {
                if !wanted.split(',').any(|b| b.trim() == branch) {
                    return Ok(Vec::new());
                }
            }
        }
    }
    let mut posts = Vec::new();
    for change in &changes {
        let thing = object(change);
        let new = change.get("new").filter(|n| !n.is_null());
        if s(&thing, &["type"]) == "tag" {
            let (verb, tag) = match new {
                Some(new) => ("pushed", new.clone()),
                None => ("removed", change.get("old").cloned().unwrap_or(Value::Null)),
            };
            let tag_name = s(&tag, &["name"]);
            let mut body = format!(
                "{actor} {verb} tag [{tag_name}]({})",
                s(&tag, &["links", "html", "href"])
            );
            if !ends_with_punctuation(tag_name) {
                body.push('.');
            }
            posts.push(Post {
                topic: repo.to_owned(),
                body,
            });
            continue;
        }
        let branch = s(&thing, &["name"]);
        let topic = format!("{repo} / {branch}");
        let body = match new {
            None => format!("{actor} deleted branch {branch}."),
            Some(new) if change.get("forced").and_then(Value::as_bool) == Some(true) => format!(
                "{actor} [force pushed]({}) to branch {branch}. Head is now {}.",
                s(change, &["links", "html", "href"]),
                s(new, &["target", "hash"])
            ),
            Some(_) => {
                let commits: Vec<Commit> = change
                    .get("commits")
                    .and_then(Value::as_array)
                    .map(|list| {
                        list.iter()
                            .map(|c| Commit {
                                name: match at(c, &["author", "user"]) {
                                    Some(user) => name(Some(user)),
                                    None => s(c, &["author", "raw"])
                                        .split_whitespace()
                                        .next()
                                        .unwrap_or_default()
                                        .to_owned(),
                                },
                                sha: s(c, &["hash"]).to_owned(),
                                url: s(c, &["links", "html", "href"]).to_owned(),
                                message: s(c, &["message"]).to_owned(),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut body = push_commits_message(
                    actor,
                    s(change, &["links", "html", "href"]),
                    branch,
                    &commits,
                    false,
                    false,
                );
                // Bitbucket says when it left commits out: Zulip's "[and more commit(s)]".
                if change.get("truncated").and_then(Value::as_bool) == Some(true)
                    && commits.len() <= COMMITS_LIMIT
                {
                    body.push_str("\n[and more commit(s)]");
                }
                body
            }
        };
        posts.push(Post { topic, body });
    }
    Ok(posts)
}

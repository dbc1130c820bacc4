//! `gitea`: Gitea's (and Forgejo's) webhooks, by the `X-Gitea-Event` header: pushes (filtered by
//! `branches`), new branches, pull requests, issues, their comments, releases. Messages are
//! worded as the GitHub and GitLab ones (`git`), topics `repo / branch`, `repo / PR #id title`,
//! `repo / issue #n title`.

use super::git::{
    branch_from_ref, branch_selected, branch_topic, item_topic, push_commits_message,
    release_message, Commit, ItemLine,
};
use super::text_at as text;
use super::{at, req_array, req_str, Outcome, Post, Request, Res};
use serde_json::Value;

/// The header that names the event.
pub const EVENT_HEADER: &str = "X-Gitea-Event";

/// The events Gitea sends that make messages (the event types).
pub const EVENT_TYPES: &[&str] = &[
    "push",
    "create",
    "pull_request",
    "issues",
    "issue_comment",
    "release",
];

/// Formats a Gitea webhook.
pub fn format(req: &Request<'_>) -> Outcome {
    let Some(event) = (req.header)(EVENT_HEADER) else {
        return Outcome::MissingHeader(EVENT_HEADER);
    };
    if !EVENT_TYPES.contains(&event.as_str()) {
        return Outcome::Unsupported { event_type: event };
    }
    match render(req, &event) {
        Ok(Some(post)) => Outcome::Send {
            event_type: Some(event),
            posts: vec![post],
        },
        Ok(None) => Outcome::Ignored,
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn number(v: &Value, path: &[&str]) -> Res<String> {
    super::number_at(v, path).ok_or_else(|| format!("{} is missing", path.join(".")))
}

fn render(req: &Request<'_>, event: &str) -> Res<Option<Post>> {
    let p = req.payload;
    let repo = req_str(p, &["repository", "name"])?;
    let repo_url = req_str(p, &["repository", "html_url"])?;
    let include_title = (req.param)("topic").is_some();
    let (topic, body) = match event {
        "push" => {
            let branch = branch_from_ref(req_str(p, &["ref"])?);
            if !branch_selected((req.param)("branches").as_deref(), branch) {
                return Ok(None);
            }
            let commits = req_array(p, &["commits"])?
                .iter()
                .map(|c| {
                    let name = match text(c, &["author", "username"]) {
                        "" => text(c, &["author", "name"])
                            .split_whitespace()
                            .next()
                            .unwrap_or_default(),
                        username => username,
                    };
                    Ok(Commit {
                        name: name.to_owned(),
                        sha: req_str(c, &["id"])?.to_owned(),
                        url: req_str(c, &["url"])?.to_owned(),
                        message: req_str(c, &["message"])?.to_owned(),
                    })
                })
                .collect::<Res<Vec<_>>>()?;
            (
                branch_topic(repo, branch),
                push_commits_message(
                    req_str(p, &["sender", "username"])?,
                    text(p, &["compare_url"]),
                    branch,
                    &commits,
                    false,
                    false,
                ),
            )
        }
        "create" => {
            let git_ref = req_str(p, &["ref"])?;
            (
                branch_topic(repo, git_ref),
                format!(
                    "{} created [{git_ref}]({repo_url}/src/{git_ref}) branch.",
                    req_str(p, &["sender", "username"])?
                ),
            )
        }
        "pull_request" => {
            let pr = p.get("pull_request").ok_or("pull_request is missing")?;
            let merged = pr.get("merged").and_then(Value::as_bool) == Some(true);
            let (user, action) = if merged {
                (text(pr, &["merged_by", "username"]), "merged")
            } else {
                (text(p, &["sender", "username"]), text(p, &["action"]))
            };
            let assignee = at(pr, &["assignee", "login"]).and_then(Value::as_str);
            let n = number(pr, &["number"])?;
            let title = req_str(pr, &["title"])?;
            let branches = (action != "edited")
                .then(|| (text(pr, &["head", "ref"]), text(pr, &["base", "ref"])));
            let line = ItemLine {
                user,
                action,
                kind: "PR",
                url: req_str(pr, &["html_url"])?,
                number: Some(&n),
                title: include_title.then_some(title),
                branches,
                assignee,
                assignee_updated: assignee,
                ..ItemLine::default()
            };
            (
                // The topic carries the pull request's global id, the message its number.
                item_topic(repo, "PR", &number(pr, &["id"])?, title),
                line.render(),
            )
        }
        "issues" | "issue_comment" => {
            let issue = p.get("issue").ok_or("issue is missing")?;
            let n = number(issue, &["number"])?;
            let title = req_str(issue, &["title"])?;
            let url = format!("{repo_url}/issues/{n}");
            let assignee = at(issue, &["assignee", "login"]).and_then(Value::as_str);
            let user = req_str(p, &["sender", "login"])?;
            let body = if event == "issues" {
                ItemLine {
                    user,
                    action: text(p, &["action"]),
                    kind: "issue",
                    url: &url,
                    number: Some(&n),
                    title: include_title.then_some(title),
                    message: Some(text(issue, &["body"])),
                    assignee,
                    assignee_updated: assignee,
                    ..ItemLine::default()
                }
                .render()
            } else {
                let comment_url = req_str(p, &["comment", "html_url"])?;
                let action = match text(p, &["action"]) {
                    "created" => format!("[commented]({comment_url}) on"),
                    other => format!("{other} a [comment]({comment_url}) on"),
                };
                ItemLine {
                    user,
                    action: &action,
                    kind: "issue",
                    url: &url,
                    number: Some(&n),
                    title: include_title.then_some(title),
                    message: Some(text(p, &["comment", "body"])),
                    ..ItemLine::default()
                }
                .render()
            };
            (item_topic(repo, "issue", &n, title), body)
        }
        _ => {
            let release = p.get("release").ok_or("release is missing")?;
            let tag = req_str(release, &["tag_name"])?;
            let name = req_str(release, &["name"])?;
            (
                format!("{repo} / {tag} {name}"),
                release_message(
                    text(release, &["author", "username"]),
                    text(p, &["action"]),
                    name,
                    repo_url,
                    tag,
                ),
            )
        }
    };
    Ok(Some(Post { topic, body }))
}

//! `gitlab`: GitLab project webhooks, keyed by the `X-GitLab-Event` header, worded as Zulip's
//! GitLab integration.
//!
//! The event type reported for `only_events`/`exclude_events` is the event key: the header,
//! plus the object's action for issues, merge requests and wiki pages (`Issue Hook open`), or
//! the noted object's type for comments (`Note Hook MergeRequest`). When the user fixes the
//! topic, bodies name the title and start with a link to the project.

use super::git::{self, Commit, ItemLine};
use super::{
    at, bool_param, opt_str, req_array, req_int, req_str, truthy, Outcome, Post, Request, Res,
};
use serde_json::Value;

/// The header naming the event.
pub const EVENT_HEADER: &str = "X-GitLab-Event";

/// The `after` of a push that deleted its branch.
const ZERO_SHA: &str = "0000000000000000000000000000000000000000";

/// Formats a GitLab webhook request.
pub fn format(req: &Request<'_>) -> Outcome {
    match run(req) {
        Ok(outcome) => outcome,
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn run(req: &Request<'_>) -> Res<Outcome> {
    let Some(header) = (req.header)(EVENT_HEADER) else {
        return Ok(Outcome::MissingHeader(EVENT_HEADER));
    };
    let p = req.payload;
    let key = event_key(&header, p)?;
    if !SUPPORTED.contains(&key.as_str()) {
        return Ok(Outcome::Unsupported { event_type: key });
    }
    if key == "Push Hook" {
        let branch = git::branch_from_ref(req_str(p, &["ref"])?);
        if !git::branch_selected((req.param)("branches").as_deref(), branch) {
            return Ok(Outcome::Ignored);
        }
    }
    let use_mr_title = bool_param(req, "use_merge_request_title", true)?;
    let topic_param = (req.param)("topic");
    let include_title = topic_param.is_some();
    let mut body = body_for(&key, p, include_title)?;
    if topic_param.is_some_and(|t| !t.is_empty()) {
        body = format!("[[{}]({})] {body}", repo(p)?, project_url(p)?);
    }
    let topic = topic_for(&key, p, use_mr_title)?;
    Ok(Outcome::Send {
        event_type: Some(key),
        posts: vec![Post { topic, body }],
    })
}

/// Every event key this integration formats.
pub const SUPPORTED: &[&str] = &[
    "Push Hook",
    "Tag Push Hook",
    "Test Hook",
    "Issue Hook open",
    "Issue Hook close",
    "Issue Hook reopen",
    "Issue Hook update",
    "Confidential Issue Hook open",
    "Confidential Issue Hook close",
    "Confidential Issue Hook reopen",
    "Confidential Issue Hook update",
    "Note Hook Commit",
    "Note Hook MergeRequest",
    "Note Hook Issue",
    "Note Hook Snippet",
    "Confidential Note Hook Issue",
    "Merge Request Hook approved",
    "Merge Request Hook unapproved",
    "Merge Request Hook open",
    "Merge Request Hook update",
    "Merge Request Hook merge",
    "Merge Request Hook close",
    "Merge Request Hook reopen",
    "Wiki Page Hook create",
    "Wiki Page Hook update",
    "Job Hook",
    "Build Hook",
    "Pipeline Hook",
    "Release Hook",
];

/// The event key: the header, refined by the object's action or the noted object's type.
fn event_key(header: &str, p: &Value) -> Res<String> {
    let mut key = header.to_string();
    if header == "System Hook" {
        let name = match opt_str(p, &["event_name"])? {
            Some(name) => name,
            None => req_str(p, &["object_kind"])?,
        };
        key = format!("{} Hook", title_case(&name.replace('_', " ")));
    }
    match key.as_str() {
        "Confidential Issue Hook" | "Issue Hook" | "Merge Request Hook" | "Wiki Page Hook" => {
            let action = opt_str(p, &["object_attributes", "action"])?.unwrap_or("open");
            key = format!("{key} {action}");
        }
        "Confidential Note Hook" | "Note Hook" => {
            let noted = req_str(p, &["object_attributes", "noteable_type"])?;
            key = format!("{key} {noted}");
        }
        _ => {}
    }
    Ok(key)
}

/// Python's `str.title()`: each run of letters capitalised, the rest of it lowercased.
fn title_case(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_word = false;
    for c in text.chars() {
        if c.is_alphabetic() {
            if in_word {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
            in_word = true;
        } else {
            out.push(c);
            in_word = false;
        }
    }
    out
}

/// The project's name (`repository.name` for payloads without a project).
fn repo(p: &Value) -> Res<&str> {
    if p.get("project").is_some() {
        req_str(p, &["project", "name"])
    } else {
        req_str(p, &["repository", "name"])
    }
}

/// The project's web page (`repository.homepage` for payloads without a project).
fn project_url(p: &Value) -> Res<&str> {
    if p.get("project").is_some() {
        req_str(p, &["project", "web_url"])
    } else {
        req_str(p, &["repository", "homepage"])
    }
}

/// The acting user's name, for everything but pushes.
fn user(p: &Value) -> Res<&str> {
    req_str(p, &["user", "name"])
}

fn topic_for(key: &str, p: &Value, use_mr_title: bool) -> Res<String> {
    let mr_topic = |iid: String, title: &str| -> Res<String> {
        let title = if use_mr_title { title } else { "" };
        Ok(git::item_topic(repo(p)?, "MR", &iid, title)
            .trim()
            .to_string())
    };
    if key == "Push Hook" {
        return Ok(git::branch_topic(
            repo(p)?,
            git::branch_from_ref(req_str(p, &["ref"])?),
        ));
    }
    if key.starts_with("Job Hook") || key.starts_with("Build Hook") {
        return Ok(git::branch_topic(
            req_str(p, &["repository", "name"])?,
            git::branch_from_ref(req_str(p, &["ref"])?),
        ));
    }
    if key.starts_with("Pipeline Hook") {
        return Ok(git::branch_topic(
            repo(p)?,
            req_str(p, &["object_attributes", "ref"])?,
        ));
    }
    if key.starts_with("Merge Request Hook") {
        return mr_topic(
            req_int(p, &["object_attributes", "iid"])?,
            req_str(p, &["object_attributes", "title"])?,
        );
    }
    if key.starts_with("Issue Hook") || key.starts_with("Confidential Issue Hook") {
        return Ok(git::item_topic(
            repo(p)?,
            "issue",
            &req_int(p, &["object_attributes", "iid"])?,
            req_str(p, &["object_attributes", "title"])?,
        ));
    }
    match key {
        "Note Hook Issue" | "Confidential Note Hook Issue" => Ok(git::item_topic(
            repo(p)?,
            "issue",
            &req_int(p, &["issue", "iid"])?,
            req_str(p, &["issue", "title"])?,
        )),
        "Note Hook MergeRequest" => mr_topic(
            req_int(p, &["merge_request", "iid"])?,
            req_str(p, &["merge_request", "title"])?,
        ),
        "Note Hook Snippet" => Ok(git::item_topic(
            repo(p)?,
            "snippet",
            &req_int(p, &["snippet", "id"])?,
            req_str(p, &["snippet", "title"])?,
        )),
        _ => Ok(repo(p)?.to_string()),
    }
}

fn body_for(key: &str, p: &Value, include_title: bool) -> Res<String> {
    match key {
        "Push Hook" => push(p),
        "Tag Push Hook" => {
            let action = if truthy(p.get("checkout_sha")) {
                "pushed"
            } else {
                "removed"
            };
            Ok(git::tag_message(
                req_str(p, &["user_name"])?,
                action,
                git::tag_from_ref(req_str(p, &["ref"])?),
            ))
        }
        "Test Hook" => Ok(format!(
            "Webhook for **{}** has been configured successfully! :tada:",
            repo(p)?
        )),
        "Issue Hook open" | "Confidential Issue Hook open" => issue_created(p, include_title),
        "Issue Hook close" | "Confidential Issue Hook close" => {
            issue_event(p, "closed", include_title)
        }
        "Issue Hook reopen" | "Confidential Issue Hook reopen" => {
            issue_event(p, "reopened", include_title)
        }
        "Issue Hook update" | "Confidential Issue Hook update" => {
            issue_event(p, "updated", include_title)
        }
        "Merge Request Hook open" => mr_opened_or_updated(p, "created", include_title),
        "Merge Request Hook update" => {
            if truthy(at(p, &["object_attributes", "oldrev"])) {
                mr_event(p, "added commit(s) to", include_title)
            } else {
                mr_opened_or_updated(p, "updated", include_title)
            }
        }
        "Merge Request Hook merge" => mr_event(p, "merged", include_title),
        "Merge Request Hook close" => mr_event(p, "closed", include_title),
        "Merge Request Hook reopen" => mr_event(p, "reopened", include_title),
        "Merge Request Hook approved" => mr_event(p, "approved", include_title),
        "Merge Request Hook unapproved" => mr_event(p, "unapproved", include_title),
        "Note Hook Commit" => Ok(git::commit_comment_message(
            user(p)?,
            &format!(
                "[commented]({})",
                req_str(p, &["object_attributes", "url"])?
            ),
            req_str(p, &["commit", "url"])?,
            req_str(p, &["commit", "id"])?,
            opt_str(p, &["object_attributes", "note"])?,
        )),
        "Note Hook MergeRequest" => {
            let url = req_str(p, &["merge_request", "url"])?;
            noted(p, "MR", "merge_request", url, include_title)
        }
        "Note Hook Issue" | "Confidential Note Hook Issue" => {
            let url = req_str(p, &["issue", "url"])?;
            noted(p, "issue", "issue", url, include_title)
        }
        "Note Hook Snippet" => {
            let url = match opt_str(p, &["snippet", "url"])? {
                Some(url) => url.to_string(),
                None => format!(
                    "{}/-/snippets/{}",
                    req_str(p, &["project", "web_url"])?,
                    req_int(p, &["snippet", "id"])?
                ),
            };
            noted(p, "snippet", "snippet", &url, include_title)
        }
        "Wiki Page Hook create" | "Wiki Page Hook update" => {
            let action = if key.ends_with("create") {
                "created"
            } else {
                "updated"
            };
            Ok(format!(
                "{} {action} [wiki page \"{}\"]({}).",
                user(p)?,
                req_str(p, &["object_attributes", "title"])?,
                req_str(p, &["object_attributes", "url"])?
            ))
        }
        "Job Hook" | "Build Hook" => {
            let status = req_str(p, &["build_status"])?;
            Ok(format!(
                "Build {} from {} stage {}.",
                req_str(p, &["build_name"])?,
                req_str(p, &["build_stage"])?,
                status_phrase(status, "created")
            ))
        }
        "Pipeline Hook" => pipeline(p),
        "Release Hook" => release(p),
        other => Err(format!("no formatter for event {other}")),
    }
}

/// `was created` (for the status that means it), `started` for running, else
/// `changed status to {status}`.
fn status_phrase(status: &str, created_status: &str) -> String {
    if status == created_status {
        "was created".to_string()
    } else if status == "running" {
        "started".to_string()
    } else {
        format!("changed status to {status}")
    }
}

fn push(p: &Value) -> Res<String> {
    let user_name = req_str(p, &["user_name"])?;
    let branch = git::branch_from_ref(req_str(p, &["ref"])?);
    if opt_str(p, &["after"])? == Some(ZERO_SHA) {
        return Ok(format!("{user_name} deleted branch {branch}."));
    }
    let compare_url = format!(
        "{}/-/compare/{}...{}",
        project_url(p)?,
        req_str(p, &["before"])?,
        req_str(p, &["after"])?
    );
    let mut commits = Vec::new();
    for commit in req_array(p, &["commits"])? {
        commits.push(Commit {
            name: req_str(commit, &["author", "name"])?.to_string(),
            sha: req_str(commit, &["id"])?.to_string(),
            url: req_str(commit, &["url"])?.to_string(),
            message: req_str(commit, &["message"])?.to_string(),
        });
    }
    Ok(git::push_commits_message(
        user_name,
        &compare_url,
        branch,
        &commits,
        false,
        false,
    ))
}

/// Assignee names: `assignees[].name`, else the single `assignee`'s.
fn assignee_names(p: &Value) -> Res<Vec<String>> {
    let list: Vec<&Value> = match p.get("assignees") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(Value::Null) | None => match p.get("assignee") {
            Some(Value::Null) | None => Vec::new(),
            Some(single) => vec![single],
        },
        Some(_) => return Err("field assignees is not a list".to_string()),
    };
    list.into_iter()
        .map(|a| req_str(a, &["name"]).map(str::to_string))
        .collect()
}

/// `text` without `<!-- ... -->` comments (which may span lines).
fn strip_html_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        let Some(len) = rest[start + 4..].find("-->") else {
            break;
        };
        out.push_str(&rest[..start]);
        rest = &rest[start + 4 + len + 3..];
    }
    out.push_str(rest);
    out
}

/// The object's title, when titles are shown.
fn object_title(p: &Value, include_title: bool) -> Res<Option<&str>> {
    if include_title {
        req_str(p, &["object_attributes", "title"]).map(Some)
    } else {
        Ok(None)
    }
}

fn issue_created(p: &Value, include_title: bool) -> Res<String> {
    let description = opt_str(p, &["object_attributes", "description"])?
        .map(|d| strip_html_comments(d).trim_end().to_string());
    let assignees = assignee_names(p)?;
    let number = req_int(p, &["object_attributes", "iid"])?;
    Ok(ItemLine {
        user: user(p)?,
        action: "created",
        kind: "issue",
        url: req_str(p, &["object_attributes", "url"])?,
        number: Some(number.as_str()),
        title: object_title(p, include_title)?,
        message: description.as_deref(),
        assignees: &assignees,
        ..ItemLine::default()
    }
    .render())
}

fn issue_event(p: &Value, action: &str, include_title: bool) -> Res<String> {
    let number = req_int(p, &["object_attributes", "iid"])?;
    Ok(ItemLine {
        user: user(p)?,
        action,
        kind: "issue",
        url: req_str(p, &["object_attributes", "url"])?,
        number: Some(number.as_str()),
        title: object_title(p, include_title)?,
        ..ItemLine::default()
    }
    .render())
}

fn mr_opened_or_updated(p: &Value, action: &str, include_title: bool) -> Res<String> {
    let branches = if action == "created" {
        Some((
            req_str(p, &["object_attributes", "source_branch"])?,
            req_str(p, &["object_attributes", "target_branch"])?,
        ))
    } else {
        None
    };
    let assignees = assignee_names(p)?;
    let number = req_int(p, &["object_attributes", "iid"])?;
    Ok(ItemLine {
        user: user(p)?,
        action,
        kind: "MR",
        url: req_str(p, &["object_attributes", "url"])?,
        number: Some(number.as_str()),
        title: object_title(p, include_title)?,
        branches,
        message: opt_str(p, &["object_attributes", "description"])?,
        assignees: &assignees,
        ..ItemLine::default()
    }
    .render())
}

fn mr_event(p: &Value, action: &str, include_title: bool) -> Res<String> {
    let branches = if action == "merged" {
        Some((
            req_str(p, &["object_attributes", "source_branch"])?,
            req_str(p, &["object_attributes", "target_branch"])?,
        ))
    } else {
        None
    };
    let number = req_int(p, &["object_attributes", "iid"])?;
    Ok(ItemLine {
        user: user(p)?,
        action,
        kind: "MR",
        url: req_str(p, &["object_attributes", "url"])?,
        number: Some(number.as_str()),
        title: object_title(p, include_title)?,
        branches,
        ..ItemLine::default()
    }
    .render())
}

/// A comment on an MR, issue or snippet (`object` is its key in the payload).
fn noted(p: &Value, kind: &str, object: &str, url: &str, include_title: bool) -> Res<String> {
    let action = format!(
        "[commented]({}) on",
        req_str(p, &["object_attributes", "url"])?
    );
    let id_field = if object == "snippet" { "id" } else { "iid" };
    let number = req_int(p, &[object, id_field])?;
    let title = if include_title {
        Some(req_str(p, &[object, "title"])?)
    } else {
        None
    };
    Ok(ItemLine {
        user: user(p)?,
        action: &action,
        kind,
        url,
        number: Some(number.as_str()),
        title,
        message: opt_str(p, &["object_attributes", "note"])?,
        ..ItemLine::default()
    }
    .render())
}

fn pipeline(p: &Value) -> Res<String> {
    let id = req_int(p, &["object_attributes", "id"])?;
    let status = req_str(p, &["object_attributes", "status"])?;
    let home = project_url(p)?;
    let mut builds = String::new();
    for build in req_array(p, &["builds"])? {
        builds.push_str(&format!(
            "* [{}]({home}/-/jobs/{}) - {}\n",
            req_str(build, &["name"])?,
            req_int(build, &["id"])?,
            req_str(build, &["status"])?
        ));
    }
    builds.pop();
    Ok(format!(
        "[Pipeline ({id})]({home}/-/pipelines/{id}) {} with build(s):\n{builds}.",
        status_phrase(status, "pending")
    ))
}

fn release(p: &Value) -> Res<String> {
    let action = req_str(p, &["action"])?;
    let name = req_str(p, &["name"])?;
    let tag = req_str(p, &["tag"])?;
    if action == "delete" {
        return Ok(format!("Release {name} for tag {tag} was deleted."));
    }
    let mut out = format!(
        "Release [{name}]({}) for tag {tag} was {action}d.",
        req_str(p, &["url"])?
    );
    if let Some(description) = opt_str(p, &["description"])?.filter(|d| !d.is_empty()) {
        out.push_str(&git::quote(description));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::{run_fixture, run_value, single};

    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!(
                "../../tests/fixtures/webhooks/gitlab/",
                $name,
                ".json"
            ))
        };
    }

    fn run(event: &str, payload: &str, params: &[(&str, &str)]) -> Outcome {
        run_fixture(format, &[("X-Gitlab-Event", event)], payload, params)
    }

    fn post(event: &str, payload: &str) -> (Option<String>, Post) {
        single(run(event, payload, &[]))
    }

    const PROJECT: &str = "https://gitlab.example.test/ada/chronicle-demo";

    #[test]
    fn push() {
        let (event, p) = post("Push Hook", fixture!("push"));
        assert_eq!(event.as_deref(), Some("Push Hook"));
        assert_eq!(p.topic, "chronicle-demo / main");
        assert_eq!(
            p.body,
            format!(
                "Ada Lovelace [pushed]({PROJECT}/-/compare/aaaa111122223333444455556666777788889999...cccc111122223333444455556666777788889999) \
                 2 commits to branch main. Commits by Ada Lovelace (1) and Grace Hopper (1).\n\n\
                 * Add the search page ([bbbb1111222]({PROJECT}/-/commit/bbbb111122223333444455556666777788889999))\n\
                 * Fix search paging ([cccc1111222]({PROJECT}/-/commit/cccc111122223333444455556666777788889999))"
            )
        );
    }

    #[test]
    fn push_filtered_by_branches() {
        assert_eq!(
            run("Push Hook", fixture!("push"), &[("branches", "release")]),
            Outcome::Ignored
        );
    }

    #[test]
    fn deleted_branch() {
        let (_, p) = post("Push Hook", fixture!("push_deleted_branch"));
        assert_eq!(p.topic, "chronicle-demo / spike");
        assert_eq!(p.body, "Ada Lovelace deleted branch spike.");
    }

    #[test]
    fn tag_push() {
        let (event, p) = post("Tag Push Hook", fixture!("tag_push"));
        assert_eq!(event.as_deref(), Some("Tag Push Hook"));
        assert_eq!(p.topic, "chronicle-demo");
        assert_eq!(p.body, "Ada Lovelace pushed tag v2.1.0.");
    }

    #[test]
    fn issue_opened_with_assignees() {
        let (event, p) = post("Issue Hook", fixture!("issue_open"));
        assert_eq!(event.as_deref(), Some("Issue Hook open"));
        assert_eq!(p.topic, "chronicle-demo / issue #3 Emoji picker is slow");
        assert_eq!(
            p.body,
            format!(
                "Ada Lovelace created [issue #3]({PROJECT}/-/issues/3) (assigned to Grace Hopper and Ada Lovelace):\n\n\
                 ~~~ quote\nOpening it takes two seconds.\n~~~"
            )
        );
    }

    #[test]
    fn issue_opened_with_topic_param_links_the_project() {
        let (_, p) = single(run(
            "Issue Hook",
            fixture!("issue_open"),
            &[("topic", "triage")],
        ));
        assert!(
            p.body.starts_with(&format!(
                "[[chronicle-demo]({PROJECT})] Ada Lovelace created [issue #3 Emoji picker is slow]({PROJECT}/-/issues/3) (assigned to"
            )),
            "{}",
            p.body
        );
    }

    #[test]
    fn merge_request_opened() {
        let (event, p) = post("Merge Request Hook", fixture!("mr_open"));
        assert_eq!(event.as_deref(), Some("Merge Request Hook open"));
        assert_eq!(p.topic, "chronicle-demo / MR #5 Speed up the emoji picker");
        assert_eq!(
            p.body,
            format!(
                "Grace Hopper created [MR #5]({PROJECT}/-/merge_requests/5) from `fast-emoji` to `main` (assigned to Ada Lovelace):\n\n\
                 ~~~ quote\nCaches the emoji index.\n~~~"
            )
        );
        let untitled = single(run(
            "Merge Request Hook",
            fixture!("mr_open"),
            &[("use_merge_request_title", "false")],
        ))
        .1;
        assert_eq!(untitled.topic, "chronicle-demo / MR #5");
    }

    #[test]
    fn merge_request_merged() {
        let (event, p) = post("Merge Request Hook", fixture!("mr_merge"));
        assert_eq!(event.as_deref(), Some("Merge Request Hook merge"));
        assert_eq!(
            p.body,
            format!("Ada Lovelace merged [MR #5]({PROJECT}/-/merge_requests/5) from `fast-emoji` to `main`.")
        );
    }

    #[test]
    fn note_on_a_merge_request() {
        let (event, p) = post("Note Hook", fixture!("note_mr"));
        assert_eq!(event.as_deref(), Some("Note Hook MergeRequest"));
        assert_eq!(p.topic, "chronicle-demo / MR #5 Speed up the emoji picker");
        assert_eq!(
            p.body,
            format!(
                "Ada Lovelace [commented]({PROJECT}/-/merge_requests/5#note_901) on [MR #5]({PROJECT}/-/merge_requests/5):\n\n\
                 ~~~ quote\nNice, much faster here.\n~~~"
            )
        );
    }

    #[test]
    fn unknown_events_are_unsupported() {
        let mut payload: Value = serde_json::from_str(fixture!("mr_merge")).unwrap();
        payload["object_attributes"]["action"] = Value::String("approval".to_string());
        assert_eq!(
            run_value(
                format,
                &[("X-Gitlab-Event", "Merge Request Hook")],
                &payload,
                &[]
            ),
            Outcome::Unsupported {
                event_type: "Merge Request Hook approval".to_string()
            }
        );
        assert_eq!(
            run("Deployment Hook", fixture!("push"), &[]),
            Outcome::Unsupported {
                event_type: "Deployment Hook".to_string()
            }
        );
        assert_eq!(
            run_fixture(format, &[], fixture!("push"), &[]),
            Outcome::MissingHeader("X-GitLab-Event")
        );
    }

    #[test]
    fn helpers() {
        assert_eq!(title_case("merge request"), "Merge Request");
        assert_eq!(title_case("tag push"), "Tag Push");
        assert_eq!(
            strip_html_comments("a<!-- hidden\nline -->b<!-- open"),
            "ab<!-- open"
        );
    }
}

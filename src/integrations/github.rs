//! `github`: GitHub repository and organization webhooks, keyed by the `X-GitHub-Event`
//! header, worded as Zulip's GitHub integration.
//!
//! The event type reported for `only_events`/`exclude_events` is Zulip's name for the event
//! (`push_commits`, `opened_pull_request`, `issue_labeled_or_unlabeled`...), not GitHub's.
//! When the user fixes the topic (`topic` parameter), pull request and issue lines name their
//! title, since the topic no longer does.

use super::git::{self, Commit, ItemLine};
use super::{
    at, bool_param, opt_str, req, req_array, req_bool, req_int, req_str, truthy, Outcome, Post,
    Request, Res,
};
use serde_json::Value;

/// The header naming the event.
pub const EVENT_HEADER: &str = "X-GitHub-Event";

/// Events accepted and deliberately not posted.
pub const IGNORED_EVENTS: &[&str] = &[
    "check_suite",
    "label",
    "meta",
    "milestone",
    "organization",
    "project_card",
    "repository_vulnerability_alert",
];

/// Pull request actions accepted and deliberately not posted.
const IGNORED_PULL_REQUEST_ACTIONS: &[&str] = &[
    "approved",
    "converted_to_draft",
    "labeled",
    "review_request_removed",
    "unlabeled",
];

/// Team actions accepted and deliberately not posted.
const IGNORED_TEAM_ACTIONS: &[&str] = &[
    "added_to_repository",
    "created",
    "deleted",
    "removed_from_repository",
];

/// Headers whose Zulip event name is the header itself.
const PLAIN_EVENTS: &[&str] = &[
    "commit_comment",
    "create",
    "delete",
    "deployment",
    "deployment_status",
    "discussion",
    "discussion_comment",
    "fork",
    "gollum",
    "issue_comment",
    "member",
    "membership",
    "page_build",
    "ping",
    "public",
    "pull_request_review_comment",
    "release",
    "repository",
    "star",
    "status",
    "team_add",
    "watch",
];

/// Every event type this integration posts (the names `only_events`/`exclude_events` use).
pub const EVENT_TYPES: &[&str] = &[
    "assigned_or_unassigned_pull_request",
    "check_run",
    "closed_pull_request",
    "commit_comment",
    "create",
    "delete",
    "deployment",
    "deployment_status",
    "discussion",
    "fork",
    "gollum",
    "issue_comment",
    "issue_labeled_or_unlabeled",
    "issue_milestoned_or_demilestoned",
    "issues",
    "issues_opened_via_transfer",
    "issues_transferred",
    "locked_or_unlocked_pull_request",
    "member",
    "membership",
    "opened_pull_request",
    "page_build",
    "ping",
    "public",
    "pull_request_auto_merge",
    "pull_request_ready_for_review",
    "pull_request_review",
    "pull_request_review_comment",
    "pull_request_review_requested",
    "push_commits",
    "push_tags",
    "release",
    "repository",
    "star",
    "status",
    "team",
    "team_add",
    "updated_pull_request",
    "watch",
];

/// Formats a GitHub webhook request.
pub fn format(req: &Request<'_>) -> Outcome {
    match run(req) {
        Ok(outcome) => outcome,
        Err(reason) => Outcome::Malformed(reason),
    }
}

/// How a request is classified before any body is built.
enum Kind {
    Event(String),
    Ignore,
    Unsupported(String),
}

fn run(req: &Request<'_>) -> Res<Outcome> {
    let Some(header) = (req.header)(EVENT_HEADER) else {
        return Ok(Outcome::MissingHeader(EVENT_HEADER));
    };
    let p = req.payload;
    if bool_param(req, "ignore_private_repositories", false)?
        && at(p, &["repository", "private"]).and_then(Value::as_bool) == Some(true)
    {
        return Ok(Outcome::Ignored);
    }
    let event = match classify(&header, p, req)? {
        Kind::Event(event) => event,
        Kind::Ignore => return Ok(Outcome::Ignored),
        Kind::Unsupported(event_type) => return Ok(Outcome::Unsupported { event_type }),
    };
    if unchanged_comment_edit(&header, p) {
        return Ok(Outcome::Ignored);
    }
    let include_title = (req.param)("topic").is_some();
    let topic = topic_for(&event, p)?;
    let body = body_for(&event, p, include_title)?;
    Ok(Outcome::Send {
        event_type: Some(event),
        posts: vec![Post { topic, body }],
    })
}

/// Zulip's event name for a request, or why there is none.
fn classify(header: &str, p: &Value, req: &Request<'_>) -> Res<Kind> {
    let action = opt_str(p, &["action"])?;
    let unsupported = || Kind::Unsupported(format!("{header}:{}", action.unwrap_or("???")));
    let event = |name: &str| -> Res<Kind> { Ok(Kind::Event(name.to_string())) };
    match header {
        "pull_request" => match req_str(p, &["action"])? {
            "opened" | "reopened" => event("opened_pull_request"),
            "synchronize" | "edited" => event("updated_pull_request"),
            "assigned" | "unassigned" => event("assigned_or_unassigned_pull_request"),
            "closed" => event("closed_pull_request"),
            "review_requested" => event("pull_request_review_requested"),
            "ready_for_review" => event("pull_request_ready_for_review"),
            "locked" | "unlocked" => event("locked_or_unlocked_pull_request"),
            "auto_merge_enabled" | "auto_merge_disabled" => event("pull_request_auto_merge"),
            a if IGNORED_PULL_REQUEST_ACTIONS.contains(&a) => Ok(Kind::Ignore),
            _ => Ok(unsupported()),
        },
        "pull_request_review" => {
            if action == Some("edited") && !truthy(p.get("changes")) {
                Ok(Kind::Ignore)
            } else {
                event("pull_request_review")
            }
        }
        "push" => {
            let git_ref = req_str(p, &["ref"])?;
            if git_ref.starts_with("refs/heads/gh-readonly-queue/") {
                Ok(Kind::Ignore)
            } else if let Some(branch) = git_ref.strip_prefix("refs/heads/") {
                if git::branch_selected((req.param)("branches").as_deref(), branch) {
                    event("push_commits")
                } else {
                    Ok(Kind::Ignore)
                }
            } else {
                event("push_tags")
            }
        }
        "issues" => match req_str(p, &["action"])? {
            "labeled" | "unlabeled" => event("issue_labeled_or_unlabeled"),
            "milestoned" | "demilestoned" => event("issue_milestoned_or_demilestoned"),
            "transferred" => event("issues_transferred"),
            "opened" if at(p, &["changes", "old_issue"]).is_some() => {
                event("issues_opened_via_transfer")
            }
            _ => event("issues"),
        },
        "check_run" => {
            if req_str(p, &["check_run", "status"])? == "completed" {
                event("check_run")
            } else {
                Ok(Kind::Ignore)
            }
        }
        "team" => match req_str(p, &["action"])? {
            "edited" => event("team"),
            a if IGNORED_TEAM_ACTIONS.contains(&a) => Ok(Kind::Ignore),
            a => Ok(Kind::Unsupported(format!("unsupported team action {a}"))),
        },
        h if PLAIN_EVENTS.contains(&h) => event(h),
        h if IGNORED_EVENTS.contains(&h) => Ok(Kind::Ignore),
        _ => Ok(unsupported()),
    }
}

/// A comment "edit" that left the text as it was (GitHub sends these; Zulip stays quiet).
fn unchanged_comment_edit(header: &str, p: &Value) -> bool {
    if !header.contains("comment") || header.contains("discussion") {
        return false;
    }
    if p.get("action").and_then(Value::as_str) != Some("edited") {
        return false;
    }
    match (
        at(p, &["changes", "body", "from"]),
        at(p, &["comment", "body"]),
    ) {
        (Some(from), Some(body)) => from == body,
        _ => false,
    }
}

fn repo(p: &Value) -> Res<&str> {
    req_str(p, &["repository", "name"])
}

fn sender(p: &Value) -> Res<&str> {
    req_str(p, &["sender", "login"])
}

fn topic_for(event: &str, p: &Value) -> Res<String> {
    if event.contains("pull_request") {
        return Ok(git::item_topic(
            repo(p)?,
            "PR",
            &req_int(p, &["pull_request", "number"])?,
            req_str(p, &["pull_request", "title"])?,
        ));
    }
    if event.starts_with("issue") {
        let kind = if at(p, &["issue", "pull_request"]).is_some() {
            "PR"
        } else {
            "issue"
        };
        return Ok(git::item_topic(
            repo(p)?,
            kind,
            &req_int(p, &["issue", "number"])?,
            req_str(p, &["issue", "title"])?,
        ));
    }
    if event.starts_with("deployment") {
        return Ok(format!(
            "{} / Deployment on {}",
            repo(p)?,
            req_str(p, &["deployment", "environment"])?
        ));
    }
    if event.starts_with("discussion") {
        return Ok(format!(
            "{} discussion #{}: {}",
            repo(p)?,
            req_int(p, &["discussion", "number"])?,
            req_str(p, &["discussion", "title"])?
        ));
    }
    Ok(match event {
        "membership" => format!("{} organization", req_str(p, &["organization", "login"])?),
        "team" => format!("team {}", req_str(p, &["team", "name"])?),
        "push_commits" => git::branch_topic(repo(p)?, git::branch_from_ref(req_str(p, &["ref"])?)),
        "gollum" => git::branch_topic(repo(p)?, "wiki pages"),
        "check_run" => format!("{} / checks", repo(p)?),
        "ping" if !truthy(p.get("repository")) => {
            req_str(p, &["organization", "login"])?.to_string()
        }
        _ => repo(p)?.to_string(),
    })
}

fn body_for(event: &str, p: &Value, include_title: bool) -> Res<String> {
    match event {
        "ping" => Ok(format!(
            "GitHub webhook has been successfully configured by {}.",
            sender(p)?
        )),
        "push_commits" => push_commits(p),
        "push_tags" => Ok(git::tag_message(
            sender(p)?,
            if req_bool(p, &["created"])? {
                "pushed"
            } else {
                "removed"
            },
            git::tag_from_ref(req_str(p, &["ref"])?),
        )),
        "create" | "delete" => Ok(format!(
            "{} {}d {} {}.",
            sender(p)?,
            event,
            req_str(p, &["ref_type"])?,
            req_str(p, &["ref"])?
        )),
        "opened_pull_request" | "updated_pull_request" => {
            pull_request_opened_or_updated(p, include_title)
        }
        "assigned_or_unassigned_pull_request" => pull_request_assignment(p, include_title),
        "closed_pull_request" => pull_request_closed(p, include_title),
        "pull_request_review_requested" => pull_request_review_requested(p, include_title),
        "pull_request_ready_for_review" => {
            let (number, url) = pr_ref(p)?;
            let title = pr_title_suffix(p, include_title)?;
            Ok(format!(
                "**{}** has marked [PR #{number}{title}]({url}) as ready for review.",
                sender(p)?
            ))
        }
        "locked_or_unlocked_pull_request" => {
            let (number, url) = pr_ref(p)?;
            if req_str(p, &["action"])? == "unlocked" {
                Ok(format!(
                    "{} has unlocked [PR #{number}]({url}).",
                    sender(p)?
                ))
            } else {
                let reason = opt_str(p, &["pull_request", "active_lock_reason"])?
                    .filter(|r| !r.is_empty())
                    .unwrap_or("None");
                Ok(format!(
                    "{} has locked [PR #{number}]({url}) as {reason} and limited conversation to collaborators.",
                    sender(p)?
                ))
            }
        }
        "pull_request_auto_merge" => {
            let (number, url) = pr_ref(p)?;
            let verb = if req_str(p, &["action"])? == "auto_merge_disabled" {
                "disabled"
            } else {
                "enabled"
            };
            Ok(format!(
                "{} has {verb} auto merge for [PR #{number}]({url}).",
                sender(p)?
            ))
        }
        "pull_request_review" => pull_request_review(p, include_title),
        "pull_request_review_comment" => pull_request_review_comment(p, include_title),
        "issues" => issue(p, include_title),
        "issue_labeled_or_unlabeled" => issue_labeled(p, include_title),
        "issue_milestoned_or_demilestoned" => issue_milestoned(p, include_title),
        "issues_transferred" => Ok(format!(
            "{} transferred [issue #{} {}]({}) to [{}/#{}]({}).",
            sender(p)?,
            req_int(p, &["issue", "number"])?,
            req_str(p, &["issue", "title"])?,
            req_str(p, &["issue", "html_url"])?,
            req_str(p, &["changes", "new_repository", "full_name"])?,
            req_int(p, &["changes", "new_issue", "number"])?,
            req_str(p, &["changes", "new_issue", "html_url"])?,
        )),
        "issues_opened_via_transfer" => Ok(format!(
            "[Issue #{} {}]({}) was transferred from [{}#{}]({}).",
            req_int(p, &["issue", "number"])?,
            req_str(p, &["issue", "title"])?,
            req_str(p, &["issue", "html_url"])?,
            req_str(p, &["changes", "old_repository", "full_name"])?,
            req_int(p, &["changes", "old_issue", "number"])?,
            req_str(p, &["changes", "old_issue", "html_url"])?,
        )),
        "issue_comment" => issue_comment(p, include_title),
        "release" => {
            let tag = req_str(p, &["release", "tag_name"])?;
            let name = opt_str(p, &["release", "name"])?
                .filter(|n| !n.is_empty())
                .unwrap_or(tag);
            Ok(git::release_message(
                sender(p)?,
                req_str(p, &["action"])?,
                name,
                req_str(p, &["release", "html_url"])?,
                tag,
            ))
        }
        "commit_comment" => {
            let comment_url = req_str(p, &["comment", "html_url"])?;
            let commit_url = comment_url.split('#').next().unwrap_or(comment_url);
            Ok(git::commit_comment_message(
                sender(p)?,
                &format!("[commented]({comment_url})"),
                commit_url,
                req_str(p, &["comment", "commit_id"])?,
                opt_str(p, &["comment", "body"])?,
            ))
        }
        "fork" => Ok(format!(
            "{} forked [{}]({}).",
            sender(p)?,
            req_str(p, &["forkee", "name"])?,
            req_str(p, &["forkee", "html_url"])?
        )),
        "watch" => Ok(format!(
            "{} starred the repository [{}]({}).",
            sender(p)?,
            req_str(p, &["repository", "full_name"])?,
            req_str(p, &["repository", "html_url"])?
        )),
        "star" => {
            let verb = if req_str(p, &["action"])? == "created" {
                "starred"
            } else {
                "unstarred"
            };
            Ok(format!(
                "[{}]({}) {verb} the repository [{}]({}).",
                sender(p)?,
                req_str(p, &["sender", "html_url"])?,
                req_str(p, &["repository", "full_name"])?,
                req_str(p, &["repository", "html_url"])?
            ))
        }
        "public" => Ok(format!(
            "{} made the repository [{}]({}) public.",
            sender(p)?,
            req_str(p, &["repository", "full_name"])?,
            req_str(p, &["repository", "html_url"])?
        )),
        "repository" => Ok(format!(
            "{} {} the repository [{}]({}).",
            sender(p)?,
            req_str(p, &["action"])?,
            req_str(p, &["repository", "full_name"])?,
            req_str(p, &["repository", "html_url"])?
        )),
        "member" => Ok(format!(
            "{} {} [{}]({}) to [{}]({}).",
            sender(p)?,
            req_str(p, &["action"])?,
            req_str(p, &["member", "login"])?,
            req_str(p, &["member", "html_url"])?,
            repo(p)?,
            req_str(p, &["repository", "html_url"])?
        )),
        "membership" => {
            let action = req_str(p, &["action"])?;
            let preposition = if action == "removed" { "from" } else { "to" };
            Ok(format!(
                "{} {action} [{}]({}) {preposition} the {} team.",
                sender(p)?,
                req_str(p, &["member", "login"])?,
                req_str(p, &["member", "html_url"])?,
                req_str(p, &["team", "name"])?
            ))
        }
        "team_add" => Ok(format!(
            "The repository [{}]({}) was added to team {}.",
            req_str(p, &["repository", "full_name"])?,
            req_str(p, &["repository", "html_url"])?,
            req_str(p, &["team", "name"])?
        )),
        "team" => team_edited(p),
        "status" => {
            let state = req_str(p, &["state"])?;
            let status = match opt_str(p, &["target_url"])?.filter(|u| !u.is_empty()) {
                Some(target) => format!("[{state}]({target})"),
                None => state.to_string(),
            };
            Ok(format!(
                "[{}]({}) changed its status to {status}.",
                git::short_sha(req_str(p, &["sha"])?),
                req_str(p, &["commit", "html_url"])?
            ))
        }
        "check_run" => {
            let head_sha = req_str(p, &["check_run", "head_sha"])?;
            let conclusion = opt_str(p, &["check_run", "conclusion"])?.unwrap_or("None");
            Ok(format!(
                "Check [{}]({}) {} ({conclusion}). ([{}]({}/commit/{head_sha}))",
                req_str(p, &["check_run", "name"])?,
                req_str(p, &["check_run", "html_url"])?,
                req_str(p, &["check_run", "status"])?,
                git::short_sha(head_sha),
                req_str(p, &["repository", "html_url"])?
            ))
        }
        "deployment" => Ok(format!("{} created new deployment.", sender(p)?)),
        "deployment_status" => Ok(format!(
            "Deployment changed status to {}.",
            req_str(p, &["deployment_status", "state"])?
        )),
        "page_build" => page_build(p),
        "gollum" => {
            let mut out = format!("{}:", sender(p)?);
            for page in req_array(p, &["pages"])? {
                out.push_str(&format!(
                    "\n* {} [{}]({})",
                    req_str(page, &["action"])?,
                    req_str(page, &["title"])?,
                    req_str(page, &["html_url"])?
                ));
            }
            Ok(out)
        }
        "discussion" => {
            let body = opt_str(p, &["discussion", "body"])?.unwrap_or("");
            Ok(format!(
                "{} created [discussion #{}]({}) in {}:\n\n~~~ quote\n### {}\n{body}\n~~~",
                sender(p)?,
                req_int(p, &["discussion", "number"])?,
                req_str(p, &["discussion", "html_url"])?,
                req_str(p, &["discussion", "category", "name"])?,
                req_str(p, &["discussion", "title"])?
            ))
        }
        "discussion_comment" => {
            let number = req_int(p, &["discussion", "number"])?;
            let title = if include_title {
                Some(req_str(p, &["discussion", "title"])?)
            } else {
                None
            };
            let action = comment_action(p)?;
            Ok(ItemLine {
                user: sender(p)?,
                action: &action,
                kind: "discussion",
                url: req_str(p, &["discussion", "html_url"])?,
                number: Some(number.as_str()),
                title,
                message: opt_str(p, &["comment", "body"])?,
                ..ItemLine::default()
            }
            .render())
        }
        other => Err(format!("no formatter for event {other}")),
    }
}

fn push_commits(p: &Value) -> Res<String> {
    let mut commits = Vec::new();
    for commit in req_array(p, &["commits"])? {
        let name = match opt_str(commit, &["author", "username"])?.filter(|n| !n.is_empty()) {
            Some(username) => username,
            None => req_str(commit, &["author", "name"])?,
        };
        commits.push(Commit {
            name: name.to_string(),
            sha: req_str(commit, &["id"])?.to_string(),
            url: req_str(commit, &["url"])?.to_string(),
            message: req_str(commit, &["message"])?.to_string(),
        });
    }
    Ok(git::push_commits_message(
        sender(p)?,
        opt_str(p, &["compare"])?.unwrap_or(""),
        git::branch_from_ref(req_str(p, &["ref"])?),
        &commits,
        req_bool(p, &["deleted"])?,
        req_bool(p, &["forced"])?,
    ))
}

/// The pull request's number and link.
fn pr_ref(p: &Value) -> Res<(String, &str)> {
    Ok((
        req_int(p, &["pull_request", "number"])?,
        req_str(p, &["pull_request", "html_url"])?,
    ))
}

/// ` {title}` when titles are shown, else "".
fn pr_title_suffix(p: &Value, include_title: bool) -> Res<String> {
    Ok(if include_title {
        format!(" {}", req_str(p, &["pull_request", "title"])?)
    } else {
        String::new()
    })
}

/// The pull request title, when titles are shown.
fn pr_title(p: &Value, include_title: bool) -> Res<Option<&str>> {
    if include_title {
        req_str(p, &["pull_request", "title"]).map(Some)
    } else {
        Ok(None)
    }
}

/// Whether `changes` names `key`.
fn changed(p: &Value, key: &str) -> bool {
    at(p, &["changes", key]).is_some()
}

fn pull_request_opened_or_updated(p: &Value, include_title: bool) -> Res<String> {
    let action = req_str(p, &["action"])?;
    let action = if action == "synchronize" {
        "updated"
    } else {
        action
    };
    let assignee = if truthy(at(p, &["pull_request", "assignee"])) {
        Some(req_str(p, &["pull_request", "assignee", "login"])?)
    } else {
        None
    };
    let message = if changed(p, "body") || action == "opened" {
        opt_str(p, &["pull_request", "body"])?
    } else {
        None
    };
    let branches = if action == "opened" {
        Some((
            req_str(p, &["pull_request", "head", "label"])?,
            req_str(p, &["pull_request", "base", "label"])?,
        ))
    } else {
        None
    };
    let (number, url) = pr_ref(p)?;
    Ok(ItemLine {
        user: sender(p)?,
        action,
        kind: "PR",
        url,
        number: Some(number.as_str()),
        title: pr_title(p, include_title)?,
        branches,
        message,
        assignee,
        ..ItemLine::default()
    }
    .render())
}

fn pull_request_assignment(p: &Value, include_title: bool) -> Res<String> {
    let (number, url) = pr_ref(p)?;
    Ok(ItemLine {
        user: sender(p)?,
        action: req_str(p, &["action"])?,
        kind: "PR",
        url,
        number: Some(number.as_str()),
        title: pr_title(p, include_title)?,
        assignee_updated: Some(req_str(p, &["assignee", "login"])?),
        ..ItemLine::default()
    }
    .render())
}

fn pull_request_closed(p: &Value, include_title: bool) -> Res<String> {
    let action = if req_bool(p, &["pull_request", "merged"])? {
        "merged"
    } else {
        "closed without merge"
    };
    let (number, url) = pr_ref(p)?;
    Ok(ItemLine {
        user: sender(p)?,
        action,
        kind: "PR",
        url,
        number: Some(number.as_str()),
        title: pr_title(p, include_title)?,
        ..ItemLine::default()
    }
    .render())
}

fn pull_request_review_requested(p: &Value, include_title: bool) -> Res<String> {
    let mut reviewers = Vec::new();
    if p.get("requested_reviewer").is_some() {
        reviewers.push(format!(
            "[{}]({})",
            req_str(p, &["requested_reviewer", "login"])?,
            req_str(p, &["requested_reviewer", "html_url"])?
        ));
    }
    if p.get("requested_team").is_some() {
        reviewers.push(format!(
            "[{}]({})",
            req_str(p, &["requested_team", "name"])?,
            req_str(p, &["requested_team", "html_url"])?
        ));
    }
    let reviewers = match reviewers.split_last() {
        None => return Err("review request names no reviewer".to_string()),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    };
    let (number, url) = pr_ref(p)?;
    let title = pr_title_suffix(p, include_title)?;
    Ok(format!(
        "**{}** requested {reviewers} for a review on [PR #{number}{title}]({url}).",
        sender(p)?
    ))
}

fn pull_request_review(p: &Value, include_title: bool) -> Res<String> {
    let title = if include_title {
        Some(format!(
            "for #{} {}",
            req_int(p, &["pull_request", "number"])?,
            req_str(p, &["pull_request", "title"])?
        ))
    } else {
        None
    };
    Ok(ItemLine {
        user: sender(p)?,
        action: "submitted",
        kind: "PR review",
        url: req_str(p, &["review", "html_url"])?,
        title: title.as_deref(),
        message: opt_str(p, &["review", "body"])?,
        ..ItemLine::default()
    }
    .render())
}

fn pull_request_review_comment(p: &Value, include_title: bool) -> Res<String> {
    let action = req_str(p, &["action"])?;
    let message = if action == "created" {
        Some(req_str(p, &["comment", "body"])?)
    } else {
        None
    };
    let title = if include_title {
        Some(format!(
            "on #{} {}",
            req_int(p, &["pull_request", "number"])?,
            req_str(p, &["pull_request", "title"])?
        ))
    } else {
        None
    };
    Ok(ItemLine {
        user: sender(p)?,
        action,
        kind: "PR review comment",
        url: req_str(p, &["comment", "html_url"])?,
        title: title.as_deref(),
        message,
        ..ItemLine::default()
    }
    .render())
}

/// The issue title, when titles are shown.
fn issue_title(p: &Value, include_title: bool) -> Res<Option<&str>> {
    if include_title {
        req_str(p, &["issue", "title"]).map(Some)
    } else {
        Ok(None)
    }
}

fn issue(p: &Value, include_title: bool) -> Res<String> {
    let action = req_str(p, &["action"])?;
    let message = if matches!(action, "assigned" | "unassigned") {
        None
    } else {
        opt_str(p, &["issue", "body"])?
    };
    let assignee_updated = if p.get("assignee").is_some() {
        Some(req_str(p, &["assignee", "login"])?)
    } else {
        None
    };
    let number = req_int(p, &["issue", "number"])?;
    Ok(ItemLine {
        user: sender(p)?,
        action,
        kind: "issue",
        url: req_str(p, &["issue", "html_url"])?,
        number: Some(number.as_str()),
        title: issue_title(p, include_title)?,
        message,
        assignee_updated,
        ..ItemLine::default()
    }
    .render())
}

/// ` {title}` after the issue number when titles are shown.
fn issue_title_suffix(p: &Value, include_title: bool) -> Res<String> {
    Ok(issue_title(p, include_title)?
        .map(|t| format!(" {t}"))
        .unwrap_or_default())
}

fn issue_labeled(p: &Value, include_title: bool) -> Res<String> {
    let (verb, preposition) = if req_str(p, &["action"])? == "labeled" {
        ("added", "to")
    } else {
        ("removed", "from")
    };
    Ok(format!(
        "[{}]({}) {verb} the {} label {preposition} [Issue #{}{}]({}).",
        sender(p)?,
        req_str(p, &["sender", "html_url"])?,
        req_str(p, &["label", "name"])?,
        req_int(p, &["issue", "number"])?,
        issue_title_suffix(p, include_title)?,
        req_str(p, &["issue", "html_url"])?
    ))
}

fn issue_milestoned(p: &Value, include_title: bool) -> Res<String> {
    let (verb, preposition) = if req_str(p, &["action"])? == "milestoned" {
        ("added", "to")
    } else {
        ("removed", "from")
    };
    Ok(format!(
        "[{}]({}) {verb} milestone [{}]({}) {preposition} [issue #{}{}]({}).",
        sender(p)?,
        req_str(p, &["sender", "html_url"])?,
        req_str(p, &["milestone", "title"])?,
        req_str(p, &["milestone", "html_url"])?,
        req_int(p, &["issue", "number"])?,
        issue_title_suffix(p, include_title)?,
        req_str(p, &["issue", "html_url"])?
    ))
}

/// `[commented](url) on` for a new comment, `{action} a [comment](url) on` otherwise.
fn comment_action(p: &Value) -> Res<String> {
    let action = req_str(p, &["action"])?;
    let url = req_str(p, &["comment", "html_url"])?;
    Ok(if action == "created" {
        format!("[commented]({url}) on")
    } else {
        format!("{action} a [comment]({url}) on")
    })
}

fn issue_comment(p: &Value, include_title: bool) -> Res<String> {
    let kind = if at(p, &["issue", "pull_request"]).is_some() {
        "PR"
    } else {
        "issue"
    };
    let action = comment_action(p)?;
    let number = req_int(p, &["issue", "number"])?;
    Ok(ItemLine {
        user: sender(p)?,
        action: &action,
        kind,
        url: req_str(p, &["issue", "html_url"])?,
        number: Some(number.as_str()),
        title: issue_title(p, include_title)?,
        message: opt_str(p, &["comment", "body"])?,
        ..ItemLine::default()
    }
    .render())
}

fn team_edited(p: &Value) -> Res<String> {
    let changes = req(p, &["changes"])?;
    let Some(changes) = changes.as_object() else {
        return Err("field changes is not an object".to_string());
    };
    if changes.contains_key("description") {
        return Ok(format!(
            "**{}** changed the team description to:\n\n~~~ quote\n{}\n~~~",
            sender(p)?,
            req_str(p, &["team", "description"])?
        ));
    }
    if changes.contains_key("name") {
        return Ok(format!(
            "Team `{}` was renamed to `{}`.",
            req_str(p, &["changes", "name", "from"])?,
            req_str(p, &["team", "name"])?
        ));
    }
    if changes.contains_key("privacy") {
        return Ok(format!(
            "Team visibility changed to `{}`",
            req_str(p, &["team", "privacy"])?
        ));
    }
    let mut keys: Vec<&str> = changes.keys().map(String::as_str).collect();
    keys.sort_unstable();
    Ok(format!("Team has changes to `{}` data.", keys.join("/")))
}

fn page_build(p: &Value) -> Res<String> {
    let status = opt_str(p, &["build", "status"])?;
    let action = match status {
        None | Some("null") => "has yet to be built".to_string(),
        Some("building") => "is being built".to_string(),
        Some("errored") => format!(
            "has failed: {}",
            git::quote(req_str(p, &["build", "error", "message"])?)
        ),
        Some("built") => "has finished building".to_string(),
        Some(other) => format!("is {other}"),
    };
    Ok(format!(
        "GitHub Pages build, triggered by {}, {action}.",
        req_str(p, &["build", "pusher", "login"])?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::{run_fixture, run_value, single};

    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!(
                "../../tests/fixtures/webhooks/github/",
                $name,
                ".json"
            ))
        };
    }

    fn run(event: &str, payload: &str, params: &[(&str, &str)]) -> Outcome {
        run_fixture(format, &[("X-GitHub-Event", event)], payload, params)
    }

    fn post(event: &str, payload: &str) -> (Option<String>, Post) {
        single(run(event, payload, &[]))
    }

    const REPO: &str = "https://github.com/ada/chronicle-demo";

    #[test]
    fn ping() {
        let (event, p) = post("ping", fixture!("ping"));
        assert_eq!(event.as_deref(), Some("ping"));
        assert_eq!(p.topic, "chronicle-demo");
        assert_eq!(
            p.body,
            "GitHub webhook has been successfully configured by ada."
        );
    }

    #[test]
    fn push_one_commit() {
        let (event, p) = post("push", fixture!("push_1_commit"));
        assert_eq!(event.as_deref(), Some("push_commits"));
        assert_eq!(p.topic, "chronicle-demo / main");
        assert_eq!(
            p.body,
            format!(
                "ada [pushed]({REPO}/compare/1111111111aa...2222222222bb) 1 commit to branch main.\n\n\
                 * Fix the README typo ([2222222222b]({REPO}/commit/2222222222bbccddeeff00112233445566778899))"
            )
        );
    }

    #[test]
    fn push_with_other_committers() {
        let (_, p) = post("push", fixture!("push_other_committers"));
        assert_eq!(
            p.body,
            format!(
                "ada [pushed]({REPO}/compare/3333333333cc...6666666666ff) 3 commits to branch feature/search. \
                 Commits by grace (2) and ada (1).\n\n\
                 * Add search box ([4444444444d]({REPO}/commit/4444444444dd))\n\
                 * Wire search to the API ([5555555555e]({REPO}/commit/5555555555ee))\n\
                 * Test search ([6666666666f]({REPO}/commit/6666666666ff))"
            )
        );
        assert_eq!(p.topic, "chronicle-demo / feature/search");
    }

    #[test]
    fn push_of_more_than_twenty_commits_is_truncated() {
        let mut payload: Value = serde_json::from_str(fixture!("push_1_commit")).unwrap();
        let template = payload["commits"][0].clone();
        let commits: Vec<Value> = (0..23)
            .map(|i| {
                let mut c = template.clone();
                c["id"] = Value::String(format!("{i:040}"));
                c["message"] = Value::String(format!("Commit {i}"));
                c
            })
            .collect();
        payload["commits"] = Value::Array(commits);
        let (_, p) = single(run_value(
            format,
            &[("X-GitHub-Event", "push")],
            &payload,
            &[],
        ));
        let lines: Vec<&str> = p.body.lines().collect();
        assert!(
            lines[0].ends_with(") 23 commits to branch main."),
            "{}",
            lines[0]
        );
        assert_eq!(lines.len(), 2 + 20 + 1);
        assert_eq!(
            lines[2],
            format!("* Commit 0 ([00000000000]({REPO}/commit/2222222222bbccddeeff00112233445566778899))")
        );
        assert_eq!(lines[22], "[and 3 more commit(s)]");
    }

    #[test]
    fn force_push_without_commits() {
        let (_, p) = post("push", fixture!("push_force_no_commits"));
        assert_eq!(
            p.body,
            format!(
                "ada [force pushed]({REPO}/compare/7777777777aa...8888888888bb) the branch main."
            )
        );
    }

    #[test]
    fn deleted_branch() {
        let (event, p) = post("push", fixture!("push_deleted_branch"));
        assert_eq!(event.as_deref(), Some("push_commits"));
        assert_eq!(p.topic, "chronicle-demo / old-ideas");
        assert_eq!(
            p.body,
            format!(
                "ada [deleted]({REPO}/compare/9999999999aa...000000000000) the branch old-ideas."
            )
        );
    }

    #[test]
    fn branches_filter_only_lets_listed_branches_through() {
        let only_dev = run(
            "push",
            fixture!("push_1_commit"),
            &[("branches", "dev, release")],
        );
        assert_eq!(only_dev, Outcome::Ignored);
        let with_main = run(
            "push",
            fixture!("push_1_commit"),
            &[("branches", "dev, main")],
        );
        assert!(matches!(with_main, Outcome::Send { .. }));
    }

    #[test]
    fn tag_push() {
        let (event, p) = post("push", fixture!("push_tag"));
        assert_eq!(event.as_deref(), Some("push_tags"));
        assert_eq!(p.topic, "chronicle-demo");
        assert_eq!(p.body, "ada pushed tag v2.1.0.");
    }

    #[test]
    fn pull_request_opened_with_body() {
        let (event, p) = post("pull_request", fixture!("pull_request_opened"));
        assert_eq!(event.as_deref(), Some("opened_pull_request"));
        assert_eq!(p.topic, "chronicle-demo / PR #7 Add dark mode");
        assert_eq!(
            p.body,
            format!(
                "ada opened [PR #7]({REPO}/pull/7) from `ada:dark-mode` to `ada:main` (assigned to grace):\n\n\
                 ~~~ quote\nThis adds a dark theme.\n\nIt follows the system setting.\n~~~"
            )
        );
    }

    #[test]
    fn pull_request_opened_with_topic_param_names_the_title() {
        let (_, p) = single(run(
            "pull_request",
            fixture!("pull_request_opened"),
            &[("topic", "reviews")],
        ));
        assert!(
            p.body.starts_with(&format!(
                "ada opened [PR #7 Add dark mode]({REPO}/pull/7) from `ada:dark-mode` to `ada:main` (assigned to grace):"
            )),
            "{}",
            p.body
        );
    }

    #[test]
    fn pull_request_closed_merged_or_not() {
        let (event, p) = post("pull_request", fixture!("pull_request_closed"));
        assert_eq!(event.as_deref(), Some("closed_pull_request"));
        assert_eq!(p.body, format!("grace merged [PR #7]({REPO}/pull/7)."));

        let mut payload: Value = serde_json::from_str(fixture!("pull_request_closed")).unwrap();
        payload["pull_request"]["merged"] = Value::Bool(false);
        let (_, p) = single(run_value(
            format,
            &[("X-GitHub-Event", "pull_request")],
            &payload,
            &[],
        ));
        assert_eq!(
            p.body,
            format!("grace closed without merge [PR #7]({REPO}/pull/7).")
        );
    }

    #[test]
    fn pull_request_ignored_and_unsupported_actions() {
        let mut payload: Value = serde_json::from_str(fixture!("pull_request_closed")).unwrap();
        payload["action"] = Value::String("labeled".to_string());
        let labeled = run_value(format, &[("X-GitHub-Event", "pull_request")], &payload, &[]);
        assert_eq!(labeled, Outcome::Ignored);
        payload["action"] = Value::String("milestoned".to_string());
        let milestoned = run_value(format, &[("X-GitHub-Event", "pull_request")], &payload, &[]);
        assert_eq!(
            milestoned,
            Outcome::Unsupported {
                event_type: "pull_request:milestoned".to_string()
            }
        );
    }

    #[test]
    fn issue_opened() {
        let (event, p) = post("issues", fixture!("issues_opened"));
        assert_eq!(event.as_deref(), Some("issues"));
        assert_eq!(p.topic, "chronicle-demo / issue #12 Search ignores accents");
        assert_eq!(
            p.body,
            format!(
                "ada opened [issue #12]({REPO}/issues/12):\n\n~~~ quote\nSearching for cafe misses café.\n~~~"
            )
        );
    }

    #[test]
    fn issue_labeled() {
        let (event, p) = post("issues", fixture!("issues_labeled"));
        assert_eq!(event.as_deref(), Some("issue_labeled_or_unlabeled"));
        assert_eq!(p.topic, "chronicle-demo / issue #12 Search ignores accents");
        assert_eq!(
            p.body,
            format!(
                "[grace](https://github.com/grace) added the bug label to [Issue #12]({REPO}/issues/12)."
            )
        );
    }

    #[test]
    fn comment_on_a_pull_request() {
        let (event, p) = post("issue_comment", fixture!("issue_comment_pr"));
        assert_eq!(event.as_deref(), Some("issue_comment"));
        assert_eq!(p.topic, "chronicle-demo / PR #7 Add dark mode");
        assert_eq!(
            p.body,
            format!(
                "grace [commented]({REPO}/pull/7#issuecomment-1001) on [PR #7]({REPO}/pull/7):\n\n\
                 ~~~ quote\nLooks good, one nit.\n~~~"
            )
        );
    }

    #[test]
    fn release_published() {
        let (event, p) = post("release", fixture!("release_published"));
        assert_eq!(event.as_deref(), Some("release"));
        assert_eq!(p.topic, "chronicle-demo");
        assert_eq!(
            p.body,
            format!(
                "ada published release [Dark mode]({REPO}/releases/tag/v2.1.0) for tag v2.1.0."
            )
        );
    }

    #[test]
    fn unknown_and_ignored_headers() {
        assert_eq!(
            run("workflow_run", fixture!("release_published"), &[]),
            Outcome::Unsupported {
                event_type: "workflow_run:published".to_string()
            }
        );
        assert_eq!(
            run("sponsorship_unknown", fixture!("ping"), &[]),
            Outcome::Unsupported {
                event_type: "sponsorship_unknown:???".to_string()
            }
        );
        assert_eq!(run("check_suite", fixture!("ping"), &[]), Outcome::Ignored);
    }

    #[test]
    fn missing_header_and_private_repositories() {
        assert_eq!(
            run_fixture(format, &[], fixture!("ping"), &[]),
            Outcome::MissingHeader("X-GitHub-Event")
        );
        let mut payload: Value = serde_json::from_str(fixture!("ping")).unwrap();
        payload["repository"]["private"] = Value::Bool(true);
        let ignored = run_value(
            format,
            &[("X-GitHub-Event", "ping")],
            &payload,
            &[("ignore_private_repositories", "true")],
        );
        assert_eq!(ignored, Outcome::Ignored);
    }

    #[test]
    fn malformed_payload_is_reported_not_panicked() {
        let outcome = run("pull_request", r#"{"action": "opened"}"#, &[]);
        assert!(matches!(outcome, Outcome::Malformed(_)), "{outcome:?}");
    }
}

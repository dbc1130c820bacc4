//! `circleci`: CircleCI's webhooks (`ping`, `job-completed`, `workflow-completed`, the
//! payload's `type`, which is the event type). The topic is the project's name; the message
//! says how the job or workflow ended and which commit triggered it, on GitHub, Bitbucket or
//! GitLab.

use super::{at, git::short_sha, opt_str, req_int, req_str, Outcome, Post, Request, Res};
use serde_json::Value;

/// The event types (the payload's `type`).
pub const EVENT_TYPES: &[&str] = &["ping", "job-completed", "workflow-completed"];

/// Formats a CircleCI webhook.
pub fn format(req: &Request<'_>) -> Outcome {
    match render(req.payload) {
        Ok(outcome) => outcome,
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn render(p: &Value) -> Res<Outcome> {
    let kind = req_str(p, &["type"])?;
    let (topic, body) = match kind {
        "ping" => (
            "Test event".to_owned(),
            format!(
                "Webhook '{}' test event successful.",
                req_str(p, &["webhook", "name"])?
            ),
        ),
        "job-completed" | "workflow-completed" => {
            let triggered = match commit_details(p)? {
                Ok(text) => text,
                Err(refusal) => return Ok(refusal),
            };
            let number = req_int(p, &["pipeline", "number"])?;
            let head = if kind == "job-completed" {
                format!(
                    "Job `{}` within Pipeline #{number} {}.",
                    req_str(p, &["job", "name"])?,
                    status(req_str(p, &["job", "status"])?)
                )
            } else {
                format!(
                    "Workflow [`{}`]({}) within Pipeline #{number} {}.",
                    req_str(p, &["workflow", "name"])?,
                    req_str(p, &["workflow", "url"])?,
                    status(req_str(p, &["workflow", "status"])?)
                )
            };
            (
                req_str(p, &["project", "name"])?.to_owned(),
                format!("{head}\n\n{triggered}"),
            )
        }
        other => return Err(format!("unknown event type {other}")),
    };
    Ok(Outcome::Send {
        event_type: Some(kind.to_owned()),
        posts: vec![Post { topic, body }],
    })
}

fn status(status: &str) -> &'static str {
    match status {
        "success" => "has succeeded",
        "failed" => "has failed",
        "canceled" => "was canceled",
        "unauthorized" => "was unauthorized",
        "error" => "had an error",
        _ => "ended",
    }
}

/// Which commit triggered the pipeline, or Zulip's refusal for a provider it does not know.
fn commit_details(p: &Value) -> Res<Result<String, Outcome>> {
    if let Some(vcs) = at(p, &["pipeline", "vcs"]) {
        let sha = req_str(vcs, &["revision"])?;
        let base = req_str(vcs, &["target_repository_url"])?;
        let link = if req_str(vcs, &["provider_name"])? == "github" {
            format!("{base}/commit/{sha}")
        } else {
            format!("{base}/commits/{sha}")
        };
        let short = short_sha(sha);
        let branch = opt_str(vcs, &["branch"])?;
        return Ok(Ok(
            match opt_str(vcs, &["commit", "subject"])?.filter(|s| !s.is_empty()) {
                Some(subject) => format!(
                    "Triggered on [`{short}: {subject}`]({link}) on branch `{}` by {}.",
                    branch.unwrap_or_default(),
                    req_str(vcs, &["commit", "author", "name"])?
                ),
                None => match branch {
                    Some(branch) => format!("Triggered on `{branch}`'s HEAD on [{short}]({link})."),
                    None => format!("Triggered on the latest tag on [{short}]({link})."),
                },
            },
        ));
    }
    if opt_str(p, &["pipeline", "trigger", "type"])? != Some("gitlab") {
        return Ok(Err(Outcome::Refused(
            "Projects using this version control system provider aren't supported".into(),
        )));
    }
    let gitlab = at(p, &["pipeline", "trigger_parameters", "gitlab"])
        .ok_or_else(|| "no GitLab trigger parameters".to_string())?;
    let sha = req_str(gitlab, &["checkout_sha"])?;
    Ok(Ok(format!(
        "Triggered on [`{}: {}`]({}/-/commit/{sha}) on branch `{}` by {}.",
        short_sha(sha),
        req_str(gitlab, &["commit_title"])?,
        req_str(gitlab, &["web_url"])?,
        req_str(gitlab, &["branch"])?,
        req_str(gitlab, &["commit_author_name"])?
    )))
}

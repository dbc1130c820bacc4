//! `travis`: Travis CI's build notifications (JSON in the form field `payload`). The event type
//! is the build's `type` (`push`, `pull_request`, `api`, `cron`); pull request builds are left
//! out unless `ignore_pull_requests=false`. The topic is `builds`.

use super::{bool_param, req_str, Outcome, Post, Request, Res};

/// The event types Travis CI sends.
pub const EVENT_TYPES: &[&str] = &["push", "pull_request", "api", "cron"];

/// Formats a Travis CI notification.
pub fn format(req: &Request<'_>) -> Outcome {
    match render(req) {
        Ok(outcome) => outcome,
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn render(req: &Request<'_>) -> Res<Outcome> {
    let p = req.payload;
    let kind = req_str(p, &["type"])?;
    if kind == "pull_request" && bool_param(req, "ignore_pull_requests", true)? {
        return Ok(Outcome::Ignored);
    }
    let status = req_str(p, &["status_message"])?;
    let emoji = match status {
        "Passed" | "Fixed" => ":thumbs_up:".to_owned(),
        "Failed" | "Broken" | "Still Failing" | "Errored" | "Canceled" => {
            ":thumbs_down:".to_owned()
        }
        "Pending" => ":counterclockwise:".to_owned(),
        other => format!("(No emoji specified for status '{other}'.)"),
    };
    let body = format!(
        "Author: {}\nBuild status: {status} {emoji}\nDetails: [changes]({}), [build log]({})",
        req_str(p, &["author_name"])?,
        req_str(p, &["compare_url"])?,
        req_str(p, &["build_url"])?
    );
    Ok(Outcome::Send {
        event_type: Some(kind.to_owned()),
        posts: vec![Post {
            topic: "builds".into(),
            body,
        }],
    })
}

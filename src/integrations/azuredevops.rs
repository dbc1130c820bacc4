//! `azuredevops`: Azure DevOps service hooks for Git: pushes (filtered by `branches`) and pull
//! requests created, updated and merged (a merge that did not succeed is ignored), worded as
//! the other git integrations. The payload's `eventType` decides; there are no event types to
//! filter on, as in Zulip.

use super::git::{
    branch_from_ref, branch_selected, branch_topic, item_topic, push_commits_message, Commit,
    ItemLine,
};
use super::text_at as text;
use super::{at, req_str, Outcome, Post, Request, Res};
use serde_json::Value;

/// Formats an Azure DevOps service hook.
pub fn format(req: &Request<'_>) -> Outcome {
    let Some(event) = req.payload.get("eventType").and_then(Value::as_str) else {
        return Outcome::Malformed("no eventType".into());
    };
    let result = match event {
        "git.push" => push(req),
        "git.pullrequest.created" | "git.pullrequest.updated" | "git.pullrequest.merged" => {
            pull_request(req.payload, event)
        }
        other => {
            return Outcome::Unsupported {
                event_type: other.to_owned(),
            }
        }
    };
    match result {
        Ok(Some(post)) => Outcome::Send {
            event_type: None,
            posts: vec![post],
        },
        Ok(None) => Outcome::Ignored,
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn push(req: &Request<'_>) -> Res<Option<Post>> {
    let r = req.payload.get("resource").ok_or("resource is missing")?;
    let update = at(r, &["refUpdates"])
        .and_then(Value::as_array)
        .and_then(|u| u.first())
        .ok_or("refUpdates is missing")?;
    let branch = branch_from_ref(req_str(update, &["name"])?);
    if !branch_selected((req.param)("branches").as_deref(), branch) {
        return Ok(None);
    }
    let remote = req_str(r, &["repository", "remoteUrl"])?;
    let compare = format!(
        "{remote}/branchCompare?baseVersion=GC{}&targetVersion=GC{}&_a=files",
        req_str(update, &["oldObjectId"])?,
        req_str(update, &["newObjectId"])?
    );
    let commits = r
        .get("commits")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|c| {
                    let sha = req_str(c, &["commitId"])?;
                    Ok(Commit {
                        name: text(c, &["author", "name"]).to_owned(),
                        sha: sha.to_owned(),
                        url: format!("{remote}/commit/{sha}"),
                        message: text(c, &["comment"]).to_owned(),
                    })
                })
                .collect::<Res<Vec<_>>>()
        })
        .transpose()?
        .unwrap_or_default();
    Ok(Some(Post {
        topic: branch_topic(req_str(r, &["repository", "name"])?, branch),
        body: push_commits_message(
            req_str(r, &["pushedBy", "displayName"])?,
            &compare,
            branch,
            &commits,
            false,
            false,
        ),
    }))
}

fn pull_request(p: &Value, event: &str) -> Res<Option<Post>> {
    let r = p.get("resource").ok_or("resource is missing")?;
    if event == "git.pullrequest.merged"
        && !(text(r, &["status"]) == "completed" && text(r, &["mergeStatus"]) == "succeeded")
    {
        return Ok(None);
    }
    let id = match r.get("pullRequestId") {
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err("pullRequestId is missing".into()),
    };
    let title = req_str(r, &["title"])?;
    let url = req_str(r, &["_links", "web", "href"])?;
    let user = req_str(r, &["createdBy", "displayName"])?;
    let branches = (
        branch_from_ref(text(r, &["sourceRefName"])),
        branch_from_ref(text(r, &["targetRefName"])),
    );
    let line = match event {
        "git.pullrequest.created" => ItemLine {
            user,
            action: "created",
            kind: "PR",
            url,
            number: Some(&id),
            title: Some(title),
            branches: Some(branches),
            message: Some(text(r, &["description"])),
            ..ItemLine::default()
        },
        "git.pullrequest.merged" => ItemLine {
            user,
            action: "merged",
            kind: "PR",
            url,
            number: Some(&id),
            title: Some(title),
            branches: Some(branches),
            ..ItemLine::default()
        },
        _ => ItemLine {
            user,
            action: "updated",
            kind: "PR",
            url,
            number: Some(&id),
            title: Some(title),
            message: Some(text(p, &["detailedMessage", "markdown"])),
            ..ItemLine::default()
        },
    };
    Ok(Some(Post {
        topic: item_topic(req_str(r, &["repository", "name"])?, "PR", &id, title),
        body: line.render(),
    }))
}

//! `heroku`: Heroku's deploy hook (an HTTP POST of form fields): who deployed which version of
//! which app, and its commit log. The topic is the app. No event types.

use super::{Outcome, Post, Request};

/// Formats a Heroku deploy hook.
pub fn format(req: &Request<'_>) -> Outcome {
    let field = |name: &str| (req.param)(name);
    let (Some(app), Some(user), Some(url), Some(head), Some(log)) = (
        field("app"),
        field("user"),
        field("url"),
        field("head"),
        field("git_log"),
    ) else {
        let missing = ["app", "user", "url", "head", "git_log"]
            .into_iter()
            .find(|name| field(name).is_none())
            .unwrap_or("app");
        return Outcome::Refused(format!("Missing '{missing}' argument"));
    };
    Outcome::Send {
        event_type: None,
        posts: vec![Post {
            body: format!(
                "{user} deployed version {head} of [{app}]({url}):\n\n``` quote\n{log}\n```"
            ),
            topic: app,
        }],
    }
}

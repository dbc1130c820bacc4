//! `zendesk`: a Zendesk trigger's URL target. The ticket's id and title (URL parameters) make
//! the topic, `#ID: TITLE`, and the `message` the trigger's template wrote is the message.
//! Zendesk authenticates with HTTP Basic credentials (the bot's address and key).

use super::{Outcome, Post, Request};

/// Formats a Zendesk trigger's request.
pub fn format(req: &Request<'_>) -> Outcome {
    let field = |name: &str| (req.param)(name);
    let (Some(title), Some(id), Some(message)) =
        (field("ticket_title"), field("ticket_id"), field("message"))
    else {
        let missing = ["ticket_title", "ticket_id", "message"]
            .into_iter()
            .find(|name| field(name).is_none())
            .unwrap_or("message");
        return Outcome::Refused(format!("Missing '{missing}' argument"));
    };
    Outcome::Send {
        event_type: None,
        posts: vec![Post {
            topic: format!("#{id}: {title}"),
            body: message,
        }],
    }
}

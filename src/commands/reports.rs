//! Message reports (`POST /messages/{id}/report`): the notification bot posts the report, with
//! the reported message, to the organization's moderation channel.

use super::messages::{readable, truncate, MAX_MESSAGE_LENGTH};
use super::notices::{channel_message_link, message_url, silent_mention, unused_fence, Notices};
use super::{actor, Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::TopicsPolicy;
use crate::ids::MessageId;
use crate::markdown::time_syntax;
use crate::projections::Address;
use crate::projections::Projections;

/// Zulip's report types: key and name.
pub const REPORT_TYPES: &[(&str, &str)] = &[
    ("spam", "Spam"),
    ("harassment", "Harassment"),
    ("inappropriate", "Inappropriate content"),
    ("norms", "Violates community norms"),
    ("other", "Other reason"),
];

/// Zulip's `MAX_REPORT_MESSAGE_EXPLANATION_LENGTH`.
pub const MAX_DESCRIPTION_LENGTH: usize = 1000;

/// `POST /messages/{message_id}/report`: anyone who can read a message may report it (their own
/// included); the report goes to the moderation channel, in the topic `{name} moderation` of
/// the reported user.
pub fn report_message(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    report_type: &str,
    description: &str,
    realm_url: &str,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let Some((_, reason)) = REPORT_TYPES.iter().find(|(key, _)| *key == report_type) else {
        return Err(ApiError::bad_request("Invalid report_type"));
    };
    let description = description.trim();
    if description.chars().count() > MAX_DESCRIPTION_LENGTH {
        return Err(ApiError::bad_request(format!(
            "description is too long (limit: {MAX_DESCRIPTION_LENGTH} characters)"
        )));
    }
    if report_type == "other" && description.is_empty() {
        return Err(ApiError::bad_request("An explanation is required."));
    }
    let channel = state
        .realm
        .channel("moderation_request_channel_id")
        .and_then(|id| state.channels.get(id))
        .filter(|c| !c.is_archived)
        .ok_or_else(|| {
            ApiError::bad_request("Message reporting is not enabled in this organization.")
        })?;
    let message = readable(state, me, message_id)?;
    let name = |id| state.users.get(id).map(silent_mention).unwrap_or_default();
    let reporter = silent_mention(me);
    let reported = name(message.sender_id);
    let date = time_syntax(message.timestamp);
    let (header, label) = match &message.recipient {
        Address::Channel { channel_id, topic } => {
            let label = format!(
                "Original message at {}",
                channel_message_link(state, *channel_id, topic, message_id)
            );
            (
                format!("{reporter} reported a message sent by {reported} at {date}."),
                label,
            )
        }
        Address::Direct { user_ids } => {
            let others: Vec<String> = user_ids
                .iter()
                .filter(|u| **u != message.sender_id)
                .map(|u| name(*u))
                .collect();
            let group = user_ids.len() > 2;
            let header = if group || message.sender_id == me.user_id {
                format!(
                    "{reporter} reported a direct message sent by {reported} to {} at {date}.",
                    listing(&others)
                )
            } else {
                format!("{reporter} reported a direct message sent by {reported} at {date}.")
            };
            let url = format!("{realm_url}/{}", message_url(state, message));
            (header, format!("[Original message]({url})"))
        }
    };
    let original = truncate(
        &message.content,
        MAX_MESSAGE_LENGTH - MAX_DESCRIPTION_LENGTH - 500,
        "\n[message truncated]",
    );
    let quote_fence = unused_fence(description);
    let spoiler_fence = unused_fence(&original);
    let explanation = if description.is_empty() {
        format!("**{reason}**.")
    } else {
        format!("**{reason}**. {description}")
    };
    let content = format!(
        "{header}\n{quote_fence}quote\n{explanation}\n{quote_fence}\n\n{spoiler_fence} spoiler {label}\n{original}\n{spoiler_fence}\n"
    );
    let topic = if state.topics_policy(channel) == TopicsPolicy::EmptyTopicOnly {
        String::new()
    } else {
        let reported_name = state
            .users
            .get(message.sender_id)
            .map(|u| u.full_name.clone())
            .unwrap_or_default();
        truncate(
            &format!("{reported_name} moderation"),
            super::channels::MAX_TOPIC_LENGTH,
            "...",
        )
    };
    let mut notices = Notices::new(state);
    notices.to_channel(channel.id, &topic, content);
    Ok(Decision::events(notices.into_events()))
}

/// `a`, `a and b`, `a, b, and c`.
fn listing(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

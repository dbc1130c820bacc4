//! Sending messages and changing their per-user flags.

use super::actor;
use super::channels::{access, Access, MAX_TOPIC_LENGTH};
use crate::engine::Ctx;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{Event, MessageFlag, Recipient, Role, TopicsPolicy};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::markdown::{render_message, Resolver};
use crate::projections::{Message, Projections, User};

/// Zulip's `MAX_MESSAGE_LENGTH`: longer content is truncated, as Zulip does.
pub const MAX_MESSAGE_LENGTH: usize = 10_000;

/// The channel a message goes to, as the client named it.
#[derive(Debug, Clone)]
pub enum ChannelRef {
    Id(ChannelId),
    Name(String),
}

/// A message to send, as requested.
#[derive(Debug, Clone)]
pub enum Destination {
    Channel { channel: ChannelRef, topic: String },
    Direct { user_ids: Vec<UserId> },
}

struct OrgResolver<'a>(&'a Projections);

impl Resolver for OrgResolver<'_> {
    fn user(&self, name: &str, id: Option<u64>) -> Option<(u64, String)> {
        let state = self.0;
        let candidate = |u: &&User| u.is_active && u.full_name == name;
        match id {
            Some(id) => state
                .users
                .get(UserId(id))
                .filter(candidate)
                .map(|u| (u.user_id.0, u.full_name.clone())),
            None => {
                let mut matches = state.users.iter().filter(candidate);
                let first = matches.next()?;
                // An ambiguous name mentions nobody (Zulip asks for the `|id` form).
                matches
                    .next()
                    .is_none()
                    .then(|| (first.user_id.0, first.full_name.clone()))
            }
        }
    }

    fn channel(&self, name: &str) -> Option<(u64, String)> {
        self.0
            .channels
            .by_name(name)
            .filter(|c| !c.invite_only)
            .map(|c| (c.id.0, c.name.clone()))
    }
}

/// Truncates to `max` characters with Zulip's marker.
fn truncate(text: &str, max: usize, marker: &str) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(marker.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(marker);
    out
}

/// `POST /messages`.
pub fn send_message(
    state: &Projections,
    ctx: &Ctx,
    to: Destination,
    content: &str,
    client: &str,
) -> ApiResult<(Vec<Event>, MessageId)> {
    let me = actor(state, ctx)?;
    let content = content.trim_end();
    if content.trim().is_empty() {
        return Err(ApiError::bad_request("Message must not be empty"));
    }
    let content = truncate(content, MAX_MESSAGE_LENGTH, "\n[message truncated]");
    let recipient = match to {
        Destination::Channel { channel, topic } => {
            let found = match &channel {
                ChannelRef::Id(id) => state.channels.get(*id),
                ChannelRef::Name(name) => state.channels.by_name(name),
            }
            .filter(|c| access(state, me, c) != Access::None);
            let Some(channel_state) = found else {
                return Err(match channel {
                    ChannelRef::Id(id) => ApiError::new(
                        ErrorCode::StreamDoesNotExist,
                        format!("Channel with ID '{id}' does not exist"),
                    )
                    .with("stream_id", id.0),
                    ChannelRef::Name(name) => ApiError::new(
                        ErrorCode::StreamDoesNotExist,
                        format!("Channel '{name}' does not exist"),
                    )
                    .with("stream", name),
                });
            };
            if channel_state.is_archived {
                return Err(ApiError::bad_request(format!(
                    "Not authorized to send to channel '{}'",
                    channel_state.name
                )));
            }
            let allows = |s| state.groups.setting_allows(&state.users, me.user_id, s);
            let may_post = access(state, me, channel_state) == Access::Content
                || !channel_state.invite_only && me.role != Role::Guest;
            if !may_post {
                return Err(ApiError::bad_request(format!(
                    "Not authorized to send to channel '{}'",
                    channel_state.name
                )));
            }
            if !allows(&channel_state.permissions.can_send_message_group) {
                return Err(ApiError::bad_request(
                    "You do not have permission to post in this channel.",
                ));
            }
            let topic = truncate(topic.trim(), MAX_TOPIC_LENGTH, "...");
            if topic.is_empty() && channel_state.topics_policy == TopicsPolicy::DisableEmptyTopic {
                return Err(ApiError::bad_request(
                    "Sending messages to the general chat is not allowed in this channel.",
                ));
            }
            if !topic.is_empty() && channel_state.topics_policy == TopicsPolicy::EmptyTopicOnly {
                return Err(ApiError::bad_request(
                    "Only the general chat topic is allowed in this channel.",
                ));
            }
            let new_topic = state
                .messages
                .in_topic(channel_state.id, &topic)
                .is_none_or(|m| m.is_empty());
            if new_topic && !allows(&channel_state.permissions.can_create_topic_group) {
                return Err(ApiError::bad_request(
                    "You do not have permission to create new topics in this channel.",
                ));
            }
            Recipient::Channel {
                channel_id: channel_state.id,
                topic,
            }
        }
        Destination::Direct { user_ids } => {
            if user_ids.is_empty() {
                return Err(ApiError::bad_request("Message must have recipients"));
            }
            let mut participants = vec![me.user_id];
            for id in user_ids {
                let user = state
                    .users
                    .get(id)
                    .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID {id}")))?;
                if !user.is_active {
                    return Err(ApiError::bad_request(format!(
                        "'{}' is no longer using Zulip.",
                        user.email
                    )));
                }
                participants.push(id);
            }
            participants.sort();
            participants.dedup();
            Recipient::Direct {
                user_ids: participants,
            }
        }
    };
    let rendered = render_message(&content, &OrgResolver(state));
    let message_id = MessageId(state.messages.max_id().0 + 1);
    let is_me_message = content.starts_with("/me ") && !content.contains('\n');
    Ok((
        vec![Event::MessageSent {
            message_id,
            sender_id: me.user_id,
            recipient,
            content: content.into(),
            rendered_content: rendered.html.into(),
            client: client.into(),
            is_me_message,
            mentioned: rendered.mentioned.into_iter().map(UserId).collect(),
            stream_wildcard: rendered.stream_wildcard,
            topic_wildcard: rendered.topic_wildcard,
        }],
        message_id,
    ))
}

/// Whether `user` may read `message`: a copy of it, a direct message they take part in, or a
/// channel whose history they can reach.
pub fn can_read(state: &Projections, user: &User, message: &Message) -> bool {
    if state.messages.flags(user.user_id, message.id).is_some() {
        return true;
    }
    match &message.recipient {
        Recipient::Direct { user_ids } => user_ids.contains(&user.user_id),
        Recipient::Channel { channel_id, .. } => state.channels.get(*channel_id).is_some_and(|c| {
            if c.invite_only {
                c.history_public_to_subscribers && state.channels.is_subscribed(user.user_id, c.id)
            } else {
                user.role != Role::Guest
            }
        }),
    }
}

/// `POST /messages/flags` (and the mark-as-read endpoints): returns the ids whose flag changed.
pub fn update_flags(
    state: &Projections,
    ctx: &Ctx,
    message_ids: Vec<MessageId>,
    flag: MessageFlag,
    add: bool,
) -> ApiResult<(Vec<Event>, Vec<MessageId>)> {
    let me = actor(state, ctx)?;
    let bit = crate::projections::messages::flag_bit(flag);
    let mut changed = Vec::new();
    for id in message_ids {
        let message = state
            .messages
            .get(id)
            .filter(|m| can_read(state, me, m))
            .ok_or_else(|| ApiError::bad_request("Invalid message(s)"))?;
        let current = state.messages.flags(me.user_id, message.id);
        // Read/collapsed only apply to copies; starring may create a historical copy.
        let has = current.is_some_and(|bits| bits & bit != 0);
        let applies = current.is_some() || flag == MessageFlag::Starred;
        if applies && has != add && !changed.contains(&id) {
            changed.push(id);
        }
    }
    changed.sort();
    if changed.is_empty() {
        return Ok((Vec::new(), changed));
    }
    Ok((
        vec![Event::MessageFlagsChanged {
            user_id: me.user_id,
            flag,
            add,
            message_ids: changed.clone(),
        }],
        changed,
    ))
}

/// `POST /typing`: start or stop, to a direct conversation or a channel topic.
pub fn set_typing(
    state: &Projections,
    ctx: &Ctx,
    target: crate::events::TypingTarget,
    start: bool,
) -> ApiResult<(Vec<Event>, ())> {
    use crate::events::TypingTarget;
    let me = actor(state, ctx)?;
    let target = match target {
        TypingTarget::Direct { user_ids } => {
            if user_ids.is_empty() {
                return Err(ApiError::bad_request("Empty 'to' list"));
            }
            let mut participants = vec![me.user_id];
            for id in user_ids {
                if !state.users.get(id).is_some_and(|u| u.is_active) {
                    return Err(ApiError::bad_request(format!("Invalid user ID {id}")));
                }
                participants.push(id);
            }
            participants.sort();
            participants.dedup();
            TypingTarget::Direct {
                user_ids: participants,
            }
        }
        TypingTarget::Channel { channel_id, topic } => {
            state
                .channels
                .get(channel_id)
                .filter(|c| access(state, me, c) == Access::Content)
                .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?;
            TypingTarget::Channel { channel_id, topic }
        }
    };
    let event = if start {
        Event::TypingStarted {
            user_id: me.user_id,
            target,
        }
    } else {
        Event::TypingStopped {
            user_id: me.user_id,
            target,
        }
    };
    Ok((vec![event], ()))
}

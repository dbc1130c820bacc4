//! Scheduled messages and message reminders: saving them (checked as a send would be, against
//! the state of the moment), and sending them when their time comes.

use super::messages::{readable, send_message, truncate, Destination, MAX_MESSAGE_LENGTH};
use super::notices::{channel_message_link, message_url, silent_mention, unused_fence, Notices};
use super::{actor, Ctx, Decision};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{Event, MessageFlag, Recipient};
use crate::ids::{MessageId, ScheduledMessageId, UserId};
use crate::markdown::time_syntax;
use crate::projections::scheduled::ScheduledMessage;
use crate::projections::Address;
use crate::projections::Projections;

/// Zulip's `SCHEDULED_MESSAGE_LATE_CUTOFF_MINUTES`: a scheduled message more than this late
/// (the server was down at its time) is not sent but marked failed.
pub const LATE_CUTOFF_SECS: i64 = 10 * 60;

/// Zulip's `MAX_REMINDER_NOTE_LENGTH`.
pub const MAX_REMINDER_NOTE_LENGTH: usize = 500;

fn not_in_future() -> ApiError {
    ApiError::bad_request("Scheduled delivery time must be in the future.")
}

fn no_such_scheduled() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "Scheduled message does not exist")
}

/// The message a send of `to` would make, checked as a send is: its recipient and rendering.
fn checked(
    state: &Projections,
    ctx: &Ctx,
    to: Destination,
    content: &str,
) -> ApiResult<(Recipient, String, String)> {
    let decision = send_message(state, ctx, to, content, "Internal", None)?;
    decision
        .events
        .into_iter()
        .find_map(|event| match event {
            Event::MessageSent {
                recipient,
                content,
                rendered_content,
                ..
            } => Some((recipient, content.to_string(), rendered_content.to_string())),
            _ => None,
        })
        .ok_or_else(|| ApiError::internal("a send decided no message"))
}

/// `POST /scheduled_messages`.
pub fn schedule_message(
    state: &Projections,
    ctx: &Ctx,
    to: Destination,
    content: &str,
    deliver_at: i64,
    read_by_sender: Option<bool>,
    client: &str,
) -> ApiResult<Decision<ScheduledMessageId>> {
    let me = actor(state, ctx)?;
    if deliver_at <= ctx.now_ms / 1000 {
        return Err(not_in_future());
    }
    let (recipient, content, rendered_content) = checked(state, ctx, to, content)?;
    let id = state.scheduled.next_id();
    Ok(Decision::new(
        vec![Event::ScheduledMessageSaved {
            scheduled_message_id: id,
            sender_id: me.user_id,
            recipient,
            content,
            rendered_content,
            deliver_at,
            read_by_sender,
            reminder_for: None,
            edit: false,
            client: client.to_owned(),
        }],
        id,
    ))
}

/// What `PATCH /scheduled_messages/{id}` changes; `None` keeps.
#[derive(Debug, Clone, Default)]
pub struct ScheduledEdit {
    /// `Some(true)` for a channel message, `Some(false)` for a direct one.
    pub to_channel: Option<bool>,
    /// The new audience (its kind matches the resulting type).
    pub to: Option<Destination>,
    pub content: Option<String>,
    pub topic: Option<String>,
    pub deliver_at: Option<i64>,
}

/// The caller's own scheduled message (not a reminder) `id`.
fn own(state: &Projections, me: UserId, id: ScheduledMessageId) -> ApiResult<&ScheduledMessage> {
    state
        .scheduled
        .get(id)
        .filter(|s| s.sender_id == me && s.reminder_for.is_none())
        .ok_or_else(no_such_scheduled)
}

/// `PATCH /scheduled_messages/{id}`, with Zulip's rules: a new type needs a new audience (and a
/// channel a topic), a failed message needs a new time, and the result is checked as a send.
pub fn edit_scheduled(
    state: &Projections,
    ctx: &Ctx,
    id: ScheduledMessageId,
    edit: ScheduledEdit,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let old = own(state, me.user_id, id)?;
    let nothing = edit.to_channel.is_none()
        && edit.to.is_none()
        && edit.content.is_none()
        && edit.topic.is_none()
        && edit.deliver_at.is_none();
    if nothing {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    let was_channel = matches!(old.recipient, Recipient::Channel { .. });
    let to_channel = edit.to_channel.unwrap_or(was_channel);
    if edit.to_channel.is_some_and(|c| c != was_channel) {
        if edit.to.is_none() {
            return Err(ApiError::bad_request(
                "Recipient required when updating type of scheduled message.",
            ));
        }
        if to_channel && edit.topic.is_none() {
            return Err(ApiError::bad_request(
                "Topic required when updating scheduled message type to channel.",
            ));
        }
    }
    let destination = match (&old.recipient, edit.to) {
        (_, Some(Destination::Channel { channel, .. })) if to_channel => {
            let topic = match (&old.recipient, edit.topic) {
                (_, Some(topic)) => topic,
                (Recipient::Channel { topic, .. }, None) => topic.clone(),
                (Recipient::Direct { .. }, None) => String::new(),
            };
            Destination::Channel { channel, topic }
        }
        (_, Some(Destination::Direct { user_ids })) if !to_channel => {
            Destination::Direct { user_ids }
        }
        (_, Some(_)) => {
            return Err(ApiError::bad_request(if to_channel {
                "Invalid channel ID"
            } else {
                "Invalid user ID"
            }))
        }
        (Recipient::Channel { channel_id, topic }, None) => Destination::Channel {
            channel: super::messages::ChannelRef::Id(*channel_id),
            topic: edit.topic.unwrap_or_else(|| topic.clone()),
        },
        (Recipient::Direct { user_ids }, None) => Destination::Direct {
            user_ids: user_ids.clone(),
        },
    };
    let deliver_at = match edit.deliver_at {
        Some(at) if at <= ctx.now_ms / 1000 => return Err(not_in_future()),
        Some(at) => at,
        // A failed message is only sent again at a new time.
        None if old.failure.is_some() => return Err(not_in_future()),
        None => old.deliver_at,
    };
    let content = edit.content.unwrap_or_else(|| old.content.clone());
    let (recipient, content, rendered_content) = checked(state, ctx, destination, &content)?;
    Ok(Decision::events(vec![Event::ScheduledMessageSaved {
        scheduled_message_id: id,
        sender_id: me.user_id,
        recipient,
        content,
        rendered_content,
        deliver_at,
        read_by_sender: old.read_by_sender,
        reminder_for: None,
        edit: true,
        client: old.client.clone(),
    }]))
}

/// `DELETE /scheduled_messages/{id}` (`reminder: false`) or `DELETE /reminders/{id}`.
pub fn delete_scheduled(
    state: &Projections,
    ctx: &Ctx,
    id: ScheduledMessageId,
    reminder: bool,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let found = state
        .scheduled
        .get(id)
        .filter(|s| s.sender_id == me.user_id && s.reminder_for.is_some() == reminder);
    if found.is_none() {
        return Err(if reminder {
            ApiError::new(ErrorCode::NotFound, "Reminder does not exist")
        } else {
            no_such_scheduled()
        });
    }
    Ok(Decision::events(vec![Event::ScheduledMessageRemoved {
        scheduled_message_id: id,
        sender_id: me.user_id,
        sent_as: None,
        reminder,
    }]))
}

/// `POST /reminders`: a direct message from the notification bot to the caller at
/// `deliver_at`, quoting `message_id` (which the caller must be able to read) and their note.
pub fn create_reminder(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    deliver_at: i64,
    note: Option<&str>,
) -> ApiResult<Decision<ScheduledMessageId>> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let note = note
        .map(|n| n.trim_end().trim_start_matches('\n'))
        .filter(|n| !n.is_empty());
    if note.is_some_and(|n| n.chars().count() > MAX_REMINDER_NOTE_LENGTH) {
        return Err(ApiError::bad_request(format!(
            "Maximum reminder note length: {MAX_REMINDER_NOTE_LENGTH} characters"
        )));
    }
    if deliver_at <= ctx.now_ms / 1000 {
        return Err(not_in_future());
    }
    // Only the request is stored: the message itself is quoted when the reminder is shown or
    // sent, so a message deleted meanwhile is never repeated.
    let place = match &message.recipient {
        Address::Channel { channel_id, topic } => {
            channel_message_link(state, *channel_id, topic, message_id)
        }
        Address::Direct { .. } => "the following direct message".to_owned(),
    };
    let mut content = format!("You requested a reminder for {place}.");
    if let Some(note) = note {
        content.push_str(" Note:\n > ");
        content.push_str(&note.replace('\n', "\n > "));
    }
    let rendered =
        crate::markdown::render_message(&content, &crate::commands::markup::OrgResolver(state));
    let id = state.scheduled.next_id();
    Ok(Decision::new(
        vec![Event::ScheduledMessageSaved {
            scheduled_message_id: id,
            sender_id: me.user_id,
            recipient: Recipient::Direct {
                user_ids: vec![me.user_id],
            },
            content,
            rendered_content: rendered.html,
            deliver_at,
            read_by_sender: None,
            reminder_for: Some(message_id),
            edit: false,
            client: String::new(),
        }],
        id,
    ))
}

/// A reminder's whole text: what was asked (stored), then the message quoted as it is now, or
/// a line saying it is gone.
pub fn reminder_text(state: &Projections, reminder: &ScheduledMessage) -> String {
    let mut content = reminder.content.clone();
    let message = reminder.reminder_for.and_then(|id| state.messages.get(id));
    let Some(message) = message else {
        content.push_str("\n\nThe message has since been deleted.");
        return content;
    };
    let sender = state
        .users
        .get(message.sender_id)
        .map(silent_mention)
        .unwrap_or_default();
    let url = message_url(state, message);
    let original: &str = &message.content;
    let quoted = if original.starts_with("/poll") {
        format!("\n\n{sender} [sent]({url}) a poll.")
    } else if original.starts_with("/todo") {
        format!("\n\n{sender} [sent]({url}) a todo list.")
    } else {
        let fence = unused_fence(original);
        let room = MAX_MESSAGE_LENGTH.saturating_sub(content.chars().count() + 200);
        let original = truncate(original, room, "\n[message truncated]");
        format!("\n\n{sender} [said]({url}):\n{fence}quote\n{original}\n{fence}")
    };
    content.push_str(&quoted);
    content
}

/// Zulip's reminder object (`GET /reminders`, `/register`, events), its text rendered now.
pub fn reminder_json(state: &Projections, reminder: &ScheduledMessage) -> serde_json::Value {
    let content = reminder_text(state, reminder);
    let rendered =
        crate::markdown::render_message(&content, &crate::commands::markup::OrgResolver(state));
    serde_json::json!({
        "reminder_id": reminder.id.0,
        "type": "private",
        "to": [reminder.sender_id.0],
        "content": content,
        "rendered_content": rendered.html,
        "scheduled_delivery_timestamp": reminder.deliver_at,
        "failed": reminder.failure.is_some(),
        "reminder_target_message_id": reminder.reminder_for.map(|m| m.0),
    })
}

/// The delivery job's command for one scheduled message or reminder: if it is still waiting and
/// its time has come, sends it as its sender would send it now. One that cannot be sent (the
/// channel is gone, the sender lost permission, or the server was down past its time) is
/// marked failed, and its sender hears why from the notification bot. Replies whether it was
/// handled; the job submits one command per due message, so they are decided in order in one
/// batch.
pub fn deliver(
    state: &Projections,
    ctx: &Ctx,
    id: ScheduledMessageId,
) -> ApiResult<Decision<bool>> {
    let now = ctx.now_ms / 1000;
    let Some(scheduled) = state
        .scheduled
        .get(id)
        .filter(|s| s.failure.is_none() && s.deliver_at <= now)
    else {
        return Ok(Decision::new(Vec::new(), false));
    };
    Ok(Decision::new(deliver_one(state, ctx, scheduled, now), true))
}

/// The events of sending one scheduled message now, or of its failure.
fn deliver_one(state: &Projections, ctx: &Ctx, s: &ScheduledMessage, now: i64) -> Vec<Event> {
    let reminder = s.reminder_for.is_some();
    if reminder {
        let mut notices = Notices::new(state);
        notices.to_user(s.sender_id, reminder_text(state, s));
        let mut events = notices.into_events();
        let sent_as = events.iter().find_map(|e| match e {
            Event::MessageSent { message_id, .. } => Some(*message_id),
            _ => None,
        });
        events.push(Event::ScheduledMessageRemoved {
            scheduled_message_id: s.id,
            sender_id: s.sender_id,
            sent_as,
            reminder: true,
        });
        return events;
    }
    let as_sender = Ctx {
        now_ms: ctx.now_ms,
        actor: Some(s.sender_id),
    };
    let destination = match &s.recipient {
        Recipient::Channel { channel_id, topic } => Destination::Channel {
            channel: super::messages::ChannelRef::Id(*channel_id),
            topic: topic.clone(),
        },
        Recipient::Direct { user_ids } => Destination::Direct {
            user_ids: user_ids.clone(),
        },
    };
    let sent = if now - s.deliver_at > LATE_CUTOFF_SECS {
        Err(ApiError::bad_request(
            "Message could not be sent at the scheduled time.",
        ))
    } else {
        let client = if s.client.is_empty() {
            "Internal"
        } else {
            &s.client
        };
        send_message(state, &as_sender, destination, &s.content, client, None)
    };
    match sent {
        Ok(decision) => {
            let message_id = decision.reply;
            let mut events = decision.events;
            // Zulip's default: read unless the message is to the sender alone.
            let to_self = matches!(&s.recipient, Recipient::Direct { user_ids } if user_ids == &[s.sender_id]);
            if !s.read_by_sender.unwrap_or(!to_self) {
                events.push(Event::MessageFlagsChanged {
                    user_id: s.sender_id,
                    flag: MessageFlag::Read,
                    add: false,
                    message_ids: vec![message_id],
                });
            }
            events.push(Event::ScheduledMessageRemoved {
                scheduled_message_id: s.id,
                sender_id: s.sender_id,
                sent_as: Some(message_id),
                reminder: false,
            });
            events
        }
        Err(error) => {
            let reason = match &error {
                ApiError::Client { msg, .. } => msg.clone(),
                ApiError::Internal(_) => "Internal server error".to_owned(),
            };
            let mut events = vec![Event::ScheduledMessageFailed {
                scheduled_message_id: s.id,
                sender_id: s.sender_id,
                reason: reason.clone(),
                reminder: false,
            }];
            let sender_active = state.users.get(s.sender_id).is_some_and(|u| u.is_active);
            if sender_active {
                let mut notices = Notices::new(state);
                notices.to_user(
                    s.sender_id,
                    format!(
                        "The message you scheduled for {} was not sent because of the following error:\n\n> {}\n\n[View scheduled messages](#scheduled)",
                        time_syntax(s.deliver_at),
                        reason
                    ),
                );
                events.extend(notices.into_events());
            }
            events
        }
    }
}

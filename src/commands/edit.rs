//! Editing a message: its content, its topic, its channel, and the notices and topic policies a
//! move carries along.

use super::actor;
use super::Decision;
use super::{allowed_here, past_limit};
use crate::commands::channels::MAX_TOPIC_LENGTH;
use crate::commands::delete::deletion;
use crate::commands::markup::OrgResolver;
use crate::commands::messages::readable;
use crate::commands::messages::truncate;
use crate::commands::messages::MAX_MESSAGE_LENGTH;
use crate::commands::notices::channel_narrow;
use crate::commands::notices::silent_mention;
use crate::commands::notices::topic_link;
use crate::commands::notices::Notices;
use crate::commands::notices::NOTIFICATION_BOT_EMAIL;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::TopicPolicy;
use crate::events::{EditedContent, Event, MessageMove, PropagateMode, Role, TopicsPolicy};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::markdown::{encode_hash_component, render_message};
use crate::projections::Address;
use crate::projections::{access, Access, Message, Projections, User};

/// What `PATCH /messages/{id}` asks for.
#[derive(Debug, Clone)]
pub struct EditRequest {
    pub content: Option<String>,
    pub topic: Option<String>,
    pub channel_id: Option<ChannelId>,
    pub propagate_mode: PropagateMode,
    /// Zulip's `send_notification_to_old_thread` (default false) and `_new_thread` (true).
    pub notify_old_thread: bool,
    pub notify_new_thread: bool,
    /// The organization's URL, for the message links of move notices.
    pub realm_url: String,
}

/// Zulip does not repeat a resolve/unresolve notice undone within this many seconds: it
/// deletes the earlier one instead (`RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS`).
const RESOLVE_UNDO_GRACE_SECS: i64 = 60;

const RESOLVED_NOTICE: &str = " has marked this topic as resolved.";

const UNRESOLVED_NOTICE: &str = " has marked this topic as unresolved.";

/// Where a channel message was, and where a move takes it.
struct MovePlaces<'a> {
    old_channel: &'a ChannelId,
    old_topic: &'a str,
    new_channel: ChannelId,
    new_topic: String,
}

/// The places of a move of `message`; `None` for a direct message.
fn places_of_move<'a>(message: &'a Message, mv: &MessageMove) -> Option<MovePlaces<'a>> {
    let Address::Channel { channel_id, topic } = &message.recipient else {
        return None;
    };
    Some(MovePlaces {
        old_channel: channel_id,
        old_topic: topic,
        new_channel: mv.new_channel_id.unwrap_or(*channel_id),
        new_topic: mv.new_topic.clone().unwrap_or_else(|| topic.to_string()),
    })
}

/// When a whole topic moves (resolving included), users' visibility policies (muted, followed)
/// go with it, as in Zulip: set on the new topic unless the user has one there already, and
/// cleared on the old one. A user who cannot read the destination only loses the old policy.
fn move_topic_policies(state: &Projections, message: &Message, mv: &MessageMove) -> Vec<Event> {
    let Some(MovePlaces {
        old_channel,
        old_topic,
        new_channel,
        new_topic,
    }) = places_of_move(message, mv)
    else {
        return Vec::new();
    };
    let left_behind = state
        .messages
        .in_topic(*old_channel, old_topic)
        .into_iter()
        .flatten()
        .any(|id| !mv.message_ids.contains(id));
    let same_place = new_channel == *old_channel
        && crate::projections::user_topics::topic_key(&new_topic)
            == crate::projections::user_topics::topic_key(old_topic);
    if left_behind || same_place {
        return Vec::new();
    }
    let destination = state.channels.get(new_channel);
    let mut events = Vec::new();
    for (user_id, policy) in state.user_topics.on_topic(*old_channel, old_topic) {
        let reaches = destination
            .zip(state.users.get(user_id))
            .is_some_and(|(c, u)| access(state, u, c) == Access::Content);
        if reaches
            && state.user_topics.policy(user_id, new_channel, &new_topic) == TopicPolicy::None
        {
            events.push(Event::TopicVisibilitySet {
                user_id,
                channel_id: new_channel,
                topic: new_topic.clone(),
                policy,
            });
        }
        events.push(Event::TopicVisibilitySet {
            user_id,
            channel_id: *old_channel,
            topic: old_topic.to_owned(),
            policy: crate::events::TopicPolicy::None,
        });
    }
    events
}

/// The notification bot's messages about a move: a resolve/unresolve notice in the topic, or
/// "moved here" / "moved to" notices in the new and old topics as the request asks.
fn move_notices(
    state: &Projections,
    me: &User,
    message: &Message,
    mv: &MessageMove,
    request: &EditRequest,
    now: i64,
) -> Vec<Event> {
    let Some(MovePlaces {
        old_channel,
        old_topic,
        new_channel,
        new_topic,
    }) = places_of_move(message, mv)
    else {
        return Vec::new();
    };
    let name_of = |id: ChannelId| {
        state
            .channels
            .get(id)
            .map(|c| c.name.clone())
            .unwrap_or_default()
    };
    let mut notices = Notices::new(state);
    let user = silent_mention(me);
    let resolving = mv.new_channel_id.is_none()
        && crate::projections::messages::is_resolve_toggle(old_topic, &new_topic);
    if resolving {
        // The newest message of the topic once moved: an undone notice is deleted, not answered.
        let bot = state
            .users
            .system_bot(NOTIFICATION_BOT_EMAIL)
            .map(|u| u.user_id);
        let newest = state
            .messages
            .in_topic(new_channel, &new_topic)
            .into_iter()
            .flatten()
            .chain(mv.message_ids.iter())
            .max()
            .and_then(|id| state.messages.get(*id));
        // (Not when the notice is the very message being edited: its move must reach clients.)
        if let Some(notice) = newest.filter(|m| {
            m.id != message.id
                && Some(m.sender_id) == bot
                && now - m.timestamp < RESOLVE_UNDO_GRACE_SECS
                && (m.content.ends_with(RESOLVED_NOTICE) || m.content.ends_with(UNRESOLVED_NOTICE))
        }) {
            let mut moved = notice.clone();
            moved.recipient = Address::Channel {
                channel_id: new_channel,
                topic: new_topic.as_str().into(),
            };
            return vec![deletion(state, &[&moved])];
        }
        let resolved = new_topic.starts_with(crate::projections::messages::RESOLVED_TOPIC_PREFIX);
        let text = if resolved {
            RESOLVED_NOTICE
        } else {
            UNRESOLVED_NOTICE
        };
        notices.to_channel(new_channel, &new_topic, format!("{user}{text}"));
        return notices.into_events();
    }
    let count = mv.message_ids.len();
    let left_behind = state
        .messages
        .in_topic(*old_channel, old_topic)
        .into_iter()
        .flatten()
        .any(|id| !mv.message_ids.contains(id));
    let destination_had = state
        .messages
        .in_topic(new_channel, &new_topic)
        .is_some_and(|ids| ids.iter().any(|id| !mv.message_ids.contains(id)));
    let old_link = topic_link(*old_channel, &name_of(*old_channel), old_topic);
    let new_link = topic_link(new_channel, &name_of(new_channel), &new_topic);
    if request.notify_new_thread {
        let text = if !left_behind && !destination_had {
            format!("This topic was moved here from {old_link} by {user}.")
        } else if count == 1 {
            let url = format!(
                "{}/{}/topic/{}/near/{}",
                request.realm_url,
                channel_narrow(new_channel, &name_of(new_channel)),
                encode_hash_component(&new_topic),
                message.id
            );
            format!("[A message]({url}) was moved here from {old_link} by {user}.")
        } else {
            format!("{count} messages were moved here from {old_link} by {user}.")
        };
        notices.to_channel(new_channel, &new_topic, text);
    }
    if request.notify_old_thread {
        let text = if !left_behind {
            format!("This topic was moved to {new_link} by {user}.")
        } else if count == 1 {
            format!("A message was moved from this topic to {new_link} by {user}.")
        } else {
            format!("{count} messages were moved from this topic to {new_link} by {user}.")
        };
        notices.to_channel(*old_channel, old_topic, text);
    }
    notices.into_events()
}

/// `PATCH /messages/{id}`: edit content, move to another topic and/or channel, resolve.
pub fn edit_message(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    request: EditRequest,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let now = ctx.now_ms / 1000;
    if request.content.is_some() && request.channel_id.is_some() {
        return Err(ApiError::bad_request(
            "Cannot change message content while changing channel",
        ));
    }
    if request.content.is_none() && request.topic.is_none() && request.channel_id.is_none() {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    if request.propagate_mode != PropagateMode::ChangeOne
        && request.topic.is_none()
        && request.channel_id.is_none()
    {
        return Err(ApiError::bad_request(
            "Invalid propagate_mode without topic edit",
        ));
    }
    let content = match &request.content {
        None => None,
        Some(raw) => {
            if message.sender_id != me.user_id {
                return Err(ApiError::bad_request(
                    "You don't have permission to edit this message",
                ));
            }
            if !state.realm.flag("allow_message_editing") {
                return Err(ApiError::bad_request(
                    "Your organization has turned off message editing",
                ));
            }
            if past_limit(
                state,
                "message_content_edit_limit_seconds",
                message.timestamp,
                now,
            ) {
                return Err(ApiError::bad_request(
                    "The time limit for editing this message has passed",
                ));
            }
            let raw = raw.trim_end();
            super::check_content_characters(raw)?;
            // Zulip turns emptied content into a deletion marker rather than an empty message.
            let raw = if raw.trim().is_empty() {
                "(deleted)".to_owned()
            } else {
                truncate(raw, MAX_MESSAGE_LENGTH, "\n[message truncated]")
            };
            let mut rendered = render_message(&raw, &OrgResolver(state));
            super::messages::check_group_mentions(state, me, &mut rendered)?;
            if let crate::projections::Address::Channel { channel_id, topic } = &message.recipient {
                if let Some(channel) = state.channels.get(*channel_id) {
                    super::messages::check_wildcard_mentions(state, me, channel, topic, &rendered)?;
                }
            }
            Some(Box::new(edited_content(raw, rendered)))
        }
    };
    let moved = if request.topic.is_some() || request.channel_id.is_some() {
        Some(Box::new(plan_move(state, me, message, &request, now)?))
    } else {
        None
    };
    let unchanged_content = content
        .as_ref()
        .is_some_and(|c| *c.content == *message.content);
    if moved.is_none() && unchanged_content {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    let notices = moved
        .as_deref()
        .map(|mv| move_notices(state, me, message, mv, &request, now))
        .unwrap_or_default();
    let policies = moved
        .as_deref()
        .map(|mv| move_topic_policies(state, message, mv))
        .unwrap_or_default();
    let content = content.filter(|_| !unchanged_content);
    // Alert words follow the new content, for everyone holding a copy.
    let alerted = content.as_ref().map(|new| {
        let holders = state.messages.holders(message_id);
        state
            .alert_words
            .alerted(&new.content, message.sender_id, |u| holders.contains(&u))
    });
    let mut events = vec![Event::MessageEdited {
        message_id,
        user_id: me.user_id,
        content,
        moved,
        alerted,
    }];
    events.extend(policies);
    events.extend(notices);
    Ok(Decision::events(events))
}

/// Decides a topic and/or channel move: permissions, limits, and which messages go.
fn plan_move(
    state: &Projections,
    me: &User,
    message: &Message,
    request: &EditRequest,
    now: i64,
) -> ApiResult<MessageMove> {
    let Address::Channel { channel_id, topic } = &message.recipient else {
        return Err(ApiError::bad_request(
            "Direct messages cannot be moved to channels.",
        ));
    };
    let channel = state
        .channels
        .get(*channel_id)
        .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?;
    if let Some(topic) = &request.topic {
        super::check_topic_characters(topic)?;
    }
    let new_topic = request
        .topic
        .as_deref()
        .map(|t| truncate(t.trim(), MAX_TOPIC_LENGTH, "..."))
        .filter(|t| *t != **topic);
    let new_channel = match request.channel_id.filter(|id| id != channel_id) {
        None => None,
        Some(id) => Some(
            state
                .channels
                .get(id)
                .filter(|c| access(state, me, c) != Access::None && !c.is_archived)
                .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?,
        ),
    };
    if new_topic.is_none() && new_channel.is_none() {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    let moderator = me.role.is_admin() || me.role == Role::Moderator;
    if let Some(new_topic) = &new_topic {
        let resolving = crate::projections::messages::is_resolve_toggle(topic, new_topic);
        if resolving && topic.is_empty() {
            return Err(ApiError::bad_request(
                "General chat cannot be marked as resolved",
            ));
        }
        let target = new_channel.unwrap_or(channel);
        if new_topic.is_empty() && state.topics_policy(target) == TopicsPolicy::DisableEmptyTopic {
            return Err(ApiError::bad_request(
                "Sending messages to the general chat is not allowed in this channel.",
            ));
        }
        if !new_topic.is_empty() && state.topics_policy(target) == TopicsPolicy::EmptyTopicOnly {
            return Err(ApiError::bad_request(
                "Only the general chat topic is allowed in this channel.",
            ));
        }
        let permitted = if resolving {
            allowed_here(
                state,
                me,
                "can_resolve_topics_group",
                Some(&channel.permissions.can_resolve_topics_group),
            )
        } else {
            allowed_here(
                state,
                me,
                "can_move_messages_between_topics_group",
                Some(&channel.permissions.can_move_messages_within_channel_group),
            )
        };
        if !permitted {
            return Err(ApiError::bad_request(
                "You don't have permission to edit this message",
            ));
        }
    }
    if new_channel.is_some()
        && !allowed_here(
            state,
            me,
            "can_move_messages_between_channels_group",
            Some(&channel.permissions.can_move_messages_out_of_channel_group),
        )
    {
        return Err(ApiError::bad_request(
            "You don't have permission to move this message",
        ));
    }
    let in_topic = state.messages.in_topic(*channel_id, topic);
    let mut message_ids: Vec<MessageId> = match request.propagate_mode {
        PropagateMode::ChangeOne => vec![message.id],
        PropagateMode::ChangeLater => in_topic
            .into_iter()
            .flatten()
            .copied()
            .filter(|id| *id >= message.id)
            .collect(),
        PropagateMode::ChangeAll => in_topic.into_iter().flatten().copied().collect(),
    };
    if !message_ids.contains(&message.id) {
        message_ids.push(message.id);
    }
    message_ids.sort();
    if !moderator {
        let limit = if new_channel.is_some() {
            "move_messages_between_streams_limit_seconds"
        } else {
            "move_messages_within_stream_limit_seconds"
        };
        let limit_from = state
            .realm
            .limit_secs(limit)
            .map(|secs| now.saturating_sub(secs));
        let too_old = |id: &MessageId| {
            limit_from
                .is_some_and(|from| state.messages.get(*id).is_some_and(|m| m.timestamp < from))
        };
        if request.propagate_mode == PropagateMode::ChangeOne && too_old(&message.id) {
            return Err(ApiError::bad_request(
                "The time limit for editing this message's topic has passed.",
            ));
        }
        let allowed: Vec<&MessageId> = message_ids.iter().filter(|id| !too_old(id)).collect();
        if allowed.len() < message_ids.len() {
            let total = message_ids.len();
            let mut error = ApiError::new(
                ErrorCode::MoveMessagesTimeLimitExceeded,
                format!(
                    "You only have permission to move the {} most recent messages in this topic.",
                    allowed.len()
                ),
            )
            .with("total_messages_in_topic", total)
            .with("total_messages_allowed_to_move", allowed.len());
            error = error.with(
                "first_message_id_allowed_to_move",
                allowed.first().map(|id| id.0),
            );
            return Err(error);
        }
    }
    Ok(MessageMove {
        message_ids,
        propagate_mode: request.propagate_mode,
        new_topic,
        new_channel_id: new_channel.map(|c| c.id),
    })
}

/// A message's new content as `MessageEdited` carries it: the text and its rendering.
pub fn edited_content(raw: String, rendered: crate::markdown::Rendered) -> EditedContent {
    EditedContent {
        is_me_message: raw.starts_with("/me ") && !raw.contains('\n'),
        content: raw.into(),
        rendered_content: rendered.html.into(),
        mentioned: rendered.mentioned.into_iter().map(UserId).collect(),
        stream_wildcard: rendered.stream_wildcard,
        topic_wildcard: rendered.topic_wildcard,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, Given, OWNER};

    const MINUTE_MS: i64 = 60_000;
    const SENT_MS: i64 = 1_000_000_000;

    /// Alice in #general; she sent "old" at `SENT_MS` and "new" eight days later to topic "t".
    fn two_messages() -> (Given, UserId, MessageId, MessageId) {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let general = given.channel("general", &[alice]);
        let old = given.at(SENT_MS).message(alice, general, "t", "old");
        let new = given
            .at(SENT_MS + 8 * 24 * 60 * MINUTE_MS)
            .message(alice, general, "t", "new");
        (given, alice, old, new)
    }

    fn edit(content: Option<&str>, topic: Option<&str>, mode: PropagateMode) -> EditRequest {
        EditRequest {
            content: content.map(str::to_owned),
            topic: topic.map(str::to_owned),
            channel_id: None,
            propagate_mode: mode,
            notify_old_thread: false,
            notify_new_thread: false,
            realm_url: String::new(),
        }
    }

    #[test]
    fn content_edits_have_a_time_limit() {
        let (mut given, alice, old, _) = two_messages();
        let change = || edit(Some("changed"), None, PropagateMode::ChangeOne);
        // Ten minutes plus Zulip's grace period, and not a second more.
        let last_moment = SENT_MS + 10 * MINUTE_MS + 20_000;
        given
            .at(last_moment)
            .decided(alice, |s, c| edit_message(s, c, old, change()));
        let late = given
            .at(last_moment + 1_000)
            .refused(alice, |s, c| edit_message(s, c, old, change()));
        assert_eq!(
            msg(&late),
            "The time limit for editing this message has passed"
        );
    }

    #[test]
    fn topic_moves_have_a_week_for_members_and_no_limit_for_administrators() {
        let (mut given, alice, old, new) = two_messages();
        given.at(SENT_MS + 8 * 24 * 60 * MINUTE_MS + MINUTE_MS);
        let one = edit(None, Some("u"), PropagateMode::ChangeOne);
        let err = given.refused(alice, |s, c| edit_message(s, c, old, one.clone()));
        assert_eq!(
            msg(&err),
            "The time limit for editing this message's topic has passed."
        );
        // Moving the whole topic would take the week-old message along: refused, with counts.
        let all = edit(None, Some("u"), PropagateMode::ChangeAll);
        let err = given.refused(alice, |s, c| edit_message(s, c, new, all.clone()));
        assert_eq!(err.code(), Some(ErrorCode::MoveMessagesTimeLimitExceeded));
        let body = err.body();
        assert_eq!(
            (
                body["total_messages_in_topic"].clone(),
                body["total_messages_allowed_to_move"].clone(),
                body["first_message_id_allowed_to_move"].clone(),
            ),
            (
                serde_json::json!(2),
                serde_json::json!(1),
                serde_json::json!(new.0)
            )
        );
        // The newer message alone may move; the owner moves everything.
        given.decided(alice, |s, c| edit_message(s, c, new, one.clone()));
        let decided = given.decided(OWNER, |s, c| edit_message(s, c, new, all));
        assert!(matches!(
            &decided.events[..],
            [Event::MessageEdited { moved: Some(m), content: None, .. }]
                if m.message_ids == [old, new]
        ));
    }

    #[test]
    fn only_the_sender_edits_content_and_an_edit_must_change_something() {
        let (mut given, alice, _, new) = two_messages();
        let bob = given.user("bob@example.com", Role::Member);
        let change = || edit(Some("changed"), None, PropagateMode::ChangeOne);
        let err = given.refused(bob, |s, c| edit_message(s, c, new, change()));
        assert_eq!(msg(&err), "You don't have permission to edit this message");
        // Not even an administrator edits another's words.
        let err = given.refused(OWNER, |s, c| edit_message(s, c, new, change()));
        assert_eq!(msg(&err), "You don't have permission to edit this message");
        let nothing = edit(None, None, PropagateMode::ChangeOne);
        let err = given.refused(alice, |s, c| edit_message(s, c, new, nothing));
        assert_eq!(msg(&err), "Nothing to change");
        // The edit is recorded with the previous text.
        given.ok(alice, |s, c| edit_message(s, c, new, change()));
        let message = given.state.messages.get(new).map(|m| m.content.to_string());
        assert_eq!(message.as_deref(), Some("changed"));
    }

    #[test]
    fn a_move_to_a_private_channel_takes_copies_from_those_who_cannot_read_it() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let bob = given.user("bob@example.com", Role::Member);
        let general = given.channel("general", &[alice, bob]);
        let secret = given.channel_with(
            crate::commands::channels::ChannelSpec {
                name: "secret".into(),
                invite_only: true,
                history_public_to_subscribers: Some(true),
                ..Default::default()
            },
            &[OWNER, alice],
        );
        let hi = given.message(alice, general, "t", "hi");
        // Bob starred it; the owner, who never received it, will get a read copy there.
        given.ok(bob, |s, c| {
            crate::commands::flags::update_flags(
                s,
                c,
                vec![hi],
                crate::events::MessageFlag::Starred,
                true,
            )
        });
        let to_secret = EditRequest {
            channel_id: Some(secret),
            ..edit(None, None, PropagateMode::ChangeOne)
        };
        given.ok(OWNER, |s, c| edit_message(s, c, hi, to_secret));
        let flags = |user| given.state.messages.flags(user, hi);
        // Alice keeps her copy (unread? no: it is her own, read); Bob, who cannot read the
        // private channel, loses his with its star; the owner gets a read one.
        assert_eq!(
            flags(alice),
            Some(crate::projections::messages::flags::READ)
        );
        assert_eq!(flags(bob), None);
        assert_eq!(
            flags(OWNER),
            Some(crate::projections::messages::flags::READ)
        );
        assert_eq!(given.state.messages.holders(hi), vec![OWNER, alice]);
    }
}

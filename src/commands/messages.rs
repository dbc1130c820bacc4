//! Sending messages and changing their per-user flags.

use super::actor;
use super::channels::MAX_TOPIC_LENGTH;
use super::Decision;
use crate::commands::markup::OrgResolver;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{Event, Recipient, Role, SenderQueue, TopicsPolicy};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::markdown::render_message;
use crate::projections::access;
use crate::projections::can_read;
use crate::projections::Access;
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

/// Truncates to `max` characters with Zulip's marker.
pub(crate) fn truncate(text: &str, max: usize, marker: &str) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(marker.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(marker);
    out
}

/// Whether `me` may post in `channel` at all (before the topic's own rules), with Zulip's
/// refusals: an archived or unreachable channel, or `can_send_message_group`.
pub fn check_may_post(
    state: &Projections,
    me: &User,
    channel: &crate::projections::Channel,
) -> ApiResult<()> {
    let may_post = !channel.is_archived
        && (access(state, me, channel) == Access::Content
            || !channel.invite_only && me.role != Role::Guest);
    if !may_post {
        return Err(ApiError::bad_request(format!(
            "Not authorized to send to channel '{}'",
            channel.name
        )));
    }
    if !state.groups.setting_allows(
        &state.users,
        me.user_id,
        &channel.permissions.can_send_message_group,
    ) {
        return Err(ApiError::bad_request(
            "You do not have permission to post in this channel.",
        ));
    }
    Ok(())
}

/// The organization's direct-message permissions (Zulip's `direct_message_permission_group` and
/// `direct_message_initiator_group`). Bots may always write (their owners are answerable for
/// them, as in Zulip), and anyone may write to oneself or to bots; otherwise someone in the
/// conversation must be in the permission group, and a sender outside the initiator group may
/// only write where the conversation already has messages.
fn check_direct_permissions(
    state: &Projections,
    me: &User,
    participants: &[UserId],
) -> ApiResult<()> {
    if me.is_bot() {
        return Ok(());
    }
    let bots_only = participants
        .iter()
        .filter(|id| **id != me.user_id)
        .filter_map(|id| state.users.get(*id))
        .all(|u| u.is_bot());
    if bots_only {
        return Ok(());
    }
    let permission = state.realm_permission("direct_message_permission_group");
    let allowed = |user: UserId| state.groups.setting_allows(&state.users, user, &permission);
    if !participants.iter().any(|id| allowed(*id)) {
        let nobody = !state
            .users
            .iter()
            .any(|u| u.is_active && allowed(u.user_id));
        return Err(ApiError::bad_request(if nobody {
            "Direct messages are disabled in this organization."
        } else {
            "This conversation does not include any users who can authorize it."
        }));
    }
    let started = state
        .messages
        .in_conversation(participants)
        .is_some_and(|ids| !ids.is_empty());
    if !started && !state.realm_allows(me.user_id, "direct_message_initiator_group") {
        return Err(ApiError::bad_request(
            "You do not have permission to initiate direct message conversations.",
        ));
    }
    Ok(())
}

/// `POST /messages`.
pub fn send_message(
    state: &Projections,
    ctx: &Ctx,
    to: Destination,
    content: &str,
    client: &str,
    sender_queue: Option<SenderQueue>,
) -> ApiResult<Decision<MessageId>> {
    let me = actor(state, ctx)?;
    let content = content.trim_end();
    if content.trim().is_empty() {
        return Err(ApiError::bad_request("Message must not be empty"));
    }
    super::check_content_characters(content)?;
    let content = truncate(content, MAX_MESSAGE_LENGTH, "\n[message truncated]");
    let mut rendered = render_message(&content, &OrgResolver(state));
    check_group_mentions(state, me, &mut rendered)?;
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
            check_may_post(state, me, channel_state)?;
            let allows = |s| state.groups.setting_allows(&state.users, me.user_id, s);
            super::check_topic_characters(&topic)?;
            let topic = truncate(topic.trim(), MAX_TOPIC_LENGTH, "...");
            if topic.is_empty()
                && state.topics_policy(channel_state) == TopicsPolicy::DisableEmptyTopic
            {
                return Err(ApiError::bad_request(
                    "Sending messages to the general chat is not allowed in this channel.",
                ));
            }
            if !topic.is_empty()
                && state.topics_policy(channel_state) == TopicsPolicy::EmptyTopicOnly
            {
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
            check_wildcard_mentions(state, me, channel_state, &topic, &rendered)?;
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
            check_direct_permissions(state, me, &participants)?;
            Recipient::Direct {
                user_ids: participants,
            }
        }
    };
    let message_id = state.messages.next_id();
    let is_me_message = content.starts_with("/me ") && !content.contains('\n');
    // Recipients who muted the sender get the message read (Zulip's rule), in the same batch.
    let muters: Vec<UserId> = state
        .mutes
        .muters_of(me.user_id)
        .filter(|muter| match &recipient {
            Recipient::Channel { channel_id, .. } => state
                .channels
                .get(*channel_id)
                .is_some_and(|c| c.subscribers.contains(muter)),
            Recipient::Direct { user_ids } => user_ids.contains(muter),
        })
        .collect();
    let read_for_muters = muters
        .into_iter()
        .map(|user_id| Event::MessageFlagsChanged {
            user_id,
            flag: crate::events::MessageFlag::Read,
            add: true,
            message_ids: vec![message_id],
        });
    // Recipients whose alert words the content contains.
    let alerted = state
        .alert_words
        .alerted(&content, me.user_id, |u| match &recipient {
            Recipient::Channel { channel_id, .. } => state
                .channels
                .get(*channel_id)
                .is_some_and(|c| c.subscribers.contains(&u)),
            Recipient::Direct { user_ids } => user_ids.contains(&u),
        });
    // `/poll` and `/todo` make the message a widget, as in Zulip: its first submessage.
    let widget = widget_content(&content);
    let mut events = vec![Event::MessageSent {
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
        sender_queue: sender_queue.map(Box::new),
        alerted,
    }];
    events.extend(read_for_muters);
    if let Some(widget) = widget {
        events.push(Event::SubmessageAdded {
            submessage_id: state.messages.next_submessage_id(),
            message_id,
            sender_id: me.user_id,
            msg_type: "widget".into(),
            content: widget.to_string(),
        });
    }
    Ok(Decision::new(events, message_id))
}

/// The widget a message's text starts (Zulip's `get_widget_data`): `/poll Question` with an
/// option a line, or `/todo Title` with a task a line (`task: description`). List markers
/// before an option or a task are dropped.
pub fn widget_content(content: &str) -> Option<serde_json::Value> {
    let first = content.split_whitespace().next()?;
    let kind = first
        .strip_prefix('/')
        .filter(|k| *k == "poll" || *k == "todo")?;
    let rest = content.replacen(first, "", 1);
    let mut lines = rest.lines();
    let title = lines.next().map(str::trim).unwrap_or_default().to_owned();
    let items: Vec<&str> = lines
        .map(|line| {
            let line = line.trim();
            line.strip_prefix(['-', '*'])
                .map(str::trim_start)
                .unwrap_or(line)
        })
        .filter(|line| !line.is_empty())
        .collect();
    let extra_data = if kind == "poll" {
        serde_json::json!({"question": title, "options": items})
    } else {
        let tasks: Vec<serde_json::Value> = items
            .iter()
            .filter_map(|line| {
                let (task, desc) = line.split_once(':').unwrap_or((line, ""));
                let task = task.trim();
                (!task.is_empty()).then(|| serde_json::json!({"task": task, "desc": desc.trim()}))
            })
            .collect();
        serde_json::json!({"task_list_title": title, "tasks": tasks})
    };
    Some(serde_json::json!({"widget_type": kind, "extra_data": extra_data}))
}

/// Zulip's rule for user group mentions: a group is mentioned only by those its
/// `can_mention_group` allows (a silent mention is anyone's). The groups' members, at this
/// moment, join the mentioned users.
pub fn check_group_mentions(
    state: &Projections,
    me: &User,
    rendered: &mut crate::markdown::Rendered,
) -> ApiResult<()> {
    if rendered.mentioned_groups.is_empty() {
        // Most messages: nothing to check, and the mentioned stay as the renderer left them.
        return Ok(());
    }
    // A group mentioned many times is looked at once; members are gathered in a set (a
    // message may mention a large group thousands of times).
    let mut mentioned: std::collections::BTreeSet<u64> =
        rendered.mentioned.iter().copied().collect();
    let mut seen = std::collections::BTreeSet::new();
    for group_id in std::mem::take(&mut rendered.mentioned_groups) {
        if !seen.insert(group_id) {
            continue;
        }
        let Some(group) = state.groups.get(crate::ids::GroupId(group_id)) else {
            continue;
        };
        if !state.groups.setting_allows(
            &state.users,
            me.user_id,
            &group.permissions.can_mention_group,
        ) {
            return Err(ApiError::bad_request(format!(
                "You are not allowed to mention user group '{}'.",
                group.name
            )));
        }
        let members = state
            .groups
            .setting_members(&state.users, &crate::events::GroupSetting::Group(group.id));
        mentioned.extend(members.into_iter().map(|member| member.0));
        rendered.mentioned_groups.push(group_id);
    }
    rendered.mentioned = mentioned.into_iter().collect();
    Ok(())
}

/// Zulip's rule for wildcard mentions in large places: `@**all**` (and its synonyms) in a channel
/// of more than 15 active subscribers, and `@**topic**` in a topic with more than 15
/// participants (senders and reacters), need `can_mention_many_users_group`.
pub fn check_wildcard_mentions(
    state: &Projections,
    me: &User,
    channel: &crate::projections::Channel,
    topic: &str,
    rendered: &crate::markdown::Rendered,
) -> ApiResult<()> {
    use crate::projections::realm::WILDCARD_MENTION_THRESHOLD;
    let allowed = || state.realm_allows(me.user_id, "can_mention_many_users_group");
    if rendered.stream_wildcard {
        let subscribers = channel
            .subscribers
            .iter()
            .filter(|u| state.users.get(**u).is_some_and(|u| u.is_active))
            .count();
        if subscribers > WILDCARD_MENTION_THRESHOLD && !allowed() {
            return Err(ApiError::new(
                ErrorCode::StreamWildcardMentionNotAllowed,
                "You do not have permission to use channel wildcard mentions in this channel.",
            ));
        }
    }
    if rendered.topic_wildcard {
        // Counted until the threshold is passed, so a long topic is not read to its end.
        let mut participants = std::collections::BTreeSet::new();
        let ids = state.messages.in_topic(channel.id, topic);
        for message in ids
            .into_iter()
            .flatten()
            .filter_map(|id| state.messages.get(*id))
        {
            participants.insert(message.sender_id);
            participants.extend(message.reactions().iter().map(|r| r.user_id));
            if participants.len() > WILDCARD_MENTION_THRESHOLD {
                break;
            }
        }
        if participants.len() > WILDCARD_MENTION_THRESHOLD && !allowed() {
            return Err(ApiError::new(
                ErrorCode::TopicWildcardMentionNotAllowed,
                "You do not have permission to use topic wildcard mentions in this topic.",
            ));
        }
    }
    Ok(())
}

/// The message `me` names, if they may read it; Zulip's "Invalid message(s)" otherwise.
pub fn readable<'a>(state: &'a Projections, me: &User, id: MessageId) -> ApiResult<&'a Message> {
    state
        .messages
        .get(id)
        .filter(|m| can_read(state, me, m))
        .ok_or_else(|| ApiError::bad_request("Invalid message(s)"))
}

/// `POST /submessage`, with Zulip's rules: the caller must be able to read the message, the
/// first submessage must come from the message's sender, and the content must be JSON.
pub fn add_submessage(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    msg_type: String,
    content: String,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let sender_started = message.sender_id == me.user_id
        || message
            .submessages()
            .iter()
            .any(|sm| sm.sender_id == message.sender_id);
    if !sender_started {
        return Err(ApiError::bad_request(
            "You cannot attach a submessage to this message.",
        ));
    }
    if serde_json::from_str::<serde_json::Value>(&content).is_err() {
        return Err(ApiError::bad_request("Invalid json for submessage"));
    }
    Ok(Decision::events(vec![Event::SubmessageAdded {
        submessage_id: state.messages.next_submessage_id(),
        message_id,
        sender_id: me.user_id,
        msg_type,
        content,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::channels::ChannelSpec;
    use crate::commands::testing::{msg, Given, OWNER};

    #[test]
    fn poll_and_todo_widgets_are_read_as_zulip_reads_them() {
        assert_eq!(
            widget_content("/poll Lunch?\n- pizza\n* soup\n\n  salad  "),
            Some(serde_json::json!({"widget_type": "poll",
                "extra_data": {"question": "Lunch?", "options": ["pizza", "soup", "salad"]}}))
        );
        assert_eq!(
            widget_content("/todo Release\nTag: v2.0 tag\n- Notes\n:no task"),
            Some(
                serde_json::json!({"widget_type": "todo", "extra_data": {"task_list_title": "Release",
                "tasks": [{"task": "Tag", "desc": "v2.0 tag"}, {"task": "Notes", "desc": ""}]}})
            )
        );
        assert_eq!(
            widget_content("/poll\nA"),
            Some(
                serde_json::json!({"widget_type": "poll", "extra_data": {"question": "", "options": ["A"]}})
            )
        );
        for plain in ["/pollster x", "poll x", "/me waves", " ", "say /poll"] {
            assert_eq!(widget_content(plain), None, "{plain}");
        }
    }

    fn to_channel(channel: ChannelId, topic: &str) -> Destination {
        Destination::Channel {
            channel: ChannelRef::Id(channel),
            topic: topic.into(),
        }
    }

    #[test]
    fn a_message_goes_to_the_subscribers_with_mentions_rendered() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let bob = given.user("bob@example.com", Role::Member);
        let general = given.channel("general", &[alice, bob]);
        let decided = given.decided(alice, |s, c| {
            send_message(
                s,
                c,
                to_channel(general, "t"),
                "hi @**bob**  \n",
                "test",
                None,
            )
        });
        let [Event::MessageSent {
            recipient,
            content,
            mentioned,
            ..
        }] = &decided.events[..]
        else {
            panic!("one MessageSent expected: {:?}", decided.events);
        };
        // Trailing white space is dropped; the mention names Bob.
        assert_eq!(&**content, "hi @**bob**");
        assert_eq!(mentioned, &vec![bob]);
        assert_eq!(
            recipient,
            &Recipient::Channel {
                channel_id: general,
                topic: "t".into()
            }
        );
        // Folded, both subscribers hold a copy; the sender's is already read.
        let id = given.ok(alice, |s, c| {
            send_message(s, c, to_channel(general, "t"), "again", "test", None)
        });
        assert!(given.state.messages.flags(alice, id).is_some());
        assert!(given.state.messages.flags(bob, id).is_some());
        assert!(given.state.messages.flags(OWNER, id).is_none());
    }

    #[test]
    fn empty_unknown_and_private_destinations_are_refused() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let general = given.channel("general", &[alice]);
        let secret = given.channel_with(
            ChannelSpec {
                name: "secret".into(),
                invite_only: true,
                ..ChannelSpec::default()
            },
            &[OWNER],
        );
        let send = |to: Destination, text: &'static str| {
            move |s: &Projections, c: &Ctx| send_message(s, c, to, text, "test", None)
        };
        let err = given.refused(alice, send(to_channel(general, "t"), "  \n "));
        assert_eq!(msg(&err), "Message must not be empty");
        let err = given.refused(alice, send(to_channel(ChannelId(99), "t"), "hi"));
        assert_eq!(err.code(), Some(ErrorCode::StreamDoesNotExist));
        assert_eq!(msg(&err), "Channel with ID '99' does not exist");
        // A private channel the sender cannot see does not exist for them either.
        let err = given.refused(alice, send(to_channel(secret, "t"), "hi"));
        assert_eq!(
            msg(&err),
            format!("Channel with ID '{secret}' does not exist")
        );
        let none = Destination::Direct { user_ids: vec![] };
        let err = given.refused(alice, send(none, "hi"));
        assert_eq!(msg(&err), "Message must have recipients");
        let ghost = Destination::Direct {
            user_ids: vec![UserId(99)],
        };
        let err = given.refused(alice, send(ghost, "hi"));
        assert_eq!(msg(&err), "Invalid user ID 99");
    }

    #[test]
    fn long_content_and_topics_are_truncated_as_zulip_does() {
        let mut given = Given::org();
        let general = given.channel("general", &[OWNER]);
        let long = "x".repeat(MAX_MESSAGE_LENGTH + 10);
        let topic = "t".repeat(MAX_TOPIC_LENGTH + 5);
        let id = given.ok(OWNER, |s, c| {
            send_message(s, c, to_channel(general, &topic), &long, "test", None)
        });
        let message = given
            .state
            .messages
            .get(id)
            .map(|m| (m.content.len(), m.topic().to_owned()));
        let (length, stored_topic) = message.unwrap_or_default();
        assert_eq!(length, MAX_MESSAGE_LENGTH);
        assert!(stored_topic.ends_with("..."));
        assert_eq!(stored_topic.chars().count(), MAX_TOPIC_LENGTH);
    }
}

//! The notifier's decisions, recorded like any other (`notify` runs them): notices of
//! messages for people away, the missed-message emails they become when due, login alerts, and
//! what became of each email.

use super::{Ctx, Decision};
use crate::error::ApiResult;
use crate::events::{Event, Notice, NoticeTrigger, QueuedMail, QueuedPush};
use crate::ids::{MessageId, UserId};
use crate::projections::{Address, Projections};
use std::collections::BTreeMap;

/// Longest text kept of a client's description or an address in a login alert.
const MAX_ALERT_TEXT: usize = 200;

/// Records notices (none is fine: `through` alone moves on) and queues pushes.
pub fn record_notices(
    state: &Projections,
    notices: Vec<Notice>,
    pushes: Vec<(UserId, QueuedPush)>,
    through: MessageId,
) -> ApiResult<Decision> {
    let mut events = Vec::new();
    if !notices.is_empty() || through > state.notices.through() {
        events.push(Event::NoticesRecorded { notices, through });
    }
    for (push_id, (user_id, push)) in (state.notices.next_push_id()..).zip(pushes) {
        events.push(Event::PushQueued {
            push_id,
            user_id,
            push,
        });
    }
    Ok(Decision::events(events))
}

/// The service took push `push_id` for `devices` devices (a no-op if already settled).
pub fn push_sent(state: &Projections, push_id: u64, devices: u32) -> ApiResult<Decision> {
    if state.notices.outgoing_push(push_id).is_none() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::PushSent { push_id, devices }]))
}

/// Push `push_id` is given up on.
pub fn push_failed(state: &Projections, push_id: u64, reason: &str) -> ApiResult<Decision> {
    if state.notices.outgoing_push(push_id).is_none() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::PushFailed {
        push_id,
        reason: reason.chars().take(MAX_ALERT_TEXT).collect(),
    }]))
}

/// Where a message was: one email per conversation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Conversation {
    Topic(u64, String),
    Direct(Vec<UserId>),
}

/// Settles every pending notice of `user` (called once one of them is due: like Zulip, the
/// whole batch goes together) and queues one email per conversation with the messages still
/// unread, not deleted and readable by them; the reply is how many emails were queued.
pub fn settle_due(state: &Projections, user: UserId) -> ApiResult<Decision<usize>> {
    let pending = state.notices.pending_of(user);
    if pending.is_empty() {
        return Ok(Decision::new(Vec::new(), 0));
    }
    let person = state.users.get(user).filter(|u| u.is_active);
    let mut groups: BTreeMap<Conversation, (Vec<MessageId>, NoticeTrigger)> = BTreeMap::new();
    for notice in pending {
        let Some(person) = person else { break };
        let Some(message) = state.messages.get(notice.message_id) else {
            continue;
        };
        let unread = state
            .messages
            .flags(user, message.id)
            .is_some_and(|bits| bits & crate::projections::message::flags::READ == 0);
        if !unread || !crate::projections::can_read(state, person, message) {
            continue;
        }
        let conversation = match &message.recipient {
            Address::Channel { channel_id, topic } => Conversation::Topic(
                channel_id.0,
                crate::projections::user_topics::topic_key(topic),
            ),
            Address::Direct { user_ids } => Conversation::Direct(user_ids.to_vec()),
        };
        let entry = groups
            .entry(conversation)
            .or_insert_with(|| (Vec::new(), notice.trigger));
        entry.0.push(message.id);
        if notice.trigger.rank() < entry.1.rank() {
            entry.1 = notice.trigger;
        }
    }
    let mut events = vec![Event::NoticesSettled {
        user_id: user,
        message_ids: pending.iter().map(|p| p.message_id).collect(),
    }];
    let queued = groups.len();
    for (mail_id, (_, (mut message_ids, trigger))) in (state.notices.next_mail_id()..).zip(groups) {
        message_ids.sort();
        events.push(Event::EmailQueued {
            mail_id,
            user_id: user,
            mail: QueuedMail::MissedMessages {
                message_ids,
                trigger,
            },
        });
    }
    Ok(Decision::new(events, queued))
}

/// Accounts younger than this get no login alert (they were just made by signing in).
const JUST_CREATED_MS: i64 = 60_000;

/// The events that queue a login alert to `user` about a sign-in now, when they want one
/// (`enable_login_emails`, and an account older than a minute, as Zulip); none otherwise.
pub fn login_alert(
    state: &Projections,
    ctx: &Ctx,
    user: UserId,
    client: &str,
    address: &str,
) -> Vec<Event> {
    let wanted = state.users.get(user).is_some_and(|u| {
        u.is_active && !u.is_bot() && ctx.now_ms - u.date_joined_ms > JUST_CREATED_MS
    }) && state.user_settings.flag(user, "enable_login_emails");
    if !wanted {
        return Vec::new();
    }
    vec![Event::EmailQueued {
        mail_id: state.notices.next_mail_id(),
        user_id: user,
        mail: QueuedMail::LoginAlert {
            client: client.chars().take(MAX_ALERT_TEXT).collect(),
            address: address.chars().take(MAX_ALERT_TEXT).collect(),
        },
    }]
}

/// Queues the weekly digest, covering what came since `since` (ms), to each of `users` not
/// sent one in the last six days (the notifier picks them: `notify::digest`).
pub fn queue_digests(
    state: &Projections,
    ctx: &Ctx,
    users: &[UserId],
    since: i64,
) -> ApiResult<Decision<usize>> {
    let week_ago = ctx.now_ms - 6 * 24 * 3600 * 1000;
    let mut events = Vec::new();
    let due = users.iter().filter(|user| {
        state.users.get(**user).is_some_and(|u| u.is_active)
            && state
                .notices
                .last_digest(**user)
                .is_none_or(|at| at < week_ago)
    });
    for (mail_id, user) in (state.notices.next_mail_id()..).zip(due) {
        events.push(Event::EmailQueued {
            mail_id,
            user_id: *user,
            mail: QueuedMail::Digest { since },
        });
    }
    let queued = events.len();
    Ok(Decision::new(events, queued))
}

/// The setting an unsubscribe link of `kind` switches off (Zulip's `email_unsubscribers`).
pub fn unsubscribe_setting(kind: &str) -> Option<&'static str> {
    match kind {
        "missed_messages" => Some("enable_offline_email_notifications"),
        "digest" => Some("enable_digest_emails"),
        "login" => Some("enable_login_emails"),
        "marketing" => Some("enable_marketing_emails"),
        _ => None,
    }
}

/// One-click unsubscribing: `user` gets no more emails of `kind` (a no-op when they already
/// get none, or are not an active person).
pub fn unsubscribe(state: &Projections, user: UserId, kind: &str) -> ApiResult<Decision> {
    let Some(name) = unsubscribe_setting(kind) else {
        return Err(crate::error::ApiError::bad_request("Unknown email type"));
    };
    let active = state.users.get(user).is_some_and(|u| u.is_active);
    if !active || !state.user_settings.flag(user, name) {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::UserSettingChanged {
        user_id: user,
        name: name.to_owned(),
        value: crate::events::RealmValue::Bool(false),
    }]))
}

/// The relay took email `mail_id` (a no-op if it was already settled).
pub fn email_sent(state: &Projections, mail_id: u64) -> ApiResult<Decision> {
    if state.notices.outgoing_mail(mail_id).is_none() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::EmailSent { mail_id }]))
}

/// Email `mail_id` is given up on, for `reason` (a no-op if it was already settled).
pub fn email_failed(state: &Projections, mail_id: u64, reason: &str) -> ApiResult<Decision> {
    if state.notices.outgoing_mail(mail_id).is_none() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::EmailFailed {
        mail_id,
        reason: reason.chars().take(MAX_ALERT_TEXT).collect(),
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::Given;
    use crate::events::{MessageFlag, Role};

    fn notice(user: UserId, message: MessageId, trigger: NoticeTrigger) -> Notice {
        Notice {
            user_id: user,
            message_id: message,
            trigger,
            due_at: 1_000,
        }
    }

    #[test]
    fn due_notices_become_one_email_per_conversation_without_what_was_read() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let bob = given.user("bob@example.com", Role::Member);
        let carol = given.user("carol@example.com", Role::Member);
        let general = given.channel("general", &[alice, bob]);
        let dm1 = given.direct(alice, &[bob], "one");
        let dm2 = given.direct(alice, &[bob], "two");
        let group = given.direct(carol, &[alice, bob], "all of us");
        let topic = given.message(alice, general, "Plans", "hey @**bob**");
        let read = given.message(alice, general, "plans", "@**bob** again");
        given.fold(vec![
            Event::NoticesRecorded {
                notices: vec![
                    notice(bob, dm1, NoticeTrigger::DirectMessage),
                    notice(bob, dm2, NoticeTrigger::DirectMessage),
                    notice(bob, group, NoticeTrigger::DirectMessage),
                    notice(bob, topic, NoticeTrigger::StreamEmailNotify),
                    notice(bob, read, NoticeTrigger::Mentioned),
                ],
                through: read,
            },
            Event::MessageFlagsChanged {
                user_id: bob,
                flag: MessageFlag::Read,
                add: true,
                message_ids: vec![read],
            },
        ]);
        assert_eq!(given.state.notices.due_users(999), Vec::<UserId>::new());
        assert_eq!(given.state.notices.due_users(1_000), vec![bob]);
        let decided = settle_due(&given.state, bob).unwrap();
        assert_eq!(decided.reply, 3);
        let mails: Vec<QueuedMail> = decided
            .events
            .iter()
            .filter_map(|e| match e {
                Event::EmailQueued { mail, .. } => Some(mail.clone()),
                _ => None,
            })
            .collect();
        // The topic's email says "mentioned": the read mention is gone, but "Plans" and
        // "plans" are one conversation and the stronger trigger names it.
        assert!(mails.contains(&QueuedMail::MissedMessages {
            message_ids: vec![dm1, dm2],
            trigger: NoticeTrigger::DirectMessage,
        }));
        assert!(mails.contains(&QueuedMail::MissedMessages {
            message_ids: vec![group],
            trigger: NoticeTrigger::DirectMessage,
        }));
        assert!(mails.contains(&QueuedMail::MissedMessages {
            message_ids: vec![topic],
            trigger: NoticeTrigger::StreamEmailNotify,
        }));
        given.fold(decided.events);
        assert!(given.state.notices.pending_of(bob).is_empty());
        assert_eq!(given.state.notices.next_due(), None);
        assert_eq!(given.state.notices.outgoing().count(), 3);
        let first = given.state.notices.outgoing().next().unwrap().mail_id;
        given.fold(email_sent(&given.state, first).unwrap().events);
        assert!(
            email_sent(&given.state, first).unwrap().events.is_empty(),
            "once"
        );
        assert_eq!(given.state.notices.totals(), (1, 0));
    }

    #[test]
    fn a_login_alert_for_accounts_past_their_first_minute_that_want_one() {
        let mut given = Given::org();
        given.at(1_000_000);
        let alice = given.user("alice@example.com", Role::Member);
        let ctx = |ms| Ctx {
            now_ms: ms,
            actor: None,
        };
        assert!(login_alert(&given.state, &ctx(1_030_000), alice, "Firefox", "1.2.3.4").is_empty());
        let events = login_alert(&given.state, &ctx(1_061_000), alice, "Firefox", "1.2.3.4");
        assert!(matches!(
            &events[..],
            [Event::EmailQueued { user_id, mail: QueuedMail::LoginAlert { client, address }, .. }]
                if *user_id == alice && client == "Firefox" && address == "1.2.3.4"
        ));
        given.fold(vec![Event::UserSettingChanged {
            user_id: alice,
            name: "enable_login_emails".into(),
            value: crate::events::RealmValue::Bool(false),
        }]);
        assert!(login_alert(&given.state, &ctx(1_061_000), alice, "Firefox", "1.2.3.4").is_empty());
    }
}

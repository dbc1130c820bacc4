//! Typing notifications.

use super::actor;
use super::Decision;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::Event;
use crate::projections::{access, Access, Projections};

/// `POST /typing`: start or stop, to a direct conversation or a channel topic.
pub fn set_typing(
    state: &Projections,
    ctx: &Ctx,
    target: crate::events::TypingTarget,
    start: bool,
) -> ApiResult<Decision> {
    use crate::events::{RealmValue, TypingTarget};
    let me = actor(state, ctx)?;
    let (setting, kind) = match target {
        TypingTarget::Direct { .. } => ("send_private_typing_notifications", "direct"),
        TypingTarget::Channel { .. } => ("send_stream_typing_notifications", "channel"),
    };
    if state.user_settings.get(me.user_id, setting) == RealmValue::Bool(false) {
        return Err(ApiError::bad_request(format!(
            "User has disabled typing notifications for {kind} messages"
        )));
    }
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
    Ok(Decision::events(vec![event]))
}

/// `POST /messages/{message_id}/typing`: start or stop editing a message the caller may read,
/// under the same setting as typing a new message to its conversation.
pub fn set_edit_typing(
    state: &Projections,
    ctx: &Ctx,
    message_id: crate::ids::MessageId,
    start: bool,
) -> ApiResult<Decision> {
    use crate::events::RealmValue;
    let me = actor(state, ctx)?;
    let message = state
        .messages
        .get(message_id)
        .filter(|m| crate::projections::can_read(state, me, m))
        .ok_or_else(|| ApiError::bad_request("Invalid message(s)"))?;
    let (setting, kind) = match message.recipient {
        crate::projections::Address::Direct { .. } => {
            ("send_private_typing_notifications", "direct")
        }
        crate::projections::Address::Channel { .. } => {
            ("send_stream_typing_notifications", "channel")
        }
    };
    if state.user_settings.get(me.user_id, setting) == RealmValue::Bool(false) {
        return Err(ApiError::bad_request(format!(
            "User has disabled typing notifications for {kind} messages"
        )));
    }
    Ok(Decision::events(vec![Event::EditTyping {
        user_id: me.user_id,
        message_id,
        start,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, Given, OWNER};
    use crate::events::{RealmValue, Role, TypingTarget};
    use crate::ids::{ChannelId, UserId};

    #[test]
    fn typing_names_every_participant_and_respects_the_setting() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let to = |ids: Vec<UserId>| TypingTarget::Direct { user_ids: ids };
        let decided = given.decided(alice, |s, c| set_typing(s, c, to(vec![OWNER]), true));
        assert!(matches!(
            &decided.events[..],
            [Event::TypingStarted { user_id, target: TypingTarget::Direct { user_ids } }]
                if *user_id == alice && user_ids == &[OWNER, alice]
        ));
        let err = given.refused(alice, |s, c| set_typing(s, c, to(vec![]), true));
        assert_eq!(msg(&err), "Empty 'to' list");
        let err = given.refused(alice, |s, c| set_typing(s, c, to(vec![UserId(99)]), true));
        assert_eq!(msg(&err), "Invalid user ID 99");
        let nowhere = TypingTarget::Channel {
            channel_id: ChannelId(99),
            topic: "t".into(),
        };
        let err = given.refused(alice, |s, c| set_typing(s, c, nowhere, true));
        assert_eq!(msg(&err), "Invalid channel ID");
        given.fold(vec![Event::UserSettingChanged {
            user_id: alice,
            name: "send_private_typing_notifications".into(),
            value: RealmValue::Bool(false),
        }]);
        let err = given.refused(alice, |s, c| set_typing(s, c, to(vec![OWNER]), false));
        assert_eq!(
            msg(&err),
            "User has disabled typing notifications for direct messages"
        );
    }

    #[test]
    fn editing_is_announced_for_a_readable_message_under_the_typing_setting() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let bob = given.user("bob@example.com", Role::Member);
        let carol = given.user("carol@example.com", Role::Member);
        let dm = given.direct(alice, &[bob], "hello");
        let decided = given.decided(alice, |s, c| set_edit_typing(s, c, dm, true));
        assert!(matches!(
            &decided.events[..],
            [Event::EditTyping { user_id, message_id, start: true }]
                if *user_id == alice && *message_id == dm
        ));
        // A message the caller cannot read, or none, is refused alike.
        for id in [dm, crate::ids::MessageId(999)] {
            let err = given.refused(carol, |s, c| set_edit_typing(s, c, id, false));
            assert_eq!(msg(&err), "Invalid message(s)");
        }
        given.fold(vec![Event::UserSettingChanged {
            user_id: alice,
            name: "send_private_typing_notifications".into(),
            value: RealmValue::Bool(false),
        }]);
        let err = given.refused(alice, |s, c| set_edit_typing(s, c, dm, false));
        assert_eq!(
            msg(&err),
            "User has disabled typing notifications for direct messages"
        );
    }
}

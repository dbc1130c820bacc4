//! Per-user message flags (read, starred, ...).

use super::actor;
use super::Decision;
use crate::commands::messages::readable;
use crate::commands::Ctx;
use crate::error::ApiResult;
use crate::events::{Event, MessageFlag};
use crate::ids::MessageId;
use crate::projections::Projections;

/// `POST /messages/flags` (and the mark-as-read endpoints): returns the ids whose flag changed.
pub fn update_flags(
    state: &Projections,
    ctx: &Ctx,
    message_ids: Vec<MessageId>,
    flag: MessageFlag,
    add: bool,
) -> ApiResult<Decision<Vec<MessageId>>> {
    let me = actor(state, ctx)?;
    let bit = crate::projections::messages::flag_bit(flag);
    let mut changed = Vec::new();
    for id in message_ids {
        let message = readable(state, me, id)?;
        let current = state.messages.flags(me.user_id, message.id);
        // Read/collapsed only apply to copies; starring may create a historical copy.
        let has = current.is_some_and(|bits| bits & bit != 0);
        let applies = current.is_some() || flag == MessageFlag::Starred;
        if applies && has != add {
            changed.push(id);
        }
    }
    // Sorted, then repeats dropped (a request may name an id many times).
    changed.sort_unstable();
    changed.dedup();
    if changed.is_empty() {
        return Ok(Decision::new(Vec::new(), changed));
    }
    Ok(Decision::new(
        vec![Event::MessageFlagsChanged {
            user_id: me.user_id,
            flag,
            add,
            message_ids: changed.clone(),
        }],
        changed,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{Given, OWNER};
    use crate::events::Role;

    #[test]
    fn only_changed_flags_are_reported_and_starring_reaches_history() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let general = given.channel("general", &[alice]);
        let one = given.message(OWNER, general, "t", "one");
        let two = given.message(OWNER, general, "t", "two");
        // Both unread for Alice; reading them twice changes them once.
        let changed = given.ok(alice, |s, c| {
            update_flags(s, c, vec![two, one, one], MessageFlag::Read, true)
        });
        assert_eq!(changed, vec![one, two]);
        let changed = given.ok(alice, |s, c| {
            update_flags(s, c, vec![one], MessageFlag::Read, true)
        });
        assert!(changed.is_empty());
        // Bob joined later and holds no copy: reading does not apply, starring does.
        let bob = given.user("bob@example.com", Role::Member);
        let read = given.decided(bob, |s, c| {
            update_flags(s, c, vec![one], MessageFlag::Read, true)
        });
        assert!(read.events.is_empty() && read.reply.is_empty());
        let starred = given.ok(bob, |s, c| {
            update_flags(s, c, vec![one], MessageFlag::Starred, true)
        });
        assert_eq!(starred, vec![one]);
        assert!(given.state.messages.flags(bob, one).is_some());
    }
}

//! Muting users (`POST`/`DELETE /users/me/muted_users/{id}`), with Zulip's side effect: the
//! muted user's messages are read for the muter, those held now and those to come; and alert
//! words (`/users/me/alert_words`), the other per-user filter on what others send.

use super::actor;
use super::Decision;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, MessageFlag};
use crate::ids::UserId;
use crate::projections::Projections;

/// `POST /users/me/muted_users/{id}`: any account of the organization but oneself (bots and
/// deactivated users included); the messages of theirs the caller holds unread become read.
pub fn mute_user(state: &Projections, ctx: &Ctx, muted: UserId) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    if muted == me.user_id {
        return Err(ApiError::bad_request("Cannot mute self"));
    }
    state
        .users
        .get(muted)
        .filter(|u| !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if state.mutes.mutes(me.user_id, muted) {
        return Err(ApiError::bad_request("User already muted"));
    }
    let mut events = vec![Event::UserMuted {
        user_id: me.user_id,
        muted_user_id: muted,
    }];
    let (unread, _) = state.messages.unread_of(me.user_id, usize::MAX);
    let mut theirs: Vec<_> = unread
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| {
            state
                .messages
                .get(*id)
                .is_some_and(|m| m.sender_id == muted)
        })
        .collect();
    theirs.sort_unstable();
    if !theirs.is_empty() {
        events.push(Event::MessageFlagsChanged {
            user_id: me.user_id,
            flag: MessageFlag::Read,
            add: true,
            message_ids: theirs,
        });
    }
    Ok(Decision::events(events))
}

/// `DELETE /users/me/muted_users/{id}`.
pub fn unmute_user(state: &Projections, ctx: &Ctx, muted: UserId) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    state
        .users
        .get(muted)
        .filter(|u| !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if !state.mutes.mutes(me.user_id, muted) {
        return Err(ApiError::bad_request("User is not muted"));
    }
    Ok(Decision::events(vec![Event::UserUnmuted {
        user_id: me.user_id,
        muted_user_id: muted,
    }]))
}

/// Cleans requested alert words as Zulip does: surrounding space trimmed, empty ones dropped;
/// each at most 100 characters.
fn clean_words(words: Vec<String>) -> ApiResult<Vec<String>> {
    use crate::projections::alert_words::MAX_ALERT_WORD_LENGTH;
    for (i, word) in words.iter().enumerate() {
        if word.chars().count() > MAX_ALERT_WORD_LENGTH {
            return Err(ApiError::bad_request(format!(
                "alert_words[{i}] is too long (limit: {MAX_ALERT_WORD_LENGTH} characters)"
            )));
        }
    }
    Ok(words
        .into_iter()
        .map(|w| w.trim().to_owned())
        .filter(|w| !w.is_empty())
        .collect())
}

/// `POST /users/me/alert_words`: adds the words the caller does not have yet (in any case).
pub fn add_alert_words(state: &Projections, ctx: &Ctx, words: Vec<String>) -> ApiResult<Decision> {
    use crate::projections::alert_words::MAX_ALERT_WORDS;
    let me = actor(state, ctx)?;
    let mut known: std::collections::HashSet<String> = state
        .alert_words
        .of(me.user_id)
        .iter()
        .map(|w| w.to_lowercase())
        .collect();
    let mut new = Vec::new();
    for word in clean_words(words)? {
        if known.insert(word.to_lowercase()) {
            new.push(word);
        }
    }
    if new.is_empty() {
        return Ok(Decision::events(Vec::new()));
    }
    if known.len() > MAX_ALERT_WORDS {
        return Err(ApiError::bad_request(format!(
            "Too many alert words (limit: {MAX_ALERT_WORDS})"
        )));
    }
    Ok(Decision::events(vec![Event::AlertWordsAdded {
        user_id: me.user_id,
        words: new,
    }]))
}

/// `DELETE /users/me/alert_words`: removes the words named (in any case); others are ignored.
pub fn remove_alert_words(
    state: &Projections,
    ctx: &Ctx,
    words: Vec<String>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let mine: Vec<String> = state
        .alert_words
        .of(me.user_id)
        .iter()
        .map(|w| w.to_lowercase())
        .collect();
    let gone: Vec<String> = clean_words(words)?
        .into_iter()
        .filter(|w| mine.contains(&w.to_lowercase()))
        .collect();
    if gone.is_empty() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::AlertWordsRemoved {
        user_id: me.user_id,
        words: gone,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, Given};
    use crate::events::Role;
    use crate::projections::alert_words::MAX_ALERT_WORDS;

    #[test]
    fn alert_words_are_kept_once_in_any_case_up_to_the_limit() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let words = |range: std::ops::Range<usize>| range.map(|i| format!("word{i}")).collect();
        given.ok(alice, |s, c| {
            add_alert_words(s, c, words(0..MAX_ALERT_WORDS - 1))
        });
        // Repeats, in any case, are not new words: the list is one short of the limit still.
        let again = vec!["WORD0".to_owned(), "word1".to_owned(), "word0".to_owned()];
        let decided = given.decided(alice, |s, c| add_alert_words(s, c, again));
        assert!(decided.events.is_empty());
        given.ok(alice, |s, c| add_alert_words(s, c, vec!["Last".to_owned()]));
        assert_eq!(given.state.alert_words.of(alice).len(), MAX_ALERT_WORDS);
        let refused = given.refused(alice, |s, c| {
            add_alert_words(s, c, vec!["one more".to_owned(), "LAST".to_owned()])
        });
        assert_eq!(msg(&refused), "Too many alert words (limit: 1000)");
    }
}

//! Bot storage (`PUT`/`DELETE /bot_storage`), with Zulip's rules: values are text, and one user's
//! keys and values together stay within `STORAGE_SIZE_LIMIT` characters.

use super::actor;
use super::Decision;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::Event;
use crate::projections::bot_storage::{entry_size, STORAGE_SIZE_LIMIT};
use crate::projections::Projections;
use std::collections::BTreeMap;

/// `PUT /bot_storage`: stores each entry, replacing a key's old value.
pub fn set_storage(
    state: &Projections,
    ctx: &Ctx,
    entries: BTreeMap<String, String>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let stored = state.bot_storage.of(me.user_id);
    let old_size = |key: &str| {
        stored
            .and_then(|s| s.get(key))
            .map_or(0, |value| entry_size(key, value))
    };
    let size = entries
        .iter()
        .fold(state.bot_storage.size_of(me.user_id), |size, (k, v)| {
            size + entry_size(k, v) - old_size(k)
        });
    if size > STORAGE_SIZE_LIMIT {
        return Err(ApiError::bad_request(format!(
            "Request exceeds storage limit by {} characters. The limit is {STORAGE_SIZE_LIMIT} characters.",
            size - STORAGE_SIZE_LIMIT
        )));
    }
    if entries.is_empty() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::BotStorageSet {
        user_id: me.user_id,
        entries,
    }]))
}

/// `DELETE /bot_storage`: removes `keys` (every key when `None`); all must exist.
pub fn remove_storage(
    state: &Projections,
    ctx: &Ctx,
    keys: Option<Vec<String>>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let stored = state.bot_storage.of(me.user_id);
    let keys = match keys {
        Some(keys) => {
            if keys
                .iter()
                .any(|k| stored.is_none_or(|s| !s.contains_key(k)))
            {
                return Err(ApiError::bad_request("Key does not exist."));
            }
            keys
        }
        None => stored
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default(),
    };
    if keys.is_empty() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::BotStorageRemoved {
        user_id: me.user_id,
        keys,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, Given};
    use crate::events::Role;

    fn entries(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn storage_is_limited_replaced_and_removed() {
        let mut given = Given::org();
        let bot = given.user("bot@example.com", Role::Member);
        given.ok(bot, |s, c| {
            set_storage(s, c, entries(&[("a", "1"), ("b", "2")]))
        });
        given.ok(bot, |s, c| set_storage(s, c, entries(&[("a", "10")])));
        assert_eq!(
            given.state.bot_storage.of(bot).cloned(),
            Some(entries(&[("a", "10"), ("b", "2")]))
        );
        // Replacing a value counts only the difference: "a" already holds 3 characters.
        let big = "x".repeat(STORAGE_SIZE_LIMIT - 1 - 2);
        given.ok(bot, |s, c| set_storage(s, c, entries(&[("a", &big)])));
        let err = given.refused(bot, |s, c| set_storage(s, c, entries(&[("c", "1")])));
        assert_eq!(
            msg(&err),
            "Request exceeds storage limit by 2 characters. The limit is 10000000 characters."
        );
        let err = given.refused(bot, |s, c| remove_storage(s, c, Some(vec!["zz".into()])));
        assert_eq!(msg(&err), "Key does not exist.");
        given.ok(bot, |s, c| remove_storage(s, c, Some(vec!["a".into()])));
        assert_eq!(
            given.state.bot_storage.of(bot).cloned(),
            Some(entries(&[("b", "2")]))
        );
        given.ok(bot, |s, c| remove_storage(s, c, None));
        assert!(given.state.bot_storage.of(bot).is_none());
    }
}

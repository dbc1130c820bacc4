//! Emoji reactions: adding and removing one.

use super::actor;
use super::Decision;
use crate::commands::messages::readable;
use crate::commands::Ctx;
use crate::emoji;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{Event, ReactionType};
use crate::ids::MessageId;
use crate::projections::Projections;

/// The emoji a reaction request names, resolved as Zulip does.
#[derive(Debug, Clone, Default)]
pub struct EmojiRequest {
    pub emoji_name: Option<String>,
    pub emoji_code: Option<String>,
    pub reaction_type: Option<String>,
}

/// Resolves a request's emoji to `(code, type)`; the name alone is looked up.
pub(crate) fn resolve_emoji(
    state: &Projections,
    request: &EmojiRequest,
) -> ApiResult<(String, ReactionType)> {
    let reaction_type = match request.reaction_type.as_deref() {
        None | Some("unicode_emoji") => ReactionType::UnicodeEmoji,
        Some("zulip_extra_emoji") => ReactionType::ZulipExtraEmoji,
        Some("realm_emoji") => ReactionType::RealmEmoji,
        Some(_) => return Err(ApiError::bad_request("Invalid emoji type.")),
    };
    if let Some(code) = &request.emoji_code {
        return Ok((code.clone(), reaction_type));
    }
    let Some(name) = &request.emoji_name else {
        return Err(ApiError::bad_request(
            "At least one of the following arguments must be present: emoji_name, emoji_code",
        ));
    };
    // The organization's own emoji win over the built-in ones of the same name.
    if let Some(custom) = state.custom_emoji.active_named(name) {
        return Ok((custom.id.0.to_string(), ReactionType::RealmEmoji));
    }
    if name == emoji::ZULIP_EXTRA_EMOJI {
        return Ok((name.clone(), ReactionType::ZulipExtraEmoji));
    }
    emoji::unicode_code(name)
        .map(|code| (code.to_owned(), ReactionType::UnicodeEmoji))
        .ok_or_else(|| ApiError::bad_request(format!("Emoji '{name}' does not exist")))
}

/// Checks that a name and code go together (Zulip's `check_emoji_request`).
pub(crate) fn check_emoji(
    state: &Projections,
    name: &str,
    code: &str,
    reaction_type: ReactionType,
) -> ApiResult<()> {
    match reaction_type {
        ReactionType::UnicodeEmoji => {
            if emoji::unicode_name(code).is_none() {
                return Err(ApiError::bad_request("Invalid emoji code."));
            }
            if emoji::unicode_code(name) != Some(code) {
                return Err(ApiError::bad_request("Invalid emoji name."));
            }
        }
        ReactionType::ZulipExtraEmoji => {
            if code != emoji::ZULIP_EXTRA_EMOJI {
                return Err(ApiError::bad_request("Invalid emoji code."));
            }
            if name != code {
                return Err(ApiError::bad_request("Invalid emoji name."));
            }
        }
        ReactionType::RealmEmoji => {
            let custom = code
                .parse::<u64>()
                .ok()
                .and_then(|id| state.custom_emoji.get(crate::ids::EmojiId(id)))
                .ok_or_else(|| ApiError::bad_request("Invalid custom emoji."))?;
            if custom.name != name {
                return Err(ApiError::bad_request("Invalid custom emoji name."));
            }
            if custom.deactivated {
                return Err(ApiError::bad_request(
                    "This custom emoji has been deactivated.",
                ));
            }
        }
    }
    Ok(())
}

/// `POST /messages/{id}/reactions`.
pub fn add_reaction(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    request: EmojiRequest,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let (emoji_code, reaction_type) = resolve_emoji(state, &request)?;
    let same = |r: &&crate::projections::messages::Reaction| {
        r.emoji_code == emoji_code && r.reaction_type == reaction_type
    };
    if message
        .reactions()
        .iter()
        .filter(same)
        .any(|r| r.user_id == me.user_id)
    {
        return Err(ApiError::new(
            ErrorCode::ReactionAlreadyExists,
            "Reaction already exists.",
        ));
    }
    // Joining someone else's reaction takes its name; a new one is checked.
    let emoji_name = match message.reactions().iter().find(same) {
        Some(existing) => existing.emoji_name.clone(),
        None => {
            let name = request
                .emoji_name
                .ok_or_else(|| ApiError::missing("emoji_name"))?;
            check_emoji(state, &name, &emoji_code, reaction_type)?;
            name
        }
    };
    Ok(Decision::events(vec![Event::ReactionAdded {
        message_id,
        user_id: me.user_id,
        emoji_name,
        emoji_code,
        reaction_type,
    }]))
}

/// `DELETE /messages/{id}/reactions`.
pub fn remove_reaction(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    request: EmojiRequest,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let (emoji_code, reaction_type) = resolve_emoji(state, &request)?;
    let existing = message.reactions().iter().find(|r| {
        r.user_id == me.user_id && r.emoji_code == emoji_code && r.reaction_type == reaction_type
    });
    let Some(existing) = existing else {
        return Err(ApiError::new(
            ErrorCode::ReactionDoesNotExist,
            "Reaction doesn't exist.",
        ));
    };
    Ok(Decision::events(vec![Event::ReactionRemoved {
        message_id,
        user_id: me.user_id,
        emoji_name: existing.emoji_name.clone(),
        emoji_code,
        reaction_type,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, Given, OWNER};
    use crate::events::Role;
    use crate::ids::UserId;

    fn emoji(name: &str) -> EmojiRequest {
        EmojiRequest {
            emoji_name: Some(name.into()),
            emoji_code: None,
            reaction_type: None,
        }
    }

    #[test]
    fn a_reaction_is_added_once_and_removed_once() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let general = given.channel("general", &[alice]);
        let hi = given.message(alice, general, "t", "hi");
        given.ok(alice, |s, c| add_reaction(s, c, hi, emoji("octopus")));
        let err = given.refused(alice, |s, c| add_reaction(s, c, hi, emoji("octopus")));
        assert_eq!(err.code(), Some(ErrorCode::ReactionAlreadyExists));
        // Someone else may join it (the owner reads the public channel without a copy).
        given.ok(OWNER, |s, c| add_reaction(s, c, hi, emoji("octopus")));
        given.ok(alice, |s, c| remove_reaction(s, c, hi, emoji("octopus")));
        let err = given.refused(alice, |s, c| remove_reaction(s, c, hi, emoji("octopus")));
        assert_eq!(err.code(), Some(ErrorCode::ReactionDoesNotExist));
        assert_eq!(msg(&err), "Reaction doesn't exist.");
        let left: Vec<UserId> = given
            .state
            .messages
            .get(hi)
            .map(|m| m.reactions().iter().map(|r| r.user_id).collect())
            .unwrap_or_default();
        assert_eq!(left, vec![OWNER]);
    }

    #[test]
    fn unknown_emoji_and_unreadable_messages_are_refused() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let general = given.channel("general", &[alice]);
        let hi = given.message(alice, general, "t", "hi");
        let err = given.refused(alice, |s, c| add_reaction(s, c, hi, emoji("no_such_emoji")));
        assert_eq!(msg(&err), "Emoji 'no_such_emoji' does not exist");
        let dm = given.direct(OWNER, &[OWNER], "note to self");
        let err = given.refused(alice, |s, c| add_reaction(s, c, dm, emoji("octopus")));
        assert_eq!(msg(&err), "Invalid message(s)");
    }
}

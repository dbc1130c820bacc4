//! Presence reports (`POST /users/me/presence`) and user statuses (`POST /users/me/status`).

use super::actor;
use super::Decision;
use crate::commands::reactions::{check_emoji, resolve_emoji, EmojiRequest};
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, ReactionType, StatusEmoji};
use crate::projections::Projections;

/// Zulip's `PRESENCE_UPDATE_MIN_FREQ_SECONDS`: a report this soon after the last one that
/// counted changes nothing a client could see, so it is not logged. Clients ping every 60 s,
/// so an online user costs about one event a minute.
pub const PRESENCE_UPDATE_MIN_FREQ_MS: i64 = 55_000;

/// Records that the caller is connected (`active`: and using a client), unless the last
/// report is recent enough to make this one invisible.
pub fn update_presence(state: &Projections, ctx: &Ctx, active: bool) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    // Invisible mode: Zulip records nothing while a user does not share presence.
    if !crate::projections::shares_presence(state, me.user_id) {
        return Ok(Decision::events(Vec::new()));
    }
    let recent = |t: Option<i64>| t.is_some_and(|t| ctx.now_ms - t < PRESENCE_UPDATE_MIN_FREQ_MS);
    let current = state.presence.get(me.user_id);
    let connected_recently = recent(current.map(|p| p.last_connected_ms));
    let active_recently = recent(current.and_then(|p| p.last_active_ms));
    if connected_recently && (!active || active_recently) {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::PresenceUpdated {
        user_id: me.user_id,
        active,
    }]))
}

/// Zulip's `UserStatus.MAX_STATUS_TEXT_LENGTH`.
pub const MAX_STATUS_TEXT_LENGTH: usize = 60;

/// What `POST /users/me/status` asks to change (`None`: not sent).
#[derive(Debug, Clone, Default)]
pub struct StatusRequest {
    pub away: Option<bool>,
    pub status_text: Option<String>,
    pub emoji: EmojiRequest,
}

/// `POST /users/me/status`, with Zulip's checks: something must change, the text is at most 60
/// characters (surrounding space trimmed), an emoji code or type needs its name, and the emoji
/// must exist (an empty name clears it). With `target`, `POST /users/{user_id}/status`: an
/// administrator sets an active person's (not a bot's) status.
pub fn set_status(
    state: &Projections,
    ctx: &Ctx,
    target: Option<crate::ids::UserId>,
    request: StatusRequest,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let user_id = match target {
        None => me.user_id,
        Some(target) => {
            if !me.role.is_admin() {
                return Err(ApiError::must_be_admin());
            }
            state
                .users
                .get(target)
                .filter(|u| u.is_active && u.bot_type.is_none())
                .ok_or_else(|| ApiError::bad_request("No such user"))?
                .user_id
        }
    };
    let status_text = request.status_text.map(|t| t.trim().to_owned());
    let emoji = &request.emoji;
    if request.away.is_none() && status_text.is_none() && emoji.emoji_name.is_none() {
        return Err(ApiError::bad_request("Client did not pass any new values."));
    }
    if emoji.emoji_name.is_none() && (emoji.emoji_code.is_some() || emoji.reaction_type.is_some()) {
        return Err(ApiError::bad_request(
            "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
        ));
    }
    if let Some(text) = &status_text {
        if let Some(position) = super::unprintable_position(text) {
            return Err(ApiError::bad_request(format!(
                "Invalid character in status text, at position {position}."
            )));
        }
        if text.chars().count() > MAX_STATUS_TEXT_LENGTH {
            return Err(ApiError::bad_request(format!(
                "status_text is too long (limit: {MAX_STATUS_TEXT_LENGTH} characters)"
            )));
        }
    }
    let emoji = match emoji.emoji_name.as_deref() {
        None => None,
        Some("") => Some(StatusEmoji {
            emoji_name: String::new(),
            emoji_code: String::new(),
            reaction_type: ReactionType::UnicodeEmoji,
        }),
        Some(name) => {
            // A name alone is looked up; a name with a code and type is checked as given.
            let (emoji_code, reaction_type) =
                if emoji.emoji_code.is_some() && emoji.reaction_type.is_some() {
                    resolve_emoji(state, emoji)?
                } else {
                    resolve_emoji(
                        state,
                        &EmojiRequest {
                            emoji_name: Some(name.to_owned()),
                            emoji_code: None,
                            reaction_type: None,
                        },
                    )?
                };
            check_emoji(state, name, &emoji_code, reaction_type)?;
            Some(StatusEmoji {
                emoji_name: name.to_owned(),
                emoji_code,
                reaction_type,
            })
        }
    };
    Ok(Decision::events(vec![Event::UserStatusSet {
        user_id,
        away: request.away,
        status_text,
        emoji,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, Given};
    use crate::events::Role;

    fn status(text: Option<&str>, emoji: Option<&str>) -> StatusRequest {
        StatusRequest {
            away: None,
            status_text: text.map(str::to_owned),
            emoji: EmojiRequest {
                emoji_name: emoji.map(str::to_owned),
                emoji_code: None,
                reaction_type: None,
            },
        }
    }

    #[test]
    fn statuses_are_checked_set_and_cleared() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let err = given.refused(alice, |s, c| set_status(s, c, None, status(None, None)));
        assert_eq!(msg(&err), "Client did not pass any new values.");
        let long = "x".repeat(61);
        let err = given.refused(alice, |s, c| {
            set_status(s, c, None, status(Some(&long), None))
        });
        assert_eq!(msg(&err), "status_text is too long (limit: 60 characters)");
        let err = given.refused(alice, |s, c| {
            set_status(s, c, None, status(None, Some("no_such_emoji")))
        });
        assert_eq!(msg(&err), "Emoji 'no_such_emoji' does not exist");
        let mut code_only = status(Some("busy"), None);
        code_only.emoji.emoji_code = Some("1f419".into());
        let err = given.refused(alice, |s, c| set_status(s, c, None, code_only.clone()));
        assert_eq!(
            msg(&err),
            "Client must pass emoji_name if they pass either emoji_code or reaction_type."
        );
        given.ok(alice, |s, c| {
            set_status(
                s,
                c,
                None,
                status(Some("  in a meeting "), Some("calendar")),
            )
        });
        let shown = given.state.user_status.get(alice).unwrap().json();
        assert_eq!(
            shown,
            serde_json::json!({"status_text": "in a meeting", "emoji_name": "calendar",
                               "emoji_code": "1f4c5", "reaction_type": "unicode_emoji"})
        );
        // Clearing the text keeps the emoji; clearing both removes the status.
        given.ok(alice, |s, c| set_status(s, c, None, status(Some(""), None)));
        assert!(given.state.user_status.get(alice).unwrap().emoji.is_some());
        given.ok(alice, |s, c| set_status(s, c, None, status(None, Some(""))));
        assert!(given.state.user_status.get(alice).is_none());
    }

    #[test]
    fn an_administrator_sets_a_persons_status_and_nobody_else_may() {
        let mut given = Given::org();
        let admin = given.user("admin@example.com", Role::Administrator);
        let alice = given.user("alice@example.com", Role::Member);
        let bob = given.user("bob@example.com", Role::Member);
        let err = given.refused(bob, |s, c| {
            set_status(s, c, Some(alice), status(Some("on vacation"), None))
        });
        assert_eq!(msg(&err), "Must be an organization administrator");
        let err = given.refused(admin, |s, c| {
            set_status(s, c, Some(crate::ids::UserId(999)), status(Some("x"), None))
        });
        assert_eq!(msg(&err), "No such user");
        let decision = given.decided(admin, |s, c| {
            set_status(s, c, Some(alice), status(Some("on vacation"), Some("car")))
        });
        assert!(matches!(
            decision.events.as_slice(),
            [Event::UserStatusSet { user_id, away: None, .. }] if *user_id == alice
        ));
        given.ok(admin, |s, c| {
            set_status(s, c, Some(alice), status(Some("on vacation"), Some("car")))
        });
        let shown = given.state.user_status.get(alice).unwrap().json();
        assert_eq!(shown["status_text"], "on vacation");
        assert_eq!(shown["emoji_code"], "1f697");
        assert!(given.state.user_status.get(admin).is_none());
    }
}

//! Two-factor authentication: enrolling, using a code (which is then spent), issuing backup
//! codes again, and switching it off. The HTTP layer checks a code against the key (which
//! needs the server secret); these commands decide under the writer, so that two requests
//! with the same code cannot both spend it.

use super::{Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, Role, TwoFactorChange};
use crate::ids::UserId;
use crate::projections::Projections;

/// A code that was right (`identity::two_factor::check`), and what accepting it records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// The authenticator's code of this step.
    Code { step: u64 },
    /// The backup code with this index.
    Backup { index: u8 },
}

/// Zulip's (django-otp's) words for a wrong code.
pub const INVALID_CODE: &str = "Invalid token. Please make sure you have entered it correctly.";

fn invalid_code() -> ApiError {
    ApiError::bad_request(INVALID_CODE)
}

/// The event that spends `proof` of `user`, if it is still unspent.
pub fn spend(state: &Projections, user: UserId, proof: Proof) -> ApiResult<Event> {
    if !state.users.get(user).is_some_and(|u| u.is_active) {
        return Err(ApiError::new(
            crate::error::ErrorCode::UserDeactivated,
            "Account is deactivated",
        ));
    }
    let enrolment = state
        .sessions
        .two_factor(user)
        .ok_or_else(|| ApiError::bad_request("Two-factor authentication is not on"))?;
    let change = match proof {
        Proof::Code { step } if step > enrolment.last_step => TwoFactorChange::CodeUsed { step },
        Proof::Backup { index }
            if enrolment.backup_nonce.is_some()
                && index < 16
                && enrolment.backup_used & (1 << index) == 0 =>
        {
            TwoFactorChange::BackupCodeUsed { index }
        }
        _ => return Err(invalid_code()),
    };
    Ok(Event::TwoFactorChanged {
        user_id: user,
        change,
    })
}

/// A second step passed at sign-in, and what it records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Passed {
    /// A code of the person's enrolment, to spend.
    Proof(Proof),
    /// The first code of a key enrolled as part of the sign-in.
    Enrolled { key_nonce: String, step: u64 },
}

impl Passed {
    /// The events that record it for `user`: the code spent, or the enrolment (which ends
    /// every session the person had before it).
    pub fn events(&self, state: &Projections, user: UserId) -> ApiResult<Vec<Event>> {
        match self {
            Passed::Proof(proof) => Ok(vec![spend(state, user, *proof)?]),
            Passed::Enrolled { key_nonce, step } => {
                let mut events = vec![enable(state, user, key_nonce.clone(), None, *step)?];
                events.extend(other_sessions_ended(state, user, None));
                Ok(events)
            }
        }
    }
}

/// The person signing in enrols (or confirms a change) with the code of `step` of the key
/// from `key_nonce`, which the caller checked; backup codes from `backup_nonce` when given.
pub fn enable(
    state: &Projections,
    user: UserId,
    key_nonce: String,
    backup_nonce: Option<String>,
    step: u64,
) -> ApiResult<Event> {
    let person = state
        .users
        .get(user)
        .filter(|u| u.is_active && !u.is_bot())
        .ok_or_else(|| ApiError::unauthorized("Account is deactivated"))?;
    if state.sessions.two_factor(person.user_id).is_some() {
        return Err(ApiError::bad_request(
            "Two-factor authentication is already on",
        ));
    }
    Ok(Event::TwoFactorChanged {
        user_id: user,
        change: TwoFactorChange::Enabled {
            key_nonce,
            backup_nonce,
            step,
        },
    })
}

/// The acting person enrols from their settings (the session `keep_session`), with backup
/// codes; their other sessions end.
pub fn enable_own(
    state: &Projections,
    ctx: &Ctx,
    key_nonce: String,
    backup_nonce: String,
    step: u64,
    keep_session: &str,
) -> ApiResult<Decision> {
    let me = super::actor(state, ctx)?;
    let mut events = vec![enable(
        state,
        me.user_id,
        key_nonce,
        Some(backup_nonce),
        step,
    )?];
    events.extend(other_sessions_ended(state, me.user_id, Some(keep_session)));
    Ok(Decision::events(events))
}

/// Every web session of `user` but `keep` ended: a session that began before the second
/// factor did not pass it (as a password change signs out the other browsers).
fn other_sessions_ended(state: &Projections, user: UserId, keep: Option<&str>) -> Vec<Event> {
    state
        .sessions
        .of_user(user)
        .filter(|(id, _)| Some(*id) != keep)
        .map(|(id, _)| Event::SessionEnded {
            user_id: user,
            session_id: id.to_owned(),
        })
        .collect()
}

/// New backup codes for the acting person, who proved it with a code.
pub fn issue_backup_codes(
    state: &Projections,
    ctx: &Ctx,
    proof: Proof,
    backup_nonce: String,
) -> ApiResult<Decision> {
    let me = super::actor(state, ctx)?;
    let spent = spend(state, me.user_id, proof)?;
    Ok(Decision::events(vec![
        spent,
        Event::TwoFactorChanged {
            user_id: me.user_id,
            change: TwoFactorChange::BackupCodesIssued { backup_nonce },
        },
    ]))
}

/// Switches off `target`'s two-factor authentication: the person themselves with a code
/// (`proof`), or an administrator for someone who lost their device (an owner for an owner).
pub fn disable(
    state: &Projections,
    ctx: &Ctx,
    target: UserId,
    proof: Option<Proof>,
) -> ApiResult<Decision> {
    let me = super::actor(state, ctx)?;
    let mut events = Vec::new();
    if me.user_id == target {
        let proof = proof.ok_or_else(invalid_code)?;
        events.push(spend(state, target, proof)?);
    } else {
        let person = state
            .users
            .get(target)
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if !me.role.is_admin() {
            return Err(ApiError::must_be_admin());
        }
        if person.role == Role::Owner && me.role != Role::Owner {
            return Err(ApiError::must_be_owner());
        }
        if state.sessions.two_factor(target).is_none() {
            return Err(ApiError::bad_request("Two-factor authentication is not on"));
        }
    }
    events.push(Event::TwoFactorChanged {
        user_id: target,
        change: TwoFactorChange::Disabled { by: me.user_id },
    });
    Ok(Decision::events(events))
}

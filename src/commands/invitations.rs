//! Invitations: by email (`POST /invites`) and reusable links (`POST /invites/multiuse`), their
//! revocation and resending, and accepting one (the registration page).

use super::actor;
use super::channels::{can_add_subscribers, default_subscriptions, next_color};
use super::groups::{may_manage, user_defined_group};
use super::notices::Notices;
use super::users::{
    check_full_name, check_unique_name, email_taken, human_member, signup_notices, validate_email,
    NewUser,
};
use super::Decision;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{Event, InvitationSpec, NewSubscription, Role};
use crate::ids::{ChannelId, GroupId, InviteId, UserId};
use crate::projections::invitations::Invitation;
use crate::projections::{Projections, User};
use serde_json::json;

pub use crate::projections::realm::MAX_WELCOME_TEXT_LENGTH;

/// What an invitation grants, as a request asks for it.
#[derive(Debug, Clone)]
pub struct Grants {
    pub invite_as: Role,
    pub stream_ids: Vec<ChannelId>,
    pub group_ids: Vec<GroupId>,
    pub include_realm_default_subscriptions: bool,
    pub notify_referrer_on_join: bool,
    pub welcome_message_custom_text: Option<String>,
    /// `None`: never expires.
    pub expires_in_minutes: Option<u64>,
}

/// An address that was not invited: `(email, reason, is_deactivated)`, Zulip's triple.
pub type Skipped = (String, String, bool);

/// What `POST /invites` did.
#[derive(Debug, Default)]
pub struct InviteOutcome {
    pub sent: Vec<(InviteId, String)>,
    pub skipped: Vec<Skipped>,
}

fn insufficient() -> ApiError {
    ApiError::bad_request("Insufficient permission")
}

/// Checks what an inviter may grant and turns it into the stored form.
fn check_grants(
    state: &Projections,
    me: &User,
    grants: Grants,
    now_ms: i64,
) -> ApiResult<InvitationSpec> {
    check_role(me, grants.invite_as)?;
    let mut stream_ids = grants.stream_ids;
    stream_ids.sort();
    stream_ids.dedup();
    // Default channels need no permission; the others, the right to add subscribers to them.
    for id in &stream_ids {
        let channel = state
            .channels
            .get(*id)
            .filter(|c| !c.is_archived)
            .filter(|c| {
                crate::projections::access(state, me, c) != crate::projections::Access::None
            })
            .ok_or_else(|| {
                ApiError::bad_request(format!("Invalid channel ID {id}. No invites were sent."))
            })?;
        if !channel.is_default && !can_add_subscribers(state, me, channel) {
            return Err(ApiError::bad_request(
                "You do not have permission to subscribe other users to channels.",
            ));
        }
    }
    let mut group_ids = grants.group_ids;
    group_ids.sort();
    group_ids.dedup();
    for id in &group_ids {
        let group = user_defined_group(state, *id)?;
        let may_add = may_manage(state, me.user_id, *id)
            || state.groups.setting_allows(
                &state.users,
                me.user_id,
                &group.permissions.can_add_members_group,
            );
        if group.deactivated || !may_add {
            return Err(insufficient());
        }
    }
    // Only administrators choose the welcome message.
    let welcome = grants.welcome_message_custom_text;
    if welcome.is_some() && !me.role.is_admin() {
        return Err(ApiError::must_be_admin());
    }
    if welcome
        .as_ref()
        .is_some_and(|t| t.chars().count() > MAX_WELCOME_TEXT_LENGTH)
    {
        return Err(ApiError::bad_request(format!(
            "welcome_message_custom_text is too long (limit: {MAX_WELCOME_TEXT_LENGTH} characters)"
        )));
    }
    let expires_at_ms = match grants.expires_in_minutes {
        None => None,
        Some(minutes) => {
            let ms = i64::try_from(minutes)
                .ok()
                .and_then(|m| m.checked_mul(60_000))
                .and_then(|ms| now_ms.checked_add(ms))
                .ok_or_else(|| ApiError::bad_request("Invalid invite_expires_in_minutes"))?;
            Some(ms)
        }
    };
    Ok(InvitationSpec {
        invite_as: grants.invite_as,
        stream_ids,
        group_ids,
        include_realm_default_subscriptions: grants.include_realm_default_subscriptions,
        notify_referrer_on_join: grants.notify_referrer_on_join,
        welcome_message_custom_text: welcome,
        expires_at_ms,
    })
}

/// Only owners invite owners, and only administrators invite administrators or moderators.
fn check_role(me: &User, invite_as: Role) -> ApiResult<()> {
    if invite_as == Role::Owner && me.role != Role::Owner {
        return Err(ApiError::must_be_owner());
    }
    let elevated = matches!(
        invite_as,
        Role::Owner | Role::Administrator | Role::Moderator
    );
    if elevated && !me.role.is_admin() {
        return Err(ApiError::must_be_admin());
    }
    Ok(())
}

/// Splits `invitee_emails` on commas and newlines, as Zulip does.
pub fn split_emails(text: &str) -> Vec<String> {
    let mut emails: Vec<String> = Vec::new();
    for email in text
        .split([',', '\n'])
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        if !emails.iter().any(|e| e.eq_ignore_ascii_case(email)) {
            emails.push(email.to_owned());
        }
    }
    emails
}

/// `POST /invites`: one invitation per address that has no account; `nonces` holds one fresh
/// link nonce per address. Addresses that are not valid fail the whole request; addresses with
/// an account are skipped (the caller answers `INVITATION_FAILED` listing them).
pub fn invite_users(
    state: &Projections,
    ctx: &Ctx,
    emails: Vec<String>,
    grants: Grants,
    nonces: Vec<String>,
) -> ApiResult<Decision<InviteOutcome>> {
    let me = human_member(state, ctx)?;
    if !state.realm_allows(me.user_id, "can_invite_users_group") {
        return Err(insufficient());
    }
    check_role(me, grants.invite_as)?;
    if emails.is_empty() {
        return Err(ApiError::bad_request(
            "You must specify at least one email address.",
        ));
    }
    let spec = check_grants(state, me, grants, ctx.now_ms)?;
    let mut outcome = InviteOutcome::default();
    let mut invalid = false;
    for email in &emails {
        let problem = if !validate_email(email) {
            invalid = true;
            Some(("Invalid address.", false))
        } else if let Some(refusal) = super::realm_domains::email_refusal(state, email) {
            invalid = true;
            Some((refusal, false))
        } else if email_taken(state, email) && state.users.by_email(email).is_none() {
            Some(("Reserved for system bots.", false))
        } else {
            state.users.by_email(email).map(|user| {
                if user.is_system_bot() {
                    ("Reserved for system bots.", false)
                } else if user.is_active {
                    ("Already has an account.", false)
                } else {
                    ("Account has been deactivated.", true)
                }
            })
        };
        if let Some((reason, deactivated)) = problem {
            outcome
                .skipped
                .push((email.clone(), reason.to_owned(), deactivated));
        }
    }
    if invalid {
        return Err(invitation_failed(
            "Some emails did not validate, so we didn't send any invitations.",
            &outcome.skipped,
            false,
        ));
    }
    if outcome.skipped.len() == emails.len() {
        return Err(invitation_failed(
            "We weren't able to invite anyone.",
            &outcome.skipped,
            false,
        ));
    }
    let mut events = Vec::new();
    let mut next_id = state.invitations.max_id().0;
    for (email, nonce) in emails.into_iter().zip(nonces) {
        if outcome.skipped.iter().any(|(e, _, _)| *e == email) {
            continue;
        }
        next_id += 1;
        events.push(Event::InvitationCreated {
            invite_id: InviteId(next_id),
            email: Some(email.clone()),
            spec: Box::new(spec.clone()),
            link_nonce: nonce,
        });
        outcome.sent.push((InviteId(next_id), email));
    }
    Ok(Decision::new(events, outcome))
}

/// Zulip's `INVITATION_FAILED` answer.
pub fn invitation_failed(msg: &str, errors: &[Skipped], sent: bool) -> ApiError {
    ApiError::new(ErrorCode::InvitationFailed, msg)
        .with("errors", json!(errors))
        .with("sent_invitations", sent)
        .with("license_limit_reached", false)
        .with("daily_limit_reached", false)
}

/// `POST /invites/multiuse`: a reusable link (`create_multiuse_invite_group`).
pub fn create_multiuse_invite(
    state: &Projections,
    ctx: &Ctx,
    grants: Grants,
    nonce: String,
) -> ApiResult<Decision<InviteId>> {
    let me = human_member(state, ctx)?;
    if !state.realm_allows(me.user_id, "create_multiuse_invite_group") {
        return Err(insufficient());
    }
    let grants = Grants {
        notify_referrer_on_join: false,
        ..grants
    };
    let spec = check_grants(state, me, grants, ctx.now_ms)?;
    let invite_id = InviteId(state.invitations.max_id().0 + 1);
    Ok(Decision::new(
        vec![Event::InvitationCreated {
            invite_id,
            email: None,
            spec: Box::new(spec),
            link_nonce: nonce,
        }],
        invite_id,
    ))
}

/// Whether `user` manages `invite`: its inviter, or an administrator.
pub fn manages(user: &User, invite: &Invitation) -> bool {
    user.role.is_admin() || invite.invited_by == Some(user.user_id)
}

/// An invitation the caller may revoke or resend: its inviter, or an administrator (an owner
/// for invitations of owners).
fn managed<'a>(
    state: &'a Projections,
    me: &User,
    id: InviteId,
    multiuse: bool,
) -> ApiResult<&'a Invitation> {
    let invite = state
        .invitations
        .get(id)
        .filter(|i| i.is_multiuse() == multiuse)
        .ok_or_else(|| ApiError::bad_request("No such invitation"))?;
    if invite.invited_by != Some(me.user_id) {
        if invite.spec.invite_as == Role::Owner && me.role != Role::Owner {
            return Err(ApiError::must_be_owner());
        }
        if !me.role.is_admin() {
            return Err(ApiError::must_be_admin());
        }
    }
    Ok(invite)
}

/// `DELETE /invites/{id}` (`multiuse` false) and `DELETE /invites/multiuse/{id}`.
pub fn revoke_invite(
    state: &Projections,
    ctx: &Ctx,
    id: InviteId,
    multiuse: bool,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let invite = managed(state, me, id, multiuse)?;
    match invite.status {
        crate::projections::invitations::InviteStatus::Pending => {}
        crate::projections::invitations::InviteStatus::Revoked if multiuse => {
            return Err(ApiError::bad_request("Invitation has already been revoked"));
        }
        _ => return Err(ApiError::bad_request("No such invitation")),
    }
    Ok(Decision::events(vec![Event::InvitationRevoked {
        invite_id: id,
    }]))
}

/// `POST /invites/{id}/resend`: a pending email invitation, sent again with the same link and
/// expiry (the event keeps the resend in the audit log).
pub fn resend_invite(state: &Projections, ctx: &Ctx, id: InviteId) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let invite = managed(state, me, id, false)?;
    if !invite.is_valid(ctx.now_ms) {
        return Err(ApiError::bad_request("No such invitation"));
    }
    Ok(Decision::events(vec![Event::InvitationResent {
        invite_id: id,
    }]))
}

/// Why a link cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkProblem {
    /// Unknown, expired, revoked, or already used.
    Invalid,
}

/// The invitation a link key opens, if it may still be used at `now_ms`.
pub fn invitation_for_key<'a>(
    state: &'a Projections,
    key: &str,
    now_ms: i64,
    key_of: impl Fn(&Invitation) -> String,
) -> Result<&'a Invitation, LinkProblem> {
    state
        .invitations
        .iter()
        .find(|i| crate::auth::constant_time_eq(key_of(i).as_bytes(), key.as_bytes()))
        .filter(|i| i.is_valid(now_ms))
        .ok_or(LinkProblem::Invalid)
}

/// Creating an account through an invitation: the role, channels and groups it grants, the
/// invitation marked used, and the notices (the inviter, a custom welcome, the sign-up
/// announcement).
pub fn accept_invitation(
    state: &Projections,
    ctx: &Ctx,
    invite_id: InviteId,
    user: NewUser,
) -> ApiResult<Decision<UserId>> {
    let invite = state
        .invitations
        .get(invite_id)
        .filter(|i| i.is_valid(ctx.now_ms))
        .ok_or_else(|| ApiError::bad_request("The invitation has expired or been revoked."))?;
    if let Some(email) = &invite.email {
        if !email.eq_ignore_ascii_case(&user.email) {
            return Err(ApiError::bad_request(
                "This invitation is for another address.",
            ));
        }
    }
    let full_name = check_new_account(state, &user)?;
    let user_id = UserId(state.users.max_id().0 + 1);
    let spec = &invite.spec;
    let mut events = vec![Event::UserCreated {
        user_id,
        email: user.email,
        full_name: full_name.clone(),
        role: spec.invite_as,
        bot_type: None,
        bot_owner_id: None,
        timezone: String::new(),
        can_create_users: false,
        password_hash: user.password_hash,
        api_key_nonce: user.api_key_nonce,
        bot: None,
    }];
    let mut subscribed: Vec<ChannelId> = Vec::new();
    if spec.include_realm_default_subscriptions {
        for event in default_subscriptions(state, user_id) {
            if let Event::Subscribed { channel_id, .. } = &event {
                subscribed.push(*channel_id);
            }
            events.push(event);
        }
    }
    let mut colors: Vec<String> = Vec::new();
    for channel_id in &spec.stream_ids {
        let usable = state
            .channels
            .get(*channel_id)
            .is_some_and(|c| !c.is_archived);
        if !usable || subscribed.contains(channel_id) {
            continue;
        }
        let color = next_color(state, user_id, &colors);
        colors.push(color.clone());
        subscribed.push(*channel_id);
        events.push(Event::Subscribed {
            channel_id: *channel_id,
            subscriptions: vec![NewSubscription { user_id, color }],
        });
    }
    for group_id in &spec.group_ids {
        if state.groups.get(*group_id).is_some_and(|g| !g.deactivated) {
            events.push(Event::UserGroupMembersChanged {
                group_id: *group_id,
                added: vec![user_id],
                removed: Vec::new(),
            });
        }
    }
    events.push(Event::InvitationAccepted { invite_id, user_id });
    let mention = format!("@_**{full_name}|{user_id}**");
    let mut notices = Notices::reserving(state, 1).knowing(user_id, &full_name);
    let referrer = invite
        .invited_by
        .and_then(|id| state.users.get(id))
        .filter(|u| u.is_active);
    if let Some(referrer) = referrer.filter(|_| spec.notify_referrer_on_join) {
        notices.to_user(
            referrer.user_id,
            format!("{mention} accepted your invitation to join Zulip!"),
        );
    }
    signup_notices(state, &mention, &mut notices);
    super::users::welcome(
        state,
        user_id,
        spec.welcome_message_custom_text.as_deref(),
        &mut notices,
    );
    events.extend(notices.into_events());
    Ok(Decision::new(events, user_id))
}

/// An account made by open sign-up (`invite_required` off): a person who proved they hold
/// `user.email` (by the link mailed to it) joins as a member, in the default channels, as
/// Zulip's registration without an invitation. Refused while invitations are required, and
/// for an address taken, invalid, or outside the allowed domains.
pub fn sign_up(state: &Projections, _ctx: &Ctx, user: NewUser) -> ApiResult<Decision<UserId>> {
    if state.realm.flag("invite_required") {
        return Err(ApiError::bad_request(
            "This organization requires an invitation to join.",
        ));
    }
    let full_name = check_new_account(state, &user)?;
    let user_id = UserId(state.users.max_id().0 + 1);
    let mut events = vec![Event::UserCreated {
        user_id,
        email: user.email,
        full_name: full_name.clone(),
        role: Role::Member,
        bot_type: None,
        bot_owner_id: None,
        timezone: String::new(),
        can_create_users: false,
        password_hash: user.password_hash,
        api_key_nonce: user.api_key_nonce,
        bot: None,
    }];
    events.extend(default_subscriptions(state, user_id));
    let mention = format!("@_**{full_name}|{user_id}**");
    let mut notices = Notices::reserving(state, 1).knowing(user_id, &full_name);
    signup_notices(state, &mention, &mut notices);
    super::users::welcome(state, user_id, None, &mut notices);
    events.extend(notices.into_events());
    Ok(Decision::new(events, user_id))
}

/// What a person joining by themselves must pass (an invitation's or open sign-up's): a valid
/// address, not taken, in the allowed domains, and a valid (and, when required, unique) name,
/// which is answered as it will be kept.
fn check_new_account(state: &Projections, user: &NewUser) -> ApiResult<String> {
    if !validate_email(&user.email) {
        return Err(ApiError::bad_request(format!(
            "Invalid email '{}'",
            user.email
        )));
    }
    if email_taken(state, &user.email) {
        return Err(ApiError::bad_request("Email is already in use."));
    }
    if super::realm_domains::email_refusal(state, &user.email).is_some() {
        return Err(super::realm_domains::not_allowed(&user.email));
    }
    let full_name = check_full_name(&user.full_name)?;
    check_unique_name(state, &full_name, None)?;
    Ok(full_name)
}

//! Decisions for SCIM provisioning (`http::scim`): the identity provider creates an account,
//! changes its address, name or role, deactivates or reactivates it; it makes groups, renames them,
//! sets their members and deletes them (deactivates: their history stays). The provider is no person of
//! the organization: the server is the actor, as for the directory sync, and the last owner is
//! kept as everywhere else.

use super::directory::{Entry, SyncRules};
use super::groups::check_group_name;
use super::users::{check_full_name, check_unique_name, deactivation_events, email_taken};
use super::{Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, GroupChange, GroupPermissions, Role, SystemGroup, UserChange};
use crate::ids::{GroupId, UserId};
use crate::projections::{email_key, Projections};
use std::collections::BTreeSet;

/// What a provider changes in an account (`None`: left as it is).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// A new address (checked as one by the caller).
    pub email: Option<String>,
    pub full_name: Option<String>,
    /// One part of the name (the first word, the rest): the other comes from the full name
    /// given, else the current one.
    pub given_name: Option<String>,
    pub family_name: Option<String>,
    pub active: Option<bool>,
    pub role: Option<Role>,
}

/// A new account, made as a directory makes one: no password (the person signs in through the
/// organization's provider, or sets one by a password reset), the default channels.
pub fn create(
    state: &Projections,
    ctx: &Ctx,
    email: &str,
    full_name: &str,
    role: Option<Role>,
    api_key_nonce: String,
) -> ApiResult<Decision<UserId>> {
    let entry = Entry {
        email: email.to_owned(),
        full_name: full_name.to_owned(),
        disabled: false,
        role,
        groups: Default::default(),
        avatar: None,
        profile: Default::default(),
    };
    super::directory::sign_up(
        state,
        ctx,
        &entry,
        &SyncRules::default(),
        api_key_nonce,
        false,
    )
}

/// Brings `user_id` in step with `changes`: reactivated first, deactivated last.
pub fn change(
    state: &Projections,
    _ctx: &Ctx,
    user_id: UserId,
    changes: &Changes,
) -> ApiResult<Decision> {
    let user = state
        .users
        .get(user_id)
        .filter(|u| !u.is_bot())
        .ok_or_else(|| ApiError::bad_request(format!("Resource {} not found", user_id.0)))?;
    let last_owner =
        user.role == Role::Owner && user.is_active && state.users.active_owner_count() <= 1;
    let mut events = Vec::new();
    if changes.active == Some(true) && !user.is_active {
        events.push(Event::UserReactivated { user_id });
    }
    if let Some(email) = changes.email.as_ref().filter(|e| **e != user.email) {
        // Another spelling of the same address needs no check; a new one must be free and
        // allowed.
        if email_key(email) != email_key(&user.email) {
            if email_taken(state, email) {
                return Err(ApiError::bad_request(format!(
                    "Email address already in use: {email} already has an account"
                )));
            }
            if super::realm_domains::email_refusal(state, email).is_some() {
                return Err(super::realm_domains::not_allowed(email));
            }
        }
        events.push(Event::UserEmailChanged {
            user_id,
            email: email.clone(),
        });
    }
    let name = match (&changes.given_name, &changes.family_name) {
        (None, None) => changes.full_name.clone(),
        (given, family) => {
            let base = changes.full_name.as_deref().unwrap_or(&user.full_name);
            let (first, rest) = base.split_once(' ').unwrap_or((base, ""));
            let given = given.as_deref().unwrap_or(first);
            let family = family.as_deref().unwrap_or(rest);
            Some(format!("{given} {family}").trim().to_owned())
        }
    };
    if let Some(name) = &name {
        let name = check_full_name(name)?;
        if name != user.full_name {
            check_unique_name(state, &name, Some(user_id))?;
            events.push(Event::UserChanged {
                user_id,
                change: UserChange::FullName(name),
            });
        }
    }
    if let Some(role) = changes.role.filter(|r| *r != user.role) {
        if last_owner {
            return Err(ApiError::bad_request(
                "The owner permission cannot be removed from the only organization owner.",
            ));
        }
        events.push(Event::UserChanged {
            user_id,
            change: UserChange::Role(role),
        });
    }
    if changes.active == Some(false) && user.is_active {
        if last_owner {
            return Err(ApiError::bad_request(
                "Cannot deactivate the only organization owner",
            ));
        }
        events.extend(deactivation_events(state, user_id, Default::default()));
    }
    Ok(Decision::events(events))
}

/// One change a provider makes to a group's members, applied in order to the members the group
/// has when the command decides (so that nothing changed meanwhile is undone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberOp {
    /// Exactly these people (`PUT`, `replace`); the bots in the group, which SCIM does not
    /// show, stay.
    Set(BTreeSet<UserId>),
    Add(BTreeSet<UserId>),
    Remove(BTreeSet<UserId>),
}

/// Zulip's refusal of members who are not people of the organization.
fn check_members<'a>(
    state: &Projections,
    ids: impl IntoIterator<Item = &'a UserId>,
) -> ApiResult<()> {
    let unknown: Vec<u64> = ids
        .into_iter()
        .filter(|id| state.users.get(**id).is_none_or(|u| u.is_bot()))
        .map(|id| id.0)
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        let list: Vec<String> = unknown.iter().map(u64::to_string).collect();
        Err(ApiError::bad_request(format!(
            "Invalid user ids found in the request: {{{}}}",
            list.join(", ")
        )))
    }
}

/// A group made by the provider (Zulip's: "Created from SCIM", managed by nobody but the
/// provider, so that nobody's change is undone by its next push).
pub fn create_group(
    state: &Projections,
    _ctx: &Ctx,
    name: &str,
    members: &BTreeSet<UserId>,
) -> ApiResult<Decision<GroupId>> {
    let name = check_group_name(state, name, None)?;
    check_members(state, members)?;
    let group_id = GroupId(state.groups.max_id().0 + 1);
    let nobody = state.groups.system_setting(SystemGroup::Nobody);
    let event = Event::UserGroupCreated {
        group_id,
        name,
        description: "Created from SCIM".into(),
        system: None,
        members: members.iter().copied().collect(),
        subgroups: Vec::new(),
        permissions: Box::new(GroupPermissions {
            can_add_members_group: nobody.clone(),
            can_join_group: nobody.clone(),
            can_leave_group: nobody.clone(),
            can_manage_group: nobody.clone(),
            can_mention_group: state.groups.system_setting(SystemGroup::Everyone),
            can_remove_members_group: nobody,
        }),
    };
    Ok(Decision::new(vec![event], group_id))
}

/// The user-defined, active group `group_id`, which a provider may change.
fn managed_group(state: &Projections, group_id: GroupId) -> ApiResult<&crate::projections::Group> {
    let group = state
        .groups
        .get(group_id)
        .filter(|g| !g.deactivated)
        .ok_or_else(|| ApiError::bad_request(format!("Resource {} not found", group_id.0)))?;
    if group.system.is_some() {
        return Err(ApiError::bad_request(format!(
            "Group {} can't be managed by SCIM.",
            group.name
        )));
    }
    Ok(group)
}

/// Renames `group_id` and changes its members (`members` in order).
pub fn change_group(
    state: &Projections,
    _ctx: &Ctx,
    group_id: GroupId,
    name: Option<&str>,
    members: &[MemberOp],
) -> ApiResult<Decision> {
    let group = managed_group(state, group_id)?;
    let mut events = Vec::new();
    if let Some(name) = name {
        let name = check_group_name(state, name, Some(group_id))?;
        if name != group.name {
            events.push(Event::UserGroupChanged {
                group_id,
                change: GroupChange::Name(name),
            });
        }
    }
    let wanted = (!members.is_empty()).then(|| -> ApiResult<BTreeSet<UserId>> {
        let mut set = group.members.clone();
        for op in members {
            match op {
                MemberOp::Set(people) => {
                    check_members(state, people)?;
                    set.retain(|id| state.users.get(*id).is_some_and(|u| u.is_bot()));
                    set.extend(people.iter().copied());
                }
                MemberOp::Add(people) => {
                    check_members(state, people)?;
                    set.extend(people.iter().copied());
                }
                MemberOp::Remove(people) => {
                    check_members(state, people)?;
                    set.retain(|id| !people.contains(id));
                }
            }
        }
        Ok(set)
    });
    let wanted = wanted.transpose()?;
    if let Some(wanted) = wanted {
        let added: Vec<UserId> = wanted.difference(&group.members).copied().collect();
        let removed: Vec<UserId> = group.members.difference(&wanted).copied().collect();
        if !added.is_empty() || !removed.is_empty() {
            events.push(Event::UserGroupMembersChanged {
                group_id,
                added,
                removed,
            });
        }
    }
    Ok(Decision::events(events))
}

/// `DELETE`: the group is deactivated (its history stays; it is listed no more).
pub fn delete_group(state: &Projections, _ctx: &Ctx, group_id: GroupId) -> ApiResult<Decision> {
    managed_group(state, group_id)?;
    if !super::groups::uses_of(state, group_id).is_empty() {
        return Err(ApiError::bad_request(
            "Cannot deactivate user group in use: a setting names it",
        ));
    }
    Ok(Decision::events(vec![Event::UserGroupChanged {
        group_id,
        change: GroupChange::Deactivated(true),
    }]))
}

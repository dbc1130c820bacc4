//! User groups: the system groups of a new organization, user-defined groups, and validation of
//! group-setting values.

use super::actor;
use super::Decision;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{Event, GroupChange, GroupPermissions, GroupSetting, Role, SystemGroup};
use crate::ids::{GroupId, UserId};
use crate::projections::Projections;

/// Zulip's `NamedUserGroup.MAX_NAME_LENGTH`.
pub const MAX_GROUP_NAME_LENGTH: usize = 100;

/// The events creating the eight system groups, if the organization does not have them yet.
pub fn ensure_system_groups(state: &Projections) -> Vec<Event> {
    if state.groups.system(SystemGroup::Owners).is_some() {
        return Vec::new();
    }
    let base = state.groups.max_id().0;
    let id_of = |kind: SystemGroup| {
        let index = SystemGroup::ALL
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(0) as u64;
        GroupId(base + 1 + index)
    };
    // System groups cannot be edited; all their own settings are `role:nobody`.
    let nobody = GroupSetting::Group(id_of(SystemGroup::Nobody));
    SystemGroup::ALL
        .iter()
        .map(|kind| Event::UserGroupCreated {
            group_id: id_of(*kind),
            name: kind.name().to_owned(),
            description: system_group_description(*kind).to_owned(),
            system: Some(*kind),
            members: Vec::new(),
            subgroups: Vec::new(),
            permissions: Box::new(GroupPermissions {
                can_add_members_group: nobody.clone(),
                can_join_group: nobody.clone(),
                can_leave_group: nobody.clone(),
                can_manage_group: nobody.clone(),
                can_mention_group: nobody.clone(),
                can_remove_members_group: nobody.clone(),
            }),
        })
        .collect()
}

fn system_group_description(kind: SystemGroup) -> &'static str {
    match kind {
        SystemGroup::Owners => "Owners of this organization",
        SystemGroup::Administrators => "Administrators of this organization, including owners",
        SystemGroup::Moderators => "Moderators of this organization, including administrators",
        SystemGroup::FullMembers => {
            "Members of this organization, not including new accounts and guests"
        }
        SystemGroup::Members => "Members of this organization, not including guests",
        SystemGroup::Everyone => "Everyone in this organization, including guests",
        SystemGroup::Internet => "Everyone on the Internet",
        SystemGroup::Nobody => "Nobody",
    }
}

/// Channel and user-group settings Zulip never lets include everyone (guests included): who
/// may add, join, manage or administer.
const EVERYONE_REFUSED: &[&str] = &[
    "can_add_subscribers_group",
    "can_administer_channel_group",
    "can_subscribe_group",
    "can_add_members_group",
    "can_join_group",
    "can_manage_group",
    "can_remove_members_group",
];

/// Validates a group-setting value against the organization and returns it normalized (an
/// anonymous group with nobody in it is `role:nobody`). Named groups must exist and be active;
/// anonymous members must be active users. `system_only` settings accept only system groups;
/// `role:internet` is accepted by no setting.
pub fn validate_setting(
    state: &Projections,
    name: &str,
    setting: GroupSetting,
    system_only: bool,
) -> ApiResult<GroupSetting> {
    let setting = match setting {
        GroupSetting::Anonymous {
            direct_members,
            direct_subgroups,
        } if direct_members.is_empty() && direct_subgroups.is_empty() => {
            state.groups.system_setting(SystemGroup::Nobody)
        }
        other => other,
    };
    let system_required = || {
        ApiError::new(
            ErrorCode::SystemGroupRequired,
            format!("'{name}' must be a system user group."),
        )
        .with("setting_name", name)
    };
    match &setting {
        GroupSetting::Group(id) => {
            let group = state
                .groups
                .get(*id)
                .ok_or_else(|| ApiError::bad_request("Invalid user group"))?;
            if group.deactivated {
                return Err(ApiError::bad_request("User group is deactivated."));
            }
            if system_only && group.system.is_none() {
                return Err(system_required());
            }
            if group.system == Some(SystemGroup::Internet) {
                return Err(ApiError::bad_request(format!(
                    "'{name}' setting cannot be set to 'role:internet' group."
                )));
            }
        }
        GroupSetting::Anonymous {
            direct_members,
            direct_subgroups,
        } => {
            if system_only {
                return Err(system_required());
            }
            for user in direct_members {
                if !state.users.get(*user).is_some_and(|u| u.is_active) {
                    return Err(ApiError::bad_request(format!("Invalid user ID: {user}")));
                }
            }
            for group in direct_subgroups {
                let g = state.groups.get(*group).ok_or_else(|| {
                    ApiError::bad_request(format!("Invalid user group ID: {group}"))
                })?;
                if g.deactivated {
                    return Err(ApiError::bad_request("User group is deactivated."));
                }
            }
        }
    }
    if EVERYONE_REFUSED.contains(&name)
        && setting == state.groups.system_setting(SystemGroup::Everyone)
    {
        return Err(ApiError::bad_request(format!(
            "'{name}' setting cannot be set to 'role:everyone' group."
        )));
    }
    Ok(setting)
}

/// Guests and bots may not use the user-group endpoints.
pub fn check_group_caller(user: &crate::projections::User) -> ApiResult<()> {
    if user.role == Role::Guest {
        return Err(ApiError::bad_request("Not allowed for guest users"));
    }
    if user.is_bot() {
        return Err(ApiError::bad_request(
            "This endpoint does not accept bot requests.",
        ));
    }
    Ok(())
}

/// Zulip's group name rules: non-empty, at most 100 characters, not starting with a reserved
/// prefix, unique.
pub fn check_group_name(
    state: &Projections,
    name: &str,
    except: Option<GroupId>,
) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("User group name can't be empty!"));
    }
    if name.chars().count() > MAX_GROUP_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "User group name cannot exceed {MAX_GROUP_NAME_LENGTH} characters."
        )));
    }
    for prefix in ["@", "role:", "user:", "stream:", "channel:"] {
        if name.starts_with(prefix) {
            return Err(ApiError::bad_request(format!(
                "User group name cannot start with '{prefix}'."
            )));
        }
    }
    // Names are unique exactly (deactivated groups included), as Zulip's database constraint.
    if state
        .groups
        .iter()
        .any(|g| g.name == name && Some(g.id) != except)
    {
        return Err(ApiError::bad_request(format!(
            "User group '{name}' already exists."
        )));
    }
    Ok(name.to_owned())
}

/// A new user-defined group, as requested.
#[derive(Debug, Clone)]
pub struct NewGroup {
    pub name: String,
    pub description: String,
    pub members: Vec<UserId>,
    pub subgroups: Vec<GroupId>,
    /// Settings given explicitly; the others take Zulip's defaults.
    pub permissions: Vec<(String, GroupSetting)>,
}

/// `POST /user_groups/create`.
pub fn create_group(state: &Projections, ctx: &Ctx, new: NewGroup) -> ApiResult<Decision<GroupId>> {
    let me = actor(state, ctx)?;
    check_group_caller(me)?;
    if !state.realm_allows(me.user_id, "can_create_groups") {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let name = check_group_name(state, &new.name, None)?;
    if new.description.chars().count() > 1024 {
        return Err(ApiError::bad_request(
            "User group description cannot exceed 1024 characters.",
        ));
    }
    for user in &new.members {
        if !state.users.get(*user).is_some_and(|u| u.is_active) {
            return Err(ApiError::bad_request(format!("Invalid user ID: {user}")));
        }
    }
    for group in &new.subgroups {
        if state.groups.get(*group).is_none_or(|g| g.deactivated) {
            return Err(ApiError::bad_request(format!(
                "Invalid user group ID: {group}"
            )));
        }
    }
    let creator_only = GroupSetting::Anonymous {
        direct_members: vec![me.user_id],
        direct_subgroups: Vec::new(),
    };
    let mut permissions = GroupPermissions {
        can_add_members_group: creator_only.clone(),
        can_join_group: state.groups.system_setting(SystemGroup::Nobody),
        can_leave_group: state.groups.system_setting(SystemGroup::Everyone),
        can_manage_group: creator_only,
        can_mention_group: state.groups.system_setting(SystemGroup::Everyone),
        can_remove_members_group: state.groups.system_setting(SystemGroup::Nobody),
    };
    for (setting, value) in new.permissions {
        let value = validate_setting(state, &setting, value, false)?;
        if let Some(slot) = permissions.get_mut(&setting) {
            *slot = value;
        }
    }
    let group_id = GroupId(state.groups.max_id().0 + 1);
    let mut members = new.members;
    members.sort();
    members.dedup();
    let mut subgroups = new.subgroups;
    subgroups.sort();
    subgroups.dedup();
    Ok(Decision::new(
        vec![Event::UserGroupCreated {
            group_id,
            name,
            description: new.description,
            system: None,
            members,
            subgroups,
            permissions: Box::new(permissions),
        }],
        group_id,
    ))
}

/// Whether the actor may manage a group (administrators, `can_manage_all_groups`, or the
/// group's own `can_manage_group`).
pub fn may_manage(state: &Projections, user: UserId, group: GroupId) -> bool {
    let Some(g) = state.groups.get(group) else {
        return false;
    };
    state.realm_allows(user, "can_manage_all_groups")
        || state.users.get(user).is_some_and(|u| u.role.is_admin())
        || state
            .groups
            .setting_allows(&state.users, user, &g.permissions.can_manage_group)
}

pub fn user_defined_group(
    state: &Projections,
    group: GroupId,
) -> ApiResult<&crate::projections::Group> {
    let g = state
        .groups
        .get(group)
        .ok_or_else(|| ApiError::bad_request("Invalid user group"))?;
    if g.system.is_some() {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    Ok(g)
}

/// `POST /user_groups/{id}/members`: add and remove direct members.
pub fn update_members(
    state: &Projections,
    ctx: &Ctx,
    group: GroupId,
    add: Vec<UserId>,
    delete: Vec<UserId>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    check_group_caller(me)?;
    let g = user_defined_group(state, group)?;
    if g.deactivated {
        return Err(ApiError::bad_request("User group is deactivated."));
    }
    let managing = may_manage(state, me.user_id, group);
    let joining_only = add.iter().all(|u| *u == me.user_id) && delete.is_empty();
    let leaving_only = delete.iter().all(|u| *u == me.user_id) && add.is_empty();
    let allowed = managing
        || (!add.is_empty()
            && (state.groups.setting_allows(
                &state.users,
                me.user_id,
                &g.permissions.can_add_members_group,
            ) || joining_only
                && state.groups.setting_allows(
                    &state.users,
                    me.user_id,
                    &g.permissions.can_join_group,
                )))
        || (!delete.is_empty()
            && (state.groups.setting_allows(
                &state.users,
                me.user_id,
                &g.permissions.can_remove_members_group,
            ) || leaving_only
                && state.groups.setting_allows(
                    &state.users,
                    me.user_id,
                    &g.permissions.can_leave_group,
                )));
    if !allowed {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    for user in &add {
        if !state.users.get(*user).is_some_and(|u| u.is_active) {
            return Err(ApiError::bad_request(format!("Invalid user ID: {user}")));
        }
        if g.members.contains(user) {
            return Err(ApiError::bad_request(format!(
                "User {user} is already a member of this group"
            )));
        }
    }
    for user in &delete {
        if !g.members.contains(user) {
            return Err(ApiError::bad_request(format!(
                "There is no member '{user}' in this user group"
            )));
        }
    }
    if add.is_empty() && delete.is_empty() {
        return Err(ApiError::bad_request(
            "Nothing to do. Specify at least one of 'add' or 'delete'.",
        ));
    }
    Ok(Decision::events(vec![Event::UserGroupMembersChanged {
        group_id: group,
        added: add,
        removed: delete,
    }]))
}

/// Whether `candidate` (transitively) contains `group`: adding it as a subgroup would make a
/// cycle.
fn reaches(state: &Projections, candidate: GroupId, group: GroupId) -> bool {
    let mut stack = vec![candidate];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(id) = stack.pop() {
        if id == group {
            return true;
        }
        if !seen.insert(id) {
            continue;
        }
        if let Some(g) = state.groups.get(id) {
            stack.extend(state.groups.direct_subgroups(g));
        }
    }
    false
}

/// `POST /user_groups/{id}/subgroups`.
pub fn update_subgroups(
    state: &Projections,
    ctx: &Ctx,
    group: GroupId,
    add: Vec<GroupId>,
    delete: Vec<GroupId>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    check_group_caller(me)?;
    let g = user_defined_group(state, group)?;
    if !may_manage(state, me.user_id, group) {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    for sub in &add {
        if state.groups.get(*sub).is_none_or(|s| s.deactivated) {
            return Err(ApiError::bad_request(format!(
                "Invalid user group ID: {sub}"
            )));
        }
        if g.subgroups.contains(sub) {
            return Err(ApiError::bad_request(format!(
                "User group {sub} is already a subgroup of this group."
            )));
        }
        if reaches(state, *sub, group) {
            return Err(ApiError::bad_request(format!(
                "User group {group} is already a subgroup of one of the passed subgroups."
            )));
        }
    }
    for sub in &delete {
        if !g.subgroups.contains(sub) {
            return Err(ApiError::bad_request(format!(
                "User group {sub} is not a subgroup of this group."
            )));
        }
    }
    if add.is_empty() && delete.is_empty() {
        return Err(ApiError::bad_request(
            "Nothing to do. Specify at least one of 'add' or 'delete'.",
        ));
    }
    Ok(Decision::events(vec![Event::UserGroupSubgroupsChanged {
        group_id: group,
        added: add,
        removed: delete,
    }]))
}

/// `PATCH /user_groups/{id}` and `POST /user_groups/{id}/deactivate`.
pub fn change_group(
    state: &Projections,
    ctx: &Ctx,
    group: GroupId,
    changes: Vec<GroupChange>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    check_group_caller(me)?;
    user_defined_group(state, group)?;
    if !may_manage(state, me.user_id, group) {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let mut events = Vec::new();
    for change in changes {
        match &change {
            GroupChange::Name(name) => {
                let name = check_group_name(state, name, Some(group))?;
                events.push(Event::UserGroupChanged {
                    group_id: group,
                    change: GroupChange::Name(name),
                });
                continue;
            }
            GroupChange::Description(text) if text.chars().count() > 1024 => {
                return Err(ApiError::bad_request(
                    "User group description cannot exceed 1024 characters.",
                ));
            }
            GroupChange::Permission { setting, value } => {
                let value = validate_setting(state, setting, value.clone(), false)?;
                events.push(Event::UserGroupChanged {
                    group_id: group,
                    change: GroupChange::Permission {
                        setting: setting.clone(),
                        value,
                    },
                });
                continue;
            }
            GroupChange::Description(_) | GroupChange::Deactivated(_) => {}
        }
        events.push(Event::UserGroupChanged {
            group_id: group,
            change,
        });
    }
    if events.is_empty() {
        return Err(ApiError::bad_request("No new data supplied"));
    }
    Ok(Decision::events(events))
}

/// Where a group is used as (part of) a permission setting; Zulip refuses to deactivate it then.
pub(crate) fn uses_of(state: &Projections, group: GroupId) -> Vec<serde_json::Value> {
    let mentions = |setting: &GroupSetting| match setting {
        GroupSetting::Group(id) => *id == group,
        GroupSetting::Anonymous {
            direct_subgroups, ..
        } => direct_subgroups.contains(&group),
    };
    let mut objections = Vec::new();
    for channel in state.channels.iter() {
        let settings: Vec<&str> = crate::events::ChannelPermissions::NAMES
            .iter()
            .copied()
            .filter(|n| channel.permissions.get(n).is_some_and(mentions))
            .collect();
        if !settings.is_empty() {
            objections.push(serde_json::json!({"type": "channel", "channel_id": channel.id.0, "settings": settings}));
        }
    }
    for other in state
        .groups
        .iter()
        .filter(|g| g.id != group && !g.deactivated)
    {
        let settings: Vec<&str> = GroupPermissions::NAMES
            .iter()
            .copied()
            .filter(|n| other.permissions.get(n).is_some_and(mentions))
            .collect();
        if !settings.is_empty() {
            objections.push(serde_json::json!({"type": "user_group", "group_id": other.id.0, "settings": settings}));
        }
    }
    objections
}

/// `POST /user_groups/{id}/deactivate`.
pub fn deactivate_group(state: &Projections, ctx: &Ctx, group: GroupId) -> ApiResult<Decision> {
    let g = state
        .groups
        .get(group)
        .ok_or_else(|| ApiError::bad_request("Invalid user group"))?;
    if g.deactivated {
        return Err(ApiError::bad_request("User group is already deactivated."));
    }
    let objections = uses_of(state, group);
    if !objections.is_empty() {
        return Err(ApiError::new(
            ErrorCode::CannotDeactivateGroupInUse,
            "Cannot deactivate user group in use.",
        )
        .with("objections", objections));
    }
    change_group(state, ctx, group, vec![GroupChange::Deactivated(true)])
}

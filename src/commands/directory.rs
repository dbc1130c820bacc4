//! Decisions from an organization's directory (LDAP today): an account made on a person's first
//! sign-in, and the sync that brings names, roles, group memberships and who may sign in in
//! step with the directory. They are ordinary commands: the directory's answer is their input,
//! the server (no person) is their actor, and what they decide is events like any change.

use super::users::{check_full_name, deactivation_events, email_taken, new_account, NewUser};
use super::{Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::{AvatarImage, Event, GroupPermissions, Role, SystemGroup, UserChange};
use crate::ids::{GroupId, UserId};
use crate::projections::{email_key, Projections, User};
use std::collections::{BTreeMap, BTreeSet};

/// What the directory says of one person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub email: String,
    pub full_name: String,
    /// Locked or disabled there (Active Directory's `userAccountControl`, FreeIPA's
    /// `nsAccountLock`, OpenLDAP's `pwdAccountLockedTime`).
    pub disabled: bool,
    /// The role their groups give, when the directory decides roles.
    pub role: Option<Role>,
    /// The synced groups they belong to (by name).
    pub groups: BTreeSet<String>,
    /// Their photo, already stored as an avatar.
    pub avatar: Option<AvatarImage>,
    /// Values of custom profile fields, by the field's name.
    pub profile: BTreeMap<String, String>,
}

/// The groups that decide roles, strongest first (owner, administrator, moderator, guest), from
/// the four configured names, each as `normalize` writes it.
pub fn role_groups(
    [owner, admin, moderator, guest]: [&Option<String>; 4],
    normalize: impl Fn(&str) -> String,
) -> Vec<(Role, String)> {
    [
        (Role::Owner, owner),
        (Role::Administrator, admin),
        (Role::Moderator, moderator),
        (Role::Guest, guest),
    ]
    .into_iter()
    .filter_map(|(role, group)| group.as_deref().map(|g| (role, normalize(g))))
    .collect()
}

/// The role of the strongest of `role_groups` a person is in (`member_of`), else member;
/// `None` when no group decides roles.
pub fn role_from_groups(
    role_groups: &[(Role, String)],
    member_of: impl Fn(&str) -> bool,
) -> Option<Role> {
    (!role_groups.is_empty()).then(|| {
        role_groups
            .iter()
            .find(|(_, group)| member_of(group))
            .map_or(Role::Member, |(role, _)| *role)
    })
}

/// How a sync treats what the directory does not say.
#[derive(Debug, Clone, Default)]
pub struct SyncRules {
    /// Deactivate people the directory does not have.
    pub deactivate_missing: bool,
    /// The directory groups mirrored as user groups of the same name.
    pub synced_groups: Vec<String>,
}

/// What a sync changed (ids of the people concerned), or would have.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncReport {
    pub deactivated: Vec<UserId>,
    pub reactivated: Vec<UserId>,
    pub renamed: Vec<UserId>,
    pub role_changed: Vec<UserId>,
    pub new_avatar: Vec<UserId>,
    pub profile_changed: Vec<UserId>,
    /// Group name → people added and removed.
    pub groups: BTreeMap<String, GroupChanges>,
    /// People kept active although the directory would have them deactivated: the last owner.
    pub kept: Vec<UserId>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct GroupChanges {
    pub added: Vec<UserId>,
    pub removed: Vec<UserId>,
}

/// The account of a person the directory knows, created at their first sign-in: no password
/// (they sign in through the directory), their directory role (member by default), the default
/// channels, their synced groups.
pub fn sign_up(
    state: &Projections,
    _ctx: &Ctx,
    entry: &Entry,
    rules: &SyncRules,
    api_key_nonce: String,
    greet: bool,
) -> ApiResult<Decision<UserId>> {
    if !super::users::validate_email(&entry.email) {
        return Err(ApiError::bad_request(format!(
            "The directory gives an invalid email address '{}'",
            entry.email
        )));
    }
    if email_taken(state, &entry.email) {
        return Err(ApiError::bad_request("Email is already in use."));
    }
    if super::realm_domains::email_refusal(state, &entry.email).is_some() {
        return Err(super::realm_domains::not_allowed(&entry.email));
    }
    let full_name = check_full_name(&entry.full_name)?;
    super::users::check_unique_name(state, &full_name, None)?;
    let user_id = UserId(state.users.max_id().0 + 1);
    let mut events = new_account(
        state,
        user_id,
        NewUser {
            email: entry.email.clone(),
            full_name,
            role: entry.role.unwrap_or(Role::Member),
            password_hash: None,
            api_key_nonce,
        },
        greet,
    );
    if let Some(image) = &entry.avatar {
        events.push(Event::AvatarSet {
            user_id,
            image: Some(image.clone()),
        });
    }
    let mut report = SyncReport::default();
    events.extend(group_events(state, rules, &[(user_id, entry)], &mut report));
    Ok(Decision::new(events, user_id))
}

/// Brings every account the directory answers for in step with `entries` (everyone the
/// directory lists): names, roles, synced groups, deactivation of people disabled there (or
/// missing, by `rules`) and reactivation of people who are back. Bots and the server's own
/// accounts are left alone, and so is the last active owner. A sync that would deactivate more
/// than half of the active people changes nothing and says so.
pub fn sync(
    state: &Projections,
    _ctx: &Ctx,
    entries: &[Entry],
    rules: &SyncRules,
) -> ApiResult<Decision<SyncReport>> {
    let by_email: BTreeMap<String, &Entry> =
        entries.iter().map(|e| (email_key(&e.email), e)).collect();
    let people: Vec<&User> = state.users.members().filter(|u| !u.is_bot()).collect();
    let active = people.iter().filter(|u| u.is_active).count();
    let mut report = SyncReport::default();
    let mut events = Vec::new();
    let mut owners = state.users.active_owner_count();
    let mut listed: Vec<(UserId, &Entry)> = Vec::new();
    for user in &people {
        let entry = by_email.get(&email_key(&user.email)).copied();
        let gone = match entry {
            Some(entry) => entry.disabled,
            None => rules.deactivate_missing,
        };
        if gone {
            if user.is_active {
                if user.role == Role::Owner && owners <= 1 {
                    report.kept.push(user.user_id);
                } else {
                    if user.role == Role::Owner {
                        owners -= 1;
                    }
                    report.deactivated.push(user.user_id);
                    events.extend(deactivation_events(state, user.user_id, Default::default()));
                }
            }
            continue;
        }
        let Some(entry) = entry else { continue };
        listed.push((user.user_id, entry));
        if !user.is_active {
            report.reactivated.push(user.user_id);
            events.push(Event::UserReactivated {
                user_id: user.user_id,
            });
        }
        if let Ok(name) = check_full_name(&entry.full_name) {
            if name != user.full_name {
                report.renamed.push(user.user_id);
                events.push(Event::UserChanged {
                    user_id: user.user_id,
                    change: UserChange::FullName(name),
                });
            }
        }
        if entry.avatar.is_some() && entry.avatar != user.avatar {
            report.new_avatar.push(user.user_id);
            events.push(Event::AvatarSet {
                user_id: user.user_id,
                image: entry.avatar.clone(),
            });
        }
        let profile = profile_events(state, user, entry);
        if !profile.is_empty() {
            report.profile_changed.push(user.user_id);
            events.extend(profile);
        }
        if let Some(role) = entry.role.filter(|r| *r != user.role) {
            let last_owner = user.role == Role::Owner && user.is_active && owners <= 1;
            if last_owner {
                report.kept.push(user.user_id);
            } else {
                if user.role == Role::Owner && user.is_active {
                    owners -= 1;
                }
                report.role_changed.push(user.user_id);
                events.push(Event::UserChanged {
                    user_id: user.user_id,
                    change: UserChange::Role(role),
                });
            }
        }
    }
    if report.deactivated.len() * 2 > active {
        return Err(ApiError::bad_request(format!(
            "The directory sync would deactivate {} of the {active} active people; nothing was \
             changed. Check the directory's settings (ldap.user_base, ldap.everyone_filter).",
            report.deactivated.len()
        )));
    }
    events.extend(group_events(state, rules, &listed, &mut report));
    Ok(Decision::new(events, report))
}

/// The custom profile values the directory gives `user` that differ from theirs, each checked
/// as the field's type wants it; a value the field does not take is left out (and logged).
fn profile_events(state: &Projections, user: &User, entry: &Entry) -> Vec<Event> {
    let fields = state.profile_fields.ordered();
    let mut events = Vec::new();
    for (name, value) in &entry.profile {
        let Some(field) = fields
            .iter()
            .find(|f| f.spec.name.eq_ignore_ascii_case(name))
        else {
            continue;
        };
        let change = super::profile_fields::ValueChange {
            field_id: field.id,
            value: serde_json::Value::String(value.clone()),
        };
        match super::profile_fields::value_events(state, user, user.user_id, vec![change], true) {
            Ok(more) => events.extend(more),
            Err(error) => tracing::warn!(
                field = %name,
                user = user.user_id.0,
                %error,
                "the directory's value does not fit the profile field"
            ),
        }
    }
    events
}

/// Membership of the synced groups for the people `listed` (with their directory entries):
/// each group created when missing (managed by administrators, joined and left through the
/// directory only), then people added and removed.
fn group_events(
    state: &Projections,
    rules: &SyncRules,
    listed: &[(UserId, &Entry)],
    report: &mut SyncReport,
) -> Vec<Event> {
    let mut events = Vec::new();
    let mut next_id = state.groups.max_id().0;
    // Only people the directory answered for leave a group; others stay as they are.
    let answered: BTreeSet<UserId> = listed.iter().map(|(id, _)| *id).collect();
    for name in &rules.synced_groups {
        let wanted: BTreeSet<UserId> = listed
            .iter()
            .filter(|(_, e)| e.groups.iter().any(|g| g.eq_ignore_ascii_case(name)))
            .map(|(id, _)| *id)
            .collect();
        let (group_id, current) = match state.groups.by_name(name).filter(|g| g.system.is_none()) {
            Some(group) => (group.id, group.members.clone()),
            None => {
                if wanted.is_empty() {
                    continue;
                }
                next_id += 1;
                events.push(synced_group_created(state, GroupId(next_id), name));
                (GroupId(next_id), BTreeSet::new())
            }
        };
        let added: Vec<UserId> = wanted.difference(&current).copied().collect();
        let removed: Vec<UserId> = current
            .iter()
            .filter(|id| answered.contains(id) && !wanted.contains(id))
            .copied()
            .collect();
        if added.is_empty() && removed.is_empty() {
            continue;
        }
        report.groups.insert(
            name.clone(),
            GroupChanges {
                added: added.clone(),
                removed: removed.clone(),
            },
        );
        events.push(Event::UserGroupMembersChanged {
            group_id,
            added,
            removed,
        });
    }
    events
}

/// A user group made for a directory group: administrators manage it and add people, nobody
/// joins or leaves it by hand (the sync would undo it), everyone may mention it.
fn synced_group_created(state: &Projections, group_id: GroupId, name: &str) -> Event {
    let admins = state.groups.system_setting(SystemGroup::Administrators);
    let nobody = state.groups.system_setting(SystemGroup::Nobody);
    Event::UserGroupCreated {
        group_id,
        name: name.to_owned(),
        description: "Kept in step with the directory group of the same name.".into(),
        system: None,
        members: Vec::new(),
        subgroups: Vec::new(),
        permissions: Box::new(GroupPermissions {
            can_add_members_group: admins.clone(),
            can_join_group: nobody.clone(),
            can_leave_group: nobody.clone(),
            can_manage_group: admins,
            can_mention_group: state.groups.system_setting(SystemGroup::Everyone),
            can_remove_members_group: nobody,
        }),
    }
}

//! User groups: the system groups every organization has (their membership follows roles) and
//! user-defined groups with direct members and subgroups.

use super::users::Users;
use crate::events::{
    Envelope, Event, GroupChange, GroupPermissions, GroupSetting, Role, SystemGroup,
};
use crate::ids::{GroupId, UserId};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One user group.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Group {
    pub id: GroupId,
    pub name: String,
    pub description: String,
    pub system: Option<SystemGroup>,
    /// Direct members (user-defined groups only; system groups derive theirs from roles).
    pub members: BTreeSet<UserId>,
    pub subgroups: BTreeSet<GroupId>,
    pub permissions: GroupPermissions,
    pub deactivated: bool,
    pub date_created_ms: i64,
    pub creator_id: Option<UserId>,
}

/// All groups.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Groups {
    by_id: BTreeMap<GroupId, Group>,
    by_system: HashMap<SystemGroup, GroupId>,
    by_name: HashMap<String, GroupId>,
}

/// Whether a role puts a user among the direct members of a system group. Each role is a direct
/// member of its own role group (members, with no waiting period, of `role:fullmembers` too);
/// the rest follows the subgroup chain
/// owners ⊂ administrators ⊂ moderators ⊂ full members ⊂ members ⊂ everyone ⊂ internet.
pub fn system_direct_member(kind: SystemGroup, role: Role) -> bool {
    matches!(
        (kind, role),
        (SystemGroup::Owners, Role::Owner)
            | (SystemGroup::Administrators, Role::Administrator)
            | (SystemGroup::Moderators, Role::Moderator)
            | (SystemGroup::FullMembers, Role::Member)
            | (SystemGroup::Members, Role::Member)
            | (SystemGroup::Everyone, Role::Guest)
    )
}

/// The system group a system group contains as its one subgroup, if any.
pub fn system_subgroup(kind: SystemGroup) -> Option<SystemGroup> {
    match kind {
        SystemGroup::Owners | SystemGroup::Nobody => None,
        SystemGroup::Administrators => Some(SystemGroup::Owners),
        SystemGroup::Moderators => Some(SystemGroup::Administrators),
        SystemGroup::FullMembers => Some(SystemGroup::Moderators),
        SystemGroup::Members => Some(SystemGroup::FullMembers),
        SystemGroup::Everyone => Some(SystemGroup::Members),
        SystemGroup::Internet => Some(SystemGroup::Everyone),
    }
}

/// Whether a role is (transitively) in a system group.
pub fn role_in_system_group(kind: SystemGroup, role: Role) -> bool {
    match kind {
        SystemGroup::Nobody => false,
        SystemGroup::Owners => role == Role::Owner,
        SystemGroup::Administrators => role.is_admin(),
        SystemGroup::Moderators => {
            matches!(role, Role::Owner | Role::Administrator | Role::Moderator)
        }
        SystemGroup::FullMembers | SystemGroup::Members => role != Role::Guest,
        SystemGroup::Everyone | SystemGroup::Internet => true,
    }
}

impl Groups {
    pub fn get(&self, id: GroupId) -> Option<&Group> {
        self.by_id.get(&id)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Group> {
        self.by_id.values()
    }

    pub fn by_name(&self, name: &str) -> Option<&Group> {
        self.by_name
            .get(&name.to_lowercase())
            .and_then(|id| self.by_id.get(id))
    }

    /// The id of a system group (present once the organization is set up).
    pub fn system(&self, kind: SystemGroup) -> Option<GroupId> {
        self.by_system.get(&kind).copied()
    }

    /// A setting naming one system group (`GroupSetting::Group`), or `Nobody` before setup.
    pub fn system_setting(&self, kind: SystemGroup) -> GroupSetting {
        GroupSetting::Group(self.system(kind).unwrap_or(GroupId(0)))
    }

    pub fn max_id(&self) -> GroupId {
        self.by_id.keys().next_back().copied().unwrap_or(GroupId(0))
    }

    /// Direct members of a group: by role for system groups (active accounts of the
    /// organization only: the server's own bots are in no group).
    pub fn direct_members(&self, group: &Group, users: &Users) -> BTreeSet<UserId> {
        match group.system {
            Some(kind) => users
                .members()
                .filter(|u| u.is_active && system_direct_member(kind, u.role))
                .map(|u| u.user_id)
                .collect(),
            None => group
                .members
                .iter()
                .copied()
                .filter(|id| users.get(*id).is_some_and(|u| u.is_active))
                .collect(),
        }
    }

    /// Direct subgroups of a group (the role chain for system groups).
    pub fn direct_subgroups(&self, group: &Group) -> BTreeSet<GroupId> {
        match group.system {
            Some(kind) => system_subgroup(kind)
                .and_then(|sub| self.system(sub))
                .into_iter()
                .collect(),
            None => group.subgroups.clone(),
        }
    }

    /// Whether `user` belongs to `group`, directly or through subgroups (cycle-safe).
    pub fn contains(&self, users: &Users, user: UserId, group: GroupId) -> bool {
        let Some(account) = users
            .get(user)
            .filter(|u| u.is_active && !u.is_system_bot())
        else {
            return false;
        };
        let mut seen = BTreeSet::new();
        let mut stack = vec![group];
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            let Some(g) = self.by_id.get(&id) else {
                continue;
            };
            if g.deactivated && g.system.is_none() {
                continue;
            }
            match g.system {
                Some(kind) => {
                    if role_in_system_group(kind, account.role) {
                        return true;
                    }
                }
                None => {
                    if g.members.contains(&user) {
                        return true;
                    }
                    stack.extend(g.subgroups.iter().copied());
                }
            }
        }
        false
    }

    /// Whether `user` is covered by a group-setting value. This is the one function every
    /// permission check goes through.
    pub fn setting_allows(&self, users: &Users, user: UserId, setting: &GroupSetting) -> bool {
        match setting {
            GroupSetting::Group(id) => self.contains(users, user, *id),
            GroupSetting::Anonymous {
                direct_members,
                direct_subgroups,
            } => {
                (direct_members.contains(&user) && users.get(user).is_some_and(|u| u.is_active))
                    || direct_subgroups
                        .iter()
                        .any(|g| self.contains(users, user, *g))
            }
        }
    }

    /// Every active user covered by a group-setting value.
    pub fn setting_members(&self, users: &Users, setting: &GroupSetting) -> BTreeSet<UserId> {
        users
            .iter()
            .filter(|u| self.setting_allows(users, u.user_id, setting))
            .map(|u| u.user_id)
            .collect()
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::UserGroupCreated {
                group_id,
                name,
                description,
                system,
                members,
                subgroups,
                permissions,
            } => {
                if let Some(kind) = system {
                    self.by_system.insert(*kind, *group_id);
                }
                self.by_name.insert(name.to_lowercase(), *group_id);
                self.by_id.insert(
                    *group_id,
                    Group {
                        id: *group_id,
                        name: name.clone(),
                        description: description.clone(),
                        system: *system,
                        members: members.iter().copied().collect(),
                        subgroups: subgroups.iter().copied().collect(),
                        permissions: (**permissions).clone(),
                        deactivated: false,
                        date_created_ms: env.at,
                        creator_id: env.actor,
                    },
                );
            }
            Event::UserGroupMembersChanged {
                group_id,
                added,
                removed,
            } => {
                if let Some(g) = self.by_id.get_mut(group_id) {
                    g.members.extend(added.iter().copied());
                    for id in removed {
                        g.members.remove(id);
                    }
                }
            }
            Event::UserGroupSubgroupsChanged {
                group_id,
                added,
                removed,
            } => {
                if let Some(g) = self.by_id.get_mut(group_id) {
                    g.subgroups.extend(added.iter().copied());
                    for id in removed {
                        g.subgroups.remove(id);
                    }
                }
            }
            Event::UserGroupChanged { group_id, change } => {
                let Some(g) = self.by_id.get_mut(group_id) else {
                    return;
                };
                match change {
                    GroupChange::Name(name) => {
                        self.by_name.remove(&g.name.to_lowercase());
                        self.by_name.insert(name.to_lowercase(), *group_id);
                        g.name = name.clone();
                    }
                    GroupChange::Description(text) => g.description = text.clone(),
                    GroupChange::Permission { setting, value } => {
                        if let Some(slot) = g.permissions.get_mut(setting) {
                            *slot = value.clone();
                        }
                    }
                    GroupChange::Deactivated(flag) => g.deactivated = *flag,
                }
            }
            Event::RealmCreated { .. }
            | Event::RealmSettingChanged { .. }
            | Event::InvitationCreated { .. }
            | Event::InvitationResent { .. }
            | Event::InvitationRevoked { .. }
            | Event::InvitationAccepted { .. }
            | Event::CustomProfileFieldCreated { .. }
            | Event::CustomProfileFieldChanged { .. }
            | Event::CustomProfileFieldDeleted { .. }
            | Event::CustomProfileFieldsReordered { .. }
            | Event::ProfileDataSet { .. }
            | Event::LinkifierAdded { .. }
            | Event::LinkifierChanged { .. }
            | Event::LinkifierRemoved { .. }
            | Event::LinkifiersReordered { .. }
            | Event::UserCreated { .. }
            | Event::ApiKeyRegenerated { .. }
            | Event::PasswordChanged { .. }
            | Event::UserDeactivated { .. }
            | Event::UserReactivated { .. }
            | Event::UserChanged { .. }
            | Event::ChannelCreated { .. }
            | Event::ChannelChanged { .. }
            | Event::Subscribed { .. }
            | Event::Unsubscribed { .. }
            | Event::SubscriptionPropertyChanged { .. }
            | Event::ChannelFolderCreated { .. }
            | Event::ChannelFolderChanged { .. }
            | Event::ChannelFoldersReordered { .. }
            | Event::TopicVisibilitySet { .. }
            | Event::CustomEmojiAdded { .. }
            | Event::CustomEmojiDeactivated { .. }
            | Event::PresenceUpdated { .. }
            | Event::UserSettingChanged { .. }
            | Event::SubmessageAdded { .. }
            | Event::UserStatusSet { .. }
            | Event::BotStorageSet { .. }
            | Event::BotStorageRemoved { .. }
            | Event::AttachmentUploaded { .. }
            | Event::AttachmentDeleted { .. }
            | Event::ScheduledMessageSaved { .. }
            | Event::ScheduledMessageFailed { .. }
            | Event::ScheduledMessageRemoved { .. }
            | Event::NavigationViewAdded { .. }
            | Event::NavigationViewChanged { .. }
            | Event::NavigationViewRemoved { .. }
            | Event::BotChanged { .. }
            | Event::ClientDeviceRegistered { .. }
            | Event::ClientDeviceRemoved { .. }
            | Event::SessionStarted { .. }
            | Event::SessionEnded { .. }
            | Event::TwoFactorChanged { .. }
            | Event::SignInTokenSpent { .. }
            | Event::NoticesRecorded { .. }
            | Event::NoticesSettled { .. }
            | Event::EmailQueued { .. }
            | Event::EmailSent { .. }
            | Event::EmailFailed { .. }
            | Event::PushDeviceChanged { .. }
            | Event::PushQueued { .. }
            | Event::PushSent { .. }
            | Event::PushFailed { .. }
            | Event::PushTestSent { .. }
            | Event::ClockWentBack { .. }
            | Event::UserEmailChanged { .. }
            | Event::DraftsSaved { .. }
            | Event::DraftRemoved { .. }
            | Event::SavedSnippetSaved { .. }
            | Event::SavedSnippetRemoved { .. }
            | Event::UserMuted { .. }
            | Event::AlertWordsAdded { .. }
            | Event::RealmDomainAdded { .. }
            | Event::RealmDomainChanged { .. }
            | Event::RealmDomainRemoved { .. }
            | Event::AlertWordsRemoved { .. }
            | Event::AvatarSet { .. }
            | Event::UserUnmuted { .. }
            | Event::LogErased { .. }
            | Event::ImportStarted { .. }
            | Event::ImportFinished { .. }
            | Event::RealmExported { .. }
            | Event::RealmExportDeleted { .. }
            | Event::Imported { .. }
            | Event::MessagesReadThrough { .. }
            | Event::TypingStarted { .. }
            | Event::TypingStopped { .. }
            | Event::EditTyping { .. }
            | Event::PlaygroundAdded { .. }
            | Event::PlaygroundRemoved { .. }
            | Event::RealmUserDefaultChanged { .. }
            | Event::DefaultChannelGroupSaved { .. }
            | Event::DefaultChannelGroupRemoved { .. }
            | Event::RealmImageSet { .. }
            | Event::MessageSent { .. }
            | Event::MessageFlagsChanged { .. }
            | Event::ReactionAdded { .. }
            | Event::ReactionRemoved { .. }
            | Event::MessageEdited { .. }
            | Event::MessagesDeleted { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        Value::Array(
            self.by_id
                .values()
                .map(|g| {
                    json!({
                        "id": g.id.0,
                        "name": g.name,
                        "description": g.description,
                        "system": g.system.map(SystemGroup::name),
                        "members": g.members,
                        "subgroups": g.subgroups,
                        "permissions": serde_json::to_value(&g.permissions).unwrap_or(Value::Null),
                        "deactivated": g.deactivated,
                        "date_created_ms": g.date_created_ms,
                        "creator_id": g.creator_id,
                    })
                })
                .collect(),
        )
    }
}

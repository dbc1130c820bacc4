//! `user_group` events: groups created, changed, and their members and subgroups.

use super::audience::to_all;
use super::event::Deliveries;
use crate::events::GroupChange;
use crate::ids::{GroupId, UserId};
use crate::projections::Projections;
use crate::render::groups::{group_json, render_group_setting};
use serde_json::json;

/// `add` for a new group (system groups are not announced).
pub fn group_created(state: &Projections, group_id: GroupId, system: bool) -> Deliveries {
    if system {
        return Deliveries::new();
    }
    let Some(group) = state.groups.get(group_id) else {
        return Deliveries::new();
    };
    to_all(
        state,
        json!({"type": "user_group", "op": "add", "group": group_json(state, group)}),
    )
}

/// `add_members` and `remove_members`.
pub fn members_changed(
    state: &Projections,
    group_id: GroupId,
    added: &[UserId],
    removed: &[UserId],
) -> Deliveries {
    let mut out = Deliveries::new();
    if !added.is_empty() {
        out.extend(to_all(state, json!({"type": "user_group", "op": "add_members", "group_id": group_id.0, "user_ids": added})));
    }
    if !removed.is_empty() {
        out.extend(to_all(state, json!({"type": "user_group", "op": "remove_members", "group_id": group_id.0, "user_ids": removed})));
    }
    out
}

/// `add_subgroups` and `remove_subgroups`.
pub fn subgroups_changed(
    state: &Projections,
    group_id: GroupId,
    added: &[GroupId],
    removed: &[GroupId],
) -> Deliveries {
    let mut out = Deliveries::new();
    if !added.is_empty() {
        out.extend(to_all(state, json!({"type": "user_group", "op": "add_subgroups", "group_id": group_id.0, "direct_subgroup_ids": added})));
    }
    if !removed.is_empty() {
        out.extend(to_all(state, json!({"type": "user_group", "op": "remove_subgroups", "group_id": group_id.0, "direct_subgroup_ids": removed})));
    }
    out
}

/// `update` of a name, description, permission or deactivation.
pub fn group_changed(state: &Projections, group_id: GroupId, change: &GroupChange) -> Deliveries {
    let data = match change {
        GroupChange::Name(name) => json!({"name": name}),
        GroupChange::Description(text) => json!({"description": text}),
        GroupChange::Permission { setting, value } => {
            json!({ setting.as_str(): render_group_setting(value) })
        }
        GroupChange::Deactivated(flag) => json!({"deactivated": flag}),
    };
    to_all(
        state,
        json!({"type": "user_group", "op": "update", "group_id": group_id.0, "data": data}),
    )
}

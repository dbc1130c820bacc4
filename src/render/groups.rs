//! User groups and group-setting values as clients see them.

use crate::events::GroupPermissions;
use crate::events::GroupSetting;
use crate::projections::{Group, Projections};
use serde_json::Map;
use serde_json::{json, Value};

/// A group-setting value as Zulip sends it.
pub fn render_group_setting(setting: &GroupSetting) -> Value {
    match setting {
        GroupSetting::Group(id) => json!(id.0),
        GroupSetting::Anonymous {
            direct_members,
            direct_subgroups,
        } => json!({"direct_members": direct_members, "direct_subgroups": direct_subgroups}),
    }
}

/// A group as `GET /user_groups` and `user_group` events send it.
pub fn group_json(state: &Projections, group: &Group) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), json!(group.id.0));
    map.insert("name".into(), json!(group.name));
    map.insert("description".into(), json!(group.description));
    let system = group.system.is_some();
    map.insert(
        "date_created".into(),
        if system {
            Value::Null
        } else {
            json!(group.date_created_ms / 1000)
        },
    );
    map.insert(
        "creator_id".into(),
        if system {
            Value::Null
        } else {
            json!(group.creator_id)
        },
    );
    map.insert(
        "members".into(),
        json!(state.groups.direct_members(group, &state.users)),
    );
    map.insert(
        "direct_subgroup_ids".into(),
        json!(state.groups.direct_subgroups(group)),
    );
    map.insert("is_system_group".into(), json!(system));
    for name in GroupPermissions::NAMES {
        if let Some(setting) = group.permissions.get(name) {
            map.insert((*name).to_owned(), render_group_setting(setting));
        }
    }
    map.insert("deactivated".into(), json!(group.deactivated));
    Value::Object(map)
}

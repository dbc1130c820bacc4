//! Wire forms shared by several resources: group-setting values.

use crate::error::{ApiError, ApiResult};
use crate::events::GroupSetting;
use crate::ids::{GroupId, UserId};
use serde_json::Value;

/// A group-setting value as clients send it: a group id, or
/// `{"direct_members": [...], "direct_subgroups": [...]}` (feature level 320+).
pub fn parse_group_setting(name: &str, value: &Value) -> ApiResult<GroupSetting> {
    let invalid = || ApiError::bad_request(format!("Invalid {name}")).with("var_name", name);
    match value {
        Value::Number(n) => n
            .as_u64()
            .map(|id| GroupSetting::Group(GroupId(id)))
            .ok_or_else(invalid),
        Value::Object(map) => {
            let ids = |key: &str| -> ApiResult<Vec<u64>> {
                match map.get(key) {
                    None => Ok(Vec::new()),
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|v| v.as_u64().ok_or_else(invalid))
                        .collect(),
                    Some(_) => Err(invalid()),
                }
            };
            if map
                .keys()
                .any(|k| k != "direct_members" && k != "direct_subgroups")
            {
                return Err(invalid());
            }
            let mut members: Vec<UserId> = ids("direct_members")?.into_iter().map(UserId).collect();
            let mut subgroups: Vec<GroupId> =
                ids("direct_subgroups")?.into_iter().map(GroupId).collect();
            members.sort();
            members.dedup();
            subgroups.sort();
            subgroups.dedup();
            // An anonymous group that is exactly one named group is that group.
            if members.is_empty() && subgroups.len() == 1 {
                return Ok(GroupSetting::Group(subgroups[0]));
            }
            Ok(GroupSetting::Anonymous {
                direct_members: members,
                direct_subgroups: subgroups,
            })
        }
        _ => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::groups::render_group_setting;
    use serde_json::json;

    #[test]
    fn both_forms_parse_and_render() {
        let named = parse_group_setting("x", &json!(7)).unwrap();
        assert_eq!(named, GroupSetting::Group(GroupId(7)));
        assert_eq!(render_group_setting(&named), json!(7));
        let anon = parse_group_setting(
            "x",
            &json!({"direct_members": [3, 1, 3], "direct_subgroups": []}),
        )
        .unwrap();
        assert_eq!(
            render_group_setting(&anon),
            json!({"direct_members": [1, 3], "direct_subgroups": []})
        );
        let single =
            parse_group_setting("x", &json!({"direct_members": [], "direct_subgroups": [9]}))
                .unwrap();
        assert_eq!(single, GroupSetting::Group(GroupId(9)));
        for bad in [
            json!("x"),
            json!(-1),
            json!({"members": []}),
            json!({"direct_members": ["a"]}),
        ] {
            assert_eq!(
                parse_group_setting("x", &bad).unwrap_err().body()["msg"],
                "Invalid x"
            );
        }
    }
}

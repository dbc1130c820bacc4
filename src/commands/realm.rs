//! Organization settings: `PATCH /realm`.

use super::Decision;
use super::{admin, groups::validate_setting};
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, GroupSetting, RealmValue, Role, SystemGroup};
use crate::ids::ChannelId;
use crate::projections::realm::{setting, Kind};
use crate::projections::Projections;

/// `PATCH /realm`: applies the changes in request order, skipping values that are already
/// current. The values have the form their setting's `Kind` asks for (the HTTP layer parsed
/// them); what needs the state (channels, groups, who may change what) is checked here. Returns
/// the names that changed.
pub fn update_realm(
    state: &Projections,
    ctx: &Ctx,
    changes: Vec<(&'static str, RealmValue)>,
) -> ApiResult<Decision<Vec<&'static str>>> {
    let me = admin(state, ctx)?;
    let mut events = Vec::new();
    let mut changed = Vec::new();
    for (name, value) in changes {
        let Some(spec) = setting(name) else {
            return Err(ApiError::internal(format!("unknown realm setting {name}")));
        };
        if spec.owner_only && me.role != Role::Owner {
            return Err(ApiError::must_be_owner());
        }
        let value = match (spec.kind, value) {
            (Kind::Channel, RealmValue::Int(id)) if id != -1 => {
                let known = u64::try_from(id)
                    .ok()
                    .and_then(|id| state.channels.get(ChannelId(id)))
                    .is_some_and(|c| !c.is_archived);
                if !known {
                    return Err(ApiError::bad_request("Invalid channel ID"));
                }
                let public = state
                    .channels
                    .get(ChannelId(id as u64))
                    .is_some_and(|c| !c.invite_only);
                if name == "moderation_request_channel_id" && public {
                    return Err(ApiError::bad_request(
                        "Moderation request channel must be private.",
                    ));
                }
                RealmValue::Int(id)
            }
            (
                Kind::Group {
                    everyone,
                    nobody,
                    system_only,
                },
                RealmValue::Group(group),
            ) => RealmValue::Group(check_group_value(
                state,
                name,
                group,
                everyone,
                nobody,
                system_only,
            )?),
            (_, value) => value,
        };
        let current = match spec.kind {
            Kind::Group { .. } => RealmValue::Group(state.realm_permission(name)),
            _ => state.realm.value(name),
        };
        if current != value {
            events.push(Event::RealmSettingChanged {
                name: name.to_owned(),
                value,
            });
            changed.push(name);
        }
    }
    Ok(Decision::new(events, changed))
}

/// A group-setting value for an organization permission: valid as any group setting, and not
/// one of the system groups this setting refuses.
/// `PATCH /realm/user_settings_defaults`: administrators change the settings people who join
/// later start with (the HTTP layer reads only the settings an organization may default). The
/// whole request applies or none of it; values already current are skipped.
pub fn update_user_defaults(
    state: &Projections,
    ctx: &Ctx,
    changes: Vec<(&'static str, RealmValue)>,
) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let mut events = Vec::new();
    for (name, value) in changes {
        super::users::check_setting(name, &value)?;
        if state.user_settings.realm_default(name) != value {
            events.push(Event::RealmUserDefaultChanged {
                name: name.to_owned(),
                value,
            });
        }
    }
    Ok(Decision::events(events))
}

/// `POST`/`DELETE /realm/icon` and `/realm/logo`: one of the organization's pictures (already
/// stored), or the default again. Administrators.
pub fn set_image(
    state: &Projections,
    ctx: &Ctx,
    image: crate::events::RealmImage,
    sha256: Option<String>,
) -> ApiResult<Decision> {
    admin(state, ctx)?;
    if state.realm.image(image) == sha256.as_deref() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::RealmImageSet {
        image,
        sha256,
    }]))
}

fn check_group_value(
    state: &Projections,
    name: &str,
    value: GroupSetting,
    everyone: bool,
    nobody: bool,
    system_only: bool,
) -> ApiResult<GroupSetting> {
    let value = validate_setting(state, name, value, system_only)?;
    let refused =
        |kind: SystemGroup, allowed: bool| !allowed && value == state.groups.system_setting(kind);
    for (kind, allowed) in [
        (SystemGroup::Everyone, everyone),
        (SystemGroup::Nobody, nobody),
    ] {
        if refused(kind, allowed) {
            return Err(ApiError::bad_request(format!(
                "'{name}' setting cannot be set to '{}' group.",
                kind.name()
            )));
        }
    }
    Ok(value)
}

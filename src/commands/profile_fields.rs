//! Custom profile fields: their definitions (administrators) and users' values.

use super::markup::OrgResolver;
use super::Decision;
use super::{actor, admin, is_http_url};
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, ProfileChoice, ProfileFieldData, ProfileFieldSpec};
use crate::ids::{FieldId, UserId};
use crate::markdown::render_message;
use crate::projections::profile_fields::Field;
use crate::projections::{Projections, User};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Zulip's `CustomProfileField.NAME_MAX_LENGTH`, `HINT_MAX_LENGTH`, and the summary limit.
pub const MAX_NAME_LENGTH: usize = 40;
pub const MAX_HINT_LENGTH: usize = 80;
pub const MAX_SUMMARY_FIELDS: usize = 2;
/// Zulip's value limits: short text types and long text.
pub const MAX_SHORT_VALUE_LENGTH: usize = 50;
pub const MAX_LONG_VALUE_LENGTH: usize = 500;

pub const SHORT_TEXT: u8 = 1;
pub const LONG_TEXT: u8 = 2;
pub const SELECT: u8 = 3;
pub const DATE: u8 = 4;
pub const URL: u8 = 5;
pub const USER: u8 = 6;
pub const EXTERNAL_ACCOUNT: u8 = 7;
pub const PRONOUNS: u8 = 8;

/// One of Zulip's built-in external account kinds.
pub struct ExternalAccount {
    pub subtype: &'static str,
    /// What administrators pick from.
    pub text: &'static str,
    /// The field's name once created.
    pub name: &'static str,
    pub hint: &'static str,
    pub url_pattern: &'static str,
}

/// Zulip's built-in external account kinds (`realm_default_external_accounts`).
pub const DEFAULT_EXTERNAL_ACCOUNTS: &[ExternalAccount] = &[
    ExternalAccount {
        subtype: "twitter",
        text: "Twitter",
        name: "Twitter username",
        hint: "",
        url_pattern: "https://twitter.com/%(username)s",
    },
    ExternalAccount {
        subtype: "github",
        text: "GitHub",
        name: "GitHub username",
        hint: "",
        url_pattern: "https://github.com/%(username)s",
    },
];

/// The definition parameters of a create or change request (`None`: not sent).
#[derive(Debug, Clone, Default)]
pub struct FieldChange {
    pub name: Option<String>,
    pub hint: Option<String>,
    pub field_data: Option<ProfileFieldData>,
    pub display_in_profile_summary: Option<bool>,
    pub required: Option<bool>,
    pub editable_by_user: Option<bool>,
    pub use_for_user_matching: Option<bool>,
}

/// One `{id, value}` of a profile data request.
#[derive(Debug, Clone)]
pub struct ValueChange {
    pub field_id: FieldId,
    pub value: Value,
}

/// `field_data` as a request sends it (a JSON object), checked for its shape; the rules that
/// depend on the type are the command's. (Zulip's exports hold the same object as JSON text.)
pub fn parse_field_data(
    value: Option<Value>,
    field_type: u8,
) -> ApiResult<Option<ProfileFieldData>> {
    let Some(value) = value else {
        return Ok(None);
    };
    let Value::Object(map) = value else {
        return Err(ApiError::bad_request("field_data is not a dict"));
    };
    Ok(Some(match field_type {
        3 => {
            let mut choices = BTreeMap::new();
            for (key, choice) in map {
                let Value::Object(choice) = choice else {
                    return Err(ApiError::bad_request(format!(
                        "field_data[\"{key}\"] is not a dict"
                    )));
                };
                let text = |name: &str| -> ApiResult<String> {
                    match choice.get(name) {
                        None => Err(ApiError::bad_request(format!(
                            "{name} key is missing from field_data"
                        ))),
                        Some(Value::String(s)) => Ok(s.clone()),
                        Some(_) => Err(ApiError::bad_request(format!(
                            "field_data[\"{name}\"] is not a string"
                        ))),
                    }
                };
                let unexpected: Vec<&str> = choice
                    .keys()
                    .map(String::as_str)
                    .filter(|k| *k != "text" && *k != "order")
                    .collect();
                if !unexpected.is_empty() {
                    return Err(ApiError::bad_request(format!(
                        "Unexpected arguments: {}",
                        unexpected.join(", ")
                    )));
                }
                choices.insert(
                    key,
                    ProfileChoice {
                        text: text("text")?,
                        order: text("order")?,
                    },
                );
            }
            ProfileFieldData::Choices(choices)
        }
        7 => {
            let subtype = match map.get("subtype") {
                None => {
                    return Err(ApiError::bad_request(
                        "subtype key is missing from field_data",
                    ))
                }
                Some(Value::String(s)) => s.clone(),
                Some(_) => {
                    return Err(ApiError::bad_request(
                        "field_data[\"subtype\"] is not a string",
                    ))
                }
            };
            let url_pattern = match map.get("url_pattern") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    return Err(ApiError::bad_request(
                        "field_data[\"url_pattern\"] is not a string",
                    ))
                }
            };
            ProfileFieldData::ExternalAccount {
                subtype,
                url_pattern,
            }
        }
        _ => ProfileFieldData::None,
    }))
}

fn not_found(id: FieldId) -> ApiError {
    ApiError::bad_request(format!("Field id {id} not found."))
}

fn field(state: &Projections, id: FieldId) -> ApiResult<&Field> {
    state.profile_fields.get(id).ok_or_else(|| not_found(id))
}

/// Zulip's checks of a definition, in Zulip's order; `except` is the field being changed.
fn check_spec(
    state: &Projections,
    spec: &mut ProfileFieldSpec,
    except: Option<FieldId>,
) -> ApiResult<()> {
    if spec.display_in_profile_summary {
        let others = state
            .profile_fields
            .ordered()
            .into_iter()
            .filter(|f| Some(f.id) != except && f.spec.display_in_profile_summary)
            .count();
        if others >= MAX_SUMMARY_FIELDS {
            return Err(ApiError::bad_request(format!(
                "Only {MAX_SUMMARY_FIELDS} custom profile fields can be displayed in the profile summary."
            )));
        }
    }
    let mut default_account = false;
    match (&spec.field_data, spec.field_type) {
        (ProfileFieldData::Choices(choices), SELECT) => {
            if choices.is_empty() {
                return Err(ApiError::bad_request(
                    "Field must have at least one choice.",
                ));
            }
            let mut texts = BTreeSet::new();
            for (key, choice) in choices {
                if key.trim().is_empty() {
                    return Err(ApiError::bad_request("'value' cannot be blank."));
                }
                for (name, text) in [("text", &choice.text), ("order", &choice.order)] {
                    if text.trim().is_empty() {
                        return Err(ApiError::bad_request(format!(
                            "field_data[\"{name}\"] cannot be blank."
                        )));
                    }
                }
                if !texts.insert(choice.text.as_str()) {
                    return Err(ApiError::bad_request(
                        "Field must not have duplicate choices.",
                    ));
                }
            }
        }
        (_, SELECT) => {
            return Err(ApiError::bad_request(
                "Field must have at least one choice.",
            ))
        }
        (
            ProfileFieldData::ExternalAccount {
                subtype,
                url_pattern,
            },
            EXTERNAL_ACCOUNT,
        ) => {
            if let Some(account) = DEFAULT_EXTERNAL_ACCOUNTS
                .iter()
                .find(|account| account.subtype == subtype)
            {
                spec.name = account.name.to_owned();
                spec.hint = account.hint.to_owned();
                default_account = true;
            } else if subtype != "custom" {
                return Err(ApiError::bad_request("Invalid external account type"));
            } else {
                let Some(pattern) = url_pattern else {
                    return Err(ApiError::bad_request(
                        "Custom external account must define URL pattern",
                    ));
                };
                if pattern.matches("%(username)s").count() != 1 {
                    return Err(ApiError::bad_request(
                        "URL pattern must contain '%(username)s'.",
                    ));
                }
                if !is_http_url(&pattern.replace("%(username)s", "username")) {
                    return Err(ApiError::bad_request(
                        "field_data[\"url_pattern\"] is not a URL",
                    ));
                }
            }
        }
        (_, EXTERNAL_ACCOUNT) => {
            return Err(ApiError::bad_request(
                "subtype key is missing from field_data",
            ))
        }
        // Other types carry no data.
        _ => spec.field_data = ProfileFieldData::None,
    }
    if !default_account {
        spec.name = spec.name.trim().to_owned();
        if spec.name.is_empty() {
            return Err(ApiError::bad_request("Label cannot be blank."));
        }
        if spec.hint.chars().count() > MAX_HINT_LENGTH {
            return Err(ApiError::bad_request(format!(
                "hint is too long (limit: {MAX_HINT_LENGTH} characters)"
            )));
        }
        if spec.name.chars().count() > MAX_NAME_LENGTH {
            return Err(ApiError::bad_request(format!(
                "name is too long (limit: {MAX_NAME_LENGTH} characters)"
            )));
        }
    }
    if !(SHORT_TEXT..=PRONOUNS).contains(&spec.field_type) {
        return Err(ApiError::bad_request("Invalid field type."));
    }
    if spec.display_in_profile_summary && spec.field_type == USER {
        return Err(ApiError::bad_request(
            "Field type not supported for display in profile summary.",
        ));
    }
    if spec.use_for_user_matching && !matches!(spec.field_type, SHORT_TEXT | EXTERNAL_ACCOUNT) {
        return Err(ApiError::bad_request(
            "Field type not supported for use for user matching.",
        ));
    }
    let taken = state
        .profile_fields
        .ordered()
        .into_iter()
        .any(|f| Some(f.id) != except && f.spec.name == spec.name);
    if taken {
        return Err(ApiError::bad_request(
            "A field with that label already exists.",
        ));
    }
    Ok(())
}

/// `POST /realm/profile_fields`.
pub fn create_field(
    state: &Projections,
    ctx: &Ctx,
    field_type: u8,
    change: FieldChange,
) -> ApiResult<Decision<FieldId>> {
    admin(state, ctx)?;
    let mut spec = ProfileFieldSpec {
        name: change.name.unwrap_or_default(),
        hint: change.hint.unwrap_or_default(),
        field_type,
        field_data: change.field_data.unwrap_or(ProfileFieldData::None),
        display_in_profile_summary: change.display_in_profile_summary.unwrap_or(false),
        required: change.required.unwrap_or(false),
        editable_by_user: change.editable_by_user.unwrap_or(true),
        use_for_user_matching: change.use_for_user_matching.unwrap_or(false),
    };
    check_spec(state, &mut spec, None)?;
    let field_id = FieldId(state.profile_fields.max_id().0 + 1);
    Ok(Decision::new(
        vec![Event::CustomProfileFieldCreated { field_id, spec }],
        field_id,
    ))
}

/// `PATCH /realm/profile_fields/{id}`: unset parameters keep their values; values of dropdown
/// choices that disappear are cleared.
pub fn update_field(
    state: &Projections,
    ctx: &Ctx,
    id: FieldId,
    change: FieldChange,
) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let current = field(state, id)?;
    let old = &current.spec;
    let is_default_account = matches!(
        &old.field_data,
        ProfileFieldData::ExternalAccount { subtype, .. }
            if DEFAULT_EXTERNAL_ACCOUNTS.iter().any(|account| account.subtype == subtype)
    );
    let touches_more = change.name.is_some()
        || change.hint.is_some()
        || change.field_data.is_some()
        || change.required.is_some()
        || change.editable_by_user.is_some()
        || change.use_for_user_matching.is_some();
    if is_default_account && touches_more {
        return Err(ApiError::bad_request(
            "Default custom field cannot be updated.",
        ));
    }
    let mut spec = ProfileFieldSpec {
        name: change.name.unwrap_or_else(|| old.name.clone()),
        hint: change.hint.unwrap_or_else(|| old.hint.clone()),
        field_type: old.field_type,
        field_data: change.field_data.unwrap_or_else(|| old.field_data.clone()),
        display_in_profile_summary: change
            .display_in_profile_summary
            .unwrap_or(old.display_in_profile_summary),
        required: change.required.unwrap_or(old.required),
        editable_by_user: change.editable_by_user.unwrap_or(old.editable_by_user),
        use_for_user_matching: change
            .use_for_user_matching
            .unwrap_or(old.use_for_user_matching),
    };
    check_spec(state, &mut spec, Some(id))?;
    if spec == *old {
        return Ok(Decision::events(Vec::new()));
    }
    let mut events = Vec::new();
    if let ProfileFieldData::Choices(choices) = &spec.field_data {
        for user in state.users.iter() {
            let stale = state
                .profile_fields
                .values_of(user.user_id)
                .and_then(|values| values.get(&id))
                .is_some_and(|v| !choices.contains_key(&v.value));
            if stale {
                events.push(Event::ProfileDataSet {
                    user_id: user.user_id,
                    field_id: id,
                    value: None,
                    rendered_value: None,
                });
            }
        }
    }
    events.insert(0, Event::CustomProfileFieldChanged { field_id: id, spec });
    Ok(Decision::events(events))
}

/// `DELETE /realm/profile_fields/{id}`.
pub fn delete_field(state: &Projections, ctx: &Ctx, id: FieldId) -> ApiResult<Decision> {
    admin(state, ctx)?;
    field(state, id)?;
    Ok(Decision::events(vec![Event::CustomProfileFieldDeleted {
        field_id: id,
    }]))
}

/// `PATCH /realm/profile_fields`: `order` must name every field; unknown ids are ignored.
pub fn reorder_fields(state: &Projections, ctx: &Ctx, order: Vec<u64>) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let existing: BTreeSet<FieldId> = state
        .profile_fields
        .ordered()
        .into_iter()
        .map(|f| f.id)
        .collect();
    let mut seen = BTreeSet::new();
    let order: Vec<FieldId> = order
        .into_iter()
        .map(FieldId)
        .filter(|id| existing.contains(id) && seen.insert(*id))
        .collect();
    if order.len() != existing.len() {
        return Err(ApiError::bad_request("Invalid order mapping."));
    }
    Ok(Decision::events(vec![
        Event::CustomProfileFieldsReordered { order },
    ]))
}

/// A value checked against its field's type, as stored: text, or the users type's ids as JSON
/// text.
fn check_value(state: &Projections, field: &Field, value: &Value) -> ApiResult<String> {
    let name = &field.spec.name;
    let text = || -> ApiResult<&str> {
        value
            .as_str()
            .ok_or_else(|| ApiError::bad_request(format!("{name} is not a string")))
    };
    let limited = |max: usize| -> ApiResult<String> {
        let text = text()?;
        if text.chars().count() > max {
            return Err(ApiError::bad_request(format!(
                "{name} is too long (limit: {max} characters)"
            )));
        }
        Ok(text.to_owned())
    };
    match field.spec.field_type {
        LONG_TEXT => limited(MAX_LONG_VALUE_LENGTH),
        DATE => {
            let text = text()?;
            if !is_iso_date(text) {
                return Err(ApiError::bad_request(format!("{name} is not a date")));
            }
            Ok(text.to_owned())
        }
        URL => {
            let text = text()?;
            if !is_http_url(text) {
                return Err(ApiError::bad_request(format!("{name} is not a URL")));
            }
            Ok(text.to_owned())
        }
        SELECT => {
            let text = text()?;
            let valid = matches!(&field.spec.field_data, ProfileFieldData::Choices(c) if c.contains_key(text));
            if !valid {
                return Err(ApiError::bad_request(format!(
                    "'{text}' is not a valid choice for '{name}'."
                )));
            }
            Ok(text.to_owned())
        }
        USER => {
            let Value::Array(items) = value else {
                return Err(ApiError::bad_request("User IDs is not a list"));
            };
            let mut ids = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let id = item.as_u64().ok_or_else(|| {
                    ApiError::bad_request(format!("User IDs[{i}] is not an integer"))
                })?;
                let user = state
                    .users
                    .get(UserId(id))
                    .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID: {id}")))?;
                if !user.is_active {
                    return Err(ApiError::bad_request(format!(
                        "User with ID {id} is deactivated"
                    )));
                }
                if user.is_bot() {
                    return Err(ApiError::bad_request(format!("User with ID {id} is a bot")));
                }
                ids.push(id);
            }
            Ok(serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into()))
        }
        _ => limited(MAX_SHORT_VALUE_LENGTH),
    }
}

/// `YYYY-MM-DD` naming a real day.
fn is_iso_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return false;
    }
    let (Ok(y), Ok(m), Ok(d)) = (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>()) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    y >= 1 && (1..=days).contains(&d)
}

/// The events setting `target`'s values. `by_admin`: an administrator editing someone's
/// profile (`PATCH /users/{id}`), who may set fields users cannot edit and removes a value by
/// sending null or an empty value. Unchanged values produce no event.
pub fn value_events(
    state: &Projections,
    me: &User,
    target: UserId,
    items: Vec<ValueChange>,
    by_admin: bool,
) -> ApiResult<Vec<Event>> {
    let mut events = Vec::new();
    for item in items {
        let field = field(state, item.field_id)?;
        if !by_admin && !field.spec.editable_by_user && !me.role.is_admin() {
            return Err(ApiError::bad_request(
                "You are not allowed to change this field. Contact an administrator to update it.",
            ));
        }
        // Null clears a value for everyone; an administrator's empty value does too.
        let removes = match &item.value {
            Value::Null => true,
            Value::String(s) => by_admin && s.is_empty(),
            Value::Array(a) => by_admin && a.is_empty(),
            _ => false,
        };
        let current = state
            .profile_fields
            .values_of(target)
            .and_then(|v| v.get(&item.field_id));
        if removes {
            if current.is_some() {
                events.push(Event::ProfileDataSet {
                    user_id: target,
                    field_id: item.field_id,
                    value: None,
                    rendered_value: None,
                });
            }
            continue;
        }
        let value = check_value(state, field, &item.value)?;
        if current.is_some_and(|c| c.value == value) {
            continue;
        }
        let rendered_value = matches!(field.spec.field_type, SHORT_TEXT | LONG_TEXT)
            .then(|| render_message(&value, &OrgResolver(state)).html);
        events.push(Event::ProfileDataSet {
            user_id: target,
            field_id: item.field_id,
            value: Some(value),
            rendered_value,
        });
    }
    Ok(events)
}

/// `PATCH /users/me/profile_data`: the caller's own values (humans only).
pub fn set_values(
    state: &Projections,
    ctx: &Ctx,
    target: UserId,
    items: Vec<ValueChange>,
) -> ApiResult<Decision> {
    let me = human(state, ctx)?;
    Ok(Decision::events(value_events(
        state, me, target, items, false,
    )?))
}

/// `DELETE /users/me/profile_data`: removes the caller's values for these fields.
pub fn remove_values(state: &Projections, ctx: &Ctx, ids: Vec<u64>) -> ApiResult<Decision> {
    let me = human(state, ctx)?;
    let mut events = Vec::new();
    for id in ids.into_iter().map(FieldId) {
        let field = field(state, id)?;
        if !field.spec.editable_by_user && !me.role.is_admin() {
            return Err(ApiError::bad_request(
                "You are not allowed to change this field. Contact an administrator to update it.",
            ));
        }
        let has = state
            .profile_fields
            .values_of(me.user_id)
            .is_some_and(|v| v.contains_key(&id));
        if has {
            events.push(Event::ProfileDataSet {
                user_id: me.user_id,
                field_id: id,
                value: None,
                rendered_value: None,
            });
        }
    }
    Ok(Decision::events(events))
}

fn human<'a>(state: &'a Projections, ctx: &Ctx) -> ApiResult<&'a User> {
    let me = actor(state, ctx)?;
    if me.is_bot() {
        return Err(ApiError::bad_request(
            "This endpoint does not accept bot requests.",
        ));
    }
    Ok(me)
}

#[cfg(test)]
mod tests {
    use super::is_iso_date;

    #[test]
    fn dates_are_real_iso_days() {
        assert!(is_iso_date("2024-02-29"));
        assert!(!is_iso_date("2023-02-29"));
        assert!(!is_iso_date("2024-13-01"));
        assert!(!is_iso_date("2024-1-01"));
        assert!(!is_iso_date("01/02/2024"));
        assert!(!is_iso_date("0000-01-01"));
    }
}

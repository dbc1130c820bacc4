//! Organization-wide data as clients see it: realm settings, custom emoji, linkifiers and
//! custom profile fields (`/register`, their `GET` endpoints and their events).

use crate::events::ProfileFieldData;
use crate::events::RealmValue;
use crate::ids::UserId;
use crate::projections::emoji::{source_url, still_url};
use crate::projections::profile_fields::Field;
use crate::projections::realm::Kind;
use crate::projections::Projections;
use crate::render::groups::render_group_setting;
use serde_json::{json, Map, Value};

/// Every custom emoji, deactivated ones included, keyed by id: `GET /realm/emoji`, `/register`'s
/// `realm_emoji` and the `realm_emoji` event.
pub fn realm_emoji_json(state: &Projections) -> Value {
    let all: Map<String, Value> = state
        .custom_emoji
        .iter()
        .map(|e| {
            (
                e.id.0.to_string(),
                json!({
                    "id": e.id.0.to_string(),
                    "name": e.name,
                    "source_url": source_url(e),
                    "still_url": e.animated.then(|| still_url(e)),
                    "deactivated": e.deactivated,
                    "author_id": e.author_id.map(|a| a.0),
                }),
            )
        })
        .collect();
    Value::Object(all)
}

/// The allowed email domains: `GET /realm/domains` and `/register`'s `realm_domains`.
pub fn domains_json(state: &Projections) -> Value {
    Value::Array(
        state
            .realm
            .domains
            .iter()
            .map(|(domain, allow)| json!({"domain": domain, "allow_subdomains": allow}))
            .collect(),
    )
}

/// `realm_playgrounds`: every code playground, by id.
pub fn playgrounds_json(state: &Projections) -> Value {
    json!(state.realm.playgrounds.values().collect::<Vec<_>>())
}

/// `field_data` as Zulip sends it: JSON text (`""` for types without data).
fn field_data_text(data: &ProfileFieldData) -> String {
    match data {
        ProfileFieldData::None => String::new(),
        ProfileFieldData::Choices(choices) => {
            let map: Map<String, Value> = choices
                .iter()
                .map(|(k, c)| (k.clone(), json!({"text": c.text, "order": c.order})))
                .collect();
            Value::Object(map).to_string()
        }
        ProfileFieldData::ExternalAccount {
            subtype,
            url_pattern,
        } => {
            let mut map = Map::new();
            map.insert("subtype".into(), json!(subtype));
            if let Some(pattern) = url_pattern {
                map.insert("url_pattern".into(), json!(pattern));
            }
            Value::Object(map).to_string()
        }
    }
}

/// A field as `GET /realm/profile_fields`, `/register` and `custom_profile_fields` events show it.
pub fn field_json(field: &Field) -> Value {
    let spec = &field.spec;
    let mut map = Map::new();
    map.insert("id".into(), json!(field.id.0));
    map.insert("name".into(), json!(spec.name));
    map.insert("type".into(), json!(spec.field_type));
    map.insert("hint".into(), json!(spec.hint));
    map.insert(
        "field_data".into(),
        json!(field_data_text(&spec.field_data)),
    );
    map.insert("order".into(), json!(field.order));
    map.insert("required".into(), json!(spec.required));
    map.insert("editable_by_user".into(), json!(spec.editable_by_user));
    if spec.display_in_profile_summary {
        map.insert("display_in_profile_summary".into(), json!(true));
    }
    if spec.use_for_user_matching {
        map.insert("use_for_user_matching".into(), json!(true));
    }
    Value::Object(map)
}

/// Every field, in the organization's order.
pub fn fields_json(state: &Projections) -> Value {
    Value::Array(
        state
            .profile_fields
            .ordered()
            .into_iter()
            .map(field_json)
            .collect(),
    )
}

/// A user's `profile_data`: field id (as text) → `{value, rendered_value?}`.
pub fn profile_data_json(state: &Projections, user: UserId) -> Value {
    let mut map = Map::new();
    for (id, value) in state.profile_fields.values_of(user).into_iter().flatten() {
        let mut entry = json!({"value": value.value});
        if let Some(html) = &value.rendered_value {
            entry["rendered_value"] = json!(html);
        }
        map.insert(id.0.to_string(), entry);
    }
    Value::Object(map)
}

/// Every linkifier, in order, as `GET /realm/linkifiers`, `/register` and `realm_linkifiers`
/// events show them.
pub fn linkifiers_json(state: &Projections) -> Value {
    Value::Array(
        state
            .linkifiers
            .ordered()
            .into_iter()
            .map(|l| {
                json!({
                    "pattern": l.spec.pattern,
                    "url_template": l.spec.url_template,
                    "id": l.id.0,
                    "example_input": l.spec.example_input,
                    "reverse_template": l.spec.reverse_template,
                    "alternative_url_templates": l.spec.alternative_url_templates,
                })
            })
            .collect(),
    )
}

/// A setting's value as `/register` and `realm` events carry it.
pub fn realm_setting_json(state: &Projections, name: &str) -> Value {
    match state.realm.value(name) {
        RealmValue::Bool(b) => json!(b),
        RealmValue::Int(n) => json!(n),
        RealmValue::Null => match crate::projections::realm::setting(name).map(|s| s.kind) {
            Some(Kind::Group { .. }) => render_group_setting(&state.realm_permission(name)),
            _ => Value::Null,
        },
        RealmValue::Text(t) => json!(t),
        RealmValue::Group(setting) => render_group_setting(&setting),
    }
}

/// The data exports, as `GET /export/realm` and the `realm_export` event list them.
pub fn exports_json(state: &Projections, site: &super::Site) -> serde_json::Value {
    serde_json::Value::Array(
        state
            .realm
            .exports
            .values()
            .map(|e| {
                serde_json::json!({
                    "id": e.id,
                    "export_time": e.export_time_ms as f64 / 1000.0,
                    "acting_user_id": e.acting_user_id.map(|u| u.0),
                    "export_url": e.deleted_ms.is_none()
                        .then(|| format!("{}/user_uploads/{}", site.realm_url, e.path_id)),
                    "deleted_timestamp": e.deleted_ms.map(|t| t as f64 / 1000.0),
                    "failed_timestamp": null,
                    "pending": false,
                    "export_type": e.export_type,
                })
            })
            .collect(),
    )
}

/// Where one of the organization's pictures is served, with the uploaded one's version in the
/// address (a new picture is a new URL), and Zulip's letter for where it comes from: `U`
/// uploaded, else `G` for the icon (generated, where Zulip's is Gravatar's) and `D` (default)
/// for the logos.
pub fn image_json(
    state: &Projections,
    site: &super::Site,
    image: crate::events::RealmImage,
) -> (String, &'static str) {
    use crate::events::RealmImage;
    let path = match image {
        RealmImage::Icon => "/avatar/realm",
        RealmImage::Logo => "/avatar/realm/logo",
        RealmImage::NightLogo => "/avatar/realm/night_logo",
    };
    match state.realm.image(image) {
        Some(sha256) => (
            format!(
                "{}{path}?version={}",
                site.realm_url,
                &sha256[..sha256.len().min(12)]
            ),
            "U",
        ),
        None => (
            format!("{}{path}", site.realm_url),
            if image == RealmImage::Icon { "G" } else { "D" },
        ),
    }
}

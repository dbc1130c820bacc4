//! Organization-wide events: settings, custom emoji, linkifiers, profile field definitions and
//! invitations.

use super::audience::{active, to_all};
use super::event::Deliveries;
use crate::ids::InviteId;
use crate::projections::realm::{self, ClientEvent as SettingEvent};
use crate::projections::Projections;
use crate::render::realm::{fields_json, linkifiers_json, realm_emoji_json, realm_setting_json};
use serde_json::json;

/// `realm_emoji` `update`: the whole set, as Zulip sends it.
pub fn emoji_changed(state: &Projections) -> Deliveries {
    to_all(
        state,
        json!({"type": "realm_emoji", "op": "update", "realm_emoji": realm_emoji_json(state)}),
    )
}

/// `realm_linkifiers`: the whole list.
pub fn linkifiers_changed(state: &Projections) -> Deliveries {
    to_all(
        state,
        json!({"type": "realm_linkifiers", "realm_linkifiers": linkifiers_json(state)}),
    )
}

/// `realm_domains` `add` or `change`: the domain as it is now.
pub fn domain_changed(state: &Projections, op: &str, domain: &str, allow: bool) -> Deliveries {
    to_all(
        state,
        json!({"type": "realm_domains", "op": op,
               "realm_domain": {"domain": domain, "allow_subdomains": allow}}),
    )
}

/// `realm_domains` `remove`.
pub fn domain_removed(state: &Projections, domain: &str) -> Deliveries {
    to_all(
        state,
        json!({"type": "realm_domains", "op": "remove", "domain": domain}),
    )
}

/// `realm_playgrounds`: every code playground, to everyone.
pub fn playgrounds_changed(state: &Projections) -> Deliveries {
    to_all(
        state,
        json!({"type": "realm_playgrounds",
               "realm_playgrounds": crate::render::realm::playgrounds_json(state)}),
    )
}

/// `realm_user_settings_defaults` `update`: a default for people who join later.
pub fn user_default_changed(
    state: &Projections,
    name: &str,
    value: &crate::events::RealmValue,
) -> Deliveries {
    to_all(
        state,
        json!({"type": "realm_user_settings_defaults", "op": "update", "property": name,
               "value": crate::projections::user_settings::value_json(value)}),
    )
}

/// `realm` `update_dict` of `icon`, `logo` or `night_logo`: the picture's URL and source.
pub fn image_changed(
    state: &Projections,
    site: &crate::render::Site,
    image: crate::events::RealmImage,
) -> Deliveries {
    use crate::events::RealmImage;
    let (url, source) = crate::render::realm::image_json(state, site, image);
    let (property, data) = match image {
        RealmImage::Icon => ("icon", json!({"icon_url": url, "icon_source": source})),
        RealmImage::Logo => ("logo", json!({"logo_url": url, "logo_source": source})),
        RealmImage::NightLogo => (
            "night_logo",
            json!({"night_logo_url": url, "night_logo_source": source}),
        ),
    };
    to_all(
        state,
        json!({"type": "realm", "op": "update_dict", "property": property, "data": data}),
    )
}

/// `default_stream_groups`: every default channel group, to everyone but guests (as Zulip,
/// which offers them to people joining, not to guests).
pub fn default_channel_groups_changed(state: &Projections) -> Deliveries {
    let event = json!({"type": "default_stream_groups",
                       "default_stream_groups": crate::render::channels::default_groups_json(state)});
    active(state)
        .filter(|u| u.role != crate::events::Role::Guest)
        .map(|u| (u.user_id, event.clone()))
        .collect()
}

/// `custom_profile_fields`: every definition.
pub fn profile_fields_changed(state: &Projections) -> Deliveries {
    to_all(
        state,
        json!({"type": "custom_profile_fields", "fields": fields_json(state)}),
    )
}

/// `realm` `update`, or `update_dict` for the settings Zulip sends that way.
pub fn setting_changed(state: &Projections, name: &str) -> Deliveries {
    let value = realm_setting_json(state, name);
    let event = match realm::setting(name).map(|s| s.event) {
        Some(SettingEvent::UpdateDict) => {
            json!({"type": "realm", "op": "update_dict", "property": "default", "data": {name: value}})
        }
        _ => json!({"type": "realm", "op": "update", "property": name, "value": value}),
    };
    to_all(state, event)
}

/// `invites_changed`, for those who manage invitations: administrators, and the inviter.
pub fn invitations_changed(state: &Projections, invite_id: InviteId) -> Deliveries {
    let inviter = state.invitations.get(invite_id).and_then(|i| i.invited_by);
    active(state)
        .filter(|u| u.role.is_admin() || Some(u.user_id) == inviter)
        .map(|u| (u.user_id, json!({"type": "invites_changed"})))
        .collect()
}

/// `realm_export`: every export, to the administrators (who alone may export).
pub fn exports_changed(state: &Projections, site: &crate::render::Site) -> Deliveries {
    let exports = crate::render::realm::exports_json(state, site);
    active(state)
        .filter(|u| u.role.is_admin())
        .map(|u| {
            (
                u.user_id,
                json!({"type": "realm_export", "exports": exports}),
            )
        })
        .collect()
}

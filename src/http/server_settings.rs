//! `GET /server_settings` (no authentication): what a client needs before logging in.

use super::{AppState, Params};
use crate::error::ApiResult;
use crate::markdown::render_description;
use actix_web::{web, HttpResponse};
use serde_json::json;

pub use crate::render::{ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION};

pub async fn get_server_settings(
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let (name, description) = state
        .engine
        .read(|s| (s.realm.name.clone(), s.realm.description.clone()));
    let url = &state.site.realm_url;
    let methods = &state.site.sign_in;
    Ok(params.success(json!({
        "authentication_methods": {
            "password": methods.password(), "dev": false, "email": methods.email,
            "ldap": methods.ldap,
            "remoteuser": false, "github": false, "azuread": false, "gitlab": false,
            "apple": false, "google": false, "saml": methods.saml(), "openid connect": methods.oidc(),
        },
        "external_authentication_methods": methods.external,
        "zulip_version": ZULIP_VERSION,
        "zulip_merge_base": ZULIP_MERGE_BASE,
        "zulip_feature_level": ZULIP_FEATURE_LEVEL,
        "push_notifications_enabled": state.push.is_some(),
        "is_incompatible": false,
        "email_auth_enabled": methods.email,
        "require_email_format_usernames": methods.email_usernames(),
        "realm_url": url,
        "realm_uri": url,
        "realm_name": name,
        "realm_icon": state.engine.read(|s| {
            crate::render::realm::image_json(s, &state.site, crate::events::RealmImage::Icon).0
        }),
        "realm_description": render_description(&description),
        "realm_web_public_access_enabled": false,
    })))
}

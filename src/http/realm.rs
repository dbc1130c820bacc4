//! `PATCH /realm`: organization settings (administrators; some settings owners only).

use super::channels::permission_changes;
use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult};
use crate::events::RealmValue;
use crate::projections::realm::{Kind, SETTINGS};
use crate::render::realm::realm_setting_json;
use actix_web::{web, HttpResponse};
use serde_json::{json, Map, Value};

/// Reads one setting's new value in the form its kind asks for.
fn parse_value(params: &mut Params, name: &'static str, kind: Kind) -> ApiResult<RealmValue> {
    let raw = |params: &mut Params| params.str(name).unwrap_or_default();
    Ok(match kind {
        Kind::Bool => RealmValue::Bool(params.bool(name)?.unwrap_or_default()),
        Kind::Text { max, blank } => {
            let text = raw(params).trim().to_owned();
            if text.is_empty() && !blank {
                return Err(ApiError::bad_request(format!("{name} cannot be blank")));
            }
            if text.chars().count() > max {
                return Err(ApiError::bad_request(format!(
                    "{name} is too long (limit: {max} characters)"
                )));
            }
            RealmValue::Text(text)
        }
        Kind::Choice(options) => {
            let text = raw(params);
            if !options.contains(&text.as_str()) {
                return Err(ApiError::invalid(name, &text));
            }
            RealmValue::Text(text)
        }
        Kind::Limit => {
            // An integer, or "unlimited" (sent as JSON text or bare).
            let text = raw(params);
            match text.trim().trim_matches('"') {
                "unlimited" => RealmValue::Null,
                number => match number.parse::<i64>() {
                    Ok(secs) if secs > 0 => RealmValue::Int(secs),
                    _ => return Err(ApiError::invalid(name, &text)),
                },
            }
        }
        Kind::Channel => RealmValue::Int(params.int::<i64>(name)?.unwrap_or(-1)),
        Kind::RetentionDays => {
            let text = raw(params);
            match text.trim().trim_matches('"') {
                "unlimited" => RealmValue::Int(-1),
                number => match number.parse::<i64>() {
                    Ok(days) if days > 0 => RealmValue::Int(days),
                    _ => return Err(ApiError::invalid(name, &text)),
                },
            }
        }
        Kind::Url => {
            let text = raw(params);
            let text = text.trim().trim_matches('"');
            if text == "default" {
                RealmValue::Null
            } else if (text.starts_with("https://") || text.starts_with("http://"))
                && text.len() <= 200
                && !text.chars().any(char::is_whitespace)
            {
                RealmValue::Text(text.to_owned())
            } else {
                return Err(ApiError::bad_request(format!(
                    "{name} is not an allowed_type"
                )));
            }
        }
        Kind::Code(codes) => {
            let code = params.int::<i64>(name)?.unwrap_or_default();
            if !codes.contains(&code) {
                return Err(ApiError::invalid(name, &code.to_string()));
            }
            RealmValue::Int(code)
        }
        Kind::Group { .. } => {
            return Err(ApiError::internal("group settings are read as changes"));
        }
    })
}

/// `PATCH /realm`: every setting of `projections::realm::SETTINGS` the request names. The
/// answer lists what changed, text values as `"updated"` (as Zulip does).
pub async fn update_realm(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let mut changes: Vec<(&'static str, RealmValue)> = Vec::new();
    for setting in SETTINGS {
        if let Kind::Group { .. } = setting.kind {
            let found = state.engine.read(|s| {
                permission_changes(&mut params, &[setting.name], |n| {
                    Some(s.realm_permission(n))
                })
            })?;
            changes.extend(
                found
                    .into_iter()
                    .map(|(_, value)| (setting.name, RealmValue::Group(value))),
            );
        } else if params.has(setting.name) {
            let value = parse_value(&mut params, setting.name, setting.kind)?;
            if let ("video_chat_provider", RealmValue::Int(id)) = (setting.name, &value) {
                if !state.site.video.providers().iter().any(|p| p.2 == *id) {
                    return Err(ApiError::bad_request(format!(
                        "Invalid video_chat_provider {id}"
                    )));
                }
            }
            changes.push((setting.name, value));
        }
    }
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::realm::update_realm(s, ctx, changes.clone())
        })
        .await?;
    let body = state.engine.read(|s| {
        let mut body = Map::new();
        for name in &committed.value {
            let value = match s.realm.value(name) {
                RealmValue::Text(_) => json!("updated"),
                _ => realm_setting_json(s, name),
            };
            body.insert((*name).to_owned(), value);
        }
        Value::Object(body)
    });
    Ok(params.success(body))
}

/// `PATCH /realm/user_settings_defaults`: the organization's defaults of the personal settings
/// it may choose for people who join later (the others, as every unknown parameter, are listed
/// in `ignored_parameters_unsupported`).
pub async fn update_user_settings_defaults(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let changes = super::users::read_user_settings(
        &mut params,
        crate::projections::user_settings::has_realm_default,
    )?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::realm::update_user_defaults(s, ctx, changes.clone())
        })
        .await
}

/// `POST /realm/test_welcome_bot_custom_message`: Welcome Bot sends the administrator the note
/// `welcome_message_custom_text` as new accounts would get it.
pub async fn test_welcome_bot_custom_message(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let text = params.required_str("welcome_message_custom_text")?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::users::test_welcome_note(s, ctx, &text)
        })
        .await?;
    Ok(params.success(json!({ "message_id": committed.value.0 })))
}

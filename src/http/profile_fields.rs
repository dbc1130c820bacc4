//! Custom profile fields: `GET|POST|PATCH /realm/profile_fields`,
//! `PATCH|DELETE /realm/profile_fields/{field_id}`, `PATCH|DELETE /users/me/profile_data`, and
//! their wire shapes.

use super::{path_id, AppState, Auth, Params};
use crate::commands::profile_fields::{parse_field_data, FieldChange, ValueChange};
use crate::error::{ApiError, ApiResult};
use crate::ids::FieldId;
use crate::render::realm::fields_json;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

/// `GET /realm/profile_fields`.
pub async fn get_profile_fields(
    state: web::Data<AppState>,
    _auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let fields = state.engine.read(fields_json);
    Ok(params.success(json!({ "custom_fields": fields })))
}

/// The definition parameters shared by creation and change.
fn read_change(params: &mut Params, field_type: u8) -> ApiResult<FieldChange> {
    Ok(FieldChange {
        name: params.str("name"),
        hint: params.str("hint"),
        field_data: parse_field_data(params.json("field_data")?, field_type)?,
        display_in_profile_summary: params.bool("display_in_profile_summary")?,
        required: params.bool("required")?,
        editable_by_user: params.bool("editable_by_user")?,
        use_for_user_matching: params.bool("use_for_user_matching")?,
    })
}

/// `POST /realm/profile_fields` (administrators).
pub async fn create_profile_field(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let field_type = params.required_int::<u8>("field_type")?;
    let change = read_change(&mut params, field_type)?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::profile_fields::create_field(s, ctx, field_type, change.clone())
        })
        .await?;
    Ok(params.success(json!({"id": committed.value.0})))
}

/// `PATCH /realm/profile_fields/{field_id}` (administrators).
pub async fn update_profile_field(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let id = FieldId(path_id(&req, "field_id")?);
    let field_type = state
        .engine
        .read(|s| s.profile_fields.get(id).map(|f| f.spec.field_type))
        .unwrap_or(0);
    let change = read_change(&mut params, field_type)?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::profile_fields::update_field(s, ctx, id, change.clone())
        })
        .await
}

/// `DELETE /realm/profile_fields/{field_id}` (administrators).
pub async fn delete_profile_field(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let id = FieldId(path_id(&req, "field_id")?);
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::profile_fields::delete_field(s, ctx, id)
        })
        .await
}

/// `PATCH /realm/profile_fields` (administrators): `order`, every field id.
pub async fn reorder_profile_fields(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let order: Vec<u64> = params
        .json("order")?
        .ok_or_else(|| ApiError::missing("order"))?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::profile_fields::reorder_fields(s, ctx, order.clone())
        })
        .await
}

/// `{id, value}` items as `PATCH /users/me/profile_data` and `PATCH /users/{id}` send them.
pub fn parse_profile_data(params: &mut Params, name: &str) -> ApiResult<Option<Vec<ValueChange>>> {
    let Some(items) = params.json::<Vec<Value>>(name)? else {
        return Ok(None);
    };
    items
        .into_iter()
        .map(|item| {
            let id = item
                .get("id")
                .and_then(Value::as_u64)
                .ok_or_else(|| ApiError::bad_request(format!("{name}[\"id\"] is missing")))?;
            let value = item
                .get("value")
                .cloned()
                .ok_or_else(|| ApiError::bad_request(format!("{name}[\"value\"] is missing")))?;
            Ok(ValueChange {
                field_id: FieldId(id),
                value,
            })
        })
        .collect::<ApiResult<Vec<_>>>()
        .map(Some)
}

/// `PATCH /users/me/profile_data`: the caller's own values.
pub async fn update_own_profile_data(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let data = parse_profile_data(&mut params, "data")?.ok_or_else(|| ApiError::missing("data"))?;
    let me = auth.user_id;
    state
        .engine
        .execute(Some(me), move |s, ctx| {
            crate::commands::profile_fields::set_values(s, ctx, me, data.clone())
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `DELETE /users/me/profile_data`: removes the caller's values for the listed field ids.
pub async fn delete_own_profile_data(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let ids: Vec<u64> = params
        .json("data")?
        .ok_or_else(|| ApiError::missing("data"))?;
    let me = auth.user_id;
    state
        .engine
        .execute(Some(me), move |s, ctx| {
            crate::commands::profile_fields::remove_values(s, ctx, ids.clone())
        })
        .await?;
    Ok(params.success(json!({})))
}

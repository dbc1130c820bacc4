//! User groups: `GET /user_groups`, `POST /user_groups/create`, `PATCH /user_groups/{id}`,
//! `POST /user_groups/{id}/members`, `POST /user_groups/{id}/subgroups`,
//! `GET /user_groups/{id}/members[/{user_id}]`, `GET /user_groups/{id}/subgroups`,
//! `POST /user_groups/{id}/deactivate`.

use super::channels::{group_ids, permission_changes};
use super::wire::parse_group_setting;
use super::{path_id, AppState, Auth, Params};
use crate::commands::groups::NewGroup;
use crate::commands::Decision;
use crate::error::{ApiError, ApiResult};
use crate::events::{GroupChange, GroupPermissions};
use crate::ids::{GroupId, UserId};
use crate::projections::{Group, Projections};
use crate::render::groups::group_json;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Guests and bots may not use the user-group endpoints.
fn refuse_guests(state: &Projections, auth: &Auth) -> ApiResult<()> {
    match state.users.get(auth.user_id) {
        Some(user) => crate::commands::groups::check_group_caller(user),
        None => Ok(()),
    }
}

fn group_id(req: &HttpRequest) -> ApiResult<GroupId> {
    path_id(req, "user_group_id").map(GroupId)
}

/// `GET /user_groups`.
pub async fn get_user_groups(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let include_deactivated = params.bool("include_deactivated_groups")?.unwrap_or(false);
    let groups = state.engine.read(|s| {
        refuse_guests(s, &auth)?;
        Ok::<_, ApiError>(
            s.groups
                .iter()
                .filter(|g| include_deactivated || !g.deactivated)
                .map(|g| group_json(s, g))
                .collect::<Vec<_>>(),
        )
    })?;
    Ok(params.success(json!({"user_groups": groups})))
}

/// `POST /user_groups/create`.
pub async fn create_user_group(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let name = params.required_str("name")?;
    let description = params.required_str("description")?;
    let members: Vec<u64> = params
        .json("members")?
        .ok_or_else(|| ApiError::missing("members"))?;
    let subgroups = group_ids(&mut params, "subgroups")?;
    let mut permissions = Vec::new();
    for setting in GroupPermissions::NAMES {
        if let Some(value) = params.json::<Value>(setting)? {
            permissions.push(((*setting).to_owned(), parse_group_setting(setting, &value)?));
        }
    }
    let new = NewGroup {
        name,
        description,
        members: members.into_iter().map(UserId).collect(),
        subgroups,
        permissions,
    };
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            crate::commands::groups::create_group(s, ctx, new.clone())
        })
        .await?;
    Ok(params.success(json!({"group_id": committed.value.0})))
}

/// `PATCH /user_groups/{user_group_id}`.
pub async fn update_user_group(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = group_id(&req)?;
    let current = state.engine.read(|s| {
        s.groups
            .get(id)
            .map(|g| g.permissions.clone())
            .ok_or_else(|| ApiError::bad_request("Invalid user group"))
    })?;
    let mut changes = Vec::new();
    if let Some(name) = params.str("name") {
        changes.push(GroupChange::Name(name));
    }
    if let Some(text) = params.str("description") {
        changes.push(GroupChange::Description(text));
    }
    for (setting, value) in permission_changes(&mut params, GroupPermissions::NAMES, |n| {
        current.get(n).cloned()
    })? {
        changes.push(GroupChange::Permission { setting, value });
    }
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::groups::change_group(s, ctx, id, changes.clone())
        })
        .await
}

/// `POST /user_groups/{user_group_id}/deactivate`.
pub async fn deactivate_user_group(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = group_id(&req)?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::groups::deactivate_group(s, ctx, id)
        })
        .await
}

/// `POST /user_groups/{user_group_id}/members` (also takes `add_subgroups`/`delete_subgroups`).
pub async fn update_user_group_members(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = group_id(&req)?;
    let ids = |p: &mut Params, name: &str| -> ApiResult<Vec<UserId>> {
        Ok(p.json::<Vec<u64>>(name)?
            .unwrap_or_default()
            .into_iter()
            .map(UserId)
            .collect())
    };
    let add = ids(&mut params, "add")?;
    let delete = ids(&mut params, "delete")?;
    let add_subgroups = group_ids(&mut params, "add_subgroups")?;
    let delete_subgroups = group_ids(&mut params, "delete_subgroups")?;
    state
        .answer(&auth, params, move |s, ctx| {
            let mut events = Vec::new();
            if !add.is_empty()
                || !delete.is_empty()
                || add_subgroups.is_empty() && delete_subgroups.is_empty()
            {
                events.extend(
                    crate::commands::groups::update_members(
                        s,
                        ctx,
                        id,
                        add.clone(),
                        delete.clone(),
                    )?
                    .events,
                );
            }
            if !add_subgroups.is_empty() || !delete_subgroups.is_empty() {
                events.extend(
                    crate::commands::groups::update_subgroups(
                        s,
                        ctx,
                        id,
                        add_subgroups.clone(),
                        delete_subgroups.clone(),
                    )?
                    .events,
                );
            }
            Ok(Decision::events(events))
        })
        .await
}

/// `POST /user_groups/{user_group_id}/subgroups`.
pub async fn update_user_group_subgroups(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = group_id(&req)?;
    let add = group_ids(&mut params, "add")?;
    let delete = group_ids(&mut params, "delete")?;
    state
        .answer(&auth, params, move |s, ctx| {
            crate::commands::groups::update_subgroups(s, ctx, id, add.clone(), delete.clone())
        })
        .await
}

/// Every member of a group: direct ones, and with `direct_member_only=false` those of its
/// subgroups too (the effective membership).
fn members_of(s: &Projections, group: &Group, direct_only: bool) -> BTreeSet<UserId> {
    if direct_only {
        s.groups.direct_members(group, &s.users)
    } else {
        s.users
            .iter()
            .filter(|u| s.groups.contains(&s.users, u.user_id, group.id))
            .map(|u| u.user_id)
            .collect()
    }
}

/// `GET /user_groups/{user_group_id}/members`.
pub async fn get_user_group_members(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = group_id(&req)?;
    let direct_only = params.bool("direct_member_only")?.unwrap_or(false);
    let members = state.engine.read(|s| {
        refuse_guests(s, &auth)?;
        let group = s
            .groups
            .get(id)
            .ok_or_else(|| ApiError::bad_request("Invalid user group"))?;
        Ok::<_, ApiError>(members_of(s, group, direct_only))
    })?;
    Ok(params.success(json!({"members": members})))
}

/// `GET /user_groups/{user_group_id}/members/{user_id}`.
pub async fn get_is_user_group_member(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = group_id(&req)?;
    let user = UserId(path_id(&req, "user_id")?);
    let direct_only = params.bool("direct_member_only")?.unwrap_or(false);
    let is_member = state.engine.read(|s| {
        refuse_guests(s, &auth)?;
        let group = s
            .groups
            .get(id)
            .ok_or_else(|| ApiError::bad_request("Invalid user group"))?;
        if s.users.get(user).is_none() {
            return Err(ApiError::bad_request("No such user"));
        }
        Ok(members_of(s, group, direct_only).contains(&user))
    })?;
    Ok(params.success(json!({"is_user_group_member": is_member})))
}

/// `GET /user_groups/{user_group_id}/subgroups`.
pub async fn get_user_group_subgroups(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = group_id(&req)?;
    let direct_only = params.bool("direct_subgroup_only")?.unwrap_or(false);
    let subgroups = state.engine.read(|s| {
        refuse_guests(s, &auth)?;
        let group = s
            .groups
            .get(id)
            .ok_or_else(|| ApiError::bad_request("Invalid user group"))?;
        let mut found: BTreeSet<GroupId> = BTreeSet::new();
        let mut stack: Vec<GroupId> = s.groups.direct_subgroups(group).into_iter().collect();
        while let Some(sub) = stack.pop() {
            if found.insert(sub) && !direct_only {
                if let Some(g) = s.groups.get(sub) {
                    stack.extend(s.groups.direct_subgroups(g));
                }
            }
        }
        Ok::<_, ApiError>(found)
    })?;
    Ok(params.success(json!({"subgroups": subgroups})))
}

//! Navigation views (`/navigation_views`): the views of the web app's left sidebar a user
//! pinned or unpinned, and custom views they named.

use super::{actor, Ctx, Decision};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::Event;
use crate::projections::Projections;

/// Zulip's built-in views, by fragment.
pub const BUILT_IN_VIEWS: &[&str] = &[
    "inbox",
    "recent",
    "feed",
    "drafts",
    "narrow/has/reaction/sender/me",
    "narrow/is/mentioned",
    "narrow/is/starred",
    "scheduled",
    "reminders",
];

fn no_such_view() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "Navigation view does not exist.")
}

fn check_name(
    state: &Projections,
    me: crate::ids::UserId,
    fragment: &str,
    name: Option<&str>,
) -> ApiResult<()> {
    let built_in = BUILT_IN_VIEWS.contains(&fragment);
    match name {
        Some(_) if built_in => Err(ApiError::bad_request(
            "Built-in views cannot have a custom name.",
        )),
        Some(name) if state.navigation_views.has_name(me, name) => {
            Err(ApiError::bad_request("Navigation view already exists."))
        }
        _ => Ok(()),
    }
}

/// `POST /navigation_views`. `fragment` and `name` come trimmed and non-blank.
pub fn add_view(
    state: &Projections,
    ctx: &Ctx,
    fragment: &str,
    is_pinned: bool,
    name: Option<&str>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    if !BUILT_IN_VIEWS.contains(&fragment) && name.is_none() {
        return Err(ApiError::bad_request(
            "Custom views must have a valid name.",
        ));
    }
    if state.navigation_views.get(me.user_id, fragment).is_some() {
        return Err(ApiError::bad_request("Navigation view already exists."));
    }
    check_name(state, me.user_id, fragment, name)?;
    Ok(Decision::events(vec![Event::NavigationViewAdded {
        user_id: me.user_id,
        fragment: fragment.to_owned(),
        is_pinned,
        name: name.map(str::to_owned),
    }]))
}

/// `PATCH /navigation_views/{fragment}`.
pub fn change_view(
    state: &Projections,
    ctx: &Ctx,
    fragment: &str,
    is_pinned: Option<bool>,
    name: Option<&str>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let view = state
        .navigation_views
        .get(me.user_id, fragment)
        .ok_or_else(no_such_view)?;
    if name.is_some() && view.name.as_deref() != name {
        check_name(state, me.user_id, fragment, name)?;
    }
    Ok(Decision::events(vec![Event::NavigationViewChanged {
        user_id: me.user_id,
        fragment: fragment.to_owned(),
        is_pinned,
        name: name.map(str::to_owned),
    }]))
}

/// `DELETE /navigation_views/{fragment}`.
pub fn remove_view(state: &Projections, ctx: &Ctx, fragment: &str) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    state
        .navigation_views
        .get(me.user_id, fragment)
        .ok_or_else(no_such_view)?;
    Ok(Decision::events(vec![Event::NavigationViewRemoved {
        user_id: me.user_id,
        fragment: fragment.to_owned(),
    }]))
}

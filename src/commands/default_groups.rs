//! Default channel groups (`/default_stream_groups`): named sets of channels that people who
//! join are offered together, managed by administrators, with Zulip's checks and messages.

use super::{admin, Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::Event;
use crate::ids::ChannelId;
use crate::projections::channels::DefaultGroup;
use crate::projections::Projections;

/// Zulip's `DefaultStreamGroup.MAX_NAME_LENGTH` and `MAX_DESCRIPTION_LENGTH`.
pub const MAX_NAME_LENGTH: usize = 60;
pub const MAX_DESCRIPTION_LENGTH: usize = 1024;

fn check_name(state: &Projections, name: &str, except: Option<u64>) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Invalid default channel group name '{name}'"
        )));
    }
    if name.chars().count() > MAX_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Default channel group name too long (limit: {MAX_NAME_LENGTH} characters)"
        )));
    }
    if name.contains('\0') {
        return Err(ApiError::bad_request(format!(
            "Default channel group name '{name}' contains NULL (0x00) characters."
        )));
    }
    if state
        .channels
        .default_groups()
        .any(|g| Some(g.id) != except && g.name.eq_ignore_ascii_case(name))
    {
        return Err(ApiError::bad_request(format!(
            "Default channel group '{name}' already exists"
        )));
    }
    Ok(name.to_owned())
}

fn check_description(text: &str) -> ApiResult<String> {
    if text.chars().count() > MAX_DESCRIPTION_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Default channel group description too long (limit: {MAX_DESCRIPTION_LENGTH} characters)"
        )));
    }
    Ok(text.to_owned())
}

/// The channels named, as a group may hold them: public, not archived, not a default channel
/// (those are joined anyway), each once.
fn check_channels(state: &Projections, group: &str, names: &[String]) -> ApiResult<Vec<ChannelId>> {
    let mut ids = Vec::new();
    for name in names {
        let channel = state
            .channels
            .by_name(name)
            .filter(|c| !c.is_archived && !c.invite_only)
            .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'")))?;
        if channel.is_default {
            return Err(ApiError::bad_request(format!(
                "'{}' is a default channel and cannot be added to '{group}'",
                channel.name
            )));
        }
        if !ids.contains(&channel.id) {
            ids.push(channel.id);
        }
    }
    Ok(ids)
}

fn saved(group: &DefaultGroup) -> Event {
    Event::DefaultChannelGroupSaved {
        group_id: group.id,
        name: group.name.clone(),
        description: group.description.clone(),
        channel_ids: group.channel_ids.clone(),
    }
}

fn existing(state: &Projections, group_id: u64) -> ApiResult<&DefaultGroup> {
    state.channels.default_group(group_id).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Default channel group with id '{group_id}' does not exist."
        ))
    })
}

/// `POST /default_stream_groups/create`.
pub fn create(
    state: &Projections,
    ctx: &Ctx,
    name: &str,
    description: &str,
    channels: &[String],
) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let name = check_name(state, name, None)?;
    let description = check_description(description)?;
    let channel_ids = check_channels(state, &name, channels)?;
    Ok(Decision::events(vec![saved(&DefaultGroup {
        id: state.channels.next_default_group_id(),
        name,
        description,
        channel_ids,
    })]))
}

/// `PATCH /default_stream_groups/{group_id}`: a new name and/or description.
pub fn change(
    state: &Projections,
    ctx: &Ctx,
    group_id: u64,
    new_name: Option<&str>,
    new_description: Option<&str>,
) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let mut group = existing(state, group_id)?.clone();
    if new_name.is_none() && new_description.is_none() {
        return Err(ApiError::bad_request(
            "You must pass \"new_description\" or \"new_group_name\".",
        ));
    }
    if let Some(name) = new_name {
        group.name = check_name(state, name, Some(group_id))?;
    }
    if let Some(description) = new_description {
        group.description = check_description(description)?;
    }
    Ok(Decision::events(vec![saved(&group)]))
}

/// `PATCH /default_stream_groups/{group_id}/streams`: `add` or `remove` channels.
pub fn change_channels(
    state: &Projections,
    ctx: &Ctx,
    group_id: u64,
    add: bool,
    channels: &[String],
) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let mut group = existing(state, group_id)?.clone();
    if add {
        for id in check_channels(state, &group.name, channels)? {
            if group.channel_ids.contains(&id) {
                let name = state.channels.get(id).map(|c| c.name.clone());
                return Err(ApiError::bad_request(format!(
                    "Channel '{}' is already present in default channel group '{}'",
                    name.unwrap_or_default(),
                    group.name
                )));
            }
            group.channel_ids.push(id);
        }
    } else {
        for name in channels {
            let channel = state
                .channels
                .by_name(name)
                .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'")))?;
            let Some(at) = group.channel_ids.iter().position(|id| *id == channel.id) else {
                return Err(ApiError::bad_request(format!(
                    "Channel '{}' is not present in default channel group '{}'",
                    channel.name, group.name
                )));
            };
            group.channel_ids.remove(at);
        }
    }
    Ok(Decision::events(vec![saved(&group)]))
}

/// `DELETE /default_stream_groups/{group_id}`.
pub fn remove(state: &Projections, ctx: &Ctx, group_id: u64) -> ApiResult<Decision> {
    admin(state, ctx)?;
    existing(state, group_id)?;
    Ok(Decision::events(vec![Event::DefaultChannelGroupRemoved {
        group_id,
    }]))
}

/// The groups holding `channel`, saved without it (a channel being archived leaves them).
pub fn without_channel(state: &Projections, channel: ChannelId) -> Vec<Event> {
    state
        .channels
        .default_groups()
        .filter(|g| g.channel_ids.contains(&channel))
        .map(|g| {
            let mut group = g.clone();
            group.channel_ids.retain(|id| *id != channel);
            saved(&group)
        })
        .collect()
}

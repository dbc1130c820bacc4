//! Client devices (`/register_client_device`, `/remove_client_device`): the devices a user's
//! clients registered, which push notifications are tied to once a push service is configured.

use super::{actor, Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, PushChange};
use crate::projections::Projections;

/// `POST /register_client_device`: a new device id for the caller's client.
pub fn register_device(state: &Projections, ctx: &Ctx) -> ApiResult<Decision<u64>> {
    let me = actor(state, ctx)?;
    let device_id = state.devices.next_id();
    Ok(Decision::new(
        vec![Event::ClientDeviceRegistered {
            user_id: me.user_id,
            device_id,
        }],
        device_id,
    ))
}

/// `POST /remove_client_device`: only the caller's own devices.
pub fn remove_device(state: &Projections, ctx: &Ctx, device_id: u64) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    if !state.devices.has(me.user_id, device_id) {
        return Err(ApiError::bad_request("Invalid `device_id`"));
    }
    Ok(Decision::events(vec![Event::ClientDeviceRemoved {
        user_id: me.user_id,
        device_id,
    }]))
}

/// What `POST /mobile_push/register` asks for a device.
#[derive(Debug, Clone)]
pub struct PushRegistration {
    pub device_id: u64,
    /// The key group: its id, and the key sealed under the server secret (checked and sealed
    /// by the caller, which holds the secret).
    pub key: Option<(u32, String)>,
    /// The token group.
    pub token: Option<TokenRequest>,
}

/// The token group of a push registration.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    pub token_kind: String,
    pub token_id: i64,
    pub encrypted_push_registration: String,
    pub bouncer_public_key: String,
}

/// `POST /mobile_push/register` (feature level 468), by Zulip's steps: a new key, a new token
/// to register with the push service (done in the background: `notify`), or both; repeats are
/// no-ops and a registration in progress is not started again.
pub fn register_push(
    state: &Projections,
    ctx: &Ctx,
    request: PushRegistration,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    if me.is_bot() {
        return Err(ApiError::bad_request(
            "This endpoint does not accept bot requests.",
        ));
    }
    let device_id = request.device_id;
    if !state.devices.has(me.user_id, device_id) {
        return Err(ApiError::bad_request("Invalid `device_id`"));
    }
    let current = state
        .devices
        .push(me.user_id, device_id)
        .cloned()
        .unwrap_or_default();
    let change = |change| Event::PushDeviceChanged {
        user_id: me.user_id,
        device_id,
        change,
    };
    let key_event = |(push_key_id, sealed_push_key): (u32, String)| {
        change(PushChange::KeySet {
            push_key_id,
            sealed_push_key,
        })
    };
    let token_event = |t: TokenRequest| {
        change(PushChange::TokenRequested {
            token_kind: t.token_kind,
            token_id: t.token_id,
            encrypted_push_registration: t.encrypted_push_registration,
            bouncer_public_key: t.bouncer_public_key,
        })
    };
    match (request.key, request.token) {
        (None, None) => Err(ApiError::bad_request(
            "Missing parameters: must provide either all push key fields, all token fields, or both.",
        )),
        (Some(key), None) => {
            if current.push_key_id.is_none() {
                return Err(ApiError::bad_request(
                    "No push registration exists to rotate key for.",
                ));
            }
            if current.push_key_id == Some(key.0) {
                return Ok(Decision::events(Vec::new()));
            }
            Ok(Decision::events(vec![key_event(key)]))
        }
        (key, Some(token)) => {
            if current.push_registration_error_code.is_none()
                && current.pending_push_token_id.is_some()
            {
                return Err(ApiError::bad_request(
                    "A registration for the device already in progress.",
                ));
            }
            let settled = current.push_registration_error_code.is_none()
                && current.push_token_id == Some(token.token_id)
                && current.token_kind.as_deref() == Some(token.token_kind.as_str());
            match key {
                None => {
                    if current.push_key_id.is_none() {
                        return Err(ApiError::bad_request(
                            "No push registration exists to rotate token for.",
                        ));
                    }
                    if settled {
                        return Ok(Decision::events(Vec::new()));
                    }
                    Ok(Decision::events(vec![token_event(token)]))
                }
                Some(key) => {
                    if settled && current.push_key_id == Some(key.0) {
                        return Ok(Decision::events(Vec::new()));
                    }
                    Ok(Decision::events(vec![key_event(key), token_event(token)]))
                }
            }
        }
    }
}

/// What the push service answered about a device's token registration.
pub fn registration_outcome(
    state: &Projections,
    user: crate::ids::UserId,
    device_id: u64,
    token_id: i64,
    refused: Option<&str>,
) -> ApiResult<Decision> {
    let pending = state.devices.push(user, device_id).is_some_and(|p| {
        p.pending_push_token_id == Some(token_id) && p.push_registration_error_code.is_none()
    });
    if !pending {
        return Ok(Decision::events(Vec::new()));
    }
    let change = match refused {
        None => PushChange::TokenAccepted { token_id },
        Some(code) => PushChange::TokenRefused {
            error_code: code.to_owned(),
        },
    };
    Ok(Decision::events(vec![Event::PushDeviceChanged {
        user_id: user,
        device_id,
        change,
    }]))
}

/// Tokens the push service no longer knows: every device of the organization that holds one
/// stops receiving pushes.
pub fn tokens_dropped(
    state: &Projections,
    user: crate::ids::UserId,
    token_ids: &[i64],
) -> ApiResult<Decision> {
    let events = state
        .devices
        .active_push(user)
        .filter(|(_, p)| p.push_token_id.is_some_and(|t| token_ids.contains(&t)))
        .map(|(device_id, p)| Event::PushDeviceChanged {
            user_id: user,
            device_id,
            change: PushChange::TokenDropped {
                token_id: p.push_token_id.unwrap_or_default(),
            },
        })
        .collect();
    Ok(Decision::events(events))
}

//! Client devices (`/register_client_device`, `/remove_client_device`): the devices a user's
//! clients registered, which push notifications are tied to once a push service is configured.

use super::{actor, Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::Event;
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

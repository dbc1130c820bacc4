//! Owner/administrator inspection: `GET /admin/projections[?at_seq=N]` and
//! `GET /admin/events?after_seq=N&limit=M`. These two read the log (that is their job); every
//! other read is answered from the projections.

use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult};
use crate::ids::Seq;
use crate::projections::Projections;
use crate::store::read_envelopes;
use crate::time::iso8601_ms;
use actix_web::{web, HttpResponse};
use serde_json::json;

/// Most events one listing returns.
pub const MAX_EVENTS_LIMIT: usize = 1000;

/// `GET /admin/projections`: the projection dump, now or as of event `at_seq`.
pub async fn get_projections(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let at_seq: Option<u64> = params.int("at_seq")?;
    let current = state.engine.read(|s| s.seq);
    let dump = match at_seq {
        None => state.engine.read(Projections::dump),
        Some(n) if n > current.0 => {
            return Err(ApiError::bad_request(format!(
                "at_seq {n} is beyond the last event ({current})"
            ))
            .with("var_name", "at_seq"))
        }
        Some(n) => {
            let log = state.engine.log().clone();
            web::block(move || Projections::fold(log.as_ref(), Some(Seq(n)), |_| {}))
                .await
                .map_err(|e| ApiError::internal(format!("fold: {e}")))?
                .map_err(|e| ApiError::internal(format!("fold: {e}")))?
                .dump()
        }
    };
    Ok(params.success(json!({"projections": dump})))
}

/// `GET /admin/events`: the log, oldest first, with every secret redacted.
pub async fn get_events(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let after: u64 = params.int("after_seq")?.unwrap_or(0);
    let limit: usize = params.int("limit")?.unwrap_or(100);
    if limit == 0 || limit > MAX_EVENTS_LIMIT {
        return Err(ApiError::bad_request(format!(
            "limit must be between 1 and {MAX_EVENTS_LIMIT}"
        ))
        .with("var_name", "limit"));
    }
    let last_seq = state.engine.read(|s| s.seq.0);
    let log = state.engine.log().clone();
    let events = web::block(move || {
        read_envelopes(log.as_ref(), Seq(after.saturating_add(1)))
            // Only what is applied: a batch being written right now is not listed yet.
            .take_while(|env| env.as_ref().map_or(true, |e| e.seq.0 <= last_seq))
            .take(limit)
            .map(|env| {
                env.map(|e| {
                    json!({
                        "seq": e.seq.0,
                        "time": iso8601_ms(e.at),
                        "actor": e.actor.map(|a| a.0),
                        "type": e.event.type_name(),
                        "schema_version": e.schema_version,
                        "payload": e.redacted_payload(),
                    })
                })
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .map_err(|e| ApiError::internal(format!("scan: {e}")))?
    .map_err(|e| ApiError::internal(format!("scan: {e}")))?;
    Ok(params.success(json!({"events": events, "last_seq": last_seq})))
}

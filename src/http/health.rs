//! `GET /health` and `GET /ready`, for load balancers, orchestrators and systemd: cheap, without
//! credentials, and outside the rate limits.
//!
//! - `/health` is 200 whenever the process answers at all (alive), starting or serving.
//! - `/ready` is 200 once the server serves: its state is loaded and, in a cluster, it has
//!   folded the stream to within [`READY_LAG`] events of its end; 503 before (with
//!   `Retry-After`), while the address is already taken and the log is being read, and 503
//!   `stale` while a node of a cluster cannot reach the stream.

use super::AppState;
use actix_web::{web, HttpResponse};
use serde_json::json;

/// How far behind the end of a cluster's stream a node may be and still take requests.
pub const READY_LAG: u64 = 1000;

fn health_answer() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(json!({"status": "alive"}))
}

fn not_ready(why: &str, extra: serde_json::Value) -> HttpResponse {
    let mut body = json!({"status": "starting", "reason": why});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    HttpResponse::ServiceUnavailable()
        .insert_header(("Retry-After", "1"))
        .insert_header(("Cache-Control", "no-store"))
        .json(body)
}

/// `GET /health`.
pub async fn health() -> HttpResponse {
    health_answer()
}

/// In a cluster, how far the stream has gone: a question to NATS, bounded in time (`None`
/// when it does not answer in time).
async fn stream_end(state: &AppState) -> Option<u64> {
    let log = state.engine.log().clone();
    let end = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        web::block(move || log.last_seq()),
    )
    .await;
    match end {
        Ok(Ok(Ok(end))) => Some(end.map_or(0, |s| s.0)),
        _ => None,
    }
}

/// Whether writes go through, for `/ready`: `writes` (`open`, `below_reserve`, `paused`,
/// `stopped`), what a refused write is told, and the data directory's free space.
fn writes_detail(state: &AppState) -> serde_json::Value {
    use crate::engine::Writes;
    let writes = state.engine.writes();
    let name = match &writes {
        Writes::Open => "open",
        Writes::BelowReserve { .. } => "below_reserve",
        Writes::Paused { .. } => "paused",
        Writes::Stopped { .. } => "stopped",
        Writes::Unreachable { .. } => "unreachable",
    };
    let mut detail = json!({"writes": name});
    if let Some(refusal) = writes.refusal() {
        detail["writes_refused_with"] = refusal.body();
    }
    if let Some(reserve) = state.engine.reserve() {
        detail["disk"] = json!({
            "available_bytes": reserve.space().available,
            "reserve_bytes": reserve.keep(),
        });
    }
    detail
}

fn ready_answer(mut body: serde_json::Value, state: &AppState) -> HttpResponse {
    if let (Some(body), Some(detail)) = (body.as_object_mut(), writes_detail(state).as_object()) {
        body.extend(detail.clone());
    }
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(body)
}

/// `GET /ready` on a serving server. Writes refused (a full disk, a storage failure) do not
/// make it 503, for reads go on: its body says so (`writes`). A node of a cluster that cannot
/// reach the stream is 503 `stale`, so that a load balancer sends clients to the others, but
/// still answers reads from what it has folded.
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let applied = state.engine.read(|s| s.seq.0);
    if state.cluster.is_none() {
        return ready_answer(json!({"status": "ready", "seq": applied}), &state);
    }
    let end = match state.engine.log().unreachable() {
        Some(_) => None,
        None => stream_end(&state).await,
    };
    match end {
        Some(end) => {
            let lag = end.saturating_sub(applied);
            if lag <= READY_LAG {
                ready_answer(
                    json!({"status": "ready", "seq": applied, "stream_seq": end, "lag": lag}),
                    &state,
                )
            } else {
                not_ready(
                    "catching up with the stream",
                    json!({"seq": applied, "stream_seq": end, "lag": lag}),
                )
            }
        }
        None => stale(&state, applied),
    }
}

/// The answer of a node that cannot reach its cluster's stream: 503, with what it serves.
fn stale(state: &AppState, applied: u64) -> HttpResponse {
    let mut body = json!({
        "status": "stale",
        "reason": "the cluster's stream cannot be reached: reads are answered from this node's \
                   state, which may be out of date, and writes are refused",
        "seq": applied,
    });
    if let Some(silent) = state.engine.log().unreachable() {
        body["unreachable_seconds"] = json!(silent.as_secs());
    }
    if let (Some(body), Some(detail)) = (body.as_object_mut(), writes_detail(state).as_object()) {
        body.extend(detail.clone());
    }
    HttpResponse::ServiceUnavailable()
        .insert_header(("Retry-After", "1"))
        .insert_header(("Cache-Control", "no-store"))
        .json(body)
}

/// What a scrape reads of the running server (`metrics::Sizes`).
async fn sizes(state: &AppState) -> crate::metrics::Sizes {
    // The writer sets it as its storage changes; a cluster's log going silent is seen here.
    crate::metrics::get()
        .writes_state
        .set(state.engine.writes().code());
    let (log_seq, people, channels, messages) = state.engine.read(|s| {
        (
            s.seq.0,
            s.users.len(),
            s.channels.iter().count(),
            s.messages.len(),
        )
    });
    let data_dir = state.data_dir.clone();
    let snapshot_age_seconds = web::block(move || {
        let (_, newest) = crate::snapshot::list(&data_dir).into_iter().last()?;
        let written = std::fs::metadata(newest).ok()?.modified().ok()?;
        Some(written.elapsed().map_or(0.0, |d| d.as_secs_f64()))
    })
    .await
    .ok()
    .flatten();
    let cluster = match &state.cluster {
        None => None,
        Some(cluster) => {
            let lag = stream_end(state)
                .await
                .map_or(0, |end| end.saturating_sub(log_seq));
            let writer = cluster.lease.holder().as_deref() == Some(cluster.lease.me());
            Some((lag, writer))
        }
    };
    crate::metrics::Sizes {
        log_seq,
        people,
        channels,
        messages,
        event_queues: state.queues.len(),
        snapshot_age_seconds,
        cluster,
    }
}

/// `GET /metrics` on the separate metrics address (`metrics.bind`): no credentials.
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let sizes = sizes(&state).await;
    HttpResponse::Ok()
        .content_type(crate::metrics::CONTENT_TYPE)
        .insert_header(("Cache-Control", "no-store"))
        .body(crate::metrics::get().render(&sizes))
}

/// `GET /metrics` on the main address: only with `Authorization: Bearer <metrics.token>`, and
/// only when a token is configured (404 otherwise, as if there were no such page).
pub async fn metrics_with_token(
    state: web::Data<AppState>,
    req: actix_web::HttpRequest,
) -> HttpResponse {
    use actix_web::ResponseError;
    let Some(token) = &state.metrics_token else {
        return crate::error::ApiError::not_found().error_response();
    };
    let given = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !crate::auth::constant_time_eq(given.as_bytes(), token.as_bytes()) {
        return HttpResponse::Unauthorized()
            .insert_header(("WWW-Authenticate", "Bearer realm=\"metrics\""))
            .json(json!({"result": "error", "msg": "A valid metrics token is required", "code": "UNAUTHORIZED"}));
    }
    metrics(state).await
}

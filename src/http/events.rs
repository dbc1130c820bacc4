//! Real-time API: `POST /register`, `GET /events`, `DELETE /events`.

use super::{AppState, Auth, Params};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::realtime::register::{initial_state, RegisterRequest};
use crate::realtime::{
    poll, Capabilities, PollError, QueueOptions, DEFAULT_QUEUE_LIFESPAN, MAX_QUEUE_LIFESPAN,
};
use crate::render::fields::Fields;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::time::Duration;

fn bad_queue(queue_id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::BadEventQueueId,
        format!("Bad event queue ID: {queue_id}"),
    )
    .with("queue_id", queue_id)
}

fn capabilities(map: &Map<String, Value>) -> Capabilities {
    let flag = |name: &str| map.get(name).and_then(Value::as_bool).unwrap_or(false);
    Capabilities {
        notification_settings_null: flag("notification_settings_null"),
        bulk_message_deletion: flag("bulk_message_deletion"),
        user_avatar_url_field_optional: flag("user_avatar_url_field_optional"),
        stream_typing_notifications: flag("stream_typing_notifications"),
        user_settings_object: flag("user_settings_object"),
        linkifier_url_template: flag("linkifier_url_template"),
        user_list_incomplete: flag("user_list_incomplete"),
        include_deactivated_groups: flag("include_deactivated_groups"),
        archived_channels: flag("archived_channels"),
        empty_topic_name: flag("empty_topic_name"),
        simplified_presence_events: flag("simplified_presence_events"),
    }
}

/// The queue options shared by `POST /register` and `GET /events` without a queue.
/// What `/register` reads besides the queue's options: the fetch types, `include_subscribers`
/// and the presence format.
struct FetchOptions {
    fetch_event_types: Option<BTreeSet<String>>,
    include_subscribers: bool,
    presence: crate::render::presence::PresenceQuery,
}

/// How long a queue lives unpolled: `idle_queue_timeout` (what the mobile app sends: `mobile`,
/// a week) or else the older `queue_lifespan_secs`; either as seconds, 0 for the default,
/// capped at a week.
fn queue_lifespan(idle: Option<&str>, secs: Option<i64>) -> ApiResult<Duration> {
    let (name, secs) = match idle.map(|t| t.trim().trim_matches('"')) {
        Some("mobile") => return Ok(MAX_QUEUE_LIFESPAN),
        Some(text) => match text.parse::<i64>() {
            Ok(secs) => ("idle_queue_timeout", secs),
            Err(_) => {
                return Err(ApiError::invalid(
                    "idle_queue_timeout",
                    idle.unwrap_or(text),
                ))
            }
        },
        None => ("queue_lifespan_secs", secs.unwrap_or(0)),
    };
    match secs {
        0 => Ok(DEFAULT_QUEUE_LIFESPAN),
        secs if secs < 0 => Err(ApiError::invalid(name, idle.unwrap_or(&secs.to_string()))),
        secs => Ok(Duration::from_secs(secs as u64).min(MAX_QUEUE_LIFESPAN)),
    }
}

fn queue_options(params: &mut Params) -> ApiResult<(QueueOptions, FetchOptions)> {
    let event_types: Option<BTreeSet<String>> = params.json("event_types")?;
    let fetch_event_types: Option<BTreeSet<String>> = params
        .json("fetch_event_types")?
        .or_else(|| event_types.clone());
    let include_subscribers = match params
        .str("include_subscribers")
        .as_deref()
        .map(|v| v.trim().trim_matches('"'))
    {
        None | Some("false") => false,
        Some("true") | Some("partial") => true,
        Some(other) => return Err(ApiError::invalid("include_subscribers", other)),
    };
    // A narrow limits which message events the queue takes (checked against the state below).
    let narrow = crate::narrow::parse_narrow(params.json("narrow")?)?;
    let caps: Map<String, Value> = params.json("client_capabilities")?.unwrap_or_default();
    let lifespan = queue_lifespan(
        params.str("idle_queue_timeout").as_deref(),
        params.int::<i64>("queue_lifespan_secs")?,
    )?;
    let options = QueueOptions {
        event_types,
        apply_markdown: params.bool("apply_markdown")?.unwrap_or(false),
        client_gravatar: params.bool("client_gravatar")?.unwrap_or(true),
        all_public_streams: params.bool("all_public_streams")?.unwrap_or(false),
        capabilities: capabilities(&caps),
        lifespan,
        narrow,
    };
    let presence = crate::render::presence::PresenceQuery {
        modern: params.bool("slim_presence")?.unwrap_or(false),
        after: None,
        history_days: params.int::<i64>("presence_history_limit_days")?,
    };
    Ok((
        options,
        FetchOptions {
            fetch_event_types,
            include_subscribers,
            presence,
        },
    ))
}

/// `POST /register`: a queue plus the initial state, taken at the same log position.
pub async fn register(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let (options, fetch) = queue_options(&mut params)?;
    if options.all_public_streams && auth.role == crate::events::Role::Guest {
        return Err(ApiError::bad_request("User not authorized for this query"));
    }
    // The answer (milliseconds for a large organization) is written on the blocking pool: on
    // an async worker it would hold up every other connection of that worker, such as the web
    // client's own files, which it fetches at the same moment. As many at once as there are
    // cores, as on the workers, so that a crowd re-registering after a restart neither holds
    // the read lock with hundreds of answers nor queues password checks behind them.
    let turn = register_turns()
        .acquire()
        .await
        .map_err(|_| ApiError::internal("register: no turn"))?;
    let (user_id, app) = (auth.user_id, state.clone());
    let body = web::block(move || {
        // Held until the answer is written, even if the client has gone meanwhile.
        let _turn = turn;
        app.engine.read(|s| {
            let me = s
                .users
                .get(user_id)
                .ok_or_else(|| ApiError::internal("user missing"))?;
            crate::narrow::check_narrow(s, me, &options.narrow)?;
            let request = RegisterRequest {
                fetch_event_types: fetch.fetch_event_types.as_ref(),
                include_subscribers: fetch.include_subscribers,
                capabilities: &options.capabilities,
                presence: &fetch.presence,
            };
            // Written under the read lock, with the queue registered in the same critical
            // section (see `realtime`). Large answers go straight to bytes.
            let capacity = REGISTER_SIZE.load(std::sync::atomic::Ordering::Relaxed);
            params.success_bytes(capacity, |answer| {
                initial_state(answer, s, &app.site, &app.secret, me, &request);
                let queue = app.queues.register(user_id, options.clone(), s.seq);
                answer.field("queue_id", &queue.id);
                answer.field("last_event_id", &queue.last_event_id());
            })
        })
    })
    .await
    .map_err(|e| ApiError::internal(format!("register: {e}")))??;
    let room = body.len().saturating_add(4096);
    REGISTER_SIZE.store(room.max(64 * 1024), std::sync::atomic::Ordering::Relaxed);
    Ok(crate::http::params::json_response(body))
}

/// Turns for writing `/register` answers: one per core.
fn register_turns() -> &'static tokio::sync::Semaphore {
    static TURNS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    TURNS.get_or_init(|| tokio::sync::Semaphore::new(crate::realtime::register::cores()))
}

/// Room for a `/register` answer before its buffer grows: the last answer's size and a little
/// more, so a large organization's answer is written into one allocation rather than grown
/// by copying (at least 64 KiB).
static REGISTER_SIZE: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(64 * 1024);

/// A heartbeat interval of 45 to 55 seconds, as Zulip's, unless the server was told otherwise.
fn heartbeat(state: &AppState) -> Duration {
    state.heartbeat.unwrap_or_else(|| {
        let jitter = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() % 10_000);
        Duration::from_millis(45_000 + u64::from(jitter))
    })
}

/// `GET /events`: long-polls a queue.
pub async fn get_events(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let dont_block = params.bool("dont_block")?.unwrap_or(false);
    let last_event_id: Option<i64> = params.int("last_event_id")?;
    let queue = match params.str("queue_id") {
        Some(id) => match state.queues.get(auth.user_id, &id) {
            Ok(queue) => queue,
            // In a cluster, another node's queue is polled there.
            Err(PollError::BadQueue) => match queue_home(&state, &id, &req).await {
                Some(home) => return ask_queue_home(&state, &req, &home, req.query_string()).await,
                None => return Err(bad_queue(&id)),
            },
        },
        None if dont_block => {
            // A queue created on the fly from register-style parameters.
            let (options, _) = queue_options(&mut params)?;
            let queue = state
                .engine
                .read(|s| state.queues.register(auth.user_id, options, s.seq));
            let events = poll(&queue, None, true, heartbeat(&state))
                .await
                .map_err(|PollError::BadQueue| bad_queue(&queue.id))?;
            return events_answer(&params, &events, Some(&queue.id));
        }
        None => return Err(ApiError::missing("queue_id")),
    };
    if let Some(last) = last_event_id {
        if last > queue.last_event_id() {
            return Err(ApiError::bad_request(format!(
                "Event {last} was not in this queue"
            )));
        }
    }
    let events = poll(&queue, last_event_id, dont_block, heartbeat(&state))
        .await
        .map_err(|PollError::BadQueue| bad_queue(&queue.id))?;
    events_answer(&params, &events, None)
}

/// `GET /events`' answer: the events as their queue holds them, JSON text, copied into it.
fn events_answer(
    params: &Params,
    events: &[std::sync::Arc<str>],
    queue_id: Option<&str>,
) -> ApiResult<HttpResponse> {
    let capacity = 64 + events.iter().map(|e| e.len() + 1).sum::<usize>();
    params.success_with(capacity, |o| {
        o.field_with("events", |b| b.array(events, |b, e| b.text(e.as_bytes())));
        if let Some(id) = queue_id {
            o.field("queue_id", id);
        }
    })
}

/// `DELETE /events`: removes a queue.
pub async fn delete_queue(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = params.required_str("queue_id")?;
    if let Err(PollError::BadQueue) = state.queues.remove(auth.user_id, &id) {
        return match queue_home(&state, &id, &req).await {
            Some(home) => {
                let query = serde_urlencoded::to_string([("queue_id", id.as_str())])
                    .map_err(|e| ApiError::internal(e.to_string()))?;
                ask_queue_home(&state, &req, &home, &query).await
            }
            None => Err(bad_queue(&id)),
        };
    }
    Ok(params.success(json!({})))
}

/// The other node of the cluster holding queue `id`, if there is one.
async fn queue_home(state: &AppState, id: &str, req: &HttpRequest) -> Option<String> {
    state.cluster.as_ref()?.queue_home(id, req).await
}

async fn ask_queue_home(
    state: &AppState,
    req: &HttpRequest,
    home: &str,
    query: &str,
) -> ApiResult<HttpResponse> {
    match &state.cluster {
        Some(cluster) => cluster.ask_queue_home(req, home, query).await,
        None => Err(ApiError::internal("no cluster to ask")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_lifespans() {
        let week = Duration::from_secs(7 * 24 * 3600);
        assert_eq!(queue_lifespan(Some("mobile"), None).unwrap(), week);
        assert_eq!(queue_lifespan(Some("mobile"), Some(5)).unwrap(), week);
        assert_eq!(
            queue_lifespan(Some("120"), None).unwrap(),
            Duration::from_secs(120)
        );
        assert_eq!(queue_lifespan(Some("99999999"), None).unwrap(), week);
        assert_eq!(
            queue_lifespan(None, Some(0)).unwrap(),
            DEFAULT_QUEUE_LIFESPAN
        );
        assert_eq!(queue_lifespan(None, None).unwrap(), DEFAULT_QUEUE_LIFESPAN);
        assert_eq!(
            queue_lifespan(None, Some(60)).unwrap(),
            Duration::from_secs(60)
        );
        for bad in ["desktop", "-5", "1.5"] {
            let err = queue_lifespan(Some(bad), None).unwrap_err();
            assert_eq!(
                err.to_string(),
                ApiError::invalid("idle_queue_timeout", bad).to_string()
            );
        }
        assert!(queue_lifespan(None, Some(-1)).is_err());
    }
}

//! `/scheduled_messages` and `/reminders`: messages to send later, and reminders about messages.

use super::messages::{destination_of, parse_destination};
use super::{path_id, AppState, Auth, Params};
use crate::commands::scheduled::{self as commands, ScheduledEdit};
use crate::error::{ApiError, ApiResult};
use crate::ids::{MessageId, ScheduledMessageId};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

/// `GET /scheduled_messages`: the caller's unsent scheduled messages, by delivery time.
pub async fn get_scheduled_messages(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let list: Vec<Value> = state.engine.read(|s| {
        s.scheduled
            .of(auth.user_id, false)
            .into_iter()
            .map(|m| m.json())
            .collect()
    });
    Ok(params.success(json!({ "scheduled_messages": list })))
}

/// `POST /scheduled_messages`.
pub async fn create_scheduled_message(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let client = super::messages::client_name(&req);
    let destination = state.engine.read(|s| parse_destination(s, &mut params))?;
    let content = params.required_str("content")?;
    let deliver_at = params.required_int::<i64>("scheduled_delivery_timestamp")?;
    let read_by_sender = params.bool("read_by_sender")?;
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            commands::schedule_message(
                s,
                ctx,
                destination.clone(),
                &content,
                deliver_at,
                read_by_sender,
                &client,
            )
        })
        .await?;
    Ok(params.success(json!({"scheduled_message_id": committed.value.0})))
}

/// `PATCH /scheduled_messages/{scheduled_message_id}`.
pub async fn update_scheduled_message(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let id = ScheduledMessageId(path_id(&req, "scheduled_message_id")?);
    let kind = params.str("type");
    let to_channel = match kind.as_deref() {
        None => None,
        Some("stream" | "channel") => Some(true),
        Some("private" | "direct") => Some(false),
        Some(other) => return Err(ApiError::invalid("type", other)),
    };
    let topic = params.str("topic");
    let to = params.str("to");
    let to =
        match to {
            None => None,
            Some(to) => {
                // Without a new type, `to` has the message's present kind.
                let channel = match to_channel {
                    Some(channel) => channel,
                    None => state.engine.read(|s| {
                        s.scheduled.get(id).is_some_and(|m| {
                            matches!(m.recipient, crate::events::Recipient::Channel { .. })
                        })
                    }),
                };
                let kind = if channel { "channel" } else { "direct" };
                // The topic is applied by the command; any stands in here.
                Some(state.engine.read(|s| {
                    destination_of(s, kind, &to, Some(topic.clone().unwrap_or_default()))
                })?)
            }
        };
    let edit = ScheduledEdit {
        to_channel,
        to,
        content: params.str("content"),
        topic: topic.map(|t| crate::projections::messages::topic_param(&t)),
        deliver_at: params.int::<i64>("scheduled_delivery_timestamp")?,
    };
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            commands::edit_scheduled(s, ctx, id, edit.clone())
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `DELETE /scheduled_messages/{scheduled_message_id}`.
pub async fn delete_scheduled_message(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = ScheduledMessageId(path_id(&req, "scheduled_message_id")?);
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            commands::delete_scheduled(s, ctx, id, false)
        })
        .await?;
    Ok(params.success(json!({})))
}

/// `GET /reminders`: the caller's unsent reminders, by delivery time.
pub async fn get_reminders(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    let list: Vec<Value> = state.engine.read(|s| {
        s.scheduled
            .of(auth.user_id, true)
            .into_iter()
            .map(|m| commands::reminder_json(s, m))
            .collect()
    });
    Ok(params.success(json!({ "reminders": list })))
}

/// `POST /reminders`.
pub async fn create_reminder(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    let message_id = MessageId(params.required_int::<u64>("message_id")?);
    let deliver_at = params.required_int::<i64>("scheduled_delivery_timestamp")?;
    let note = params.str("note");
    let committed = state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            commands::create_reminder(s, ctx, message_id, deliver_at, note.as_deref())
        })
        .await?;
    Ok(params.success(json!({"reminder_id": committed.value.0})))
}

/// `DELETE /reminders/{reminder_id}`.
pub async fn delete_reminder(
    state: web::Data<AppState>,
    auth: Auth,
    req: HttpRequest,
    params: Params,
) -> ApiResult<HttpResponse> {
    let id = ScheduledMessageId(path_id(&req, "reminder_id")?);
    state
        .engine
        .execute(Some(auth.user_id), move |s, ctx| {
            commands::delete_scheduled(s, ctx, id, true)
        })
        .await?;
    Ok(params.success(json!({})))
}

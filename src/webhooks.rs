//! Outgoing webhook bots: a message that mentions one (or a direct message to one) is posted to
//! the bot's service URL once it is durable, and the service's answer is sent back as the bot.
//!
//! The writer only picks out the deliveries (cheap, under its read lock); a separate task makes
//! the HTTP calls, so a slow or dead service never holds up a write or a client event.

use crate::auth::ServerSecret;
use crate::commands::messages::{ChannelRef, Destination};
use crate::engine::Engine;
use crate::events::{Envelope, Event, Recipient};
use crate::ids::UserId;
use crate::projections::{Projections, User};
use crate::render::Site;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

use crate::events::OUTGOING_WEBHOOK_BOT;

/// One call to make.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub bot: UserId,
    /// The address of the message that set it off (for the owner's notice of a failure).
    pub message_url: String,
    pub url: String,
    /// 1 Zulip's format, 2 Slack-compatible.
    pub interface: u8,
    pub payload: Value,
    /// Where the bot's answer goes.
    pub reply_to: Destination,
}

/// The outgoing webhook bot `user` may be triggered as, if it is one.
fn webhook_bot(user: &User) -> Option<&crate::events::BotService> {
    if !user.is_active || user.bot_type != Some(OUTGOING_WEBHOOK_BOT) {
        return None;
    }
    user.bot.as_ref()?.services.first()
}

/// The deliveries a durable batch asks for (`state` is the state right after it).
pub fn deliveries(
    state: &Projections,
    site: &Site,
    secret: &ServerSecret,
    batch: &[Envelope],
) -> Vec<Delivery> {
    let mut out = Vec::new();
    for env in batch {
        let Event::MessageSent {
            message_id,
            sender_id,
            recipient,
            mentioned,
            ..
        } = &env.event
        else {
            continue;
        };
        let Some(message) = state.messages.get(*message_id) else {
            continue;
        };
        // Bots do not set off bots: two services answering each other would never stop.
        if state.users.get(*sender_id).is_none_or(User::is_bot) {
            continue;
        }
        let (trigger, candidates, reply_to): (&str, Vec<UserId>, Destination) = match recipient {
            Recipient::Channel { channel_id, topic } => (
                "mention",
                mentioned.clone(),
                Destination::Channel {
                    channel: ChannelRef::Id(*channel_id),
                    topic: topic.clone(),
                },
            ),
            Recipient::Direct { user_ids } => (
                "direct_message",
                user_ids.clone(),
                Destination::Direct {
                    user_ids: user_ids.clone(),
                },
            ),
        };
        for bot_id in candidates {
            if bot_id == *sender_id {
                continue;
            }
            let Some(bot) = state.users.get(bot_id) else {
                continue;
            };
            let Some(service) = webhook_bot(bot) else {
                continue;
            };
            // The bot must be able to read the message it is sent.
            if !crate::projections::can_read(state, bot, message) {
                continue;
            }
            let token = crate::auth::service_token(secret, bot);
            let sender = state.users.get(*sender_id);
            let message_json =
                crate::render::messages::message_json(state, site, bot, message, false, true);
            let payload = if service.interface == 2 {
                json!({
                    "token": token,
                    "team_id": "chronicle",
                    "team_domain": site.realm_url,
                    "channel_id": message.channel().map(|c| c.0),
                    "channel_name": message.channel().and_then(|c| state.channels.get(c)).map(|c| c.name.clone()),
                    "timestamp": message.timestamp,
                    "user_id": sender_id.0,
                    "user_name": sender.map(|u| u.full_name.clone()),
                    "text": &*message.content,
                    "trigger_word": trigger,
                    "service_id": bot_id.0,
                })
            } else {
                json!({
                    "bot_email": bot.email,
                    "bot_full_name": bot.full_name,
                    "data": &*message.content,
                    "message": message_json,
                    "token": token,
                    "trigger": trigger,
                })
            };
            let reply_to = match &reply_to {
                // A direct answer goes to everyone in the conversation but the bot.
                Destination::Direct { user_ids } => Destination::Direct {
                    user_ids: user_ids.iter().copied().filter(|u| *u != bot_id).collect(),
                },
                Destination::Channel { channel, topic } => Destination::Channel {
                    channel: match channel {
                        ChannelRef::Id(id) => ChannelRef::Id(*id),
                        ChannelRef::Name(name) => ChannelRef::Name(name.clone()),
                    },
                    topic: topic.clone(),
                },
            };
            out.push(Delivery {
                bot: bot_id,
                message_url: format!(
                    "{}/{}",
                    site.realm_url,
                    crate::commands::notices::message_url(state, message)
                ),
                url: service.base_url.clone(),
                interface: service.interface,
                payload,
                reply_to,
            });
        }
    }
    out
}

/// The text a service answered with, if any: `content` (Zulip's format) or `text` (Slack's),
/// unless it says no answer is needed.
fn answer(interface: u8, body: &Value) -> Option<String> {
    if body["response_not_required"] == json!(true) {
        return None;
    }
    let key = if interface == 2 { "text" } else { "content" };
    body[key]
        .as_str()
        .map(str::to_owned)
        .filter(|t| !t.trim().is_empty())
}

/// The most of a service's answer that is read: Zulip's answers are a short JSON object, and
/// whatever is larger is refused unread.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// How long one call may take, connection and answer included.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How a call went, when it did not bring an answer to post.
#[derive(Debug)]
enum Failure {
    /// The URL's address is not allowed (`outgoing::Guard`).
    Disallowed,
    /// The service answered with this status.
    Status(u16),
    /// The answer was larger than `MAX_ANSWER_BYTES`.
    TooLarge,
    /// No answer: the connection failed or timed out.
    Unreachable(String),
}

/// Makes one call; `Ok(None)` when the service answered but wants nothing posted.
async fn call(
    client: &reqwest::Client,
    guard: &crate::outgoing::Guard,
    delivery: &Delivery,
) -> Result<Option<String>, Failure> {
    let url =
        reqwest::Url::parse(&delivery.url).map_err(|e| Failure::Unreachable(e.to_string()))?;
    guard.check_url(&url).map_err(|_| Failure::Disallowed)?;
    let request = if delivery.interface == 2 {
        // Slack's format is a form: every value as text.
        let fields: Vec<(String, String)> = delivery
            .payload
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                (k.clone(), text)
            })
            .collect();
        client.post(url).form(&fields)
    } else {
        client.post(url).json(&delivery.payload)
    };
    let failed = |error: reqwest::Error| {
        if crate::outgoing::was_refused(&error) {
            Failure::Disallowed
        } else {
            Failure::Unreachable(error.without_url().to_string())
        }
    };
    let response = request.send().await.map_err(failed)?;
    if !response.status().is_success() {
        return Err(Failure::Status(response.status().as_u16()));
    }
    let body = crate::outgoing::read_capped(response, MAX_ANSWER_BYTES)
        .await
        .map_err(failed)?
        .ok_or(Failure::TooLarge)?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok(answer(delivery.interface, &body))
}

/// What the bot's owner is told of a failed call, in Zulip's words (`notify_bot_owner`).
fn owner_notice(
    state: &Projections,
    delivery: &Delivery,
    failure: &Failure,
) -> Option<(UserId, String)> {
    let bot = state.users.get(delivery.bot)?;
    let owner = bot
        .bot_owner_id
        .filter(|o| state.users.get(*o).is_some_and(|u| u.is_active))?;
    let mut text = format!(
        "[A message]({}) to your bot @_**{}** triggered an outgoing webhook.",
        delivery.message_url, bot.full_name
    );
    match failure {
        Failure::Disallowed => {
            text.push_str("\nThe URL configured for the webhook is for a private or disallowed network.")
        }
        Failure::Status(code) => {
            text.push_str(&format!("\nThe webhook got a response with status code *{code}*."))
        }
        Failure::TooLarge => text.push_str(&format!(
            "\nThe webhook's response was larger than {} KiB and was not read.",
            MAX_ANSWER_BYTES / 1024
        )),
        Failure::Unreachable(error) => text.push_str(&format!(
            "\nWhen trying to send a request to the webhook service, an error occurred:\n```\n{error}\n```"
        )),
    }
    Some((owner, text))
}

/// Makes the calls as they come, and sends the answers as the bots. Every call goes through the
/// outgoing-request guard; a failed one is told to the bot's owner, by the bot, as Zulip does.
pub async fn run(
    mut deliveries: tokio::sync::mpsc::UnboundedReceiver<Delivery>,
    engine: Arc<Engine>,
    guard: Arc<crate::outgoing::Guard>,
) {
    let client = match guard.client(CALL_TIMEOUT) {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, "outgoing webhooks are disabled: no HTTP client");
            return;
        }
    };
    while let Some(delivery) = deliveries.recv().await {
        let (to, content) = match call(&client, &guard, &delivery).await {
            Ok(None) => continue,
            Ok(Some(content)) => (delivery.reply_to.clone(), content),
            Err(failure) => {
                tracing::warn!(bot = delivery.bot.0, ?failure, "outgoing webhook failed");
                let Some((owner, text)) = engine.read(|s| owner_notice(s, &delivery, &failure))
                else {
                    continue;
                };
                (
                    Destination::Direct {
                        user_ids: vec![owner],
                    },
                    text,
                )
            }
        };
        let sent = engine
            .execute(Some(delivery.bot), move |s, ctx| {
                crate::commands::messages::send_message(
                    s,
                    ctx,
                    to.clone(),
                    &content,
                    "OutgoingWebhook",
                    None,
                )
            })
            .await;
        if let Err(error) = sent {
            tracing::warn!(bot = delivery.bot.0, %error, "outgoing webhook answer not sent");
        }
    }
}

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

/// Makes the calls as they come, and sends the answers as the bots.
pub async fn run(
    mut deliveries: tokio::sync::mpsc::UnboundedReceiver<Delivery>,
    engine: Arc<Engine>,
) {
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
    {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, "outgoing webhooks are disabled: no HTTP client");
            return;
        }
    };
    while let Some(delivery) = deliveries.recv().await {
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
            client.post(&delivery.url).form(&fields)
        } else {
            client.post(&delivery.url).json(&delivery.payload)
        };
        let body: Value = match request.send().await {
            Ok(response) if response.status().is_success() => {
                response.json().await.unwrap_or(Value::Null)
            }
            Ok(response) => {
                tracing::warn!(bot = delivery.bot.0, status = %response.status(), "outgoing webhook failed");
                continue;
            }
            Err(error) => {
                tracing::warn!(bot = delivery.bot.0, %error, "outgoing webhook unreachable");
                continue;
            }
        };
        let Some(content) = answer(delivery.interface, &body) else {
            continue;
        };
        let to = delivery.reply_to;
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

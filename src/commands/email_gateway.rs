//! Messages that arrive by email (`notify::gateway`): to a channel's address, sent as the
//! address's sender (the email gateway bot, checked against the right to post of whoever asked
//! for the address), and replies to missed-message emails, sent as their person into the
//! conversation the email was about, with every check of an ordinary send.

use super::messages::{send_message, ChannelRef, Destination};
use super::notices::Notices;
use super::{Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::{Address, Projections};

/// The email gateway bot, as Zulip names it.
pub const EMAIL_GATEWAY_BOT_EMAIL: &str = "emailgateway@zulip.com";
pub const EMAIL_GATEWAY_BOT_NAME: &str = "Email Gateway";

/// Where an email posts.
#[derive(Debug, Clone)]
pub enum EmailDestination {
    /// A channel's topic, as `sender` (`None`: the email gateway bot) on behalf of `creator`.
    Channel {
        channel: ChannelId,
        topic: String,
        creator: UserId,
        sender: Option<UserId>,
    },
    /// The conversation of `message`, as `user`.
    Reply { user: UserId, message: MessageId },
}

/// The client name emailed messages carry.
const CLIENT: &str = "ZulipEmailMirror";

fn as_user(ctx: &Ctx, user: UserId) -> Ctx {
    Ctx {
        now_ms: ctx.now_ms,
        actor: Some(user),
    }
}

/// Posts `content` where `to` says; the reply is the new message's id.
pub fn post_email(
    state: &Projections,
    ctx: &Ctx,
    to: &EmailDestination,
    content: &str,
) -> ApiResult<Decision<MessageId>> {
    match to {
        EmailDestination::Channel {
            channel,
            topic,
            creator,
            sender,
        } => {
            let destination = Destination::Channel {
                channel: ChannelRef::Id(*channel),
                topic: topic.clone(),
            };
            match sender {
                Some(sender) => send_message(
                    state,
                    &as_user(ctx, *sender),
                    destination,
                    content,
                    CLIENT,
                    None,
                ),
                None => {
                    // Whoever asked for the address must be able to post there now; the bot
                    // then posts what they would have (same length and topic rules).
                    let checked = send_message(
                        state,
                        &as_user(ctx, *creator),
                        destination,
                        content,
                        CLIENT,
                        None,
                    )?;
                    let (topic, body) = checked
                        .events
                        .iter()
                        .find_map(|e| match e {
                            crate::events::Event::MessageSent {
                                recipient: crate::events::Recipient::Channel { topic, .. },
                                content,
                                ..
                            } => Some((topic.clone(), content.to_string())),
                            _ => None,
                        })
                        .ok_or_else(|| ApiError::internal("no message decided"))?;
                    let mut bot = Notices::as_system_bot(
                        state,
                        EMAIL_GATEWAY_BOT_EMAIL,
                        EMAIL_GATEWAY_BOT_NAME,
                    );
                    let id = bot.to_channel(*channel, &topic, body);
                    Ok(Decision::new(bot.into_events(), id))
                }
            }
        }
        EmailDestination::Reply { user, message } => {
            let person = state
                .users
                .get(*user)
                .filter(|u| u.is_active)
                .ok_or_else(|| ApiError::bad_request("The reply's person is deactivated"))?;
            let message = super::messages::readable(state, person, *message)?;
            let destination = match &message.recipient {
                Address::Channel { channel_id, topic } => Destination::Channel {
                    channel: ChannelRef::Id(*channel_id),
                    topic: topic.to_string(),
                },
                Address::Direct { user_ids } => Destination::Direct {
                    user_ids: user_ids.iter().copied().filter(|u| u != user).collect(),
                },
            };
            let destination = match destination {
                Destination::Direct { user_ids } if user_ids.is_empty() => Destination::Direct {
                    user_ids: vec![*user],
                },
                other => other,
            };
            send_message(
                state,
                &as_user(ctx, *user),
                destination,
                content,
                CLIENT,
                None,
            )
        }
    }
}

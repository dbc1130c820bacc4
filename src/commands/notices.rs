//! Messages the notification bot sends on behalf of a command (channel announcements, move
//! notices, ...), and the mention and link forms they use.

use crate::commands::markup::OrgResolver;
use crate::events::{Event, Recipient, Role};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::markdown::{encode_hash_component, render_message, Resolver};
use crate::projections::Address;
use crate::projections::{Projections, User};

/// The notification bot's address and name, as in Zulip.
pub const NOTIFICATION_BOT_EMAIL: &str = "notification-bot@zulip.com";

pub const NOTIFICATION_BOT_NAME: &str = "Notification Bot";

/// Welcome Bot's, as in Zulip: it greets each new account.
pub const WELCOME_BOT_EMAIL: &str = "welcome-bot@zulip.com";

pub const WELCOME_BOT_NAME: &str = "Welcome Bot";

/// Messages the notification bot sends on behalf of a command (channel announcements, move
/// notices, ...). The bot is created with its first message, in the same batch; message ids
/// are allocated one after another, so a command may send several. A command that also creates
/// users says how many with `reserving`, so that the bot's id comes after theirs.
pub struct Notices<'a> {
    state: &'a Projections,
    bot: UserId,
    /// The sending bot's creation, made with its first message (none when it exists).
    creation: Option<Event>,
    /// Accounts the command creates itself (their ids come before the bots').
    reserved: u64,
    /// Bots created by these notices so far, by address.
    made: Vec<(String, UserId)>,
    events: Vec<Event>,
    next_id: u64,
    /// Accounts the same command creates, which mentions may name: `(id, full name)`.
    new_users: Vec<(u64, String)>,
    /// Channels the same command creates, which links may name: `(id, name)`.
    new_channels: Vec<(u64, String)>,
}

impl<'a> Notices<'a> {
    pub fn new(state: &'a Projections) -> Notices<'a> {
        Notices::reserving(state, 0)
    }

    /// For a command that creates `new_users` accounts (ids after the highest) itself.
    pub fn reserving(state: &'a Projections, new_users: u64) -> Notices<'a> {
        Notices::from_bot(
            state,
            NOTIFICATION_BOT_EMAIL,
            NOTIFICATION_BOT_NAME,
            new_users,
        )
    }

    /// Messages from another system bot (the email gateway's), made with its first message.
    pub fn as_system_bot(state: &'a Projections, email: &str, name: &str) -> Notices<'a> {
        Notices::from_bot(state, email, name, 0)
    }

    fn from_bot(state: &'a Projections, email: &str, name: &str, new_users: u64) -> Notices<'a> {
        let mut notices = Notices {
            state,
            bot: UserId(0),
            creation: None,
            reserved: new_users,
            made: Vec::new(),
            events: Vec::new(),
            next_id: state.messages.next_id().0,
            new_users: Vec::new(),
            new_channels: Vec::new(),
        };
        notices.sending_as(email, name);
        notices
    }

    /// The next messages come from another system bot (made with its first message; a bot
    /// that then sent nothing is not made).
    pub fn sending_as(&mut self, email: &str, name: &str) {
        let known = self
            .state
            .users
            .system_bot(email)
            .map(|bot| bot.user_id)
            .or_else(|| {
                self.made
                    .iter()
                    .find(|(e, _)| e == email)
                    .map(|(_, id)| *id)
            });
        match known {
            Some(bot) => {
                self.bot = bot;
                self.creation = None;
            }
            None => {
                self.bot = UserId(
                    self.state.users.max_id().0 + 1 + self.reserved + self.made.len() as u64,
                );
                self.creation = Some(Event::UserCreated {
                    user_id: self.bot,
                    email: email.into(),
                    full_name: name.into(),
                    role: Role::Member,
                    bot_type: Some(crate::events::GENERIC_BOT),
                    bot_owner_id: None,
                    timezone: String::new(),
                    can_create_users: false,
                    password_hash: None,
                    // System bots cannot authenticate, so their key material is never used.
                    api_key_nonce: String::new(),
                    bot: Some(Box::new(crate::events::BotConfig {
                        default_sending_stream: None,
                        default_events_register_stream: None,
                        default_all_public_streams: false,
                        services: Vec::new(),
                        system: true,
                    })),
                });
            }
        }
    }

    /// Lets notices link to a channel the same command creates.
    pub fn knowing_channel(&mut self, channel: ChannelId, name: &str) {
        self.new_channels.push((channel.0, name.to_owned()));
    }

    /// Lets notices mention an account the same command creates.
    pub fn knowing(mut self, user: UserId, full_name: &str) -> Notices<'a> {
        self.new_users.push((user.0, full_name.to_owned()));
        self
    }

    fn send(&mut self, recipient: Recipient, content: String) -> MessageId {
        if let Some(creation) = self.creation.take() {
            if let Event::UserCreated { user_id, email, .. } = &creation {
                self.made.push((email.clone(), *user_id));
            }
            self.events.push(creation);
        }
        // Like every message body, stored without trailing white space.
        let content = content.trim_end().to_owned();
        let resolver = WithNewUsers {
            org: OrgResolver(self.state),
            new_users: &self.new_users,
            new_channels: &self.new_channels,
        };
        let rendered = render_message(&content, &resolver);
        let message_id = MessageId(self.next_id);
        self.next_id += 1;
        self.events.push(Event::MessageSent {
            message_id,
            sender_id: self.bot,
            recipient,
            content: content.into(),
            rendered_content: rendered.html.into(),
            client: "Internal".into(),
            is_me_message: false,
            mentioned: rendered.mentioned.into_iter().map(UserId).collect(),
            stream_wildcard: rendered.stream_wildcard,
            topic_wildcard: rendered.topic_wildcard,
            sender_queue: None,
            alerted: Vec::new(),
        });
        message_id
    }

    /// A message to a channel's topic; its id.
    pub fn to_channel(&mut self, channel_id: ChannelId, topic: &str, content: String) -> MessageId {
        self.send(
            Recipient::Channel {
                channel_id,
                topic: topic.to_owned(),
            },
            content,
        )
    }

    /// A direct message to one user; its id.
    pub fn to_user(&mut self, user: UserId, content: String) -> MessageId {
        let mut user_ids = vec![self.bot, user];
        user_ids.sort();
        user_ids.dedup();
        self.send(Recipient::Direct { user_ids }, content)
    }

    /// The events: the bot's creation if needed, then the messages (none if nothing was sent).
    pub fn into_events(self) -> Vec<Event> {
        let sent = self
            .events
            .iter()
            .any(|e| matches!(e, Event::MessageSent { .. }));
        if sent {
            self.events
        } else {
            Vec::new()
        }
    }
}

/// How a user is named in a notice: a silent mention that survives renames (`@_**Name|id**`).
pub fn silent_mention(user: &User) -> String {
    format!("@_**{}|{}**", user.full_name, user.user_id)
}

/// Characters that break Zulip's `#**...**` link syntax; names with them get a Markdown link.
fn breaks_link_syntax(text: &str) -> bool {
    text.contains(['`', '>', '*', '&', '[', ']']) || text.contains("$$")
}

/// `#narrow/channel/{id}-{name}` (relative, as Zulip writes it in messages).
pub(crate) fn channel_narrow(id: ChannelId, name: &str) -> String {
    format!(
        "#narrow/channel/{}-{}",
        id,
        encode_hash_component(&name.replace(' ', "-"))
    )
}

/// A link to a channel in a notice: `#**name**`, or a Markdown link for awkward names.
pub fn channel_link(id: ChannelId, name: &str) -> String {
    if breaks_link_syntax(name) {
        format!("[#{}]({})", name, channel_narrow(id, name))
    } else {
        format!("#**{name}**")
    }
}

/// A link to a topic in a notice: `#**channel>topic**`, or a Markdown link for awkward names.
/// The empty topic shows as "general chat".
pub fn topic_link(id: ChannelId, name: &str, topic: &str) -> String {
    let shown = if topic.is_empty() {
        crate::projections::messages::EMPTY_TOPIC_DISPLAY_NAME
    } else {
        topic
    };
    if breaks_link_syntax(name) || breaks_link_syntax(shown) {
        format!(
            "[#{} > {}]({}/topic/{})",
            name,
            shown,
            channel_narrow(id, name),
            encode_hash_component(topic)
        )
    } else {
        format!("#**{name}>{shown}**")
    }
}

/// A link to one message of a channel in a notice: `#**channel>topic@id**`, or the topic's
/// Markdown link for awkward names.
pub fn channel_message_link(
    state: &Projections,
    id: ChannelId,
    topic: &str,
    message: MessageId,
) -> String {
    let link = topic_link(id, &channel_name(state, id), topic);
    match link.strip_suffix("**") {
        Some(open) => format!("{open}@{message}**"),
        None => link,
    }
}

/// A link to `message` relative to the organization (`#narrow/…/near/{id}`).
pub fn message_url(state: &Projections, message: &crate::projections::Message) -> String {
    match &message.recipient {
        Address::Channel { channel_id, topic } => format!(
            "{}/topic/{}/near/{}",
            channel_narrow(*channel_id, &channel_name(state, *channel_id)),
            encode_hash_component(topic),
            message.id
        ),
        Address::Direct { user_ids } => {
            let ids: Vec<String> = user_ids.iter().map(|u| u.0.to_string()).collect();
            format!("#narrow/dm/{}/near/{}", ids.join(","), message.id)
        }
    }
}

/// A channel's name, or empty for one that does not exist.
fn channel_name(state: &Projections, id: ChannelId) -> String {
    state
        .channels
        .get(id)
        .map(|c| c.name.clone())
        .unwrap_or_default()
}

/// A fence of backticks that `text` does not contain, for quoting it in a notice.
pub fn unused_fence(text: &str) -> String {
    let mut fence = "```".to_owned();
    while text.contains(&fence) {
        fence.push('`');
    }
    fence
}

/// The organization, plus accounts not yet folded into it.
struct WithNewUsers<'a> {
    org: OrgResolver<'a>,
    new_users: &'a [(u64, String)],
    new_channels: &'a [(u64, String)],
}

impl Resolver for WithNewUsers<'_> {
    fn user(&self, name: &str, id: Option<u64>) -> Option<(u64, String)> {
        self.new_users
            .iter()
            .find(|(uid, full)| full == name && id.is_none_or(|id| id == *uid))
            .cloned()
            .or_else(|| self.org.user(name, id))
    }

    fn channel(&self, name: &str) -> Option<(u64, String)> {
        self.new_channels
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .cloned()
            .or_else(|| self.org.channel(name))
    }

    fn linkifiers(&self) -> Vec<&crate::linkify::Compiled> {
        self.org.linkifiers()
    }

    fn custom_emoji(&self, name: &str) -> Option<String> {
        self.org.custom_emoji(name)
    }

    fn upload_image(&self, path: &str) -> Option<crate::markdown::UploadPreview> {
        self.org.upload_image(path)
    }
}

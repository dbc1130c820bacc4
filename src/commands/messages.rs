//! Sending messages and changing their per-user flags.

use super::actor;
use super::channels::{access, Access, MAX_TOPIC_LENGTH};
use crate::emoji;
use crate::engine::Ctx;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::{
    EditedContent, Event, MessageFlag, MessageMove, PropagateMode, ReactionType, Recipient, Role,
    SenderQueue, TopicsPolicy,
};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::markdown::{encode_hash_component, render_message, Resolver};
use crate::projections::{Message, Projections, User};
use std::collections::{BTreeMap, BTreeSet};

/// Zulip's `MAX_MESSAGE_LENGTH`: longer content is truncated, as Zulip does.
pub const MAX_MESSAGE_LENGTH: usize = 10_000;

/// The channel a message goes to, as the client named it.
#[derive(Debug, Clone)]
pub enum ChannelRef {
    Id(ChannelId),
    Name(String),
}

/// A message to send, as requested.
#[derive(Debug, Clone)]
pub enum Destination {
    Channel { channel: ChannelRef, topic: String },
    Direct { user_ids: Vec<UserId> },
}

pub(crate) struct OrgResolver<'a>(pub &'a Projections);

impl Resolver for OrgResolver<'_> {
    fn user(&self, name: &str, id: Option<u64>) -> Option<(u64, String)> {
        let state = self.0;
        let candidate = |u: &&User| u.is_active && u.full_name == name;
        match id {
            Some(id) => state
                .users
                .get(UserId(id))
                .filter(candidate)
                .map(|u| (u.user_id.0, u.full_name.clone())),
            None => {
                let mut matches = state.users.iter().filter(candidate);
                let first = matches.next()?;
                // An ambiguous name mentions nobody (Zulip asks for the `|id` form).
                matches
                    .next()
                    .is_none()
                    .then(|| (first.user_id.0, first.full_name.clone()))
            }
        }
    }

    fn linkifiers(&self) -> Vec<&crate::linkify::Compiled> {
        self.0.linkifiers.compiled()
    }

    fn custom_emoji(&self, name: &str) -> Option<String> {
        self.0
            .custom_emoji
            .active_named(name)
            .map(crate::http::emoji::source_url)
    }

    fn channel(&self, name: &str) -> Option<(u64, String)> {
        self.0
            .channels
            .by_name(name)
            .filter(|c| !c.invite_only)
            .map(|c| (c.id.0, c.name.clone()))
    }
}

/// Truncates to `max` characters with Zulip's marker.
fn truncate(text: &str, max: usize, marker: &str) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(marker.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(marker);
    out
}

/// `POST /messages`.
pub fn send_message(
    state: &Projections,
    ctx: &Ctx,
    to: Destination,
    content: &str,
    client: &str,
    sender_queue: Option<SenderQueue>,
) -> ApiResult<(Vec<Event>, MessageId)> {
    let me = actor(state, ctx)?;
    let content = content.trim_end();
    if content.trim().is_empty() {
        return Err(ApiError::bad_request("Message must not be empty"));
    }
    let content = truncate(content, MAX_MESSAGE_LENGTH, "\n[message truncated]");
    let recipient = match to {
        Destination::Channel { channel, topic } => {
            let found = match &channel {
                ChannelRef::Id(id) => state.channels.get(*id),
                ChannelRef::Name(name) => state.channels.by_name(name),
            }
            .filter(|c| access(state, me, c) != Access::None);
            let Some(channel_state) = found else {
                return Err(match channel {
                    ChannelRef::Id(id) => ApiError::new(
                        ErrorCode::StreamDoesNotExist,
                        format!("Channel with ID '{id}' does not exist"),
                    )
                    .with("stream_id", id.0),
                    ChannelRef::Name(name) => ApiError::new(
                        ErrorCode::StreamDoesNotExist,
                        format!("Channel '{name}' does not exist"),
                    )
                    .with("stream", name),
                });
            };
            if channel_state.is_archived {
                return Err(ApiError::bad_request(format!(
                    "Not authorized to send to channel '{}'",
                    channel_state.name
                )));
            }
            let allows = |s| state.groups.setting_allows(&state.users, me.user_id, s);
            let may_post = access(state, me, channel_state) == Access::Content
                || !channel_state.invite_only && me.role != Role::Guest;
            if !may_post {
                return Err(ApiError::bad_request(format!(
                    "Not authorized to send to channel '{}'",
                    channel_state.name
                )));
            }
            if !allows(&channel_state.permissions.can_send_message_group) {
                return Err(ApiError::bad_request(
                    "You do not have permission to post in this channel.",
                ));
            }
            let topic = truncate(topic.trim(), MAX_TOPIC_LENGTH, "...");
            if topic.is_empty()
                && state.topics_policy(channel_state) == TopicsPolicy::DisableEmptyTopic
            {
                return Err(ApiError::bad_request(
                    "Sending messages to the general chat is not allowed in this channel.",
                ));
            }
            if !topic.is_empty()
                && state.topics_policy(channel_state) == TopicsPolicy::EmptyTopicOnly
            {
                return Err(ApiError::bad_request(
                    "Only the general chat topic is allowed in this channel.",
                ));
            }
            let new_topic = state
                .messages
                .in_topic(channel_state.id, &topic)
                .is_none_or(|m| m.is_empty());
            if new_topic && !allows(&channel_state.permissions.can_create_topic_group) {
                return Err(ApiError::bad_request(
                    "You do not have permission to create new topics in this channel.",
                ));
            }
            Recipient::Channel {
                channel_id: channel_state.id,
                topic,
            }
        }
        Destination::Direct { user_ids } => {
            if user_ids.is_empty() {
                return Err(ApiError::bad_request("Message must have recipients"));
            }
            let mut participants = vec![me.user_id];
            for id in user_ids {
                let user = state
                    .users
                    .get(id)
                    .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID {id}")))?;
                if !user.is_active {
                    return Err(ApiError::bad_request(format!(
                        "'{}' is no longer using Zulip.",
                        user.email
                    )));
                }
                participants.push(id);
            }
            participants.sort();
            participants.dedup();
            Recipient::Direct {
                user_ids: participants,
            }
        }
    };
    let rendered = render_message(&content, &OrgResolver(state));
    let message_id = state.messages.next_id();
    let is_me_message = content.starts_with("/me ") && !content.contains('\n');
    Ok((
        vec![Event::MessageSent {
            message_id,
            sender_id: me.user_id,
            recipient,
            content: content.into(),
            rendered_content: rendered.html.into(),
            client: client.into(),
            is_me_message,
            mentioned: rendered.mentioned.into_iter().map(UserId).collect(),
            stream_wildcard: rendered.stream_wildcard,
            topic_wildcard: rendered.topic_wildcard,
            sender_queue: sender_queue.map(Box::new),
        }],
        message_id,
    ))
}

/// The notification bot's address and name, as in Zulip.
pub const NOTIFICATION_BOT_EMAIL: &str = "notification-bot@zulip.com";
pub const NOTIFICATION_BOT_NAME: &str = "Notification Bot";

/// Messages the notification bot sends on behalf of a command (channel announcements, move
/// notices, ...). The bot is created with its first message, in the same batch; message ids
/// are allocated one after another, so a command may send several. A command that also creates
/// users says how many with `reserving`, so that the bot's id comes after theirs.
pub struct Notices<'a> {
    state: &'a Projections,
    bot: UserId,
    events: Vec<Event>,
    next_id: u64,
    /// Accounts the same command creates, which mentions may name: `(id, full name)`.
    new_users: Vec<(u64, String)>,
    /// Channels the same command creates, which links may name: `(id, name)`.
    new_channels: Vec<(u64, String)>,
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
}

impl<'a> Notices<'a> {
    pub fn new(state: &'a Projections) -> Notices<'a> {
        Notices::reserving(state, 0)
    }

    /// For a command that creates `new_users` accounts (ids after the highest) itself.
    pub fn reserving(state: &'a Projections, new_users: u64) -> Notices<'a> {
        let (bot, events) = match state.users.system_bot(NOTIFICATION_BOT_EMAIL) {
            Some(bot) => (bot.user_id, Vec::new()),
            None => {
                let bot = UserId(state.users.max_id().0 + 1 + new_users);
                let created = Event::UserCreated {
                    user_id: bot,
                    email: NOTIFICATION_BOT_EMAIL.into(),
                    full_name: NOTIFICATION_BOT_NAME.into(),
                    role: Role::Member,
                    bot_type: Some(super::users::GENERIC_BOT),
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
                };
                (bot, vec![created])
            }
        };
        Notices {
            state,
            bot,
            events,
            next_id: state.messages.next_id().0,
            new_users: Vec::new(),
            new_channels: Vec::new(),
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

    fn send(&mut self, recipient: Recipient, content: String) {
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
        });
    }

    /// A message to a channel's topic.
    pub fn to_channel(&mut self, channel_id: ChannelId, topic: &str, content: String) {
        self.send(
            Recipient::Channel {
                channel_id,
                topic: topic.to_owned(),
            },
            content,
        );
    }

    /// A direct message to one user.
    pub fn to_user(&mut self, user: UserId, content: String) {
        let mut user_ids = vec![self.bot, user];
        user_ids.sort();
        user_ids.dedup();
        self.send(Recipient::Direct { user_ids }, content);
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
fn channel_narrow(id: ChannelId, name: &str) -> String {
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
        crate::http::subscriptions::EMPTY_TOPIC_DISPLAY_NAME
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

/// Whether `user` may read `message`: a copy of it, a direct message they take part in, or a
/// channel whose history they can reach.
pub fn can_read(state: &Projections, user: &User, message: &Message) -> bool {
    if state.messages.flags(user.user_id, message.id).is_some() {
        return true;
    }
    match &message.recipient {
        Recipient::Direct { user_ids } => user_ids.contains(&user.user_id),
        Recipient::Channel { channel_id, .. } => state.channels.get(*channel_id).is_some_and(|c| {
            if c.invite_only {
                c.history_public_to_subscribers && state.channels.is_subscribed(user.user_id, c.id)
            } else {
                user.role != Role::Guest
            }
        }),
    }
}

/// `POST /messages/flags` (and the mark-as-read endpoints): returns the ids whose flag changed.
pub fn update_flags(
    state: &Projections,
    ctx: &Ctx,
    message_ids: Vec<MessageId>,
    flag: MessageFlag,
    add: bool,
) -> ApiResult<(Vec<Event>, Vec<MessageId>)> {
    let me = actor(state, ctx)?;
    let bit = crate::projections::messages::flag_bit(flag);
    let mut changed = Vec::new();
    for id in message_ids {
        let message = readable(state, me, id)?;
        let current = state.messages.flags(me.user_id, message.id);
        // Read/collapsed only apply to copies; starring may create a historical copy.
        let has = current.is_some_and(|bits| bits & bit != 0);
        let applies = current.is_some() || flag == MessageFlag::Starred;
        if applies && has != add && !changed.contains(&id) {
            changed.push(id);
        }
    }
    changed.sort();
    if changed.is_empty() {
        return Ok((Vec::new(), changed));
    }
    Ok((
        vec![Event::MessageFlagsChanged {
            user_id: me.user_id,
            flag,
            add,
            message_ids: changed.clone(),
        }],
        changed,
    ))
}

/// `POST /typing`: start or stop, to a direct conversation or a channel topic.
pub fn set_typing(
    state: &Projections,
    ctx: &Ctx,
    target: crate::events::TypingTarget,
    start: bool,
) -> ApiResult<(Vec<Event>, ())> {
    use crate::events::{RealmValue, TypingTarget};
    let me = actor(state, ctx)?;
    let (setting, kind) = match target {
        TypingTarget::Direct { .. } => ("send_private_typing_notifications", "direct"),
        TypingTarget::Channel { .. } => ("send_stream_typing_notifications", "channel"),
    };
    if state.user_settings.get(me.user_id, setting) == RealmValue::Bool(false) {
        return Err(ApiError::bad_request(format!(
            "User has disabled typing notifications for {kind} messages"
        )));
    }
    let target = match target {
        TypingTarget::Direct { user_ids } => {
            if user_ids.is_empty() {
                return Err(ApiError::bad_request("Empty 'to' list"));
            }
            let mut participants = vec![me.user_id];
            for id in user_ids {
                if !state.users.get(id).is_some_and(|u| u.is_active) {
                    return Err(ApiError::bad_request(format!("Invalid user ID {id}")));
                }
                participants.push(id);
            }
            participants.sort();
            participants.dedup();
            TypingTarget::Direct {
                user_ids: participants,
            }
        }
        TypingTarget::Channel { channel_id, topic } => {
            state
                .channels
                .get(channel_id)
                .filter(|c| access(state, me, c) == Access::Content)
                .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?;
            TypingTarget::Channel { channel_id, topic }
        }
    };
    let event = if start {
        Event::TypingStarted {
            user_id: me.user_id,
            target,
        }
    } else {
        Event::TypingStopped {
            user_id: me.user_id,
            target,
        }
    };
    Ok((vec![event], ()))
}

/// The emoji a reaction request names, resolved as Zulip does.
#[derive(Debug, Clone)]
pub struct EmojiRequest {
    pub emoji_name: Option<String>,
    pub emoji_code: Option<String>,
    pub reaction_type: Option<String>,
}

/// Resolves a request's emoji to `(code, type)`; the name alone is looked up.
fn resolve_emoji(state: &Projections, request: &EmojiRequest) -> ApiResult<(String, ReactionType)> {
    let reaction_type = match request.reaction_type.as_deref() {
        None | Some("unicode_emoji") => ReactionType::UnicodeEmoji,
        Some("zulip_extra_emoji") => ReactionType::ZulipExtraEmoji,
        Some("realm_emoji") => ReactionType::RealmEmoji,
        Some(_) => return Err(ApiError::bad_request("Invalid emoji type.")),
    };
    if let Some(code) = &request.emoji_code {
        return Ok((code.clone(), reaction_type));
    }
    let Some(name) = &request.emoji_name else {
        return Err(ApiError::bad_request(
            "At least one of the following arguments must be present: emoji_name, emoji_code",
        ));
    };
    // The organization's own emoji win over the built-in ones of the same name.
    if let Some(custom) = state.custom_emoji.active_named(name) {
        return Ok((custom.id.0.to_string(), ReactionType::RealmEmoji));
    }
    if name == emoji::ZULIP_EXTRA_EMOJI {
        return Ok((name.clone(), ReactionType::ZulipExtraEmoji));
    }
    emoji::unicode_code(name)
        .map(|code| (code.to_owned(), ReactionType::UnicodeEmoji))
        .ok_or_else(|| ApiError::bad_request(format!("Emoji '{name}' does not exist")))
}

/// Checks that a name and code go together (Zulip's `check_emoji_request`).
fn check_emoji(
    state: &Projections,
    name: &str,
    code: &str,
    reaction_type: ReactionType,
) -> ApiResult<()> {
    match reaction_type {
        ReactionType::UnicodeEmoji => {
            if emoji::unicode_name(code).is_none() {
                return Err(ApiError::bad_request("Invalid emoji code."));
            }
            if emoji::unicode_code(name) != Some(code) {
                return Err(ApiError::bad_request("Invalid emoji name."));
            }
        }
        ReactionType::ZulipExtraEmoji => {
            if code != emoji::ZULIP_EXTRA_EMOJI {
                return Err(ApiError::bad_request("Invalid emoji code."));
            }
            if name != code {
                return Err(ApiError::bad_request("Invalid emoji name."));
            }
        }
        ReactionType::RealmEmoji => {
            let custom = code
                .parse::<u64>()
                .ok()
                .and_then(|id| state.custom_emoji.get(crate::ids::EmojiId(id)))
                .ok_or_else(|| ApiError::bad_request("Invalid custom emoji."))?;
            if custom.name != name {
                return Err(ApiError::bad_request("Invalid custom emoji name."));
            }
            if custom.deactivated {
                return Err(ApiError::bad_request(
                    "This custom emoji has been deactivated.",
                ));
            }
        }
    }
    Ok(())
}

/// The message `me` names, if they may read it; Zulip's "Invalid message(s)" otherwise.
pub fn readable<'a>(state: &'a Projections, me: &User, id: MessageId) -> ApiResult<&'a Message> {
    state
        .messages
        .get(id)
        .filter(|m| can_read(state, me, m))
        .ok_or_else(|| ApiError::bad_request("Invalid message(s)"))
}

/// `POST /messages/{id}/reactions`.
pub fn add_reaction(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    request: EmojiRequest,
) -> ApiResult<(Vec<Event>, ())> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let (emoji_code, reaction_type) = resolve_emoji(state, &request)?;
    let same = |r: &&crate::projections::messages::Reaction| {
        r.emoji_code == emoji_code && r.reaction_type == reaction_type
    };
    if message
        .reactions()
        .iter()
        .filter(same)
        .any(|r| r.user_id == me.user_id)
    {
        return Err(ApiError::new(
            ErrorCode::ReactionAlreadyExists,
            "Reaction already exists.",
        ));
    }
    // Joining someone else's reaction takes its name; a new one is checked.
    let emoji_name = match message.reactions().iter().find(same) {
        Some(existing) => existing.emoji_name.clone(),
        None => {
            let name = request
                .emoji_name
                .ok_or_else(|| ApiError::missing("emoji_name"))?;
            check_emoji(state, &name, &emoji_code, reaction_type)?;
            name
        }
    };
    Ok((
        vec![Event::ReactionAdded {
            message_id,
            user_id: me.user_id,
            emoji_name,
            emoji_code,
            reaction_type,
        }],
        (),
    ))
}

/// `DELETE /messages/{id}/reactions`.
pub fn remove_reaction(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    request: EmojiRequest,
) -> ApiResult<(Vec<Event>, ())> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let (emoji_code, reaction_type) = resolve_emoji(state, &request)?;
    let existing = message.reactions().iter().find(|r| {
        r.user_id == me.user_id && r.emoji_code == emoji_code && r.reaction_type == reaction_type
    });
    let Some(existing) = existing else {
        return Err(ApiError::new(
            ErrorCode::ReactionDoesNotExist,
            "Reaction doesn't exist.",
        ));
    };
    Ok((
        vec![Event::ReactionRemoved {
            message_id,
            user_id: me.user_id,
            emoji_name: existing.emoji_name.clone(),
            emoji_code,
            reaction_type,
        }],
        (),
    ))
}

/// Zulip lets a request that started inside an edit limit finish a little after it.
const EDIT_GRACE_SECS: i64 = 20;

/// Whether `sent` (seconds) is past the organization's time limit `setting` at `now`, grace
/// included; an unlimited setting never is.
fn past_limit(state: &Projections, setting: &str, sent: i64, now: i64) -> bool {
    state
        .realm
        .limit_secs(setting)
        .is_some_and(|limit| now.saturating_sub(sent) > limit.saturating_add(EDIT_GRACE_SECS))
}

/// What `PATCH /messages/{id}` asks for.
#[derive(Debug, Clone)]
pub struct EditRequest {
    pub content: Option<String>,
    pub topic: Option<String>,
    pub channel_id: Option<ChannelId>,
    pub propagate_mode: PropagateMode,
    /// Zulip's `send_notification_to_old_thread` (default false) and `_new_thread` (true).
    pub notify_old_thread: bool,
    pub notify_new_thread: bool,
    /// The organization's URL, for the message links of move notices.
    pub realm_url: String,
}

/// Zulip does not repeat a resolve/unresolve notice undone within this many seconds: it
/// deletes the earlier one instead (`RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS`).
const RESOLVE_UNDO_GRACE_SECS: i64 = 60;
const RESOLVED_NOTICE: &str = " has marked this topic as resolved.";
const UNRESOLVED_NOTICE: &str = " has marked this topic as unresolved.";

/// When a whole topic moves (resolving included), users' visibility policies (muted, followed)
/// go with it, as in Zulip: set on the new topic unless the user has one there already, and
/// cleared on the old one. A user who cannot read the destination only loses the old policy.
fn move_topic_policies(state: &Projections, message: &Message, mv: &MessageMove) -> Vec<Event> {
    let Recipient::Channel {
        channel_id: old_channel,
        topic: old_topic,
    } = &message.recipient
    else {
        return Vec::new();
    };
    let new_channel = mv.new_channel_id.unwrap_or(*old_channel);
    let new_topic = mv.new_topic.clone().unwrap_or_else(|| old_topic.clone());
    let left_behind = state
        .messages
        .in_topic(*old_channel, old_topic)
        .into_iter()
        .flatten()
        .any(|id| !mv.message_ids.contains(id));
    let same_place = new_channel == *old_channel
        && crate::projections::user_topics::topic_key(&new_topic)
            == crate::projections::user_topics::topic_key(old_topic);
    if left_behind || same_place {
        return Vec::new();
    }
    let destination = state.channels.get(new_channel);
    let mut events = Vec::new();
    for (user_id, policy) in state.user_topics.on_topic(*old_channel, old_topic) {
        let reaches = destination
            .zip(state.users.get(user_id))
            .is_some_and(|(c, u)| access(state, u, c) == Access::Content);
        if reaches && state.user_topics.policy(user_id, new_channel, &new_topic) == 0 {
            // The projection holds only codes of real policies.
            let policy = crate::events::TopicPolicy::from_code(policy)
                .unwrap_or(crate::events::TopicPolicy::None);
            events.push(Event::TopicVisibilitySet {
                user_id,
                channel_id: new_channel,
                topic: new_topic.clone(),
                policy,
            });
        }
        events.push(Event::TopicVisibilitySet {
            user_id,
            channel_id: *old_channel,
            topic: old_topic.clone(),
            policy: crate::events::TopicPolicy::None,
        });
    }
    events
}

/// The notification bot's messages about a move: a resolve/unresolve notice in the topic, or
/// "moved here" / "moved to" notices in the new and old topics as the request asks.
fn move_notices(
    state: &Projections,
    me: &User,
    message: &Message,
    mv: &MessageMove,
    request: &EditRequest,
    now: i64,
) -> Vec<Event> {
    let Recipient::Channel {
        channel_id: old_channel,
        topic: old_topic,
    } = &message.recipient
    else {
        return Vec::new();
    };
    let new_channel = mv.new_channel_id.unwrap_or(*old_channel);
    let new_topic = mv.new_topic.clone().unwrap_or_else(|| old_topic.clone());
    let name_of = |id: ChannelId| {
        state
            .channels
            .get(id)
            .map(|c| c.name.clone())
            .unwrap_or_default()
    };
    let mut notices = Notices::new(state);
    let user = silent_mention(me);
    let resolving = mv.new_channel_id.is_none()
        && crate::projections::messages::is_resolve_toggle(old_topic, &new_topic);
    if resolving {
        // The newest message of the topic once moved: an undone notice is deleted, not answered.
        let bot = state
            .users
            .system_bot(NOTIFICATION_BOT_EMAIL)
            .map(|u| u.user_id);
        let newest = state
            .messages
            .in_topic(new_channel, &new_topic)
            .into_iter()
            .flatten()
            .chain(mv.message_ids.iter())
            .max()
            .and_then(|id| state.messages.get(*id));
        // (Not when the notice is the very message being edited: its move must reach clients.)
        if let Some(notice) = newest.filter(|m| {
            m.id != message.id
                && Some(m.sender_id) == bot
                && now - m.timestamp < RESOLVE_UNDO_GRACE_SECS
                && (m.content.ends_with(RESOLVED_NOTICE) || m.content.ends_with(UNRESOLVED_NOTICE))
        }) {
            let mut moved = notice.clone();
            moved.recipient = Recipient::Channel {
                channel_id: new_channel,
                topic: new_topic,
            };
            return vec![deletion(state, &[&moved])];
        }
        let resolved = new_topic.starts_with(crate::projections::messages::RESOLVED_TOPIC_PREFIX);
        let text = if resolved {
            RESOLVED_NOTICE
        } else {
            UNRESOLVED_NOTICE
        };
        notices.to_channel(new_channel, &new_topic, format!("{user}{text}"));
        return notices.into_events();
    }
    let count = mv.message_ids.len();
    let left_behind = state
        .messages
        .in_topic(*old_channel, old_topic)
        .into_iter()
        .flatten()
        .any(|id| !mv.message_ids.contains(id));
    let destination_had = state
        .messages
        .in_topic(new_channel, &new_topic)
        .is_some_and(|ids| ids.iter().any(|id| !mv.message_ids.contains(id)));
    let old_link = topic_link(*old_channel, &name_of(*old_channel), old_topic);
    let new_link = topic_link(new_channel, &name_of(new_channel), &new_topic);
    if request.notify_new_thread {
        let text = if !left_behind && !destination_had {
            format!("This topic was moved here from {old_link} by {user}.")
        } else if count == 1 {
            let url = format!(
                "{}/{}/topic/{}/near/{}",
                request.realm_url,
                channel_narrow(new_channel, &name_of(new_channel)),
                encode_hash_component(&new_topic),
                message.id
            );
            format!("[A message]({url}) was moved here from {old_link} by {user}.")
        } else {
            format!("{count} messages were moved here from {old_link} by {user}.")
        };
        notices.to_channel(new_channel, &new_topic, text);
    }
    if request.notify_old_thread {
        let text = if !left_behind {
            format!("This topic was moved to {new_link} by {user}.")
        } else if count == 1 {
            format!("A message was moved from this topic to {new_link} by {user}.")
        } else {
            format!("{count} messages were moved from this topic to {new_link} by {user}.")
        };
        notices.to_channel(*old_channel, old_topic, text);
    }
    notices.into_events()
}

/// Whether `user` is covered by the organization's setting `realm` or the channel's `channel`.
fn allowed_here(
    state: &Projections,
    user: &User,
    realm: &str,
    channel: Option<&crate::events::GroupSetting>,
) -> bool {
    state.realm_allows(user.user_id, realm)
        || channel.is_some_and(|s| state.groups.setting_allows(&state.users, user.user_id, s))
}

/// `PATCH /messages/{id}`: edit content, move to another topic and/or channel, resolve.
pub fn edit_message(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    request: EditRequest,
) -> ApiResult<(Vec<Event>, ())> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let now = ctx.now_ms / 1000;
    if request.content.is_some() && request.channel_id.is_some() {
        return Err(ApiError::bad_request(
            "Cannot change message content while changing channel",
        ));
    }
    if request.content.is_none() && request.topic.is_none() && request.channel_id.is_none() {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    if request.propagate_mode != PropagateMode::ChangeOne
        && request.topic.is_none()
        && request.channel_id.is_none()
    {
        return Err(ApiError::bad_request(
            "Invalid propagate_mode without topic edit",
        ));
    }
    let content = match &request.content {
        None => None,
        Some(raw) => {
            if message.sender_id != me.user_id {
                return Err(ApiError::bad_request(
                    "You don't have permission to edit this message",
                ));
            }
            if !state.realm.flag("allow_message_editing") {
                return Err(ApiError::bad_request(
                    "Your organization has turned off message editing",
                ));
            }
            if past_limit(
                state,
                "message_content_edit_limit_seconds",
                message.timestamp,
                now,
            ) {
                return Err(ApiError::bad_request(
                    "The time limit for editing this message has passed",
                ));
            }
            let raw = raw.trim_end();
            // Zulip turns emptied content into a deletion marker rather than an empty message.
            let raw = if raw.trim().is_empty() {
                "(deleted)".to_owned()
            } else {
                truncate(raw, MAX_MESSAGE_LENGTH, "\n[message truncated]")
            };
            let rendered = render_message(&raw, &OrgResolver(state));
            Some(Box::new(EditedContent {
                is_me_message: raw.starts_with("/me ") && !raw.contains('\n'),
                content: raw.into(),
                rendered_content: rendered.html.into(),
                mentioned: rendered.mentioned.into_iter().map(UserId).collect(),
                stream_wildcard: rendered.stream_wildcard,
                topic_wildcard: rendered.topic_wildcard,
            }))
        }
    };
    let moved = if request.topic.is_some() || request.channel_id.is_some() {
        Some(Box::new(plan_move(state, me, message, &request, now)?))
    } else {
        None
    };
    let unchanged_content = content
        .as_ref()
        .is_some_and(|c| *c.content == *message.content);
    if moved.is_none() && unchanged_content {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    let notices = moved
        .as_deref()
        .map(|mv| move_notices(state, me, message, mv, &request, now))
        .unwrap_or_default();
    let policies = moved
        .as_deref()
        .map(|mv| move_topic_policies(state, message, mv))
        .unwrap_or_default();
    let mut events = vec![Event::MessageEdited {
        message_id,
        user_id: me.user_id,
        content: content.filter(|_| !unchanged_content),
        moved,
    }];
    events.extend(policies);
    events.extend(notices);
    Ok((events, ()))
}

/// Decides a topic and/or channel move: permissions, limits, and which messages go.
fn plan_move(
    state: &Projections,
    me: &User,
    message: &Message,
    request: &EditRequest,
    now: i64,
) -> ApiResult<MessageMove> {
    let Recipient::Channel { channel_id, topic } = &message.recipient else {
        return Err(ApiError::bad_request(
            "Direct messages cannot be moved to channels.",
        ));
    };
    let channel = state
        .channels
        .get(*channel_id)
        .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?;
    let new_topic = request
        .topic
        .as_deref()
        .map(|t| truncate(t.trim(), MAX_TOPIC_LENGTH, "..."))
        .filter(|t| t != topic);
    let new_channel = match request.channel_id.filter(|id| id != channel_id) {
        None => None,
        Some(id) => Some(
            state
                .channels
                .get(id)
                .filter(|c| access(state, me, c) != Access::None && !c.is_archived)
                .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?,
        ),
    };
    if new_topic.is_none() && new_channel.is_none() {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    let moderator = me.role.is_admin() || me.role == Role::Moderator;
    if let Some(new_topic) = &new_topic {
        let resolving = crate::projections::messages::is_resolve_toggle(topic, new_topic);
        if resolving && topic.is_empty() {
            return Err(ApiError::bad_request(
                "General chat cannot be marked as resolved",
            ));
        }
        let target = new_channel.unwrap_or(channel);
        if new_topic.is_empty() && state.topics_policy(target) == TopicsPolicy::DisableEmptyTopic {
            return Err(ApiError::bad_request(
                "Sending messages to the general chat is not allowed in this channel.",
            ));
        }
        if !new_topic.is_empty() && state.topics_policy(target) == TopicsPolicy::EmptyTopicOnly {
            return Err(ApiError::bad_request(
                "Only the general chat topic is allowed in this channel.",
            ));
        }
        let permitted = if resolving {
            allowed_here(
                state,
                me,
                "can_resolve_topics_group",
                Some(&channel.permissions.can_resolve_topics_group),
            )
        } else {
            allowed_here(
                state,
                me,
                "can_move_messages_between_topics_group",
                Some(&channel.permissions.can_move_messages_within_channel_group),
            )
        };
        if !permitted {
            return Err(ApiError::bad_request(
                "You don't have permission to edit this message",
            ));
        }
    }
    if new_channel.is_some()
        && !allowed_here(
            state,
            me,
            "can_move_messages_between_channels_group",
            Some(&channel.permissions.can_move_messages_out_of_channel_group),
        )
    {
        return Err(ApiError::bad_request(
            "You don't have permission to move this message",
        ));
    }
    let in_topic = state.messages.in_topic(*channel_id, topic);
    let mut message_ids: Vec<MessageId> = match request.propagate_mode {
        PropagateMode::ChangeOne => vec![message.id],
        PropagateMode::ChangeLater => in_topic
            .into_iter()
            .flatten()
            .copied()
            .filter(|id| *id >= message.id)
            .collect(),
        PropagateMode::ChangeAll => in_topic.into_iter().flatten().copied().collect(),
    };
    if !message_ids.contains(&message.id) {
        message_ids.push(message.id);
    }
    message_ids.sort();
    if !moderator {
        let limit = if new_channel.is_some() {
            "move_messages_between_streams_limit_seconds"
        } else {
            "move_messages_within_stream_limit_seconds"
        };
        let limit_from = state
            .realm
            .limit_secs(limit)
            .map(|secs| now.saturating_sub(secs));
        let too_old = |id: &MessageId| {
            limit_from
                .is_some_and(|from| state.messages.get(*id).is_some_and(|m| m.timestamp < from))
        };
        if request.propagate_mode == PropagateMode::ChangeOne && too_old(&message.id) {
            return Err(ApiError::bad_request(
                "The time limit for editing this message's topic has passed.",
            ));
        }
        let allowed: Vec<&MessageId> = message_ids.iter().filter(|id| !too_old(id)).collect();
        if allowed.len() < message_ids.len() {
            let total = message_ids.len();
            let mut error = ApiError::new(
                ErrorCode::MoveMessagesTimeLimitExceeded,
                format!(
                    "You only have permission to move the {} most recent messages in this topic.",
                    allowed.len()
                ),
            )
            .with("total_messages_in_topic", total)
            .with("total_messages_allowed_to_move", allowed.len());
            error = error.with(
                "first_message_id_allowed_to_move",
                allowed.first().map(|id| id.0),
            );
            return Err(error);
        }
    }
    Ok(MessageMove {
        message_ids,
        propagate_mode: request.propagate_mode,
        new_topic,
        new_channel_id: new_channel.map(|c| c.id),
    })
}

/// `DELETE /messages/{id}`.
pub fn delete_message(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
) -> ApiResult<(Vec<Event>, ())> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let channel = message.channel().and_then(|id| state.channels.get(id));
    let may_delete_any = allowed_here(
        state,
        me,
        "can_delete_any_message_group",
        channel.map(|c| &c.permissions.can_delete_any_message_group),
    );
    if !may_delete_any {
        let may_delete_own = message.sender_id == me.user_id
            && allowed_here(
                state,
                me,
                "can_delete_own_message_group",
                channel.map(|c| &c.permissions.can_delete_own_message_group),
            );
        if !may_delete_own {
            return Err(ApiError::bad_request(
                "You don't have permission to delete this message",
            ));
        }
        if past_limit(
            state,
            "message_content_delete_limit_seconds",
            message.timestamp,
            ctx.now_ms / 1000,
        ) {
            return Err(ApiError::bad_request(
                "The time limit for deleting this message has passed",
            ));
        }
    }
    Ok((vec![deletion(state, &[message])], ()))
}

const DAY_SECS: i64 = 86_400;

/// The retention job: deletes messages older than their retention period as of `ctx.now_ms`
/// (a channel's `message_retention_days`, or the organization's when it inherits; direct
/// messages by the organization's), at most `limit` at a time, one deletion per conversation.
/// Returns how many it deleted; the job runs it again until that is 0.
pub fn expire_messages(
    state: &Projections,
    ctx: &Ctx,
    limit: usize,
) -> ApiResult<(Vec<Event>, usize)> {
    let now = ctx.now_ms / 1000;
    let days = |value: Option<i64>| value.filter(|d| *d > 0);
    let realm_days = days(match state.realm.value("message_retention_days") {
        crate::events::RealmValue::Int(n) => Some(n),
        _ => None,
    });
    // (cutoff in seconds, the messages of one conversation in id order)
    let mut sources: Vec<(i64, &BTreeSet<MessageId>)> = Vec::new();
    for channel in state.channels.iter() {
        let retention = match channel.message_retention_days {
            None => realm_days,
            Some(n) => days(Some(i64::from(n))),
        };
        if let (Some(d), Some(ids)) = (retention, state.messages.in_channel(channel.id)) {
            sources.push((now.saturating_sub(d.saturating_mul(DAY_SECS)), ids));
        }
    }
    if let Some(d) = realm_days {
        let cutoff = now.saturating_sub(d.saturating_mul(DAY_SECS));
        sources.extend(state.messages.conversations().map(|ids| (cutoff, ids)));
    }
    let mut groups: BTreeMap<String, Vec<&Message>> = BTreeMap::new();
    let mut taken = 0;
    'sources: for (cutoff, ids) in sources {
        for id in ids {
            let Some(message) = state.messages.get(*id) else {
                continue;
            };
            if message.timestamp >= cutoff {
                break;
            }
            if taken == limit {
                break 'sources;
            }
            let key = match &message.recipient {
                Recipient::Channel { channel_id, topic } => {
                    format!(
                        "c{channel_id}/{}",
                        crate::projections::user_topics::topic_key(topic)
                    )
                }
                Recipient::Direct { user_ids } => format!("d{user_ids:?}"),
            };
            groups.entry(key).or_default().push(message);
            taken += 1;
        }
    }
    let events = groups
        .values()
        .map(|messages| deletion(state, messages))
        .collect();
    Ok((events, taken))
}

/// The deletion of some messages of one conversation, with everyone to tell: the users holding
/// a copy and, for channel messages, the channel's subscribers.
pub fn deletion(state: &Projections, messages: &[&Message]) -> Event {
    let mut holders: BTreeSet<UserId> = BTreeSet::new();
    for message in messages {
        holders.extend(state.messages.holders(message.id));
        if let Some(channel) = message.channel().and_then(|id| state.channels.get(id)) {
            holders.extend(channel.subscribers.iter().copied());
        }
    }
    let mut message_ids: Vec<MessageId> = messages.iter().map(|m| m.id).collect();
    message_ids.sort();
    Event::MessagesDeleted {
        message_ids,
        recipient: messages
            .first()
            .map(|m| m.recipient.clone())
            .unwrap_or(Recipient::Direct {
                user_ids: Vec::new(),
            }),
        holders: holders.into_iter().collect(),
    }
}

/// `POST /submessage`, with Zulip's rules: the caller must be able to read the message, the
/// first submessage must come from the message's sender, and the content must be JSON.
pub fn add_submessage(
    state: &Projections,
    ctx: &Ctx,
    message_id: MessageId,
    msg_type: String,
    content: String,
) -> ApiResult<(Vec<Event>, ())> {
    let me = actor(state, ctx)?;
    let message = readable(state, me, message_id)?;
    let sender_started = message.sender_id == me.user_id
        || message
            .submessages()
            .iter()
            .any(|sm| sm.sender_id == message.sender_id);
    if !sender_started {
        return Err(ApiError::bad_request(
            "You cannot attach a submessage to this message.",
        ));
    }
    if serde_json::from_str::<serde_json::Value>(&content).is_err() {
        return Err(ApiError::bad_request("Invalid json for submessage"));
    }
    Ok((
        vec![Event::SubmessageAdded {
            submessage_id: state.messages.next_submessage_id(),
            message_id,
            sender_id: me.user_id,
            msg_type,
            content,
        }],
        (),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::channels::{create_channel, ChannelSpec};
    use crate::commands::users::{create_realm, create_user, NewUser};
    use crate::events::{Envelope, SCHEMA_VERSION};

    const MINUTE_MS: i64 = 60_000;
    const SENT_MS: i64 = 1_000_000_000;

    /// Folds a command's events at time `at` (ms), as the engine would.
    fn fold(state: &mut Projections, at: i64, events: Vec<Event>) {
        for event in events {
            let env = Envelope {
                seq: state.seq.next(),
                at,
                actor: None,
                schema_version: SCHEMA_VERSION,
                event,
            };
            state.apply(&env);
        }
    }

    fn ctx(actor: u64, at: i64) -> Ctx {
        Ctx {
            now_ms: at,
            actor: Some(UserId(actor)),
        }
    }

    fn user(email: &str, role: Role) -> NewUser {
        NewUser {
            email: email.into(),
            full_name: email.split('@').next().unwrap_or_default().into(),
            role,
            password_hash: None,
            api_key_nonce: "n".into(),
        }
    }

    /// The owner (1) and Alice (2) in #general; Alice sent message 1 ("old", at `SENT_MS`) and
    /// message 2 ("new", eight days later) to the topic "t".
    fn org() -> Projections {
        let mut state = Projections::default();
        let (events, _) = create_realm(&state, "Org", "", user("o@x.org", Role::Owner)).unwrap();
        fold(&mut state, 0, events);
        let (events, _) = create_user(&state, &ctx(1, 0), user("a@x.org", Role::Member)).unwrap();
        fold(&mut state, 0, events);
        let spec = ChannelSpec {
            name: "general".into(),
            ..ChannelSpec::default()
        };
        let (events, _) = create_channel(&state, &ctx(1, 0), spec, vec![UserId(2)], false).unwrap();
        fold(&mut state, 0, events);
        for (at, text) in [(SENT_MS, "old"), (SENT_MS + 8 * 24 * 60 * MINUTE_MS, "new")] {
            let to = Destination::Channel {
                channel: ChannelRef::Name("general".into()),
                topic: "t".into(),
            };
            let (events, _) = send_message(&state, &ctx(2, at), to, text, "test", None).unwrap();
            fold(&mut state, at, events);
        }
        state
    }

    fn edit(content: Option<&str>, topic: Option<&str>, mode: PropagateMode) -> EditRequest {
        EditRequest {
            content: content.map(str::to_owned),
            topic: topic.map(str::to_owned),
            channel_id: None,
            propagate_mode: mode,
            notify_old_thread: false,
            notify_new_thread: false,
            realm_url: String::new(),
        }
    }

    fn msg(err: ApiError) -> String {
        err.body()["msg"].as_str().unwrap_or_default().to_owned()
    }

    #[test]
    fn retention_deletes_what_outlived_its_period() {
        const DAY: i64 = 24 * 60 * MINUTE_MS;
        let mut state = org();
        // A direct message too, sent with the first channel message.
        let to = Destination::Direct {
            user_ids: vec![UserId(1)],
        };
        let (events, _) = send_message(&state, &ctx(2, SENT_MS), to, "dm", "test", None).unwrap();
        fold(&mut state, SENT_MS, events);
        let now = SENT_MS + 9 * DAY;
        // Nothing expires while everything is kept forever (the default).
        let (events, count) = expire_messages(&state, &ctx(1, now), 1000).unwrap();
        assert_eq!((events.len(), count), (0, 0));
        // A channel keeping five days loses the nine-day-old message, not the one-day-old one;
        // direct messages follow the organization, which still keeps everything.
        fold(
            &mut state,
            now,
            vec![Event::ChannelChanged {
                channel_id: ChannelId(1),
                change: crate::events::ChannelChange::MessageRetentionDays(Some(5)),
            }],
        );
        let (events, count) = expire_messages(&state, &ctx(1, now), 1000).unwrap();
        assert_eq!(count, 1);
        fold(&mut state, now, events);
        assert!(state.messages.get(MessageId(1)).is_none());
        assert!(state.messages.get(MessageId(2)).is_some());
        assert!(state.messages.get(MessageId(3)).is_some());
        // An organization keeping a week takes the direct message; the channel's own
        // "forever" wins over it.
        fold(
            &mut state,
            now,
            vec![
                Event::RealmSettingChanged {
                    name: "message_retention_days".into(),
                    value: crate::events::RealmValue::Int(7),
                },
                Event::ChannelChanged {
                    channel_id: ChannelId(1),
                    change: crate::events::ChannelChange::MessageRetentionDays(Some(-1)),
                },
            ],
        );
        let (events, count) = expire_messages(&state, &ctx(1, now + 30 * DAY), 1).unwrap();
        assert_eq!(count, 1);
        fold(&mut state, now, events);
        assert!(state.messages.get(MessageId(3)).is_none());
        assert!(state.messages.get(MessageId(2)).is_some());
    }

    #[test]
    fn content_edits_and_deletions_have_time_limits() {
        let state = org();
        let first = MessageId(1);
        let change = || edit(Some("changed"), None, PropagateMode::ChangeOne);
        // Ten minutes plus Zulip's grace period, and not a second more.
        let last_moment = SENT_MS + 10 * MINUTE_MS + 20_000;
        assert!(edit_message(&state, &ctx(2, last_moment), first, change()).is_ok());
        let late = edit_message(&state, &ctx(2, last_moment + 1_000), first, change());
        assert_eq!(
            msg(late.unwrap_err()),
            "The time limit for editing this message has passed"
        );
        assert!(delete_message(&state, &ctx(2, last_moment), first).is_ok());
        let late = delete_message(&state, &ctx(2, last_moment + 1_000), first);
        assert_eq!(
            msg(late.unwrap_err()),
            "The time limit for deleting this message has passed"
        );
        // Administrators delete any message, at any time.
        let (events, ()) = delete_message(&state, &ctx(1, last_moment + 1_000), first).unwrap();
        assert!(matches!(
            &events[..],
            [Event::MessagesDeleted { message_ids, holders, .. }]
                if message_ids == &[first] && holders == &[UserId(2)]
        ));
    }

    #[test]
    fn topic_moves_have_a_week_for_members_and_no_limit_for_administrators() {
        let state = org();
        let now = SENT_MS + 8 * 24 * 60 * MINUTE_MS + MINUTE_MS;
        let one = edit(None, Some("u"), PropagateMode::ChangeOne);
        let err = edit_message(&state, &ctx(2, now), MessageId(1), one.clone()).unwrap_err();
        assert_eq!(
            msg(err),
            "The time limit for editing this message's topic has passed."
        );
        // Moving the whole topic would take the week-old message along: refused, with counts.
        let all = edit(None, Some("u"), PropagateMode::ChangeAll);
        let err = edit_message(&state, &ctx(2, now), MessageId(2), all.clone()).unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::MoveMessagesTimeLimitExceeded));
        let body = err.body();
        assert_eq!(
            (
                body["total_messages_in_topic"].clone(),
                body["total_messages_allowed_to_move"].clone(),
                body["first_message_id_allowed_to_move"].clone(),
            ),
            (
                serde_json::json!(2),
                serde_json::json!(1),
                serde_json::json!(2)
            )
        );
        // The newer message alone may move; the owner moves everything.
        assert!(edit_message(&state, &ctx(2, now), MessageId(2), one.clone()).is_ok());
        let (events, ()) = edit_message(&state, &ctx(1, now), MessageId(2), all).unwrap();
        assert!(matches!(
            &events[..],
            [Event::MessageEdited { moved: Some(m), content: None, .. }]
                if m.message_ids == [MessageId(1), MessageId(2)]
        ));
    }
}

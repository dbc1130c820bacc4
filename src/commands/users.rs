//! Organization setup and account lifecycle.

use super::Decision;
use super::{actor, admin};
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::EMBEDDED_BOT;
use crate::events::GENERIC_BOT;
use crate::events::INCOMING_WEBHOOK_BOT;
use crate::events::OUTGOING_WEBHOOK_BOT;
use crate::events::{BotConfig, BotService, Event, Role, UserChange};
use crate::ids::{ChannelId, UserId};
use crate::projections::{Projections, User};

/// Zulip's `UserProfile.MAX_NAME_LENGTH`.
pub const MAX_FULL_NAME_LENGTH: usize = 100;
/// Zulip's minimum password length (`PASSWORD_MIN_LENGTH`).
pub const MIN_PASSWORD_LENGTH: usize = 6;
/// Zulip's `PASSWORD_MAX_LENGTH` (`password_max_length` in `/register`).
pub const MAX_PASSWORD_LENGTH: usize = 100;

/// A new account, with its secrets already prepared by the caller.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub full_name: String,
    pub role: Role,
    pub password_hash: Option<String>,
    pub api_key_nonce: String,
}

/// Checks an address the way a user would expect: one `@`, something on both sides, a dot-free
/// or dotted domain without spaces, at most 254 characters.
pub fn validate_email(email: &str) -> bool {
    let Some((local, domain)) = email.rsplit_once('@') else {
        return false;
    };
    email.len() <= 254
        && !local.is_empty()
        && !domain.is_empty()
        && !local.contains('@')
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
}

/// Whether an address is taken: by an account, or reserved for the server's own bots (which
/// may not exist yet: the notification bot is created with its first notice).
pub fn email_taken(state: &Projections, email: &str) -> bool {
    state.users.by_email(email).is_some()
        || crate::projections::email_key(email) == super::notices::NOTIFICATION_BOT_EMAIL
}

/// Why `user` may not take `email` as their address now, in Zulip's words (`PATCH /settings`
/// `email`, and again when the confirmation link is opened): the organization's
/// `email_changes_disabled` (administrators excepted), a malformed address, one with an
/// account, or one outside the allowed domains.
pub fn email_change_refusal(state: &Projections, user: &User, email: &str) -> Option<ApiError> {
    if user.is_bot() {
        return Some(ApiError::bad_request("A bot's address cannot be changed."));
    }
    if state.realm.flag("email_changes_disabled") && !user.role.is_admin() {
        return Some(ApiError::bad_request(
            "Email address changes are disabled in this organization.",
        ));
    }
    if !validate_email(email) {
        return Some(ApiError::bad_request("Invalid address."));
    }
    let same_address =
        crate::projections::email_key(email) == crate::projections::email_key(&user.email);
    if !same_address && email_taken(state, email) {
        return Some(ApiError::bad_request("Already has an account."));
    }
    if super::realm_domains::email_refusal(state, email).is_some() {
        return Some(super::realm_domains::not_allowed(email));
    }
    None
}

/// A person's own address change, confirmed from the new address: `from` is the address the
/// link was made for, so a link works once (and not after another change).
pub fn change_own_email(
    state: &Projections,
    ctx: &Ctx,
    from: &str,
    to: &str,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    if me.email != from {
        return Err(ApiError::bad_request("Invalid confirmation link"));
    }
    if let Some(refusal) = email_change_refusal(state, me, to) {
        return Err(refusal);
    }
    Ok(Decision::events(vec![Event::UserEmailChanged {
        user_id: me.user_id,
        email: to.to_owned(),
    }]))
}

/// Zulip's `check_full_name`: trimmed, non-empty, at most 100 characters, no control characters.
pub fn check_full_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("Name too short!"));
    }
    if name.chars().count() > MAX_FULL_NAME_LENGTH {
        return Err(ApiError::bad_request("Name too long!"));
    }
    // Zulip refuses the characters of its mention syntax as well as control characters.
    if name
        .chars()
        .any(|c| c.is_control() || matches!(c, '*' | '`' | '\\' | '>' | '"' | '@'))
    {
        return Err(ApiError::bad_request("Invalid characters in name!"));
    }
    // `Name|123` would read as a mention of user 123.
    if let Some((_, tail)) = name.rsplit_once('|') {
        if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit()) {
            return Err(ApiError::bad_request("Invalid format!"));
        }
    }
    Ok(name.to_owned())
}

/// With the organization's `require_unique_names`, no two active accounts share a name
/// (compared case-insensitively).
pub fn check_unique_name(state: &Projections, name: &str, except: Option<UserId>) -> ApiResult<()> {
    let taken = state.realm.flag("require_unique_names")
        && state.users.iter().any(|u| {
            u.is_active
                && Some(u.user_id) != except
                && u.full_name.to_lowercase() == name.to_lowercase()
        });
    if taken {
        return Err(ApiError::bad_request(
            "Unique names required in this organization.",
        ));
    }
    Ok(())
}

/// First start: the organization and its owner, who may create users.
pub fn create_realm(
    state: &Projections,
    name: &str,
    description: &str,
    owner: NewUser,
) -> ApiResult<Decision<UserId>> {
    if state.realm.exists {
        return Err(ApiError::bad_request("The organization already exists"));
    }
    if !validate_email(&owner.email) {
        return Err(ApiError::bad_request(format!(
            "Invalid email '{}'",
            owner.email
        )));
    }
    let user_id = UserId(state.users.max_id().0 + 1);
    let mut events = vec![
        Event::RealmCreated {
            name: name.to_owned(),
            description: description.to_owned(),
        },
        user_created(user_id, owner, true),
    ];
    events.extend(super::groups::ensure_system_groups(state));
    Ok(Decision::new(events, user_id))
}

fn user_created(user_id: UserId, user: NewUser, can_create_users: bool) -> Event {
    Event::UserCreated {
        user_id,
        email: user.email,
        full_name: user.full_name,
        role: user.role,
        bot_type: None,
        bot_owner_id: None,
        timezone: String::new(),
        can_create_users,
        password_hash: user.password_hash,
        api_key_nonce: user.api_key_nonce,
        bot: None,
    }
}

/// `POST /users`: an administrator with the `can_create_users` permission creates a member.
pub fn create_user(state: &Projections, ctx: &Ctx, user: NewUser) -> ApiResult<Decision<UserId>> {
    let creator = admin(state, ctx)?;
    if !creator.can_create_users {
        return Err(ApiError::bad_request("User not authorized to create users"));
    }
    if !validate_email(&user.email) {
        return Err(ApiError::bad_request(format!(
            "Invalid email '{}'",
            user.email
        )));
    }
    if email_taken(state, &user.email) {
        return Err(ApiError::bad_request("Email is already in use."));
    }
    let user = NewUser {
        full_name: check_full_name(&user.full_name)?,
        ..user
    };
    check_unique_name(state, &user.full_name, None)?;
    let user_id = UserId(state.users.max_id().0 + 1);
    Ok(Decision::new(
        new_account(state, user_id, user, false),
        user_id,
    ))
}

/// The events of a new human account `user_id` (its name checked): created, subscribed to
/// the default channels, announced where the organization announces sign-ups, and, when the
/// person is joining by themselves (`greet`), greeted by Welcome Bot. Accounts an administrator
/// or a provisioning system makes for someone (`POST /users`, SCIM) are not greeted, where
/// Zulip greets every account.
pub fn new_account(state: &Projections, user_id: UserId, user: NewUser, greet: bool) -> Vec<Event> {
    let full_name = user.full_name.clone();
    let mention = format!("@_**{full_name}|{user_id}**");
    let mut events = vec![user_created(user_id, user, false)];
    events.extend(super::channels::default_subscriptions(state, user_id));
    let mut notices = super::notices::Notices::reserving(state, 1).knowing(user_id, &full_name);
    signup_notices(state, &mention, &mut notices);
    if greet {
        welcome(state, user_id, None, &mut notices);
    }
    events.extend(notices.into_events());
    events
}

/// Welcome Bot's greeting of a new account, then the administrators' note: `note` (an
/// invitation's own; empty for none), else the organization's `welcome_message_custom_text`.
/// Zulip's `send_initial_direct_message`, in Chronicle's words. Ends with Welcome Bot sending.
pub fn welcome(
    state: &Projections,
    user_id: UserId,
    note: Option<&str>,
    notices: &mut super::notices::Notices<'_>,
) {
    use super::notices::{WELCOME_BOT_EMAIL, WELCOME_BOT_NAME};
    notices.sending_as(WELCOME_BOT_EMAIL, WELCOME_BOT_NAME);
    notices.to_user(user_id, welcome_greeting(&state.realm.name));
    let realm_note = state.realm.text("welcome_message_custom_text");
    let note = note.unwrap_or(&realm_note);
    if !note.trim().is_empty() {
        notices.to_user(user_id, welcome_note(note));
    }
}

/// Welcome Bot's first message.
fn welcome_greeting(organization: &str) -> String {
    format!(
        "Hello, and welcome to {organization}! :wave: I'm Welcome Bot.\n\n\
         A few things to get you going:\n\
         * **Channels** hold the organization's conversations, each split into **topics**. \
         Browse them from the channel list and subscribe to the ones you want to follow.\n\
         * **Direct messages** are for one person or a small group.\n\
         * Your name, picture, time zone and notifications are in your **settings**.\n\
         * Search finds words as you type them, and `sender:`, `channel:` or `has:image` \
         narrow it down.\n\n\
         Nobody reads this conversation, so there is no need to answer."
    )
}

/// The administrators' note, quoted in a fence its text does not use (as Zulip quotes it).
pub fn welcome_note(text: &str) -> String {
    let fence = super::notices::unused_fence(text);
    format!("\nA note from @_*role:administrators*:\n{fence}quote\n{text}\n{fence}\n")
}

/// `POST /realm/test_welcome_bot_custom_message`: the note as Welcome Bot would send it, to
/// the administrator asking. Its message id.
pub fn test_welcome_note(
    state: &Projections,
    ctx: &Ctx,
    text: &str,
) -> ApiResult<Decision<crate::ids::MessageId>> {
    let me = admin(state, ctx)?;
    if text.trim().is_empty() {
        return Err(ApiError::bad_request("Message must not be empty"));
    }
    use crate::projections::realm::MAX_WELCOME_TEXT_LENGTH;
    if text.chars().count() > MAX_WELCOME_TEXT_LENGTH {
        return Err(ApiError::bad_request(format!(
            "welcome_message_custom_text is too long (limit: {MAX_WELCOME_TEXT_LENGTH} characters)"
        )));
    }
    let mut notices = super::notices::Notices::as_system_bot(
        state,
        super::notices::WELCOME_BOT_EMAIL,
        super::notices::WELCOME_BOT_NAME,
    );
    let id = notices.to_user(me.user_id, welcome_note(text));
    Ok(Decision::new(notices.into_events(), id))
}

/// The sign-up announcement of a new account (`mention` names it), where the organization has
/// a channel for them (topic "signups").
pub fn signup_notices(
    state: &Projections,
    mention: &str,
    notices: &mut super::notices::Notices<'_>,
) {
    let signups = state
        .realm
        .channel("signup_announcements_stream_id")
        .and_then(|id| state.channels.get(id))
        .filter(|c| !c.is_archived);
    if let Some(channel) = signups {
        notices.to_channel(
            channel.id,
            "signups",
            format!("{mention} joined this organization."),
        );
    }
}

/// A bot asked for through `POST /bots`, with its address built and its nonce drawn.
#[derive(Debug, Clone)]
pub struct NewBot {
    /// `{short_name}-bot@{domain}`.
    pub email: String,
    pub full_name: String,
    pub bot_type: u8,
    pub api_key_nonce: String,
    /// Channel names, resolved against what the owner may see.
    pub default_sending_stream: Option<String>,
    pub default_events_register_stream: Option<String>,
    pub default_all_public_streams: bool,
    /// For outgoing webhook bots.
    pub service: Option<BotService>,
}

/// `POST /bots`: a member (or better) in `can_create_bots_group` creates a bot they own;
/// `can_create_write_only_bots_group` is enough for incoming webhook bots.
pub fn create_bot(state: &Projections, ctx: &Ctx, bot: NewBot) -> ApiResult<Decision<UserId>> {
    let owner = human_member(state, ctx)?;
    let full_name = check_full_name(&bot.full_name)?;
    if bot.bot_type == EMBEDDED_BOT {
        // Zulip's EMBEDDED_BOTS_ENABLED is off unless a server administrator turns it on;
        // Chronicle runs no embedded bots.
        return Err(ApiError::bad_request("Embedded bots are not enabled."));
    }
    if email_taken(state, &bot.email) {
        return Err(ApiError::bad_request("Email is already in use."));
    }
    if state
        .users
        .iter()
        .any(|u| u.is_active && u.full_name == full_name)
    {
        return Err(ApiError::bad_request("Name is already in use."));
    }
    let general = state.realm_allows(owner.user_id, "can_create_bots_group");
    let write_only = state.realm_allows(owner.user_id, "can_create_write_only_bots_group");
    if !(general || (write_only && bot.bot_type == INCOMING_WEBHOOK_BOT)) {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let allowed: &[u8] = if general {
        &[GENERIC_BOT, INCOMING_WEBHOOK_BOT, OUTGOING_WEBHOOK_BOT]
    } else {
        &[INCOMING_WEBHOOK_BOT]
    };
    if !allowed.contains(&bot.bot_type) {
        return Err(ApiError::bad_request("Invalid bot type"));
    }
    let channel = |name: Option<String>| -> ApiResult<Option<ChannelId>> {
        let Some(name) = name else { return Ok(None) };
        state
            .channels
            .by_name(&name)
            .filter(|c| {
                crate::projections::access(state, owner, c) != crate::projections::Access::None
            })
            .map(|c| Some(c.id))
            .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'")))
    };
    let config = BotConfig {
        default_sending_stream: channel(bot.default_sending_stream)?,
        default_events_register_stream: channel(bot.default_events_register_stream)?,
        default_all_public_streams: bot.default_all_public_streams,
        services: if bot.bot_type == OUTGOING_WEBHOOK_BOT {
            bot.service.into_iter().collect()
        } else {
            Vec::new()
        },
        system: false,
    };
    let user_id = UserId(state.users.max_id().0 + 1);
    Ok(Decision::new(
        vec![Event::UserCreated {
            user_id,
            email: bot.email,
            full_name,
            role: Role::Member,
            bot_type: Some(bot.bot_type),
            bot_owner_id: Some(owner.user_id),
            timezone: String::new(),
            can_create_users: false,
            password_hash: None,
            api_key_nonce: bot.api_key_nonce,
            bot: Some(Box::new(config)),
        }],
        user_id,
    ))
}

/// The acting user, who must be a human member or better (Zulip's `require_member_or_admin`).
pub fn human_member<'a>(
    state: &'a Projections,
    ctx: &Ctx,
) -> ApiResult<&'a crate::projections::User> {
    let me = actor(state, ctx)?;
    super::groups::check_group_caller(me)?;
    Ok(me)
}

/// `DELETE /bots/{bot_id}`: the bot's owner or an administrator deactivates it.
pub fn deactivate_bot(state: &Projections, ctx: &Ctx, target: UserId) -> ApiResult<Decision> {
    let bot = managed_bot(state, ctx, target)?;
    if !bot.is_active {
        return Err(ApiError::bad_request("User is deactivated"));
    }
    Ok(Decision::events(vec![Event::UserDeactivated {
        user_id: target,
    }]))
}

/// A bot the caller may manage (its owner, or an administrator): "No such bot" and
/// "Insufficient permission" otherwise, as Zulip's `access_bot_by_id`.
pub fn managed_bot<'a>(
    state: &'a Projections,
    ctx: &Ctx,
    target: UserId,
) -> ApiResult<&'a crate::projections::User> {
    let me = actor(state, ctx)?;
    let bot = state
        .users
        .get(target)
        .filter(|u| u.is_bot() && !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such bot"))?;
    if bot.bot_owner_id != Some(me.user_id) && !me.role.is_admin() {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    Ok(bot)
}

/// `POST /bots/{bot_id}/api_key/regenerate`: a new key for a bot the caller manages.
pub fn regenerate_bot_key(
    state: &Projections,
    ctx: &Ctx,
    target: UserId,
    api_key_nonce: String,
) -> ApiResult<Decision> {
    managed_bot(state, ctx, target)?;
    Ok(Decision::events(vec![Event::ApiKeyRegenerated {
        user_id: target,
        api_key_nonce,
    }]))
}

/// `POST /users/me/api_key/regenerate`.
pub fn regenerate_api_key(
    state: &Projections,
    ctx: &Ctx,
    api_key_nonce: String,
) -> ApiResult<Decision<UserId>> {
    let me = actor(state, ctx)?;
    Ok(Decision::new(
        vec![Event::ApiKeyRegenerated {
            user_id: me.user_id,
            api_key_nonce,
        }],
        me.user_id,
    ))
}

/// What `DELETE /users/{user_id}` also removes (Zulip's `actions`), for the user and the bots
/// they own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeactivationActions {
    /// The name becomes "Deleted user" (the avatar is a generated one anyway).
    pub delete_profile: bool,
    pub delete_public_channel_messages: bool,
    pub delete_private_channel_messages: bool,
    pub delete_direct_messages: bool,
}

/// The events removing what `actions` asks for of `user`'s profile and messages: deletions
/// grouped by conversation (one channel topic, or one direct-message conversation).
fn deletion_events(state: &Projections, user: UserId, actions: DeactivationActions) -> Vec<Event> {
    let mut events = Vec::new();
    if actions.delete_profile {
        events.push(Event::UserChanged {
            user_id: user,
            change: UserChange::FullName("Deleted user".into()),
        });
    }
    let mut groups: std::collections::BTreeMap<String, Vec<&crate::projections::Message>> =
        Default::default();
    for message in state.messages.sent_by(user) {
        let wanted = match &message.recipient {
            crate::projections::Address::Direct { .. } => actions.delete_direct_messages,
            crate::projections::Address::Channel { channel_id, .. } => {
                let private = state
                    .channels
                    .get(*channel_id)
                    .is_some_and(|c| c.invite_only);
                if private {
                    actions.delete_private_channel_messages
                } else {
                    actions.delete_public_channel_messages
                }
            }
        };
        if wanted {
            let key = match &message.recipient {
                crate::projections::Address::Channel { channel_id, topic } => {
                    format!(
                        "c{channel_id}/{}",
                        crate::projections::user_topics::topic_key(topic)
                    )
                }
                crate::projections::Address::Direct { user_ids } => format!("d{user_ids:?}"),
            };
            groups.entry(key).or_default().push(message);
        }
    }
    events.extend(
        groups
            .values()
            .map(|messages| super::delete::deletion(state, messages)),
    );
    events
}

/// `DELETE /users/{user_id}`: deactivates a human account, its bots first, removing what
/// `actions` asks for (bots' first, then the user's).
pub fn deactivate_user(
    state: &Projections,
    ctx: &Ctx,
    target: UserId,
    actions: DeactivationActions,
) -> ApiResult<Decision> {
    let me = admin(state, ctx)?;
    let user = state
        .users
        .get(target)
        .filter(|u| !u.is_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if !user.is_active {
        return Err(ApiError::bad_request("User is deactivated"));
    }
    if user.role == Role::Owner {
        if me.role != Role::Owner {
            return Err(ApiError::must_be_owner());
        }
        if state.users.active_owner_count() <= 1 {
            return Err(ApiError::bad_request(
                "Cannot deactivate the only organization owner",
            ));
        }
    }
    Ok(Decision::events(deactivation_events(
        state, target, actions,
    )))
}

/// A password chosen through a reset link: the account's hash becomes `new_hash` if it is
/// still `expected` (the one the link was made for, so that a link is used once), and every
/// web session of the account ends, as a changed password should.
pub fn reset_password(
    state: &Projections,
    ctx: &Ctx,
    expected: Option<String>,
    new_hash: String,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    if me.is_bot() || me.password_hash != expected {
        return Err(ApiError::bad_request(
            "The password reset link has expired or has been used.",
        ));
    }
    let mut events = vec![Event::PasswordChanged {
        user_id: me.user_id,
        password_hash: new_hash,
    }];
    events.extend(
        state
            .sessions
            .of_user(me.user_id)
            .map(|(session_id, _)| Event::SessionEnded {
                user_id: me.user_id,
                session_id: session_id.to_owned(),
            }),
    );
    Ok(Decision::events(events))
}

/// `DELETE /users/me`: a person deactivates their own account (their bots with it), as
/// Zulip's `deactivate_user_own_backend`: not the organization's only active account, nor its
/// only owner.
pub fn deactivate_own_account(state: &Projections, ctx: &Ctx) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    if me.is_bot() {
        return Err(ApiError::bad_request(
            "This endpoint does not accept bot requests.",
        ));
    }
    let last = |is_last_owner: bool| {
        let entity = if is_last_owner {
            "organization owner"
        } else {
            "user"
        };
        ApiError::new(
            crate::error::ErrorCode::CannotDeactivateLastUser,
            format!("Cannot deactivate the only {entity}."),
        )
        .with("is_last_owner", is_last_owner)
        .with("entity", entity)
    };
    if state.users.members().filter(|u| u.is_active).count() <= 1 {
        return Err(last(false));
    }
    if me.role == Role::Owner && state.users.active_owner_count() <= 1 {
        return Err(last(true));
    }
    Ok(Decision::events(deactivation_events(
        state,
        me.user_id,
        DeactivationActions::default(),
    )))
}

/// Deactivating `target`: their bots first, what `actions` removes, the account, and the
/// invitations they made that are still pending.
pub fn deactivation_events(
    state: &Projections,
    target: UserId,
    actions: DeactivationActions,
) -> Vec<Event> {
    let mut events = Vec::new();
    for bot in state
        .users
        .iter()
        .filter(|bot| bot.is_active && bot.bot_owner_id == Some(target))
    {
        events.extend(deletion_events(state, bot.user_id, actions));
        events.push(Event::UserDeactivated {
            user_id: bot.user_id,
        });
    }
    events.extend(deletion_events(state, target, actions));
    events.push(Event::UserDeactivated { user_id: target });
    // The invitations and links they made stop working with them.
    events.extend(
        state
            .invitations
            .iter()
            .filter(|i| {
                i.invited_by == Some(target)
                    && i.status == crate::projections::invitations::InviteStatus::Pending
            })
            .map(|i| Event::InvitationRevoked { invite_id: i.id }),
    );
    events
}

/// `PATCH /users/{user_id}`: an administrator changes a name, a role or profile data. Only
/// owners make or unmake owners, and the last owner keeps the role.
pub fn update_user(
    state: &Projections,
    ctx: &Ctx,
    target: UserId,
    full_name: Option<String>,
    role: Option<Role>,
    profile_data: Option<Vec<super::profile_fields::ValueChange>>,
) -> ApiResult<Decision> {
    let me = admin(state, ctx)?;
    let user = state
        .users
        .get(target)
        .filter(|u| !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    let mut events = Vec::new();
    if let Some(role) = role.filter(|r| *r != user.role) {
        if (role == Role::Owner || user.role == Role::Owner) && me.role != Role::Owner {
            return Err(ApiError::must_be_owner());
        }
        if user.role == Role::Owner && user.is_active && state.users.active_owner_count() <= 1 {
            return Err(ApiError::bad_request(
                "The owner permission cannot be removed from the only organization owner.",
            ));
        }
        events.push(Event::UserChanged {
            user_id: target,
            change: UserChange::Role(role),
        });
    }
    if let Some(name) = full_name {
        let name = check_full_name(&name)?;
        check_unique_name(state, &name, Some(target))?;
        if name != user.full_name {
            events.push(Event::UserChanged {
                user_id: target,
                change: UserChange::FullName(name),
            });
        }
    }
    if let Some(items) = profile_data {
        events.extend(super::profile_fields::value_events(
            state, me, target, items, true,
        )?);
    }
    Ok(Decision::events(events))
}

/// `PATCH /settings`: the caller's own name and password. `password` is the new hash and the
/// hash the old password was checked against (a password changed meanwhile fails the check).
pub fn update_own_settings(
    state: &Projections,
    ctx: &Ctx,
    full_name: Option<String>,
    password: Option<(String, Option<String>)>,
    settings: Vec<(&'static str, crate::events::RealmValue)>,
    timezone: Option<String>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let mut events = Vec::new();
    if let Some(timezone) = timezone {
        // An IANA name, as Zulip checks with zoneinfo; empty is "not set".
        if !timezone.is_empty() && timezone.parse::<chrono_tz::Tz>().is_err() {
            return Err(ApiError::bad_request(
                "timezone is not a recognized time zone",
            ));
        }
        if timezone != me.timezone {
            events.push(Event::UserSettingChanged {
                user_id: me.user_id,
                name: "timezone".into(),
                value: crate::events::RealmValue::Text(timezone),
            });
        }
    }
    for (name, value) in settings {
        check_setting(name, &value)?;
        if state.user_settings.get(me.user_id, name) != value {
            events.push(Event::UserSettingChanged {
                user_id: me.user_id,
                name: name.to_owned(),
                value,
            });
        }
    }
    if let Some(name) = full_name {
        if state.realm.flag("name_changes_disabled") && !me.role.is_admin() {
            return Err(ApiError::bad_request(
                "Name changes are disabled in this organization. Contact an administrator to change your name.",
            ));
        }
        let name = check_full_name(&name)?;
        check_unique_name(state, &name, Some(me.user_id))?;
        if name != me.full_name {
            events.push(Event::UserChanged {
                user_id: me.user_id,
                change: UserChange::FullName(name),
            });
        }
    }
    if let Some((new_hash, checked_against)) = password {
        if me.password_hash != checked_against {
            return Err(ApiError::bad_request("Wrong password!"));
        }
        events.push(Event::PasswordChanged {
            user_id: me.user_id,
            password_hash: new_hash,
        });
    }
    Ok(Decision::events(events))
}

/// Whether a value fits a personal setting, with Zulip's message when it does not.
pub fn check_setting(name: &str, value: &crate::events::RealmValue) -> ApiResult<()> {
    use crate::projections::user_settings;
    if user_settings::setting(name).is_some_and(|s| user_settings::allows(s, value)) {
        return Ok(());
    }
    if let (
        "email_notifications_batching_period_seconds",
        crate::events::RealmValue::Int(seconds),
    ) = (name, value)
    {
        return Err(ApiError::bad_request(format!(
            "Invalid email batching period: {seconds} seconds"
        )));
    }
    Err(ApiError::bad_request(format!("Invalid {name}")))
}

/// `POST /users/{user_id}/reactivate`.
pub fn reactivate_user(state: &Projections, ctx: &Ctx, target: UserId) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let user = state
        .users
        .get(target)
        .filter(|u| !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if user.is_active {
        return Err(ApiError::bad_request("User is already active"));
    }
    Ok(Decision::events(vec![Event::UserReactivated {
        user_id: target,
    }]))
}

/// `POST`/`DELETE /users/me/avatar`: the caller's avatar becomes the uploaded picture (already
/// stored) or, with `None`, the generated one again.
pub fn set_avatar(
    state: &Projections,
    ctx: &Ctx,
    image: Option<crate::events::AvatarImage>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    Ok(Decision::events(vec![Event::AvatarSet {
        user_id: me.user_id,
        image,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, new_user, Given, OWNER};
    use crate::error::ErrorCode;

    #[test]
    fn owner_creates_users_and_duplicates_are_refused() {
        let mut given = Given::org();
        let alice = given.user("A@example.com", Role::Member);
        assert_eq!(alice, UserId(2));
        let err = given.refused(OWNER, |s, c| {
            create_user(s, c, new_user("a@EXAMPLE.com", Role::Member))
        });
        assert_eq!(msg(&err), "Email is already in use.");
        // A member cannot create users.
        let err = given.refused(alice, |s, c| {
            create_user(s, c, new_user("b@example.com", Role::Member))
        });
        assert_eq!(err.code(), Some(ErrorCode::UnauthorizedPrincipal));
    }

    #[test]
    fn the_only_owner_cannot_be_deactivated() {
        let given = Given::org();
        let err = given.refused(OWNER, |s, c| {
            deactivate_user(s, c, OWNER, Default::default())
        });
        assert_eq!(msg(&err), "Cannot deactivate the only organization owner");
        let err = given.refused(OWNER, |s, c| {
            deactivate_user(s, c, UserId(99), Default::default())
        });
        assert_eq!(msg(&err), "No such user");
    }

    #[test]
    fn a_deactivated_user_can_do_nothing_and_comes_back_on_reactivation() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        // Members cannot deactivate others.
        let err = given.refused(alice, |s, c| {
            deactivate_user(s, c, OWNER, Default::default())
        });
        assert_eq!(msg(&err), "Must be an organization administrator");
        given.ok(OWNER, |s, c| {
            deactivate_user(s, c, alice, Default::default())
        });
        assert!(given.state.users.get(alice).is_some_and(|u| !u.is_active));
        // The actor is re-read from the state: a deactivated account's commands are refused.
        let err = given.refused(alice, |s, c| {
            create_user(s, c, new_user("b@example.com", Role::Member))
        });
        assert_eq!(
            (err.code(), msg(&err).as_str()),
            (Some(ErrorCode::Unauthorized), "Account is deactivated")
        );
        given.ok(OWNER, |s, c| reactivate_user(s, c, alice));
        assert!(given.state.users.get(alice).is_some_and(|u| u.is_active));
    }

    #[test]
    fn names_and_emails_are_validated() {
        assert!(validate_email("a@b.c"));
        assert!(validate_email("owner@localhost"));
        assert!(!validate_email("no-at-sign"));
        assert!(!validate_email("a b@c.d"));
        assert!(!validate_email("@c.d"));
        assert!(!validate_email("a@"));
        assert!(check_full_name("  ").is_err());
        assert!(check_full_name(&"x".repeat(101)).is_err());
        assert_eq!(check_full_name(" Ada ").unwrap(), "Ada");
    }
}

/// What `PATCH /bots/{bot_id}` changes; `None` keeps. A channel given as `Some(None)` (an
/// empty name) is cleared.
#[derive(Debug, Clone, Default)]
pub struct BotEdit {
    pub full_name: Option<String>,
    pub role: Option<Role>,
    pub owner_id: Option<UserId>,
    pub default_sending_stream: Option<Option<String>>,
    pub default_events_register_stream: Option<Option<String>>,
    pub default_all_public_streams: Option<bool>,
    pub service_payload_url: Option<String>,
    pub service_interface: Option<u8>,
    /// A new avatar, already stored.
    pub avatar: Option<crate::events::AvatarImage>,
}

/// `PATCH /bots/{bot_id}`: the bot's owner or an administrator changes its name, owner,
/// default channels or outgoing webhook service; a role change needs what `PATCH /users`
/// needs.
pub fn update_bot(
    state: &Projections,
    ctx: &Ctx,
    target: UserId,
    edit: BotEdit,
) -> ApiResult<Decision> {
    use crate::events::BotChange;
    let me = actor(state, ctx)?;
    let bot = managed_bot(state, ctx, target)?;
    let mut events = Vec::new();
    if let Some(name) = edit.full_name {
        let name = check_full_name(&name)?;
        if name != bot.full_name {
            if state
                .users
                .iter()
                .any(|u| u.is_active && u.full_name == name)
            {
                return Err(ApiError::bad_request("Name is already in use!"));
            }
            events.push(Event::UserChanged {
                user_id: target,
                change: UserChange::FullName(name),
            });
        }
    }
    if let Some(role) = edit.role.filter(|r| *r != bot.role) {
        if (role == Role::Owner || bot.role == Role::Owner) && me.role != Role::Owner {
            return Err(ApiError::must_be_owner());
        }
        if !me.role.is_admin() {
            return Err(ApiError::must_be_admin());
        }
        events.push(Event::UserChanged {
            user_id: target,
            change: UserChange::Role(role),
        });
    }
    if let Some(owner_id) = edit.owner_id.filter(|o| Some(*o) != bot.bot_owner_id) {
        let owner = state
            .users
            .get(owner_id)
            .ok_or_else(|| ApiError::bad_request("Failed to change owner, no such user"))?;
        if !owner.is_active {
            return Err(ApiError::bad_request(
                "Failed to change owner, user is deactivated",
            ));
        }
        if owner.is_bot() {
            return Err(ApiError::bad_request(
                "Failed to change owner, bots can't own other bots",
            ));
        }
        events.push(Event::BotChanged {
            user_id: target,
            change: BotChange::Owner {
                owner_id,
                previous: bot.bot_owner_id,
            },
        });
    }
    let config = bot.bot.as_deref();
    let channel = |name: Option<String>| -> ApiResult<Option<ChannelId>> {
        let Some(name) = name else { return Ok(None) };
        state
            .channels
            .by_name(&name)
            .filter(|c| {
                crate::projections::access(state, me, c) != crate::projections::Access::None
            })
            .map(|c| Some(c.id))
            .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'")))
    };
    if let Some(name) = edit.default_sending_stream {
        let id = channel(name)?;
        if config.and_then(|c| c.default_sending_stream) != id {
            events.push(Event::BotChanged {
                user_id: target,
                change: BotChange::DefaultSendingStream(id),
            });
        }
    }
    if let Some(name) = edit.default_events_register_stream {
        let id = channel(name)?;
        if config.and_then(|c| c.default_events_register_stream) != id {
            events.push(Event::BotChanged {
                user_id: target,
                change: BotChange::DefaultEventsRegisterStream(id),
            });
        }
    }
    if let Some(all) = edit.default_all_public_streams {
        if config.is_some_and(|c| c.default_all_public_streams) != all {
            events.push(Event::BotChanged {
                user_id: target,
                change: BotChange::DefaultAllPublicStreams(all),
            });
        }
    }
    if edit.service_payload_url.is_some() || edit.service_interface.is_some() {
        let service = config
            .and_then(|c| c.services.first())
            .filter(|_| bot.bot_type == Some(OUTGOING_WEBHOOK_BOT));
        if let Some(service) = service {
            let base_url = edit
                .service_payload_url
                .unwrap_or_else(|| service.base_url.clone());
            if !super::is_http_url(&base_url) {
                return Err(ApiError::bad_request("service_payload_url is not a URL"));
            }
            let interface = edit.service_interface.unwrap_or(service.interface);
            if !matches!(interface, 1 | 2) {
                return Err(ApiError::bad_request("Invalid interface type"));
            }
            if base_url != service.base_url || interface != service.interface {
                events.push(Event::BotChanged {
                    user_id: target,
                    change: BotChange::Service {
                        base_url,
                        interface,
                    },
                });
            }
        }
    }
    if let Some(image) = edit.avatar {
        events.push(Event::AvatarSet {
            user_id: target,
            image: Some(image),
        });
    }
    Ok(Decision::events(events))
}

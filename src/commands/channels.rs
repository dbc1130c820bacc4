//! Channels, subscriptions, channel folders and topic visibility.

use super::Decision;
use super::{actor, admin};
use crate::commands::groups::validate_setting;
use crate::commands::notices::{channel_link, silent_mention, Notices};
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::TopicPolicy;
use crate::events::{
    ChannelChange, ChannelPermissions, Event, GroupSetting, NewSubscription, Role,
    SubscriptionProperty, SystemGroup, TopicsPolicy,
};
use crate::ids::{ChannelId, FolderId, UserId};
use crate::projections::access;
use crate::projections::channels::channel_key;
use crate::projections::Access;
use crate::projections::{Channel, Projections, User};

/// Zulip's limits (`Stream.MAX_NAME_LENGTH`, `MAX_DESCRIPTION_LENGTH`, `MAX_TOPIC_NAME_LENGTH`,
/// channel folder limits).
pub const MAX_CHANNEL_NAME_LENGTH: usize = 60;
pub const MAX_CHANNEL_DESCRIPTION_LENGTH: usize = 1024;
pub const MAX_TOPIC_LENGTH: usize = 60;
pub const MAX_FOLDER_NAME_LENGTH: usize = 60;
pub const MAX_FOLDER_DESCRIPTION_LENGTH: usize = 1024;

/// The colors Zulip assigns to new subscriptions, in order.
pub const SUBSCRIPTION_COLORS: [&str; 24] = [
    "#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5",
    "#f5ce6e", "#c2726a", "#94c849", "#bd86e5", "#ee7e4a", "#a6dcbf", "#95a5fd", "#53a063",
    "#9987e1", "#e4523d", "#c2c2c2", "#4f8de4", "#c6a8ad", "#e7cc4d", "#c8bebf", "#a47462",
];

/// The color a user's next subscription gets: the first palette color none of their
/// subscriptions uses, else cycling through the palette.
pub fn next_color(state: &Projections, user: UserId, extra_taken: &[String]) -> String {
    let taken: Vec<&str> = state
        .channels
        .subscriptions_of(user)
        .map(|(_, s)| s.color.as_str())
        .chain(extra_taken.iter().map(String::as_str))
        .collect();
    SUBSCRIPTION_COLORS
        .iter()
        .find(|c| !taken.contains(c))
        .unwrap_or(&SUBSCRIPTION_COLORS[taken.len() % SUBSCRIPTION_COLORS.len()])
        .to_string()
}

/// Zulip's `check_stream_name`.
pub fn check_channel_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("Channel name can't be empty."));
    }
    if name.chars().count() > MAX_CHANNEL_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Channel name too long (limit: {MAX_CHANNEL_NAME_LENGTH} characters)."
        )));
    }
    if let Some(position) = super::unprintable_position(name) {
        return Err(ApiError::bad_request(format!(
            "Invalid character in channel name, at position {position}."
        )));
    }
    Ok(name.to_owned())
}

pub fn check_channel_description(text: &str) -> ApiResult<String> {
    if text.chars().count() > MAX_CHANNEL_DESCRIPTION_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Channel description too long (limit: {MAX_CHANNEL_DESCRIPTION_LENGTH} characters)."
        )));
    }
    // Zulip keeps descriptions on one line.
    Ok(text.replace(['\r', '\n'], " ").trim().to_owned())
}

/// The channel by id if the user may at least see it; Zulip's "Invalid channel ID" otherwise,
/// so that private channels stay invisible.
pub fn visible_channel<'a>(
    state: &'a Projections,
    user: &User,
    id: ChannelId,
) -> ApiResult<&'a Channel> {
    state
        .channels
        .get(id)
        .filter(|c| access(state, user, c) != Access::None)
        .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))
}

/// Whether the user administers the channel (organization administrators administer all;
/// guests never do).
pub fn can_administer(state: &Projections, user: &User, channel: &Channel) -> bool {
    user.role.is_admin()
        || user.role != Role::Guest
            && state.groups.setting_allows(
                &state.users,
                user.user_id,
                &channel.permissions.can_administer_channel_group,
            )
}

/// Whether `user` may subscribe users other than themselves to `channel`: the channel's
/// `can_add_subscribers_group`, its administrators, or the organization's
/// `can_add_subscribers_group` for channels whose content the user can reach. Never guests.
pub fn can_add_subscribers(state: &Projections, user: &User, channel: &Channel) -> bool {
    if user.role == Role::Guest {
        return false;
    }
    let allows = |setting: &GroupSetting| {
        state
            .groups
            .setting_allows(&state.users, user.user_id, setting)
    };
    allows(&channel.permissions.can_add_subscribers_group)
        || can_administer(state, user, channel)
        || state.realm_allows(user.user_id, "can_add_subscribers_group")
            && access(state, user, channel) == Access::Content
}

/// `message_retention_days` as clients send it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    RealmDefault,
    Unlimited,
    Days(i32),
}

impl Retention {
    pub fn parse(raw: &str) -> ApiResult<Retention> {
        match raw.trim().trim_matches('"') {
            "realm_default" => Ok(Retention::RealmDefault),
            "unlimited" => Ok(Retention::Unlimited),
            n => match n.parse::<i32>() {
                Ok(days) if days > 0 => Ok(Retention::Days(days)),
                _ => Err(ApiError::bad_request(format!(
                    "Bad value for 'message_retention_days': {raw}"
                ))
                .with("var_name", "message_retention_days")),
            },
        }
    }

    /// As stored: `None` for the organization default, -1 for forever.
    pub fn stored(self) -> Option<i32> {
        match self {
            Retention::RealmDefault => None,
            Retention::Unlimited => Some(-1),
            Retention::Days(d) => Some(d),
        }
    }
}

/// A channel to create, as requested.
#[derive(Debug, Clone, Default)]
pub struct ChannelSpec {
    pub name: String,
    pub description: String,
    pub invite_only: bool,
    pub is_web_public: bool,
    pub history_public_to_subscribers: Option<bool>,
    pub message_retention_days: Option<Retention>,
    pub folder_id: Option<FolderId>,
    pub topics_policy: Option<TopicsPolicy>,
    pub is_default: bool,
    /// Permission settings given explicitly, by API name.
    pub permissions: Vec<(String, GroupSetting)>,
}

/// Zulip's default permissions of a new channel.
pub(crate) fn default_permissions(state: &Projections, creator: UserId) -> ChannelPermissions {
    let system = |kind| state.groups.system_setting(kind);
    ChannelPermissions {
        can_add_subscribers_group: system(SystemGroup::Nobody),
        can_remove_subscribers_group: system(SystemGroup::Administrators),
        can_administer_channel_group: GroupSetting::Anonymous {
            direct_members: vec![creator],
            direct_subgroups: Vec::new(),
        },
        can_delete_any_message_group: system(SystemGroup::Nobody),
        can_delete_own_message_group: system(SystemGroup::Nobody),
        can_move_messages_out_of_channel_group: system(SystemGroup::Nobody),
        can_move_messages_within_channel_group: system(SystemGroup::Nobody),
        can_send_message_group: system(SystemGroup::Everyone),
        can_subscribe_group: system(SystemGroup::Nobody),
        can_resolve_topics_group: system(SystemGroup::Nobody),
        can_create_topic_group: system(SystemGroup::Everyone),
    }
}

fn check_folder(state: &Projections, folder: FolderId) -> ApiResult<()> {
    state
        .folders
        .get(folder)
        .map(|_| ())
        .ok_or_else(|| ApiError::bad_request("Invalid channel folder ID"))
}

/// The events creating one channel (without subscriptions); shared by `POST /channels/create`
/// and the legacy creation through `POST /users/me/subscriptions`.
fn channel_created(
    state: &Projections,
    me: &User,
    spec: ChannelSpec,
    channel_id: ChannelId,
) -> ApiResult<Event> {
    if me.role == Role::Guest {
        return Err(ApiError::bad_request("Not allowed for guest users"));
    }
    let name = check_channel_name(&spec.name)?;
    let description = check_channel_description(&spec.description)?;
    if let Some(existing) = state.channels.by_name(&name) {
        return Err(ApiError::new(
            ErrorCode::ChannelAlreadyExists,
            format!("Channel '{}' already exists", existing.name),
        ));
    }
    if spec.is_web_public {
        // Spectator access is off in a new organization, so web-public channels cannot exist.
        return Err(ApiError::bad_request(
            "Web-public channels are not enabled.",
        ));
    }
    let creation_permission = if spec.invite_only {
        "can_create_private_channel_group"
    } else {
        "can_create_public_channel_group"
    };
    if !state.realm_allows(me.user_id, creation_permission) {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let history_public_to_subscribers = if spec.invite_only {
        spec.history_public_to_subscribers.unwrap_or(false)
    } else {
        true
    };
    if let Some(retention) = spec.message_retention_days {
        if retention != Retention::RealmDefault && me.role != Role::Owner {
            return Err(ApiError::must_be_owner());
        }
    }
    if let Some(folder) = spec.folder_id {
        check_folder(state, folder)?;
    }
    let topics_policy = spec.topics_policy.unwrap_or(TopicsPolicy::Inherit);
    if topics_policy != TopicsPolicy::Inherit
        && !state.realm_allows(me.user_id, "can_set_topics_policy_group")
    {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    if spec.is_default {
        if !me.role.is_admin() {
            return Err(ApiError::bad_request("Insufficient permission"));
        }
        if spec.invite_only {
            return Err(ApiError::bad_request(
                "A default channel cannot be private.",
            ));
        }
    }
    let mut permissions = default_permissions(state, me.user_id);
    for (setting, value) in spec.permissions {
        let value = validate_setting(state, &setting, value, false)?;
        if let Some(slot) = permissions.get_mut(&setting) {
            *slot = value;
        }
    }
    if spec.invite_only
        && !history_public_to_subscribers
        && permissions.can_create_topic_group != state.groups.system_setting(SystemGroup::Everyone)
    {
        let parameters = "history_public_to_subscribers, can_create_topic_group";
        return Err(ApiError::bad_request(format!(
            "Unsupported parameter combination: {parameters}"
        ))
        .with("parameters", parameters));
    }
    Ok(Event::ChannelCreated {
        channel_id,
        name,
        description,
        invite_only: spec.invite_only,
        is_web_public: false,
        history_public_to_subscribers,
        message_retention_days: spec.message_retention_days.and_then(Retention::stored),
        folder_id: spec.folder_id,
        topics_policy,
        is_default: spec.is_default,
        permissions: Box::new(permissions),
    })
}

/// The subscriptions a new account gets: every default channel that is not archived, with
/// colors down the palette.
pub fn default_subscriptions(state: &Projections, user: UserId) -> Vec<Event> {
    let mut taken = Vec::new();
    state
        .channels
        .iter()
        .filter(|c| c.is_default && !c.is_archived)
        .map(|c| {
            let color = next_color(state, user, &taken);
            taken.push(color.clone());
            Event::Subscribed {
                channel_id: c.id,
                subscriptions: vec![NewSubscription {
                    user_id: user,
                    color,
                }],
            }
        })
        .collect()
}

/// `POST /default_streams` and `DELETE /default_streams` (administrators).
pub fn set_default_channel(
    state: &Projections,
    ctx: &Ctx,
    channel_id: ChannelId,
    default: bool,
) -> ApiResult<Decision> {
    let me = admin(state, ctx)?;
    let channel = visible_channel(state, me, channel_id)?;
    if default && channel.invite_only {
        return Err(ApiError::bad_request(
            "Private channels cannot be made default.",
        ));
    }
    if !default && !channel.is_default {
        return Err(ApiError::bad_request("Channel is not a default channel."));
    }
    if channel.is_default == default {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::ChannelChanged {
        channel_id,
        change: ChannelChange::DefaultForNewUsers(default),
    }]))
}

/// `POST /channels/create`: a channel and its first subscribers.
pub fn create_channel(
    state: &Projections,
    ctx: &Ctx,
    spec: ChannelSpec,
    subscribers: Vec<UserId>,
    announce: bool,
) -> ApiResult<Decision<ChannelId>> {
    let me = actor(state, ctx)?;
    let channel_id = ChannelId(state.channels.max_id().0 + 1);
    let created = channel_created(state, me, spec, channel_id)?;
    let mut subscribers = subscribers;
    subscribers.sort();
    subscribers.dedup();
    for user in &subscribers {
        if !state.users.get(*user).is_some_and(|u| u.is_active) {
            return Err(ApiError::bad_request("No such user"));
        }
    }
    if subscribers.iter().any(|u| *u != me.user_id)
        && !(me.role.is_admin() || state.realm_allows(me.user_id, "can_add_subscribers_group"))
    {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let name = match &created {
        Event::ChannelCreated { name, .. } => name.clone(),
        _ => String::new(),
    };
    let mut events = vec![created];
    if !subscribers.is_empty() {
        events.push(Event::Subscribed {
            channel_id,
            subscriptions: subscribers
                .iter()
                .map(|user| NewSubscription {
                    user_id: *user,
                    color: next_color(state, *user, &[]),
                })
                .collect(),
        });
    }
    let mut notices = Notices::new(state);
    if announce {
        announce_channels(state, me, &[(channel_id, name)], &mut notices);
    }
    events.extend(notices.into_events());
    Ok(Decision::new(events, channel_id))
}

/// Zulip sends no "subscribed you" messages when a request subscribes more users than this
/// (`MAX_BULK_NEW_SUBSCRIPTION_MESSAGES`).
pub const MAX_BULK_NEW_SUBSCRIPTION_MESSAGES: usize = 100;

/// The announcement of new channels in the organization's new-channel announcement channel,
/// if it has one (topic "new channels").
fn announce_channels(
    state: &Projections,
    me: &User,
    created: &[(ChannelId, String)],
    notices: &mut Notices<'_>,
) {
    let target = state
        .realm
        .channel("new_stream_announcements_stream_id")
        .and_then(|id| state.channels.get(id))
        .filter(|c| !c.is_archived);
    let Some(target) = target else {
        return;
    };
    if created.is_empty() {
        return;
    }
    let links: Vec<String> = created
        .iter()
        .map(|(id, name)| channel_link(*id, name))
        .collect();
    for (id, name) in created {
        notices.knowing_channel(*id, name);
    }
    let user = silent_mention(me);
    let content = if links.len() == 1 {
        format!("{user} created a new channel {}.", links[0])
    } else {
        format!(
            "{user} created the following channels: {}.",
            links.join(", ")
        )
    };
    notices.to_channel(target.id, "new channels", content);
}

/// Direct messages to the users `me` subscribed to existing channels (not to `me`, not to
/// bots), unless the request subscribed more than `MAX_BULK_NEW_SUBSCRIPTION_MESSAGES` users.
/// Returns whether they were sent.
fn notify_subscribed(
    state: &Projections,
    me: &User,
    subscribed: &std::collections::BTreeMap<UserId, Vec<(ChannelId, String)>>,
    users_in_request: usize,
    notices: &mut Notices<'_>,
) -> bool {
    if users_in_request > MAX_BULK_NEW_SUBSCRIPTION_MESSAGES {
        return false;
    }
    let user = silent_mention(me);
    for (user_id, channels) in subscribed {
        let human = state.users.get(*user_id).is_some_and(|u| !u.is_bot());
        if *user_id == me.user_id || !human || channels.is_empty() {
            continue;
        }
        let mut channels = channels.clone();
        channels.sort_by(|a, b| a.1.cmp(&b.1));
        let content = if let [(id, name)] = channels.as_slice() {
            format!("{user} subscribed you to {}.", channel_link(*id, name))
        } else {
            let mut text = format!("{user} subscribed you to the following channels:\n\n");
            for (id, name) in &channels {
                text.push_str(&format!("* {}\n", channel_link(*id, name)));
            }
            text
        };
        notices.to_user(*user_id, content);
    }
    true
}

/// The outcome of `POST /users/me/subscriptions`: channel names per user id.
#[derive(Debug, Default)]
pub struct SubscribeOutcome {
    pub subscribed: std::collections::BTreeMap<UserId, Vec<String>>,
    pub already_subscribed: std::collections::BTreeMap<UserId, Vec<String>>,
    pub unauthorized: Vec<String>,
    /// Whether the notification bot told the subscribed users (Zulip's
    /// `new_subscription_messages_sent`).
    pub new_subscription_messages_sent: bool,
}

/// What `POST /users/me/subscriptions` should tell, besides subscribing.
#[derive(Debug, Clone, Copy)]
pub struct SubscribeNotices {
    /// Announce newly created channels (`announce`).
    pub announce: bool,
    /// Tell users someone else subscribed (`send_new_subscription_messages`).
    pub notify_subscribed: bool,
}

/// A channel a subscription request names: its description if it is created, and the
/// subscription's color if one is given (already checked).
#[derive(Debug, Clone, Default)]
pub struct ChannelWanted {
    pub name: String,
    pub description: String,
    pub color: Option<String>,
}

impl ChannelWanted {
    /// A channel by name alone.
    pub fn named(name: impl Into<String>) -> ChannelWanted {
        ChannelWanted {
            name: name.into(),
            ..ChannelWanted::default()
        }
    }
}

/// `POST /users/me/subscriptions`: subscribes `principals` (default: the actor) to channels by
/// name, creating missing ones from `template` (the legacy way to create channels).
pub fn subscribe(
    state: &Projections,
    ctx: &Ctx,
    channels: Vec<ChannelWanted>,
    principals: Option<Vec<UserId>>,
    template: ChannelSpec,
    authorization_errors_fatal: bool,
    notify: SubscribeNotices,
) -> ApiResult<Decision<SubscribeOutcome>> {
    let me = actor(state, ctx)?;
    let principals = principals.unwrap_or_else(|| vec![me.user_id]);
    let mut targets: Vec<&User> = Vec::new();
    for id in &principals {
        let user = state
            .users
            .get(*id)
            .filter(|u| u.is_active)
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if !targets.iter().any(|t| t.user_id == user.user_id) {
            targets.push(user);
        }
    }
    let others = targets.iter().any(|t| t.user_id != me.user_id);
    // Guests may only join, themselves, private channels whose `can_subscribe_group` (or
    // `can_add_subscribers_group`) includes them: public channels stay out of their reach.
    let guest_refused = || ApiError::bad_request("Not allowed for guest users");
    if me.role == Role::Guest && others {
        return Err(guest_refused());
    }
    let mut events = Vec::new();
    let mut outcome = SubscribeOutcome::default();
    let mut next_id = state.channels.max_id().0;
    let mut colors: std::collections::BTreeMap<UserId, Vec<String>> = Default::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut created: Vec<(ChannelId, String)> = Vec::new();
    let mut to_tell: std::collections::BTreeMap<UserId, Vec<(ChannelId, String)>> =
        Default::default();
    for ChannelWanted {
        name,
        description,
        color: given_color,
    } in channels
    {
        let name = check_channel_name(&name)?;
        if !seen.insert(name.to_lowercase()) {
            continue;
        }
        let (channel_id, display_name, new_channel) = match state.channels.by_name(&name) {
            Some(channel) if channel.is_archived => {
                return Err(ApiError::bad_request(format!(
                    "Channel '{}' is archived.",
                    channel.name
                )));
            }
            Some(channel) => {
                let reachable = access(state, me, channel) == Access::Content;
                let allowed = if others {
                    can_add_subscribers(state, me, channel)
                        || reachable && targets.iter().all(|t| t.user_id == me.user_id)
                } else {
                    reachable
                };
                if !allowed {
                    if !reachable && authorization_errors_fatal {
                        return Err(ApiError::bad_request(format!(
                            "Unable to access channel ({}).",
                            channel.name
                        )));
                    }
                    if !reachable {
                        outcome.unauthorized.push(channel.name.clone());
                        continue;
                    }
                    return Err(ApiError::bad_request("Insufficient permission"));
                }
                (channel.id, channel.name.clone(), false)
            }
            None => {
                if me.role == Role::Guest {
                    return Err(guest_refused());
                }
                next_id += 1;
                let spec = ChannelSpec {
                    name: name.clone(),
                    description,
                    ..template.clone()
                };
                events.push(channel_created(state, me, spec, ChannelId(next_id))?);
                if others
                    && !(me.role.is_admin()
                        || state.realm_allows(me.user_id, "can_add_subscribers_group"))
                {
                    return Err(ApiError::bad_request("Insufficient permission"));
                }
                created.push((ChannelId(next_id), name.clone()));
                (ChannelId(next_id), name, true)
            }
        };
        let mut new_subs = Vec::new();
        for target in &targets {
            if !new_channel && state.channels.is_subscribed(target.user_id, channel_id) {
                outcome
                    .already_subscribed
                    .entry(target.user_id)
                    .or_default()
                    .push(display_name.clone());
                continue;
            }
            let taken = colors.entry(target.user_id).or_default();
            let color = given_color
                .clone()
                .or_else(|| {
                    state
                        .channels
                        .subscription(target.user_id, channel_id)
                        .map(|s| s.color.clone())
                })
                .unwrap_or_else(|| next_color(state, target.user_id, taken));
            taken.push(color.clone());
            new_subs.push(NewSubscription {
                user_id: target.user_id,
                color,
            });
            outcome
                .subscribed
                .entry(target.user_id)
                .or_default()
                .push(display_name.clone());
            if !new_channel {
                to_tell
                    .entry(target.user_id)
                    .or_default()
                    .push((channel_id, display_name.clone()));
            }
        }
        if !new_subs.is_empty() {
            events.push(Event::Subscribed {
                channel_id,
                subscriptions: new_subs,
            });
        }
    }
    let mut notices = Notices::new(state);
    if notify.announce {
        announce_channels(state, me, &created, &mut notices);
    }
    if notify.notify_subscribed {
        outcome.new_subscription_messages_sent =
            notify_subscribed(state, me, &to_tell, targets.len(), &mut notices);
    }
    events.extend(notices.into_events());
    Ok(Decision::new(events, outcome))
}

/// Channel names `DELETE /users/me/subscriptions` removed and did not remove.
#[derive(Debug, Default)]
pub struct UnsubscribeOutcome {
    pub removed: Vec<String>,
    pub not_removed: Vec<String>,
}

/// `DELETE /users/me/subscriptions`.
pub fn unsubscribe(
    state: &Projections,
    ctx: &Ctx,
    names: Vec<String>,
    principals: Option<Vec<UserId>>,
) -> ApiResult<Decision<UnsubscribeOutcome>> {
    let me = actor(state, ctx)?;
    let principals = principals.unwrap_or_else(|| vec![me.user_id]);
    for id in &principals {
        if state.users.get(*id).is_none() {
            return Err(ApiError::bad_request("No such user"));
        }
    }
    let others = principals.iter().any(|u| *u != me.user_id);
    let mut events = Vec::new();
    let mut outcome = UnsubscribeOutcome::default();
    for name in names {
        let channel = state
            .channels
            .by_name(&name)
            .filter(|c| access(state, me, c) != Access::None)
            .ok_or_else(|| ApiError::bad_request(format!("Channel(s) ({name}) do not exist")))?;
        if others {
            let allowed = can_administer(state, me, channel)
                || state.groups.setting_allows(
                    &state.users,
                    me.user_id,
                    &channel.permissions.can_remove_subscribers_group,
                );
            if !allowed {
                return Err(ApiError::bad_request("Insufficient permission"));
            }
        }
        let leaving: Vec<UserId> = principals
            .iter()
            .copied()
            .filter(|u| state.channels.is_subscribed(*u, channel.id))
            .collect();
        if leaving.is_empty() {
            outcome.not_removed.push(channel.name.clone());
        } else {
            outcome.removed.push(channel.name.clone());
            events.push(Event::Unsubscribed {
                channel_id: channel.id,
                user_ids: leaving,
            });
        }
    }
    Ok(Decision::new(events, outcome))
}

/// `PATCH /users/me/subscriptions`: `POST` for `add`, then `DELETE` for `delete`, for the caller,
/// in one decision (Zulip runs both views in one transaction). A channel named in both is
/// refused: the second half would have to see the first half's result, and no client sends it.
/// Names are compared as channel names are (case aside, in any script).
pub fn update_subscriptions(
    state: &Projections,
    ctx: &Ctx,
    add: Vec<ChannelWanted>,
    delete: Vec<String>,
    template: ChannelSpec,
) -> ApiResult<Decision<(SubscribeOutcome, UnsubscribeOutcome)>> {
    if add.is_empty() && delete.is_empty() {
        return Err(ApiError::bad_request(
            "Nothing to do. Specify at least one of \"add\" or \"delete\".",
        ));
    }
    if let Some(both) = add.iter().find(|a| {
        delete
            .iter()
            .any(|d| channel_key(d) == channel_key(&a.name))
    }) {
        return Err(ApiError::bad_request(format!(
            "Channel '{}' cannot be both added and removed in one request.",
            both.name.trim()
        )));
    }
    let notices = SubscribeNotices {
        announce: false,
        notify_subscribed: true,
    };
    let (mut events, joined) = if add.is_empty() {
        (Vec::new(), SubscribeOutcome::default())
    } else {
        let decided = subscribe(state, ctx, add, None, template, true, notices)?;
        (decided.events, decided.reply)
    };
    let left = if delete.is_empty() {
        UnsubscribeOutcome::default()
    } else {
        let decided = unsubscribe(state, ctx, delete, None)?;
        events.extend(decided.events);
        decided.reply
    };
    Ok(Decision::new(events, (joined, left)))
}

/// Parses one subscription property as clients send it (`in_home_view` is the inverse of
/// `is_muted`).
pub fn parse_subscription_property(
    property: &str,
    value: &serde_json::Value,
) -> ApiResult<SubscriptionProperty> {
    let flag = || -> ApiResult<bool> {
        value.as_bool().ok_or_else(|| {
            ApiError::bad_request(format!("{property} is not a boolean")).with("var_name", "value")
        })
    };
    Ok(match property {
        "color" => {
            let color = value.as_str().unwrap_or_default();
            let valid = color.len() == 7
                && color.starts_with('#')
                && color[1..].chars().all(|c| c.is_ascii_hexdigit())
                || color.len() == 4
                    && color.starts_with('#')
                    && color[1..].chars().all(|c| c.is_ascii_hexdigit());
            if !valid {
                return Err(ApiError::bad_request("color is not a valid hex color code"));
            }
            SubscriptionProperty::Color(color.to_lowercase())
        }
        "is_muted" => SubscriptionProperty::IsMuted(flag()?),
        "in_home_view" => SubscriptionProperty::IsMuted(!flag()?),
        "pin_to_top" => SubscriptionProperty::PinToTop(flag()?),
        "desktop_notifications" => SubscriptionProperty::DesktopNotifications(Some(flag()?)),
        "audible_notifications" => SubscriptionProperty::AudibleNotifications(Some(flag()?)),
        "push_notifications" => SubscriptionProperty::PushNotifications(Some(flag()?)),
        "email_notifications" => SubscriptionProperty::EmailNotifications(Some(flag()?)),
        "wildcard_mentions_notify" => SubscriptionProperty::WildcardMentionsNotify(Some(flag()?)),
        other => {
            return Err(ApiError::bad_request(format!(
                "Unknown subscription property: {other}"
            )))
        }
    })
}

/// `PATCH /users/me/subscriptions/{id}` and `POST /users/me/subscriptions/properties`.
pub fn set_subscription_properties(
    state: &Projections,
    ctx: &Ctx,
    changes: Vec<(ChannelId, SubscriptionProperty)>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let mut events = Vec::new();
    for (channel_id, property) in changes {
        if !state.channels.is_subscribed(me.user_id, channel_id) {
            return Err(ApiError::bad_request(format!(
                "Not subscribed to channel ID {channel_id}"
            )));
        }
        events.push(Event::SubscriptionPropertyChanged {
            user_id: me.user_id,
            channel_id,
            property,
        });
    }
    Ok(Decision::events(events))
}

/// `POST /user_topics` (and the legacy muted-topics endpoint, which maps onto it).
pub fn set_topic_visibility(
    state: &Projections,
    ctx: &Ctx,
    channel_id: ChannelId,
    topic: String,
    policy: TopicPolicy,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    if topic.chars().count() > MAX_TOPIC_LENGTH {
        return Err(ApiError::bad_request(format!(
            "topic is too long (limit: {MAX_TOPIC_LENGTH} characters)"
        )));
    }
    let channel = state.channels.get(channel_id);
    let reachable = channel.is_some_and(|c| access(state, me, c) == Access::Content);
    // Removing a policy only needs the channel to exist: a user who lost access can still
    // clean up; setting one needs access.
    let exists_for_removal = policy == TopicPolicy::None
        && channel.is_some()
        && state.user_topics.policy(me.user_id, channel_id, &topic) != TopicPolicy::None;
    if !reachable && !exists_for_removal {
        return Err(ApiError::bad_request("Invalid channel ID"));
    }
    if state.user_topics.policy(me.user_id, channel_id, &topic) == policy {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::TopicVisibilitySet {
        user_id: me.user_id,
        channel_id,
        topic,
        policy,
    }]))
}

/// Zulip's `check_channel_folder_name`.
pub fn check_folder_name(
    state: &Projections,
    name: &str,
    except: Option<FolderId>,
) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("Channel folder name can't be empty."));
    }
    if name.chars().count() > MAX_FOLDER_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "name is too long (limit: {MAX_FOLDER_NAME_LENGTH} characters)"
        )));
    }
    if let Some(position) = name.chars().position(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "Invalid character in channel folder name, at position {}.",
            position + 1
        )));
    }
    check_folder_name_free(state, name, except)?;
    Ok(name.to_owned())
}

/// Folder names are unique, case-insensitively, among folders that are not archived.
fn check_folder_name_free(
    state: &Projections,
    name: &str,
    except: Option<FolderId>,
) -> ApiResult<()> {
    if state.folders.iter().any(|f| {
        Some(f.id) != except && !f.is_archived && f.name.to_lowercase() == name.to_lowercase()
    }) {
        return Err(ApiError::bad_request("Channel folder name already in use"));
    }
    Ok(())
}

fn check_folder_description(text: &str) -> ApiResult<String> {
    if text.chars().count() > MAX_FOLDER_DESCRIPTION_LENGTH {
        return Err(ApiError::bad_request(format!(
            "description is too long (limit: {MAX_FOLDER_DESCRIPTION_LENGTH} characters)"
        )));
    }
    Ok(text.trim().to_owned())
}

/// `POST /channel_folders/create`.
pub fn create_folder(
    state: &Projections,
    ctx: &Ctx,
    name: &str,
    description: &str,
) -> ApiResult<Decision<FolderId>> {
    admin(state, ctx)?;
    let name = check_folder_name(state, name, None)?;
    let description = check_folder_description(description)?;
    let folder_id = FolderId(state.folders.max_id().0 + 1);
    Ok(Decision::new(
        vec![Event::ChannelFolderCreated {
            folder_id,
            name,
            description,
        }],
        folder_id,
    ))
}

/// `PATCH /channel_folders/{id}`.
pub fn update_folder(
    state: &Projections,
    ctx: &Ctx,
    folder_id: FolderId,
    name: Option<String>,
    description: Option<String>,
    is_archived: Option<bool>,
) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let folder = state
        .folders
        .get(folder_id)
        .ok_or_else(|| ApiError::bad_request("Invalid channel folder ID"))?;
    // Values equal to the current ones are no-ops, as in Zulip.
    let name = name
        .filter(|n| *n != folder.name)
        .map(|n| check_folder_name(state, &n, Some(folder_id)))
        .transpose()?;
    let description = description
        .map(|d| check_folder_description(&d))
        .transpose()?
        .filter(|d| *d != folder.description);
    let is_archived = is_archived.filter(|a| *a != folder.is_archived);
    if is_archived == Some(true)
        && state
            .channels
            .iter()
            .any(|c| c.folder_id == Some(folder_id))
    {
        return Err(ApiError::bad_request(
            "You need to remove all the channels from this folder to archive it.",
        ));
    }
    if is_archived == Some(false) {
        check_folder_name_free(
            state,
            name.as_deref().unwrap_or(&folder.name),
            Some(folder_id),
        )?;
    }
    if name.is_none() && description.is_none() && is_archived.is_none() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::ChannelFolderChanged {
        folder_id,
        name,
        description,
        is_archived,
    }]))
}

/// `PATCH /channel_folders`: the complete new order.
pub fn reorder_folders(
    state: &Projections,
    ctx: &Ctx,
    order: Vec<FolderId>,
) -> ApiResult<Decision> {
    admin(state, ctx)?;
    // Ids that are not folders are ignored; every folder must be listed.
    let order: Vec<FolderId> = order
        .into_iter()
        .filter(|id| state.folders.get(*id).is_some())
        .collect();
    let mut given = order.clone();
    given.sort();
    given.dedup();
    let all: Vec<FolderId> = state.folders.iter().map(|f| f.id).collect();
    if given != all || given.len() != order.len() {
        return Err(ApiError::bad_request("Invalid order mapping."));
    }
    Ok(Decision::events(vec![Event::ChannelFoldersReordered {
        order,
    }]))
}

/// `PATCH /streams/{id}` and `DELETE /streams/{id}` (archiving).
pub fn change_channel(
    state: &Projections,
    ctx: &Ctx,
    channel_id: ChannelId,
    changes: Vec<ChannelChange>,
) -> ApiResult<Decision> {
    let me = actor(state, ctx)?;
    let channel = visible_channel(state, me, channel_id)?;
    if !can_administer(state, me, channel) {
        return Err(ApiError::bad_request(
            "You do not have permission to administer this channel.",
        ));
    }
    let mut events = Vec::new();
    for change in changes {
        let change = match change {
            ChannelChange::Name(name) => {
                let name = check_channel_name(&name)?;
                if state
                    .channels
                    .by_name(&name)
                    .is_some_and(|c| c.id != channel_id)
                {
                    return Err(ApiError::new(
                        ErrorCode::ChannelAlreadyExists,
                        format!("Channel '{name}' already exists"),
                    ));
                }
                ChannelChange::Name(name)
            }
            ChannelChange::Description(text) => {
                ChannelChange::Description(check_channel_description(&text)?)
            }
            ChannelChange::Privacy {
                invite_only,
                history_public_to_subscribers,
                is_web_public,
            } => {
                if is_web_public {
                    return Err(ApiError::bad_request(
                        "Web-public channels are not enabled.",
                    ));
                }
                if access(state, me, channel) != Access::Content {
                    return Err(ApiError::bad_request("Channel content access is required."));
                }
                if invite_only && channel.is_default {
                    return Err(ApiError::bad_request(
                        "A default channel cannot be private.",
                    ));
                }
                let moderation = state.realm.channel("moderation_request_channel_id");
                if !invite_only && moderation == Some(channel.id) {
                    return Err(ApiError::bad_request(
                        "Moderation request channel must be private.",
                    ));
                }
                let creation = if invite_only {
                    "can_create_private_channel_group"
                } else {
                    "can_create_public_channel_group"
                };
                if invite_only != channel.invite_only && !state.realm_allows(me.user_id, creation) {
                    return Err(ApiError::bad_request("Insufficient permission"));
                }
                if invite_only && !channel.invite_only {
                    // Default channel groups hold public channels only.
                    events.extend(super::default_groups::without_channel(state, channel_id));
                }
                ChannelChange::Privacy {
                    invite_only,
                    history_public_to_subscribers: history_public_to_subscribers || !invite_only,
                    is_web_public,
                }
            }
            ChannelChange::MessageRetentionDays(days) => {
                if me.role != Role::Owner {
                    return Err(ApiError::must_be_owner());
                }
                ChannelChange::MessageRetentionDays(days)
            }
            ChannelChange::Folder(folder) => {
                if let Some(f) = folder {
                    check_folder(state, f)?;
                }
                ChannelChange::Folder(folder)
            }
            ChannelChange::TopicsPolicy(policy) => {
                if !state.realm_allows(me.user_id, "can_set_topics_policy_group") {
                    return Err(ApiError::bad_request("Insufficient permission"));
                }
                // Only a channel whose every message is in the empty topic may be limited to it.
                let all = state.messages.in_channel(channel_id).map_or(0, |m| m.len());
                let untitled = state
                    .messages
                    .in_topic(channel_id, "")
                    .map_or(0, |m| m.len());
                if policy == TopicsPolicy::EmptyTopicOnly && all != untitled {
                    return Err(ApiError::bad_request(
                        "To enable this configuration, all messages in this channel must be in the general chat topic.",
                    ));
                }
                ChannelChange::TopicsPolicy(policy)
            }
            ChannelChange::Permission { setting, value } => {
                if channel.permissions.get(&setting).is_none() {
                    return Err(ApiError::bad_request(format!("Invalid {setting}")));
                }
                // Who may get into the channel is decided only by those who can read it (the
                // other settings need metadata access, which reaching this point implies).
                let grants_access = matches!(
                    setting.as_str(),
                    "can_add_subscribers_group" | "can_subscribe_group"
                );
                if grants_access && access(state, me, channel) != Access::Content {
                    return Err(ApiError::bad_request("Channel content access is required."));
                }
                let value = validate_setting(state, &setting, value, false)?;
                ChannelChange::Permission { setting, value }
            }
            ChannelChange::Archived(flag) => {
                if flag {
                    // An archived channel leaves the default channel groups, as in Zulip.
                    events.extend(super::default_groups::without_channel(state, channel_id));
                }
                ChannelChange::Archived(flag)
            }
            ChannelChange::DefaultForNewUsers(flag) => {
                if !me.role.is_admin() {
                    return Err(ApiError::bad_request("Insufficient permission"));
                }
                if flag && channel.invite_only {
                    return Err(ApiError::bad_request(
                        "A default channel cannot be private.",
                    ));
                }
                ChannelChange::DefaultForNewUsers(flag)
            }
        };
        events.push(Event::ChannelChanged { channel_id, change });
    }
    Ok(Decision::events(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, Given, OWNER};

    const QUIET: SubscribeNotices = SubscribeNotices {
        announce: false,
        notify_subscribed: false,
    };

    fn named(name: &str, invite_only: bool) -> ChannelSpec {
        ChannelSpec {
            name: name.into(),
            invite_only,
            ..ChannelSpec::default()
        }
    }

    #[test]
    fn channel_names_are_unique_and_guests_create_none() {
        let mut given = Given::org();
        given.channel("General", &[OWNER]);
        let err = given.refused(OWNER, |s, c| {
            create_channel(s, c, named("general", false), vec![], false)
        });
        assert_eq!(err.code(), Some(ErrorCode::ChannelAlreadyExists));
        assert_eq!(msg(&err), "Channel 'General' already exists");
        let err = given.refused(OWNER, |s, c| {
            create_channel(s, c, named("  ", false), vec![], false)
        });
        assert_eq!(msg(&err), "Channel name can't be empty.");
        let guest = given.user("guest@example.com", Role::Guest);
        let err = given.refused(guest, |s, c| {
            create_channel(s, c, named("mine", false), vec![], false)
        });
        assert_eq!(msg(&err), "Not allowed for guest users");
    }

    #[test]
    fn a_private_channel_is_joined_only_by_invitation() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        given.channel_with(named("secret", true), &[OWNER]);
        given.channel("open", &[OWNER]);
        let join = |name: &str| {
            let channels = vec![ChannelWanted::named(name)];
            move |s: &Projections, c: &Ctx| {
                subscribe(s, c, channels, None, ChannelSpec::default(), true, QUIET)
            }
        };
        // With authorization errors fatal, a private channel one cannot see is refused.
        let err = given.refused(alice, join("secret"));
        assert_eq!(msg(&err), "Unable to access channel (secret).");
        let outcome = given.ok(alice, join("open"));
        assert_eq!(
            outcome.subscribed.get(&alice).cloned(),
            Some(vec!["open".to_owned()])
        );
        let outcome = given.ok(alice, join("open"));
        assert_eq!(
            outcome.already_subscribed.get(&alice).cloned(),
            Some(vec!["open".to_owned()])
        );
        // The owner may add Alice to the private channel.
        let channels = vec![ChannelWanted::named("secret")];
        given.ok(OWNER, move |s, c| {
            subscribe(
                s,
                c,
                channels,
                Some(vec![alice]),
                ChannelSpec::default(),
                true,
                QUIET,
            )
        });
        let secret = given.state.channels.by_name("secret").map(|c| c.id);
        assert!(secret.is_some_and(|id| given.state.channels.is_subscribed(alice, id)));
    }

    #[test]
    fn topic_visibility_needs_access_and_unchanged_policies_append_nothing() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let secret = given.channel_with(named("secret", true), &[OWNER]);
        let open = given.channel("open", &[alice]);
        let set = |channel, policy| {
            move |s: &Projections, c: &Ctx| set_topic_visibility(s, c, channel, "t".into(), policy)
        };
        let err = given.refused(alice, set(secret, TopicPolicy::Muted));
        assert_eq!(msg(&err), "Invalid channel ID");
        given.ok(alice, set(open, TopicPolicy::Followed));
        assert_eq!(
            given.state.user_topics.policy(alice, open, "T"),
            TopicPolicy::Followed
        );
        let again = given.decided(alice, set(open, TopicPolicy::Followed));
        assert!(again.events.is_empty());
    }
}

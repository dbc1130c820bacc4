//! Read-side visibility rules over the state: how much of a channel a user may see, and
//! whether a user shares their presence. Commands, renderers and the real-time translator all
//! ask here, so a rule is written once, next to the state it reads.

use super::message::Address;
use crate::events::{GroupSetting, Role};
use crate::ids::UserId;
use crate::projections::{Channel, Message, Projections, User};

/// What a user may know about a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Nothing: the channel is private and the user has no way in (it is invisible).
    None,
    /// Name, description, settings (administrators of a private channel, for instance).
    Metadata,
    /// Its messages too.
    Content,
}

/// How much of `channel` `user` may see.
pub fn access(state: &Projections, user: &User, channel: &Channel) -> Access {
    if state.channels.is_subscribed(user.user_id, channel.id) {
        return Access::Content;
    }
    if !channel.invite_only {
        return if user.role == Role::Guest {
            Access::None
        } else {
            Access::Content
        };
    }
    let allows = |setting: &GroupSetting| {
        state
            .groups
            .setting_allows(&state.users, user.user_id, setting)
    };
    if allows(&channel.permissions.can_subscribe_group)
        || allows(&channel.permissions.can_add_subscribers_group)
    {
        return Access::Content;
    }
    if user.role.is_admin() || allows(&channel.permissions.can_administer_channel_group) {
        return Access::Metadata;
    }
    Access::None
}

/// Whether a user shares their presence (`presence_enabled`; off is Zulip's invisible mode).
pub fn shares_presence(state: &Projections, user: UserId) -> bool {
    state.user_settings.get(user, "presence_enabled") != crate::events::RealmValue::Bool(false)
}

/// Whether `user` may read `message`: a copy of it, a direct message they take part in, or a
/// channel whose history they can reach.
pub fn can_read(state: &Projections, user: &User, message: &Message) -> bool {
    if state.messages.flags(user.user_id, message.id).is_some() {
        return true;
    }
    match &message.recipient {
        Address::Direct { user_ids } => user_ids.contains(&user.user_id),
        Address::Channel { channel_id, .. } => state.channels.get(*channel_id).is_some_and(|c| {
            if c.invite_only {
                c.history_public_to_subscribers && state.channels.is_subscribed(user.user_id, c.id)
            } else {
                user.role != Role::Guest
            }
        }),
    }
}

/// Whether `user` may download an upload: its owner, or anyone who can read a message that
/// links it (Zulip's rule for uploads in messages).
pub fn can_see_upload(
    state: &Projections,
    user: &User,
    upload: &super::attachments::Attachment,
) -> bool {
    upload.owner_id == user.user_id
        || upload
            .messages
            .iter()
            .filter_map(|id| state.messages.get(*id))
            .any(|m| can_read(state, user, m))
}

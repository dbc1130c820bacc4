//! The organization itself.

use crate::events::{Envelope, Event, SystemGroup};
use serde_json::{json, Value};

/// The organization's group-based permissions and the system group each defaults to (Zulip's
/// defaults for a new organization). Changing them arrives with `PATCH /realm`.
pub const REALM_PERMISSION_DEFAULTS: &[(&str, SystemGroup)] = &[
    ("can_create_public_channel_group", SystemGroup::Members),
    ("can_create_private_channel_group", SystemGroup::Members),
    ("can_create_web_public_channel_group", SystemGroup::Owners),
    ("can_add_subscribers_group", SystemGroup::Members),
    ("can_create_bots_group", SystemGroup::Members),
    ("can_create_write_only_bots_group", SystemGroup::Members),
    ("can_create_groups", SystemGroup::Members),
    ("can_manage_all_groups", SystemGroup::Owners),
    ("can_invite_users_group", SystemGroup::Members),
    ("can_set_topics_policy_group", SystemGroup::Members),
    ("create_multiuse_invite_group", SystemGroup::Administrators),
    ("can_delete_any_message_group", SystemGroup::Administrators),
    ("can_delete_own_message_group", SystemGroup::Everyone),
    (
        "can_move_messages_between_channels_group",
        SystemGroup::Members,
    ),
    (
        "can_move_messages_between_topics_group",
        SystemGroup::Everyone,
    ),
    ("can_resolve_topics_group", SystemGroup::Everyone),
];

/// Organization-wide settings.
#[derive(Debug, Clone, Default)]
pub struct Realm {
    /// False until `RealmCreated` has been folded.
    pub exists: bool,
    pub name: String,
    pub description: String,
    /// Creation time, milliseconds since the epoch.
    pub date_created_ms: i64,
}

impl Realm {
    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::RealmCreated { name, description } => {
                self.exists = true;
                self.name = name.clone();
                self.description = description.clone();
                self.date_created_ms = env.at;
            }
            Event::UserCreated { .. }
            | Event::ApiKeyRegenerated { .. }
            | Event::UserDeactivated { .. }
            | Event::UserReactivated { .. }
            | Event::UserChanged { .. }
            | Event::UserGroupCreated { .. }
            | Event::UserGroupMembersChanged { .. }
            | Event::UserGroupSubgroupsChanged { .. }
            | Event::UserGroupChanged { .. }
            | Event::ChannelCreated { .. }
            | Event::ChannelChanged { .. }
            | Event::Subscribed { .. }
            | Event::Unsubscribed { .. }
            | Event::SubscriptionPropertyChanged { .. }
            | Event::ChannelFolderCreated { .. }
            | Event::ChannelFolderChanged { .. }
            | Event::ChannelFoldersReordered { .. }
            | Event::TopicVisibilitySet { .. }
            | Event::TypingStarted { .. }
            | Event::TypingStopped { .. }
            | Event::MessageSent { .. }
            | Event::MessageFlagsChanged { .. }
            | Event::ReactionAdded { .. }
            | Event::ReactionRemoved { .. }
            | Event::MessageEdited { .. }
            | Event::MessagesDeleted { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        json!({
            "exists": self.exists,
            "name": self.name,
            "description": self.description,
            "date_created_ms": self.date_created_ms,
        })
    }
}

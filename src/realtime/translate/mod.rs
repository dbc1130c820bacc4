//! From a durable event to the Zulip client events it implies, per recipient.
//!
//! [`client_events`] dispatches each stored event to the translator of its area; each returns
//! typed [`ClientEvent`]s whose per-client differences (stored topics, Markdown source, the
//! sending queue, simplified presence, archived channels) are fields that `Queues::publish`
//! resolves per queue.

mod attachments;
mod audience;
mod channels;
pub mod event;
mod groups;
mod messages;
mod personal;
mod realm;
mod users;

use crate::auth::ServerSecret;
use crate::events::{Envelope, Event};
use crate::ids::UserId;
use crate::projections::Projections;
use crate::render::Site;
use serde_json::json;

pub use event::{ClientEvent, Deliveries, MessageSource, Variants};
pub use messages::message_event;

/// The client events of one durable event, each with the user it is for. `state` is the
/// state right after the event's batch. `listening` tells whether a user has a queue at all:
/// the events that are built per recipient (a message's, with each reader's flags) are built
/// only for those who have.
///
/// Long by the number of stored events, not by logic: one arm per event (no catch-all, so a
/// new event does not compile until it is decided what clients hear of it), each handing its
/// fields to the translator of its area.
pub fn client_events(
    state: &Projections,
    site: &Site,
    secret: &ServerSecret,
    env: &Envelope,
    listening: &dyn Fn(UserId) -> bool,
) -> Deliveries {
    match &env.event {
        Event::RealmCreated { .. }
        | Event::LogErased { .. }
        | Event::ImportStarted { .. }
        | Event::ImportFinished { .. }
        | Event::Imported { .. }
        | Event::MessagesReadThrough { .. }
        | Event::PasswordChanged { .. }
        | Event::InvitationResent { .. }
        // Web sessions are the server's business; Zulip sends no event for them either.
        | Event::SessionStarted { .. }
        | Event::SessionEnded { .. }
        | Event::TwoFactorChanged { .. }
        | Event::SignInTokenSpent { .. }
        | Event::NoticesRecorded { .. }
        | Event::NoticesSettled { .. }
        | Event::EmailQueued { .. }
        | Event::EmailSent { .. }
        | Event::EmailFailed { .. }
        | Event::PushQueued { .. }
        | Event::PushSent { .. }
        | Event::PushFailed { .. }
        | Event::PushTestSent { .. }
        | Event::ClockWentBack { .. }
        // Bot storage is private to its bot, and Zulip sends no event for it.
        | Event::BotStorageSet { .. }
        | Event::BotStorageRemoved { .. } => Deliveries::new(),
        Event::RealmSettingChanged { name, .. } => realm::setting_changed(state, name),
        Event::RealmDomainAdded {
            domain,
            allow_subdomains,
        } => realm::domain_changed(state, "add", domain, *allow_subdomains),
        Event::RealmDomainChanged {
            domain,
            allow_subdomains,
        } => realm::domain_changed(state, "change", domain, *allow_subdomains),
        Event::RealmDomainRemoved { domain } => realm::domain_removed(state, domain),
        Event::PlaygroundAdded { .. } | Event::PlaygroundRemoved { .. } => {
            realm::playgrounds_changed(state)
        }
        Event::RealmImageSet { image, .. } => realm::image_changed(state, site, *image),
        Event::DefaultChannelGroupSaved { .. } | Event::DefaultChannelGroupRemoved { .. } => {
            realm::default_channel_groups_changed(state)
        }
        Event::RealmUserDefaultChanged { name, value } => {
            realm::user_default_changed(state, name, value)
        }
        Event::CustomEmojiAdded { .. } | Event::CustomEmojiDeactivated { .. } => {
            realm::emoji_changed(state)
        }
        Event::LinkifierAdded { .. }
        | Event::LinkifierChanged { .. }
        | Event::LinkifierRemoved { .. }
        | Event::LinkifiersReordered { .. } => realm::linkifiers_changed(state),
        Event::CustomProfileFieldCreated { .. }
        | Event::CustomProfileFieldChanged { .. }
        | Event::CustomProfileFieldDeleted { .. }
        | Event::CustomProfileFieldsReordered { .. } => realm::profile_fields_changed(state),
        Event::RealmExported { .. } | Event::RealmExportDeleted { .. } => {
            realm::exports_changed(state, site)
        }
        Event::InvitationCreated { invite_id, .. }
        | Event::InvitationRevoked { invite_id }
        | Event::InvitationAccepted { invite_id, .. } => {
            realm::invitations_changed(state, *invite_id)
        }
        // A bot's new key goes to its owner (Zulip's `realm_bot` `update`); a user's own key is
        // told to nobody.
        Event::ApiKeyRegenerated { user_id, .. } => match state.users.get(*user_id) {
            Some(bot) if bot.is_bot() => bot
                .bot_owner_id
                .map(|owner| {
                    Deliveries::from(vec![(
                        owner,
                        json!({"type": "realm_bot", "op": "update", "bot": {
                            "user_id": user_id.0,
                            "api_key": secret.api_key(*user_id, &bot.api_key_nonce),
                        }}),
                    )])
                })
                .unwrap_or_default(),
            _ => Deliveries::new(),
        },
        Event::UserCreated { user_id, .. } => users::user_created(state, site, secret, *user_id),
        Event::UserDeactivated { user_id } => users::activity_changed(state, *user_id, false),
        Event::UserReactivated { user_id } => users::activity_changed(state, *user_id, true),
        Event::UserChanged { user_id, change } => users::user_changed(state, *user_id, change),
        Event::UserEmailChanged { user_id, .. } => users::email_changed(state, *user_id),
        Event::ProfileDataSet {
            user_id,
            field_id,
            value,
            rendered_value,
        } => users::profile_data_set(
            state,
            *user_id,
            *field_id,
            value.as_ref(),
            rendered_value.as_deref(),
        ),
        Event::UserSettingChanged {
            user_id,
            name,
            value,
        } => users::setting_changed(state, *user_id, name, value),
        Event::UserStatusSet {
            user_id,
            away,
            status_text,
            emoji,
        } => users::status_set(
            state,
            *user_id,
            *away,
            status_text.as_deref(),
            emoji.as_ref(),
        ),
        Event::PresenceUpdated { user_id, .. } => {
            users::presence_updated(state, site, env.at, *user_id)
        }
        Event::UserGroupCreated {
            group_id, system, ..
        } => groups::group_created(state, *group_id, system.is_some()),
        Event::UserGroupMembersChanged {
            group_id,
            added,
            removed,
        } => groups::members_changed(state, *group_id, added, removed),
        Event::UserGroupSubgroupsChanged {
            group_id,
            added,
            removed,
        } => groups::subgroups_changed(state, *group_id, added, removed),
        Event::UserGroupChanged { group_id, change } => {
            groups::group_changed(state, *group_id, change)
        }
        Event::ChannelCreated { channel_id, .. } => channels::channel_created(state, *channel_id),
        Event::ChannelChanged { channel_id, change } => {
            channels::channel_changed(state, *channel_id, change)
        }
        Event::Subscribed {
            channel_id,
            subscriptions,
        } => channels::subscribed(state, *channel_id, subscriptions),
        Event::Unsubscribed {
            channel_id,
            user_ids,
        } => channels::unsubscribed(state, *channel_id, user_ids),
        Event::SubscriptionPropertyChanged {
            user_id,
            channel_id,
            property,
        } => channels::subscription_changed(*user_id, *channel_id, property),
        Event::ChannelFolderCreated { folder_id, .. } => {
            channels::folder_created(state, *folder_id)
        }
        Event::ChannelFolderChanged {
            folder_id,
            name,
            description,
            is_archived,
        } => channels::folder_changed(
            state,
            *folder_id,
            name.as_ref(),
            description.is_some(),
            *is_archived,
        ),
        Event::ChannelFoldersReordered { order } => audience::to_all(
            state,
            json!({"type": "channel_folder", "op": "reorder", "order": order}),
        ),
        Event::MessageSent {
            message_id,
            sender_id,
            sender_queue,
            ..
        } => {
            let mut out = messages::message_sent(
                state,
                site,
                *message_id,
                *sender_id,
                sender_queue.as_deref(),
                listening,
            );
            out.extend(attachments::linked(state, *message_id));
            out
        }
        Event::MessageFlagsChanged {
            user_id,
            flag,
            add,
            message_ids,
        } => messages::flags_changed(state, *user_id, *flag, *add, message_ids),
        Event::ReactionAdded { .. } | Event::ReactionRemoved { .. } => {
            messages::reaction_changed(state, site, &env.event)
        }
        Event::MessageEdited {
            message_id,
            user_id,
            content,
            moved,
            ..
        } => {
            let mut out = messages::message_edited(
                state,
                env,
                *message_id,
                *user_id,
                content.is_some(),
                moved.as_deref(),
            );
            if content.is_some() {
                out.extend(attachments::linked(state, *message_id));
            }
            out
        }
        Event::AvatarSet { user_id, .. } => users::avatar_changed(state, site, *user_id),
        Event::AlertWordsAdded { user_id, .. } | Event::AlertWordsRemoved { user_id, .. } => {
            Deliveries::from(vec![(
                *user_id,
                json!({"type": "alert_words", "alert_words": state.alert_words.json(*user_id)}),
            )])
        }
        Event::UserMuted { user_id, .. } | Event::UserUnmuted { user_id, .. } => {
            Deliveries::from(vec![(
                *user_id,
                json!({"type": "muted_users", "muted_users": state.mutes.json(*user_id)}),
            )])
        }
        Event::AttachmentUploaded { attachment_id, .. } => {
            attachments::uploaded(state, *attachment_id)
        }
        Event::AttachmentDeleted {
            attachment_id,
            owner_id,
        } => attachments::deleted(state, *attachment_id, *owner_id),
        Event::MessagesDeleted {
            message_ids,
            recipient,
            holders,
        } => messages::messages_deleted(state, message_ids, recipient, holders),
        Event::SubmessageAdded { .. } => messages::submessage_added(state, &env.event),
        Event::TypingStarted { user_id, target } => {
            messages::typing(state, site, *user_id, target, "start")
        }
        Event::TypingStopped { user_id, target } => {
            messages::typing(state, site, *user_id, target, "stop")
        }
        Event::EditTyping {
            user_id,
            message_id,
            start,
        } => messages::edit_typing(state, *user_id, *message_id, *start),
        Event::TopicVisibilitySet {
            user_id,
            channel_id,
            topic,
            policy,
        } => messages::topic_visibility_set(state, env.at, *user_id, *channel_id, topic, *policy),
        Event::ScheduledMessageSaved { .. }
        | Event::ScheduledMessageFailed { .. }
        | Event::ScheduledMessageRemoved { .. }
        | Event::NavigationViewAdded { .. }
        | Event::NavigationViewChanged { .. }
        | Event::NavigationViewRemoved { .. }
        | Event::ClientDeviceRegistered { .. }
        | Event::ClientDeviceRemoved { .. }
        | Event::PushDeviceChanged { .. }
        | Event::DraftsSaved { .. }
        | Event::DraftRemoved { .. }
        | Event::SavedSnippetSaved { .. }
        | Event::SavedSnippetRemoved { .. } => personal::personal(state, &env.event),
        Event::BotChanged { user_id, change } => {
            users::bot_changed(state, site, secret, *user_id, change)
        }
    }
}

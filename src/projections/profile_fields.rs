//! Custom profile fields and every user's values for them.

use crate::events::{Envelope, Event, ProfileFieldSpec};
use crate::ids::{FieldId, UserId};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// One field as the organization defined it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Field {
    pub id: FieldId,
    pub spec: ProfileFieldSpec,
    /// Position in the organization's order (Zulip's `order`).
    pub order: u64,
}

/// A user's value for one field.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldValue {
    pub value: String,
    pub rendered_value: Option<String>,
}

/// All fields and values.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ProfileFields {
    fields: BTreeMap<FieldId, Field>,
    values: HashMap<UserId, BTreeMap<FieldId, FieldValue>>,
    /// The highest id ever created: ids of deleted fields are never reused.
    max_id: FieldId,
    /// Renewed whenever a field or a value changes (see [`super::Stamp`]); not kept in snapshots.
    #[serde(skip)]
    stamp: super::Stamp,
}

impl ProfileFields {
    pub fn get(&self, id: FieldId) -> Option<&Field> {
        self.fields.get(&id)
    }

    /// The fields in the organization's order.
    pub fn ordered(&self) -> Vec<&Field> {
        let mut fields: Vec<&Field> = self.fields.values().collect();
        fields.sort_by_key(|f| (f.order, f.id));
        fields
    }

    /// The highest field id ever allocated.
    pub fn max_id(&self) -> FieldId {
        self.max_id
    }

    /// Renewed whenever a field or a value changes: what is rendered from them is still right while it is the same.
    pub fn stamp(&self) -> super::Stamp {
        self.stamp
    }

    /// A user's values, by field.
    pub fn values_of(&self, user: UserId) -> Option<&BTreeMap<FieldId, FieldValue>> {
        self.values.get(&user)
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::CustomProfileFieldCreated { field_id, spec } => {
                self.max_id = self.max_id.max(*field_id);
                self.fields.insert(
                    *field_id,
                    Field {
                        id: *field_id,
                        spec: spec.clone(),
                        order: field_id.0,
                    },
                );
            }
            Event::CustomProfileFieldChanged { field_id, spec } => {
                if let Some(field) = self.fields.get_mut(field_id) {
                    field.spec = spec.clone();
                }
            }
            Event::CustomProfileFieldDeleted { field_id } => {
                self.fields.remove(field_id);
                for values in self.values.values_mut() {
                    values.remove(field_id);
                }
            }
            Event::CustomProfileFieldsReordered { order } => {
                for (position, id) in order.iter().enumerate() {
                    if let Some(field) = self.fields.get_mut(id) {
                        field.order = position as u64;
                    }
                }
            }
            Event::ProfileDataSet {
                user_id,
                field_id,
                value,
                rendered_value,
            } => match value {
                Some(value) => {
                    self.values.entry(*user_id).or_default().insert(
                        *field_id,
                        FieldValue {
                            value: value.clone(),
                            rendered_value: rendered_value.clone(),
                        },
                    );
                }
                None => {
                    if let Some(values) = self.values.get_mut(user_id) {
                        values.remove(field_id);
                    }
                }
            },
            Event::RealmCreated { .. }
            | Event::RealmSettingChanged { .. }
            | Event::InvitationCreated { .. }
            | Event::InvitationResent { .. }
            | Event::InvitationRevoked { .. }
            | Event::InvitationAccepted { .. }
            | Event::LinkifierAdded { .. }
            | Event::LinkifierChanged { .. }
            | Event::LinkifierRemoved { .. }
            | Event::LinkifiersReordered { .. }
            | Event::UserCreated { .. }
            | Event::ApiKeyRegenerated { .. }
            | Event::PasswordChanged { .. }
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
            | Event::CustomEmojiAdded { .. }
            | Event::CustomEmojiDeactivated { .. }
            | Event::PresenceUpdated { .. }
            | Event::UserSettingChanged { .. }
            | Event::SubmessageAdded { .. }
            | Event::UserStatusSet { .. }
            | Event::BotStorageSet { .. }
            | Event::BotStorageRemoved { .. }
            | Event::AttachmentUploaded { .. }
            | Event::AttachmentDeleted { .. }
            | Event::ScheduledMessageSaved { .. }
            | Event::ScheduledMessageFailed { .. }
            | Event::ScheduledMessageRemoved { .. }
            | Event::NavigationViewAdded { .. }
            | Event::NavigationViewChanged { .. }
            | Event::NavigationViewRemoved { .. }
            | Event::BotChanged { .. }
            | Event::ClientDeviceRegistered { .. }
            | Event::ClientDeviceRemoved { .. }
            | Event::SessionStarted { .. }
            | Event::SessionEnded { .. }
            | Event::TwoFactorChanged { .. }
            | Event::SignInTokenSpent { .. }
            | Event::NoticesRecorded { .. }
            | Event::NoticesSettled { .. }
            | Event::EmailQueued { .. }
            | Event::EmailSent { .. }
            | Event::EmailFailed { .. }
            | Event::PushDeviceChanged { .. }
            | Event::PushQueued { .. }
            | Event::PushSent { .. }
            | Event::PushFailed { .. }
            | Event::PushTestSent { .. }
            | Event::ClockWentBack { .. }
            | Event::UserEmailChanged { .. }
            | Event::DraftsSaved { .. }
            | Event::DraftRemoved { .. }
            | Event::SavedSnippetSaved { .. }
            | Event::SavedSnippetRemoved { .. }
            | Event::UserMuted { .. }
            | Event::AlertWordsAdded { .. }
            | Event::RealmDomainAdded { .. }
            | Event::RealmDomainChanged { .. }
            | Event::RealmDomainRemoved { .. }
            | Event::AlertWordsRemoved { .. }
            | Event::AvatarSet { .. }
            | Event::UserUnmuted { .. }
            | Event::LogErased { .. }
            | Event::ImportStarted { .. }
            | Event::ImportFinished { .. }
            | Event::RealmExported { .. }
            | Event::RealmExportDeleted { .. }
            | Event::Imported { .. }
            | Event::MessagesReadThrough { .. }
            | Event::TypingStarted { .. }
            | Event::TypingStopped { .. }
            | Event::EditTyping { .. }
            | Event::PlaygroundAdded { .. }
            | Event::PlaygroundRemoved { .. }
            | Event::RealmUserDefaultChanged { .. }
            | Event::DefaultChannelGroupSaved { .. }
            | Event::DefaultChannelGroupRemoved { .. }
            | Event::RealmImageSet { .. }
            | Event::MessageSent { .. }
            | Event::MessageFlagsChanged { .. }
            | Event::ReactionAdded { .. }
            | Event::ReactionRemoved { .. }
            | Event::MessageEdited { .. }
            | Event::MessagesDeleted { .. } => return,
        }
        self.stamp.renew();
    }

    pub fn dump(&self) -> Value {
        let values: BTreeMap<u64, BTreeMap<u64, &str>> = self
            .values
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(user, v)| {
                (
                    user.0,
                    v.iter().map(|(f, fv)| (f.0, fv.value.as_str())).collect(),
                )
            })
            .collect();
        json!({
            "fields": self
                .ordered()
                .iter()
                .map(|f| json!({"id": f.id.0, "order": f.order, "spec": f.spec}))
                .collect::<Vec<_>>(),
            "values": values,
        })
    }
}

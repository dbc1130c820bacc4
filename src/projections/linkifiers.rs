//! Linkifiers, in the organization's order, with their patterns compiled once.

use crate::events::{Envelope, Event, LinkifierSpec};
use crate::ids::LinkifierId;
use crate::linkify::{compile, Compiled, UrlTemplate};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One linkifier.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Linkifier {
    pub id: LinkifierId,
    pub spec: LinkifierSpec,
    pub order: u64,
    /// `None` if the stored pattern or template no longer compiles (it was checked when
    /// added; a log must replay whatever the rules become): such a linkifier links nothing.
    /// Not in snapshots: compiled again when one is loaded (`Linkifiers::recompile`).
    #[serde(skip)]
    pub compiled: Option<Compiled>,
}

fn compiled(spec: &LinkifierSpec) -> Option<Compiled> {
    Some(Compiled {
        regex: compile(&spec.pattern).ok()?,
        template: UrlTemplate::parse(&spec.url_template)?,
    })
}

/// All linkifiers.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Linkifiers {
    by_id: BTreeMap<LinkifierId, Linkifier>,
    /// The highest id ever given: ids of removed linkifiers are never reused.
    max_id: LinkifierId,
}

impl Linkifiers {
    pub fn get(&self, id: LinkifierId) -> Option<&Linkifier> {
        self.by_id.get(&id)
    }

    pub fn max_id(&self) -> LinkifierId {
        self.max_id
    }

    /// In the organization's order (ties by id).
    pub fn ordered(&self) -> Vec<&Linkifier> {
        let mut all: Vec<&Linkifier> = self.by_id.values().collect();
        all.sort_by_key(|l| (l.order, l.id));
        all
    }

    /// The compiled linkifiers, in order, for rendering.
    pub fn compiled(&self) -> Vec<&Compiled> {
        self.ordered()
            .into_iter()
            .filter_map(|l| l.compiled.as_ref())
            .collect()
    }

    /// Compiles every linkifier again (after loading a snapshot, which holds only the specs).
    pub fn recompile(&mut self) {
        for l in self.by_id.values_mut() {
            l.compiled = compiled(&l.spec);
        }
    }

    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::LinkifierAdded { linkifier_id, spec } => {
                self.max_id = self.max_id.max(*linkifier_id);
                let order = self.by_id.values().map(|l| l.order + 1).max().unwrap_or(0);
                self.by_id.insert(
                    *linkifier_id,
                    Linkifier {
                        id: *linkifier_id,
                        spec: spec.clone(),
                        order,
                        compiled: compiled(spec),
                    },
                );
            }
            Event::LinkifierChanged { linkifier_id, spec } => {
                if let Some(l) = self.by_id.get_mut(linkifier_id) {
                    l.spec = spec.clone();
                    l.compiled = compiled(spec);
                }
            }
            Event::LinkifierRemoved { linkifier_id } => {
                self.by_id.remove(linkifier_id);
            }
            Event::LinkifiersReordered { order } => {
                for (position, id) in order.iter().enumerate() {
                    if let Some(l) = self.by_id.get_mut(id) {
                        l.order = position as u64;
                    }
                }
            }
            Event::RealmCreated { .. }
            | Event::RealmSettingChanged { .. }
            | Event::InvitationCreated { .. }
            | Event::InvitationResent { .. }
            | Event::InvitationRevoked { .. }
            | Event::InvitationAccepted { .. }
            | Event::CustomProfileFieldCreated { .. }
            | Event::CustomProfileFieldChanged { .. }
            | Event::CustomProfileFieldDeleted { .. }
            | Event::CustomProfileFieldsReordered { .. }
            | Event::ProfileDataSet { .. }
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
            | Event::MessagesDeleted { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        Value::Array(
            self.ordered()
                .into_iter()
                .map(|l| json!({"id": l.id.0, "order": l.order, "spec": l.spec}))
                .collect(),
        )
    }
}

//! A client event for one user, with what differs between clients as typed fields.

use crate::events::SenderQueue;
use crate::ids::{MessageId, UserId};
use crate::render::messages::MarkdownJson;
use serde_json::Value;
use std::sync::Arc;

/// One Zulip client event for one user. `body` is the event as a client without any of the
/// capabilities below receives it; `variants` says what changes for the clients that have
/// them. `Queues::publish` fits it to each queue of the user.
#[derive(Debug, Clone)]
pub struct ClientEvent {
    pub user_id: UserId,
    pub body: Value,
    pub variants: Variants,
}

/// What an event looks like to clients that registered for something else than the default.
#[derive(Debug, Clone, Default)]
pub struct Variants {
    /// Top-level fields that hold a topic's display name ("general chat" for the empty topic),
    /// with the topic as it is stored, for clients with `empty_topic_name`.
    pub stored_topics: Vec<(&'static str, String)>,
    /// For a `message` event: its Markdown source and stored topic.
    pub message_source: Option<MessageSource>,
    /// For a `message` event to its sender: the queue that sent it, which alone gets
    /// `local_message_id`.
    pub sender_queue: Option<SenderQueue>,
    /// For a `presence` event: the body clients with `simplified_presence_events` get instead.
    pub simplified_presence: Option<Value>,
    /// For an `is_archived` channel update: the channel, which clients without
    /// `archived_channels` get as a `stream` deletion (archived) or creation (unarchived).
    pub archived_channel: Option<Value>,
}

/// A `message` event's message object, written as JSON text once for everyone who sees the
/// message alike (the event's `body` has no `message` field; it is put in place as the event is
/// queued), with what clients that see it otherwise need: its Markdown source (for queues
/// registered without `apply_markdown`) and its stored topic (for queues with
/// `empty_topic_name`).
#[derive(Debug, Clone)]
pub struct MessageSource {
    pub id: MessageId,
    pub json: Arc<str>,
    pub content: Arc<str>,
    pub topic: String,
    /// A channel message (a direct message's topic is not shown).
    pub in_channel: bool,
    /// `json` with the Markdown source in place of the HTML, for queues registered without
    /// `apply_markdown` (bots, the Python client): written by the first such queue to take the
    /// event, and shared by every event that shares `json`.
    pub markdown_json: MarkdownJson,
}

impl From<(UserId, Value)> for ClientEvent {
    /// An event that is the same for every client.
    fn from((user_id, body): (UserId, Value)) -> ClientEvent {
        ClientEvent {
            user_id,
            body,
            variants: Variants::default(),
        }
    }
}

impl ClientEvent {
    /// The event's `type`.
    pub fn kind(&self) -> &str {
        self.body["type"].as_str().unwrap_or_default()
    }
}

/// The client events of one durable event, in the order they are delivered.
#[derive(Debug, Default)]
pub struct Deliveries(pub Vec<ClientEvent>);

impl Deliveries {
    pub fn new() -> Deliveries {
        Deliveries(Vec::new())
    }

    pub fn push(&mut self, event: impl Into<ClientEvent>) {
        self.0.push(event.into());
    }

    pub fn iter(&self) -> std::slice::Iter<'_, ClientEvent> {
        self.0.iter()
    }
}

impl<T: Into<ClientEvent>> FromIterator<T> for Deliveries {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Deliveries {
        Deliveries(iter.into_iter().map(Into::into).collect())
    }
}

impl<T: Into<ClientEvent>> Extend<T> for Deliveries {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        self.0.extend(iter.into_iter().map(Into::into));
    }
}

impl<T: Into<ClientEvent>> From<Vec<T>> for Deliveries {
    fn from(events: Vec<T>) -> Deliveries {
        events.into_iter().collect()
    }
}

impl IntoIterator for Deliveries {
    type Item = ClientEvent;
    type IntoIter = std::vec::IntoIter<ClientEvent>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

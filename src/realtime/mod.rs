//! Real-time delivery: event queues fed by the same durable events that feed the projections.
//!
//! After each batch is durable and applied, the engine hands its envelopes to [`Queues::publish`]
//! (on the writer thread, under a read lock of the state right after the batch). `translate`
//! turns each envelope into the Zulip client events it implies, per recipient; every queue of
//! a recipient that asked for that event type gets it, numbered per queue, and waiting
//! long-polls wake. `POST /register` builds the initial state and registers the queue under the
//! same read lock, so no event falls between them and none is delivered twice: a queue only
//! takes events with a seq above the state it was given.

pub mod register;
pub mod translate;

use crate::auth::ServerSecret;
use crate::events::Envelope;
use crate::ids::{MessageId, Seq, UserId};
use crate::projections::{Message, Projections};
use crate::render::Site;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use translate::ClientEvent;

/// Zulip's default idle lifetime of a queue (`DEFAULT_EVENT_QUEUE_TIMEOUT_SECS`).
pub const DEFAULT_QUEUE_LIFESPAN: Duration = Duration::from_secs(600);
/// The longest lifetime a client may ask for (`MAX_QUEUE_TIMEOUT_SECS`, 7 days).
pub const MAX_QUEUE_LIFESPAN: Duration = Duration::from_secs(7 * 24 * 3600);
/// Events a queue holds before it is dropped (the client then re-registers): bounds memory.
pub const MAX_QUEUE_EVENTS: usize = 10_000;
/// The JSON text a queue holds before it is dropped: a client that
/// stops polling costs at most this much until its queue expires.
pub const MAX_QUEUE_BYTES: usize = 2 * 1024 * 1024;
/// Queues one user may hold. Registering another drops the user's least recently polled idle
/// queue (its client re-registers, as after any expiry), so a client stuck in a register loop
/// cannot grow the server; with one parked long-poll per queue this also bounds a user's
/// long-polls.
pub const MAX_QUEUES_PER_USER: usize = 32;

/// The client capabilities Chronicle's events depend on.
#[derive(Debug, Clone, Default)]
pub struct Capabilities {
    pub notification_settings_null: bool,
    pub bulk_message_deletion: bool,
    pub user_avatar_url_field_optional: bool,
    pub stream_typing_notifications: bool,
    pub user_settings_object: bool,
    pub linkifier_url_template: bool,
    pub user_list_incomplete: bool,
    pub include_deactivated_groups: bool,
    pub archived_channels: bool,
    pub empty_topic_name: bool,
    pub simplified_presence_events: bool,
}

/// What a queue was registered for.
#[derive(Debug, Clone)]
pub struct QueueOptions {
    /// `None`: every event type.
    pub event_types: Option<BTreeSet<String>>,
    pub apply_markdown: bool,
    pub client_gravatar: bool,
    pub all_public_streams: bool,
    pub capabilities: Capabilities,
    pub lifespan: Duration,
    /// Only message events matching this narrow are delivered (empty: all of them).
    pub narrow: Vec<crate::narrow::Term>,
}

impl QueueOptions {
    /// Whether the queue takes events of this type. Heartbeats reach every queue; the legacy
    /// `muted_topics` event goes only to queues that did not ask for `user_topic`.
    pub fn wants(&self, event_type: &str) -> bool {
        let Some(types) = &self.event_types else {
            return true;
        };
        match event_type {
            // Every client must hear these, whatever it asked for.
            "heartbeat" | "restart" => true,
            "muted_topics" => types.contains("muted_topics") && !types.contains("user_topic"),
            other => types.contains(other),
        }
    }
}

struct QueueState {
    events: VecDeque<Held>,
    /// The sum of the held events' lengths.
    bytes: usize,
    next_id: i64,
    last_poll: Instant,
    polling: usize,
    /// Bumped by each poll: an older parked poll that sees a newer one ends, so a queue has at
    /// most one parked long-poll.
    poll_generation: u64,
    /// Overflowed or displaced: the client must register again.
    dropped: bool,
}

/// An event as its queue holds it: written as JSON text (its id included) once, when it is put
/// in the queue, and handed to each poll as it is. With thousands of people connected, a queue
/// of trees (cloned for each poll, written out by it, dropped by the next) cost more processor
/// time in the allocator than the deliveries themselves.
struct Held {
    id: i64,
    text: Arc<str>,
    /// For a `message` event, its message (see [`Queue::held_message_ids`]).
    message_id: Option<MessageId>,
}

/// A `message` event's message object as a queue takes it: already written, to be put in place.
#[derive(Debug, Clone, Copy)]
struct MessageText<'a> {
    id: MessageId,
    json: &'a str,
}

/// The text of an event as its queue holds it: its fields in order, `message` (already written)
/// after `type` when given, and `id` last (the queue's, in place of any the body had).
fn held_text(event: &Value, message: Option<&str>, id: i64) -> Arc<str> {
    use crate::render::fields::{Fields, JsonBuf};
    let mut buf = JsonBuf::with_capacity(message.map_or(0, str::len) + 128);
    buf.object(|o| {
        let mut message = message;
        if let Value::Object(fields) = event {
            for (key, value) in fields.iter().filter(|(key, _)| *key != "id") {
                o.field(key, value);
                if key == "type" {
                    if let Some(json) = message.take() {
                        o.field_with("message", |b| b.text(json.as_bytes()));
                    }
                }
            }
        }
        // Every message event has a `type`; were one without, its message would still be kept.
        if let Some(json) = message {
            o.field_with("message", |b| b.text(json.as_bytes()));
        }
        o.field("id", &id);
    });
    // An event is a tree of strings, numbers and string-keyed maps: it always writes.
    let bytes = buf.into_bytes().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default().into()
}

/// One client's event queue.
pub struct Queue {
    pub id: String,
    pub user_id: UserId,
    pub options: QueueOptions,
    /// The seq of the state the client was given: only later events are delivered.
    pub from_seq: Seq,
    state: Mutex<QueueState>,
    notify: Notify,
}

impl QueueState {
    fn drop_events(&mut self) {
        self.dropped = true;
        self.events = VecDeque::new();
        self.bytes = 0;
    }
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, event: Value) {
        self.push_with(event, None);
    }

    /// Puts `event` in the queue as JSON text, with its id. A `message` event's message object
    /// may come as text already written (`message`, shared by everyone who sees the message
    /// alike): `event` has no `message` field then, and the text goes in second place, after
    /// `type`, where a client finds it.
    fn push_with(&self, event: Value, message: Option<MessageText<'_>>) {
        let message_id = match (message, &event["type"]) {
            (Some(message), _) => Some(message.id),
            (None, Value::String(kind)) if kind == "message" => {
                event["message"]["id"].as_u64().map(MessageId)
            }
            _ => None,
        };
        let mut state = self.lock();
        if state.dropped {
            return;
        }
        let id = state.next_id;
        let text = held_text(&event, message.map(|m| m.json), id);
        if state.events.len() >= MAX_QUEUE_EVENTS || state.bytes + text.len() > MAX_QUEUE_BYTES {
            state.drop_events();
        } else {
            state.next_id += 1;
            state.bytes += text.len();
            state.events.push_back(Held {
                id,
                text,
                message_id,
            });
        }
        drop(state);
        drop(event);
        self.notify.notify_waiters();
    }

    /// Marks the queue dropped and frees its events; a parked poll wakes to tell its client.
    /// The ids of the message events the queue holds (not yet handed over and acknowledged).
    fn held_message_ids(&self) -> Vec<MessageId> {
        self.lock()
            .events
            .iter()
            .filter_map(|held| held.message_id)
            .collect()
    }

    fn drop_queue(&self) {
        self.lock().drop_events();
        self.notify.notify_waiters();
    }

    /// Drops events the client has seen (ids up to `last_event_id`).
    fn prune(&self, last_event_id: i64) {
        let mut state = self.lock();
        while let Some(held) = state.events.front() {
            if held.id > last_event_id {
                break;
            }
            state.bytes -= held.text.len();
            state.events.pop_front();
        }
    }

    /// The id of the newest event in the queue, or -1.
    pub fn last_event_id(&self) -> i64 {
        self.lock().next_id - 1
    }
}

/// Why `GET /events` could not be answered from a queue.
#[derive(Debug, PartialEq)]
pub enum PollError {
    /// Unknown, foreign, expired or overflowed queue: the client must re-register.
    BadQueue,
}

/// All queues of the server, by id and by user.
#[derive(Default)]
struct QueueMap {
    by_id: HashMap<String, Arc<Queue>>,
    by_user: HashMap<UserId, Vec<Arc<Queue>>>,
}

impl QueueMap {
    fn remove(&mut self, id: &str) -> Option<Arc<Queue>> {
        let queue = self.by_id.remove(id)?;
        if let Some(list) = self.by_user.get_mut(&queue.user_id) {
            list.retain(|q| q.id != id);
            if list.is_empty() {
                self.by_user.remove(&queue.user_id);
            }
        }
        Some(queue)
    }
}

/// All queues of the server.
pub struct Queues {
    map: Mutex<QueueMap>,
    site: Site,
    /// For the API keys that `realm_bot` events carry to bot owners.
    secret: ServerSecret,
    /// What every queue id starts with: in a cluster, this node's tag and a colon, so that
    /// another node can tell whose queue a client asks about.
    id_prefix: String,
}

impl Queues {
    pub fn new(site: Site, secret: ServerSecret) -> Queues {
        Queues {
            map: Mutex::new(QueueMap::default()),
            site,
            secret,
            id_prefix: String::new(),
        }
    }

    /// Queues whose ids say they are this node's (`TAG:...`), in a cluster.
    pub fn of_node(site: Site, secret: ServerSecret, tag: &str) -> Queues {
        Queues {
            id_prefix: format!("{tag}:"),
            ..Queues::new(site, secret)
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, QueueMap> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a queue. Call it while holding the read lock of the state the client gets.
    /// A user at [`MAX_QUEUES_PER_USER`] loses the queue polled longest ago (idle ones first).
    pub fn register(&self, user_id: UserId, options: QueueOptions, from_seq: Seq) -> Arc<Queue> {
        let queue = Arc::new(Queue {
            id: format!("{}{}", self.id_prefix, uuid::Uuid::new_v4()),
            user_id,
            options,
            from_seq,
            state: Mutex::new(QueueState {
                events: VecDeque::new(),
                bytes: 0,
                next_id: 0,
                last_poll: Instant::now(),
                polling: 0,
                poll_generation: 0,
                dropped: false,
            }),
            notify: Notify::new(),
        });
        let mut map = self.map();
        let displaced = map
            .by_user
            .get(&user_id)
            .filter(|list| list.len() >= MAX_QUEUES_PER_USER)
            .and_then(|list| {
                list.iter()
                    .min_by_key(|q| {
                        let state = q.lock();
                        // Dropped queues first, then idle ones, the longest unpolled first.
                        (!state.dropped, state.polling > 0, state.last_poll)
                    })
                    .cloned()
            });
        if let Some(old) = displaced {
            map.remove(&old.id);
            old.drop_queue();
        }
        map.by_id.insert(queue.id.clone(), queue.clone());
        map.by_user.entry(user_id).or_default().push(queue.clone());
        queue
    }

    /// The user's queue with this id.
    pub fn get(&self, user_id: UserId, id: &str) -> Result<Arc<Queue>, PollError> {
        let queue = self
            .map()
            .by_id
            .get(id)
            .cloned()
            .ok_or(PollError::BadQueue)?;
        if queue.user_id != user_id || queue.lock().dropped {
            return Err(PollError::BadQueue);
        }
        Ok(queue)
    }

    /// `DELETE /events`.
    pub fn remove(&self, user_id: UserId, id: &str) -> Result<(), PollError> {
        let mut map = self.map();
        match map.by_id.get(id) {
            Some(q) if q.user_id == user_id => {
                if let Some(queue) = map.remove(id) {
                    queue.drop_queue();
                }
                Ok(())
            }
            _ => Err(PollError::BadQueue),
        }
    }

    pub fn len(&self) -> usize {
        self.map().by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every queue of the user.
    pub fn drop_user_queues(&self, user_id: UserId) {
        let mut map = self.map();
        let ids: Vec<String> = map
            .by_user
            .get(&user_id)
            .map(|list| list.iter().map(|q| q.id.clone()).collect())
            .unwrap_or_default();
        for id in ids {
            if let Some(queue) = map.remove(&id) {
                queue.drop_queue();
            }
        }
    }

    /// How many queues the user holds.
    pub fn count_for(&self, user_id: UserId) -> usize {
        self.map().by_user.get(&user_id).map_or(0, Vec::len)
    }

    /// Delivers a durable batch: called by the engine with the state right after it.
    pub fn publish(&self, state: &Projections, batch: &[Envelope]) {
        // The map is looked up per recipient rather than copied whole: with thousands of
        // people connected, a copy per batch cost more than the deliveries.
        if self.is_empty() {
            return;
        }
        // The queues that see every public channel's messages, found once per batch and only
        // for a batch that sends one.
        let public_readers: std::cell::OnceCell<Vec<Arc<Queue>>> = std::cell::OnceCell::new();
        let listening = |user: UserId| self.map().by_user.contains_key(&user);
        // Messages sent in this batch: their `message` events, built from the state after
        // it, already hold the submessages the batch added (a `/poll`'s widget), which then
        // need no `submessage` event of their own, as in Zulip.
        let mut sent_here: BTreeSet<crate::ids::MessageId> = BTreeSet::new();
        for env in batch {
            match &env.event {
                crate::events::Event::MessageSent { message_id, .. } => {
                    sent_here.insert(*message_id);
                }
                crate::events::Event::SubmessageAdded { message_id, .. }
                    if sent_here.contains(message_id) =>
                {
                    continue;
                }
                _ => {}
            }
            // A deactivated user's queues end with their access (the client cannot poll them
            // any more, and must not resume one after a reactivation).
            if let crate::events::Event::UserDeactivated { user_id } = &env.event {
                self.drop_user_queues(*user_id);
            }
            let mut told: BTreeSet<UserId> = BTreeSet::new();
            for event in translate::client_events(state, &self.site, &self.secret, env, &listening)
            {
                let Some(user_queues) = self.map().by_user.get(&event.user_id).cloned() else {
                    continue;
                };
                if event.kind() == "message" {
                    told.insert(event.user_id);
                }
                let mut event = event;
                for (n, q) in user_queues.iter().enumerate() {
                    deliver(state, q, env, &mut event, n + 1 == user_queues.len());
                }
            }
            // Queues registered with `all_public_streams` also see public channel messages
            // their user was not sent.
            if let Some(message) = public_channel_message(state, env) {
                let readers = public_readers.get_or_init(|| {
                    let map = self.map();
                    map.by_id
                        .values()
                        .filter(|q| q.options.all_public_streams)
                        .cloned()
                        .collect()
                });
                for q in readers {
                    if told.contains(&q.user_id) {
                        continue;
                    }
                    let Some(viewer) = state.users.get(q.user_id).filter(|u| u.is_active) else {
                        continue;
                    };
                    let mut event = translate::message_event(state, &self.site, viewer, message);
                    deliver(state, q, env, &mut event, true);
                }
            }
        }
    }
}

/// The message a `MessageSent` put in a public channel, if it did.
fn public_channel_message<'a>(state: &'a Projections, env: &Envelope) -> Option<&'a Message> {
    let crate::events::Event::MessageSent { message_id, .. } = &env.event else {
        return None;
    };
    let message = state.messages.get(*message_id)?;
    let channel = state.channels.get(message.channel()?)?;
    (!channel.invite_only).then_some(message)
}

/// Puts one client event in one queue, if the queue takes it: the event type it asked for,
/// the capabilities the event needs, its narrow; fitted to the queue by `adapt`. The `last`
/// queue to be given the event takes its body rather than a copy.
fn deliver(state: &Projections, q: &Queue, env: &Envelope, event: &mut ClientEvent, last: bool) {
    let event_type = event.kind();
    // Channel typing goes only to clients that declared they handle it.
    let channel_typing = event_type == "typing" && event.body["message_type"] == "stream";
    if channel_typing && !q.options.capabilities.stream_typing_notifications {
        return;
    }
    // Linkifier events only for clients that handle URL templates.
    if event_type == "realm_linkifiers" && !q.options.capabilities.linkifier_url_template {
        return;
    }
    if env.seq <= q.from_seq || !q.options.wants(event_type) {
        return;
    }
    // A narrowed queue takes only the message events its narrow matches.
    if event_type == "message" && !q.options.narrow.is_empty() {
        let matches = event
            .variants
            .message_source
            .as_ref()
            .map(|m| m.id)
            .or_else(|| event.body["message"]["id"].as_u64().map(MessageId))
            .and_then(|id| state.messages.get(id))
            .zip(state.users.get(q.user_id))
            .is_some_and(|(message, viewer)| {
                crate::narrow::narrow_matches(state, viewer, &q.options.narrow, message)
            });
        if !matches {
            return;
        }
    }
    let legacy_deletion =
        event_type == "delete_message" && !q.options.capabilities.bulk_message_deletion;
    let body = if last {
        std::mem::take(&mut event.body)
    } else {
        event.body.clone()
    };
    let (adapted, message) = adapt(state, &event.variants, body, q);
    if legacy_deletion {
        // Older clients get one event per message, with `message_id`.
        for one in legacy_deletions(&adapted) {
            q.push(one);
        }
    } else {
        q.push_with(adapted, message);
    }
}

/// A bulk `delete_message` event as the one-per-message events of clients without
/// `bulk_message_deletion`.
fn legacy_deletions(event: &Value) -> Vec<Value> {
    let ids = event["message_ids"].as_array().cloned().unwrap_or_default();
    ids.into_iter()
        .map(|id| {
            let mut one = event.clone();
            if let Some(map) = one.as_object_mut() {
                map.remove("message_ids");
                map.insert("message_id".into(), id);
            }
            one
        })
        .collect()
}

/// Fits a client event to what the queue registered for: its capabilities pick among the
/// event's variants, and notification settings that follow the user's defaults are filled in
/// for clients that do not take null. `body` is the event's body, to be fitted; `variants` its
/// variants. A `message` event's message object stays a shared text (returned, to be put in
/// place as the event is queued): the one it was written as, or for a client without
/// `apply_markdown` the same with the Markdown source, written once for all such clients. Only
/// a client shown the empty topic as stored gets a copy of its own.
fn adapt<'v>(
    state: &Projections,
    variants: &'v translate::Variants,
    body: Value,
    queue: &Queue,
) -> (Value, Option<MessageText<'v>>) {
    let options = &queue.options;
    let capabilities = &options.capabilities;
    if let Some(simplified) = variants
        .simplified_presence
        .as_ref()
        .filter(|_| capabilities.simplified_presence_events)
    {
        return (simplified.clone(), None);
    }
    if let Some(stream) = variants
        .archived_channel
        .as_ref()
        .filter(|_| !capabilities.archived_channels)
    {
        let replacement = if body["value"] == json!(true) {
            json!({"type": "stream", "op": "delete", "streams": [stream], "stream_ids": [body["stream_id"]]})
        } else {
            json!({"type": "stream", "op": "create", "streams": [stream]})
        };
        return (replacement, None);
    }
    let kind = |body: &Value, of: &str| body["type"] == of;
    if kind(&body, "user_group")
        && body["op"] == "update"
        && !capabilities.include_deactivated_groups
    {
        if let Some(replacement) = group_deactivation_as_membership(state, &body) {
            return (replacement, None);
        }
    }
    let mut body = body;
    if kind(&body, "subscription") && !capabilities.notification_settings_null {
        let op = body["op"].as_str().unwrap_or_default().to_owned();
        fill_subscription_defaults(state, queue.user_id, &op, &mut body);
    }
    if let Some(origin) = &variants.sender_queue {
        if origin.queue_id == queue.id {
            body["local_message_id"] = json!(origin.local_id);
        }
    }
    if capabilities.empty_topic_name {
        for (field, topic) in &variants.stored_topics {
            body[*field] = json!(topic);
        }
    }
    let Some(source) = &variants.message_source else {
        return (body, None);
    };
    // Only the empty topic is shown otherwise than it is stored.
    let stored_topic =
        capabilities.empty_topic_name && source.in_channel && source.topic.is_empty();
    if !stored_topic {
        let json = if options.apply_markdown {
            &source.json
        } else {
            source.markdown_json.get_or_init(|| {
                let message = changed_message(source, false, false);
                // A tree of strings, numbers and string-keyed maps: it always writes.
                serde_json::to_string(&message).unwrap_or_default().into()
            })
        };
        let text = MessageText {
            id: source.id,
            json,
        };
        return (body, Some(text));
    }
    // This client's message object is its own: built as a tree, changed, and put in its place
    // after `type`.
    let mut message = changed_message(source, options.apply_markdown, stored_topic);
    let Value::Object(fields) = body else {
        return (body, None);
    };
    let mut with_message = serde_json::Map::new();
    for (key, value) in fields {
        let is_type = key == "type";
        with_message.insert(key, value);
        if is_type {
            with_message.insert("message".into(), std::mem::take(&mut message));
        }
    }
    (Value::Object(with_message), None)
}

/// A message event's shared message object as a tree, with the Markdown source in place of the
/// HTML unless `apply_markdown`, and the topic as it is stored if `stored_topic`.
fn changed_message(
    source: &translate::MessageSource,
    apply_markdown: bool,
    stored_topic: bool,
) -> Value {
    let mut message: Value = serde_json::from_str(&source.json).unwrap_or(Value::Null);
    if !apply_markdown {
        message["content"] = json!(&*source.content);
        message["content_type"] = json!("text/x-markdown");
    }
    if stored_topic {
        message["subject"] = json!(source.topic);
    }
    message
}

/// For clients that do not list deactivated groups: a group's deactivation as its removal,
/// and its reactivation as its addition.
fn group_deactivation_as_membership(state: &Projections, event: &Value) -> Option<Value> {
    let group_id = event["group_id"].clone();
    match event["data"]["deactivated"].as_bool()? {
        true => Some(json!({"type": "user_group", "op": "remove", "group_id": group_id})),
        false => {
            let group = state.groups.get(crate::ids::GroupId(group_id.as_u64()?))?;
            Some(
                json!({"type": "user_group", "op": "add", "group": crate::render::groups::group_json(state, group)}),
            )
        }
    }
}

/// For clients without `notification_settings_null`: subscription notification settings that
/// follow the user's defaults (null) are shown as those defaults.
fn fill_subscription_defaults(state: &Projections, user_id: UserId, op: &str, event: &mut Value) {
    use crate::render::channels::{fill_notification_defaults, NOTIFICATION_DEFAULTS};
    if op == "add" {
        if let Some(subs) = event.get_mut("subscriptions").and_then(Value::as_array_mut) {
            for sub in subs.iter_mut() {
                fill_notification_defaults(state, user_id, sub);
            }
        }
    }
    let property = event["property"].as_str().unwrap_or_default().to_owned();
    if let Some((_, setting)) = NOTIFICATION_DEFAULTS.iter().find(|(f, _)| *f == property) {
        if event["value"].is_null() {
            event["value"] = crate::projections::user_settings::value_json(
                &state.user_settings.get(user_id, setting),
            );
        }
    }
}

impl Queues {
    /// Tells every queue the server is going away (Zulip's `restart` event): queues live in
    /// memory, so their clients must register again once it is back. Parked polls return it
    /// at once.
    pub fn announce_restart(&self) {
        use crate::render::{ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION};
        let event = json!({
            "type": "restart",
            "zulip_version": ZULIP_VERSION,
            "zulip_merge_base": ZULIP_MERGE_BASE,
            "zulip_feature_level": ZULIP_FEATURE_LEVEL,
            "server_generation": crate::time::now_ms() / 1000,
            "immediate": true,
        });
        for queue in self.map().by_id.values() {
            queue.push(event.clone());
        }
    }

    /// Whether `user` has a client that hears of new messages: a live queue that takes
    /// `message` events (Zulip's test of being "off Zulip" is that none does).
    pub fn has_message_queue(&self, user: UserId) -> bool {
        self.map().by_user.get(&user).is_some_and(|list| {
            list.iter()
                .any(|q| q.options.wants("message") && !q.lock().dropped)
        })
    }

    /// Drops queues nobody polled for longer than their lifespan: how many, and for each
    /// person left with no queue that hears of messages, the messages their collected queues
    /// held but never handed over (Zulip's missed-message hook tells them about those).
    pub fn collect_garbage(&self) -> (usize, Vec<(UserId, Vec<MessageId>)>) {
        let now = Instant::now();
        let mut map = self.map();
        let expired: Vec<String> = map
            .by_id
            .values()
            .filter(|q| {
                let state = q.lock();
                state.polling == 0 && now.duration_since(state.last_poll) >= q.options.lifespan
            })
            .map(|q| q.id.clone())
            .collect();
        let mut unheard: BTreeMap<UserId, Vec<MessageId>> = BTreeMap::new();
        for id in &expired {
            if let Some(queue) = map.remove(id) {
                let held = queue.held_message_ids();
                if !held.is_empty() {
                    unheard.entry(queue.user_id).or_default().extend(held);
                }
                queue.drop_queue();
            }
        }
        let abandoned = unheard
            .into_iter()
            .filter(|(user, _)| {
                !map.by_user.get(user).is_some_and(|list| {
                    list.iter()
                        .any(|q| q.options.wants("message") && !q.lock().dropped)
                })
            })
            .collect();
        (expired.len(), abandoned)
    }
}

/// Long-polls a queue: returns its events after `last_event_id` at once if there are any (or
/// if `dont_block`), else waits until one arrives or `heartbeat` passes, then returns a
/// heartbeat. A newer poll of the same queue ends this one with no events (a queue has one
/// parked poll at most); a queue dropped meanwhile answers `BadQueue`. The events come as the
/// queue holds them, JSON text.
pub async fn poll(
    queue: &Queue,
    last_event_id: Option<i64>,
    dont_block: bool,
    heartbeat: Duration,
) -> Result<Vec<Arc<str>>, PollError> {
    if let Some(last) = last_event_id {
        queue.prune(last);
    }
    // Counts this poll as connected until it ends, even if the client goes away mid-wait.
    struct Polling<'a>(&'a Queue);
    impl Drop for Polling<'_> {
        fn drop(&mut self) {
            crate::metrics::get().parked_polls.dec();
            let mut state = self.0.lock();
            state.polling = state.polling.saturating_sub(1);
            state.last_poll = Instant::now();
        }
    }
    let generation = {
        let mut state = queue.lock();
        state.last_poll = Instant::now();
        state.polling += 1;
        state.poll_generation += 1;
        state.poll_generation
    };
    // Wakes an older parked poll so that it sees it was superseded.
    queue.notify.notify_waiters();
    crate::metrics::get().parked_polls.inc();
    let _polling = Polling(queue);
    let deadline = tokio::time::Instant::now() + heartbeat;
    let pending = |state: &QueueState| -> Vec<Arc<str>> {
        state.events.iter().map(|held| held.text.clone()).collect()
    };
    loop {
        let notified = queue.notify.notified();
        {
            let state = queue.lock();
            if state.dropped {
                return Err(PollError::BadQueue);
            }
            if state.poll_generation != generation {
                return Ok(Vec::new());
            }
            let events = pending(&state);
            if !events.is_empty() || dont_block {
                return Ok(events);
            }
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            queue.push(json!({"type": "heartbeat"}));
            let state = queue.lock();
            if state.dropped {
                return Err(PollError::BadQueue);
            }
            return Ok(pending(&state));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues() -> Queues {
        Queues::new(
            Site {
                realm_url: "http://localhost".into(),
                ..Site::default()
            },
            ServerSecret::generate(),
        )
    }

    fn options(lifespan: Duration) -> QueueOptions {
        QueueOptions {
            event_types: None,
            apply_markdown: true,
            client_gravatar: false,
            all_public_streams: false,
            capabilities: Capabilities::default(),
            lifespan,
            narrow: Vec::new(),
        }
    }

    #[test]
    fn idle_queues_are_collected_after_their_lifespan_only() {
        let queues = queues();
        let short = queues.register(UserId(1), options(Duration::from_millis(20)), Seq(0));
        let long = queues.register(UserId(1), options(DEFAULT_QUEUE_LIFESPAN), Seq(0));
        assert_eq!(queues.collect_garbage().0, 0);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(queues.collect_garbage().0, 1);
        assert!(matches!(
            queues.get(UserId(1), &short.id),
            Err(PollError::BadQueue)
        ));
        assert!(queues.get(UserId(1), &long.id).is_ok());
        // Another user's queue id is refused like an unknown one.
        assert!(matches!(
            queues.get(UserId(2), &long.id),
            Err(PollError::BadQueue)
        ));
    }

    #[test]
    fn a_queue_that_overflows_must_be_registered_again() {
        let queues = queues();
        let queue = queues.register(UserId(1), options(DEFAULT_QUEUE_LIFESPAN), Seq(0));
        for i in 0..MAX_QUEUE_EVENTS {
            queue.push(json!({"type": "heartbeat", "n": i}));
        }
        assert!(queues.get(UserId(1), &queue.id).is_ok());
        assert_eq!(queue.lock().events.len(), MAX_QUEUE_EVENTS);
        assert!(queue.lock().bytes < MAX_QUEUE_BYTES);
        queue.push(json!({"type": "heartbeat"}));
        // The events are dropped at once (memory stays bounded) and the client is told.
        assert!(queue.lock().events.is_empty());
        assert!(matches!(
            queues.get(UserId(1), &queue.id),
            Err(PollError::BadQueue)
        ));
    }

    #[test]
    fn a_queue_is_dropped_when_its_events_outgrow_the_byte_bound() {
        let queues = queues();
        let queue = queues.register(UserId(1), options(DEFAULT_QUEUE_LIFESPAN), Seq(0));
        let big = "x".repeat(100_000);
        let mut pushed = 0;
        while queues.get(UserId(1), &queue.id).is_ok() {
            queue.push(json!({"type": "message", "content": big}));
            pushed += 1;
            assert!(queue.lock().bytes <= MAX_QUEUE_BYTES);
        }
        // 2 MiB of 100 kB events: the 21st does not fit.
        assert_eq!(pushed, 21);
        assert_eq!(queue.lock().bytes, 0);
        assert!(queue.lock().events.is_empty());
    }

    #[test]
    fn pruning_seen_events_gives_their_bytes_back() {
        let queues = queues();
        let queue = queues.register(UserId(1), options(DEFAULT_QUEUE_LIFESPAN), Seq(0));
        for _ in 0..3 {
            queue.push(json!({"type": "message", "content": "x".repeat(1000)}));
        }
        let three = queue.lock().bytes;
        assert!(three > 3000, "{three}");
        queue.prune(1);
        assert_eq!(queue.lock().bytes, three / 3);
        queue.prune(2);
        assert_eq!(queue.lock().bytes, 0);
    }

    #[test]
    fn a_held_event_is_its_json_with_its_id_and_knows_its_message() {
        let queues = queues();
        let queue = queues.register(UserId(1), options(DEFAULT_QUEUE_LIFESPAN), Seq(0));
        queue.push(json!({"type": "typing", "op": "start"}));
        queue.push(
            json!({"type": "message", "message": {"id": 7, "content": "a \"b\""}, "flags": []}),
        );
        let state = queue.lock();
        let texts: Vec<&str> = state.events.iter().map(|h| &*h.text).collect();
        assert_eq!(
            texts,
            [
                r#"{"type":"typing","op":"start","id":0}"#,
                r#"{"type":"message","message":{"id":7,"content":"a \"b\""},"flags":[],"id":1}"#,
            ]
        );
        assert_eq!(state.bytes, texts[0].len() + texts[1].len());
        drop(state);
        assert_eq!(queue.held_message_ids(), [MessageId(7)]);
        // The queue's id is the one an event has, in place of any its body had; a message
        // already written is kept even in a body without `type`.
        assert_eq!(
            &*held_text(&json!({"op": "x", "id": 99}), None, 2),
            r#"{"op":"x","id":2}"#
        );
        assert_eq!(
            &*held_text(&json!({"flags": []}), Some(r#"{"id":7}"#), 3),
            r#"{"flags":[],"message":{"id":7},"id":3}"#
        );
    }

    /// A message event's message object written once for everyone is put in place, after
    /// `type`, as each queue takes the event; a client that needs it otherwise (its Markdown
    /// source, the empty topic as stored) gets its own copy changed.
    #[test]
    fn a_shared_message_text_is_put_in_place_or_changed_for_the_clients_that_need_it() {
        // A channel message's object as written for everyone, in the empty topic and in "lunch".
        const IN_EMPTY_TOPIC: &str =
            r#"{"id":8,"content":"<p>hi</p>","subject":"general chat","type":"stream"}"#;
        const IN_LUNCH: &str =
            r#"{"id":8,"content":"<p>hi</p>","subject":"lunch","type":"stream"}"#;
        let variants = |topic: &str, json: &str| translate::Variants {
            message_source: Some(translate::MessageSource {
                id: MessageId(8),
                json: json.into(),
                content: "hi".into(),
                topic: topic.into(),
                in_channel: true,
                markdown_json: Arc::default(),
            }),
            ..translate::Variants::default()
        };
        let body = || json!({"type": "message", "flags": ["read"], "local_message_id": "1.5"});
        let plain = QueueOptions {
            apply_markdown: false,
            ..options(DEFAULT_QUEUE_LIFESPAN)
        };
        let mut stored_topics = options(DEFAULT_QUEUE_LIFESPAN);
        stored_topics.capabilities.empty_topic_name = true;
        let (queues, state) = (queues(), Projections::default());
        let mut texts = Vec::new();
        for (options, topic, json) in [
            (options(DEFAULT_QUEUE_LIFESPAN), "", IN_EMPTY_TOPIC),
            (stored_topics.clone(), "lunch", IN_LUNCH),
            (plain, "lunch", IN_LUNCH),
            (stored_topics, "", IN_EMPTY_TOPIC),
        ] {
            let queue = queues.register(UserId(1), options, Seq(0));
            let variants = variants(topic, json);
            let (body, shared) = adapt(&state, &variants, body(), &queue);
            queue.push_with(body, shared);
            assert_eq!(queue.held_message_ids(), [MessageId(8)]);
            texts.push(queue.lock().events[0].text.to_string());
        }
        let with = |message: &str| {
            format!(
                r#"{{"type":"message","message":{message},"flags":["read"],"local_message_id":"1.5","id":0}}"#
            )
        };
        // Shared as written: HTML, and a topic shown as it is stored.
        assert_eq!(texts[0], with(IN_EMPTY_TOPIC));
        assert_eq!(texts[1], with(IN_LUNCH));
        // Changed: the Markdown source; the empty topic as stored.
        let source = r#"{"id":8,"content":"hi","subject":"lunch","type":"stream","content_type":"text/x-markdown"}"#;
        assert_eq!(texts[2], with(source));
        let stored = r#"{"id":8,"content":"<p>hi</p>","subject":"","type":"stream"}"#;
        assert_eq!(texts[3], with(stored));

        // The Markdown-source text is written once, by the first plain queue, for every event
        // that shares the message's text.
        let plain = QueueOptions {
            apply_markdown: false,
            ..options(DEFAULT_QUEUE_LIFESPAN)
        };
        let variants = variants("lunch", IN_LUNCH);
        let (first, second) = (
            queues.register(UserId(2), plain.clone(), Seq(0)),
            queues.register(UserId(3), plain, Seq(0)),
        );
        let (_, one) = adapt(&state, &variants, body(), &first);
        let (_, other) = adapt(&state, &variants, body(), &second);
        let (one, other) = (one.unwrap(), other.unwrap());
        assert_eq!(one.json, source);
        assert!(std::ptr::eq(one.json, other.json));
        assert_eq!(one.id, MessageId(8));
    }

    #[test]
    fn a_user_over_the_queue_bound_loses_the_least_recently_polled_idle_queue() {
        let queues = queues();
        let first = queues.register(UserId(1), options(DEFAULT_QUEUE_LIFESPAN), Seq(0));
        std::thread::sleep(Duration::from_millis(2));
        let rest: Vec<_> = (1..MAX_QUEUES_PER_USER)
            .map(|_| queues.register(UserId(1), options(DEFAULT_QUEUE_LIFESPAN), Seq(0)))
            .collect();
        // The oldest is being polled, so it is not the one to go.
        first.lock().polling = 1;
        let other_user = queues.register(UserId(2), options(DEFAULT_QUEUE_LIFESPAN), Seq(0));
        assert_eq!(queues.count_for(UserId(1)), MAX_QUEUES_PER_USER);
        let newest = queues.register(UserId(1), options(DEFAULT_QUEUE_LIFESPAN), Seq(0));
        assert_eq!(queues.count_for(UserId(1)), MAX_QUEUES_PER_USER);
        assert!(queues.get(UserId(1), &first.id).is_ok());
        assert!(queues.get(UserId(1), &newest.id).is_ok());
        assert_eq!(
            queues.get(UserId(1), &rest[0].id).err(),
            Some(PollError::BadQueue)
        );
        assert!(rest[1..]
            .iter()
            .all(|q| queues.get(UserId(1), &q.id).is_ok()));
        assert!(queues.get(UserId(2), &other_user.id).is_ok());
        assert_eq!(queues.len(), MAX_QUEUES_PER_USER + 1);
        // Removal and expiry keep the per-user count right.
        queues.remove(UserId(1), &newest.id).unwrap();
        assert_eq!(queues.count_for(UserId(1)), MAX_QUEUES_PER_USER - 1);
    }

    #[tokio::test]
    async fn a_newer_poll_ends_the_parked_one_and_a_dropped_queue_answers_bad_queue() {
        let queues = queues();
        let queue = queues.register(UserId(1), options(DEFAULT_QUEUE_LIFESPAN), Seq(0));
        let long = Duration::from_secs(30);
        let parked = {
            let queue = queue.clone();
            tokio::spawn(async move { poll(&queue, None, false, long).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let second = {
            let queue = queue.clone();
            tokio::spawn(async move { poll(&queue, None, false, long).await })
        };
        let first = tokio::time::timeout(Duration::from_secs(2), parked).await;
        assert_eq!(first.expect("superseded at once").unwrap(), Ok(Vec::new()));
        assert_eq!(queue.lock().polling, 1);
        queues.remove(UserId(1), &queue.id).unwrap();
        let second = tokio::time::timeout(Duration::from_secs(2), second).await;
        assert_eq!(
            second.expect("told at once").unwrap(),
            Err(PollError::BadQueue)
        );
    }

    #[test]
    fn restart_and_heartbeat_reach_queues_that_did_not_ask() {
        let mut only_messages = options(DEFAULT_QUEUE_LIFESPAN);
        only_messages.event_types = Some(["message".to_owned()].into_iter().collect());
        assert!(only_messages.wants("restart") && only_messages.wants("heartbeat"));
        assert!(!only_messages.wants("typing"));
        let queues = queues();
        let queue = queues.register(UserId(1), only_messages, Seq(0));
        queues.announce_restart();
        let state = queue.lock();
        assert_eq!(state.events.len(), 1);
        let event: Value = serde_json::from_str(&state.events[0].text).unwrap();
        assert_eq!(event["type"], "restart");
    }
}

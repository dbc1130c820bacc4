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
use crate::http::Site;
use crate::ids::{Seq, UserId};
use crate::projections::{Message, Projections};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Zulip's default idle lifetime of a queue (`DEFAULT_EVENT_QUEUE_TIMEOUT_SECS`).
pub const DEFAULT_QUEUE_LIFESPAN: Duration = Duration::from_secs(600);
/// The longest lifetime a client may ask for (`MAX_QUEUE_TIMEOUT_SECS`, 7 days).
pub const MAX_QUEUE_LIFESPAN: Duration = Duration::from_secs(7 * 24 * 3600);
/// Events a queue holds before it is dropped (the client then re-registers): bounds memory.
pub const MAX_QUEUE_EVENTS: usize = 10_000;

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
    pub narrow: Vec<crate::http::messages::Term>,
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
    events: VecDeque<(i64, Value)>,
    next_id: i64,
    last_poll: Instant,
    polling: usize,
    overflowed: bool,
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

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, event: Value) {
        let mut state = self.lock();
        if state.overflowed {
            return;
        }
        if state.events.len() >= MAX_QUEUE_EVENTS {
            state.overflowed = true;
            state.events.clear();
        } else {
            let id = state.next_id;
            state.next_id += 1;
            let mut event = event;
            if let Value::Object(map) = &mut event {
                map.insert("id".into(), json!(id));
            }
            state.events.push_back((id, event));
        }
        drop(state);
        self.notify.notify_waiters();
    }

    /// Drops events the client has seen (ids up to `last_event_id`).
    fn prune(&self, last_event_id: i64) {
        let mut state = self.lock();
        while state
            .events
            .front()
            .is_some_and(|(id, _)| *id <= last_event_id)
        {
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

/// All queues of the server.
pub struct Queues {
    by_id: Mutex<HashMap<String, Arc<Queue>>>,
    site: Site,
    /// For the API keys that `realm_bot` events carry to bot owners.
    secret: ServerSecret,
}

impl Queues {
    pub fn new(site: Site, secret: ServerSecret) -> Queues {
        Queues {
            by_id: Mutex::new(HashMap::new()),
            site,
            secret,
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Queue>>> {
        self.by_id.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a queue. Call it while holding the read lock of the state the client gets.
    pub fn register(&self, user_id: UserId, options: QueueOptions, from_seq: Seq) -> Arc<Queue> {
        let queue = Arc::new(Queue {
            id: uuid::Uuid::new_v4().to_string(),
            user_id,
            options,
            from_seq,
            state: Mutex::new(QueueState {
                events: VecDeque::new(),
                next_id: 0,
                last_poll: Instant::now(),
                polling: 0,
                overflowed: false,
            }),
            notify: Notify::new(),
        });
        self.map().insert(queue.id.clone(), queue.clone());
        queue
    }

    /// The user's queue with this id.
    pub fn get(&self, user_id: UserId, id: &str) -> Result<Arc<Queue>, PollError> {
        let queue = self.map().get(id).cloned().ok_or(PollError::BadQueue)?;
        if queue.user_id != user_id || queue.lock().overflowed {
            return Err(PollError::BadQueue);
        }
        Ok(queue)
    }

    /// `DELETE /events`.
    pub fn remove(&self, user_id: UserId, id: &str) -> Result<(), PollError> {
        let mut map = self.map();
        match map.get(id) {
            Some(q) if q.user_id == user_id => {
                map.remove(id);
                Ok(())
            }
            _ => Err(PollError::BadQueue),
        }
    }

    pub fn len(&self) -> usize {
        self.map().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Delivers a durable batch: called by the engine with the state right after it.
    pub fn publish(&self, state: &Projections, batch: &[Envelope]) {
        let queues: Vec<Arc<Queue>> = self.map().values().cloned().collect();
        if queues.is_empty() {
            return;
        }
        let mut by_user: HashMap<UserId, Vec<&Arc<Queue>>> = HashMap::new();
        for q in &queues {
            by_user.entry(q.user_id).or_default().push(q);
        }
        for env in batch {
            let mut told: BTreeSet<UserId> = BTreeSet::new();
            for (user, event) in translate::client_events(state, &self.site, &self.secret, env) {
                let Some(user_queues) = by_user.get(&user) else {
                    continue;
                };
                if event["type"] == "message" {
                    told.insert(user);
                }
                for q in user_queues {
                    deliver(state, q, env, &event);
                }
            }
            // Queues registered with `all_public_streams` also see public channel messages
            // their user was not sent.
            if let Some(message) = public_channel_message(state, env) {
                for q in &queues {
                    if !q.options.all_public_streams || told.contains(&q.user_id) {
                        continue;
                    }
                    let Some(viewer) = state.users.get(q.user_id).filter(|u| u.is_active) else {
                        continue;
                    };
                    let event = translate::message_event(state, &self.site, viewer, message);
                    deliver(state, q, env, &event);
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
/// the capabilities the event needs, its narrow; fitted to the queue by `adapt`.
fn deliver(state: &Projections, q: &Queue, env: &Envelope, event: &Value) {
    let event_type = event["type"].as_str().unwrap_or_default();
    // Channel typing goes only to clients that declared they handle it.
    let channel_typing = event_type == "typing" && event["message_type"] == "stream";
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
        let matches = event["message"]["id"]
            .as_u64()
            .and_then(|id| state.messages.get(crate::ids::MessageId(id)))
            .zip(state.users.get(q.user_id))
            .is_some_and(|(message, viewer)| {
                crate::http::messages::narrow_matches(state, viewer, &q.options.narrow, message)
            });
        if !matches {
            return;
        }
    }
    let adapted = adapt(state, event, q);
    if event_type == "delete_message" && !q.options.capabilities.bulk_message_deletion {
        // Older clients get one event per message, with `message_id`.
        for one in legacy_deletions(&adapted) {
            q.push(one);
        }
    } else {
        q.push(adapted);
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

/// Fits a message event to what the queue registered for (Markdown or HTML, the empty topic
/// shown as is or by its display name, `local_message_id` for the queue that sent it) and drops
/// the internal fields.
fn adapt(state: &Projections, event: &Value, queue: &Queue) -> Value {
    let options = &queue.options;
    let mut event = event.clone();
    let event_type = event["type"].as_str().unwrap_or_default().to_owned();
    let op = event["op"].as_str().unwrap_or_default().to_owned();
    // Notification settings that follow the user's defaults are shown as those defaults to
    // clients without `notification_settings_null`.
    if event_type == "subscription" && !options.capabilities.notification_settings_null {
        use crate::http::channels::{fill_notification_defaults, NOTIFICATION_DEFAULTS};
        if let Some(subs) = event.get_mut("subscriptions").and_then(Value::as_array_mut) {
            for sub in subs.iter_mut().filter(|_| op == "add") {
                fill_notification_defaults(state, queue.user_id, sub);
            }
        }
        let property = event["property"].as_str().unwrap_or_default().to_owned();
        if let Some((_, setting)) = NOTIFICATION_DEFAULTS.iter().find(|(f, _)| *f == property) {
            if event["value"].is_null() {
                event["value"] = crate::projections::user_settings::value_json(
                    &state.user_settings.get(queue.user_id, setting),
                );
            }
        }
    }
    // Clients that do not list deactivated groups see a deactivation as a removal (and a
    // reactivation as an addition).
    if event_type == "user_group"
        && op == "update"
        && !options.capabilities.include_deactivated_groups
    {
        let group_id = event["group_id"].clone();
        match event["data"]["deactivated"].as_bool() {
            Some(true) => {
                return json!({"type": "user_group", "op": "remove", "group_id": group_id})
            }
            Some(false) => {
                let group = group_id
                    .as_u64()
                    .and_then(|id| state.groups.get(crate::ids::GroupId(id)))
                    .map(|g| crate::http::user_groups::group_json(state, g));
                if let Some(group) = group {
                    return json!({"type": "user_group", "op": "add", "group": group});
                }
            }
            None => {}
        }
    }
    if let Some(stream) = event.as_object_mut().and_then(|e| e.remove("_stream")) {
        if !options.capabilities.archived_channels {
            let archived = event["value"] == json!(true);
            return if archived {
                json!({"type": "stream", "op": "delete", "streams": [stream], "stream_ids": [event["stream_id"]]})
            } else {
                json!({"type": "stream", "op": "create", "streams": [stream]})
            };
        }
    }
    if let Some(modern) = event.as_object_mut().and_then(|e| e.remove("_modern")) {
        if options.capabilities.simplified_presence_events {
            let mut simple = json!({"type": event["type"]});
            if let (Value::Object(map), Value::Object(fields)) = (&mut simple, modern) {
                map.extend(fields);
            }
            return simple;
        }
    }
    if let Some(map) = event.as_object_mut() {
        let origin = map.remove("_sender_queue");
        let local_id = map.remove("_local_id");
        if let (Some(origin), Some(local_id)) = (origin, local_id) {
            if origin.as_str() == Some(queue.id.as_str()) {
                map.insert("local_message_id".into(), local_id);
            }
        }
    }
    if let Some(Value::Object(raw)) = event.as_object_mut().and_then(|e| e.remove("_raw")) {
        if options.capabilities.empty_topic_name {
            if let Some(map) = event.as_object_mut() {
                map.extend(raw);
            }
        }
    }
    if let Some(raw) = event.as_object_mut().and_then(|e| e.remove("_raw_topic")) {
        if options.capabilities.empty_topic_name {
            event["topic"] = raw;
        }
    }
    if let Some(Value::Object(message)) = event.get_mut("message") {
        let raw_content = message.remove("_raw_content");
        let raw_topic = message.remove("_raw_topic");
        if !options.apply_markdown {
            if let Some(raw) = raw_content {
                message.insert("content".into(), raw);
                message.insert("content_type".into(), json!("text/x-markdown"));
            }
        }
        if options.capabilities.empty_topic_name {
            if let Some(raw) = raw_topic {
                if message.get("type").and_then(Value::as_str) == Some("stream") {
                    message.insert("subject".into(), raw);
                }
            }
        }
    }
    event
}

impl Queues {
    /// Tells every queue the server is going away (Zulip's `restart` event): queues live in
    /// memory, so their clients must register again once it is back. Parked polls return it
    /// at once.
    pub fn announce_restart(&self) {
        use crate::http::server_settings::{ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION};
        let event = json!({
            "type": "restart",
            "zulip_version": ZULIP_VERSION,
            "zulip_merge_base": ZULIP_MERGE_BASE,
            "zulip_feature_level": ZULIP_FEATURE_LEVEL,
            "server_generation": crate::time::now_ms() / 1000,
            "immediate": true,
        });
        for queue in self.map().values() {
            queue.push(event.clone());
        }
    }

    /// Drops queues nobody polled for longer than their lifespan.
    pub fn collect_garbage(&self) -> usize {
        let now = Instant::now();
        let mut map = self.map();
        let before = map.len();
        map.retain(|_, q| {
            let state = q.lock();
            state.polling > 0 || now.duration_since(state.last_poll) < q.options.lifespan
        });
        before - map.len()
    }
}

/// Long-polls a queue: returns its events after `last_event_id` at once if there are any (or
/// if `dont_block`), else waits until one arrives or `heartbeat` passes, then returns a
/// heartbeat.
pub async fn poll(
    queue: &Queue,
    last_event_id: Option<i64>,
    dont_block: bool,
    heartbeat: Duration,
) -> Vec<Value> {
    if let Some(last) = last_event_id {
        queue.prune(last);
    }
    // Counts this poll as connected until it ends, even if the client goes away mid-wait.
    struct Polling<'a>(&'a Queue);
    impl Drop for Polling<'_> {
        fn drop(&mut self) {
            let mut state = self.0.lock();
            state.polling = state.polling.saturating_sub(1);
            state.last_poll = Instant::now();
        }
    }
    {
        let mut state = queue.lock();
        state.last_poll = Instant::now();
        state.polling += 1;
    }
    let _polling = Polling(queue);
    let deadline = tokio::time::Instant::now() + heartbeat;
    let events = loop {
        let notified = queue.notify.notified();
        let pending: Vec<Value> = queue.lock().events.iter().map(|(_, e)| e.clone()).collect();
        if !pending.is_empty() || dont_block {
            break pending;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            queue.push(json!({"type": "heartbeat"}));
            break queue.lock().events.iter().map(|(_, e)| e.clone()).collect();
        }
    };
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues() -> Queues {
        Queues::new(
            Site {
                realm_url: "http://localhost".into(),
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
        assert_eq!(queues.collect_garbage(), 0);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(queues.collect_garbage(), 1);
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
        queue.push(json!({"type": "heartbeat"}));
        // The events are dropped at once (memory stays bounded) and the client is told.
        assert!(queue.lock().events.is_empty());
        assert!(matches!(
            queues.get(UserId(1), &queue.id),
            Err(PollError::BadQueue)
        ));
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
        let events = queue.lock().events.clone();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].1["type"], "restart");
    }
}

//! Reaching people away from their clients: missed-message emails (and login alerts, which
//! the sign-in commands queue themselves), decided from durable events and recorded as events.
//!
//! Three tasks, none of them on the write path:
//! - **noticing**: the writer's publisher passes the ids of each durable batch's messages
//!   ([`input_of`]); for each person a message concerns ([`rules::candidates`]) who has no
//!   client hearing of messages and whose settings ask for it ([`rules::email_trigger`]), a
//!   notice due after their batching period is recorded (`NoticesRecorded`, batched: one event
//!   for many messages). A client's queue collected with messages it never handed over counts
//!   the same way (Zulip's missed-message hook).
//! - **settling**: when a person's first notice falls due, all of theirs are settled together
//!   (`NoticesSettled`) and become one email per conversation with what is still unread,
//!   undeleted and readable (`EmailQueued`).
//! - **delivering**: queued emails are written from the state ([`mail::compose`]) and handed to
//!   the relay or the outbox ([`relay::Relay`]); `EmailSent` or, when refused for good,
//!   `EmailFailed` records the outcome. A relay that is down is retried with growing pauses, and
//!   nothing else waits on it.
//!
//! After a restart, or when a node takes the writer's lease, noticing goes on from the newest
//! message recorded as considered (`through`, recorded at least once a minute while messages
//! come), settling from the recorded notices, delivering from the queued emails: nothing due
//! is forgotten and nothing sent is sent again (but for an email the relay took in the instant
//! before a crash, whose second copy carries the same `Message-ID`).

pub mod digest;
pub mod gateway;
pub mod mail;
pub mod push;
pub mod relay;
pub mod rules;

use crate::auth::ServerSecret;
use crate::engine::Engine;
use crate::events::{Envelope, Event, Notice};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::Projections;
use crate::render::Site;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// At most this many messages are considered again after a restart (the newest); older ones
/// were due long ago.
const CATCH_UP_LIMIT: u64 = 10_000;

/// How often `through` is recorded while messages come and no notice is due.
const THROUGH_EVERY: Duration = Duration::from_secs(60);

/// How long notices gather in memory before they are recorded (pushes are recorded at once):
/// one record for many batches keeps the write path's cost of noticing small. Nothing is lost
/// in between: after a crash, the messages after the last recorded `through` are considered
/// again.
const RECORD_EVERY: Duration = Duration::from_millis(500);

/// Notices recorded at once whatever their age.
const RECORD_AT_MOST: usize = 10_000;

/// The longest pause between attempts at a relay that is down.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(300);

/// What the notifier hears of.
#[derive(Debug)]
pub enum Input {
    /// A durable batch's messages, and whether it changed who wants email about channels
    /// (subscriptions, their settings, people's defaults).
    Sent {
        messages: Vec<MessageId>,
        settings_changed: bool,
        /// People who read messages (their pushed notifications may be taken away).
        readers: Vec<UserId>,
    },
    /// A person's last client that heard of messages was collected, holding these messages
    /// it never handed over.
    Abandoned {
        user: UserId,
        messages: Vec<MessageId>,
    },
}

/// What a durable batch means to the notifier (`None`: nothing).
pub fn input_of(batch: &[Envelope]) -> Option<Input> {
    let mut messages = Vec::new();
    let mut settings_changed = false;
    let mut readers = Vec::new();
    for env in batch {
        match &env.event {
            Event::MessageSent { message_id, .. } => messages.push(*message_id),
            Event::MessageFlagsChanged {
                user_id,
                flag: crate::events::MessageFlag::Read,
                add: true,
                ..
            }
            | Event::MessagesReadThrough { user_id, .. } => readers.push(*user_id),
            Event::Subscribed { .. }
            | Event::Unsubscribed { .. }
            | Event::SubscriptionPropertyChanged { .. }
            | Event::UserSettingChanged { .. }
            | Event::ChannelCreated { .. } => settings_changed = true,
            _ => {}
        }
    }
    readers.sort();
    readers.dedup();
    (!messages.is_empty() || settings_changed || !readers.is_empty()).then_some(Input::Sent {
        messages,
        settings_changed,
        readers,
    })
}

/// Whether a person counts as present, by Zulip's rule: a client hearing of messages
/// (`has_client`) and an active presence report within the offline threshold. Anyone else is
/// away and gets emails.
pub fn present(state: &Projections, user: UserId, has_client: bool) -> bool {
    has_client
        && state
            .presence
            .get(user)
            .and_then(|p| p.last_active_ms)
            .is_some_and(|at| {
                crate::time::now_ms() - at < crate::projections::presence::OFFLINE_THRESHOLD_MS
            })
}

/// Whether a person has a client hearing of messages now (see [`present`]).
pub type Presence = Arc<dyn Fn(&Projections, UserId) -> bool + Send + Sync>;

/// The notifier and what it works with.
pub struct Notifier {
    pub engine: Arc<Engine>,
    pub site: Site,
    pub secret: ServerSecret,
    pub relay: relay::Relay,
    /// The email gateway's domain: missed-message emails then carry a reply address.
    pub reply_domain: Option<String>,
    /// Whether this node sends (the writer's lease holder in a cluster; always alone).
    pub leads: Arc<dyn Fn() -> bool + Send + Sync>,
    /// Whether a person has a client hearing of messages now.
    pub present: Presence,
    /// The push notification service, when configured.
    pub push: Option<PushConfig>,
}

/// Mobile push, when configured (`[push]`).
#[derive(Debug, Clone)]
pub struct PushConfig {
    pub bouncer: push::bouncer::Bouncer,
    /// Zulip's `PUSH_NOTIFICATION_REDACT_CONTENT`: "New message" instead of the text.
    pub redact_content: bool,
}

/// What the noticing task decides for a batch.
#[derive(Default)]
struct Decided {
    notices: Vec<Notice>,
    pushes: Vec<(UserId, crate::events::QueuedPush)>,
}

impl Notifier {
    /// Starts the three tasks; they run until the server stops.
    pub fn spawn(self, inputs: mpsc::UnboundedReceiver<Input>) -> Vec<tokio::task::JoinHandle<()>> {
        let me = Arc::new(self);
        let queued = Arc::new(tokio::sync::Notify::new());
        let pushed = Arc::new(tokio::sync::Notify::new());
        vec![
            tokio::spawn(me.clone().notice(inputs, pushed.clone())),
            tokio::spawn(me.clone().settle(queued.clone())),
            tokio::spawn(me.clone().deliver(queued)),
            tokio::spawn(me.deliver_pushes(pushed)),
        ]
    }

    /// When a notice for `user` about a message sent at `sent_ms` falls due.
    fn due_at(&self, state: &Projections, user: UserId, sent_ms: i64) -> i64 {
        let secs = state
            .user_settings
            .int(user, "email_notifications_batching_period_seconds")
            .max(0);
        sent_ms.saturating_add(secs.saturating_mul(1000))
    }

    /// The notices and pushes `message_id` calls for now. A push goes to someone away, or
    /// present but wanting pushes all the same (`enable_online_push_notifications`), with a
    /// device that takes them.
    fn consider(
        &self,
        state: &Projections,
        message_id: MessageId,
        cache: &mut HashMap<ChannelId, Vec<UserId>>,
        out: &mut Decided,
    ) {
        let Some(message) = state.messages.get(message_id) else {
            return;
        };
        for user in rules::candidates(state, message, cache) {
            let present = (self.present)(state, user);
            if !present {
                if let Some(trigger) = rules::email_trigger(state, message, user) {
                    out.notices.push(Notice {
                        user_id: user,
                        message_id,
                        trigger,
                        due_at: self.due_at(state, user, message.timestamp * 1000),
                    });
                }
            }
            let wants_push = self.push.is_some()
                && state.devices.has_active_push(user)
                && (!present
                    || state
                        .user_settings
                        .flag(user, "enable_online_push_notifications"));
            if wants_push {
                if let Some(trigger) = rules::trigger(state, message, user, rules::Medium::Push) {
                    out.pushes.push((
                        user,
                        crate::events::QueuedPush::Message {
                            message_id,
                            trigger,
                        },
                    ));
                }
            }
        }
    }

    /// Pushes taking away the notifications `user` has about messages they have now read.
    fn take_away(&self, state: &Projections, user: UserId, out: &mut Decided) {
        let read: Vec<MessageId> = state
            .notices
            .pushed(user)
            .filter(|id| {
                state
                    .messages
                    .flags(user, *id)
                    .is_none_or(|bits| bits & crate::projections::message::flags::READ != 0)
            })
            .collect();
        if !read.is_empty() {
            out.pushes.push((
                user,
                crate::events::QueuedPush::Remove { message_ids: read },
            ));
        }
    }

    /// The noticing task.
    async fn notice(
        self: Arc<Self>,
        mut inputs: mpsc::UnboundedReceiver<Input>,
        pushed: Arc<tokio::sync::Notify>,
    ) {
        let mut cache: HashMap<ChannelId, Vec<UserId>> = HashMap::new();
        // The newest message considered, once this node leads.
        let mut considered: Option<MessageId> = None;
        let mut carried = Decided::default();
        // When the oldest notice held in memory was decided.
        let mut held_since: Option<Instant> = None;
        let mut recorded_at = Instant::now();
        loop {
            let mut batch = Vec::new();
            let wait = if held_since.is_some() {
                RECORD_EVERY / 2
            } else {
                Duration::from_secs(1)
            };
            match tokio::time::timeout(wait, inputs.recv()).await {
                Ok(Some(input)) => batch.push(input),
                Ok(None) => return,
                Err(_) => {}
            }
            while batch.len() < 4096 {
                match inputs.try_recv() {
                    Ok(input) => batch.push(input),
                    Err(_) => break,
                }
            }
            if !(self.leads)() {
                considered = None;
                carried = Decided::default();
                held_since = None;
                continue;
            }
            let (mut decided, through, recorded) = self.engine.read(|state| {
                let recorded = state.notices.through();
                let mut decided = Decided::default();
                let mut through = match considered {
                    Some(through) => through,
                    None => self.catch_up(state, &mut cache, &mut decided),
                };
                for input in batch {
                    match input {
                        Input::Sent {
                            messages,
                            settings_changed,
                            readers,
                        } => {
                            if settings_changed {
                                cache.clear();
                            }
                            for id in messages {
                                if id > through {
                                    self.consider(state, id, &mut cache, &mut decided);
                                    through = id;
                                }
                            }
                            for user in readers {
                                self.take_away(state, user, &mut decided);
                            }
                        }
                        Input::Abandoned { user, messages } => {
                            for id in messages {
                                let Some(message) = state.messages.get(id) else {
                                    continue;
                                };
                                if let Some(trigger) = rules::email_trigger(state, message, user) {
                                    decided.notices.push(Notice {
                                        user_id: user,
                                        message_id: id,
                                        trigger,
                                        due_at: self.due_at(state, user, message.timestamp * 1000),
                                    });
                                }
                            }
                        }
                    }
                }
                (decided, through, recorded)
            });
            considered = Some(through);
            if !decided.notices.is_empty() || !decided.pushes.is_empty() {
                held_since.get_or_insert_with(Instant::now);
            }
            carried.notices.append(&mut decided.notices);
            carried.pushes.append(&mut decided.pushes);
            // A log that never recorded how far it got records it at once, so that a crash
            // from now on is caught up from there.
            let moved_on = through > recorded
                && (recorded == MessageId(0) || recorded_at.elapsed() >= THROUGH_EVERY);
            let due = !carried.pushes.is_empty()
                || carried.notices.len() >= RECORD_AT_MOST
                || held_since.is_some_and(|t| t.elapsed() >= RECORD_EVERY);
            if !due && !moved_on {
                continue;
            }
            let decided = std::mem::take(&mut carried);
            held_since = None;
            let (notices, pushes) = (decided.notices.clone(), decided.pushes.clone());
            let result = self
                .engine
                .execute(None, move |state, _| {
                    crate::commands::notifications::record_notices(
                        state,
                        notices.clone(),
                        pushes.clone(),
                        through,
                    )
                })
                .await;
            match result {
                Ok(_) => {
                    recorded_at = Instant::now();
                    if !decided.pushes.is_empty() {
                        pushed.notify_one();
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, notices = decided.notices.len(), "recording notices failed; trying again");
                    carried = decided;
                    held_since = Some(Instant::now());
                }
            }
        }
    }

    /// On taking the lead: the notices for messages after the last recorded `through` (at most
    /// the newest [`CATCH_UP_LIMIT`]), considered with everyone's clients as they are now. A
    /// log that never recorded one (older, or imported) starts from its newest message.
    fn catch_up(
        &self,
        state: &Projections,
        cache: &mut HashMap<ChannelId, Vec<UserId>>,
        decided: &mut Decided,
    ) -> MessageId {
        let newest = state.messages.max_id();
        let recorded = state.notices.through();
        if recorded == MessageId(0) {
            return newest;
        }
        let from = recorded.0.max(newest.0.saturating_sub(CATCH_UP_LIMIT)) + 1;
        for id in from..=newest.0 {
            self.consider(state, MessageId(id), cache, decided);
        }
        newest
    }

    /// The settling task: every second (or sooner when a notice falls due), the people whose
    /// first notice is due get their emails queued; once a minute, the digests when it is time.
    async fn settle(self: Arc<Self>, queued: Arc<tokio::sync::Notify>) {
        let mut digests_checked = Instant::now() - Duration::from_secs(3600);
        loop {
            if digests_checked.elapsed() >= Duration::from_secs(60) && (self.leads)() {
                digests_checked = Instant::now();
                if self.queue_digests().await > 0 {
                    queued.notify_one();
                }
            }
            let now = crate::time::now_ms();
            let next = self.engine.read(|s| s.notices.next_due());
            let wait = next.map_or(1000, |due| (due - now).clamp(0, 1000)) as u64;
            tokio::time::sleep(Duration::from_millis(wait)).await;
            if !(self.leads)() {
                continue;
            }
            let due = self
                .engine
                .read(|s| s.notices.due_users(crate::time::now_ms()));
            for user in due {
                let settled = self
                    .engine
                    .execute(None, move |state, _| {
                        crate::commands::notifications::settle_due(state, user)
                    })
                    .await;
                match settled {
                    Ok(done) if done.value > 0 => queued.notify_one(),
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, user = user.0, "settling notices failed");
                    }
                }
            }
        }
    }

    /// Queues the digests due now, if it is their time: how many.
    async fn queue_digests(&self) -> usize {
        let now = crate::time::now_ms();
        let since = now - digest::CUTOFF_MS;
        let users: Vec<UserId> = self.engine.read(|state| {
            if !digest::digest_time(state, now) {
                return Vec::new();
            }
            digest::recipients(state, now)
                .into_iter()
                .filter(|user| digest::digest_of(state, *user, since).worth_sending())
                .collect()
        });
        let mut queued = 0;
        for chunk in users.chunks(100) {
            let chunk = chunk.to_vec();
            let done = self
                .engine
                .execute(None, move |state, ctx| {
                    crate::commands::notifications::queue_digests(state, ctx, &chunk, since)
                })
                .await;
            match done {
                Ok(done) => queued += done.value,
                Err(error) => tracing::warn!(%error, "queueing digests failed"),
            }
        }
        if queued > 0 {
            tracing::info!(queued, "digest emails queued");
        }
        queued
    }

    /// The delivering task.
    async fn deliver(self: Arc<Self>, queued: Arc<tokio::sync::Notify>) {
        let mut failures: u32 = 0;
        loop {
            let pause = if failures == 0 {
                Duration::from_secs(1)
            } else {
                Duration::from_secs(1 << failures.min(9)).min(MAX_RETRY_PAUSE)
            };
            // A new email wakes the task, unless the relay is being given a rest.
            if failures == 0 {
                let _ = tokio::time::timeout(pause, queued.notified()).await;
            } else {
                tokio::time::sleep(pause).await;
            }
            if !(self.leads)() {
                continue;
            }
            loop {
                let next = self.engine.read(|state| {
                    state.notices.outgoing().next().map(|out| {
                        (
                            out.mail_id,
                            out.mail.kind(),
                            mail::compose(
                                state,
                                &self.site,
                                &self.secret,
                                self.reply_domain.as_deref(),
                                out,
                            ),
                        )
                    })
                });
                let Some((mail_id, kind, email)) = next else {
                    failures = 0;
                    break;
                };
                let outcome = match email {
                    None => Err(relay::SendError {
                        permanent: true,
                        reason: "nothing left to send (the person or every message is gone)".into(),
                    }),
                    Some(email) => self.relay.send(&email, &format!("{kind}-{mail_id}")).await,
                };
                let recorded = match outcome {
                    Ok(()) => {
                        failures = 0;
                        self.engine
                            .execute(None, move |state, _| {
                                crate::commands::notifications::email_sent(state, mail_id)
                            })
                            .await
                    }
                    Err(error) if error.permanent => {
                        tracing::warn!(mail_id, reason = %error.reason, "an email was refused for good");
                        self.engine
                            .execute(None, move |state, _| {
                                crate::commands::notifications::email_failed(
                                    state,
                                    mail_id,
                                    &error.reason,
                                )
                            })
                            .await
                    }
                    Err(error) => {
                        failures += 1;
                        tracing::warn!(
                            mail_id,
                            attempts = failures,
                            reason = %error.reason,
                            "the mail relay did not take an email; trying again later"
                        );
                        break;
                    }
                };
                if let Err(error) = recorded {
                    tracing::warn!(%error, mail_id, "recording an email's outcome failed");
                    failures = failures.max(1);
                    break;
                }
            }
        }
    }

    /// The push task: registers devices' tokens with the push service, and sends queued pushes,
    /// pausing longer each time the service cannot be reached.
    async fn deliver_pushes(self: Arc<Self>, wake: Arc<tokio::sync::Notify>) {
        let Some(push) = self.push.clone() else {
            return;
        };
        let mut failures: u32 = 0;
        // The service learns of this server and its organization first (Zulip's
        // `register_server`, then the `server/analytics` upload that names the realms).
        while !(self.leads)() || !self.introduce(&push).await {
            failures += 1;
            tokio::time::sleep(Duration::from_secs(1 << failures.min(9)).min(MAX_RETRY_PAUSE))
                .await;
        }
        failures = 0;
        loop {
            if failures == 0 {
                let _ = tokio::time::timeout(Duration::from_secs(1), wake.notified()).await;
            } else {
                tokio::time::sleep(Duration::from_secs(1 << failures.min(9)).min(MAX_RETRY_PAUSE))
                    .await;
            }
            if !(self.leads)() {
                continue;
            }
            let reached = self.register_tokens(&push).await && self.send_pushes(&push).await;
            failures = if reached { 0 } else { failures + 1 };
        }
    }

    /// Registers this server with the service and tells it of the organization; false when
    /// the service could not be reached (tried again later). A refusal is logged, and pushes
    /// are tried all the same (the service says why it refuses each).
    async fn introduce(&self, push: &PushConfig) -> bool {
        let (hostname, contact, realm) = self.engine.read(|state| {
            let owner = state
                .users
                .members()
                .find(|u| u.is_active && u.role == crate::events::Role::Owner)
                .map(|u| u.email.clone())
                .unwrap_or_default();
            let host = self
                .site
                .realm_url
                .split("://")
                .nth(1)
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_owned();
            let realm = serde_json::json!([{
                "id": crate::projections::emoji::REALM_ID,
                "uuid": push::bouncer::realm_uuid(&self.secret),
                "uuid_owner_secret": format!(
                    "zuliprealm_{}",
                    self.secret
                        .derive_bytes(b"realm-uuid-owner\0", 0, "")
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>()
                ),
                "host": host,
                "url": self.site.realm_url,
                "name": state.realm.text("name"),
                "org_type": 0,
                "date_created": state.realm.date_created_ms as f64 / 1000.0,
                "deactivated": false,
                "is_system_bot_realm": false,
                "authentication_methods": {},
            }]);
            (host, owner, realm)
        });
        match push.bouncer.register_server(&hostname, &contact).await {
            Ok(created) => tracing::info!(created, "registered with the push notification service"),
            Err(error) if retry_later(&error) && error.code.is_none() => {
                tracing::warn!(%error, "the push notification service cannot be reached; trying again later");
                return false;
            }
            Err(error) => {
                tracing::warn!(%error, "the push notification service refused this server's registration");
            }
        }
        let fields = [
            ("realm_counts", "[]".to_owned()),
            ("installation_counts", "[]".to_owned()),
            ("realmauditlog_rows", "[]".to_owned()),
            ("realms", realm.to_string()),
            (
                "version",
                serde_json::json!(crate::render::ZULIP_VERSION).to_string(),
            ),
            (
                "api_feature_level",
                crate::render::ZULIP_FEATURE_LEVEL.to_string(),
            ),
        ];
        match push
            .bouncer
            .post("server/analytics", push::bouncer::Body::Form(&fields), true)
            .await
        {
            Ok(_) => true,
            Err(error) if error.retry => {
                tracing::warn!(%error, "the push notification service cannot be reached; trying again later");
                false
            }
            Err(error) => {
                tracing::warn!(%error, "the push notification service refused the organization's details");
                true
            }
        }
    }

    /// Registers waiting tokens; false when the service could not be reached.
    async fn register_tokens(&self, push: &PushConfig) -> bool {
        let realm_uuid = push::bouncer::realm_uuid(&self.secret);
        let waiting: Vec<(UserId, u64, i64, String, String)> = self.engine.read(|state| {
            state
                .devices
                .pending_registrations()
                .filter_map(|(user, device, p)| {
                    let (sealed, key) = p.registration.clone()?;
                    Some((user, device, p.pending_push_token_id?, sealed, key))
                })
                .collect()
        });
        for (user, device, token_id, sealed, bouncer_key) in waiting {
            let fields = [
                ("realm_uuid", realm_uuid.clone()),
                (
                    "token_id",
                    crate::projections::devices::token_id_text(token_id),
                ),
                ("encrypted_push_registration", sealed),
                ("bouncer_public_key", bouncer_key),
            ];
            let answer = push
                .bouncer
                .post(
                    "push/e2ee/register",
                    push::bouncer::Body::Form(&fields),
                    true,
                )
                .await;
            let refused = match &answer {
                Ok(_) => None,
                Err(error) if retry_later(error) => {
                    tracing::warn!(device, %error, "push device registration failed; trying again later");
                    return false;
                }
                Err(error) => Some(error.code.clone().unwrap_or_else(|| "BAD_REQUEST".into())),
            };
            if let Some(code) = &refused {
                tracing::warn!(
                    device,
                    code,
                    "the push service refused a device's registration"
                );
            }
            let recorded = self
                .engine
                .execute(None, move |state, _| {
                    crate::commands::devices::registration_outcome(
                        state,
                        user,
                        device,
                        token_id,
                        refused.as_deref(),
                    )
                })
                .await;
            if let Err(error) = recorded {
                tracing::warn!(%error, "recording a push registration failed");
            }
        }
        true
    }

    /// Sends queued pushes; false when the service could not be reached.
    async fn send_pushes(&self, push: &PushConfig) -> bool {
        let realm_uuid = push::bouncer::realm_uuid(&self.secret);
        loop {
            let next = self.engine.read(|state| {
                let out = state.notices.outgoing_pushes().next()?;
                Some((
                    out.push_id,
                    out.user_id,
                    self.push_body(state, out, push.redact_content),
                ))
            });
            let Some((push_id, user, body)) = next else {
                return true;
            };
            let outcome = match body {
                Err(reason) => Err(reason),
                Ok((requests, count)) => {
                    let json = serde_json::json!({
                        "realm_uuid": realm_uuid,
                        "push_requests": requests,
                    });
                    match push
                        .bouncer
                        .post("push/e2ee/notify", push::bouncer::Body::Json(&json), true)
                        .await
                    {
                        Ok(answer) => Ok((answer, count)),
                        Err(error) if retry_later(&error) => {
                            tracing::warn!(push_id, %error, "the push service did not take a push; trying again later");
                            return false;
                        }
                        Err(error) => Err(error.to_string()),
                    }
                }
            };
            let recorded = match outcome {
                Ok((answer, count)) => {
                    let dropped: Vec<i64> = answer["delete_token_ids"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|t| t.as_str().and_then(push::parse_token_id))
                        .collect();
                    self.engine
                        .execute(None, move |state, _| {
                            let mut decision =
                                crate::commands::notifications::push_sent(state, push_id, count)?;
                            if !dropped.is_empty() {
                                decision.events.extend(
                                    crate::commands::devices::tokens_dropped(
                                        state, user, &dropped,
                                    )?
                                    .events,
                                );
                            }
                            Ok(decision)
                        })
                        .await
                }
                Err(reason) => {
                    tracing::info!(push_id, reason, "a push was not sent");
                    self.engine
                        .execute(None, move |state, _| {
                            crate::commands::notifications::push_failed(state, push_id, &reason)
                        })
                        .await
                }
            };
            if let Err(error) = recorded {
                tracing::warn!(%error, push_id, "recording a push's outcome failed");
                return false;
            }
        }
    }

    /// The push requests of a queued push, and how many devices they go to; why not, when
    /// there is nothing to send.
    fn push_body(
        &self,
        state: &Projections,
        out: &crate::projections::notices::OutgoingPush,
        redact: bool,
    ) -> Result<(Vec<serde_json::Value>, u32), String> {
        let devices = push::devices_of(state, &self.secret, out.user_id);
        if devices.is_empty() {
            return Err("no device of theirs takes pushes".into());
        }
        let (payload, urgent) = match &out.push {
            crate::events::QueuedPush::Message { message_id, .. } => {
                let message = state
                    .messages
                    .get(*message_id)
                    .ok_or("the message was deleted")?;
                let unread = state
                    .messages
                    .flags(out.user_id, *message_id)
                    .is_some_and(|bits| bits & crate::projections::message::flags::READ == 0);
                if !unread {
                    return Err("the message was read meanwhile".into());
                }
                (
                    push::message_payload(state, &self.site, out.user_id, message, redact),
                    true,
                )
            }
            crate::events::QueuedPush::Remove { message_ids } => (
                push::remove_payload(state, &self.site, out.user_id, message_ids),
                false,
            ),
        };
        Ok((
            push::push_requests(&devices, &payload, urgent),
            devices.len() as u32,
        ))
    }
}

/// Whether a push service error is worth trying again later: it could not be reached, failed
/// itself, or does not (yet) know this server or organization.
pub fn retry_later(error: &push::bouncer::BouncerError) -> bool {
    error.retry
        || matches!(
            error.code.as_deref(),
            Some("MISSING_REMOTE_REALM" | "UNAUTHORIZED" | "INVALID_ZULIP_SERVER")
        )
}

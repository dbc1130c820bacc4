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
    for env in batch {
        match &env.event {
            Event::MessageSent { message_id, .. } => messages.push(*message_id),
            Event::Subscribed { .. }
            | Event::Unsubscribed { .. }
            | Event::SubscriptionPropertyChanged { .. }
            | Event::UserSettingChanged { .. }
            | Event::ChannelCreated { .. } => settings_changed = true,
            _ => {}
        }
    }
    (!messages.is_empty() || settings_changed).then_some(Input::Sent {
        messages,
        settings_changed,
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
}

impl Notifier {
    /// Starts the three tasks; they run until the server stops.
    pub fn spawn(self, inputs: mpsc::UnboundedReceiver<Input>) -> Vec<tokio::task::JoinHandle<()>> {
        let me = Arc::new(self);
        let queued = Arc::new(tokio::sync::Notify::new());
        vec![
            tokio::spawn(me.clone().notice(inputs)),
            tokio::spawn(me.clone().settle(queued.clone())),
            tokio::spawn(me.deliver(queued)),
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

    /// The notices `message_id` calls for now.
    fn consider(
        &self,
        state: &Projections,
        message_id: MessageId,
        cache: &mut HashMap<ChannelId, Vec<UserId>>,
        out: &mut Vec<Notice>,
    ) {
        let Some(message) = state.messages.get(message_id) else {
            return;
        };
        for user in rules::candidates(state, message, cache) {
            if (self.present)(state, user) {
                continue;
            }
            if let Some(trigger) = rules::email_trigger(state, message, user) {
                out.push(Notice {
                    user_id: user,
                    message_id,
                    trigger,
                    due_at: self.due_at(state, user, message.timestamp * 1000),
                });
            }
        }
    }

    /// The noticing task.
    async fn notice(self: Arc<Self>, mut inputs: mpsc::UnboundedReceiver<Input>) {
        let mut cache: HashMap<ChannelId, Vec<UserId>> = HashMap::new();
        // The newest message considered, once this node leads.
        let mut considered: Option<MessageId> = None;
        let mut carried: Vec<Notice> = Vec::new();
        let mut recorded_at = Instant::now();
        loop {
            let mut batch = Vec::new();
            match tokio::time::timeout(Duration::from_secs(1), inputs.recv()).await {
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
                continue;
            }
            let (mut notices, through, recorded) = self.engine.read(|state| {
                let recorded = state.notices.through();
                let mut notices = Vec::new();
                let mut through = match considered {
                    Some(through) => through,
                    None => self.catch_up(state, &mut cache, &mut notices),
                };
                for input in batch {
                    match input {
                        Input::Sent {
                            messages,
                            settings_changed,
                        } => {
                            if settings_changed {
                                cache.clear();
                            }
                            for id in messages {
                                if id > through {
                                    self.consider(state, id, &mut cache, &mut notices);
                                    through = id;
                                }
                            }
                        }
                        Input::Abandoned { user, messages } => {
                            for id in messages {
                                let Some(message) = state.messages.get(id) else {
                                    continue;
                                };
                                if let Some(trigger) = rules::email_trigger(state, message, user) {
                                    notices.push(Notice {
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
                (notices, through, recorded)
            });
            considered = Some(through);
            notices.append(&mut carried);
            // A log that never recorded how far it got records it at once, so that a crash
            // from now on is caught up from there.
            let moved_on = through > recorded
                && (recorded == MessageId(0) || recorded_at.elapsed() >= THROUGH_EVERY);
            if notices.is_empty() && !moved_on {
                continue;
            }
            let to_record = notices.clone();
            let result = self
                .engine
                .execute(None, move |_, _| {
                    crate::commands::notifications::record_notices(to_record.clone(), through)
                })
                .await;
            match result {
                Ok(_) => recorded_at = Instant::now(),
                Err(error) => {
                    tracing::warn!(%error, notices = notices.len(), "recording notices failed; trying again");
                    carried = notices;
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
        notices: &mut Vec<Notice>,
    ) -> MessageId {
        let newest = state.messages.max_id();
        let recorded = state.notices.through();
        if recorded == MessageId(0) {
            return newest;
        }
        let from = recorded.0.max(newest.0.saturating_sub(CATCH_UP_LIMIT)) + 1;
        for id in from..=newest.0 {
            self.consider(state, MessageId(id), cache, notices);
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
}

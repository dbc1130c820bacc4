//! Given/when helpers for the unit tests of commands: a state built the way the engine builds
//! it (decide, then fold the events at a chosen time), without a log or a server.
//!
//! ```text
//! let mut given = Given::org();                        // owner is user 1
//! let alice = given.user("alice@example.com", Role::Member);
//! let general = given.channel("general", &[alice]);
//! let sent = given.message(alice, general, "t", "hi");
//! let err = given.refused(alice, |s, c| delete_message(s, c, sent));
//! ```

use super::channels::{create_channel, ChannelSpec};
use super::messages::{send_message, ChannelRef, Destination};
use super::users::{create_realm, create_user, NewUser};
use super::Decision;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::{Envelope, Event, Role, SCHEMA_VERSION};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::Projections;

/// The owner every [`Given::org`] starts with.
pub const OWNER: UserId = UserId(1);

/// A state under test and the time the next command runs at.
pub struct Given {
    pub state: Projections,
    /// Milliseconds since the epoch, for the next command and its events.
    pub now_ms: i64,
}

/// A new account's details, with the part of the email before `@` as its name.
pub fn new_user(email: &str, role: Role) -> NewUser {
    NewUser {
        email: email.into(),
        full_name: email.split('@').next().unwrap_or_default().into(),
        role,
        password_hash: None,
        api_key_nonce: "n".into(),
    }
}

/// A command's rejection message.
pub fn msg(err: &ApiError) -> String {
    err.body()["msg"].as_str().unwrap_or_default().to_owned()
}

impl Given {
    /// An organization whose only user is its owner, [`OWNER`] (`owner@example.com`).
    pub fn org() -> Given {
        let mut given = Given {
            state: Projections::default(),
            now_ms: 0,
        };
        let decided = create_realm(
            &given.state,
            "Org",
            "",
            new_user("owner@example.com", Role::Owner),
        );
        given.fold(
            decided
                .unwrap_or_else(|e| panic!("create_realm: {}", msg(&e)))
                .events,
        );
        given
    }

    /// Moves the clock of the next commands to `ms`.
    pub fn at(&mut self, ms: i64) -> &mut Given {
        self.now_ms = ms;
        self
    }

    /// The context a command by `actor` runs in now.
    pub fn ctx(&self, actor: UserId) -> Ctx {
        Ctx {
            now_ms: self.now_ms,
            actor: Some(actor),
        }
    }

    /// Folds events as the engine does after a durable append, stamped with the current time.
    pub fn fold(&mut self, events: Vec<Event>) {
        for event in events {
            let env = Envelope {
                seq: self.state.seq.next(),
                at: self.now_ms,
                actor: None,
                schema_version: SCHEMA_VERSION,
                event,
            };
            self.state.apply(&env);
        }
    }

    /// When `actor` runs the command, it is accepted: its events are folded and its reply
    /// returned. Panics with the rejection otherwise.
    pub fn ok<R>(
        &mut self,
        actor: UserId,
        command: impl FnOnce(&Projections, &Ctx) -> ApiResult<Decision<R>>,
    ) -> R {
        let ctx = self.ctx(actor);
        match command(&self.state, &ctx) {
            Ok(Decision { events, reply }) => {
                self.fold(events);
                reply
            }
            Err(e) => panic!("refused: {} ({:?})", msg(&e), e.code()),
        }
    }

    /// When `actor` runs the command, it is accepted: its decision, not folded.
    pub fn decided<R>(
        &self,
        actor: UserId,
        command: impl FnOnce(&Projections, &Ctx) -> ApiResult<Decision<R>>,
    ) -> Decision<R> {
        command(&self.state, &self.ctx(actor))
            .unwrap_or_else(|e| panic!("refused: {} ({:?})", msg(&e), e.code()))
    }

    /// When `actor` runs the command, it is refused: the rejection. Panics if it is accepted.
    pub fn refused<R>(
        &self,
        actor: UserId,
        command: impl FnOnce(&Projections, &Ctx) -> ApiResult<Decision<R>>,
    ) -> ApiError {
        match command(&self.state, &self.ctx(actor)) {
            Ok(_) => panic!("accepted, but a rejection was expected"),
            Err(e) => e,
        }
    }

    /// A new account, created by the owner.
    pub fn user(&mut self, email: &str, role: Role) -> UserId {
        self.ok(OWNER, |s, c| create_user(s, c, new_user(email, role)))
    }

    /// A new public channel, created by the owner, with `subscribers` (the owner is not one
    /// unless listed).
    pub fn channel(&mut self, name: &str, subscribers: &[UserId]) -> ChannelId {
        self.channel_with(
            ChannelSpec {
                name: name.into(),
                ..ChannelSpec::default()
            },
            subscribers,
        )
    }

    /// A new channel as `spec` describes it, created by the owner.
    pub fn channel_with(&mut self, spec: ChannelSpec, subscribers: &[UserId]) -> ChannelId {
        let subscribers = subscribers.to_vec();
        self.ok(OWNER, |s, c| create_channel(s, c, spec, subscribers, false))
    }

    /// A message from `sender` to a channel's topic.
    pub fn message(
        &mut self,
        sender: UserId,
        channel: ChannelId,
        topic: &str,
        text: &str,
    ) -> MessageId {
        let to = Destination::Channel {
            channel: ChannelRef::Id(channel),
            topic: topic.into(),
        };
        self.ok(sender, |s, c| send_message(s, c, to, text, "test", None))
    }

    /// A direct message from `sender` to `to`.
    pub fn direct(&mut self, sender: UserId, to: &[UserId], text: &str) -> MessageId {
        let to = Destination::Direct {
            user_ids: to.to_vec(),
        };
        self.ok(sender, |s, c| send_message(s, c, to, text, "test", None))
    }
}

#![recursion_limit = "256"]
//! Chronicle: a team chat server that speaks the Zulip REST API, built as an event-sourced
//! service over an append-only log.
//!
//! Every mutation is a command that decides, against in-memory projections, which events to
//! append. The engine appends them to the log (sled), flushes once for many concurrent requests
//! (group commit), folds them into the projections, and only then answers. Reads are served from
//! the projections alone. Restarting is replaying: the same `apply` folds the log at start-up and
//! folds live events, so the two cannot drift apart.
//!
//! # Layout
//!
//! From the ground up; imports run downward only (no file imports one above it, and none
//! import each other around a circle).
//!
//! - [`ids`], [`time`], [`error`], [`emoji`], [`linkify`], [`html_diff`]: newtypes, clocks, the
//!   one error type with its code table, text helpers; [`integrations`]: incoming-webhook
//!   formatters (a service's payload in, Zulip's messages out).
//! - [`events`]: the stored envelope, its checksummed named-field msgpack encoding, and the
//!   `Event` enum of each schema version (version 1 frozen, upcast on read).
//! - [`markdown`], [`auth`], [`avatars`]: message rendering; the server secret, API keys,
//!   argon2id; avatar pictures as PNG.
//! - [`store`]: the log trait (append batch, flush, scan) with the sled backend, and the
//!   open-time integrity check that handles a torn tail; [`uploads`]: uploaded files' bytes,
//!   content-addressed beside the log.
//! - [`projections`]: in-memory state, one file per area, folded by infallible `apply`; the
//!   read-side visibility rules (`projections::access`) beside the state they read.
//! - [`replay`]: folding a log into projections (start-up, time travel, offline tools).
//! - [`narrow`]: Zulip narrows: parse, compile, match.
//! - [`analyzer`]: how text becomes searchable: words, stems, stop words, CJK, queries,
//!   highlights.
//! - [`render`]: every Zulip JSON shape, and [`render::Site`]; [`render::fields`] writes a
//!   shape into a `serde_json` map or straight into the bytes of a large answer.
//! - [`commands`]: pure decisions `(&Projections, &Ctx) -> Decision` (events + reply), one
//!   file per operation group.
//! - [`snapshot`], [`engine`]: projection snapshots; the single write path and its group
//!   commit.
//! - [`realtime`]: event queues, `/register` initial state, durable events → typed client
//!   events ([`realtime::translate`]).
//! - [`identity`]: ways of signing in besides Chronicle's passwords (the LDAP directory) and
//!   the directory sync; what they learn is decided by `commands::directory`.
//! - [`http`]: the route table, extractors (`Auth`, `Params`) and thin handlers, one file per
//!   resource.
//! - [`server`], [`webhooks`], [`bench`](mod@bench): opening a data directory and serving until a signal
//!   (with the retention and scheduled-delivery jobs); outgoing webhooks; `chronicle bench`.
//!
//! `docs/architecture.md` tells the same story at length, with the lock rules and the
//! durability promise.

pub mod access_audit;
pub mod analyzer;
pub mod audit;
pub mod auth;
pub mod avatars;
pub mod backup;
pub mod bench;
pub mod commands;
pub mod config;
pub mod emoji;
pub mod engine;
pub mod erase;
pub mod error;
pub mod events;
#[cfg(test)]
mod fuzz_tests;
pub mod html_diff;
pub mod http;
pub mod identity;
pub mod ids;
pub mod import;
pub mod integrations;
pub mod layout;
pub mod linkify;
pub mod markdown;
pub mod metrics;
#[cfg(test)]
mod model_client;
#[cfg(test)]
mod model_tests;
pub mod narrow;
pub mod notify;
pub mod outgoing;
pub mod projections;
pub mod realtime;
pub mod render;
pub mod replay;
pub mod server;
pub mod snapshot;
pub mod store;
pub mod thumbnails;
pub mod time;
pub mod uploads;
pub mod webhooks;

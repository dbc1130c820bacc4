//! The one integration-test binary: every test starts the real `chronicle` binary on port 0 in
//! a temporary data directory and talks to it over HTTP, as a client would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin;
mod api;
mod bounds;
mod channels;
mod clients;
mod durability;
mod emoji;
mod fixtures;
mod fuzz_seeds;
mod import;
mod integrations;
mod invitations;
mod message_changes;
mod messages;
mod mobile;
mod notifications;
mod operations;
mod permissions;
mod personal;
mod presence;
mod realm;
mod realtime;
mod scheduled;
mod scim;
mod security;
mod settings;
mod storage;
mod support;
mod two_factor;
mod uploads;
mod users;
mod web;

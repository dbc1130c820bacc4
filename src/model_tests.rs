//! Model-based property tests: random sequences of commands from several users go through the
//! real write path (`Engine` over the fault-injecting in-memory log); then the state folded
//! incrementally must equal a replay of the log from event 1, and a snapshot of it must decode
//! to the same state. Every user also has a client: registered when the user appears, it
//! receives the session's events, and its state with them applied (`model_client`) must equal
//! a fresh `/register`.

use crate::auth::ServerSecret;
use crate::commands::channels::{ChannelSpec, SubscribeNotices};
use crate::commands::edit::EditRequest;
use crate::commands::messages::{ChannelRef, Destination};
use crate::commands::reactions::EmojiRequest;
use crate::commands::users::NewUser;
use crate::engine::Engine;
use crate::events::{MessageFlag, PropagateMode, Role};
use crate::ids::{ChannelId, MessageId, UserId};
use crate::projections::Projections;
use crate::realtime::register::{initial_state, RegisterRequest};
use crate::realtime::{Capabilities, Queue, QueueOptions, Queues};
use crate::render::presence::PresenceQuery;
use crate::render::Site;
use crate::store::faulty::FaultyLog;
use proptest::prelude::*;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// One step of a session; users, channels and messages are picked by index (modulo what
/// exists), so every generated sequence is meaningful.
#[derive(Debug, Clone)]
enum Op {
    Join(u8),
    CreateChannel {
        by: u8,
        name: u8,
        private: bool,
    },
    Subscribe {
        by: u8,
        channel: u8,
    },
    Unsubscribe {
        by: u8,
        channel: u8,
    },
    SendChannel {
        by: u8,
        channel: u8,
        topic: u8,
        words: u8,
    },
    SendDirect {
        by: u8,
        to: u8,
        words: u8,
    },
    React {
        by: u8,
        message: u8,
        emoji: u8,
    },
    Edit {
        by: u8,
        message: u8,
        words: u8,
        topic: Option<u8>,
    },
    Delete {
        by: u8,
        message: u8,
    },
    Star {
        by: u8,
        message: u8,
        read: bool,
    },
    /// Marks a message unread again.
    MarkUnread {
        by: u8,
        message: u8,
    },
    /// Moves a message (and the rest of its topic, or not) to another channel.
    MoveToChannel {
        by: u8,
        message: u8,
        channel: u8,
        whole_topic: bool,
    },
    Mute {
        by: u8,
        channel: u8,
        topic: u8,
        policy: u8,
    },
    /// Someone mutes or unmutes someone (their messages then arrive read).
    MuteUser {
        by: u8,
        target: u8,
        mute: bool,
    },
    /// Someone keeps their own things: a draft, a saved snippet, a navigation view or a
    /// message scheduled for later (an hour ahead: the session ends before it is due), added
    /// or (the first one they have) removed.
    Keep {
        by: u8,
        kind: u8,
        words: u8,
        remove: bool,
    },
    /// Someone adds or removes one of the words the messages are made of as an alert word.
    AlertWord {
        by: u8,
        word: u8,
        add: bool,
    },
    /// Someone signs in to the web client, or ends the oldest of their web sessions.
    WebSession {
        by: u8,
        end: bool,
    },
    /// The owner gives someone another role.
    ChangeRole {
        target: u8,
        role: u8,
    },
    /// The owner deactivates or reactivates someone.
    SetActive {
        target: u8,
        active: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let b = || any::<u8>();
    prop_oneof![
        1 => b().prop_map(Op::Join),
        1 => (b(), 0u8..4, any::<bool>()).prop_map(|(by, name, private)| Op::CreateChannel { by, name, private }),
        2 => (b(), b()).prop_map(|(by, channel)| Op::Subscribe { by, channel }),
        1 => (b(), b()).prop_map(|(by, channel)| Op::Unsubscribe { by, channel }),
        5 => (b(), b(), 0u8..3, b()).prop_map(|(by, channel, topic, words)| Op::SendChannel { by, channel, topic, words }),
        2 => (b(), b(), b()).prop_map(|(by, to, words)| Op::SendDirect { by, to, words }),
        2 => (b(), b(), 0u8..3).prop_map(|(by, message, emoji)| Op::React { by, message, emoji }),
        2 => (b(), b(), b(), proptest::option::of(0u8..3)).prop_map(|(by, message, words, topic)| Op::Edit { by, message, words, topic }),
        1 => (b(), b()).prop_map(|(by, message)| Op::Delete { by, message }),
        2 => (b(), b(), any::<bool>()).prop_map(|(by, message, read)| Op::Star { by, message, read }),
        1 => (b(), b(), 0u8..3, 0u8..4).prop_map(|(by, channel, topic, policy)| Op::Mute { by, channel, topic, policy }),
        1 => (b(), b()).prop_map(|(by, message)| Op::MarkUnread { by, message }),
        1 => (b(), b(), b(), any::<bool>()).prop_map(|(by, message, channel, whole_topic)| Op::MoveToChannel { by, message, channel, whole_topic }),
        1 => (b(), b(), any::<bool>()).prop_map(|(by, target, mute)| Op::MuteUser { by, target, mute }),
        1 => (b(), 0u8..6, any::<bool>()).prop_map(|(by, word, add)| Op::AlertWord { by, word, add }),
        2 => (b(), 0u8..4, b(), any::<bool>()).prop_map(|(by, kind, words, remove)| Op::Keep { by, kind, words, remove }),
        1 => (b(), any::<bool>()).prop_map(|(by, end)| Op::WebSession { by, end }),
        1 => (b(), 0u8..2).prop_map(|(target, role)| Op::ChangeRole { target, role }),
        1 => (b(), any::<bool>()).prop_map(|(target, active)| Op::SetActive { target, active }),
    ]
}

const WORDS: [&str; 6] = ["lunch", "deploy", "tacos", "release", "bug", "coffee"];

fn text(seed: u8) -> String {
    format!(
        "{} {} {}",
        WORDS[seed as usize % 6],
        WORDS[(seed / 6) as usize % 6],
        seed
    )
}

fn pick<T: Copy>(items: &[T], i: u8) -> Option<T> {
    (!items.is_empty()).then(|| items[i as usize % items.len()])
}

/// A user's client: what `/register` gave it, and its queue.
struct Client {
    user_id: UserId,
    initial: Map<String, Value>,
    queue: Arc<Queue>,
}

/// What a session leaves: the log, the final state, and each client's initial state with the
/// events it received, beside a fresh `/register` for the same user.
struct Session {
    log: Arc<FaultyLog>,
    state: Projections,
    clients: Vec<Finished>,
}

/// A client at the end of a session.
struct Finished {
    user_id: UserId,
    initial: Map<String, Value>,
    events: Vec<Value>,
    fresh: Map<String, Value>,
}

fn site() -> Site {
    Site {
        realm_url: "http://localhost".into(),
        ..Site::default()
    }
}

/// A modern client's capabilities, every event type, subscribers included.
fn client_options() -> QueueOptions {
    QueueOptions {
        event_types: None,
        apply_markdown: true,
        client_gravatar: false,
        all_public_streams: false,
        capabilities: Capabilities {
            notification_settings_null: true,
            bulk_message_deletion: true,
            user_avatar_url_field_optional: false,
            stream_typing_notifications: true,
            user_settings_object: true,
            linkifier_url_template: true,
            user_list_incomplete: false,
            include_deactivated_groups: true,
            archived_channels: true,
            empty_topic_name: true,
            simplified_presence_events: true,
        },
        lifespan: crate::realtime::DEFAULT_QUEUE_LIFESPAN,
        narrow: Vec::new(),
    }
}

/// `/register` for `user_id`: the initial state, under the read lock the queue is registered
/// under (as `POST /register` does), or only the state when `queues` is `None`.
fn register(
    state: &Projections,
    site: &Site,
    secret: &ServerSecret,
    user_id: UserId,
    queues: Option<&Queues>,
) -> (Map<String, Value>, Option<Arc<Queue>>) {
    let options = client_options();
    let presence = PresenceQuery {
        modern: true,
        after: None,
        history_days: None,
    };
    let me = state.users.get(user_id).unwrap();
    let request = RegisterRequest {
        fetch_event_types: None,
        include_subscribers: true,
        capabilities: &options.capabilities,
        presence: &presence,
    };
    let mut answer = crate::render::fields::JsonBuf::default();
    answer.object(|o| initial_state(o, state, site, secret, me, &request));
    let initial = serde_json::from_slice(&answer.into_bytes().unwrap()).unwrap();
    let queue = queues.map(|q| q.register(user_id, options.clone(), state.seq));
    (initial, queue)
}

/// What an operation changed that the session must follow: its users and their clients.
enum Outcome {
    Nothing,
    Joined(UserId),
    ActiveSet(UserId, bool),
}

/// Performs one operation through the engine, as a client's request would; refusals are
/// simply refused.
async fn perform(
    engine: &Engine,
    op: Op,
    users: &[UserId],
    channels: &[ChannelId],
    messages: &[MessageId],
) -> Outcome {
    match op {
        Op::Join(_)
        | Op::CreateChannel { .. }
        | Op::Subscribe { .. }
        | Op::Unsubscribe { .. }
        | Op::ChangeRole { .. }
        | Op::SetActive { .. } => people_and_channels(engine, op, users, channels).await,
        _ => {
            // A refusal is an ordinary outcome of a random operation.
            let _ = message_op(engine, op, users, channels, messages).await;
            Outcome::Nothing
        }
    }
}

/// Joins, channels, subscriptions, roles and (de)activation.
async fn people_and_channels(
    engine: &Engine,
    op: Op,
    users: &[UserId],
    channels: &[ChannelId],
) -> Outcome {
    let who = |i: u8| pick(users, i);
    match op {
        Op::Join(n) => {
            let user = NewUser {
                email: format!("u{n}@example.com"),
                full_name: format!("User {n}"),
                role: if n % 5 == 0 {
                    Role::Guest
                } else {
                    Role::Member
                },
                password_hash: None,
                api_key_nonce: format!("n{n}"),
            };
            let created = engine
                .execute(Some(UserId(1)), move |s, ctx| {
                    crate::commands::users::create_user(s, ctx, user.clone())
                })
                .await;
            match created {
                Ok(done) => Outcome::Joined(done.value),
                Err(_) => Outcome::Nothing,
            }
        }
        Op::CreateChannel { by, name, private } => {
            let spec = ChannelSpec {
                invite_only: private,
                ..ChannelSpec::default()
            };
            let name = format!("channel{name}");
            let notices = SubscribeNotices {
                announce: false,
                notify_subscribed: false,
            };
            let _ = engine
                .execute(who(by), move |s, ctx| {
                    crate::commands::channels::subscribe(
                        s,
                        ctx,
                        vec![crate::commands::channels::ChannelWanted::named(
                            name.clone(),
                        )],
                        None,
                        spec.clone(),
                        false,
                        notices,
                    )
                })
                .await;
            Outcome::Nothing
        }
        Op::Subscribe { by, channel } | Op::Unsubscribe { by, channel } => {
            let Some(id) = pick(channels, channel) else {
                return Outcome::Nothing;
            };
            let name = engine
                .read(|s| s.channels.get(id).map(|c| c.name.clone()))
                .unwrap_or_default();
            let subscribe = matches!(op, Op::Subscribe { .. });
            let _ = engine
                .execute(who(by), move |s, ctx| {
                    if subscribe {
                        let notices = SubscribeNotices {
                            announce: false,
                            notify_subscribed: false,
                        };
                        crate::commands::channels::subscribe(
                            s,
                            ctx,
                            vec![crate::commands::channels::ChannelWanted::named(
                                name.clone(),
                            )],
                            None,
                            ChannelSpec::default(),
                            false,
                            notices,
                        )
                        .map(|decided| decided.map(|_| ()))
                    } else {
                        crate::commands::channels::unsubscribe(s, ctx, vec![name.clone()], None)
                            .map(|decided| decided.map(|_| ()))
                    }
                })
                .await;
            Outcome::Nothing
        }
        Op::ChangeRole { target, role } => {
            let Some(target) = who(target) else {
                return Outcome::Nothing;
            };
            // Between roles that see the same: a guest, or an administrator's view of
            // emails and private channels, changes what the state holds beyond the role
            // and group events (see the note in docs/zulip-compat.md).
            let role = [Role::Moderator, Role::Member][role as usize % 2];
            let other_view = engine.read(|s| {
                s.users
                    .get(target)
                    .map(|u| u.role.is_admin() || u.role == Role::Guest)
            });
            if other_view != Some(false) {
                return Outcome::Nothing;
            }
            let _ = engine
                .execute(Some(UserId(1)), move |s, ctx| {
                    crate::commands::users::update_user(s, ctx, target, None, Some(role), None)
                })
                .await;
            Outcome::Nothing
        }
        Op::SetActive { target, active } => {
            let Some(target) = who(target) else {
                return Outcome::Nothing;
            };
            let done = engine
                .execute(Some(UserId(1)), move |s, ctx| {
                    if active {
                        crate::commands::users::reactivate_user(s, ctx, target)
                    } else {
                        crate::commands::users::deactivate_user(s, ctx, target, Default::default())
                    }
                })
                .await;
            match done {
                Ok(_) => Outcome::ActiveSet(target, active),
                Err(_) => Outcome::Nothing,
            }
        }
        _ => Outcome::Nothing,
    }
}

/// Sending, reacting, editing, deleting, flags and topic visibility.
async fn message_op(
    engine: &Engine,
    op: Op,
    users: &[UserId],
    channels: &[ChannelId],
    messages: &[MessageId],
) -> crate::error::ApiResult<()> {
    let who = |i: u8| pick(users, i);
    match op {
        Op::SendChannel { by, .. } | Op::SendDirect { by, .. } => {
            let (to, words) = match op {
                Op::SendChannel {
                    channel,
                    topic,
                    words,
                    ..
                } => {
                    let Some(id) = pick(channels, channel) else {
                        return Ok(());
                    };
                    let to = Destination::Channel {
                        channel: ChannelRef::Id(id),
                        topic: format!("topic {topic}"),
                    };
                    (to, words)
                }
                Op::SendDirect { to, words, .. } => {
                    let Some(to) = who(to) else {
                        return Ok(());
                    };
                    (Destination::Direct { user_ids: vec![to] }, words)
                }
                _ => return Ok(()),
            };
            engine
                .execute(who(by), move |s, ctx| {
                    crate::commands::messages::send_message(
                        s,
                        ctx,
                        to.clone(),
                        &text(words),
                        "test",
                        None,
                    )
                })
                .await
                .map(|_| ())
        }
        Op::React { by, message, emoji } => {
            let Some(id) = pick(messages, message) else {
                return Ok(());
            };
            let request = EmojiRequest {
                emoji_name: Some(["octopus", "tada", "+1"][emoji as usize % 3].into()),
                emoji_code: None,
                reaction_type: None,
            };
            engine
                .execute(who(by), move |s, ctx| {
                    crate::commands::reactions::add_reaction(s, ctx, id, request.clone())
                })
                .await
                .map(|_| ())
        }
        Op::Edit {
            by,
            message,
            words,
            topic,
        } => {
            let Some(id) = pick(messages, message) else {
                return Ok(());
            };
            let request = EditRequest {
                content: topic.is_none().then(|| text(words)),
                topic: topic.map(|t| format!("topic {t}")),
                channel_id: None,
                propagate_mode: PropagateMode::ChangeAll,
                notify_old_thread: false,
                notify_new_thread: false,
                realm_url: "http://localhost".into(),
            };
            engine
                .execute(who(by), move |s, ctx| {
                    crate::commands::edit::edit_message(s, ctx, id, request.clone())
                })
                .await
                .map(|_| ())
        }
        Op::Delete { by, message } => {
            let Some(id) = pick(messages, message) else {
                return Ok(());
            };
            engine
                .execute(who(by), move |s, ctx| {
                    crate::commands::delete::delete_message(s, ctx, id)
                })
                .await
                .map(|_| ())
        }
        Op::Star { by, message, read } => {
            let Some(id) = pick(messages, message) else {
                return Ok(());
            };
            let flag = if read {
                MessageFlag::Read
            } else {
                MessageFlag::Starred
            };
            engine
                .execute(who(by), move |s, ctx| {
                    crate::commands::flags::update_flags(s, ctx, vec![id], flag, true)
                })
                .await
                .map(|_| ())
        }
        Op::MarkUnread { by, message } => {
            let Some(id) = pick(messages, message) else {
                return Ok(());
            };
            engine
                .execute(who(by), move |s, ctx| {
                    crate::commands::flags::update_flags(s, ctx, vec![id], MessageFlag::Read, false)
                })
                .await
                .map(|_| ())
        }
        Op::MoveToChannel {
            by,
            message,
            channel,
            whole_topic,
        } => {
            let (Some(id), Some(to)) = (pick(messages, message), pick(channels, channel)) else {
                return Ok(());
            };
            let request = EditRequest {
                content: None,
                topic: None,
                channel_id: Some(to),
                propagate_mode: if whole_topic {
                    PropagateMode::ChangeAll
                } else {
                    PropagateMode::ChangeOne
                },
                notify_old_thread: false,
                notify_new_thread: false,
                realm_url: "http://localhost".into(),
            };
            // Members may not move between channels by default; the owner, or the picked
            // user when that is an administrator, does it.
            let mover = who(by).filter(|u| *u == UserId(1)).or(Some(UserId(1)));
            engine
                .execute(mover, move |s, ctx| {
                    crate::commands::edit::edit_message(s, ctx, id, request.clone())
                })
                .await
                .map(|_| ())
        }
        Op::MuteUser { by, target, mute } => {
            let Some(target) = who(target) else {
                return Ok(());
            };
            engine
                .execute(who(by), move |s, ctx| {
                    if mute {
                        crate::commands::mutes::mute_user(s, ctx, target)
                    } else {
                        crate::commands::mutes::unmute_user(s, ctx, target)
                    }
                })
                .await
                .map(|_| ())
        }
        Op::WebSession { by, end } => {
            let Some(user) = who(by) else {
                return Ok(());
            };
            let id = uuid::Uuid::new_v4().simple().to_string();
            engine
                .execute(Some(user), move |s, ctx| {
                    let oldest = s.sessions.of_user(user).next().map(|(id, _)| id.to_owned());
                    match oldest.filter(|_| end) {
                        Some(oldest) => crate::commands::sessions::end_session(s, ctx, &oldest),
                        None => {
                            crate::commands::sessions::start_session(s, ctx, user, &id, "model")
                        }
                    }
                })
                .await
                .map(|_| ())
        }
        Op::AlertWord { by, word, add } => {
            let words = vec![WORDS[word as usize % WORDS.len()].to_owned()];
            engine
                .execute(who(by), move |s, ctx| {
                    if add {
                        crate::commands::mutes::add_alert_words(s, ctx, words.clone())
                    } else {
                        crate::commands::mutes::remove_alert_words(s, ctx, words.clone())
                    }
                })
                .await
                .map(|_| ())
        }
        Op::Mute {
            by,
            channel,
            topic,
            policy,
        } => {
            let Some(id) = pick(channels, channel) else {
                return Ok(());
            };
            engine
                .execute(who(by), move |s, ctx| {
                    crate::commands::channels::set_topic_visibility(
                        s,
                        ctx,
                        id,
                        format!("topic {topic}"),
                        crate::events::TopicPolicy::from_code(policy)
                            .unwrap_or(crate::events::TopicPolicy::None),
                    )
                })
                .await
                .map(|_| ())
        }
        Op::Keep {
            by,
            kind,
            words,
            remove,
        } => {
            let Some(me) = who(by) else { return Ok(()) };
            let channel = pick(channels, words);
            keep(engine, me, kind, words, remove, channel).await
        }
        _ => Ok(()),
    }
}

/// `Op::Keep`: one of a user's own things added or removed.
async fn keep(
    engine: &Engine,
    me: UserId,
    kind: u8,
    words: u8,
    remove: bool,
    channel: Option<ChannelId>,
) -> crate::error::ApiResult<()> {
    use crate::commands::{drafts, scheduled, views};
    let content = text(words);
    let fragment = format!("narrow/view-{}", words % 3);
    engine
        .execute(Some(me), move |s, ctx| match (kind, remove) {
            (0, false) => drafts::create_drafts(
                s,
                ctx,
                vec![drafts::DraftRequest {
                    kind: String::new(),
                    to: Vec::new(),
                    topic: String::new(),
                    content: content.clone(),
                    timestamp: Some(i64::from(words)),
                }],
            )
            .map(|d| d.map(|_| ())),
            (0, true) => {
                let first = s
                    .drafts
                    .drafts_json(me)
                    .first()
                    .and_then(|d| d["id"].as_u64());
                drafts::delete_draft(s, ctx, first.unwrap_or(0))
            }
            (1, false) => drafts::create_snippet(s, ctx, "title", &content).map(|d| d.map(|_| ())),
            (1, true) => {
                let first = s
                    .drafts
                    .snippets_json(me)
                    .first()
                    .and_then(|d| d["id"].as_u64());
                drafts::delete_snippet(s, ctx, first.unwrap_or(0))
            }
            (2, false) => views::add_view(s, ctx, &fragment, words % 2 == 0, Some(&content)),
            (2, true) => views::remove_view(s, ctx, &fragment),
            (_, false) => {
                let to = match channel {
                    Some(id) => Destination::Channel {
                        channel: crate::commands::messages::ChannelRef::Id(id),
                        topic: "later".into(),
                    },
                    None => Destination::Direct { user_ids: vec![me] },
                };
                let at = ctx.now_ms / 1000 + 3600;
                scheduled::schedule_message(s, ctx, to, &content, at, None, "test")
                    .map(|d| d.map(|_| ()))
            }
            (_, true) => {
                let first = s.scheduled.of(me, false).first().map(|m| m.id);
                scheduled::delete_scheduled(s, ctx, first.unwrap_or_default(), false)
            }
        })
        .await
        .map(|_| ())
}

/// Runs the session; commands that the rules refuse are simply refused, as for a client.
async fn run(ops: Vec<Op>) -> Session {
    let log = Arc::new(FaultyLog::new());
    let secret = ServerSecret::generate();
    // One site for the session, as a server has: the users `/register` wrote for the first
    // clients are kept (`render::users::UserCards`) and must be written anew when they change.
    let site = site();
    let queues = Arc::new(Queues::new(site.clone(), secret.clone()));
    let publisher: crate::engine::Publisher = {
        let queues = queues.clone();
        Arc::new(
            move |state: &Projections,
                  batch: &[crate::events::Envelope],
                  _: crate::engine::Origin| {
                queues.publish(state, batch);
            },
        )
    };
    let engine = Engine::start_with(log.clone(), Projections::default(), Some(publisher)).unwrap();
    let mut clients: Vec<Client> = Vec::new();
    let connect = |user_id: UserId| {
        engine.read(|s| {
            let (initial, queue) = register(s, &site, &secret, user_id, Some(&queues));
            Client {
                user_id,
                initial,
                queue: queue.unwrap(),
            }
        })
    };
    let owner = NewUser {
        email: "owner@example.com".into(),
        full_name: "Owner".into(),
        role: Role::Owner,
        password_hash: None,
        api_key_nonce: "n".into(),
    };
    engine
        .execute(None, move |s, _| {
            crate::commands::users::create_realm(s, "Org", "", owner.clone())
        })
        .await
        .unwrap();
    let mut users = vec![UserId(1)];
    clients.push(connect(UserId(1)));
    for op in ops {
        let (channels, messages): (Vec<ChannelId>, Vec<MessageId>) = engine.read(|s| {
            (
                s.channels.iter().map(|c| c.id).collect(),
                (1..=s.messages.next_id().0).map(MessageId).collect(),
            )
        });
        match perform(&engine, op, &users, &channels, &messages).await {
            Outcome::Nothing => {}
            Outcome::Joined(user_id) => {
                users.push(user_id);
                clients.push(connect(user_id));
            }
            // A deactivated user's client is gone; a reactivated one registers anew.
            Outcome::ActiveSet(user_id, active) => {
                clients.retain(|c| c.user_id != user_id);
                if active {
                    clients.push(connect(user_id));
                }
            }
        }
    }
    let state = engine.read(Projections::clone);
    let mut finished = Vec::new();
    for client in clients {
        let events: Vec<Value> = crate::realtime::poll(&client.queue, None, true, Duration::ZERO)
            .await
            .unwrap()
            .iter()
            .map(|text| serde_json::from_str(text).unwrap())
            .collect();
        let (fresh, _) = register(&state, &site, &secret, client.user_id, None);
        finished.push(Finished {
            user_id: client.user_id,
            initial: client.initial,
            events,
            fresh,
        });
    }
    engine.shutdown().await;
    Session {
        log,
        state,
        clients: finished,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// What the engine folded event by event is what a replay from event 1 gives, and what a
    /// snapshot of it decodes to.
    #[test]
    fn incremental_fold_equals_replay_and_snapshot(ops in proptest::collection::vec(op(), 1..60)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let Session { log, state: live, .. } = runtime.block_on(run(ops));
        let replayed = crate::replay::fold(log.as_ref(), None, |_| {}).unwrap();
        prop_assert_eq!(live.seq, replayed.seq);
        prop_assert_eq!(live.dump(), replayed.dump());
        // Snapshots are taken from the engine's decision state, which keeps no search index.
        let mut decision = live.clone();
        decision.messages.without_word_index();
        // In parts of one chunk, so that a log of a few hundred messages has several.
        let mut bytes = Vec::new();
        let hash = decision.encode_snapshot_in_parts_of(&mut bytes, 64).unwrap();
        let mut restored = Projections::decode_snapshot(&bytes, &hash).unwrap();
        let restored_digest = restored.restore_derived_and_digest();
        prop_assert_eq!(&restored_digest, &restored.digest());
        prop_assert_eq!(restored_digest, live.digest());
        // The per-channel flag view and the unread walk agree with the copy rules applied
        // message by message.
        for user in live.users.iter() {
            let user = user.user_id;
            let mut unread: Vec<(crate::ids::MessageId, u8)> = Vec::new();
            for message in live.messages.all() {
                let bits = live.messages.flags(user, message.id);
                if let Some(channel) = message.channel() {
                    prop_assert_eq!(live.messages.copies_in_channel(user, channel).flags(message), bits);
                }
                if let Some(bits) = bits.filter(|b| b & crate::projections::messages::flags::READ == 0) {
                    unread.push((message.id, bits));
                }
            }
            unread.reverse();
            prop_assert_eq!(live.messages.unread_of(user, usize::MAX), (unread.clone(), false));
            if unread.len() > 1 {
                prop_assert_eq!(live.messages.unread_of(user, 1), (unread[..1].to_vec(), true));
            }
        }
        // Searches agree too (the word index is kept, folded or built beside a state that
        // goes on folding, never stale): the live read state's, a replay that keeps one, the
        // restored snapshot's once built, and one built from a copy of the messages taken
        // halfway through a replay that folds the rest before it is installed (as a server
        // builds its index once it serves).
        let mut indexed = Projections::default();
        crate::replay::continue_while(&mut indexed, log.as_ref(), |_| true, |_| {}).unwrap();
        let query = |word: &str| crate::analyzer::Query::parse(&format!("{word} "));
        prop_assert!(replayed.messages.search_plan(&query(WORDS[0])).is_none(), "an offline replay keeps no index");
        prop_assert!(restored.messages.search_plan(&query(WORDS[0])).is_none(), "a snapshot keeps no index");
        let source = restored.messages.word_index_source().unwrap();
        prop_assert!(restored.messages.install_word_index(source.build()));
        let half = live.seq.0 / 2;
        let mut late = crate::replay::fold_while(log.as_ref(), |env| env.seq.0 <= half, |_| {}).unwrap();
        let source = late.messages.word_index_source().unwrap();
        crate::replay::continue_while(&mut late, log.as_ref(), |_| true, |_| {}).unwrap();
        prop_assert!(late.messages.install_word_index(source.build()));
        prop_assert!(late.messages.word_index_source().is_none());
        let lists = |state: &Projections, word: &str| {
            state.messages.search_plan(&query(word)).map(|plan| match plan {
                crate::projections::search::Plan::Lists(lists) => lists.iter().map(|s| s.iter().collect::<Vec<_>>()).collect::<Vec<_>>(),
                other => panic!("{other:?}"),
            })
        };
        for word in WORDS {
            prop_assert_eq!(lists(&restored, word), lists(&indexed, word));
            prop_assert_eq!(lists(&late, word), lists(&indexed, word));
            prop_assert_eq!(lists(&live, word), lists(&indexed, word));
        }
    }

    /// A client that applies the events it received to its initial state holds what a fresh
    /// `/register` would give it (Zulip's `test_events` oracle), for every user.
    #[test]
    fn initial_state_plus_events_equals_a_fresh_register(ops in proptest::collection::vec(op(), 1..60)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let session = runtime.block_on(run(ops));
        for Finished { user_id, initial, events, fresh } in session.clients {
            let mut client = initial;
            for event in &events {
                crate::model_client::apply(&mut client, user_id.0, event);
            }
            if client["max_message_id"] == crate::model_client::UNKNOWABLE {
                client.insert("max_message_id".into(), fresh["max_message_id"].clone());
            }
            let (got, want) = (crate::model_client::canonical(&client), crate::model_client::canonical(&fresh));
            // On a mismatch: each differing path, client side as `before`, fresh as `after`.
            prop_assert!(got == want, "user {}: {:#}\nevents: {}", user_id.0, crate::audit::diff(&got, &want)["changes"],
                events.iter().map(|e| format!("{}:{}", e["type"], e["op"])).collect::<Vec<_>>().join(" "));
        }
    }
}

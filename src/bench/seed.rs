//! Seeding a data directory with a large organization, written straight to the log (with a
//! server secret whose API keys the bench can derive), so that scenarios over thousands of users
//! and a million messages start in seconds instead of hours of HTTP calls.

use crate::auth::ServerSecret;
use crate::commands::groups::ensure_system_groups;
use crate::events::{
    ChannelPermissions, Envelope, Event, GroupSetting, NewSubscription, ReadPlace, Recipient, Role,
    TopicsPolicy, SCHEMA_VERSION,
};
use crate::ids::{ChannelId, GroupId, MessageId, Seq, UserId};
use crate::projections::Projections;
use crate::server::{Fatal, Layout};
use crate::store::{EventLog, SledLog};
use std::sync::Arc;

/// What to put in the organization.
pub struct SeedSpec {
    pub users: u64,
    pub channels: u64,
    /// Every user is subscribed to channel 1; each other channel gets this many subscribers.
    pub subscribers_per_channel: u64,
    pub messages: u64,
}

/// How the seeded history reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct SeedStyle {
    /// Messages are quotations of the corpus (`corpus`), rendered by the server's Markdown
    /// renderer, instead of a short synthetic line each.
    pub corpus_text: bool,
    /// Everyone has read every message of their channels, as in an organization with years of
    /// history (a `MessagesReadThrough` per person and channel, as imports write); else every
    /// seeded message is unread by its recipients.
    pub history_read: bool,
}

/// A seeded data directory and the credentials of its users (owner first).
/// The password of the seeded user 2 (the web client's first screen signs in with it); the
/// other accounts have none, which spares hashing a thousand passwords.
pub const WEB_PASSWORD: &str = "bench-password";

pub struct Seeded {
    pub tmp: tempfile::TempDir,
    /// `(user_id, email, api_key)`.
    pub users: Vec<(u64, String, String)>,
}

struct Writer {
    log: SledLog,
    seq: u64,
    batch: Vec<(Seq, Vec<u8>)>,
    chain: crate::events::Chain,
}

impl Writer {
    fn push(&mut self, actor: Option<UserId>, event: Event) -> Result<(), Fatal> {
        self.seq += 1;
        let env = Envelope {
            seq: Seq(self.seq),
            at: 1_700_000_000_000 + self.seq as i64,
            actor,
            schema_version: SCHEMA_VERSION,
            event,
        };
        self.batch.push((env.seq, self.chain.seal(&env)?));
        if self.batch.len() >= 10_000 {
            self.log.append_batch(&self.batch)?;
            self.batch.clear();
        }
        Ok(())
    }

    fn finish(self) -> Result<(), Fatal> {
        self.log.append_batch(&self.batch)?;
        self.log.flush()?;
        Ok(())
    }
}

/// Writes the organization to a new temporary data directory.
/// The users subscribed to channel `c` (1: everyone), sorted.
pub fn members(spec: &SeedSpec, c: u64) -> Vec<u64> {
    let mut members: Vec<u64> = if c == 1 {
        (1..=spec.users).collect()
    } else {
        (0..spec.subscribers_per_channel.min(spec.users))
            .map(|k| 1 + (c * 31 + k * 7) % spec.users)
            .collect()
    };
    members.sort_unstable();
    members.dedup();
    members
}

pub fn seed(spec: &SeedSpec) -> Result<Seeded, Fatal> {
    seed_styled(spec, SeedStyle::default())
}

/// [`seed`], with the history as `style` says.
pub fn seed_styled(spec: &SeedSpec, style: SeedStyle) -> Result<Seeded, Fatal> {
    let tmp = tempfile::tempdir()?;
    let users = write_seed(&tmp.path().join("data"), spec, style)?;
    Ok(Seeded { tmp, users })
}

/// The corpus's quotations with their HTML, rendered once each, with nothing resolved as a
/// mention or a channel link (the corpus names no one of the seeded organization).
fn rendered_corpus() -> Vec<(Arc<str>, Arc<str>)> {
    super::corpus::texts()
        .unwrap_or_default()
        .iter()
        .map(|text| {
            let html = crate::markdown::render_description(text);
            (Arc::from(text.as_str()), Arc::from(html))
        })
        .collect()
}

/// Writes the organization to the data directory `dir` (created; it must not hold one yet),
/// and returns its users as `(user_id, email, api_key)`.
pub fn seed_in(
    dir: &std::path::Path,
    spec: &SeedSpec,
) -> Result<Vec<(u64, String, String)>, Fatal> {
    write_seed(dir, spec, SeedStyle::default())
}

fn write_seed(
    dir: &std::path::Path,
    spec: &SeedSpec,
    style: SeedStyle,
) -> Result<Vec<(u64, String, String)>, Fatal> {
    if dir.join("secret.key").exists() {
        return Err(format!("{} already holds an organization", dir.display()).into());
    }
    let layout = Layout::new(dir);
    std::fs::create_dir_all(&layout.dir)?;
    let secret = ServerSecret::generate();
    secret.store(&layout.secret())?;
    let owner_key = secret.api_key(UserId(1), &format!("{:032x}", 1));
    crate::auth::write_private_file(
        &layout.zuliprc(),
        format!("[api]\nemail=owner@bench.local\nkey={owner_key}\nsite=unused\n").as_bytes(),
    )?;
    let mut w = Writer {
        log: SledLog::open(&layout.log())?,
        seq: 0,
        batch: Vec::new(),
        chain: crate::events::Chain::after(crate::events::GENESIS),
    };
    w.push(
        None,
        Event::RealmCreated {
            name: "Bench".into(),
            description: "Seeded".into(),
        },
    )?;
    let web_password = crate::auth::hash_password(WEB_PASSWORD)?;
    let mut users = Vec::new();
    for id in 1..=spec.users {
        let email = if id == 1 {
            "owner@bench.local".to_owned()
        } else {
            format!("user{id}@bench.local")
        };
        let nonce = format!("{id:032x}");
        users.push((id, email.clone(), secret.api_key(UserId(id), &nonce)));
        w.push(
            None,
            Event::UserCreated {
                user_id: UserId(id),
                email,
                full_name: format!("User {id}"),
                role: if id == 1 { Role::Owner } else { Role::Member },
                bot_type: None,
                bot_owner_id: None,
                timezone: String::new(),
                can_create_users: id == 1,
                password_hash: (id == 2).then(|| web_password.clone()),
                api_key_nonce: nonce,
                bot: None,
            },
        )?;
    }
    for event in ensure_system_groups(&Projections::default()) {
        w.push(None, event)?;
    }
    // System group ids in creation order: nobody 1, owners 2, administrators 3, moderators 4,
    // full members 5, members 6, everyone 7, internet 8.
    let group = |id| GroupSetting::Group(GroupId(id));
    for c in 1..=spec.channels {
        w.push(
            Some(UserId(1)),
            Event::ChannelCreated {
                channel_id: ChannelId(c),
                name: format!("channel {c}"),
                description: format!("Channel number {c}"),
                invite_only: false,
                is_web_public: false,
                history_public_to_subscribers: true,
                message_retention_days: None,
                folder_id: None,
                topics_policy: TopicsPolicy::Inherit,
                is_default: false,
                permissions: Box::new(ChannelPermissions {
                    can_add_subscribers_group: group(1),
                    can_remove_subscribers_group: group(3),
                    can_administer_channel_group: group(3),
                    can_delete_any_message_group: group(1),
                    can_delete_own_message_group: group(1),
                    can_move_messages_out_of_channel_group: group(1),
                    can_move_messages_within_channel_group: group(1),
                    can_send_message_group: group(7),
                    can_subscribe_group: group(1),
                    can_resolve_topics_group: group(1),
                    can_create_topic_group: group(7),
                }),
            },
        )?;
        let members = members(spec, c);
        w.push(
            Some(UserId(1)),
            Event::Subscribed {
                channel_id: ChannelId(c),
                subscriptions: members
                    .into_iter()
                    .map(|u| NewSubscription {
                        user_id: UserId(u),
                        color: "#76ce90".into(),
                    })
                    .collect(),
            },
        )?;
    }
    let corpus = if style.corpus_text {
        rendered_corpus()
    } else {
        Vec::new()
    };
    // The newest message of each channel, for read marks.
    let mut newest = vec![0u64; spec.channels as usize + 1];
    for m in 1..=spec.messages {
        // Channel 1 has everyone; keep its share small so copies stay proportionate.
        let channel = if spec.channels > 1 {
            2 + m % (spec.channels - 1)
        } else {
            1
        };
        newest[channel as usize] = m;
        let sender = 1 + (m * 13) % spec.users;
        let (content, rendered_content) = match corpus.is_empty() {
            false => corpus[(m.wrapping_mul(7919) % corpus.len() as u64) as usize].clone(),
            true => (
                format!("Message {m}: the quick brown fox number {} jumps", m % 997).into(),
                format!(
                    "<p>Message {m}: the quick brown fox number {} jumps</p>",
                    m % 997
                )
                .into(),
            ),
        };
        w.push(
            Some(UserId(sender)),
            Event::MessageSent {
                message_id: MessageId(m),
                sender_id: UserId(sender),
                recipient: Recipient::Channel {
                    channel_id: ChannelId(channel),
                    topic: format!("topic {}", m % 50),
                },
                content,
                rendered_content,
                client: "seed".into(),
                is_me_message: false,
                mentioned: Vec::new(),
                stream_wildcard: false,
                topic_wildcard: false,
                sender_queue: None,
                alerted: Vec::new(),
            },
        )?;
    }
    if style.history_read {
        for c in 1..=spec.channels {
            let Some(&through) = newest.get(c as usize).filter(|m| **m > 0) else {
                continue;
            };
            for u in members(spec, c) {
                w.push(
                    Some(UserId(u)),
                    Event::MessagesReadThrough {
                        user_id: UserId(u),
                        place: ReadPlace::Channel(ChannelId(c)),
                        message_id: MessageId(through),
                    },
                )?;
            }
        }
    }
    w.finish()?;
    Ok(users)
}

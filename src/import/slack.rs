//! Slack's export (the zip an owner downloads from "Import/Export Data").
//!
//! What comes along: people (names, emails, roles, bots, deactivated people, time zones),
//! public and private channels (name, description, creation time and creator, archived, the
//! general channels as default ones) with their members, group and one-to-one direct
//! conversations, and every message of them in time order with its sender, time, last edit
//! time, reactions and mentions; threads become topics (see [`super::thread_topic`]). Slack's export
//! holds no file bytes: a shared file is kept as a link to Slack (without the access token some
//! exports append). Slack keeps no read state in an export: everything imported is read.
//! Join, leave, rename and pin notices are dropped (Zulip drops them too).

use super::archive::{parse_json, Archive};
use super::mrkdwn::{self, Names};
use super::{
    prepare, thread_topic, unique_name, ImportError, NewChannel, NewUser, Options, Prepared, Taken,
    Writer,
};
use crate::events::{Recipient, Role};
use crate::ids::{ChannelId, UserId};
use crate::projections::Projections;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The topic of channel messages outside threads (Zulip's converter uses the same).
pub const MAIN_TOPIC: &str = "imported from Slack";

/// Subtypes that are notices, not messages.
const DROPPED_SUBTYPES: [&str; 9] = [
    "channel_join",
    "channel_leave",
    "channel_name",
    "channel_purpose",
    "channel_topic",
    "group_join",
    "group_leave",
    "pinned_item",
    "unpinned_item",
];

/// A conversation of the export: where its day files are, and where its messages go.
struct Conversation {
    /// The directory holding its `YYYY-MM-DD.json` files.
    dir: String,
    place: Place,
}

#[derive(Clone)]
enum Place {
    Channel(ChannelId),
    Direct(BTreeSet<UserId>),
}

/// A message of a day file: the fields the import reads, each as whatever JSON it holds (a
/// field of the wrong type is that message's damage, not the file's); the rest is skipped
/// unread. Reading into this instead of a whole `Value` keeps the import off the allocator.
#[derive(Default)]
struct DayMessage {
    r#type: Value,
    subtype: Value,
    ts: Value,
    user: Value,
    bot_id: Value,
    text: Value,
    thread_ts: Value,
    edited: Value,
    reactions: Value,
    files: Value,
    file: Value,
    attachments: Value,
    blocks: Value,
}

/// The keys of a message that the import reads; the others are skipped unread.
#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum DayKey {
    Type,
    Subtype,
    Ts,
    User,
    BotId,
    Text,
    ThreadTs,
    Edited,
    Reactions,
    Files,
    File,
    Attachments,
    Blocks,
    #[serde(other)]
    Other,
}

impl DayMessage {
    /// Read from a JSON object; a key given twice keeps its last value, as a `Value` would.
    fn read<'de, A: serde::de::MapAccess<'de>>(mut map: A) -> Result<DayMessage, A::Error> {
        let mut m = DayMessage::default();
        while let Some(key) = map.next_key::<DayKey>()? {
            let slot = match key {
                DayKey::Type => &mut m.r#type,
                DayKey::Subtype => &mut m.subtype,
                DayKey::Ts => &mut m.ts,
                DayKey::User => &mut m.user,
                DayKey::BotId => &mut m.bot_id,
                DayKey::Text => &mut m.text,
                DayKey::ThreadTs => &mut m.thread_ts,
                DayKey::Edited => &mut m.edited,
                DayKey::Reactions => &mut m.reactions,
                DayKey::Files => &mut m.files,
                DayKey::File => &mut m.file,
                DayKey::Attachments => &mut m.attachments,
                DayKey::Blocks => &mut m.blocks,
                DayKey::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value()?;
        }
        Ok(m)
    }
}

/// An entry of a day file: a message, or `None` for anything that is not a JSON object.
struct DayEntry(Option<DayMessage>);

impl<'de> serde::Deserialize<'de> for DayEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = DayEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a message")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<DayEntry, A::Error> {
                DayMessage::read(map).map(|m| DayEntry(Some(m)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<DayEntry, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(DayEntry(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<DayEntry, E> {
                Ok(DayEntry(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<DayEntry, E> {
                Ok(DayEntry(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<DayEntry, E> {
                Ok(DayEntry(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<DayEntry, E> {
                Ok(DayEntry(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<DayEntry, E> {
                Ok(DayEntry(None))
            }
            fn visit_unit<E>(self) -> Result<DayEntry, E> {
                Ok(DayEntry(None))
            }
        }
        deserializer.deserialize_any(Entry)
    }
}

/// One message read from a day file, before it is sent.
struct Pending {
    ts: i64,
    conversation: usize,
    /// Where it came from, for the report.
    at: At,
    sender: UserId,
    /// Cleaned and rendered while the files are read (nothing a message's rendering reads
    /// changes while Slack's messages are sent).
    message: Prepared,
    thread_ts: Option<i64>,
    edited: Option<i64>,
    reactions: Vec<(String, Vec<String>)>,
}

/// Slack's `ts` ("1516454482.000120", or a number) in microseconds.
fn micros(ts: &Value) -> Option<i64> {
    let text: std::borrow::Cow<str> = match ts {
        Value::String(s) => s.as_str().into(),
        Value::Number(n) => n.to_string().into(),
        _ => return None,
    };
    let (secs, frac) = text.split_once('.').unwrap_or((&*text, ""));
    let secs: i64 = secs.parse().ok()?;
    if !(0..=32_503_680_000).contains(&secs) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut digits: String = frac.chars().take(6).collect();
    while digits.len() < 6 {
        digits.push('0');
    }
    Some(secs * 1_000_000 + digits.parse::<i64>().ok()?)
}

/// A creation time given as a number or a string of seconds.
fn seconds(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .filter(|s| *s > 0 && *s < 32_503_680_000)
}

fn text_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// A name Zulip accepts for a person: Slack's with the characters of Zulip's mention syntax
/// taken out.
fn full_name(user: &Value) -> String {
    let candidates = [
        &user["real_name"],
        &user["profile"]["real_name"],
        &user["profile"]["display_name"],
        &user["name"],
    ];
    let raw = candidates
        .iter()
        .map(|v| text_of(v).trim())
        .find(|s| !s.is_empty())
        .unwrap_or("Slack user");
    let cleaned: String = raw
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '*' | '`' | '\\' | '>' | '"' | '@' | '|'))
        .take(100)
        .collect();
    let cleaned = cleaned.trim().to_owned();
    if cleaned.is_empty() {
        "Slack user".to_owned()
    } else {
        cleaned
    }
}

fn role_of(user: &Value) -> Role {
    let yes = |key: &str| user[key].as_bool() == Some(true);
    if yes("is_primary_owner") || yes("is_owner") {
        Role::Owner
    } else if yes("is_admin") {
        Role::Administrator
    } else if yes("is_restricted") || yes("is_ultra_restricted") {
        Role::Guest
    } else {
        Role::Member
    }
}

/// A channel name Zulip accepts, unique in the organization.
fn channel_name(raw: &str, taken: &mut Taken) -> String {
    let base: String = raw.chars().filter(|c| !c.is_control()).collect();
    let base = base.trim();
    unique_name(
        if base.is_empty() {
            "slack channel"
        } else {
            base
        },
        60,
        taken,
    )
}

/// Slack ids to Chronicle's, for links and mentions.
struct Ids {
    users: HashMap<String, (UserId, String)>,
    channels: HashMap<String, String>,
}

impl Names for Ids {
    fn user(&self, slack_id: &str) -> Option<(u64, String)> {
        self.users
            .get(slack_id)
            .map(|(id, name)| (id.0, name.clone()))
    }
    fn channel(&self, slack_id: &str) -> Option<String> {
        self.channels.get(slack_id).cloned()
    }
}

/// The email addresses of Slack's `users.list` answer, by user id.
fn listed_emails(options: &Options) -> Result<HashMap<String, String>, ImportError> {
    let Some(path) = &options.slack_users else {
        return Ok(HashMap::new());
    };
    let bytes =
        std::fs::read(path).map_err(|e| ImportError::new(format!("{}: {e}", path.display())))?;
    let listed: Value = serde_json::from_slice(&bytes).map_err(|e| {
        ImportError::new(format!(
            "{}: not valid JSON (line {}, column {}: {e})",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let members = listed["members"].as_array().or(listed.as_array());
    Ok(members
        .into_iter()
        .flatten()
        .filter_map(|m| {
            Some((
                m["id"].as_str()?.to_owned(),
                m["profile"]["email"].as_str()?.to_lowercase(),
            ))
        })
        .collect())
}

/// Reads a JSON list that must be there (`users.json`, `channels.json`) or may be.
fn list(archive: &mut Archive, name: &str, required: bool) -> Result<Vec<Value>, ImportError> {
    if !archive.contains(name)? {
        if required {
            return Err(ImportError::new(format!(
                "{name}: missing from the export (is this a Slack export?)"
            )));
        }
        return Ok(Vec::new());
    }
    match archive.json(name)? {
        Value::Array(items) => Ok(items),
        _ => Err(ImportError::new(format!("{name}: not a JSON list"))),
    }
}

/// Imports the export; returns the owner.
pub fn import(
    archive: &mut Archive,
    w: &mut Writer,
    options: &Options,
) -> Result<UserId, ImportError> {
    let users_file = if archive.contains("users.json")? {
        "users.json"
    } else if archive.contains("org_users.json")? {
        "org_users.json"
    } else {
        "users.json"
    };
    let slack_users = list(archive, users_file, true)?;
    let public = list(archive, "channels.json", true)?;
    let private = list(archive, "groups.json", false)?;
    let mpims = list(archive, "mpims.json", false)?;
    let dms = list(archive, "dms.json", false)?;
    let emails = listed_emails(options)?;

    // People: one account per address (Slack's duplicates merged), the owner first.
    struct Person<'a> {
        slack_ids: Vec<String>,
        email: String,
        value: &'a Value,
    }
    let mut people: Vec<Person> = Vec::new();
    let mut by_email: HashMap<String, usize> = HashMap::new();
    for (i, user) in slack_users.iter().enumerate() {
        let Some(id) = user["id"].as_str() else {
            w.skip("user", format!("{users_file}, entry {i}"), "no id");
            continue;
        };
        let email = text_of(&user["profile"]["email"])
            .to_lowercase()
            .trim()
            .to_owned();
        let email = if crate::commands::users::validate_email(&email) {
            email
        } else if let Some(listed) = emails
            .get(id)
            .filter(|e| crate::commands::users::validate_email(e))
        {
            listed.clone()
        } else {
            // No address in the export: one that cannot receive mail, until an administrator
            // sets the real one.
            let local: String = text_of(&user["name"])
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                .collect();
            // The Slack id keeps two people whose names look alike apart.
            let id_part: String = id
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_lowercase();
            let local = local.trim_matches('.').to_owned();
            let local = if local.is_empty() {
                id_part
            } else {
                format!("{local}.{id_part}")
            };
            w.skip(
                "email",
                format!("{users_file}, user {id}"),
                format!("the export has no email address; {local}@slack.invalid stands in"),
            );
            format!("{local}@slack.invalid")
        };
        match by_email.get(&email) {
            Some(&known) => people[known].slack_ids.push(id.to_owned()),
            None => {
                by_email.insert(email.clone(), people.len());
                people.push(Person {
                    slack_ids: vec![id.to_owned()],
                    email,
                    value: user,
                });
            }
        }
    }
    if people.is_empty() {
        return Err(ImportError::new(format!("{users_file}: lists nobody")));
    }
    let owner_index = match &options.owner_email {
        Some(wanted) => by_email
            .get(&wanted.to_lowercase())
            .copied()
            .ok_or_else(|| {
                ImportError::new(format!(
                    "--owner-email {wanted}: nobody in the export has that address"
                ))
            })?,
        None => people
            .iter()
            .position(|p| p.value["is_primary_owner"].as_bool() == Some(true))
            .or_else(|| people.iter().position(|p| role_of(p.value) == Role::Owner))
            .or_else(|| {
                people
                    .iter()
                    .position(|p| role_of(p.value) == Role::Administrator)
            })
            .unwrap_or(0),
    };
    let name = options
        .realm_name
        .clone()
        .unwrap_or_else(|| "Imported from Slack".to_owned());
    // Slack's export says when channels were made, not when people joined: everyone joins when
    // the first channel was made (before their first message, never after it).
    let since_ms = public
        .iter()
        .chain(private.iter())
        .filter_map(|c| seconds(&c["created"]))
        .min()
        .map(|s| s * 1000);
    w.create_realm(&name, "")?;
    let mut ids = Ids {
        users: HashMap::new(),
        channels: HashMap::new(),
    };
    let mut order: Vec<usize> = vec![owner_index];
    order.extend((0..people.len()).filter(|i| *i != owner_index));
    let mut owner = UserId(1);
    let mut deactivate = Vec::new();
    for i in order {
        let person = &people[i];
        let user = person.value;
        let is_bot = user["is_bot"].as_bool() == Some(true);
        let role = if i == owner_index {
            Role::Owner
        } else if is_bot {
            Role::Member
        } else {
            role_of(user)
        };
        let tz = text_of(&user["tz"]);
        let timezone = if tz.contains('/') && tz.parse::<chrono_tz::Tz>().is_ok() {
            tz.to_owned()
        } else {
            String::new()
        };
        let full_name = full_name(user);
        let user_id = w.create_user(NewUser {
            email: person.email.clone(),
            full_name: full_name.clone(),
            role,
            bot_type: is_bot.then_some(1),
            bot_owner: None,
            timezone,
            joined_ms: since_ms,
        })?;
        if i == owner_index {
            owner = user_id;
        }
        if user["deleted"].as_bool() == Some(true) && i != owner_index {
            deactivate.push(user_id);
        }
        for slack_id in &person.slack_ids {
            ids.users
                .insert(slack_id.clone(), (user_id, full_name.clone()));
        }
        if let Some(bot_id) = user["profile"]["bot_id"].as_str() {
            ids.users
                .insert(bot_id.to_owned(), (user_id, full_name.clone()));
        }
    }

    // Channels and conversations, each with its members.
    let mut conversations: Vec<Conversation> = Vec::new();
    let mut taken = Taken::default();
    let mut archived = Vec::new();
    for (file, items, invite_only) in [
        ("channels.json", &public, false),
        ("groups.json", &private, true),
    ] {
        for (i, channel) in items.iter().enumerate() {
            let (Some(slack_id), Some(dir)) = (channel["id"].as_str(), channel["name"].as_str())
            else {
                w.skip("channel", format!("{file}, entry {i}"), "no id or name");
                continue;
            };
            let name = channel_name(dir, &mut taken);
            let description: String = text_of(&channel["purpose"]["value"])
                .chars()
                .filter(|c| !c.is_control() || *c == '\n')
                .take(1024)
                .collect();
            let creator = channel["creator"]
                .as_str()
                .and_then(|c| ids.users.get(c))
                .map(|(id, _)| *id);
            let channel_id = w.create_channel(
                NewChannel {
                    name: name.clone(),
                    description,
                    invite_only,
                    is_default: channel["is_general"].as_bool() == Some(true)
                        || (!invite_only && dir == "random"),
                    created_ms: seconds(&channel["created"]).map(|s| s * 1000),
                    creator,
                    folder: None,
                    history_public: None,
                },
                owner,
            )?;
            let members: BTreeSet<UserId> = channel["members"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| ids.users.get(m.as_str()?).map(|(id, _)| *id))
                .collect();
            w.subscribe(channel_id, &members)?;
            if channel["is_archived"].as_bool() == Some(true) {
                archived.push(channel_id);
            }
            ids.channels.insert(slack_id.to_owned(), name);
            conversations.push(Conversation {
                dir: dir.to_owned(),
                place: Place::Channel(channel_id),
            });
        }
    }
    for (file, items, key) in [("mpims.json", &mpims, "name"), ("dms.json", &dms, "id")] {
        for (i, conversation) in items.iter().enumerate() {
            let Some(dir) = conversation[key].as_str() else {
                w.skip("conversation", format!("{file}, entry {i}"), "no name");
                continue;
            };
            let members: BTreeSet<UserId> = conversation["members"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| ids.users.get(m.as_str()?).map(|(id, _)| *id))
                .collect();
            conversations.push(Conversation {
                dir: dir.to_owned(),
                place: Place::Direct(members),
            });
        }
    }

    // Every message of every conversation, then all of them in time order.
    let (mut pending, files) = read_messages(archive, w, &conversations, &ids)?;
    pending.sort_by_key(|p| (p.ts, p.conversation));
    let topics = thread_topics(&pending, &conversations);
    // Each message is dropped once sent: the state grows as the read messages shrink.
    for p in pending {
        let recipient = match &conversations[p.conversation].place {
            Place::Channel(channel_id) => Recipient::Channel {
                channel_id: *channel_id,
                topic: p
                    .thread_ts
                    .and_then(|t| topics.get(&(p.conversation, t)).cloned())
                    .unwrap_or_else(|| MAIN_TOPIC.to_owned()),
            },
            Place::Direct(members) => {
                let mut user_ids: BTreeSet<UserId> = members.clone();
                user_ids.insert(p.sender);
                Recipient::Direct {
                    user_ids: user_ids.into_iter().collect(),
                }
            }
        };
        let ms = p.ts / 1000;
        let message_id = w.send_prepared(
            p.sender,
            recipient,
            p.message,
            ms,
            p.edited.map(|e| e / 1000),
        )?;
        for (name, users) in &p.reactions {
            let name = without_skin_tone(name);
            for user in users {
                let Some((user_id, _)) = ids.users.get(user) else {
                    w.skip(
                        "reaction",
                        p.at.text(&files),
                        format!("by an unknown user {user}"),
                    );
                    continue;
                };
                if !w.react(message_id, *user_id, name, ms)? {
                    w.skip(
                        "reaction",
                        p.at.text(&files),
                        format!(":{name}: is not an emoji Zulip knows (Slack's custom emoji are not in its export)"),
                    );
                }
            }
        }
    }

    w.deactivate_and_archive(owner, deactivate, archived)?;
    w.everything_read(&BTreeSet::new())?;
    Ok(owner)
}

/// A Slack reaction's emoji name without its skin tone (`clap::skin-tone-2`).
fn without_skin_tone(name: &str) -> &str {
    name.split("::").next().unwrap_or(name)
}

/// Reads every day file of every conversation. The files are parsed and converted on this
/// thread and a helper, each taking the next file when free (while this one also unpacks
/// them); what they give is put back in the files' order, so that the import and its report
/// do not depend on which thread was faster.
fn read_messages(
    archive: &mut Archive,
    w: &mut Writer,
    conversations: &[Conversation],
    ids: &Ids,
) -> Result<(Vec<Pending>, Vec<String>), ImportError> {
    let mut by_dir: HashMap<&str, usize> = HashMap::new();
    for (i, c) in conversations.iter().enumerate() {
        by_dir.entry(c.dir.as_str()).or_insert(i);
    }
    let mut files: Vec<(String, usize)> = Vec::new();
    for name in archive.names() {
        let Some((dir, file)) = name.rsplit_once('/') else {
            continue;
        };
        if !file.ends_with(".json") {
            continue;
        }
        match by_dir.get(dir) {
            Some(&conversation) => files.push((name.to_owned(), conversation)),
            None => w.skip(
                "file",
                name,
                "no channel or conversation of the export has this directory",
            ),
        }
    }
    let state = &w.state;
    let read = |index: usize, bytes: &[u8]| {
        let (name, conversation) = &files[index];
        parse_json::<Vec<DayEntry>>(name, bytes, "a JSON list of messages").map(|day| {
            let place = DayFile {
                name,
                file: index,
                conversation: *conversation,
            };
            read_day(&day, place, ids, state)
        })
    };
    let mut days: Vec<(usize, Result<DayRead, ImportError>)> = std::thread::scope(|scope| {
        let (to_helper, helper_in) = std::sync::mpsc::sync_channel::<(usize, Vec<u8>)>(1);
        let helper = scope.spawn(|| {
            helper_in
                .into_iter()
                .map(|(index, bytes)| (index, read(index, &bytes)))
                .collect::<Vec<_>>()
        });
        let mut days = Vec::with_capacity(files.len());
        for (index, (name, _)) in files.iter().enumerate() {
            let bytes = match archive.read(name) {
                Ok(bytes) => bytes,
                Err(error) => {
                    days.push((index, Err(error)));
                    break;
                }
            };
            match to_helper.try_send((index, bytes)) {
                Ok(()) => {}
                Err(std::sync::mpsc::TrySendError::Full((index, bytes)))
                | Err(std::sync::mpsc::TrySendError::Disconnected((index, bytes))) => {
                    days.push((index, read(index, &bytes)))
                }
            }
        }
        drop(to_helper);
        // A helper that panicked took the files it was given with it: the import stops.
        let helped = helper
            .join()
            .map_err(|_| ImportError::new("reading the day files: a thread failed"))?;
        days.extend(helped);
        Ok::<_, ImportError>(days)
    })?;
    days.sort_by_key(|(index, _)| *index);
    let mut pending = Vec::new();
    for (_, day) in days {
        let day = day?;
        if day.notices > 0 {
            w.count("notices dropped", day.notices);
        }
        for (at, why) in day.skipped {
            w.skip("message", at, why);
        }
        pending.extend(day.pending);
    }
    Ok((pending, files.into_iter().map(|(name, _)| name).collect()))
}

/// What one day file gave.
#[derive(Default)]
struct DayRead {
    pending: Vec<Pending>,
    /// Join, leave and such notices, dropped.
    notices: u64,
    /// Messages skipped: where, and why.
    skipped: Vec<(String, String)>,
}

/// Where a message was read: its day file (an index into the files read) and its place there.
#[derive(Clone, Copy)]
struct At {
    file: u32,
    message: u32,
}

impl At {
    /// As the report says it.
    fn text(self, files: &[String]) -> String {
        let name = files.get(self.file as usize).map_or("", String::as_str);
        place_text(name, self.message as usize)
    }
}

/// A message's place as the report says it: its day file and its number there (from 1).
fn place_text(file: &str, message: usize) -> String {
    format!("{file}, message {message}")
}

/// A day file being read: its name, its place among the files read, and its conversation.
struct DayFile<'a> {
    name: &'a str,
    file: usize,
    conversation: usize,
}

/// The messages of a day file, rendered against `state`.
fn read_day(day: &[DayEntry], place: DayFile, ids: &Ids, state: &Projections) -> DayRead {
    let DayFile {
        name,
        file,
        conversation,
    } = place;
    let mut out = DayRead::default();
    for (i, entry) in day.iter().enumerate() {
        let at = || place_text(name, i + 1);
        let Some(message) = &entry.0 else {
            continue;
        };
        if message.r#type != "message" {
            continue;
        }
        let subtype = text_of(&message.subtype);
        if DROPPED_SUBTYPES.contains(&subtype) || subtype == "tombstone" {
            out.notices += 1;
            continue;
        }
        let Some(ts) = micros(&message.ts) else {
            out.skipped
                .push((at(), format!("its ts {} is not a Slack time", message.ts)));
            continue;
        };
        let author = message.user.as_str().or_else(|| message.bot_id.as_str());
        let Some((sender, _)) = author.and_then(|a| ids.users.get(a)) else {
            out.skipped.push((
                at(),
                format!(
                    "sent by {}, who is not among the export's users",
                    author.unwrap_or("nobody")
                ),
            ));
            continue;
        };
        let mut text = mrkdwn::convert(text_of(&message.text), ids);
        if subtype == "me_message" {
            text = format!("/me {text}");
        }
        let extra = attachments_text(message, ids);
        if !extra.is_empty() {
            if !text.trim().is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&extra);
        }
        if text.trim().is_empty() {
            out.skipped.push((
                at(),
                "nothing to show: no text, file or attachment".to_owned(),
            ));
            continue;
        }
        let Some(prepared) = prepare(state, &text) else {
            out.skipped.push((
                at(),
                "nothing to show once control characters are left out".to_owned(),
            ));
            continue;
        };
        let reactions = message
            .reactions
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| {
                let users = r["users"]
                    .as_array()?
                    .iter()
                    .filter_map(|u| u.as_str().map(str::to_owned))
                    .collect();
                Some((r["name"].as_str()?.to_owned(), users))
            })
            .collect();
        out.pending.push(Pending {
            ts,
            conversation,
            at: At {
                file: file as u32,
                message: i as u32 + 1,
            },
            sender: *sender,
            message: prepared,
            thread_ts: micros(&message.thread_ts),
            edited: micros(&message.edited["ts"]),
            reactions,
        });
    }
    out
}

/// Files (as links to Slack) and attachments (their text) of a message.
fn attachments_text(message: &DayMessage, ids: &Ids) -> String {
    let mut parts: Vec<String> = Vec::new();
    let files = message
        .files
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .chain((!message.file.is_null()).then(|| message.file.clone()));
    for file in files {
        let mode = text_of(&file["mode"]);
        if matches!(mode, "tombstone" | "hidden_by_limit") || file["file_access"].is_string() {
            continue;
        }
        let title = [&file["title"], &file["name"]]
            .iter()
            .map(|v| text_of(v))
            .find(|s| !s.is_empty())
            .unwrap_or("file")
            .replace(['[', ']'], "");
        let url = [&file["url_private"], &file["permalink"]]
            .iter()
            .map(|v| text_of(v))
            .find(|s| s.starts_with("https://") || s.starts_with("http://"));
        if let Some(url) = url {
            // Some exports append the exporter's access token: never kept.
            let url = mrkdwn::without_token(url);
            parts.push(format!("[{title}]({url})"));
        }
    }
    for attachment in message.attachments.as_array().into_iter().flatten() {
        let mut lines = Vec::new();
        let pretext = text_of(&attachment["pretext"]);
        if !pretext.is_empty() {
            lines.push(mrkdwn::convert(pretext, ids));
        }
        let title = text_of(&attachment["title"]);
        let link = text_of(&attachment["title_link"]);
        if !title.is_empty() {
            lines.push(if link.starts_with("http") {
                format!("**[{title}]({})**", mrkdwn::without_token(link))
            } else {
                format!("**{title}**")
            });
        }
        let image = text_of(&attachment["image_url"]);
        if image.starts_with("https://") {
            lines.push(mrkdwn::without_token(image));
        }
        let text = text_of(&attachment["text"]);
        if !text.is_empty() {
            lines.push(mrkdwn::convert(text, ids));
        } else if title.is_empty() {
            let fallback = text_of(&attachment["fallback"]);
            if !fallback.is_empty() {
                lines.push(mrkdwn::convert(fallback, ids));
            }
        }
        for field in attachment["fields"].as_array().into_iter().flatten() {
            lines.push(format!(
                "**{}**: {}",
                text_of(&field["title"]),
                mrkdwn::convert(text_of(&field["value"]), ids)
            ));
        }
        if !lines.is_empty() {
            parts.push(lines.join("\n"));
        }
    }
    if message.text.as_str().is_none_or(str::is_empty) {
        let blocks = blocks_text(&message.blocks, ids);
        if !blocks.is_empty() {
            parts.push(blocks);
        }
    }
    parts.join("\n\n")
}

/// Block Kit sections, headers and rich text as plain Markdown (for messages whose `text` is
/// empty, as apps post them).
fn blocks_text(blocks: &Value, ids: &Ids) -> String {
    let mut lines = Vec::new();
    for block in blocks.as_array().into_iter().flatten().take(100) {
        match text_of(&block["type"]) {
            "header" => lines.push(format!("## {}", text_of(&block["text"]["text"]))),
            "divider" => lines.push("----".to_owned()),
            "section" => {
                let text = text_of(&block["text"]["text"]);
                if !text.is_empty() {
                    lines.push(mrkdwn::convert(text, ids));
                }
                for field in block["fields"].as_array().into_iter().flatten() {
                    lines.push(mrkdwn::convert(text_of(&field["text"]), ids));
                }
            }
            "rich_text" => {
                let mut text = String::new();
                rich_text(&block["elements"], &mut text, 0);
                lines.push(mrkdwn::convert(&text, ids));
            }
            _ => {}
        }
    }
    lines.join("\n")
}

/// The text of rich-text elements, depth-bounded.
fn rich_text(elements: &Value, out: &mut String, depth: usize) {
    if depth > 8 {
        return;
    }
    for element in elements.as_array().into_iter().flatten() {
        match text_of(&element["type"]) {
            "text" => out.push_str(text_of(&element["text"])),
            "link" => {
                let url = mrkdwn::without_token(text_of(&element["url"]));
                match element["text"].as_str() {
                    Some(label) => out.push_str(&format!("<{url}|{label}>")),
                    None => out.push_str(&format!("<{url}>")),
                }
            }
            "user" => out.push_str(&format!("<@{}>", text_of(&element["user_id"]))),
            "channel" => out.push_str(&format!("<#{}>", text_of(&element["channel_id"]))),
            "broadcast" => out.push_str(&format!("<!{}>", text_of(&element["range"]))),
            "emoji" => out.push_str(&format!(":{}:", text_of(&element["name"]))),
            _ => {
                rich_text(&element["elements"], out, depth + 1);
                if matches!(
                    text_of(&element["type"]),
                    "rich_text_section"
                        | "rich_text_list"
                        | "rich_text_quote"
                        | "rich_text_preformatted"
                ) && !out.ends_with('\n')
                {
                    out.push('\n');
                }
            }
        }
    }
}

/// The topic of each thread: `YYYY-MM-DD` of its start and the start of its first message
/// (cut to fit Zulip's 60 characters), with ` (2)`, ` (3)` … when a channel has two alike.
fn thread_topics(
    pending: &[Pending],
    conversations: &[Conversation],
) -> HashMap<(usize, i64), String> {
    let mut threads: BTreeMap<(usize, i64), Option<&Pending>> = BTreeMap::new();
    let mut replies: BTreeSet<(usize, i64)> = BTreeSet::new();
    for p in pending {
        if let Some(t) = p.thread_ts {
            if !matches!(conversations[p.conversation].place, Place::Channel(_)) {
                continue;
            }
            let root = threads.entry((p.conversation, t)).or_insert(None);
            if p.ts == t {
                *root = Some(p);
            } else {
                replies.insert((p.conversation, t));
            }
        }
    }
    let mut taken: BTreeMap<usize, Taken> = BTreeMap::new();
    let mut out = HashMap::new();
    for ((conversation, t), root) in threads {
        if !replies.contains(&(conversation, t)) {
            continue;
        }
        let topic = thread_topic(t / 1000, root.map(|r| &*r.message.content), "Slack thread");
        let name = unique_name(&topic, 60, taken.entry(conversation).or_default());
        out.insert((conversation, t), name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_files_keep_the_last_of_a_repeated_key_and_skip_what_is_not_a_message() {
        let day: Vec<DayEntry> = serde_json::from_str(
            r#"[{"type": "message", "ts": "1.1", "ts": "2.2", "user_profile": {"a": [1, {"b": null}]},
                 "text": "hi", "text": null},
                5, "text", null, [1, [2]], true, -1.5]"#,
        )
        .unwrap();
        assert_eq!(day.len(), 7);
        let first = day[0].0.as_ref().unwrap();
        assert_eq!(first.ts, "2.2");
        assert_eq!(first.r#type, "message");
        assert!(first.text.is_null());
        assert!(day[1..].iter().all(|e| e.0.is_none()));
    }

    #[test]
    fn slack_times() {
        assert_eq!(
            micros(&Value::from("1516454482.000120")),
            Some(1_516_454_482_000_120)
        );
        assert_eq!(
            micros(&Value::from("1516454482")),
            Some(1_516_454_482_000_000)
        );
        assert_eq!(micros(&Value::from("NaN")), None);
        assert_eq!(micros(&Value::from("-5.1")), None);
        assert_eq!(micros(&Value::from("1.2e9")), None);
        assert_eq!(micros(&Value::Null), None);
    }

    #[test]
    fn thread_topics_are_dated_and_cut() {
        let at = 1_516_677_693_000;
        let topic = |root| thread_topic(at, root, "Slack thread");
        assert_eq!(
            topic(Some("**Is** this a *thread*?\nsecond")),
            "2018-01-23 Is this a thread?"
        );
        assert_eq!(topic(None), "2018-01-23 Slack thread");
        let long = topic(Some(&"word ".repeat(40)));
        assert_eq!(long.chars().count(), 60);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn channel_names_are_unique_and_short() {
        let mut taken = Taken::default();
        assert_eq!(channel_name("general", &mut taken), "general");
        assert_eq!(channel_name("General", &mut taken), "General (2)");
        assert_eq!(
            channel_name(&"x".repeat(80), &mut taken).chars().count(),
            60
        );
    }
}

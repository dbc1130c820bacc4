//! Zulip's own export (`manage.py export`: a `.tar.gz` holding one directory, or that directory
//! unpacked), formats of Zulip 9.x to 11.x.
//!
//! `realm.json` holds every table but the messages (`zerver_userprofile`, `zerver_stream`,
//! `zerver_recipient`, `zerver_subscription`, `zerver_huddle`, `zerver_reaction`,
//! `zerver_realmemoji`, `zerver_usertopic`, `zerver_muteduser`, `zerver_defaultstream`, ...);
//! `messages-000001.json`, `-000002`, ... hold `zerver_message` and `zerver_usermessage`;
//! `uploads/records.json` and `emoji/records.json` list the files beside them. Rows name their
//! foreign keys without `_id` (`"sender": 12`), times are float UNIX seconds, and a user's copy
//! of a message keeps its flags in `flags_mask` (bit 0 read, 1 starred, 2 collapsed).
//!
//! Every id is renumbered (message ids stay in Zulip's order, its send order) and the ids inside
//! content are rewritten: `@**Name|12**` mentions and `/user_uploads/…` links. Content is
//! rendered again by Chronicle from its Markdown. A message's content edits are replayed as
//! edits at their times, so its history is what Zulip showed; its read and starred flags are
//! kept per person. Messages from Zulip's own system bots (welcome, notification) are left out
//! and counted.

use super::archive::Archive;
use super::{unique_name, ImportError, NewChannel, NewUser, Options, ReadKey, Writer};
use crate::events::{
    Event, GroupPermissions, ReadPlace, Recipient, Role, SubscriptionProperty, SystemGroup,
    TopicPolicy,
};
use crate::ids::{ChannelId, GroupId, MessageId, UserId};
use crate::projections::{FastMap, FastSet};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn id(value: &Value) -> Option<u64> {
    value.as_u64()
}

/// Float seconds as milliseconds, within years 1970 to 3000.
fn ms(value: &Value) -> Option<i64> {
    value
        .as_f64()
        .filter(|s| *s > 0.0 && *s < 32_503_680_000.0)
        .map(|s| (s * 1000.0) as i64)
}

fn table<'a>(realm: &'a Value, name: &str) -> &'a [Value] {
    realm[name].as_array().map_or(&[], Vec::as_slice)
}

/// Where a Zulip recipient points.
#[derive(Clone)]
enum Target {
    Channel(ChannelId),
    /// A user's personal recipient (a one-to-one conversation is addressed to the receiver).
    Personal(UserId),
    Huddle(u64),
}

/// One message as read, before it is sent.
struct Pending {
    old_id: u64,
    sender: UserId,
    target: Target,
    topic: String,
    content: String,
    sent_ms: i64,
    last_edit_ms: Option<i64>,
    /// Its edits, oldest first.
    history: Vec<Edit>,
}

/// One entry of a message's edit history: what it replaced (the content, the topic, or both),
/// by whom and when.
#[derive(Debug, Clone, PartialEq)]
struct Edit {
    prev_content: Option<String>,
    prev_topic: Option<String>,
    /// The topic it set (Zulip writes it since 2022; older entries have only `prev_topic`).
    topic: Option<String>,
    editor: Option<UserId>,
    at: i64,
}

/// The `@**Name|12**` mentions (silent ones too) with the new ids; other ids are left alone.
fn rewrite_mentions(content: &str, users: &FastMap<u64, UserId>) -> String {
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(at) = rest.find("**") {
        let (before, after) = rest.split_at(at + 2);
        out.push_str(before);
        rest = after;
        let opens_mention = before.ends_with("@**") || before.ends_with("@_**");
        if !opens_mention {
            continue;
        }
        let Some(close) = rest.find("**") else {
            continue;
        };
        let inner = &rest[..close];
        if let Some((name, old)) = inner.rsplit_once('|') {
            if let Some(new) = old.parse::<u64>().ok().and_then(|o| users.get(&o)) {
                out.push_str(&format!("{name}|{}**", new.0));
                rest = &rest[close + 2..];
                continue;
            }
        }
        out.push_str(inner);
        out.push_str("**");
        rest = &rest[close + 2..];
    }
    out.push_str(rest);
    out
}

/// `/user_uploads/…` links to the files' new paths, each looked up once.
fn rewrite_uploads(content: &str, new_paths: &HashMap<String, String>) -> String {
    const PREFIX: &str = "/user_uploads/";
    if new_paths.is_empty() || !content.contains(PREFIX) {
        return content.to_owned();
    }
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(at) = rest.find(PREFIX) {
        out.push_str(&rest[..at]);
        let link = &rest[at..];
        let end = link
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | ']' | '"' | '\'' | '<' | '>'))
            .unwrap_or(link.len());
        let old = &link[..end];
        out.push_str(new_paths.get(old).map_or(old, String::as_str));
        rest = &link[end..];
    }
    out.push_str(rest);
    out
}

/// The export's directory inside the archive (`zulip-export-…/`, or none).
fn base_of(archive: &Archive) -> Result<String, ImportError> {
    archive
        .find_top("realm.json")?
        .map(|n| n.strip_suffix("realm.json").unwrap_or_default().to_owned())
        .ok_or_else(|| {
            ImportError::new("realm.json: missing from the export (is this a Zulip export?)")
        })
}

/// The entries of a tar.gz export taken one by one as the import goes: the message files.
pub fn streamed(name: &str) -> bool {
    let file = name.rsplit('/').next().unwrap_or(name);
    file.starts_with("messages-") && file.ends_with(".json")
}

/// The `n`th message file (from 1), if the export has it.
fn message_file(archive: &Archive, base: &str, n: u32) -> Result<Option<String>, ImportError> {
    let file = format!("{base}messages-{n:06}.json");
    Ok(archive.contains(&file)?.then_some(file))
}

/// Imports the export; returns the owner.
pub fn import(
    archive: &mut Archive,
    w: &mut Writer,
    options: &Options,
) -> Result<UserId, ImportError> {
    let base = base_of(archive)?;
    let realm = archive.json(&format!("{base}realm.json"))?;
    let attachments_file = format!("{base}attachment.json");
    if !archive.contains(&attachments_file)? {
        return Err(ImportError::new(format!(
            "{attachments_file}: missing from the export (every Zulip export has it)"
        )));
    }
    let realm_row = realm["zerver_realm"]
        .as_array()
        .and_then(|r| r.first())
        .ok_or_else(|| ImportError::new(format!("{base}realm.json: no zerver_realm row")))?;
    let name = options.realm_name.clone().unwrap_or_else(|| {
        let name = text(&realm_row["name"]).trim();
        if name.is_empty() {
            "Imported from Zulip"
        } else {
            name
        }
        .to_owned()
    });
    let crossrealm: BTreeSet<u64> = table(&realm, "zerver_userprofile_crossrealm")
        .iter()
        .filter_map(|u| id(&u["id"]))
        .collect();

    // People: humans first (bots need their owners), by id.
    let mut rows: Vec<&Value> = table(&realm, "zerver_userprofile")
        .iter()
        .chain(table(&realm, "zerver_userprofile_mirrordummy"))
        .collect();
    rows.sort_by_key(|u| (u["is_bot"].as_bool() == Some(true), id(&u["id"])));
    let email_of = |u: &Value| {
        let delivery = text(&u["delivery_email"]).trim().to_lowercase();
        if crate::commands::users::validate_email(&delivery) {
            delivery
        } else {
            text(&u["email"]).trim().to_lowercase()
        }
    };
    let owner_old = match &options.owner_email {
        Some(wanted) => rows
            .iter()
            .find(|u| email_of(u) == wanted.to_lowercase())
            .and_then(|u| id(&u["id"]))
            .ok_or_else(|| {
                ImportError::new(format!(
                    "--owner-email {wanted}: nobody in the export has that address"
                ))
            })?,
        None => rows
            .iter()
            .filter(|u| {
                u["is_bot"].as_bool() != Some(true) && u["is_active"].as_bool() != Some(false)
            })
            .find(|u| u["role"].as_u64() == Some(100))
            .or_else(|| rows.iter().find(|u| u["is_bot"].as_bool() != Some(true)))
            .and_then(|u| id(&u["id"]))
            .ok_or_else(|| {
                ImportError::new(format!("{base}realm.json: no person in zerver_userprofile"))
            })?,
    };
    w.create_realm(&name, text(&realm_row["description"]))?;
    let mut users: FastMap<u64, UserId> = FastMap::default();
    let mut emails = BTreeSet::new();
    let mut deactivate = Vec::new();
    let mut owner = UserId(1);
    // The owner first: the organization's first account.
    let owner_first = rows
        .iter()
        .position(|u| id(&u["id"]) == Some(owner_old))
        .unwrap_or(0);
    let owner_row = rows.remove(owner_first);
    rows.insert(0, owner_row);
    for (i, u) in rows.iter().enumerate() {
        let Some(old) = id(&u["id"]) else {
            w.skip(
                "user",
                format!("{base}realm.json: zerver_userprofile {i}"),
                "no id",
            );
            continue;
        };
        let at = format!("{base}realm.json: user {old}");
        let email = email_of(u);
        if !crate::commands::users::validate_email(&email) || !emails.insert(email.clone()) {
            w.skip(
                "user",
                at,
                format!("{email:?} is not a valid, unique address"),
            );
            continue;
        }
        let is_bot = u["is_bot"].as_bool() == Some(true);
        let role = if old == owner_old {
            Role::Owner
        } else {
            u["role"]
                .as_u64()
                .and_then(|r| Role::from_code(r as u16))
                .unwrap_or(Role::Member)
        };
        let full_name: String = text(&u["full_name"])
            .chars()
            .filter(|c| !c.is_control())
            .take(100)
            .collect();
        let tz = text(&u["timezone"]);
        let user_id = w.create_user(NewUser {
            email,
            full_name: if full_name.trim().is_empty() {
                "Zulip user".into()
            } else {
                full_name.trim().to_owned()
            },
            role,
            bot_type: is_bot.then(|| u["bot_type"].as_u64().unwrap_or(1).clamp(1, 4) as u8),
            bot_owner: u["bot_owner"].as_u64().and_then(|o| users.get(&o).copied()),
            timezone: if tz.parse::<chrono_tz::Tz>().is_ok() {
                tz.to_owned()
            } else {
                String::new()
            },
            joined_ms: ms(&u["date_joined"]),
        })?;
        if old == owner_old {
            owner = user_id;
        } else if u["is_active"].as_bool() == Some(false)
            || u["is_mirror_dummy"].as_bool() == Some(true)
        {
            deactivate.push(user_id);
        }
        users.insert(old, user_id);
    }

    if !users.contains_key(&owner_old) {
        return Err(ImportError::new(format!(
            "{base}realm.json: the owner (user {owner_old}) has no valid, unique address; name \
             another with --owner-email"
        )));
    }

    // Uploaded avatars (avatars/records.json): the original of each person's latest one.
    let avatar_records = format!("{base}avatars/records.json");
    if archive.contains(&avatar_records)? {
        let records = archive.json(&avatar_records)?;
        let mut latest: BTreeMap<UserId, (bool, u64, String)> = BTreeMap::new();
        for record in records.as_array().into_iter().flatten() {
            let Some(user_id) = id(&record["user_profile_id"]).and_then(|u| users.get(&u).copied())
            else {
                continue;
            };
            let path = text(&record["path"]);
            let candidate = (
                path.ends_with(".original"),
                record["avatar_version"].as_u64().unwrap_or_default(),
                format!("{base}avatars/{path}"),
            );
            let best = latest.entry(user_id).or_insert_with(|| candidate.clone());
            if (candidate.0, candidate.1) > (best.0, best.1) {
                *best = candidate;
            }
        }
        for (user_id, (_, _, file)) in latest {
            if !archive.contains(&file)? {
                w.skip("avatar", &file, "not in the export");
                continue;
            }
            let bytes = archive.read(&file)?;
            if let Err(why) = w.avatar(user_id, &bytes)? {
                w.skip("avatar", file, why);
            }
        }
    }

    // Custom emoji, with their images (emoji/records.json).
    let emoji_records = format!("{base}emoji/records.json");
    let mut emoji_names: HashMap<u64, String> = HashMap::new();
    for e in table(&realm, "zerver_realmemoji") {
        if let Some(old) = id(&e["id"]) {
            emoji_names.insert(old, text(&e["name"]).to_owned());
        }
    }
    if archive.contains(&emoji_records)? {
        let records = archive.json(&emoji_records)?;
        let records = records.as_array().map(Vec::as_slice).unwrap_or_default();
        // Zulip lists an emoji twice, its image and the `.original` it was made from: the
        // original is read, once. (What the records list is looked up, not what the archive
        // might hold: a tar.gz being unpacked can only say "absent" at its end.)
        let listed: BTreeSet<&str> = records.iter().map(|r| text(&r["path"])).collect();
        for record in records {
            let emoji_name = text(&record["name"]).to_owned();
            let at = format!("{emoji_records}: {emoji_name}");
            if record["deactivated"].as_bool() == Some(true) {
                continue;
            }
            let listed_path = text(&record["path"]);
            if listed_path
                .strip_suffix(".original")
                .is_some_and(|image| listed.contains(image))
            {
                continue;
            }
            let original = format!("{listed_path}.original");
            let file = if listed.contains(original.as_str()) {
                format!("{base}emoji/{original}")
            } else {
                format!("{base}emoji/{listed_path}")
            };
            if !archive.contains(&file)? {
                w.skip(
                    "custom emoji",
                    at,
                    format!("its image {file} is not in the export"),
                );
                continue;
            }
            let bytes = archive.read(&file)?;
            let author = record["author"]
                .as_u64()
                .and_then(|a| users.get(&a).copied())
                .unwrap_or(owner);
            if let Err(why) = w.custom_emoji(author, &emoji_name, bytes)? {
                w.skip("custom emoji", at, why);
            }
        }
    }

    // Channels.
    let defaults: BTreeSet<u64> = table(&realm, "zerver_defaultstream")
        .iter()
        .filter_map(|d| id(&d["stream"]))
        .collect();
    let mut streams: Vec<&Value> = table(&realm, "zerver_stream").iter().collect();
    streams.sort_by_key(|s| id(&s["id"]));
    let mut channels: HashMap<u64, ChannelId> = HashMap::new();
    let mut taken = super::Taken::default();
    let mut archived = Vec::new();
    for s in streams {
        let Some(old) = id(&s["id"]) else { continue };
        let name: String = text(&s["name"])
            .chars()
            .filter(|c| !c.is_control())
            .collect();
        let name = unique_name(
            if name.trim().is_empty() {
                "channel"
            } else {
                name.trim()
            },
            60,
            &mut taken,
        );
        let invite_only = s["invite_only"].as_bool() == Some(true);
        let history_public = s["history_public_to_subscribers"].as_bool();
        let channel_id = w.create_channel(
            NewChannel {
                name,
                description: text(&s["description"]).chars().take(1024).collect(),
                invite_only,
                is_default: defaults.contains(&old),
                created_ms: ms(&s["date_created"]),
                creator: s["creator"].as_u64().and_then(|c| users.get(&c).copied()),
                folder: None,
                history_public,
            },
            owner,
        )?;
        if s["deactivated"].as_bool() == Some(true) {
            archived.push(channel_id);
        }
        channels.insert(old, channel_id);
    }
    let mut targets: FastMap<u64, Target> = FastMap::default();
    for r in table(&realm, "zerver_recipient") {
        let (Some(rid), Some(kind), Some(type_id)) =
            (id(&r["id"]), r["type"].as_u64(), id(&r["type_id"]))
        else {
            continue;
        };
        let target = match kind {
            1 => users.get(&type_id).map(|u| Target::Personal(*u)),
            2 => channels.get(&type_id).map(|c| Target::Channel(*c)),
            3 => Some(Target::Huddle(rid)),
            _ => None,
        };
        if let Some(target) = target {
            targets.insert(rid, target);
        }
    }
    // Subscriptions: channel members (with their settings) and group conversations' members.
    let mut members: BTreeMap<ChannelId, BTreeSet<UserId>> = BTreeMap::new();
    let mut huddles: HashMap<u64, BTreeSet<UserId>> = HashMap::new();
    // People who left a channel (their subscription is inactive): they held its messages
    // while they were in it.
    let mut former: BTreeMap<ChannelId, BTreeSet<UserId>> = BTreeMap::new();
    let mut settings = Vec::new();
    for sub in table(&realm, "zerver_subscription") {
        let (Some(user), Some(target)) = (
            sub["user_profile"]
                .as_u64()
                .and_then(|u| users.get(&u).copied()),
            sub["recipient"].as_u64().and_then(|r| targets.get(&r)),
        ) else {
            continue;
        };
        match target {
            Target::Channel(channel_id) if sub["active"].as_bool() != Some(false) => {
                members.entry(*channel_id).or_default().insert(user);
                if sub["is_muted"].as_bool() == Some(true) {
                    settings.push((user, *channel_id, SubscriptionProperty::IsMuted(true)));
                }
                if sub["pin_to_top"].as_bool() == Some(true) {
                    settings.push((user, *channel_id, SubscriptionProperty::PinToTop(true)));
                }
                let color = text(&sub["color"]);
                if color.starts_with('#') && color.len() <= 10 {
                    settings.push((
                        user,
                        *channel_id,
                        SubscriptionProperty::Color(color.to_owned()),
                    ));
                }
                for (key, make) in [
                    (
                        "desktop_notifications",
                        SubscriptionProperty::DesktopNotifications
                            as fn(Option<bool>) -> SubscriptionProperty,
                    ),
                    (
                        "audible_notifications",
                        SubscriptionProperty::AudibleNotifications,
                    ),
                    (
                        "push_notifications",
                        SubscriptionProperty::PushNotifications,
                    ),
                    (
                        "email_notifications",
                        SubscriptionProperty::EmailNotifications,
                    ),
                    (
                        "wildcard_mentions_notify",
                        SubscriptionProperty::WildcardMentionsNotify,
                    ),
                ] {
                    if let Some(on) = sub[key].as_bool() {
                        settings.push((user, *channel_id, make(Some(on))));
                    }
                }
            }
            Target::Channel(channel_id) => {
                former.entry(*channel_id).or_default().insert(user);
            }
            Target::Huddle(rid) => {
                huddles.entry(*rid).or_default().insert(user);
            }
            _ => {}
        }
    }

    // Linkifiers, profile fields, alert words, statuses: before the messages, with the
    // channels their Markdown may link.
    organization_settings(&realm, &base, w, &users, owner)?;

    // Uploads: their bytes, and the new path of each old one.
    let uploads_records = format!("{base}uploads/records.json");
    let mut upload_paths: Vec<(String, String)> = Vec::new();
    if archive.contains(&uploads_records)? {
        let records = archive.json(&uploads_records)?;
        for record in records.as_array().into_iter().flatten() {
            let path = text(&record["path"]).to_owned();
            let file = format!("{base}uploads/{path}");
            let at = format!("{uploads_records}: {path}");
            if !archive.contains(&file)? {
                w.skip("file", at, format!("{file} is not in the export"));
                continue;
            }
            let bytes = archive.read(&file)?;
            let uploader = record["user_profile_id"]
                .as_u64()
                .and_then(|u| users.get(&u).copied())
                .unwrap_or(owner);
            let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
            let when = record["last_modified"]
                .as_f64()
                .map(|s| (s * 1000.0) as i64)
                .unwrap_or(0);
            let link = w.upload(uploader, &name, &bytes, when.max(0))?;
            upload_paths.push((format!("/user_uploads/{path}"), link));
        }
    }

    // Messages, file by file (Zulip writes them in id order, its send order; each file's
    // messages are sorted again), with each copy's flags: one file is in memory at a time.
    let upload_paths: HashMap<String, String> = upload_paths.into_iter().collect();
    let rewrite = |content: &str| {
        let content = rewrite_mentions(content, &users);
        rewrite_uploads(&content, &upload_paths)
    };
    let mut messages: FastMap<u64, MessageId> = FastMap::default();
    let mut copies_read = Flags::default();
    let mut presence = Presence::new(members, former);
    // Copies a file holds for a message of a later file (Zulip's exporter keeps them together;
    // this is for exports that do not).
    let mut ahead: FastMap<u64, Vec<(UserId, u64)>> = FastMap::default();
    let mut skipped_bots = 0;
    // The files are parsed on a thread of their own, a file ahead of the one being written:
    // JSON parsing (mostly the copies' rows) and converting and writing take turns on two
    // cores instead of one.
    std::thread::scope(|scope| -> Result<(), ImportError> {
        let (to_parse, parse_in) = std::sync::mpsc::sync_channel::<(String, Vec<u8>)>(1);
        type Parsed = (String, Result<MessageFile, ImportError>);
        let (parsed_out, parsed) = std::sync::mpsc::sync_channel::<Parsed>(1);
        scope.spawn(move || {
            for (file, bytes) in parse_in {
                let chunk = super::archive::parse_json(&file, &bytes, "a Zulip message file");
                drop(bytes);
                if parsed_out.send((file, chunk)).is_err() {
                    break;
                }
            }
        });
        let gone = |_| ImportError::new("the message files' parser stopped");
        // Each file is taken from the archive as it is sent (a tar.gz's is let go of there),
        // and the files end at the first number missing.
        let mut number = 0;
        let mut next = |archive: &mut Archive| -> Result<Option<(String, Vec<u8>)>, ImportError> {
            number += 1;
            match message_file(archive, &base, number)? {
                Some(file) => {
                    let bytes = archive.take(&file)?;
                    Ok(Some((file, bytes)))
                }
                None => {
                    number -= 1;
                    Ok(None)
                }
            }
        };
        let mut in_flight = 0;
        for _ in 0..2 {
            if let Some(file) = next(archive)? {
                to_parse.send(file).map_err(gone)?;
                in_flight += 1;
            }
        }
        while in_flight > 0 {
            let (file, chunk) = parsed
                .recv()
                .map_err(|_| ImportError::new("the message files' parser stopped"))?;
            in_flight -= 1;
            if let Some(following) = next(archive)? {
                to_parse.send(following).map_err(gone)?;
                in_flight += 1;
            }
            let chunk: MessageFile = chunk?;
            let mut copies: FastMap<u64, Vec<(UserId, u64)>> = FastMap::default();
            for row in chunk.zerver_usermessage {
                if let (Some(user), Some(message), Some(mask)) = (
                    row.user_profile.and_then(|u| users.get(&u).copied()),
                    row.message,
                    row.flags_mask,
                ) {
                    copies.entry(message).or_default().push((user, mask));
                }
            }
            let mut pending = Vec::new();
            for m in &chunk.zerver_message {
                let Some(old_id) = id(&m["id"]) else { continue };
                let at = format!("{file}: message {old_id}");
                let sender_old = m["sender"].as_u64().unwrap_or_default();
                if crossrealm.contains(&sender_old) {
                    skipped_bots += 1;
                    continue;
                }
                let Some(sender) = users.get(&sender_old).copied() else {
                    w.skip(
                        "message",
                        at,
                        format!("sent by user {sender_old}, who is not in the export"),
                    );
                    continue;
                };
                let Some(target) = m["recipient"]
                    .as_u64()
                    .and_then(|r| targets.get(&r))
                    .cloned()
                else {
                    w.skip("message", at, "to a recipient the export does not describe");
                    continue;
                };
                let Some(sent_ms) = ms(&m["date_sent"]).or_else(|| ms(&m["pub_date"])) else {
                    w.skip("message", at, "no date_sent");
                    continue;
                };
                pending.push(Pending {
                    old_id,
                    sender,
                    target,
                    topic: text(&m["subject"]).to_owned(),
                    content: text(&m["content"]).to_owned(),
                    sent_ms,
                    last_edit_ms: ms(&m["last_edit_time"]),
                    history: edit_history(&m["edit_history"], &users),
                });
            }
            drop(chunk.zerver_message);
            pending.sort_by_key(|p| p.old_id);
            for p in pending {
                let mut held = copies.remove(&p.old_id).unwrap_or_default();
                if let Some(early) = ahead.remove(&p.old_id) {
                    held.extend(early);
                }
                if let Target::Channel(channel_id) = p.target {
                    presence.before(w, channel_id, &held)?;
                }
                let Some(message_id) = send_with_history(w, &p, &huddles, &rewrite)? else {
                    continue;
                };
                messages.insert(p.old_id, message_id);
                copies_read.add(w, message_id, &held);
            }
            // Copies of messages of other files: earlier ones now, later ones when they come.
            for (old, held) in copies {
                match messages.get(&old) {
                    Some(message_id) => copies_read.add(w, *message_id, &held),
                    None => ahead.entry(old).or_default().extend(held),
                }
            }
        }
        Ok(())
    })?;
    if skipped_bots > 0 {
        w.count("messages from Zulip's system bots left out", skipped_bots);
    }
    // Those who left after the last message they held, those who joined after the last
    // message, then everyone's subscription settings.
    presence.finish(w)?;
    for (user, channel_id, property) in settings {
        w.subscription_property(user, channel_id, property)?;
    }

    // Reactions.
    for r in table(&realm, "zerver_reaction") {
        let (Some(message_id), Some(user_id)) = (
            r["message"]
                .as_u64()
                .and_then(|m| messages.get(&m).copied()),
            r["user_profile"]
                .as_u64()
                .and_then(|u| users.get(&u).copied()),
        ) else {
            continue;
        };
        let emoji = match text(&r["reaction_type"]) {
            "realm_emoji" => text(&r["emoji_code"])
                .parse::<u64>()
                .ok()
                .and_then(|c| emoji_names.get(&c).cloned())
                .unwrap_or_else(|| text(&r["emoji_name"]).to_owned()),
            _ => text(&r["emoji_name"]).to_owned(),
        };
        let when = w
            .state
            .messages
            .get(message_id)
            .map_or(0, |m| m.timestamp * 1000);
        if !w.react(message_id, user_id, &emoji, when)? {
            w.skip(
                "reaction",
                format!("{base}realm.json: reaction {}", r["id"]),
                format!(":{emoji}: is not an emoji here"),
            );
        }
    }

    // Read and starred flags, per person: a read mark per place, the exceptions listed.
    let given = copies_read.write(w)?;

    // Topics people muted or follow, and people they muted.
    for t in table(&realm, "zerver_usertopic") {
        let (Some(user_id), Some(channel_id)) = (
            t["user_profile"]
                .as_u64()
                .and_then(|u| users.get(&u).copied()),
            t["stream"].as_u64().and_then(|s| channels.get(&s).copied()),
        ) else {
            continue;
        };
        let policy = match t["visibility_policy"].as_u64() {
            Some(1) => TopicPolicy::Muted,
            Some(2) => TopicPolicy::Unmuted,
            Some(3) => TopicPolicy::Followed,
            _ => continue,
        };
        let event = Event::TopicVisibilitySet {
            user_id,
            channel_id,
            topic: super::clean_line(text(&t["topic_name"]), 60),
            policy,
        };
        match ms(&t["last_updated"]) {
            Some(at) => w.push_at(Some(user_id), at, event, None)?,
            None => w.push(Some(user_id), event)?,
        }
        w.count("topic settings", 1);
    }
    for m in table(&realm, "zerver_muteduser") {
        if let (Some(user_id), Some(muted_user_id)) = (
            m["user_profile"]
                .as_u64()
                .and_then(|u| users.get(&u).copied()),
            m["muted_user"]
                .as_u64()
                .and_then(|u| users.get(&u).copied()),
        ) {
            let event = Event::UserMuted {
                user_id,
                muted_user_id,
            };
            match ms(&m["date_muted"]) {
                Some(at) => w.push_at(Some(user_id), at, event, None)?,
                None => w.push(Some(user_id), event)?,
            }
            w.count("muted people", 1);
        }
    }
    // User groups (not the system ones, which follow roles) with their members.
    let mut group_members: HashMap<u64, Vec<UserId>> = HashMap::new();
    for m in table(&realm, "zerver_usergroupmembership") {
        if let (Some(group), Some(user)) = (
            m["user_group"].as_u64(),
            m["user_profile"]
                .as_u64()
                .and_then(|u| users.get(&u).copied()),
        ) {
            group_members.entry(group).or_default().push(user);
        }
    }
    let mut group_names = BTreeSet::new();
    for g in table(&realm, "zerver_namedusergroup") {
        if g["is_system_group"].as_bool() == Some(true) || g["deactivated"].as_bool() == Some(true)
        {
            continue;
        }
        let old = g["usergroup_ptr"]
            .as_u64()
            .or_else(|| g["id"].as_u64())
            .unwrap_or_default();
        let name = text(&g["name"]).trim().to_owned();
        if name.is_empty() || name.starts_with("role:") || !group_names.insert(name.to_lowercase())
        {
            continue;
        }
        let mut members = group_members.remove(&old).unwrap_or_default();
        members.sort();
        members.dedup();
        let system = |kind| w.state.groups.system_setting(kind);
        let permissions = GroupPermissions {
            can_add_members_group: system(SystemGroup::Administrators),
            can_join_group: system(SystemGroup::Nobody),
            can_leave_group: system(SystemGroup::Everyone),
            can_manage_group: system(SystemGroup::Administrators),
            can_mention_group: system(SystemGroup::Everyone),
            can_remove_members_group: system(SystemGroup::Nobody),
        };
        let group_id = GroupId(w.state.groups.max_id().0 + 1);
        w.push(
            Some(owner),
            Event::UserGroupCreated {
                group_id,
                name,
                description: text(&g["description"]).chars().take(1024).collect(),
                system: None,
                members,
                subgroups: Vec::new(),
                permissions: Box::new(permissions),
            },
        )?;
        w.count("user groups", 1);
    }

    w.deactivate_and_archive(owner, deactivate, archived)?;
    // Copies the export holds no row for (the history a later subscriber reads) are read.
    w.everything_read(&given)?;
    Ok(owner)
}

/// A `messages-NNNNNN.json` file: its messages, and every copy of them with its flags.
#[derive(serde::Deserialize)]
struct MessageFile {
    #[serde(default)]
    zerver_message: Vec<Value>,
    #[serde(default)]
    zerver_usermessage: Vec<CopyRow>,
}

/// One person's copy of a message (`zerver_usermessage`); a field of the wrong type is as if
/// missing, and the row is left out.
#[derive(serde::Deserialize)]
struct CopyRow {
    #[serde(default, deserialize_with = "number")]
    user_profile: Option<u64>,
    #[serde(default, deserialize_with = "number")]
    message: Option<u64>,
    #[serde(default, deserialize_with = "number")]
    flags_mask: Option<u64>,
}

/// A non-negative integer, or `None` for anything else (read past without building a `Value`:
/// there are three of these in each of the tens of millions of copies' rows).
fn number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
    struct Lenient;
    impl<'de> Visitor<'de> for Lenient {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_u64<E>(self, v: u64) -> Result<Option<u64>, E> {
            Ok(Some(v))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Option<u64>, E> {
            Ok(u64::try_from(v).ok())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_str<E>(self, _: &str) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u64>, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u64>, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    d.deserialize_any(Lenient)
}

/// Who is in which channel while the messages go in. Zulip keeps a copy of a channel message
/// for each subscriber of the moment, so each member joins just before the first message they
/// hold there (a later subscriber of a channel with protected history holds, and reads, only
/// what Zulip gave them), and someone who left (an inactive subscription) leaves before the
/// first message they no longer hold, and joins again if they hold a later one.
struct Presence {
    members: BTreeMap<ChannelId, BTreeSet<UserId>>,
    former: BTreeMap<ChannelId, BTreeSet<UserId>>,
    /// Who is in each channel at the moment (looked up for every copy of every message).
    joined: FastMap<ChannelId, FastSet<UserId>>,
    /// Former members in their channel at the moment.
    present_former: BTreeMap<ChannelId, BTreeSet<UserId>>,
}

impl Presence {
    fn new(
        members: BTreeMap<ChannelId, BTreeSet<UserId>>,
        former: BTreeMap<ChannelId, BTreeSet<UserId>>,
    ) -> Presence {
        Presence {
            members,
            former,
            joined: FastMap::default(),
            present_former: BTreeMap::new(),
        }
    }

    /// Joins and leaves before a message in `channel_id` whose copies are `held`.
    fn before(
        &mut self,
        w: &mut Writer,
        channel_id: ChannelId,
        held: &[(UserId, u64)],
    ) -> Result<(), ImportError> {
        let holds = |user: &UserId| held.iter().any(|(u, _)| u == user);
        let joined = self.joined.entry(channel_id).or_default();
        if let Some(present) = self.present_former.get_mut(&channel_id) {
            let leaving: Vec<UserId> = present.iter().filter(|u| !holds(u)).copied().collect();
            if !leaving.is_empty() {
                for user in &leaving {
                    present.remove(user);
                    joined.remove(user);
                }
                w.push(
                    None,
                    Event::Unsubscribed {
                        channel_id,
                        user_ids: leaving,
                    },
                )?;
            }
        }
        let in_set = |sets: &BTreeMap<ChannelId, BTreeSet<UserId>>, user: &UserId| {
            sets.get(&channel_id).is_some_and(|s| s.contains(user))
        };
        let mut joining = BTreeSet::new();
        for (user, _) in held {
            if joined.contains(user) {
                continue;
            }
            if in_set(&self.members, user) {
                joining.insert(*user);
            } else if in_set(&self.former, user) {
                joining.insert(*user);
                self.present_former
                    .entry(channel_id)
                    .or_default()
                    .insert(*user);
            }
        }
        joined.extend(joining.iter().copied());
        w.subscribe(channel_id, &joining)
    }

    /// After the last message: former members still in leave; members who held nothing join.
    fn finish(self, w: &mut Writer) -> Result<(), ImportError> {
        for (channel_id, leaving) in self.present_former {
            if !leaving.is_empty() {
                w.push(
                    None,
                    Event::Unsubscribed {
                        channel_id,
                        user_ids: leaving.into_iter().collect(),
                    },
                )?;
            }
        }
        for (channel_id, users) in self.members {
            let joined = self.joined.get(&channel_id);
            let late: BTreeSet<UserId> = users
                .into_iter()
                .filter(|u| !joined.is_some_and(|j| j.contains(u)))
                .collect();
            w.subscribe(channel_id, &late)?;
        }
        Ok(())
    }
}

/// The read and starred flags of the copies, gathered as the messages go in and written at
/// the end: per person, their starred messages, the last message they hold in each place,
/// and their unread copies.
/// They are hashed maps, looked up for each of the copies (tens of millions in a large
/// export); the read marks go in by place, its key found once a message.
#[derive(Default)]
struct Flags {
    starred: FastMap<UserId, Vec<MessageId>>,
    last_held: FastMap<ReadKey, FastMap<UserId, MessageId>>,
    unread: FastMap<UserId, Vec<MessageId>>,
}

impl Flags {
    /// The copies `held` of `message_id` (Zulip's `flags_mask`: bit 0 read, bit 1 starred).
    fn add(&mut self, w: &Writer, message_id: MessageId, held: &[(UserId, u64)]) {
        let Some(message) = w.state.messages.get(message_id) else {
            return;
        };
        let key = match &message.recipient {
            crate::projections::message::Address::Channel { channel_id, .. } => {
                ReadKey::Channel(*channel_id)
            }
            crate::projections::message::Address::Direct { user_ids } => {
                ReadKey::Direct(user_ids.to_vec())
            }
        };
        let last_held = self.last_held.entry(key).or_default();
        for (user, mask) in held {
            if mask & 2 != 0 {
                self.starred.entry(*user).or_default().push(message_id);
            }
            if mask & 1 == 0 {
                self.unread.entry(*user).or_default().push(message_id);
            }
            let last = last_held.entry(*user).or_insert(message_id);
            *last = (*last).max(message_id);
        }
    }

    /// Each person's stars, a read mark at the last message they hold in each place, and
    /// their unread copies as the exceptions (history they hold no copy of, read before they
    /// came, is read). Answers the places given a mark.
    fn write(mut self, w: &mut Writer) -> Result<BTreeSet<(UserId, ReadKey)>, ImportError> {
        let mut given = BTreeSet::new();
        // By person, then place: the order the events go in.
        let marks: BTreeMap<(UserId, ReadKey), MessageId> = std::mem::take(&mut self.last_held)
            .into_iter()
            .flat_map(|(key, marks)| {
                marks
                    .into_iter()
                    .map(move |(user, mark)| ((user, key.clone()), mark))
            })
            .collect();
        let mut marks = marks.into_iter().peekable();
        while let Some(((user_id, _), _)) = marks.peek() {
            let user_id = *user_id;
            let mut starred = self.starred.remove(&user_id).unwrap_or_default();
            starred.sort();
            starred.dedup();
            w.star(user_id, starred)?;
            while let Some(((_, key), mark)) = marks.next_if(|((u, _), _)| *u == user_id) {
                let place = match &key {
                    ReadKey::Channel(c) => ReadPlace::Channel(*c),
                    ReadKey::Direct(users) => ReadPlace::Direct(users.clone()),
                };
                w.read_through(user_id, place, mark)?;
                given.insert((user_id, key));
            }
            let mut unread = self.unread.remove(&user_id).unwrap_or_default();
            if !unread.is_empty() {
                unread.sort();
                unread.dedup();
                w.push(
                    Some(user_id),
                    Event::MessageFlagsChanged {
                        user_id,
                        flag: crate::events::MessageFlag::Read,
                        add: false,
                        message_ids: unread,
                    },
                )?;
            }
        }
        Ok(given)
    }
}

/// Sends one message as first written, then replays its edits at their times (content, and
/// moves between topics); answers its new id, or `None` when nothing of it could be shown.
fn send_with_history(
    w: &mut Writer,
    p: &Pending,
    huddles: &HashMap<u64, BTreeSet<UserId>>,
    rewrite: &impl Fn(&str) -> String,
) -> Result<Option<MessageId>, ImportError> {
    let recipient = match &p.target {
        // In the topic it was first sent to, when moves are replayed below.
        Target::Channel(channel_id) => Recipient::Channel {
            channel_id: *channel_id,
            topic: super::clean_line(
                p.history
                    .iter()
                    .find_map(|e| e.prev_topic.as_deref())
                    .unwrap_or(&p.topic),
                60,
            ),
        },
        Target::Personal(receiver) => {
            let ids = BTreeSet::from([p.sender, *receiver]);
            Recipient::Direct {
                user_ids: ids.into_iter().collect(),
            }
        }
        Target::Huddle(rid) => {
            let mut ids = huddles.get(rid).cloned().unwrap_or_default();
            ids.insert(p.sender);
            Recipient::Direct {
                user_ids: ids.into_iter().collect(),
            }
        }
    };
    let first = p
        .history
        .iter()
        .find_map(|e| e.prev_content.as_deref())
        .unwrap_or(p.content.as_str());
    let replayed = !p.history.is_empty();
    let Some(message_id) = w.send(
        p.sender,
        recipient,
        &rewrite(first),
        p.sent_ms,
        if replayed { None } else { p.last_edit_ms },
    )?
    else {
        w.skip(
            "message",
            format!("message {}", p.old_id),
            "nothing to show once control characters are left out",
        );
        return Ok(None);
    };
    // Each edit, at its time, by its editor: the content it set, and the topic it moved the
    // message to (that message alone: Zulip records a move in each moved message).
    let mut topic_now = match &p.target {
        Target::Channel(_) => p
            .history
            .iter()
            .find_map(|e| e.prev_topic.as_deref())
            .map(|t| super::clean_line(t, 60)),
        _ => None,
    };
    for (i, edit) in p.history.iter().enumerate() {
        let later = &p.history[i + 1..];
        let content = match edit.prev_content {
            Some(_) => {
                let next = later
                    .iter()
                    .find_map(|e| e.prev_content.as_deref())
                    .unwrap_or(p.content.as_str());
                // Checked as a live edit is: no control characters, Zulip's length, not
                // empty.
                let content = super::clean_content(&rewrite(next));
                (!content.trim().is_empty()).then_some(content)
            }
            None => None,
        };
        let new_topic = match (&edit.prev_topic, &topic_now) {
            (Some(_), Some(current)) => {
                let next = edit
                    .topic
                    .as_deref()
                    .or_else(|| later.iter().find_map(|e| e.prev_topic.as_deref()))
                    .unwrap_or(p.topic.as_str());
                let next = super::clean_line(next, 60);
                (next != *current).then_some(next)
            }
            _ => None,
        };
        if content.is_none() && new_topic.is_none() {
            continue;
        }
        let content = content.map(|content| {
            let rendered = crate::markdown::render_message(
                &content,
                &crate::commands::markup::OrgResolver(&w.state),
            );
            Box::new(crate::commands::edit::edited_content(content, rendered))
        });
        if content.is_some() {
            w.count("edits", 1);
        }
        let moved = new_topic.map(|topic| {
            w.count("topic moves", 1);
            topic_now = Some(topic.clone());
            Box::new(crate::events::MessageMove {
                message_ids: vec![message_id],
                propagate_mode: crate::events::PropagateMode::ChangeOne,
                new_topic: Some(topic),
                new_channel_id: None,
            })
        });
        let user_id = edit.editor.unwrap_or(p.sender);
        w.push_at(
            Some(user_id),
            edit.at,
            Event::MessageEdited {
                message_id,
                user_id,
                content,
                moved,
                alerted: None,
            },
            None,
        )?;
    }
    Ok(Some(message_id))
}

/// The organization's linkifiers (before the messages, whose rendering they are part of),
/// custom profile fields with everyone's values, alert words and statuses: each through the
/// server's own command, as the person it belongs to (the owner for the organization's), so
/// what the server would refuse is skipped and reported.
fn organization_settings(
    realm: &Value,
    base: &str,
    w: &mut Writer,
    users: &FastMap<u64, UserId>,
    owner: UserId,
) -> Result<(), ImportError> {
    use crate::commands::{linkifiers, mutes, presence, profile_fields, reactions, Decision};
    let by_order = |name: &str| {
        let mut rows: Vec<&Value> = table(realm, name).iter().collect();
        rows.sort_by_key(|r| (r["order"].as_i64(), id(&r["id"])));
        rows
    };
    for f in by_order("zerver_realmfilter") {
        let request = linkifiers::LinkifierRequest {
            pattern: text(&f["pattern"]).to_owned(),
            url_template: text(&f["url_template"]).to_owned(),
            example_input: None,
            reverse_template: None,
            alternative_url_templates: Vec::new(),
        };
        match w.command(owner, None, |s, c| linkifiers::add_linkifier(s, c, request))? {
            Ok(_) => w.count("linkifiers", 1),
            Err(why) => w.skip(
                "linkifier",
                format!("{base}realm.json: linkifier {}", f["id"]),
                why,
            ),
        }
    }

    let mut fields: HashMap<u64, (crate::ids::FieldId, u8)> = HashMap::new();
    for f in by_order("zerver_customprofilefield") {
        let Some(old) = id(&f["id"]) else { continue };
        let at = format!("{base}realm.json: profile field {old}");
        let field_type = f["field_type"].as_u64().unwrap_or(1).min(u8::MAX.into()) as u8;
        // Zulip keeps `field_data` as JSON text ("" for types without data).
        let raw = text(&f["field_data"]);
        let field_data = match serde_json::from_str::<Value>(raw) {
            _ if raw.trim().is_empty() => Ok(None),
            Ok(data) => {
                profile_fields::parse_field_data(Some(data), field_type).map_err(|e| e.to_string())
            }
            Err(e) => Err(format!("its field_data is not JSON: {e}")),
        };
        let field_data = match field_data {
            Ok(data) => data,
            Err(why) => {
                w.skip("profile field", at, why);
                continue;
            }
        };
        let change = profile_fields::FieldChange {
            name: Some(text(&f["name"]).to_owned()),
            hint: Some(text(&f["hint"]).to_owned()),
            field_data,
            display_in_profile_summary: f["display_in_profile_summary"].as_bool(),
            required: f["required"].as_bool(),
            editable_by_user: f["editable_by_user"].as_bool(),
            use_for_user_matching: f["use_for_user_matching"].as_bool(),
        };
        match w.command(owner, None, |s, c| {
            profile_fields::create_field(s, c, field_type, change)
        })? {
            Ok(field_id) => {
                fields.insert(old, (field_id, field_type));
                w.count("profile fields", 1);
            }
            Err(why) => w.skip("profile field", at, why),
        }
    }
    for v in table(realm, "zerver_customprofilefieldvalue") {
        let (Some(user_id), Some(&(field_id, field_type))) = (
            id(&v["user_profile"]).and_then(|u| users.get(&u).copied()),
            id(&v["field"]).and_then(|f| fields.get(&f)),
        ) else {
            continue;
        };
        let at = format!("{base}realm.json: profile value {}", v["id"]);
        let raw = text(&v["value"]);
        let value = if field_type == profile_fields::USER {
            // The people of a users field are ids as JSON text ("[11, 12]"): renumbered.
            let people: Vec<Value> = serde_json::from_str::<Vec<u64>>(raw)
                .unwrap_or_default()
                .iter()
                .filter_map(|o| users.get(o))
                .map(|u| Value::from(u.0))
                .collect();
            if people.is_empty() {
                w.skip(
                    "profile value",
                    at,
                    format!("{raw:?} names nobody of the export"),
                );
                continue;
            }
            Value::Array(people)
        } else {
            Value::String(raw.to_owned())
        };
        let change = profile_fields::ValueChange { field_id, value };
        let set = w.command(owner, None, |s, _| {
            let me = s
                .users
                .get(owner)
                .ok_or_else(|| crate::error::ApiError::bad_request("no owner"))?;
            let events = profile_fields::value_events(s, me, user_id, vec![change], true)?;
            let set = !events.is_empty();
            Ok(Decision::new(events, set))
        })?;
        match set {
            Ok(true) => w.count("profile values", 1),
            Ok(false) => w.skip("profile value", at, "an empty value"),
            Err(why) => w.skip("profile value", at, why),
        }
    }

    let mut words: BTreeMap<UserId, Vec<String>> = BTreeMap::new();
    for a in table(realm, "zerver_alertword") {
        if let Some(user_id) = id(&a["user_profile"]).and_then(|u| users.get(&u).copied()) {
            words
                .entry(user_id)
                .or_default()
                .push(text(&a["word"]).to_owned());
        }
    }
    for (user_id, words) in words {
        let n = words.len() as u64;
        match w.command(user_id, None, |s, c| mutes::add_alert_words(s, c, words))? {
            Ok(()) => w.count("alert words", n),
            Err(why) => w.skip(
                "alert words",
                format!("{base}realm.json: user {user_id}'s alert words"),
                why,
            ),
        }
    }

    for st in table(realm, "zerver_userstatus") {
        let Some(user_id) = id(&st["user_profile"]).and_then(|u| users.get(&u).copied()) else {
            continue;
        };
        let status_text = text(&st["status_text"]).trim();
        let emoji_name = text(&st["emoji_name"]);
        if status_text.is_empty() && emoji_name.is_empty() {
            continue;
        }
        // A custom emoji's code in the export is its old id: looked up by name instead.
        let reaction_type = text(&st["reaction_type"]);
        let exact = !emoji_name.is_empty() && reaction_type != "realm_emoji";
        let request = presence::StatusRequest {
            away: None,
            status_text: (!status_text.is_empty()).then(|| status_text.to_owned()),
            emoji: reactions::EmojiRequest {
                emoji_name: (!emoji_name.is_empty()).then(|| emoji_name.to_owned()),
                emoji_code: exact.then(|| text(&st["emoji_code"]).to_owned()),
                reaction_type: exact.then(|| reaction_type.to_owned()),
            },
        };
        match w.command(user_id, ms(&st["timestamp"]), |s, c| {
            presence::set_status(s, c, None, request)
        })? {
            Ok(()) => w.count("statuses", 1),
            Err(why) => w.skip(
                "status",
                format!("{base}realm.json: status of user {}", st["user_profile"]),
                why,
            ),
        }
    }
    Ok(())
}

/// A message's edits, oldest first, from `edit_history` (a JSON string, newest first): content
/// edits (`prev_content`) and topic moves (`prev_topic`, or the legacy `prev_subject`, and
/// `topic`). A message that was moved between channels keeps its last place: its topic moves
/// are not replayed (its content edits are).
fn edit_history(raw: &Value, users: &FastMap<u64, UserId>) -> Vec<Edit> {
    let Some(text) = raw.as_str() else {
        return Vec::new();
    };
    let Ok(Value::Array(entries)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    // A message moved between channels keeps its last channel and topic for its whole life
    // here: a topic of another channel has no meaning in this one.
    let moved_channel = entries.iter().any(|e| !e["prev_stream"].is_null());
    let mut out: Vec<Edit> = entries
        .iter()
        .filter_map(|e| {
            let at = e["timestamp"].as_i64()?.checked_mul(1000)?;
            let prev_topic = e["prev_topic"]
                .as_str()
                .or_else(|| e["prev_subject"].as_str())
                .filter(|_| !moved_channel);
            let edit = Edit {
                prev_content: e["prev_content"].as_str().map(str::to_owned),
                prev_topic: prev_topic.map(str::to_owned),
                topic: e["topic"]
                    .as_str()
                    .filter(|_| prev_topic.is_some())
                    .map(str::to_owned),
                editor: e["user_id"].as_u64().and_then(|u| users.get(&u).copied()),
                at,
            };
            (edit.prev_content.is_some() || edit.prev_topic.is_some()).then_some(edit)
        })
        .collect();
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_links_get_their_new_paths() {
        let paths = HashMap::from([(
            "/user_uploads/2/ab/x/a.png".to_owned(),
            "/user_uploads/1/new/a.png".to_owned(),
        )]);
        assert_eq!(
            rewrite_uploads(
                "[a](/user_uploads/2/ab/x/a.png) and /user_uploads/2/zz/b.txt",
                &paths
            ),
            "[a](/user_uploads/1/new/a.png) and /user_uploads/2/zz/b.txt"
        );
    }

    #[test]
    fn mentions_get_the_new_ids() {
        let users: FastMap<u64, UserId> = [(12, UserId(3)), (7, UserId(9))].into_iter().collect();
        assert_eq!(
            rewrite_mentions(
                "hi @**Ada|12** and @_**Bob|7**, **bold** @**all** @**Eve|99**",
                &users
            ),
            "hi @**Ada|3** and @_**Bob|9**, **bold** @**all** @**Eve|99**"
        );
    }

    #[test]
    fn a_copy_row_field_of_the_wrong_type_is_as_if_missing() {
        let rows: Vec<CopyRow> = serde_json::from_str(
            r#"[{"user_profile": 3, "message": 18446744073709551615, "flags_mask": 0, "id": 1},
                {"user_profile": "3", "message": -1, "flags_mask": 1.5},
                {"user_profile": [1, {"a": [2]}], "message": {"x": null}, "flags_mask": null},
                {"user_profile": true}]"#,
        )
        .expect("rows of any types are read");
        let fields = |r: &CopyRow| (r.user_profile, r.message, r.flags_mask);
        assert_eq!(fields(&rows[0]), (Some(3), Some(u64::MAX), Some(0)));
        assert_eq!(fields(&rows[1]), (None, None, None));
        assert_eq!(fields(&rows[2]), (None, None, None));
        assert_eq!(fields(&rows[3]), (None, None, None));
    }
}

//! `chronicle export-to zulip`: an organization written out in the layout of Zulip's own export
//! (`manage.py export`, Zulip 10.2): a `.tar.gz` holding one directory with `realm.json`,
//! `messages-000001.json` (1,000 messages a file), `attachment.json`, `uploads/` and `emoji/`
//! with their `records.json`, and `migration_status.json`.
//!
//! Rows are written as Zulip's exporter writes them: foreign keys under the field's name
//! without `_id`, times as float UNIX seconds, a copy's flags as `flags_mask`, a message's edit
//! history as a JSON string, newest first. Ids are Chronicle's own (users, channels, messages);
//! recipients are numbered as Zulip numbers them per kind. What Chronicle does not keep
//! (avatars it generates, Zulip's per-version settings) is left out, and Zulip's importer takes
//! its defaults. The export is read back by `chronicle import-from zulip`; whether a Zulip
//! server's `manage.py import` accepts it also depends on `migration_status.json`, which names
//! Zulip 10.2's migrations: a 10.2 server compares it with its own (see docs/migration.md).

use super::ImportError;
use crate::ids::UserId;
use crate::projections::message::{flags, Address};
use crate::projections::Projections;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `migration_status.json` as a stock Zulip 10.2 server (the release tarball, its `uv.lock`'s
/// packages, migrated) writes it. Zulip 10.x's `manage.py import` compares each app's list of
/// lines, as a set, with its own and refuses a difference (an app missing on one side only
/// warns); the lists were rebuilt from the 10.2 tree and the pinned packages' migrations, see
/// docs/migration.md.
const ZULIP_10_2_MIGRATIONS: &str = include_str!("zulip_10_2_migration_status.json");

/// Linkifiers, custom profile fields with everyone's values, statuses and (in a full export)
/// alert words, as Zulip's tables.
fn settings_tables(state: &Projections, realm_id: u64, scope: &Scope) -> Value {
    use crate::events::ProfileFieldData;
    let linkifiers: Vec<Value> = state
        .linkifiers
        .ordered()
        .iter()
        .enumerate()
        .map(|(order, l)| {
            json!({"id": l.id.0, "realm": realm_id, "pattern": l.spec.pattern,
                   "url_template": l.spec.url_template, "order": order})
        })
        .collect();
    let fields: Vec<Value> = state
        .profile_fields
        .ordered()
        .iter()
        .enumerate()
        .map(|(order, f)| {
            // Zulip keeps `field_data` as JSON text, "" for the types without data.
            let data = match &f.spec.field_data {
                ProfileFieldData::None => String::new(),
                ProfileFieldData::Choices(choices) => json!(choices
                    .iter()
                    .map(|(k, c)| (k.clone(), json!({"text": c.text, "order": c.order})))
                    .collect::<serde_json::Map<_, _>>())
                .to_string(),
                ProfileFieldData::ExternalAccount {
                    subtype,
                    url_pattern,
                } => {
                    let mut data = json!({"subtype": subtype});
                    if let Some(pattern) = url_pattern {
                        data["url_pattern"] = json!(pattern);
                    }
                    data.to_string()
                }
            };
            json!({"id": f.id.0, "realm": realm_id, "name": f.spec.name, "hint": f.spec.hint,
                   "order": order, "field_type": f.spec.field_type, "field_data": data,
                   "display_in_profile_summary": f.spec.display_in_profile_summary,
                   "required": f.spec.required, "editable_by_user": f.spec.editable_by_user})
        })
        .collect();
    let mut values = Vec::new();
    let mut statuses = Vec::new();
    let mut alert_words = Vec::new();
    for user in state.users.iter() {
        for (field_id, v) in state
            .profile_fields
            .values_of(user.user_id)
            .into_iter()
            .flatten()
        {
            values.push(
                json!({"id": values.len() + 1, "user_profile": user.user_id.0,
                               "field": field_id.0, "value": v.value,
                               "rendered_value": v.rendered_value}),
            );
        }
        if let Some(status) = state.user_status.get(user.user_id) {
            let (name, code, kind) = match &status.emoji {
                Some(e) => (
                    e.emoji_name.as_str(),
                    e.emoji_code.as_str(),
                    e.reaction_type.as_str(),
                ),
                None => ("", "", "unicode_emoji"),
            };
            statuses.push(
                json!({"id": statuses.len() + 1, "user_profile": user.user_id.0,
                                 "timestamp": seconds(crate::time::now_ms()), "client": 1,
                                 "status_text": status.status_text, "emoji_name": name,
                                 "emoji_code": code, "reaction_type": kind}),
            );
        }
        if scope.private_of(user.user_id.0) {
            for word in state.alert_words.of(user.user_id) {
                alert_words.push(json!({"id": alert_words.len() + 1, "realm": realm_id,
                                        "user_profile": user.user_id.0, "word": word}));
            }
        }
    }
    json!({
        "zerver_realmfilter": linkifiers,
        "zerver_customprofilefield": fields,
        "zerver_customprofilefieldvalue": values,
        "zerver_userstatus": statuses,
        "zerver_alertword": alert_words,
    })
}

/// A `messages-NNNNNN.json` file.
#[derive(serde::Serialize)]
struct MessageFile {
    zerver_message: Vec<Value>,
    zerver_usermessage: Vec<CopyRow>,
}

/// One person's copy of a message, as a `zerver_usermessage` row (tens of millions of them in
/// a large organization: written from a struct, not built as JSON values).
#[derive(serde::Serialize)]
struct CopyRow {
    id: u64,
    user_profile: u64,
    message: u64,
    flags_mask: u64,
}

/// Zulip's `flags_mask` bits for Chronicle's flag bits.
fn zulip_mask(bits: u8, direct: bool) -> u64 {
    let mut mask = 0;
    for (ours, theirs) in [
        (flags::READ, 1),
        (flags::STARRED, 2),
        (flags::COLLAPSED, 4),
        (flags::MENTIONED, 8),
        (flags::STREAM_WILDCARD, 16),
        (flags::TOPIC_WILDCARD, 32),
        (flags::HAS_ALERT_WORD, 512),
    ] {
        if bits & ours != 0 {
            mask |= theirs;
        }
    }
    if direct {
        mask |= 2048;
    }
    mask
}

fn seconds(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

/// Writes the export of `state` (and the files in `uploads`) to `out` (a `.tar.gz`).
pub fn export(
    state: &Projections,
    uploads: &crate::uploads::UploadStore,
    out: &Path,
) -> Result<BTreeMap<String, u64>, ImportError> {
    write(state, uploads, out, &Scope::Everything)
}

/// What an export holds.
#[derive(Debug, Clone)]
pub enum Scope {
    /// The whole organization (`chronicle export-to zulip`; Zulip's full export).
    Everything,
    /// The public data only (Zulip's `export_type` 1): people, public channels with their
    /// subscriptions and messages, the files those link, custom emoji, groups, linkifiers,
    /// profile fields; no private channel, no direct message, nobody's muted people or alert
    /// words.
    Public,
    /// The public data and the private data of the members who consented
    /// (`allow_private_data_export`; Zulip's `export_type` 2): the private channels and direct
    /// messages one of them holds, with their own copies, subscriptions, muted people, topic
    /// settings and alert words. As in Zulip, the active people who did not consent come as
    /// deactivated accounts (`is_mirror_dummy`), holding only public data.
    Consented(std::collections::BTreeSet<UserId>),
}

impl Scope {
    /// Whether `user`'s private data goes in.
    fn private_of(&self, user: u64) -> bool {
        match self {
            Scope::Everything => true,
            Scope::Public => false,
            Scope::Consented(ids) => ids.contains(&UserId(user)),
        }
    }

    /// The members who consented to an export of their private data.
    pub fn consented(state: &Projections) -> Scope {
        Scope::Consented(
            state
                .export_consents()
                .filter_map(|(user_id, consented)| consented.then_some(user_id))
                .collect(),
        )
    }
}

/// Writes the export of `scope` to `out`.
pub fn write(
    state: &Projections,
    uploads: &crate::uploads::UploadStore,
    out: &Path,
    scope: &Scope,
) -> Result<BTreeMap<String, u64>, ImportError> {
    // Everything but the messages, which are walked one at a time below.
    let dump = state.dump_without_messages();
    // Private channels a member whose private data goes in is or was in.
    let consenting_member: std::collections::BTreeSet<u64> = dump["channels"]["subscriptions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["user_id"].as_u64().is_some_and(|u| scope.private_of(u)))
        .filter_map(|s| s["stream_id"].as_u64())
        .collect();
    let realm_id = crate::projections::emoji::REALM_ID;
    let scratch = tempfile::tempdir()?;
    let dir_name = "zulip-export-chronicle";
    let root = scratch.path().join(dir_name);
    std::fs::create_dir_all(&root)?;
    let mut counts = BTreeMap::new();

    // Recipients, as Zulip numbers them: one per user (personal), per channel, per group
    // conversation.
    let mut recipients: Vec<Value> = Vec::new();
    let mut personal: BTreeMap<u64, u64> = BTreeMap::new();
    let mut channel_recipient: BTreeMap<u64, u64> = BTreeMap::new();
    let mut huddle_recipient: BTreeMap<Vec<UserId>, u64> = BTreeMap::new();
    let users = dump["users"].as_array().cloned().unwrap_or_default();
    for u in &users {
        let id = u["user_id"].as_u64().unwrap_or_default();
        let rid = recipients.len() as u64 + 1;
        recipients.push(json!({"id": rid, "type": 1, "type_id": id}));
        personal.insert(id, rid);
    }
    let channels: Vec<Value> = dump["channels"]["channels"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| {
            matches!(scope, Scope::Everything)
                || c["invite_only"] != true
                || c["stream_id"]
                    .as_u64()
                    .is_some_and(|id| consenting_member.contains(&id))
        })
        .collect();
    let public_channel: std::collections::BTreeSet<u64> = channels
        .iter()
        .filter(|c| c["invite_only"] != true)
        .filter_map(|c| c["stream_id"].as_u64())
        .collect();
    for c in &channels {
        let id = c["stream_id"].as_u64().unwrap_or_default();
        let rid = recipients.len() as u64 + 1;
        recipients.push(json!({"id": rid, "type": 2, "type_id": id}));
        channel_recipient.insert(id, rid);
    }
    let mut huddles = Vec::new();
    // A direct message goes in when one of its people's private data does.
    let direct_kept = |user_ids: &[UserId]| user_ids.iter().any(|u| scope.private_of(u.0));
    for m in state.messages.all() {
        if let Address::Direct { user_ids } = &m.recipient {
            if !direct_kept(user_ids) {
                continue;
            }
            if user_ids.len() > 2 && !huddle_recipient.contains_key(&user_ids.to_vec()) {
                let rid = recipients.len() as u64 + 1;
                let huddle_id = huddles.len() as u64 + 1;
                let ids: Vec<String> = user_ids.iter().map(|u| u.0.to_string()).collect();
                use sha1::Digest;
                let hash: String = sha1::Sha1::digest(ids.join(",").as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                huddles.push(json!({"id": huddle_id, "huddle_hash": hash,
                                    "recipient": rid, "group_size": user_ids.len()}));
                recipients.push(json!({"id": rid, "type": 3, "type_id": huddle_id}));
                huddle_recipient.insert(user_ids.to_vec(), rid);
            }
        }
    }

    let user_rows: Vec<Value> = users
        .iter()
        .map(|u| {
            let mut row = json!({
                "id": u["user_id"], "email": u["email"], "delivery_email": u["email"],
                "full_name": u["full_name"], "role": u["role"], "is_active": u["is_active"],
                "is_bot": !u["bot_type"].is_null(), "bot_type": u["bot_type"],
                "bot_owner": u["bot_owner_id"], "timezone": u["timezone"],
                "date_joined": seconds(u["date_joined_ms"].as_i64().unwrap_or_default()),
                "realm": realm_id, "is_mirror_dummy": false,
                "avatar_source": if u["avatar"].is_object() { "U" } else { "G" },
                "avatar_version": u["avatar_version"],
                "recipient": personal.get(&u["user_id"].as_u64().unwrap_or_default()),
            });
            // In an export with consent, those who did not consent come as deactivated
            // accounts (Zulip's mirror dummies).
            let id = u["user_id"].as_u64().unwrap_or_default();
            if matches!(scope, Scope::Consented(_))
                && u["is_active"] == true
                && u["bot_type"].is_null()
                && !scope.private_of(id)
            {
                row["is_active"] = json!(false);
                row["is_mirror_dummy"] = json!(true);
            }
            row
        })
        .collect();
    counts.insert("users".into(), user_rows.len() as u64);
    let stream_rows: Vec<Value> = channels
        .iter()
        .map(|c| {
            let id = c["stream_id"].as_u64().unwrap_or_default();
            let created = c["date_created_ms"].as_i64().unwrap_or_default();
            json!({
                "id": id, "name": c["name"], "description": c["description"],
                "invite_only": c["invite_only"], "is_web_public": c["is_web_public"],
                "history_public_to_subscribers": c["history_public_to_subscribers"],
                "message_retention_days": c["message_retention_days"],
                "deactivated": c["is_archived"], "date_created": seconds(created),
                "creator": null, "realm": realm_id, "recipient": channel_recipient.get(&id),
            })
        })
        .collect();
    counts.insert("channels".into(), stream_rows.len() as u64);
    let defaults: Vec<Value> = channels
        .iter()
        .filter(|c| c["is_default"] == true)
        .enumerate()
        .map(|(i, c)| json!({"id": i + 1, "stream": c["stream_id"], "realm": realm_id}))
        .collect();
    // Subscriptions: everyone's own personal one, channel ones with their settings, and the
    // members of each group conversation.
    let mut subscriptions: Vec<Value> = Vec::new();
    let mut sub = |mut row: Value| {
        row["id"] = json!(subscriptions.len() + 1);
        subscriptions.push(row);
    };
    for (user, rid) in &personal {
        sub(
            json!({"user_profile": user, "recipient": rid, "active": true, "is_user_active": true,
                   "is_muted": false, "color": "#c2c2c2", "pin_to_top": false}),
        );
    }
    for s in dump["channels"]["subscriptions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(rid) = s["stream_id"]
            .as_u64()
            .and_then(|c| channel_recipient.get(&c))
        else {
            continue;
        };
        // Who is in a private channel is its members' private data.
        let private = s["stream_id"]
            .as_u64()
            .is_some_and(|c| !public_channel.contains(&c));
        if private && !s["user_id"].as_u64().is_some_and(|u| scope.private_of(u)) {
            continue;
        }
        sub(json!({
            "user_profile": s["user_id"], "recipient": rid, "active": s["active"],
            "is_user_active": true, "is_muted": s["is_muted"], "color": s["color"],
            "pin_to_top": s["pin_to_top"], "desktop_notifications": s["desktop_notifications"],
            "audible_notifications": s["audible_notifications"],
            "push_notifications": s["push_notifications"],
            "email_notifications": s["email_notifications"],
            "wildcard_mentions_notify": s["wildcard_mentions_notify"],
        }));
    }
    for (members, rid) in &huddle_recipient {
        for user in members {
            sub(
                json!({"user_profile": user.0, "recipient": rid, "active": true,
                       "is_user_active": true, "is_muted": false, "color": "#c2c2c2",
                       "pin_to_top": false}),
            );
        }
    }

    // Messages and each holder's copy, 1,000 to a file.
    let mut reactions = Vec::new();
    let mut chunk: Vec<Value> = Vec::new();
    let mut copies: Vec<CopyRow> = Vec::new();
    let mut file_number = 0;
    let mut usermessage_id = 0u64;
    let write_chunk = |chunk: &mut Vec<Value>,
                       copies: &mut Vec<CopyRow>,
                       n: &mut u32|
     -> Result<(), ImportError> {
        *n += 1;
        let body = MessageFile {
            zerver_message: std::mem::take(chunk),
            zerver_usermessage: std::mem::take(copies),
        };
        let file = std::fs::File::create(root.join(format!("messages-{n:06}.json")))?;
        let mut out = std::io::BufWriter::new(file);
        serde_json::to_writer(&mut out, &body).map_err(|e| ImportError::new(e.to_string()))?;
        std::io::Write::flush(&mut out)?;
        Ok(())
    };
    let mut message_count = 0;
    let mut exported = std::collections::BTreeSet::new();
    for m in state.messages.all() {
        // Private messages (in a private channel, or direct) go in when one who holds them
        // has their private data exported; then only such people's copies go with them.
        let private = match &m.recipient {
            Address::Channel { channel_id, .. } => !public_channel.contains(&channel_id.0),
            Address::Direct { .. } => true,
        };
        let kept = match &m.recipient {
            Address::Channel { channel_id, .. } => {
                channel_recipient.contains_key(&channel_id.0)
                    && (!private
                        || matches!(scope, Scope::Everything)
                        || state
                            .messages
                            .holders(m.id)
                            .into_iter()
                            .any(|h| scope.private_of(h.0)))
            }
            Address::Direct { user_ids } => direct_kept(user_ids),
        };
        if !kept {
            continue;
        }
        exported.insert(m.id.0);
        let (recipient, subject, direct) = match &m.recipient {
            Address::Channel { channel_id, topic } => (
                channel_recipient.get(&channel_id.0).copied(),
                topic.to_string(),
                false,
            ),
            Address::Direct { user_ids } => {
                let rid = if user_ids.len() > 2 {
                    huddle_recipient.get(&user_ids.to_vec()).copied()
                } else {
                    // A one-to-one message is addressed to the other person (to oneself: one's own).
                    let other = user_ids
                        .iter()
                        .find(|u| **u != m.sender_id)
                        .unwrap_or(&m.sender_id);
                    personal.get(&other.0).copied()
                };
                (rid, String::new(), true)
            }
        };
        // Edit history, newest first, as Zulip keeps it.
        let mut history: Vec<Value> = m
            .edits()
            .iter()
            .map(|e| {
                let mut entry = json!({"user_id": e.user_id.0, "timestamp": e.timestamp});
                if let Some((raw, rendered)) = &e.prev_content {
                    entry["prev_content"] = json!(&**raw);
                    entry["prev_rendered_content"] = json!(&**rendered);
                }
                if let Some(topic) = &e.prev_topic {
                    entry["prev_topic"] = json!(topic);
                }
                entry
            })
            .collect();
        history.reverse();
        let last_edit = m.extra.as_ref().and_then(|e| e.last_edit_timestamp);
        chunk.push(json!({
            "id": m.id.0, "sender": m.sender_id.0, "recipient": recipient, "realm": realm_id,
            "type": 1, "subject": subject, "content": &*m.content,
            "rendered_content": m.rendered_content(), "rendered_content_version": 1,
            "date_sent": m.timestamp as f64, "sending_client": 1,
            "last_edit_time": last_edit.map(|t| t as f64),
            "edit_history": (!history.is_empty()).then(|| Value::Array(history).to_string()),
            "has_attachment": m.content.contains("/user_uploads/"),
            "has_image": m.rendered_content().contains("class=\"message_inline_image\""),
            "has_link": m.content.contains("://"),
            "is_channel_message": !direct,
        }));
        for holder in state.messages.holders(m.id) {
            if private && !scope.private_of(holder.0) {
                continue;
            }
            if let Some(bits) = state.messages.flags(holder, m.id) {
                usermessage_id += 1;
                copies.push(CopyRow {
                    id: usermessage_id,
                    user_profile: holder.0,
                    message: m.id.0,
                    flags_mask: zulip_mask(bits, direct),
                });
            }
        }
        for r in m.reactions() {
            // Who reacted to a private message is their private data too.
            if private && !scope.private_of(r.user_id.0) {
                continue;
            }
            reactions.push(json!({
                "id": reactions.len() + 1, "message": m.id.0, "user_profile": r.user_id.0,
                "emoji_name": r.emoji_name, "emoji_code": r.emoji_code,
                "reaction_type": r.reaction_type.as_str(),
            }));
        }
        message_count += 1;
        if chunk.len() == 1000 {
            write_chunk(&mut chunk, &mut copies, &mut file_number)?;
        }
    }
    if !chunk.is_empty() || file_number == 0 {
        write_chunk(&mut chunk, &mut copies, &mut file_number)?;
    }
    counts.insert("messages".into(), message_count);
    counts.insert("reactions".into(), reactions.len() as u64);

    // Uploaded avatars (Zulip's importer needs the directory and its records.json, even
    // empty): the 500-pixel image as the original, the 100-pixel one beside it.
    std::fs::create_dir_all(root.join("avatars").join(realm_id.to_string()))?;
    let mut avatar_records = Vec::new();
    for u in &users {
        let (Some(id), Some(small), Some(medium)) = (
            u["user_id"].as_u64(),
            u["avatar"]["sha256"].as_str(),
            u["avatar"]["medium_sha256"].as_str(),
        ) else {
            continue;
        };
        let version = u["avatar_version"].as_u64().unwrap_or(1);
        let stem = format!("{realm_id}/{id}-{version}");
        for (path, sha256) in [
            (format!("{stem}.original"), medium),
            (format!("{stem}.png"), small),
        ] {
            let bytes = uploads.read(sha256)?;
            std::fs::write(root.join("avatars").join(&path), &bytes)?;
            avatar_records.push(json!({
                "realm_id": realm_id, "user_profile_id": id, "user_profile_email": u["email"],
                "avatar_version": version, "s3_path": path, "path": path, "size": bytes.len(),
                "last_modified": seconds(crate::time::now_ms()), "content_type": "image/png",
            }));
        }
    }
    counts.insert("avatars".into(), (avatar_records.len() / 2) as u64);
    std::fs::write(
        root.join("avatars/records.json"),
        Value::Array(avatar_records).to_string(),
    )?;

    // Custom emoji, with their images.
    std::fs::create_dir_all(root.join("emoji"))?;
    let mut emoji_rows = Vec::new();
    let mut emoji_records = Vec::new();
    for e in state.custom_emoji.iter() {
        let extension = e.content_type.rsplit('/').next().unwrap_or("png");
        let file_name = format!("{}.{extension}", e.id.0);
        let path = format!("{realm_id}/emoji/images/{file_name}");
        let target = root.join("emoji").join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, &e.image.0[..])?;
        emoji_rows.push(json!({"id": e.id.0, "name": e.name, "file_name": file_name,
                               "author": e.author_id.map(|a| a.0), "deactivated": e.deactivated,
                               "is_animated": false, "realm": realm_id}));
        emoji_records.push(
            json!({"realm_id": realm_id, "author": e.author_id.map(|a| a.0),
                                  "path": path, "s3_path": path, "file_name": file_name,
                                  "name": e.name, "deactivated": e.deactivated}),
        );
    }
    counts.insert("custom emoji".into(), emoji_rows.len() as u64);
    std::fs::write(
        root.join("emoji/records.json"),
        Value::Array(emoji_records).to_string(),
    )?;

    // Uploads, with their bytes.
    std::fs::create_dir_all(root.join("uploads"))?;
    let mut upload_records = Vec::new();
    let mut attachment_rows = Vec::new();
    for a in dump["attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| {
            matches!(scope, Scope::Everything)
                || a["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|m| m.as_u64().is_some_and(|m| exported.contains(&m)))
        })
    {
        // The messages it is linked from, of those exported.
        let linked: Vec<u64> = a["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .filter(|m| exported.contains(m))
            .collect();
        let path = a["path_id"].as_str().unwrap_or_default();
        let bytes = uploads.read(a["sha256"].as_str().unwrap_or_default())?;
        let target = root.join("uploads").join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, &bytes)?;
        let created = seconds(a["created_ms"].as_i64().unwrap_or_default());
        upload_records.push(
            json!({"realm_id": realm_id, "user_profile_id": a["owner_id"],
                                   "path": path, "s3_path": path, "size": bytes.len(),
                                   "content_type": a["content_type"], "last_modified": created}),
        );
        attachment_rows.push(
            json!({"id": a["id"], "file_name": a["name"], "path_id": path,
                                    "owner": a["owner_id"], "realm": realm_id,
                                    "create_time": created, "size": a["size"],
                                    "content_type": a["content_type"], "is_realm_public": false,
                                    "is_web_public": false, "messages": linked,
                                    "scheduled_messages": []}),
        );
    }
    counts.insert("files".into(), upload_records.len() as u64);
    std::fs::write(
        root.join("uploads/records.json"),
        Value::Array(upload_records).to_string(),
    )?;
    std::fs::write(
        root.join("attachment.json"),
        json!({"zerver_attachment": attachment_rows}).to_string(),
    )?;

    // User groups: Zulip's ids are Chronicle's; the named ones, system groups included.
    let mut group_rows = Vec::new();
    let mut named = Vec::new();
    let mut memberships = Vec::new();
    let mut subgroups = Vec::new();
    for g in dump["groups"].as_array().into_iter().flatten() {
        let id = g["id"].clone();
        group_rows.push(json!({"id": id, "realm": realm_id}));
        named.push(json!({"usergroup_ptr": id, "name": g["name"], "description": g["description"],
                          "is_system_group": !g["system"].is_null(), "deactivated": g["deactivated"],
                          "realm_for_sharding": realm_id,
                          "date_created": seconds(g["date_created_ms"].as_i64().unwrap_or_default()),
                          "creator": g["creator_id"]}));
        for u in g["members"].as_array().into_iter().flatten() {
            memberships
                .push(json!({"id": memberships.len() + 1, "user_group": id, "user_profile": u}));
        }
        for s in g["subgroups"].as_array().into_iter().flatten() {
            subgroups.push(json!({"id": subgroups.len() + 1, "supergroup": id, "subgroup": s}));
        }
    }
    let topics: Vec<Value> = dump["user_topics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| {
            t["stream_id"]
                .as_u64()
                .is_some_and(|c| channel_recipient.contains_key(&c))
                && (t["stream_id"]
                    .as_u64()
                    .is_some_and(|c| public_channel.contains(&c))
                    || t["user_id"].as_u64().is_some_and(|u| scope.private_of(u)))
        })
        .enumerate()
        .map(|(i, t)| {
            json!({"id": i + 1, "user_profile": t["user_id"], "stream": t["stream_id"],
                   "recipient": t["stream_id"].as_u64().and_then(|c| channel_recipient.get(&c)),
                   "topic_name": t["topic_name"], "visibility_policy": t["visibility_policy"],
                   "last_updated": t["last_updated"].as_f64()})
        })
        .collect();
    let mut muted = Vec::new();
    for (user, list) in dump["muted_users"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(user, _)| user.parse::<u64>().is_ok_and(|u| scope.private_of(u)))
    {
        for entry in list.as_array().into_iter().flatten() {
            muted.push(json!({"id": muted.len() + 1, "user_profile": user.parse::<u64>().ok(),
                              "muted_user": entry["id"], "date_muted": entry["timestamp"].as_f64()}));
        }
    }
    let settings = settings_tables(state, realm_id, scope);
    let realm_row = json!({
        "id": realm_id, "name": dump["realm"]["name"], "description": dump["realm"]["description"],
        "string_id": "", "date_created": seconds(dump["realm"]["date_created_ms"].as_i64().unwrap_or_default()),
    });
    let realm = json!({
        "zerver_realm": [realm_row],
        "zerver_userprofile": user_rows,
        "zerver_userprofile_mirrordummy": [],
        "zerver_userprofile_crossrealm": [],
        "zerver_stream": stream_rows,
        "zerver_defaultstream": defaults,
        "zerver_recipient": recipients,
        "zerver_huddle": huddles,
        "zerver_subscription": subscriptions,
        "zerver_reaction": reactions,
        "zerver_realmemoji": emoji_rows,
        "zerver_usergroup": group_rows,
        "zerver_namedusergroup": named,
        "zerver_usergroupmembership": memberships,
        "zerver_groupgroupmembership": subgroups,
        "zerver_usertopic": topics,
        "zerver_muteduser": muted,
        // Every message names its client: one, Chronicle's import/export.
        "zerver_client": [{"id": 1, "name": "Chronicle"}],
    });
    let mut realm = realm;
    if let (Value::Object(realm), Value::Object(settings)) = (&mut realm, settings) {
        realm.extend(settings);
    }
    std::fs::write(
        root.join("realm.json"),
        serde_json::to_vec_pretty(&realm).map_err(|e| ImportError::new(e.to_string()))?,
    )?;
    std::fs::write(root.join("migration_status.json"), ZULIP_10_2_MIGRATIONS)?;
    // The tarball, as Zulip writes it: one top-level directory.
    // Every private message and address is in it: readable by its owner only.
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(out)?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.append_dir(dir_name, &root)?;
    for (relative, path) in in_reading_order(&root)? {
        let name = format!("{dir_name}/{relative}");
        if path.is_dir() {
            tar.append_dir(&name, &path)?;
        } else {
            tar.append_path_with_name(&path, &name)?;
        }
    }
    tar.into_inner()?.finish()?.sync_all()?;
    Ok(counts)
}

/// The files and directories under `root` (names relative to it, `/`-separated) in the order
/// an importer reads them: `realm.json` and the other tables, then the directories of avatars,
/// emoji and uploads, then the message files by number. Zulip's own tarball follows its file
/// system's order; in this one, Chronicle's importer reads each entry as it is inflated.
fn in_reading_order(root: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut found = Vec::new();
    let mut stack = vec![(String::new(), root.to_path_buf())];
    while let Some((prefix, dir)) = stack.pop() {
        for item in std::fs::read_dir(&dir)? {
            let item = item?;
            let name = format!("{prefix}{}", item.file_name().to_string_lossy());
            if item.file_type()?.is_dir() {
                stack.push((format!("{name}/"), item.path()));
            }
            found.push((name, item.path()));
        }
    }
    let rank = |name: &str| match name {
        "realm.json" => 0,
        _ if name.starts_with("messages-") => 3,
        _ if name.contains('/') || !name.ends_with(".json") => 2,
        _ => 1,
    };
    found.sort_by(|(a, _), (b, _)| (rank(a), a).cmp(&(rank(b), b)));
    Ok(found)
}

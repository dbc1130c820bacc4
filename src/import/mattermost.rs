//! Mattermost's bulk export: the `mmctl export` zip (`import.jsonl` with `data/` beside it) or
//! its bare `import.jsonl`, and the older command line's `export.json` (with `exported_emoji/`
//! and `data/` beside it, in a directory).
//!
//! One JSON object per line, `{"type": T, T: {...}}`. What comes along: people (names, emails,
//! roles, deactivated people), teams (with `--team NAME` one team; otherwise every team, each a
//! channel folder of its channels), channels (display name, purpose, private or public, the
//! default ones), memberships (muted as Mattermost's "mentions only", favorites pinned, read up
//! to `last_viewed_at`), posts and replies (a root post with replies starts a topic, see
//! [`super::thread_topic`]; replies are put in time order whatever their order in the file),
//! direct and group messages, reactions (custom emoji too), `flagged_by` as starred, `edit_at`
//! as the last edit time, and attached files with their bytes. System notices (joins, leaves,
//! header changes) are dropped.

use super::archive::Archive;
use super::{thread_topic, unique_name, ImportError, NewChannel, NewUser, Options, Taken, Writer};
use crate::events::{ReadPlace, Recipient, Role, SubscriptionProperty};
use crate::ids::{ChannelId, MessageId, UserId};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The topic of posts that started no thread.
pub const MAIN_TOPIC: &str = "imported from Mattermost";

/// Mattermost's default channels (every member of a team is in them).
const DEFAULT_CHANNELS: [&str; 2] = ["town-square", "off-topic"];

struct Team {
    name: String,
    display_name: String,
    description: String,
}

struct Channel {
    team: String,
    name: String,
    display_name: String,
    private: bool,
    purpose: String,
}

struct Membership {
    team: String,
    channel: String,
    last_viewed_at: Option<i64>,
    muted: bool,
    favorite: bool,
}

/// A bot of the export (`{"type": "bot"}`, newer exports).
struct Bot {
    username: String,
    owner: String,
    display_name: String,
    deleted: bool,
}

struct Person {
    username: String,
    email: String,
    full_name: String,
    roles: String,
    deleted: bool,
    /// The profile picture's path under `data/`, when the export has one.
    profile_image: String,
    teams: BTreeSet<String>,
    memberships: Vec<Membership>,
}

/// A post or a reply, as read.
struct Post {
    line: usize,
    /// A channel post's team and channel, or a direct post's members.
    place: PostPlace,
    user: String,
    message: String,
    create_at: i64,
    edit_at: Option<i64>,
    kind: String,
    flagged_by: Vec<String>,
    reactions: Vec<(String, String, i64)>,
    attachments: Vec<String>,
    /// The root's index for a reply.
    root: Option<usize>,
    has_replies: bool,
}

#[derive(Clone)]
enum PostPlace {
    Channel { team: String, channel: String },
    Direct(Vec<String>),
}

/// Milliseconds within years 1970 to 3000.
fn valid_ms(t: &i64) -> bool {
    (1..32_503_680_000_000).contains(t)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// The JSON Lines entry of the export, and the directory its paths are relative to.
fn find_lines(archive: &Archive) -> Result<(String, String), ImportError> {
    let names: Vec<&str> = archive.names().collect();
    for wanted in ["import.jsonl", "export.json"] {
        if let Some(name) = names
            .iter()
            .filter(|n| **n == wanted || n.ends_with(&format!("/{wanted}")))
            .min_by_key(|n| n.len())
        {
            let base = name.strip_suffix(wanted).unwrap_or_default().to_owned();
            return Ok(((*name).to_owned(), base));
        }
    }
    if let Some(name) = names
        .iter()
        .find(|n| !n.contains('/') && n.ends_with(".jsonl"))
        .or(match names.as_slice() {
            // A single JSON Lines file given by path, whatever its name.
            [only] => Some(only),
            _ => None,
        })
    {
        return Ok(((*name).to_owned(), String::new()));
    }
    Err(ImportError::new(
        "import.jsonl: missing from the export (Mattermost's bulk export holds import.jsonl, or \
         export.json for the older command line)",
    ))
}

fn post_of(value: &Value, line: usize, place: PostPlace) -> Post {
    let reactions = value["reactions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| {
            Some((
                r["user"].as_str()?.to_owned(),
                r["emoji_name"].as_str()?.to_owned(),
                r["create_at"].as_i64().filter(valid_ms).unwrap_or(0),
            ))
        })
        .collect();
    let attachments = value["attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["path"].as_str().map(str::to_owned))
        .collect();
    Post {
        line,
        place,
        user: text(&value["user"]).to_owned(),
        message: text(&value["message"]).to_owned(),
        create_at: value["create_at"].as_i64().filter(valid_ms).unwrap_or(-1),
        edit_at: value["edit_at"].as_i64().filter(valid_ms),
        kind: text(&value["type"]).to_owned(),
        flagged_by: strings(&value["flagged_by"]),
        reactions,
        attachments,
        root: None,
        has_replies: false,
    }
}

/// What the file holds, read in one pass.
#[derive(Default)]
struct Export {
    teams: Vec<Team>,
    channels: Vec<Channel>,
    people: Vec<Person>,
    emoji: Vec<(String, String)>,
    bots: Vec<Bot>,
    posts: Vec<Post>,
}

fn read(archive: &mut Archive, w: &mut Writer, file: &str) -> Result<Export, ImportError> {
    let bytes = archive.read(file)?;
    let mut export = Export::default();
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = i + 1;
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let object: Value = serde_json::from_slice(raw).map_err(|e| {
            ImportError::new(format!(
                "{file}: line {line} is not valid JSON (column {}: {e})",
                e.column()
            ))
        })?;
        let kind = text(&object["type"]).to_owned();
        let body = &object[kind.as_str()];
        match kind.as_str() {
            "version" => {
                if object["version"].as_i64() != Some(1) {
                    return Err(ImportError::new(format!(
                        "{file}: line {line}: version {} of Mattermost's format; only version 1 \
                         exists",
                        object["version"]
                    )));
                }
            }
            "team" => export.teams.push(Team {
                name: text(&body["name"]).to_owned(),
                display_name: text(&body["display_name"]).to_owned(),
                description: text(&body["description"]).to_owned(),
            }),
            "channel" => export.channels.push(Channel {
                team: text(&body["team"]).to_owned(),
                name: text(&body["name"]).to_owned(),
                display_name: text(&body["display_name"]).to_owned(),
                private: text(&body["type"]) == "P",
                purpose: [&body["purpose"], &body["header"]]
                    .iter()
                    .map(|v| text(v))
                    .find(|s| !s.is_empty())
                    .unwrap_or_default()
                    .to_owned(),
            }),
            "user" => {
                let first = text(&body["first_name"]).trim();
                let last = text(&body["last_name"]).trim();
                let username = text(&body["username"]).to_owned();
                let full_name = match (first, last) {
                    ("", "") => [text(&body["nickname"]).trim(), username.as_str()]
                        .into_iter()
                        .find(|s| !s.is_empty())
                        .unwrap_or("Mattermost user")
                        .to_owned(),
                    _ => format!("{first} {last}").trim().to_owned(),
                };
                let mut teams = BTreeSet::new();
                let mut memberships = Vec::new();
                for team in body["teams"].as_array().into_iter().flatten() {
                    let team_name = text(&team["name"]).to_owned();
                    for channel in team["channels"].as_array().into_iter().flatten() {
                        memberships.push(Membership {
                            team: team_name.clone(),
                            channel: text(&channel["name"]).to_owned(),
                            last_viewed_at: channel["last_viewed_at"].as_i64().filter(valid_ms),
                            muted: channel["notify_props"]["mark_unread"] == "mention",
                            favorite: channel["favorite"].as_bool() == Some(true),
                        });
                    }
                    teams.insert(team_name);
                }
                export.people.push(Person {
                    username,
                    email: text(&body["email"]).trim().to_lowercase(),
                    full_name,
                    roles: text(&body["roles"]).to_owned(),
                    deleted: body["delete_at"].as_i64().is_some_and(|t| t > 0),
                    profile_image: text(&body["profile_image"]).to_owned(),
                    teams,
                    memberships,
                });
            }
            "bot" => export.bots.push(Bot {
                username: text(&body["username"]).to_owned(),
                owner: text(&body["owner"]).to_owned(),
                display_name: text(&body["display_name"]).to_owned(),
                deleted: body["delete_at"].as_i64().is_some_and(|t| t > 0),
            }),
            "emoji" => export.emoji.push((
                text(&body["name"]).to_owned(),
                text(&body["image"]).to_owned(),
            )),
            "post" | "direct_post" => {
                let place = if kind == "post" {
                    PostPlace::Channel {
                        team: text(&body["team"]).to_owned(),
                        channel: text(&body["channel"]).to_owned(),
                    }
                } else {
                    let members = strings(&body["channel_members"]);
                    PostPlace::Direct(members)
                };
                let root = export.posts.len();
                let mut post = post_of(body, line, place.clone());
                let replies: Vec<&Value> =
                    body["replies"].as_array().into_iter().flatten().collect();
                post.has_replies = !replies.is_empty();
                export.posts.push(post);
                for reply in replies {
                    let mut reply = post_of(reply, line, place.clone());
                    reply.root = Some(root);
                    export.posts.push(reply);
                }
            }
            // Direct channels come with their posts; roles, schemes and bots are not kept.
            _ => {
                if kind.is_empty() {
                    w.skip("line", format!("{file}: line {line}"), "no type");
                }
            }
        }
    }
    Ok(export)
}

/// Mattermost's mentions and channel links as Zulip's.
fn convert(
    message: &str,
    people: &HashMap<String, (UserId, String)>,
    channels: &HashMap<String, String>,
) -> String {
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len());
    let mut i = 0;
    let word_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    while i < chars.len() {
        let c = chars[i];
        let starts = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '@');
        if (c == '@' || c == '~') && starts {
            let mut end = i + 1;
            while end < chars.len() && word_char(chars[end]) {
                end += 1;
            }
            // A sentence's full stop is not part of a name.
            while end > i + 1 && chars[end - 1] == '.' {
                end -= 1;
            }
            let word: String = chars[i + 1..end].iter().collect();
            let lower = word.to_lowercase();
            let replaced = if c == '@' {
                match lower.as_str() {
                    "all" | "channel" | "here" => Some("@**all**".to_owned()),
                    _ => people
                        .get(&lower)
                        .map(|(id, name)| format!("@**{name}|{}**", id.0)),
                }
            } else {
                channels.get(&lower).map(|name| format!("#**{name}**"))
            };
            if let Some(replaced) = replaced {
                out.push_str(&replaced);
                i = end;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Imports the export; returns the owner.
pub fn import(
    archive: &mut Archive,
    w: &mut Writer,
    options: &Options,
) -> Result<UserId, ImportError> {
    let (file, base) = find_lines(archive)?;
    let export = read(archive, w, &file)?;
    if export.people.is_empty() {
        return Err(ImportError::new(format!("{file}: holds no user")));
    }
    // Which teams come along.
    let teams: Vec<&Team> = match &options.team {
        Some(wanted) => {
            let team = export
                .teams
                .iter()
                .find(|t| t.name == *wanted || t.display_name == *wanted)
                .ok_or_else(|| {
                    let names: Vec<&str> = export.teams.iter().map(|t| t.name.as_str()).collect();
                    ImportError::new(format!(
                        "--team {wanted}: no such team in the export (it has: {})",
                        names.join(", ")
                    ))
                })?;
            vec![team]
        }
        None => export.teams.iter().collect(),
    };
    let team_names: BTreeSet<&str> = teams.iter().map(|t| t.name.as_str()).collect();
    let realm_name = match (&options.realm_name, teams.as_slice()) {
        (Some(name), _) => name.clone(),
        (None, [one]) if !one.display_name.is_empty() => one.display_name.clone(),
        _ => "Imported from Mattermost".to_owned(),
    };
    // People: those of the chosen teams (everyone when every team comes), with an address.
    let mut chosen: Vec<&Person> = Vec::new();
    let mut emails = BTreeSet::new();
    for (i, person) in export.people.iter().enumerate() {
        let at = format!("{file}: user {} ({})", i + 1, person.username);
        if options.team.is_some()
            && person
                .teams
                .is_disjoint(&team_names.iter().map(|t| (*t).to_owned()).collect())
        {
            continue;
        }
        if !crate::commands::users::validate_email(&person.email) {
            w.skip("user", at, "no valid email address");
            continue;
        }
        if !emails.insert(person.email.clone()) {
            w.skip(
                "user",
                at,
                format!("{} is another user's address too", person.email),
            );
            continue;
        }
        chosen.push(person);
    }
    if chosen.is_empty() {
        return Err(ImportError::new(format!(
            "{file}: no user of the chosen teams has an address"
        )));
    }
    let owner_index = match &options.owner_email {
        Some(wanted) => chosen
            .iter()
            .position(|p| p.email == wanted.to_lowercase())
            .ok_or_else(|| {
                ImportError::new(format!(
                    "--owner-email {wanted}: nobody in the export has that address"
                ))
            })?,
        None => chosen
            .iter()
            .position(|p| p.roles.split_whitespace().any(|r| r == "system_admin"))
            .unwrap_or(0),
    };
    // The export says when nobody joined and no channel was made: both date from the first
    // post, so that nobody joins after their own messages.
    let since_ms = export
        .posts
        .iter()
        .map(|p| p.create_at)
        .filter(|t| *t > 0)
        .min();
    w.create_realm(&realm_name, "")?;
    let mut order = vec![owner_index];
    order.extend((0..chosen.len()).filter(|i| *i != owner_index));
    let mut people: HashMap<String, (UserId, String)> = HashMap::new();
    let mut owner = UserId(1);
    let mut deactivate = Vec::new();
    for i in order {
        let person = chosen[i];
        let roles: Vec<&str> = person.roles.split_whitespace().collect();
        let role = if i == owner_index {
            Role::Owner
        } else if roles.contains(&"system_admin") {
            Role::Administrator
        } else if roles.contains(&"system_guest") {
            Role::Guest
        } else {
            Role::Member
        };
        let full_name: String = person
            .full_name
            .chars()
            .filter(|c| !c.is_control() && !matches!(c, '*' | '`' | '\\' | '>' | '"' | '@' | '|'))
            .take(100)
            .collect();
        let full_name = if full_name.trim().is_empty() {
            person.username.clone()
        } else {
            full_name.trim().to_owned()
        };
        let user_id = w.create_user(NewUser {
            email: person.email.clone(),
            full_name: full_name.clone(),
            role,
            bot_type: None,
            bot_owner: None,
            timezone: String::new(),
            joined_ms: since_ms,
        })?;
        if i == owner_index {
            owner = user_id;
        } else if person.deleted {
            deactivate.push(user_id);
        }
        // The profile picture, when the zip holds it (`data/users/<id>/profile.png`).
        if !person.profile_image.is_empty() {
            let file = format!("{base}data/{}", person.profile_image);
            if !archive.contains(&file)? {
                w.skip("avatar", &file, "not in the export");
            } else if let Err(why) = w.avatar(user_id, &archive.read(&file)?)? {
                w.skip("avatar", file, why);
            }
        }
        people.insert(person.username.to_lowercase(), (user_id, full_name));
    }

    // Bots, owned by their owner (else by the organization's owner), at an address in the
    // owner's domain as Zulip gives its bots.
    let domain = chosen[owner_index]
        .email
        .rsplit_once('@')
        .map(|(_, d)| d.to_owned())
        .unwrap_or_default();
    for (i, bot) in export.bots.iter().enumerate() {
        let at = format!("{file}: bot {} ({})", i + 1, bot.username);
        let local: String = bot
            .username
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            .collect();
        let email = format!("{local}-bot@{domain}");
        if local.is_empty()
            || people.contains_key(&bot.username.to_lowercase())
            || !emails.insert(email.clone())
        {
            w.skip("bot", at, "no usable username, or one a person has");
            continue;
        }
        let bot_owner = people
            .get(&bot.owner.to_lowercase())
            .map(|(id, _)| *id)
            .unwrap_or(owner);
        let shown = if bot.display_name.trim().is_empty() {
            &bot.username
        } else {
            &bot.display_name
        };
        let full_name: String = shown
            .chars()
            .filter(|c| !c.is_control() && !matches!(c, '*' | '`' | '\\' | '>' | '"' | '@' | '|'))
            .take(100)
            .collect();
        let user_id = w.create_user(NewUser {
            email,
            full_name: full_name.clone(),
            role: Role::Member,
            bot_type: Some(1),
            bot_owner: Some(bot_owner),
            timezone: String::new(),
            joined_ms: since_ms,
        })?;
        if bot.deleted {
            deactivate.push(user_id);
        }
        people.insert(bot.username.to_lowercase(), (user_id, full_name));
    }

    // Custom emoji, with their images.
    for (name, image) in &export.emoji {
        let path = format!("{base}{image}");
        let at = format!("{file}: emoji {name}");
        if !archive.contains(&path)? {
            w.skip(
                "custom emoji",
                at,
                format!("its image {path} is not in the export"),
            );
            continue;
        }
        let bytes = archive.read(&path)?;
        if let Err(why) = w.custom_emoji(owner, name, bytes)? {
            w.skip("custom emoji", at, why);
        }
    }

    // Channels: a folder per team when several come along.
    let several = teams.len() > 1;
    let mut folders = HashMap::new();
    for team in &teams {
        if several {
            let name = if team.display_name.is_empty() {
                &team.name
            } else {
                &team.display_name
            };
            folders.insert(team.name.clone(), w.create_folder(name, &team.description)?);
        }
    }
    let mut taken = Taken::default();
    let mut channel_ids: HashMap<(String, String), ChannelId> = HashMap::new();
    let mut channel_names: HashMap<String, String> = HashMap::new();
    for (i, channel) in export.channels.iter().enumerate() {
        if !team_names.contains(channel.team.as_str()) {
            continue;
        }
        let shown = if channel.display_name.trim().is_empty() {
            channel.name.as_str()
        } else {
            channel.display_name.trim()
        };
        let shown: String = shown.chars().filter(|c| !c.is_control()).collect();
        if shown.trim().is_empty() {
            w.skip("channel", format!("{file}: channel {}", i + 1), "no name");
            continue;
        }
        let name = unique_name(shown.trim(), 60, &mut taken);
        let channel_id = w.create_channel(
            NewChannel {
                name: name.clone(),
                description: channel
                    .purpose
                    .chars()
                    .filter(|c| !c.is_control() || *c == '\n')
                    .take(1024)
                    .collect(),
                invite_only: channel.private,
                is_default: DEFAULT_CHANNELS.contains(&channel.name.as_str()),
                created_ms: since_ms,
                creator: None,
                folder: folders.get(&channel.team).copied(),
                history_public: None,
            },
            owner,
        )?;
        channel_ids.insert((channel.team.clone(), channel.name.clone()), channel_id);
        channel_names.insert(channel.name.to_lowercase(), name);
    }
    // Memberships, and what each person had set on them.
    let mut members: BTreeMap<ChannelId, BTreeSet<UserId>> = BTreeMap::new();
    let mut settings = Vec::new();
    let mut viewed: BTreeMap<(UserId, ChannelId), i64> = BTreeMap::new();
    for person in &chosen {
        let Some((user_id, _)) = people.get(&person.username.to_lowercase()) else {
            continue;
        };
        for m in &person.memberships {
            let Some(channel_id) = channel_ids.get(&(m.team.clone(), m.channel.clone())) else {
                continue;
            };
            members.entry(*channel_id).or_default().insert(*user_id);
            if m.muted {
                settings.push((*user_id, *channel_id, SubscriptionProperty::IsMuted(true)));
            }
            if m.favorite {
                settings.push((*user_id, *channel_id, SubscriptionProperty::PinToTop(true)));
            }
            if let Some(at) = m.last_viewed_at {
                viewed.insert((*user_id, *channel_id), at);
            }
        }
    }
    for (channel_id, users) in &members {
        w.subscribe(*channel_id, users)?;
    }
    for (user_id, channel_id, property) in settings {
        w.subscription_property(user_id, channel_id, property)?;
    }

    // Posts and replies in time order; each root with replies starts a topic.
    let mut order: Vec<usize> = (0..export.posts.len()).collect();
    order.sort_by_key(|i| (export.posts[*i].create_at, *i));
    let mut topics: HashMap<usize, String> = HashMap::new();
    let mut taken_topics: HashMap<ChannelId, Taken> = HashMap::new();
    let mut sent: HashMap<usize, MessageId> = HashMap::new();
    let mut stars: BTreeMap<UserId, Vec<MessageId>> = BTreeMap::new();
    let mut channel_messages: BTreeMap<ChannelId, Vec<(i64, MessageId)>> = BTreeMap::new();
    for i in order {
        let post = &export.posts[i];
        let at = format!("{file}: line {}", post.line);
        if post.kind.starts_with("system_") {
            w.count("notices dropped", 1);
            continue;
        }
        if post.create_at <= 0 {
            w.skip("message", at, "no create_at time");
            continue;
        }
        let Some((sender, _)) = people.get(&post.user.to_lowercase()).cloned() else {
            w.skip(
                "message",
                at,
                format!(
                    "sent by {:?}, who is not among the imported users",
                    post.user
                ),
            );
            continue;
        };
        let recipient = match &post.place {
            PostPlace::Channel { team, channel } => {
                if !team_names.contains(team.as_str()) {
                    continue;
                }
                let Some(channel_id) = channel_ids.get(&(team.clone(), channel.clone())).copied()
                else {
                    w.skip(
                        "message",
                        at,
                        format!("in channel {channel:?}, which the export does not describe"),
                    );
                    continue;
                };
                let root = post.root.unwrap_or(i);
                let topic = if post.has_replies || post.root.is_some() {
                    match topics.get(&root) {
                        Some(topic) => topic.clone(),
                        None => {
                            let root_post = &export.posts[root];
                            let topic = thread_topic(
                                root_post.create_at,
                                Some(&root_post.message),
                                "thread",
                            );
                            let topic = unique_name(
                                &topic,
                                60,
                                taken_topics.entry(channel_id).or_default(),
                            );
                            topics.insert(root, topic.clone());
                            topic
                        }
                    }
                } else {
                    MAIN_TOPIC.to_owned()
                };
                Recipient::Channel { channel_id, topic }
            }
            PostPlace::Direct(usernames) => {
                let mut user_ids = BTreeSet::from([sender]);
                for name in usernames {
                    match people.get(&name.to_lowercase()) {
                        Some((id, _)) => {
                            user_ids.insert(*id);
                        }
                        None => {
                            if options.team.is_none() {
                                w.skip(
                                    "message",
                                    &at,
                                    format!("to {name:?}, who is not among the imported users"),
                                );
                            }
                            user_ids.clear();
                            break;
                        }
                    }
                }
                if user_ids.is_empty() {
                    continue;
                }
                Recipient::Direct {
                    user_ids: user_ids.into_iter().collect(),
                }
            }
        };
        let mut content = convert(&post.message, &people, &channel_names);
        for path in &post.attachments {
            let full = format!("{base}data/{path}");
            if !archive.contains(&full)? {
                w.skip("file", &at, format!("{full} is not in the export"));
                let name = path.rsplit('/').next().unwrap_or(path);
                if !content.trim().is_empty() {
                    content.push('\n');
                }
                content.push_str(&format!(
                    "*{}* (a file the export did not hold)",
                    name.replace(['*', '_'], "")
                ));
                continue;
            }
            let bytes = archive.read(&full)?;
            let name = path.rsplit('/').next().unwrap_or(path);
            let link = w.upload(sender, name, &bytes, post.create_at)?;
            if !content.trim().is_empty() {
                content.push('\n');
            }
            content.push_str(&format!("[{}]({link})", name.replace(['[', ']'], "")));
        }
        if content.trim().is_empty() {
            w.skip("message", at, "nothing to show: no text and no file");
            continue;
        }
        let channel = match &recipient {
            Recipient::Channel { channel_id, .. } => Some(*channel_id),
            Recipient::Direct { .. } => None,
        };
        let last_edit = post.edit_at.filter(|t| *t > post.create_at);
        let Some(message_id) = w.send(sender, recipient, &content, post.create_at, last_edit)?
        else {
            w.skip(
                "message",
                at,
                "nothing to show once control characters are left out",
            );
            continue;
        };
        sent.insert(i, message_id);
        if let Some(channel_id) = channel {
            channel_messages
                .entry(channel_id)
                .or_default()
                .push((post.create_at, message_id));
        }
        for username in &post.flagged_by {
            if let Some((user_id, _)) = people.get(&username.to_lowercase()) {
                stars.entry(*user_id).or_default().push(message_id);
            }
        }
        for (username, emoji, reacted_at) in &post.reactions {
            let Some((user_id, _)) = people.get(&username.to_lowercase()).cloned() else {
                w.skip(
                    "reaction",
                    &at,
                    format!("by {username:?}, who is not among the imported users"),
                );
                continue;
            };
            let when = if *reacted_at > 0 {
                *reacted_at
            } else {
                post.create_at
            };
            if !w.react(message_id, user_id, emoji, when)? {
                w.skip("reaction", &at, format!(":{emoji}: is neither an emoji Zulip knows nor one of the export's custom emoji"));
            }
        }
    }
    for (user_id, message_ids) in stars {
        w.star(user_id, message_ids)?;
    }
    // Read up to where each person last looked (Mattermost's `last_viewed_at`).
    let mut given = BTreeSet::new();
    for ((user_id, channel_id), viewed_at) in &viewed {
        given.insert((*user_id, super::ReadKey::Channel(*channel_id)));
        let through = channel_messages
            .get(channel_id)
            .into_iter()
            .flatten()
            .filter(|(at, _)| at <= viewed_at)
            .map(|(_, id)| *id)
            .max();
        if let Some(message_id) = through {
            w.read_through(*user_id, ReadPlace::Channel(*channel_id), message_id)?;
        }
    }
    w.deactivate_and_archive(owner, deactivate, Vec::new())?;
    w.everything_read(&given)?;
    Ok(owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_and_channel_links() {
        let people = HashMap::from([("ron".to_owned(), (UserId(3), "Ron Weasley".to_owned()))]);
        let channels = HashMap::from([("town-square".to_owned(), "Town Square".to_owned())]);
        assert_eq!(
            convert(
                "@ron Welcome mate! See ~town-square. @channel",
                &people,
                &channels
            ),
            "@**Ron Weasley|3** Welcome mate! See #**Town Square**. @**all**"
        );
        assert_eq!(
            convert("mail ron@ron.org, @ron.", &people, &channels),
            "mail ron@ron.org, @**Ron Weasley|3**."
        );
        assert_eq!(
            convert("@nobody ~nowhere", &people, &channels),
            "@nobody ~nowhere"
        );
    }
}

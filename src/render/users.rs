//! Users and bots as clients see them: `realm_users`, `GET /users`, avatars, the email a viewer
//! may see, and the bot objects of `realm_bots`.

use super::Site;
use crate::auth::service_token;
use crate::auth::ServerSecret;
use crate::events::Role;
use crate::ids::{ChannelId, UserId};
use crate::projections::{Projections, Stamp, User};
use crate::render::fields::{Fields, JsonBuf, Shown};
use crate::render::realm::profile_data_json;
use crate::time::Iso8601;
use serde_json::{json, Value};

/// `avatar_url` of a user: a PNG, the uploaded avatar or a generated one.
pub fn avatar_url(site: &super::Site, user: &User) -> String {
    AvatarUrl(site, user).to_string()
}

/// [`avatar_url`] as a `Display` value.
struct AvatarUrl<'a>(&'a super::Site, &'a User);

impl std::fmt::Display for AvatarUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let AvatarUrl(site, user) = self;
        write!(
            f,
            "{}/avatar/{}?version={}",
            site.realm_url, user.user_id, user.avatar_version
        )
    }
}

/// The medium (500 px) form of `avatar_url`.
pub fn avatar_url_medium(site: &super::Site, user: &User) -> String {
    format!(
        "{}/avatar/{}/medium?version={}",
        site.realm_url, user.user_id, user.avatar_version
    )
}

/// Zulip's `avatar_source`: `U` for an uploaded avatar, `G` otherwise.
pub fn avatar_source(user: &User) -> &'static str {
    if user.avatar.is_some() {
        "U"
    } else {
        "G"
    }
}

/// Whether `viewer` may see `user`'s real email address, under the organization's
/// `email_address_visibility` (administrators only by default, as in current Zulip). One's own
/// address and bots' addresses are always visible.
pub fn email_visible(state: &Projections, viewer: &User, user: &User) -> bool {
    viewer.user_id == user.user_id || user.is_bot() || sees_hidden_emails(state, viewer)
}

/// Who a list of users is written for, with what that depends on looked up once.
pub struct Viewer<'a> {
    user: &'a User,
    sees_hidden_emails: bool,
}

impl<'a> Viewer<'a> {
    pub fn new(state: &Projections, user: &'a User) -> Viewer<'a> {
        Viewer {
            user,
            sees_hidden_emails: sees_hidden_emails(state, user),
        }
    }

    /// [`email_visible`].
    fn sees_email_of(&self, user: &User) -> bool {
        self.user.user_id == user.user_id || user.is_bot() || self.sees_hidden_emails
    }
}

/// Whether `viewer` sees the real addresses of people other than themselves and bots.
pub(crate) fn sees_hidden_emails(state: &Projections, viewer: &User) -> bool {
    let visibility = match state.realm.value("email_address_visibility") {
        crate::events::RealmValue::Int(code) => code,
        _ => 3,
    };
    // Which settings each role sees through (Zulip's table): 1 everyone, 2 members,
    // 3 administrators, 4 nobody, 5 moderators.
    let sees: &[i64] = match viewer.role {
        Role::Owner | Role::Administrator => &[1, 2, 3, 5],
        Role::Moderator => &[1, 2, 5],
        Role::Member => &[1, 2],
        Role::Guest => &[1],
    };
    sees.contains(&visibility)
}

/// The placeholder API email Zulip gives when the real one is hidden: `user{id}@{host}`, with
/// a reserved domain when the server is reached by IP address.
pub fn placeholder_email(site: &super::Site, user: &User) -> String {
    PlaceholderEmail(site, user).to_string()
}

/// [`placeholder_email`] as a `Display` value.
struct PlaceholderEmail<'a>(&'a super::Site, &'a User);

impl std::fmt::Display for PlaceholderEmail<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "user{}@{}", self.1.user_id, email_domain(self.0))
    }
}

/// The domain of addresses the server makes up (placeholders, bots): the organization's host
/// name, or a reserved domain when the server is reached by IP address.
pub fn email_domain(site: &super::Site) -> &str {
    let host = site
        .realm_url
        .split("://")
        .nth(1)
        .unwrap_or_default()
        .split(['/', ':'])
        .next()
        .unwrap_or_default();
    let is_name = host.chars().any(|c| c.is_ascii_alphabetic());
    if is_name {
        host
    } else {
        "chronicle.invalid"
    }
}

/// A user as `GET /users`, `/register` (`realm_users`) and `realm_user` events show it to
/// `viewer`. `profile_data` (humans only) is included when `with_profile_data` is set, as
/// Zulip does for `include_custom_profile_fields` and in `/register`.
pub fn user_json(
    state: &Projections,
    site: &super::Site,
    viewer: &User,
    user: &User,
    with_profile_data: bool,
) -> Value {
    let mut map = serde_json::Map::new();
    let shape = UserShape {
        profile_data: with_profile_data,
        is_active: true,
    };
    user_fields(
        &mut map,
        state,
        site,
        &Viewer::new(state, viewer),
        user,
        shape,
    );
    Value::Object(map)
}

/// Which optional fields a user object carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UserShape {
    /// `profile_data`, for humans.
    pub profile_data: bool,
    /// `is_active` (`/register`'s `realm_users` leaves it out: the list says it).
    pub is_active: bool,
}

/// The fields of [`user_json`], written into `out`.
pub fn user_fields(
    out: &mut impl Fields,
    state: &Projections,
    site: &super::Site,
    viewer: &Viewer<'_>,
    user: &User,
    shape: UserShape,
) {
    let visible = viewer.sees_email_of(user);
    out.field("user_id", &user.user_id.0);
    out.field("delivery_email", &visible.then_some(&user.email));
    if visible {
        out.field("email", &user.email);
    } else {
        out.field("email", &Shown(PlaceholderEmail(site, user)));
    }
    out.field("full_name", &user.full_name);
    out.field("date_joined", &Shown(Iso8601(user.date_joined_ms)));
    if shape.is_active {
        out.field("is_active", &user.is_active);
    }
    out.field("is_owner", &(user.role == Role::Owner));
    out.field("is_admin", &user.role.is_admin());
    out.field("is_guest", &(user.role == Role::Guest));
    out.field("is_bot", &user.is_bot());
    out.field("bot_type", &user.bot_type);
    if user.is_bot() {
        out.field("bot_owner_id", &user.bot_owner_id);
    }
    out.field("role", &user.role.code());
    out.field("timezone", &user.timezone);
    out.field("avatar_url", &Shown(AvatarUrl(site, user)));
    out.field("avatar_version", &user.avatar_version);
    out.field("is_imported_stub", &false);
    if shape.profile_data && !user.is_bot() {
        out.field("profile_data", &profile_data_json(state, user.user_id));
    }
}

/// Users as `/register`'s `realm_users` and `realm_non_active_users` list them, one text per
/// user and per whether the viewer sees the real address: written once, and kept while the
/// users and the profile fields keep their stamps.
///
/// Most of a large organization's `/register` is its users, and they change far less often
/// than it is asked for; what an entry shows depends on nothing else but the site, which a
/// server keeps for its life (tests run several servers in a process, each with its cards).
#[derive(Debug, Default)]
pub struct UserCards {
    cards: std::sync::Mutex<Cards>,
}

#[derive(Debug, Default)]
struct Cards {
    /// The users' and the profile fields' stamps the texts were written under.
    stamps: Option<(Stamp, Stamp)>,
    /// By user, whether the real address shows, and the shape.
    texts: std::collections::HashMap<(UserId, bool, UserShape), Box<[u8]>>,
}

/// How `realm_users` and `realm_non_active_users` show a user: `is_active` is left out, since
/// the list a user is in says it.
pub const LISTED: UserShape = UserShape {
    profile_data: true,
    is_active: false,
};

impl UserCards {
    /// Writes `users` as an array of user objects of `shape` as `viewer` sees them:
    /// [`LISTED`] in `/register`; `GET /users` asks for `is_active`, and for profile data or
    /// not.
    pub fn write<'u>(
        &self,
        out: &mut JsonBuf,
        state: &Projections,
        site: &Site,
        viewer: &Viewer<'_>,
        users: impl IntoIterator<Item = &'u User>,
        shape: UserShape,
    ) {
        let write_one = |user: &User| {
            let mut text = JsonBuf::with_capacity(512);
            text.object(|o| user_fields(o, state, site, viewer, user, shape));
            text
        };
        let stamps = (state.users.stamp(), state.profile_fields.stamp());
        // A poisoned lock only means another answer failed while writing: the texts it kept
        // are whole, since each is put in only once written.
        let mut cards = self.cards.lock().unwrap_or_else(|e| e.into_inner());
        if cards.stamps != Some(stamps) {
            cards.texts.clear();
            cards.stamps = Some(stamps);
        }
        out.array(users, |out, user| {
            let key = (user.user_id, viewer.sees_email_of(user), shape);
            match cards.texts.get(&key) {
                Some(text) => out.text(text),
                None => {
                    let written = write_one(user);
                    out.text(written.as_bytes());
                    if !written.failed() {
                        cards.texts.insert(key, written.as_bytes().into());
                    }
                }
            }
        });
    }
}

/// The email `viewer` sees for `user`: real when visible, else the placeholder.
pub fn shown_email(state: &Projections, site: &Site, viewer: &User, user: &User) -> String {
    if email_visible(state, viewer, user) {
        user.email.clone()
    } else {
        placeholder_email(site, user)
    }
}

fn channel_name(state: &Projections, id: Option<ChannelId>) -> Value {
    id.and_then(|id| state.channels.get(id))
        .map_or(Value::Null, |c| json!(c.name))
}

/// The three default-channel fields every bot shape carries.
pub fn bot_defaults(state: &Projections, bot: &User) -> [(&'static str, Value); 3] {
    let config = bot.bot.as_deref();
    [
        (
            "default_sending_stream",
            channel_name(state, config.and_then(|c| c.default_sending_stream)),
        ),
        (
            "default_events_register_stream",
            channel_name(state, config.and_then(|c| c.default_events_register_stream)),
        ),
        (
            "default_all_public_streams",
            json!(config.is_some_and(|c| c.default_all_public_streams)),
        ),
    ]
}

/// A bot as `/register`'s `realm_bots` and `realm_bot` `add` events show it to its owner and
/// to administrators (the API key included, as Zulip does).
pub fn bot_json(state: &Projections, site: &Site, secret: &ServerSecret, bot: &User) -> Value {
    let mut map = serde_json::Map::new();
    map.insert("email".into(), json!(bot.email));
    map.insert("user_id".into(), json!(bot.user_id.0));
    map.insert("bot_type".into(), json!(bot.bot_type));
    map.insert("full_name".into(), json!(bot.full_name));
    map.insert("is_active".into(), json!(bot.is_active));
    map.insert(
        "api_key".into(),
        json!(secret.api_key(bot.user_id, &bot.api_key_nonce)),
    );
    map.insert("avatar_url".into(), json!(avatar_url(site, bot)));
    for (key, value) in bot_defaults(state, bot) {
        map.insert(key.into(), value);
    }
    let services: Vec<Value> = bot
        .bot
        .iter()
        .flat_map(|c| c.services.iter())
        .map(|s| {
            json!({"base_url": s.base_url, "interface": s.interface, "token": service_token(secret, bot)})
        })
        .collect();
    map.insert("services".into(), Value::Array(services));
    if let Some(owner) = bot.bot_owner_id {
        map.insert("owner_id".into(), json!(owner.0));
    }
    Value::Object(map)
}

/// Who hears about a bot (`realm_bot` events, `realm_bots`): its owner, and active human
/// administrators unless one of its default channels is private.
pub fn bot_audience(state: &Projections, bot: &User) -> Vec<UserId> {
    let config = bot.bot.as_deref();
    let private = config
        .into_iter()
        .flat_map(|c| [c.default_sending_stream, c.default_events_register_stream])
        .flatten()
        .filter_map(|id| state.channels.get(id))
        .any(|c| c.invite_only);
    let mut audience: Vec<UserId> = bot.bot_owner_id.into_iter().collect();
    if !private {
        audience.extend(
            state
                .users
                .iter()
                .filter(|u| u.is_active && !u.is_bot() && u.role.is_admin())
                .map(|u| u.user_id)
                .filter(|id| Some(*id) != bot.bot_owner_id),
        );
    }
    audience
}

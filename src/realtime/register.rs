//! The initial state of `POST /register`, from the projections, by fetch type.

use super::Capabilities;
use crate::auth::ServerSecret;
use crate::events::Role;
use crate::markdown::render_description;
use crate::projections::messages::EMPTY_TOPIC_DISPLAY_NAME;
use crate::projections::realm::SETTINGS;
use crate::projections::Address;
use crate::projections::{access, Access};
use crate::projections::{Folders, Projections, User};
use crate::render::channels::{
    channel_fields, subscription_fields, visible_subscribers, SubscriptionShape,
};
use crate::render::fields::{Fields, JsonBuf, Obj};
use crate::render::groups::group_json;
use crate::render::realm::realm_setting_json;
use crate::render::users::bot_json;
use crate::render::users::{avatar_url, user_fields, UserShape, LISTED};
use crate::render::Site;
use crate::render::{ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap, HashSet};

/// What the client asked for.
pub struct RegisterRequest<'a> {
    /// `None`: every fetch type.
    pub fetch_event_types: Option<&'a BTreeSet<String>>,
    pub include_subscribers: bool,
    pub capabilities: &'a Capabilities,
    pub presence: &'a crate::render::presence::PresenceQuery,
}

/// The user's own settings (`PATCH /settings`), with the choices clients offer and the
/// organization's email visibility (per organization in Chronicle).
fn user_settings(state: &Projections, me: &User) -> Map<String, Value> {
    let mut map = state.user_settings.all(me.user_id);
    map.insert("timezone".into(), json!(me.timezone));
    crate::projections::user_settings::add_choices(&mut map);
    map.insert(
        "email_address_visibility".into(),
        realm_setting_json(state, "email_address_visibility"),
    );
    map
}

/// Zulip's `MAX_UNREAD_MESSAGES`: `/register` lists at most this many unread messages.
const MAX_UNREAD_MESSAGES: usize = 50_000;

/// The eight custom profile field types.
fn custom_profile_field_types() -> Value {
    json!({
        "SHORT_TEXT": {"id": 1, "name": "Text (short)"},
        "LONG_TEXT": {"id": 2, "name": "Text (long)"},
        "SELECT": {"id": 3, "name": "List of options"},
        "DATE": {"id": 4, "name": "Date picker"},
        "URL": {"id": 5, "name": "Link"},
        "USER": {"id": 6, "name": "Person picker"},
        "EXTERNAL_ACCOUNT": {"id": 7, "name": "External account"},
        "PRONOUNS": {"id": 8, "name": "Pronouns"},
    })
}

/// Unread channel messages `(channel, spelling's address, id, topic)` grouped as Zulip groups
/// them: case-insensitively, a group per (channel, lowercase topic), shown with the spelling of
/// its oldest message, ids ascending; ordered by channel and lowercase topic. Sorting groups
/// each spelling's messages together, so a spelling is lowercased once, not once per message.
fn topic_groups(
    mut messages: Vec<(u64, usize, u64, &crate::projections::Topic)>,
    raw_topics: bool,
) -> Vec<(u64, String, String, Vec<u64>)> {
    messages.sort_unstable_by_key(|(channel, spelling, id, _)| (*channel, *spelling, *id));
    // (channel, lowercase, shown, ids, oldest id, more than one spelling)
    let mut groups: Vec<(u64, String, String, Vec<u64>, u64, bool)> = Vec::new();
    let mut by_lower: HashMap<(u64, String), usize> = HashMap::new();
    for run in messages.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let (channel, _, oldest, topic) = run[0];
        let ids = run.iter().map(|(.., id, _)| *id);
        let lower = topic.to_lowercase();
        match by_lower.get(&(channel, lower.clone())) {
            Some(&at) => {
                let group = &mut groups[at];
                group.3.extend(ids);
                group.5 = true;
                if oldest < group.4 {
                    group.2 = crate::render::messages::shown_topic(topic, raw_topics);
                    group.4 = oldest;
                }
            }
            None => {
                by_lower.insert((channel, lower.clone()), groups.len());
                let shown = crate::render::messages::shown_topic(topic, raw_topics);
                groups.push((channel, lower, shown, ids.collect(), oldest, false));
            }
        }
    }
    groups.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    groups
        .into_iter()
        .map(|(channel, lower, shown, mut ids, _, spellings)| {
            if spellings {
                ids.sort_unstable();
            }
            (channel, lower, shown, ids)
        })
        .collect()
}

/// `unread_msgs`: the user's unread messages grouped as Zulip groups them. `raw_topics`: the
/// client handles the empty topic (`empty_topic_name`), else it is shown by its display name.
fn unread_msgs(b: &mut JsonBuf, state: &Projections, me: &User, raw_topics: bool) {
    use crate::projections::messages::flags;
    use std::collections::BTreeMap;
    // Channel messages as (channel, spelling, id), to be grouped by sorting: messages share
    // their topic's text (`Topic`), so a spelling is known by its address.
    let mut in_channels: Vec<(u64, usize, u64, &crate::projections::Topic)> = Vec::new();
    let mut pms: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut huddles: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut mentions = Vec::new();
    let mut count = 0;
    // Zulip's MAX_UNREAD_MESSAGES: the newest 50,000, and `old_unreads_missing` past them.
    let (unread, missing) = state
        .messages
        .unread_messages_of(me.user_id, MAX_UNREAD_MESSAGES);
    for (message, bits) in unread.into_iter().rev() {
        let id = message.id;
        count += 1;
        if bits & (flags::MENTIONED | flags::STREAM_WILDCARD | flags::TOPIC_WILDCARD) != 0 {
            mentions.push(id.0);
        }
        match &message.recipient {
            Address::Channel { channel_id, topic } => {
                in_channels.push((channel_id.0, topic.ptr() as usize, id.0, topic));
            }
            Address::Direct { user_ids } if user_ids.len() <= 2 => {
                let other = user_ids
                    .iter()
                    .copied()
                    .find(|u| *u != me.user_id)
                    .unwrap_or(me.user_id);
                pms.entry(other.0).or_default().push(id.0);
            }
            Address::Direct { user_ids } => {
                let key = user_ids
                    .iter()
                    .map(|u| u.0.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                huddles.entry(key).or_default().push(id.0);
            }
        }
    }
    let groups = topic_groups(in_channels, raw_topics);
    b.object(|o| {
        o.field_with("streams", |b| {
            b.objects(groups, |o, (stream_id, _, topic, ids)| {
                o.field("stream_id", &stream_id);
                o.field("topic", &topic);
                o.field("unread_message_ids", &ids);
            });
        });
        o.field_with("pms", |b| {
            b.objects(pms, |o, (other, ids)| {
                o.field("other_user_id", &other);
                o.field("sender_id", &other);
                o.field("unread_message_ids", &ids);
            });
        });
        o.field_with("huddles", |b| {
            b.objects(huddles, |o, (key, ids)| {
                o.field("user_ids_string", &key);
                o.field("unread_message_ids", &ids);
            });
        });
        o.field("mentions", &mentions);
        o.field("count", &count);
        o.field("old_unreads_missing", &missing);
    });
}

/// Writes the initial state for `me` into the answer's object. Called under the read lock, with
/// the queue registered in the same critical section.
pub fn initial_state(
    answer: &mut Obj<'_>,
    state: &Projections,
    site: &Site,
    secret: &ServerSecret,
    me: &User,
    request: &RegisterRequest<'_>,
) {
    // The unread messages are a walk over every one of them (the largest part of a large
    // organization's answer once its users are written from their cards, mostly waiting on
    // memory): on a machine with a second core, a thread of its own writes them while this one
    // writes the rest, and `messages` puts their text in place.
    let raw_topics = request.capabilities.empty_topic_name;
    let parallel = cores() > 1;
    std::thread::scope(|scope| {
        let unread =
            (parallel && wanted(request, "message") && wanted(request, "update_message_flags"))
                .then(|| {
                    write_ahead(scope, "unread", 64 * 1024, move |b| {
                        unread_msgs(b, state, me, raw_topics)
                    })
                })
                .flatten();
        let cx = Cx {
            state,
            site,
            secret,
            me,
            request,
            channel_text: Default::default(),
            unread: std::cell::RefCell::new(unread),
        };
        write_state(answer, &cx);
    });
}

/// Starts a thread writing one part of the answer; `None` when no thread is to be had (the part
/// is then written in its place).
fn write_ahead<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    name: &str,
    capacity: usize,
    write: impl FnOnce(&mut JsonBuf) + Send + 'scope,
) -> Option<std::thread::ScopedJoinHandle<'scope, JsonBuf>> {
    std::thread::Builder::new()
        .name(format!("chronicle-{name}"))
        .spawn_scoped(scope, move || {
            let mut text = JsonBuf::with_capacity(capacity);
            write(&mut text);
            text
        })
        .ok()
}

/// The machine's cores (1 when it cannot tell), read once.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// [`initial_state`]'s answer, part by part.
fn write_state(answer: &mut Obj<'_>, cx: &Cx<'_>) {
    let Cx {
        state, me, request, ..
    } = *cx;
    let mut out = Out {
        obj: answer,
        keys: HashSet::new(),
    };
    out.put("zulip_version", &ZULIP_VERSION);
    out.put("zulip_feature_level", &ZULIP_FEATURE_LEVEL);
    out.put("zulip_merge_base", &ZULIP_MERGE_BASE);
    if cx.wants("realm") {
        realm_data(&mut out, cx);
    }
    if cx.wants("realm_user") {
        people(&mut out, cx);
    }
    if cx.wants("realm_bot") {
        bots(&mut out, cx);
    }
    if cx.wants("subscription") {
        subscriptions(&mut out, cx);
    }
    if cx.wants("stream") {
        streams(&mut out, cx);
    }
    if cx.wants("message") {
        messages(&mut out, cx);
    }
    if cx.wants("starred_messages") {
        starred(&mut out, cx);
    }
    if cx.wants("user_topic") {
        user_topics(&mut out, cx);
    }
    if cx.wants("muted_topics")
        && !request
            .fetch_event_types
            .is_some_and(|t| t.contains("user_topic"))
    {
        muted_topics(&mut out, cx);
    }
    if cx.wants("custom_profile_fields") {
        profile_fields(&mut out, cx);
    }
    if cx.wants("realm_linkifiers") {
        linkifiers(&mut out, cx);
    }
    if cx.wants("realm_filters") {
        legacy_filters(&mut out);
    }
    if cx.wants("realm_user_groups") {
        user_groups(&mut out, cx);
    }
    if cx.wants("presence") {
        presence(&mut out, cx);
    }
    if cx.wants("user_settings") {
        own_settings(&mut out, cx);
    }
    if cx.wants("update_display_settings") || cx.wants("update_global_notifications") {
        legacy_settings(&mut out, cx);
    }
    if cx.wants("realm_emoji") {
        custom_emoji(&mut out, cx);
    }
    if cx.wants("channel_folders") {
        channel_folders(&mut out, cx);
    }
    if cx.wants("default_streams") {
        default_channels(&mut out, cx);
    }
    if cx.wants("recent_private_conversations") {
        recent_conversations(&mut out, cx);
    }
    if cx.wants("realm_domains") {
        out.put(
            "realm_domains",
            &crate::render::realm::domains_json(cx.state),
        );
    }
    if cx.wants("default_stream_groups") {
        // Guests are not offered them, as in Zulip.
        let groups = if me.role == crate::events::Role::Guest {
            json!([])
        } else {
            crate::render::channels::default_groups_json(state)
        };
        out.put("realm_default_stream_groups", &groups);
    }
    if cx.wants("realm_playgrounds") {
        out.put(
            "realm_playgrounds",
            &crate::render::realm::playgrounds_json(cx.state),
        );
    }
    if cx.wants("onboarding_steps") {
        out.put("onboarding_steps", &json!([]));
        out.put("navigation_tour_video_url", &Value::Null);
    }
    if cx.wants("realm_embedded_bots") {
        // Embedded bots are not served ("Embedded bots are not enabled.").
        out.put("realm_embedded_bots", &json!([]));
    }
    if cx.wants("realm_incoming_webhook_bots") {
        out.put(
            "realm_incoming_webhook_bots",
            &crate::integrations::webhook_bots_json(),
        );
    }
    if cx.wants("stop_words") {
        out.put("stop_words", &crate::analyzer::stop_words());
    }
    if cx.wants("realm_billing") {
        out.put(
            "realm_billing",
            &json!({"has_pending_sponsorship_request": false}),
        );
    }
    if cx.wants("scheduled_messages") {
        let list = state.scheduled.of(me.user_id, false);
        out.put(
            "scheduled_messages",
            &Value::Array(list.into_iter().map(|m| m.json()).collect()),
        );
    }
    if cx.wants("reminders") {
        let list = state.scheduled.of(me.user_id, true);
        out.put(
            "reminders",
            &Value::Array(
                list.into_iter()
                    .map(|m| crate::commands::scheduled::reminder_json(state, m))
                    .collect(),
            ),
        );
    }
    if cx.wants("drafts") {
        // Only a user who keeps drafts on the server has them listed.
        let syncing = state
            .user_settings
            .get(me.user_id, "enable_drafts_synchronization")
            == crate::events::RealmValue::Bool(true);
        let drafts = if syncing {
            state.drafts.drafts_json(me.user_id)
        } else {
            Vec::new()
        };
        out.put("drafts", &Value::Array(drafts));
    }
    if cx.wants("saved_snippets") {
        out.put(
            "saved_snippets",
            &Value::Array(state.drafts.snippets_json(me.user_id)),
        );
    }
    if cx.wants("navigation_views") {
        out.put("navigation_views", &state.navigation_views.json(me.user_id));
    }
    if cx.wants("device") || cx.wants("devices") {
        out.put("devices", &state.devices.json(me.user_id));
    }
    if cx.wants("alert_words") {
        out.put("alert_words", &state.alert_words.json(me.user_id));
    }
    if cx.wants("muted_users") {
        out.put("muted_users", &state.mutes.json(me.user_id));
    }
    if cx.wants("user_status") {
        let statuses: Map<String, Value> = state
            .user_status
            .iter()
            .map(|(id, status)| (id.0.to_string(), status.json()))
            .collect();
        out.put("user_status", &Value::Object(statuses));
    }
    if cx.wants("video_calls") {
        video_calls(&mut out);
    }
    if cx.wants("realm_user_settings_defaults") {
        settings_defaults(&mut out, state);
    }
}

/// A part of the answer a thread of its own is writing, until it is taken.
type Ahead<'a> = std::cell::RefCell<Option<std::thread::ScopedJoinHandle<'a, JsonBuf>>>;

/// The text of a part written ahead, if one was (and its thread did not fail).
fn written_ahead(part: &Ahead<'_>) -> Option<JsonBuf> {
    part.borrow_mut().take().and_then(|h| h.join().ok())
}

/// What every part of the initial state reads.
struct Cx<'a> {
    state: &'a Projections,
    site: &'a Site,
    secret: &'a ServerSecret,
    me: &'a User,
    request: &'a RegisterRequest<'a>,
    /// Where each channel's fields were written in the answer, so that a channel listed twice
    /// (in `never_subscribed` and in `streams`) is written once and copied.
    channel_text: std::cell::RefCell<HashMap<crate::ids::ChannelId, std::ops::Range<usize>>>,
    /// `unread_msgs`, being written by a thread of its own (taken when it is put).
    unread: Ahead<'a>,
}

impl Cx<'_> {
    /// Whether the client asked for this fetch type.
    fn wants(&self, name: &str) -> bool {
        wanted(self.request, name)
    }
}

/// Whether the client asked for this fetch type (all of them, when it named none).
fn wanted(request: &RegisterRequest<'_>, name: &str) -> bool {
    request
        .fetch_event_types
        .is_none_or(|types| types.contains(name))
}

/// The initial state being written, in the order its keys are put.
///
/// A key put twice keeps its first value: the only keys two parts put are the user's settings,
/// at the top level for older clients, which `user_settings` and the legacy display and
/// notification settings put alike.
struct Out<'o, 'b> {
    obj: &'o mut Obj<'b>,
    keys: HashSet<String>,
}

impl Out<'_, '_> {
    /// Whether `key` was not put yet (and is now).
    fn fresh(&mut self, key: &str) -> bool {
        !self.keys.contains(key) && self.keys.insert(key.to_owned())
    }

    fn put<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        if self.fresh(key) {
            self.obj.field(key, value);
        }
    }

    /// A key whose value is written straight to the answer by `write`.
    fn put_with(&mut self, key: &str, write: impl FnOnce(&mut JsonBuf)) {
        if self.fresh(key) {
            self.obj.field_with(key, write);
        }
    }
}

/// The organization: its settings, limits and server facts (`realm`).
fn realm_data(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, site, .. } = *cx;
    out.put("realm_name", &state.realm.name);
    out.put(
        "realm_description",
        &render_description(&state.realm.description),
    );
    out.put("realm_url", &site.realm_url);
    out.put("realm_uri", &site.realm_url);
    for (image, prefix) in [
        (crate::events::RealmImage::Icon, "realm_icon"),
        (crate::events::RealmImage::Logo, "realm_logo"),
        (crate::events::RealmImage::NightLogo, "realm_night_logo"),
    ] {
        let (url, source) = crate::render::realm::image_json(state, site, image);
        out.put(&format!("{prefix}_url"), &url);
        out.put(&format!("{prefix}_source"), &source);
    }
    out.put("realm_date_created", &(state.realm.date_created_ms / 1000));
    out.put("realm_empty_topic_display_name", &EMPTY_TOPIC_DISPLAY_NAME);
    for setting in SETTINGS {
        if !matches!(setting.name, "name" | "description") {
            out.put(
                &format!("realm_{}", setting.name),
                &realm_setting_json(state, setting.name),
            );
        }
    }
    // Derived forms older clients read.
    out.put(
        "realm_mandatory_topics",
        &(state.realm.text("topics_policy") == "disable_empty_topic"),
    );
    out.put(
        "realm_allow_edit_history",
        &(state.realm.text("message_edit_history_visibility_policy") != "none"),
    );
    out.put("realm_waiting_period_threshold", &0);
    out.put("realm_enable_spectator_access", &false);
    out.put("realm_default_language", &"en");
    out.put("realm_plan_type", &1);
    out.put("realm_push_notifications_enabled", &site.push_enabled);
    out.put(
        "realm_push_notifications_enabled_end_timestamp",
        &Value::Null,
    );
    out.put("realm_password_auth_enabled", &site.sign_in.password());
    out.put("realm_email_auth_enabled", &site.sign_in.email);
    out.put(
        "realm_authentication_methods",
        &site.sign_in.realm_methods(),
    );
    out.put("realm_inline_image_preview", &true);
    out.put("realm_inline_url_embed_preview", &false);
    out.put("realm_presence_disabled", &false);
    out.put("realm_send_welcome_emails", &true);
    out.put("realm_user_group_edit_policy", &1);
    out.put("realm_org_type", &0);
    // Facts of this server, which has none of the features these would configure.
    out.put(
        "realm_bot_domain",
        &crate::render::users::email_domain(site),
    );
    out.put("realm_is_zephyr_mirror_realm", &false);
    out.put("realm_disallow_disposable_email_addresses", &false);
    out.put("realm_avatar_changes_disabled", &false);
    out.put("realm_want_advertise_in_communities_directory", &false);
    out.put("realm_default_code_block_language", &"");
    out.put("realm_zulip_update_announcements_stream_id", &-1);
    out.put("realm_giphy_rating", &GIPHY_RATING_DISABLED);
    out.put("giphy_rating_options", &giphy_rating_options());
    out.put("zulip_plan_is_not_limited", &true);
    out.put("upgrade_text_for_wide_organization_logo", &"");
    out.put(
        "password_max_length",
        &crate::commands::users::MAX_PASSWORD_LENGTH,
    );
    out.put("server_min_deactivated_realm_deletion_days", &Value::Null);
    out.put("server_max_deactivated_realm_deletion_days", &Value::Null);
    // Group settings of features Chronicle does not have: everyone sees every user (Zulip's
    // default, without its limited guest access), nobody summarizes topics (there is no AI
    // summarizer), administrators would manage billing (there is none). Not changeable.
    let system = |kind| {
        state
            .groups
            .system(kind)
            .map_or(Value::Null, |id| json!(id.0))
    };
    out.put(
        "realm_can_access_all_users_group",
        &system(crate::events::SystemGroup::Everyone),
    );
    out.put(
        "realm_can_summarize_topics_group",
        &system(crate::events::SystemGroup::Nobody),
    );
    out.put(
        "realm_can_manage_billing_group",
        &system(crate::events::SystemGroup::Administrators),
    );
    let mention_group = match state.realm_permission("can_mention_many_users_group") {
        crate::events::GroupSetting::Group(id) => state.groups.get(id).and_then(|g| g.system),
        crate::events::GroupSetting::Anonymous { .. } => None,
    };
    out.put(
        "realm_wildcard_mention_policy",
        &crate::projections::realm::wildcard_mention_policy(mention_group),
    );
    out.put(
        "realm_default_external_accounts",
        &Value::Object(
            crate::commands::profile_fields::DEFAULT_EXTERNAL_ACCOUNTS
                .iter()
                .map(|a| {
                    let entry = json!({
                        "text": a.text,
                        "url_pattern": a.url_pattern,
                        "name": a.name,
                        "hint": a.hint,
                    });
                    (a.subtype.to_owned(), entry)
                })
                .collect(),
        ),
    );
    limits_and_server_facts(out, state, site);
}

/// Users, and what the user may do (`realm_user`).
fn people(out: &mut Out, cx: &Cx<'_>) {
    let Cx {
        state, site, me, ..
    } = *cx;
    let viewer = crate::render::users::Viewer::new(state, me);
    out.put_with("realm_users", |b| {
        let users = state.users.members().filter(|u| u.is_active);
        site.cards.write(b, state, site, &viewer, users, LISTED);
    });
    out.put_with("realm_non_active_users", |b| {
        let users = state.users.members().filter(|u| !u.is_active);
        site.cards.write(b, state, site, &viewer, users, LISTED);
    });
    let bot = UserShape {
        profile_data: false,
        is_active: true,
    };
    out.put_with("cross_realm_bots", |b| {
        b.objects(
            state.users.iter().filter(|u| u.is_system_bot()),
            |o, user| {
                user_fields(o, state, site, &viewer, user, bot);
                o.field("is_system_bot", &true);
            },
        );
    });
    out.put("user_id", &me.user_id.0);
    out.put("email", &me.email);
    out.put("delivery_email", &me.email);
    out.put("full_name", &me.full_name);
    out.put("avatar_source", &crate::render::users::avatar_source(me));
    out.put("avatar_url", &avatar_url(site, me));
    out.put(
        "avatar_url_medium",
        &crate::render::users::avatar_url_medium(site, me),
    );
    out.put("is_admin", &me.role.is_admin());
    out.put("is_owner", &(me.role == Role::Owner));
    out.put(
        "is_moderator",
        &matches!(me.role, Role::Owner | Role::Administrator | Role::Moderator),
    );
    out.put("is_guest", &(me.role == Role::Guest));
    let public =
        state.realm_allows(me.user_id, "can_create_public_channel_group") && me.role != Role::Guest;
    let private = state.realm_allows(me.user_id, "can_create_private_channel_group")
        && me.role != Role::Guest;
    out.put("can_create_streams", &(public || private));
    out.put("can_create_public_streams", &public);
    out.put("can_create_private_streams", &private);
    out.put("can_create_web_public_streams", &false);
    out.put(
        "can_subscribe_other_users",
        &(me.role != Role::Guest && state.realm_allows(me.user_id, "can_add_subscribers_group")),
    );
    out.put(
        "can_invite_others_to_realm",
        &(me.role != Role::Guest && state.realm_allows(me.user_id, "can_invite_users_group")),
    );
    out.put("user_list_incomplete", &false);
}

/// The bots the user manages (`realm_bot`).
fn bots(out: &mut Out, cx: &Cx<'_>) {
    let Cx {
        state,
        site,
        secret,
        me,
        ..
    } = *cx;
    // Administrators see every bot; others their own.
    let bots: Vec<Value> = state
        .users
        .iter()
        .filter(|u| u.is_bot() && !u.is_system_bot())
        .filter(|u| me.role.is_admin() || u.bot_owner_id == Some(me.user_id))
        .map(|bot| bot_json(state, site, secret, bot))
        .collect();
    out.put("realm_bots", &Value::Array(bots));
}

/// Channels the user is, was and never was subscribed to (`subscription`).
fn subscriptions(out: &mut Out, cx: &Cx<'_>) {
    let Cx {
        state, me, request, ..
    } = *cx;
    let shape = SubscriptionShape {
        include_subscribers: request.include_subscribers,
        fill_defaults: !request.capabilities.notification_settings_null,
    };
    let (active, inactive): (Vec<_>, Vec<_>) = state
        .channels
        .subscriptions_of(me.user_id)
        .filter_map(|(id, sub)| Some((state.channels.get(id)?, sub)))
        .partition(|(_, sub)| sub.active);
    for (key, list) in [("subscriptions", active), ("unsubscribed", inactive)] {
        out.put_with(key, |b| {
            b.objects(list, |o, (channel, sub)| {
                subscription_fields(o, state, me, channel, sub, shape);
            });
        });
    }
    let never = state
        .channels
        .iter()
        .filter(|c| state.channels.subscription(me.user_id, c.id).is_none())
        .filter(|c| access(state, me, c) != Access::None);
    out.put_with("never_subscribed", |b| {
        b.objects(never, |o, channel| {
            let start = o.position();
            channel_fields(o, state, channel);
            cx.channel_text
                .borrow_mut()
                .insert(channel.id, start..o.end());
            if request.include_subscribers {
                if let Some(subscribers) = visible_subscribers(state, me, channel) {
                    o.field("subscribers", &subscribers);
                }
            }
        });
    });
}

/// Every channel the user may see (`stream`).
fn streams(out: &mut Out, cx: &Cx<'_>) {
    let Cx {
        state, me, request, ..
    } = *cx;
    let streams = state
        .channels
        .iter()
        .filter(|c| !c.is_archived || request.capabilities.archived_channels)
        .filter(|c| access(state, me, c) != Access::None);
    out.put_with("streams", |b| {
        b.objects(streams, |o, channel| {
            let written = cx.channel_text.borrow().get(&channel.id).cloned();
            match written {
                Some(text) => o.fields_from(text),
                None => channel_fields(o, state, channel),
            }
        });
    });
}

/// The newest message id and, with `update_message_flags`, the unread messages (`message`).
fn messages(out: &mut Out, cx: &Cx<'_>) {
    let Cx {
        state, me, request, ..
    } = *cx;
    // The newest message the user received, as Zulip's (-1 for none).
    let max = state
        .messages
        .newest_held(me.user_id)
        .map_or(json!(-1), |id| json!(id.0));
    out.put("max_message_id", &max);
    if cx.wants("update_message_flags") {
        let written = written_ahead(&cx.unread);
        out.put_with("unread_msgs", |b| match written {
            Some(text) => b.append(text),
            None => unread_msgs(b, state, me, request.capabilities.empty_topic_name),
        });
    }
}

/// Starred message ids (`starred_messages`).
fn starred(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, me, .. } = *cx;
    let starred: Vec<u64> = state
        .messages
        .starred_of(me.user_id)
        .into_iter()
        .map(|id| id.0)
        .collect();
    out.put("starred_messages", &starred);
}

/// Topic visibility policies (`user_topic`).
fn user_topics(out: &mut Out, cx: &Cx<'_>) {
    let Cx {
        state, me, request, ..
    } = *cx;
    let topics: Vec<Value> = state
        .user_topics
        .of(me.user_id)
        .map(|(c, t)| json!({"stream_id": c.0, "topic_name": crate::render::messages::shown_topic(&t.topic, request.capabilities.empty_topic_name), "last_updated": t.last_updated, "visibility_policy": t.policy.code()}))
        .collect();
    out.put("user_topics", &Value::Array(topics));
}

/// The legacy muted topic list, for clients that did not ask for `user_topic`.
fn muted_topics(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, me, .. } = *cx;
    out.put(
        "muted_topics",
        &crate::render::channels::muted_topics_json(state, me.user_id),
    );
}

/// Custom profile fields and their types (`custom_profile_fields`).
fn profile_fields(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, .. } = *cx;
    out.put(
        "custom_profile_fields",
        &crate::render::realm::fields_json(state),
    );
    out.put("custom_profile_field_types", &custom_profile_field_types());
}

/// Linkifiers (`realm_linkifiers`).
fn linkifiers(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, request, .. } = *cx;
    // Clients that do not handle URL templates get none (Zulip's rule).
    let linkifiers = if request.capabilities.linkifier_url_template {
        crate::render::realm::linkifiers_json(state)
    } else {
        json!([])
    };
    out.put("realm_linkifiers", &linkifiers);
}

/// The legacy linkifier list (`realm_filters`), always empty.
fn legacy_filters(out: &mut Out) {
    out.put("realm_filters", &json!([]));
}

/// User groups (`realm_user_groups`).
fn user_groups(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, request, .. } = *cx;
    let groups: Vec<Value> = state
        .groups
        .iter()
        .filter(|g| !g.deactivated || request.capabilities.include_deactivated_groups)
        .map(|g| group_json(state, g))
        .collect();
    out.put("realm_user_groups", &Value::Array(groups));
}

/// Presence (`presence`).
fn presence(out: &mut Out, cx: &Cx<'_>) {
    let Cx {
        state,
        site,
        me,
        request,
        ..
    } = *cx;
    let now = crate::time::now_ms();
    let (presences, newest) =
        crate::render::presence::presences_json(state, site, me, request.presence, now);
    out.put("presences", &presences);
    out.put("presence_last_update_id", &newest);
    out.put("server_timestamp", &(now as f64 / 1000.0));
}

/// The user's settings (`user_settings`), also at the top level for older clients.
fn own_settings(out: &mut Out, cx: &Cx<'_>) {
    let Cx {
        state, me, request, ..
    } = *cx;
    let settings = user_settings(state, me);
    if request.capabilities.user_settings_object {
        out.put("user_settings", &Value::Object(settings));
    } else {
        // Older clients (zulip-terminal among them) read these at the top level.
        out.put("user_settings", &Value::Object(settings.clone()));
        for (k, v) in settings {
            out.put(&k, &v);
        }
    }
}

/// The user's settings at the top level (`update_display_settings`, `update_global_notifications`).
fn legacy_settings(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, me, .. } = *cx;
    for (k, v) in user_settings(state, me) {
        out.put(&k, &v);
    }
}

/// Custom emoji (`realm_emoji`).
fn custom_emoji(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, .. } = *cx;
    out.put(
        "realm_emoji",
        &crate::render::realm::realm_emoji_json(state),
    );
}

/// Channel folders (`channel_folders`).
fn channel_folders(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, .. } = *cx;
    let folders: Vec<Value> = state
        .folders
        .ordered()
        .into_iter()
        .map(Folders::to_json)
        .collect();
    out.put("channel_folders", &Value::Array(folders));
}

/// Default channels for new users (fetched as `default_streams`): their ids, as
/// `realm_default_streams` since Zulip 10 (feature level 330).
fn default_channels(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, .. } = *cx;
    out.put(
        "realm_default_streams",
        &crate::render::channels::default_channel_ids(state),
    );
}

/// Recent direct-message conversations (`recent_private_conversations`).
fn recent_conversations(out: &mut Out, cx: &Cx<'_>) {
    let Cx { state, me, .. } = *cx;
    // Newest first, the other participants' ids (none for one's own conversation), at
    // most Zulip's 1,000.
    let mut conversations = state.messages.conversations_of(me.user_id);
    conversations.sort_by_key(|(_, newest)| std::cmp::Reverse(*newest));
    let recent: Vec<Value> = conversations
        .into_iter()
        .take(1000)
        .map(|(participants, newest)| {
            let others: Vec<u64> = participants
                .iter()
                .filter(|id| **id != me.user_id)
                .map(|id| id.0)
                .collect();
            json!({"max_message_id": newest.0, "user_ids": others})
        })
        .collect();
    out.put("recent_private_conversations", &Value::Array(recent));
}

/// GIPHY's ratings as Zulip offers them (`giphy_rating_options`); GIPHY itself is off
/// (`giphy_api_key` is empty), as `realm_giphy_rating` says.
const GIPHY_RATING_DISABLED: i64 = 0;

fn giphy_rating_options() -> Value {
    json!({
        "disabled": {"name": "GIPHY integration disabled", "id": 0},
        "y": {"name": "Allow GIFs rated Y (Very young audience)", "id": 1},
        "g": {"name": "Allow GIFs rated G (General audience)", "id": 2},
        "pg": {"name": "Allow GIFs rated PG (Parental guidance)", "id": 3},
        "pg13": {"name": "Allow GIFs rated PG-13 (Parental guidance - under 13)", "id": 4},
        "r": {"name": "Allow GIFs rated R (Restricted)", "id": 5},
    })
}

/// Video call state (`video_calls`).
fn video_calls(out: &mut Out) {
    out.put("has_zoom_token", &false);
}

/// The organization's defaults for new users' settings (`realm_user_settings_defaults`).
fn settings_defaults(out: &mut Out, state: &Projections) {
    let mut defaults = state.user_settings.realm_defaults_json();
    defaults.insert(
        "email_address_visibility".into(),
        realm_setting_json(state, "email_address_visibility"),
    );
    out.put("realm_user_settings_defaults", &Value::Object(defaults));
}

/// The limits clients enforce before sending, and facts about the server (`realm`).
fn limits_and_server_facts(out: &mut Out, state: &Projections, site: &Site) {
    out.put("max_stream_name_length", &60);
    out.put("max_stream_description_length", &1024);
    out.put("max_topic_length", &60);
    out.put(
        "max_reminder_note_length",
        &crate::commands::scheduled::MAX_REMINDER_NOTE_LENGTH,
    );
    out.put(
        "server_report_message_types",
        &Value::Array(
            crate::commands::reports::REPORT_TYPES
                .iter()
                .map(|(key, name)| json!({"key": key, "name": name}))
                .collect(),
        ),
    );
    out.put("max_message_length", &10_000);
    out.put("max_channel_folder_name_length", &60);
    out.put("max_channel_folder_description_length", &1024);
    out.put("max_file_upload_size_mib", &site.uploads.max_file_mib);
    out.put("realm_upload_quota_mib", &site.uploads.quota_mib);
    out.put(
        "max_avatar_file_size_mib",
        &crate::avatars::MAX_AVATAR_FILE_SIZE_MIB,
    );
    out.put(
        "max_icon_file_size_mib",
        &crate::avatars::MAX_AVATAR_FILE_SIZE_MIB,
    );
    out.put(
        "max_logo_file_size_mib",
        &crate::avatars::MAX_AVATAR_FILE_SIZE_MIB,
    );
    out.put(
        "max_emoji_file_size_mib",
        &crate::commands::emoji::MAX_EMOJI_FILE_SIZE_MIB,
    );
    let formats: Vec<_> = crate::thumbnails::FORMATS
        .iter()
        .map(|f| {
            json!({
                "name": f.name(),
                "max_width": f.max_width,
                "max_height": f.max_height,
                "format": crate::thumbnails::EXTENSION,
                "animated": f.animated,
            })
        })
        .collect();
    out.put("server_thumbnail_formats", &formats);
    out.put("server_can_summarize_topics", &false);
    // The same for every answer of this build: written once.
    static SUPPORTED: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let supported = SUPPORTED.get_or_init(|| {
        serde_json::to_vec(&crate::projections::realm::supported_permission_settings())
            .unwrap_or_else(|_| b"{}".to_vec())
    });
    out.put_with("server_supported_permission_settings", |b| {
        b.text(supported)
    });
    out.put("server_typing_started_expiry_period_milliseconds", &45_000);
    out.put("server_typing_stopped_wait_period_milliseconds", &12_000);
    out.put("server_typing_started_wait_period_milliseconds", &30_000);
    out.put("server_presence_ping_interval_seconds", &60);
    out.put("server_presence_offline_threshold_seconds", &200);
    out.put("event_queue_longpoll_timeout_seconds", &90);
    out.put("server_generation", &(state.realm.date_created_ms / 1000));
    out.put("server_web_public_streams_enabled", &false);
    out.put("server_avatar_changes_disabled", &false);
    out.put("server_name_changes_disabled", &false);
    out.put("server_inline_image_preview", &true);
    out.put("server_inline_url_embed_preview", &false);
    out.put("server_needs_upgrade", &false);
    out.put(
        "server_emoji_data_url",
        &format!(
            "{}/static/generated/emoji/{}",
            site.realm_url,
            crate::emoji::api_file().name
        ),
    );
    out.put("server_jitsi_server_url", &site.video.jitsi_server_url);
    // The deprecated form: the server calls are made on.
    let realm_jitsi = match state.realm.value("jitsi_server_url") {
        crate::events::RealmValue::Text(url) => Some(url),
        _ => site.video.jitsi_server_url.clone(),
    };
    out.put("jitsi_server_url", &realm_jitsi);
    out.put(
        "realm_available_video_chat_providers",
        &Value::Object(
            site.video
                .providers()
                .into_iter()
                .map(|(key, name, id)| (key.to_owned(), json!({"name": name, "id": id})))
                .collect(),
        ),
    );
    out.put("giphy_api_key", &"");
    out.put("development_environment", &false);
    out.put("password_min_length", &6);
    out.put("password_min_guesses", &10_000);
    // The server sends digests (where the organization turns them on).
    out.put("settings_send_digest_emails", &true);
}

#[cfg(test)]
mod tests {
    use super::topic_groups;
    use crate::projections::Topic;

    #[test]
    fn unread_topics_group_case_insensitively_under_their_oldest_spelling() {
        let spellings: Vec<Topic> = ["Lunch", "lunch", "LUNCH", "b", "a"]
            .into_iter()
            .map(Topic::from)
            .collect();
        let at = |i: usize| (spellings[i].ptr() as usize, &spellings[i]);
        let messages = [
            (1, 0, 5),
            (1, 1, 3),
            (1, 2, 9),
            (1, 0, 7),
            (1, 3, 4),
            (2, 4, 1),
        ]
        .into_iter()
        .map(|(channel, spelling, id)| {
            let (address, topic) = at(spelling);
            (channel, address, id, topic)
        })
        .collect();
        let groups = topic_groups(messages, true);
        let expected = vec![
            (1, "b".to_owned(), "b".to_owned(), vec![4]),
            (1, "lunch".to_owned(), "lunch".to_owned(), vec![3, 5, 7, 9]),
            (2, "a".to_owned(), "a".to_owned(), vec![1]),
        ];
        assert_eq!(groups, expected);
    }
}

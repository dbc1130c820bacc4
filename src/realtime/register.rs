//! The initial state of `POST /register`, from the projections, by fetch type.

use super::Capabilities;
use crate::auth::ServerSecret;
use crate::events::Role;
use crate::events::TopicPolicy;
use crate::markdown::render_description;
use crate::projections::messages::EMPTY_TOPIC_DISPLAY_NAME;
use crate::projections::realm::SETTINGS;
use crate::projections::{access, Access};
use crate::projections::{Folders, Projections, User};
use crate::render::channels::{channel_json, subscription_json};
use crate::render::groups::group_json;
use crate::render::realm::realm_setting_json;
use crate::render::users::bot_json;
use crate::render::users::{avatar_url, user_json};
use crate::render::Site;
use crate::render::{ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

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
    map.insert("default_language".into(), json!("en"));
    map.insert("timezone".into(), json!(me.timezone));
    map.insert("available_notification_sounds".into(), json!(["zulip"]));
    map.insert(
        "emojiset_choices".into(),
        json!([
            {"key": "google", "text": "Google"},
            {"key": "google-blob", "text": "Google blobs"},
            {"key": "twitter", "text": "Twitter"},
            {"key": "text", "text": "Plain text"},
        ]),
    );
    map.insert(
        "email_address_visibility".into(),
        realm_setting_json(state, "email_address_visibility"),
    );
    map
}

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

/// `unread_msgs`: the user's unread messages grouped as Zulip groups them.
/// `unread_msgs`; `raw_topics`: the client handles the empty topic (`empty_topic_name`), else
/// it is shown by its display name.
fn unread_msgs(state: &Projections, me: &User, raw_topics: bool) -> Value {
    use crate::events::Recipient;
    use crate::projections::messages::flags;
    use std::collections::BTreeMap;
    let mut streams: BTreeMap<(u64, String), (String, Vec<u64>)> = BTreeMap::new();
    let mut pms: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut huddles: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut mentions = Vec::new();
    let mut count = 0;
    for (id, bits) in state.messages.received(me.user_id).into_iter().flatten() {
        if bits & flags::READ != 0 {
            continue;
        }
        let Some(message) = state.messages.get(*id) else {
            continue;
        };
        count += 1;
        if bits & (flags::MENTIONED | flags::STREAM_WILDCARD | flags::TOPIC_WILDCARD) != 0 {
            mentions.push(id.0);
        }
        match &message.recipient {
            Recipient::Channel { channel_id, topic } => {
                streams
                    .entry((channel_id.0, topic.to_lowercase()))
                    .or_insert_with(|| {
                        (
                            crate::render::messages::shown_topic(topic, raw_topics),
                            Vec::new(),
                        )
                    })
                    .1
                    .push(id.0);
            }
            Recipient::Direct { user_ids } if user_ids.len() <= 2 => {
                let other = user_ids
                    .iter()
                    .copied()
                    .find(|u| *u != me.user_id)
                    .unwrap_or(me.user_id);
                pms.entry(other.0).or_default().push(id.0);
            }
            Recipient::Direct { user_ids } => {
                let key = user_ids
                    .iter()
                    .map(|u| u.0.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                huddles.entry(key).or_default().push(id.0);
            }
        }
    }
    json!({
        "streams": streams.into_iter().map(|((stream_id, _), (topic, ids))| json!({"stream_id": stream_id, "topic": topic, "unread_message_ids": ids})).collect::<Vec<_>>(),
        "pms": pms.into_iter().map(|(other, ids)| json!({"other_user_id": other, "sender_id": other, "unread_message_ids": ids})).collect::<Vec<_>>(),
        "huddles": huddles.into_iter().map(|(key, ids)| json!({"user_ids_string": key, "unread_message_ids": ids})).collect::<Vec<_>>(),
        "mentions": mentions,
        "count": count,
        "old_unreads_missing": false,
    })
}

/// Builds the initial state for `me`. Called under the read lock, with the queue registered in
/// the same critical section.
pub fn initial_state(
    state: &Projections,
    site: &Site,
    secret: &ServerSecret,
    me: &User,
    request: &RegisterRequest<'_>,
) -> Map<String, Value> {
    let want = |name: &str| {
        request
            .fetch_event_types
            .is_none_or(|types| types.contains(name))
    };
    let mut out = Map::new();
    let mut put = |k: &str, v: Value| {
        out.insert(k.to_owned(), v);
    };
    put("zulip_version", json!(ZULIP_VERSION));
    put("zulip_feature_level", json!(ZULIP_FEATURE_LEVEL));
    put("zulip_merge_base", json!(ZULIP_MERGE_BASE));

    if want("realm") {
        put("realm_name", json!(state.realm.name));
        put(
            "realm_description",
            json!(render_description(&state.realm.description)),
        );
        put("realm_url", json!(site.realm_url));
        put("realm_uri", json!(site.realm_url));
        put(
            "realm_icon_url",
            json!(format!("{}/avatar/realm", site.realm_url)),
        );
        put("realm_icon_source", json!("G"));
        put(
            "realm_date_created",
            json!(state.realm.date_created_ms / 1000),
        );
        put(
            "realm_empty_topic_display_name",
            json!(EMPTY_TOPIC_DISPLAY_NAME),
        );
        for setting in SETTINGS {
            if !matches!(setting.name, "name" | "description") {
                put(
                    &format!("realm_{}", setting.name),
                    realm_setting_json(state, setting.name),
                );
            }
        }
        // Derived forms older clients read.
        put(
            "realm_mandatory_topics",
            json!(state.realm.text("topics_policy") == "disable_empty_topic"),
        );
        put(
            "realm_allow_edit_history",
            json!(state.realm.text("message_edit_history_visibility_policy") != "none"),
        );
        put("realm_waiting_period_threshold", json!(0));
        put("realm_enable_spectator_access", json!(false));
        put("realm_invite_required", json!(true));
        put("realm_emails_restricted_to_domains", json!(false));
        put("realm_default_language", json!("en"));
        put("realm_plan_type", json!(1));
        put("realm_push_notifications_enabled", json!(false));
        put("realm_password_auth_enabled", json!(true));
        put("realm_email_auth_enabled", json!(true));
        put(
            "realm_authentication_methods",
            json!({"Email": {"enabled": true, "available": true}}),
        );
        put("realm_inline_image_preview", json!(true));
        put("realm_inline_url_embed_preview", json!(false));
        put("realm_presence_disabled", json!(false));
        put("realm_send_welcome_emails", json!(true));
        put("realm_digest_emails_enabled", json!(false));
        put("realm_user_group_edit_policy", json!(1));
        put("realm_video_chat_provider", json!(0));
        put("realm_org_type", json!(0));
        put("max_stream_name_length", json!(60));
        put("max_stream_description_length", json!(1024));
        put("max_topic_length", json!(60));
        put("max_message_length", json!(10_000));
        put("max_channel_folder_name_length", json!(60));
        put("max_channel_folder_description_length", json!(1024));
        // No file uploads (0 tells clients so); avatars, icons and logos are generated.
        put("max_file_upload_size_mib", json!(0));
        put("max_avatar_file_size_mib", json!(0));
        put("max_icon_file_size_mib", json!(0));
        put("max_logo_file_size_mib", json!(0));
        put(
            "max_emoji_file_size_mib",
            json!(crate::commands::emoji::MAX_EMOJI_FILE_SIZE_MIB),
        );
        put("server_thumbnail_formats", json!([]));
        put("server_can_summarize_topics", json!(false));
        put(
            "server_supported_permission_settings",
            crate::projections::realm::supported_permission_settings(),
        );
        put(
            "server_typing_started_expiry_period_milliseconds",
            json!(45_000),
        );
        put(
            "server_typing_stopped_wait_period_milliseconds",
            json!(12_000),
        );
        put(
            "server_typing_started_wait_period_milliseconds",
            json!(30_000),
        );
        put("server_presence_ping_interval_seconds", json!(60));
        put("server_presence_offline_threshold_seconds", json!(200));
        put("event_queue_longpoll_timeout_seconds", json!(90));
        put(
            "server_generation",
            json!(state.realm.date_created_ms / 1000),
        );
        put("server_web_public_streams_enabled", json!(false));
        put("server_avatar_changes_disabled", json!(false));
        put("server_name_changes_disabled", json!(false));
        put("server_inline_image_preview", json!(true));
        put("server_inline_url_embed_preview", json!(false));
        put("server_needs_upgrade", json!(false));
        put("server_emoji_data_url", Value::Null);
        put("server_jitsi_server_url", Value::Null);
        put("realm_jitsi_server_url", Value::Null);
        put("giphy_api_key", json!(""));
        put("development_environment", json!(false));
        put("password_min_length", json!(6));
        put("password_min_guesses", json!(10_000));
        put("settings_send_digest_emails", json!(false));
    }
    if want("realm_user") {
        let mut members = Vec::new();
        let mut non_active = Vec::new();
        for user in state.users.members() {
            let mut json = user_json(state, site, me, user, true);
            if let Value::Object(map) = &mut json {
                map.remove("is_active");
            }
            if user.is_active {
                members.push(json);
            } else {
                non_active.push(json);
            }
        }
        put("realm_users", Value::Array(members));
        put("realm_non_active_users", Value::Array(non_active));
        let system_bots: Vec<Value> = state
            .users
            .iter()
            .filter(|u| u.is_system_bot())
            .map(|bot| {
                let mut json = user_json(state, site, me, bot, false);
                json["is_system_bot"] = json!(true);
                json
            })
            .collect();
        put("cross_realm_bots", Value::Array(system_bots));
        put("user_id", json!(me.user_id.0));
        put("email", json!(me.email));
        put("delivery_email", json!(me.email));
        put("full_name", json!(me.full_name));
        put("avatar_source", json!("G"));
        put("avatar_url", json!(avatar_url(site, me)));
        put("avatar_url_medium", json!(avatar_url(site, me)));
        put("is_admin", json!(me.role.is_admin()));
        put("is_owner", json!(me.role == Role::Owner));
        put(
            "is_moderator",
            json!(matches!(
                me.role,
                Role::Owner | Role::Administrator | Role::Moderator
            )),
        );
        put("is_guest", json!(me.role == Role::Guest));
        let public = state.realm_allows(me.user_id, "can_create_public_channel_group")
            && me.role != Role::Guest;
        let private = state.realm_allows(me.user_id, "can_create_private_channel_group")
            && me.role != Role::Guest;
        put("can_create_streams", json!(public || private));
        put("can_create_public_streams", json!(public));
        put("can_create_private_streams", json!(private));
        put("can_create_web_public_streams", json!(false));
        put(
            "can_subscribe_other_users",
            json!(
                me.role != Role::Guest
                    && state.realm_allows(me.user_id, "can_add_subscribers_group")
            ),
        );
        put(
            "can_invite_others_to_realm",
            json!(
                me.role != Role::Guest && state.realm_allows(me.user_id, "can_invite_users_group")
            ),
        );
        put("user_list_incomplete", json!(false));
    }
    if want("realm_bot") {
        // Administrators see every bot; others their own.
        let bots: Vec<Value> = state
            .users
            .iter()
            .filter(|u| u.is_bot() && !u.is_system_bot())
            .filter(|u| me.role.is_admin() || u.bot_owner_id == Some(me.user_id))
            .map(|bot| bot_json(state, site, secret, bot))
            .collect();
        put("realm_bots", Value::Array(bots));
    }
    if want("subscription") {
        let mut subscribed = Vec::new();
        let mut unsubscribed = Vec::new();
        for (channel_id, sub) in state.channels.subscriptions_of(me.user_id) {
            let Some(channel) = state.channels.get(channel_id) else {
                continue;
            };
            let mut json = subscription_json(state, me, channel, sub, request.include_subscribers);
            if !request.capabilities.notification_settings_null {
                crate::render::channels::fill_notification_defaults(state, me.user_id, &mut json);
            }
            if sub.active {
                subscribed.push(json);
            } else {
                unsubscribed.push(json);
            }
        }
        let never: Vec<Value> = state
            .channels
            .iter()
            .filter(|c| state.channels.subscription(me.user_id, c.id).is_none())
            .filter(|c| access(state, me, c) != Access::None)
            .map(|c| {
                let mut json = channel_json(state, c);
                if request.include_subscribers {
                    if let (Value::Object(map), Some(subs)) = (
                        &mut json,
                        crate::render::channels::visible_subscribers(state, me, c),
                    ) {
                        map.insert("subscribers".into(), json!(subs));
                    }
                }
                json
            })
            .collect();
        put("subscriptions", Value::Array(subscribed));
        put("unsubscribed", Value::Array(unsubscribed));
        put("never_subscribed", Value::Array(never));
    }
    if want("stream") {
        let streams: Vec<Value> = state
            .channels
            .iter()
            .filter(|c| !c.is_archived || request.capabilities.archived_channels)
            .filter(|c| access(state, me, c) != Access::None)
            .map(|c| channel_json(state, c))
            .collect();
        put("streams", Value::Array(streams));
    }
    if want("message") {
        // The newest message the user received, as Zulip's (-1 for none).
        let max = state
            .messages
            .received(me.user_id)
            .and_then(|received| received.keys().next_back())
            .map_or(json!(-1), |id| json!(id.0));
        put("max_message_id", max);
        if want("update_message_flags") {
            put(
                "unread_msgs",
                unread_msgs(state, me, request.capabilities.empty_topic_name),
            );
        }
    }
    if want("starred_messages") {
        let starred: Vec<u64> = state
            .messages
            .received(me.user_id)
            .into_iter()
            .flatten()
            .filter(|(_, bits)| *bits & crate::projections::messages::flags::STARRED != 0)
            .map(|(id, _)| id.0)
            .collect();
        put("starred_messages", json!(starred));
    }
    if want("user_topic") {
        let topics: Vec<Value> = state
            .user_topics
            .of(me.user_id)
            .map(|(c, t)| json!({"stream_id": c.0, "topic_name": crate::render::messages::shown_topic(&t.topic, request.capabilities.empty_topic_name), "last_updated": t.last_updated, "visibility_policy": t.policy.code()}))
            .collect();
        put("user_topics", Value::Array(topics));
    }
    if want("muted_topics")
        && !request
            .fetch_event_types
            .is_some_and(|t| t.contains("user_topic"))
    {
        let muted: Vec<Value> = state
            .user_topics
            .of(me.user_id)
            .filter(|(_, t)| t.policy == TopicPolicy::Muted)
            .filter_map(|(c, t)| {
                state
                    .channels
                    .get(c)
                    .map(|ch| json!([ch.name, t.topic, t.last_updated]))
            })
            .collect();
        put("muted_topics", Value::Array(muted));
    }
    if want("custom_profile_fields") {
        put(
            "custom_profile_fields",
            crate::render::realm::fields_json(state),
        );
        put("custom_profile_field_types", custom_profile_field_types());
    }
    if want("realm_linkifiers") {
        // Clients that do not handle URL templates get none (Zulip's rule).
        let linkifiers = if request.capabilities.linkifier_url_template {
            crate::render::realm::linkifiers_json(state)
        } else {
            json!([])
        };
        put("realm_linkifiers", linkifiers);
    }
    if want("realm_filters") {
        put("realm_filters", json!([]));
    }
    if want("realm_user_groups") {
        let groups: Vec<Value> = state
            .groups
            .iter()
            .filter(|g| !g.deactivated || request.capabilities.include_deactivated_groups)
            .map(|g| group_json(state, g))
            .collect();
        put("realm_user_groups", Value::Array(groups));
    }
    if want("presence") {
        let now = crate::time::now_ms();
        let (presences, newest) =
            crate::render::presence::presences_json(state, site, me, request.presence, now);
        put("presences", presences);
        put("presence_last_update_id", json!(newest));
        put("server_timestamp", json!(now as f64 / 1000.0));
    }
    if want("user_settings") {
        let settings = user_settings(state, me);
        if request.capabilities.user_settings_object {
            put("user_settings", Value::Object(settings));
        } else {
            // Older clients (zulip-terminal among them) read these at the top level.
            put("user_settings", Value::Object(settings.clone()));
            for (k, v) in settings {
                put(&k, v);
            }
        }
    }
    if want("update_display_settings") || want("update_global_notifications") {
        for (k, v) in user_settings(state, me) {
            put(&k, v);
        }
    }
    if want("realm_emoji") {
        put("realm_emoji", crate::render::realm::realm_emoji_json(state));
    }
    if want("channel_folders") {
        let folders: Vec<Value> = state
            .folders
            .ordered()
            .into_iter()
            .map(Folders::to_json)
            .collect();
        put("channel_folders", Value::Array(folders));
    }
    if want("default_streams") {
        let defaults: Vec<Value> = state
            .channels
            .iter()
            .filter(|c| c.is_default && !c.is_archived)
            .map(|c| channel_json(state, c))
            .collect();
        put("default_streams", Value::Array(defaults));
    }
    if want("recent_private_conversations") {
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
        put("recent_private_conversations", Value::Array(recent));
    }
    if want("default_stream_groups") {
        put("default_stream_groups", json!([]));
    }
    for (fetch, key, empty) in [
        ("muted_users", "muted_users", json!([])),
        ("user_status", "user_status", json!({})),
        ("alert_words", "alert_words", json!([])),
        ("drafts", "drafts", json!([])),
        ("scheduled_messages", "scheduled_messages", json!([])),
        ("saved_snippets", "saved_snippets", json!([])),
        ("onboarding_steps", "onboarding_steps", json!([])),
        ("realm_playgrounds", "realm_playgrounds", json!([])),
        ("realm_domains", "realm_domains", json!([])),
        ("navigation_views", "navigation_views", json!([])),
    ] {
        if want(fetch) {
            put(key, empty);
        }
    }
    if want("video_calls") {
        put("has_zoom_token", json!(false));
    }
    if want("realm_user_settings_defaults") {
        put(
            "realm_user_settings_defaults",
            Value::Object(crate::projections::user_settings::defaults()),
        );
    }
    out
}

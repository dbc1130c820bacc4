//! A client's side of `/register` for the model tests: folds the events a queue received into
//! the state its client was given, as a Zulip client does, for the parts of the state the
//! model's commands change. [`model_tests`](crate::model_tests) checks that the result equals a
//! fresh `/register` (Zulip's own consistency oracle, `test_events`). Nothing here reads the
//! server's projections: it knows only the initial state and the events.

use serde_json::{json, Map, Value};

/// The parts of the state compared, each with the key its objects are sorted by.
pub const COMPARED: [&str; 16] = [
    "realm_users",
    "realm_user_groups",
    "streams",
    "subscriptions",
    "unsubscribed",
    "never_subscribed",
    "unread_msgs",
    "starred_messages",
    "user_topics",
    "max_message_id",
    "muted_users",
    "alert_words",
    "drafts",
    "saved_snippets",
    "navigation_views",
    "scheduled_messages",
];

/// `max_message_id` once the newest message was deleted: the comparison takes the fresh value.
pub const UNKNOWABLE: &str = "unknowable";

/// Fields a client is not told of changes to: Zulip recomputes them in a daily job and sends
/// no event, so they are left out of the comparison.
const UNTRACKED: [&str; 2] = ["stream_weekly_traffic", "is_recently_active"];

/// Raises `max_message_id` to `id`. While it is unknowable only a brand-new message (`newest`,
/// above every id there is) makes it known again.
fn raise_max(state: &mut Map<String, Value>, id: u64, newest: bool) {
    let max = &state["max_message_id"];
    let raise = match max.as_i64() {
        Some(max) => max < id as i64,
        None => newest,
    };
    if raise {
        state.insert("max_message_id".into(), json!(id));
    }
}

/// Applies one event to `state`, the client of user `me`.
pub fn apply(state: &mut Map<String, Value>, me: u64, event: &Value) {
    let op = event["op"].as_str().unwrap_or_default();
    match event["type"].as_str().unwrap_or_default() {
        "realm_user" if op == "add" => {
            let id = &event["person"]["user_id"];
            let users = array(state, "realm_users");
            if !users.iter().any(|u| &u["user_id"] == id) {
                // `realm_users` holds active users only, without `is_active` (as Zulip's own
                // post-processing of `raw_users` files them).
                let mut person = event["person"].clone();
                if let Some(map) = person.as_object_mut() {
                    map.remove("is_active");
                }
                users.push(person);
            }
        }
        "realm_user" if op == "update" => {
            let person = &event["person"];
            let id = person["user_id"].clone();
            match person["is_active"].as_bool() {
                Some(false) => deactivated(state, &id),
                Some(true) => {
                    let inactive = array(state, "realm_non_active_users");
                    if let Some(at) = inactive.iter().position(|u| u["user_id"] == id) {
                        let mut user = inactive.remove(at);
                        if let Some(map) = user.as_object_mut() {
                            map.remove("is_active");
                        }
                        array(state, "realm_users").push(user);
                    }
                }
                None => {
                    for key in ["realm_users", "realm_non_active_users"] {
                        let Some(user) = array(state, key).iter_mut().find(|u| u["user_id"] == id)
                        else {
                            continue;
                        };
                        merge(user, person);
                        // The flags follow from the role, as clients derive them.
                        if let Some(role) = person["role"].as_u64() {
                            user["is_owner"] = json!(role == 100);
                            user["is_admin"] = json!(role <= 200);
                            user["is_guest"] = json!(role == 600);
                        }
                    }
                }
            }
        }
        "user_group" => apply_group(state, op, event),
        "stream" => apply_stream(state, op, event),
        "subscription" => apply_subscription(state, me, op, event),
        "message" => apply_message(state, me, event),
        // Both events carry the whole list.
        "muted_users" => {
            state.insert("muted_users".into(), event["muted_users"].clone());
        }
        "alert_words" => {
            state.insert("alert_words".into(), event["alert_words"].clone());
        }
        "update_message_flags" => apply_flags(state, me, op, event),
        "drafts" => apply_listed(
            state,
            "drafts",
            "id",
            op,
            &event["drafts"],
            &event["draft"],
            &event["draft_id"],
        ),
        "saved_snippets" => apply_listed(
            state,
            "saved_snippets",
            "id",
            op,
            &json!([event["saved_snippet"]]),
            &event["saved_snippet"],
            &event["saved_snippet_id"],
        ),
        "scheduled_messages" => apply_listed(
            state,
            "scheduled_messages",
            "scheduled_message_id",
            op,
            &event["scheduled_messages"],
            &event["scheduled_message"],
            &event["scheduled_message_id"],
        ),
        "navigation_view" => apply_view(state, op, event),
        "delete_message" => {
            let ids = ids(&event["message_ids"]);
            // A client cannot know which older message is now its newest (Zulip's own
            // `apply_events` asks the database here).
            if state["max_message_id"]
                .as_u64()
                .is_some_and(|max| ids.contains(&max))
            {
                state.insert("max_message_id".into(), json!(UNKNOWABLE));
            }
            remove_unread(state, &ids);
            array(state, "starred_messages").retain(|id| !ids.contains(&id.as_u64().unwrap_or(0)));
        }
        "update_message" => apply_move(state, event),
        // Reacting to a message gives the user a historical copy too.
        "reaction" if event["user_id"] == json!(me) => {
            raise_max(state, event["message_id"].as_u64().unwrap_or(0), false);
        }
        "user_topic" => {
            let key = (event["stream_id"].clone(), event["topic_name"].clone());
            let topics = array(state, "user_topics");
            topics.retain(|t| (t["stream_id"].clone(), t["topic_name"].clone()) != key);
            if event["visibility_policy"] != json!(0) {
                topics.push(json!({
                    "stream_id": key.0, "topic_name": key.1,
                    "last_updated": event["last_updated"],
                    "visibility_policy": event["visibility_policy"],
                }));
            }
        }
        _ => {}
    }
}

/// A user was deactivated: they move to `realm_non_active_users` and leave every subscriber
/// and member list, as a Zulip client infers.
fn deactivated(state: &mut Map<String, Value>, id: &Value) {
    let users = array(state, "realm_users");
    if let Some(at) = users.iter().position(|u| &u["user_id"] == id) {
        let mut user = users.remove(at);
        user["is_active"] = json!(false);
        array(state, "realm_non_active_users").push(user);
    }
    let mut counts = Vec::new();
    for key in ["subscriptions", "unsubscribed", "never_subscribed"] {
        for sub in array(state, key).iter_mut() {
            let Some(subscribers) = sub["subscribers"].as_array_mut() else {
                continue;
            };
            if let Some(at) = subscribers.iter().position(|u| u == id) {
                subscribers.remove(at);
                let count = sub["subscriber_count"]
                    .as_u64()
                    .unwrap_or(1)
                    .saturating_sub(1);
                sub["subscriber_count"] = json!(count);
                counts.push((sub["stream_id"].clone(), json!(count)));
            }
        }
    }
    for (stream_id, count) in counts {
        set_count(state, &stream_id, count);
    }
    for group in array(state, "realm_user_groups").iter_mut() {
        if let Some(members) = group["members"].as_array_mut() {
            members.retain(|m| m != id);
        }
    }
}

fn apply_group(state: &mut Map<String, Value>, op: &str, event: &Value) {
    let groups = array(state, "realm_user_groups");
    if op == "add" {
        groups.push(event["group"].clone());
        return;
    }
    let Some(group) = groups.iter_mut().find(|g| g["id"] == event["group_id"]) else {
        return;
    };
    match op {
        "add_members" | "remove_members" => {
            let members = group["members"].as_array_mut();
            if let Some(members) = members {
                let changed = ids(&event["user_ids"]);
                members.retain(|m| !changed.contains(&m.as_u64().unwrap_or(0)));
                if op == "add_members" {
                    members.extend(changed.iter().map(|id| json!(id)));
                }
            }
        }
        "update" => merge(group, &event["data"]),
        _ => {}
    }
}

fn apply_stream(state: &mut Map<String, Value>, op: &str, event: &Value) {
    let streams = event["streams"].as_array().cloned().unwrap_or_default();
    match op {
        "create" => {
            for stream in streams {
                let id = stream["stream_id"].clone();
                let known = |key: &str, state: &mut Map<String, Value>| {
                    array(state, key).iter().any(|s| s["stream_id"] == id)
                };
                if !known("streams", state) {
                    array(state, "streams").push(stream.clone());
                }
                // Not yet a subscriber: the subscription, if any, follows in its own event.
                if !known("subscriptions", state)
                    && !known("unsubscribed", state)
                    && !known("never_subscribed", state)
                {
                    let mut never = stream.clone();
                    never["subscribers"] = json!([]);
                    never["subscriber_count"] = json!(0);
                    array(state, "never_subscribed").push(never);
                }
            }
        }
        "delete" => {
            let gone = ids(&event["stream_ids"]);
            for key in ["streams", "never_subscribed"] {
                array(state, key).retain(|s| !gone.contains(&s["stream_id"].as_u64().unwrap_or(0)));
            }
        }
        "update" => {
            let id = &event["stream_id"];
            let property = event["property"].as_str().unwrap_or_default();
            for key in [
                "streams",
                "subscriptions",
                "unsubscribed",
                "never_subscribed",
            ] {
                for stream in array(state, key)
                    .iter_mut()
                    .filter(|s| &s["stream_id"] == id)
                {
                    stream[property] = event["value"].clone();
                }
            }
        }
        _ => {}
    }
}

fn apply_subscription(state: &mut Map<String, Value>, me: u64, op: &str, event: &Value) {
    match op {
        "add" => {
            for sub in event["subscriptions"].as_array().into_iter().flatten() {
                let id = sub["stream_id"].clone();
                for key in ["unsubscribed", "never_subscribed", "subscriptions"] {
                    array(state, key).retain(|s| s["stream_id"] != id);
                }
                array(state, "subscriptions").push(sub.clone());
                set_count(state, &id, sub["subscriber_count"].clone());
            }
        }
        "remove" => {
            for gone in event["subscriptions"].as_array().into_iter().flatten() {
                let id = gone["stream_id"].clone();
                let subs = array(state, "subscriptions");
                let Some(at) = subs.iter().position(|s| s["stream_id"] == id) else {
                    continue;
                };
                let mut sub = subs.remove(at);
                let count = sub["subscriber_count"]
                    .as_u64()
                    .unwrap_or(1)
                    .saturating_sub(1);
                sub["subscriber_count"] = json!(count);
                if let Some(subscribers) = sub["subscribers"].as_array_mut() {
                    subscribers.retain(|u| u != &json!(me));
                }
                array(state, "unsubscribed").push(sub);
                set_count(state, &id, json!(count));
            }
        }
        "peer_add" | "peer_remove" => {
            let users = ids(&event["user_ids"]);
            for stream_id in ids(&event["stream_ids"]) {
                let id = json!(stream_id);
                for key in ["subscriptions", "unsubscribed", "never_subscribed"] {
                    for sub in array(state, key)
                        .iter_mut()
                        .filter(|s| s["stream_id"] == id)
                    {
                        let Some(subscribers) = sub["subscribers"].as_array_mut() else {
                            continue;
                        };
                        subscribers.retain(|u| !users.contains(&u.as_u64().unwrap_or(0)));
                        if op == "peer_add" {
                            subscribers.extend(users.iter().map(|u| json!(u)));
                        }
                        sub["subscriber_count"] = json!(subscribers.len());
                    }
                }
                let count = ["subscriptions", "unsubscribed", "never_subscribed"]
                    .iter()
                    .find_map(|key| {
                        array(state, key)
                            .iter()
                            .find(|s| s["stream_id"] == id)
                            .map(|s| s["subscriber_count"].clone())
                    });
                if let Some(count) = count {
                    set_count(state, &id, count);
                }
            }
        }
        _ => {}
    }
}

/// Sets a channel's `subscriber_count` in `streams`.
fn set_count(state: &mut Map<String, Value>, stream_id: &Value, count: Value) {
    for stream in array(state, "streams")
        .iter_mut()
        .filter(|s| &s["stream_id"] == stream_id)
    {
        stream["subscriber_count"] = count.clone();
    }
}

fn apply_message(state: &mut Map<String, Value>, me: u64, event: &Value) {
    let message = &event["message"];
    let id = message["id"].as_u64().unwrap_or(0);
    raise_max(state, id, true);
    let flags = strings(&event["flags"]);
    if flags.iter().any(|f| f == "read") {
        return;
    }
    let place = if message["type"] == "stream" {
        Place::Stream(message["stream_id"].clone(), message["subject"].clone())
    } else {
        let others: Vec<u64> = message["display_recipient"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["id"].as_u64())
            .filter(|u| *u != me)
            .collect();
        Place::direct(me, &others)
    };
    add_unread(state, id, &place);
    if flags.iter().any(|f| f.contains("mentioned")) {
        if let Some(mentions) = unread(state)["mentions"].as_array_mut() {
            mentions.push(json!(id));
        }
    }
}

fn apply_flags(state: &mut Map<String, Value>, me: u64, op: &str, event: &Value) {
    let message_ids = ids(&event["messages"]);
    // Flagging a message the user never received gives them a (historical) copy, which
    // `max_message_id` counts, as Zulip's does with its historical rows.
    if let Some(newest) = message_ids.iter().max() {
        raise_max(state, *newest, false);
    }
    match (event["flag"].as_str().unwrap_or_default(), op) {
        ("read", "add") => remove_unread(state, &message_ids),
        ("read", "remove") => {
            for id in message_ids {
                let detail = &event["message_details"][id.to_string()];
                let place = if detail["type"] == "stream" {
                    Place::Stream(detail["stream_id"].clone(), detail["topic"].clone())
                } else {
                    Place::direct(me, &ids(&detail["user_ids"]))
                };
                add_unread(state, id, &place);
            }
        }
        ("starred", "add") => {
            let starred = array(state, "starred_messages");
            for id in message_ids {
                if !starred.contains(&json!(id)) {
                    starred.push(json!(id));
                }
            }
        }
        ("starred", "remove") => {
            array(state, "starred_messages")
                .retain(|id| !message_ids.contains(&id.as_u64().unwrap_or(0)));
        }
        _ => {}
    }
}

/// A topic move: unread messages follow their topic (and channel), re-filed under the new one.
/// A list of the user's own objects, by `id_key`: `add` appends (`added` is a list), `update`
/// replaces the one with the same id, `remove` drops `removed_id`'s.
fn apply_listed(
    state: &mut Map<String, Value>,
    key: &str,
    id_key: &str,
    op: &str,
    added: &Value,
    updated: &Value,
    removed_id: &Value,
) {
    let list = array(state, key);
    match op {
        "add" => list.extend(added.as_array().cloned().unwrap_or_default()),
        "update" => {
            for item in list.iter_mut() {
                if item[id_key] == updated[id_key] {
                    *item = updated.clone();
                }
            }
        }
        "remove" => list.retain(|item| &item[id_key] != removed_id),
        _ => {}
    }
}

/// `navigation_view` events: by fragment, an update carrying only the changed fields.
fn apply_view(state: &mut Map<String, Value>, op: &str, event: &Value) {
    let list = array(state, "navigation_views");
    match op {
        "add" => list.push(event["navigation_view"].clone()),
        "update" => {
            for view in list.iter_mut() {
                if view["fragment"] == event["fragment"] {
                    for (k, v) in event["data"].as_object().into_iter().flatten() {
                        view[k] = v.clone();
                    }
                }
            }
        }
        "remove" => list.retain(|view| view["fragment"] != event["fragment"]),
        _ => {}
    }
}

fn apply_move(state: &mut Map<String, Value>, event: &Value) {
    if event.get("subject").is_none() && event.get("new_stream_id").is_none() {
        return;
    }
    let moved = ids(&event["message_ids"]);
    // Moved into a channel the user is subscribed to and whose history subscribers read: the
    // user now holds the messages (Zulip gives them read rows), so `max_message_id` may rise.
    // Someone told of the move only because they held one of the messages (a reaction to a
    // public channel's message, say) holds no more than before.
    let new_channel = event.get("new_stream_id").and_then(Value::as_u64);
    let receives = new_channel.is_some_and(|channel| {
        state["subscriptions"].as_array().is_some_and(|subs| {
            subs.iter().any(|sub| {
                sub["stream_id"].as_u64() == Some(channel)
                    && (sub["invite_only"] == json!(false)
                        || sub["history_public_to_subscribers"] == json!(true))
            })
        })
    });
    if receives {
        if let Some(newest) = moved.iter().max() {
            raise_max(state, *newest, false);
        }
    }
    let Some(streams) = unread(state)["streams"].as_array().cloned() else {
        return;
    };
    let mut kept = Vec::new();
    let mut refile = Vec::new();
    for bucket in streams {
        let (stay, go): (Vec<Value>, Vec<Value>) = bucket["unread_message_ids"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .partition(|id| !moved.contains(&id.as_u64().unwrap_or(0)));
        for id in go {
            let stream = event
                .get("new_stream_id")
                .cloned()
                .unwrap_or_else(|| bucket["stream_id"].clone());
            let topic = event
                .get("subject")
                .cloned()
                .unwrap_or_else(|| bucket["topic"].clone());
            refile.push((id.as_u64().unwrap_or(0), Place::Stream(stream, topic)));
        }
        let mut bucket = bucket;
        bucket["unread_message_ids"] = Value::Array(stay);
        kept.push(bucket);
    }
    let unread = unread(state);
    unread["streams"] = Value::Array(kept);
    // Re-filed below, where they count again.
    unread["count"] = json!(unread["count"].as_u64().unwrap_or(0) - refile.len() as u64);
    for (id, place) in refile {
        add_unread(state, id, &place);
    }
}

/// Where an unread message is filed.
enum Place {
    Stream(Value, Value),
    Pm(u64),
    Huddle(String),
}

impl Place {
    /// A direct message between `me` and `others`.
    fn direct(me: u64, others: &[u64]) -> Place {
        match others {
            [] => Place::Pm(me),
            [other] => Place::Pm(*other),
            _ => {
                let mut all: Vec<u64> = others.to_vec();
                all.push(me);
                all.sort_unstable();
                all.dedup();
                Place::Huddle(all.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
            }
        }
    }
}

impl Place {
    /// The `unread_msgs` list it belongs in.
    fn list(&self) -> &'static str {
        match self {
            Place::Stream(..) => "streams",
            Place::Pm(_) => "pms",
            Place::Huddle(_) => "huddles",
        }
    }

    fn holds(&self, bucket: &Value) -> bool {
        match self {
            Place::Stream(stream, topic) => {
                &bucket["stream_id"] == stream && &bucket["topic"] == topic
            }
            Place::Pm(other) => bucket["other_user_id"] == json!(other),
            Place::Huddle(key) => bucket["user_ids_string"] == json!(key),
        }
    }

    fn empty_bucket(&self) -> Value {
        match self {
            Place::Stream(stream, topic) => {
                json!({"stream_id": stream, "topic": topic, "unread_message_ids": []})
            }
            Place::Pm(other) => {
                json!({"other_user_id": other, "sender_id": other, "unread_message_ids": []})
            }
            Place::Huddle(key) => json!({"user_ids_string": key, "unread_message_ids": []}),
        }
    }
}

fn add_unread(state: &mut Map<String, Value>, id: u64, place: &Place) {
    let unread = unread(state);
    let key = place.list();
    let Some(buckets) = unread[key].as_array_mut() else {
        return;
    };
    let at = match buckets.iter().position(|b| place.holds(b)) {
        Some(at) => at,
        None => {
            buckets.push(place.empty_bucket());
            buckets.len() - 1
        }
    };
    if let Some(list) = buckets[at]["unread_message_ids"].as_array_mut() {
        if !list.contains(&json!(id)) {
            list.push(json!(id));
            unread["count"] = json!(unread["count"].as_u64().unwrap_or(0) + 1);
        }
    }
}

fn remove_unread(state: &mut Map<String, Value>, message_ids: &[u64]) {
    let unread = unread(state);
    let mut removed = 0u64;
    for key in ["streams", "pms", "huddles"] {
        for bucket in unread[key].as_array_mut().into_iter().flatten() {
            if let Some(list) = bucket["unread_message_ids"].as_array_mut() {
                let before = list.len();
                list.retain(|id| !message_ids.contains(&id.as_u64().unwrap_or(0)));
                removed += (before - list.len()) as u64;
            }
        }
    }
    if let Some(mentions) = unread["mentions"].as_array_mut() {
        mentions.retain(|id| !message_ids.contains(&id.as_u64().unwrap_or(0)));
    }
    unread["count"] = json!(unread["count"].as_u64().unwrap_or(0) - removed);
}

/// The compared parts of a state in a canonical order: lists of objects sorted by their id,
/// id lists sorted, empty unread buckets dropped, untracked fields removed.
pub fn canonical(state: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for key in COMPARED {
        let mut value = state.get(key).cloned().unwrap_or(Value::Null);
        strip(&mut value);
        match key {
            "realm_users" => sort_by(&mut value, |v| v["user_id"].to_string()),
            "realm_user_groups" => sort_by(&mut value, |v| v["id"].to_string()),
            "streams" | "subscriptions" | "unsubscribed" | "never_subscribed" => {
                sort_by(&mut value, |v| format!("{:>20}", v["stream_id"]));
            }
            "user_topics" => sort_by(&mut value, |v| {
                format!("{:>20} {}", v["stream_id"], v["topic_name"])
            }),
            "starred_messages" => sort_ids(&mut value),
            // The server lists drafts by last edit; a client keeps them as they came.
            "drafts" | "saved_snippets" => sort_by(&mut value, |v| format!("{:>20}", v["id"])),
            "scheduled_messages" => {
                sort_by(&mut value, |v| format!("{:>20}", v["scheduled_message_id"]))
            }
            "unread_msgs" => {
                for bucket_key in ["streams", "pms", "huddles"] {
                    let buckets = &mut value[bucket_key];
                    if let Some(list) = buckets.as_array_mut() {
                        list.retain(|b| b["unread_message_ids"] != json!([]));
                        for bucket in list.iter_mut() {
                            sort_ids(&mut bucket["unread_message_ids"]);
                        }
                    }
                    sort_by(buckets, |b| {
                        format!(
                            "{:>20} {} {} {}",
                            b["stream_id"], b["topic"], b["other_user_id"], b["user_ids_string"]
                        )
                    });
                }
                sort_ids(&mut value["mentions"]);
            }
            _ => {}
        }
        out.insert(key.to_owned(), value);
    }
    Value::Object(out)
}

/// Removes untracked fields and sorts member and subscriber lists, at any depth.
fn strip(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for field in UNTRACKED {
                map.remove(field);
            }
            for (key, inner) in map.iter_mut() {
                if matches!(
                    key.as_str(),
                    "members" | "subscribers" | "direct_subgroup_ids"
                ) {
                    sort_ids(inner);
                } else {
                    strip(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

fn sort_by(value: &mut Value, key: impl Fn(&Value) -> String) {
    if let Some(list) = value.as_array_mut() {
        list.sort_by_key(|v| key(v));
    }
}

fn sort_ids(value: &mut Value) {
    if let Some(list) = value.as_array_mut() {
        list.sort_by_key(|v| v.as_u64().unwrap_or(0));
    }
}

fn merge(target: &mut Value, fields: &Value) {
    if let (Some(target), Some(fields)) = (target.as_object_mut(), fields.as_object()) {
        for (k, v) in fields {
            target.insert(k.clone(), v.clone());
        }
    }
}

fn array<'a>(state: &'a mut Map<String, Value>, key: &str) -> &'a mut Vec<Value> {
    let slot = state.entry(key).or_insert_with(|| json!([]));
    if !slot.is_array() {
        *slot = json!([]);
    }
    slot.as_array_mut().expect("made an array above")
}

fn unread(state: &mut Map<String, Value>) -> &mut Value {
    state.entry("unread_msgs").or_insert_with(
        || json!({"streams": [], "pms": [], "huddles": [], "mentions": [], "count": 0}),
    )
}

fn ids(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

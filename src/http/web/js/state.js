// The client's model: folded from the /register answer and then from each event, so that the
// views only read it. Nothing here touches the DOM.
import { t } from "./texts.js";

export const state = {};

export const ROLE_OWNER = 100;
export const ROLE_ADMIN = 200;
export const ROLE_MODERATOR = 300;
export const ROLE_MEMBER = 400;
export const ROLE_GUEST = 600;
// Zulip's topic visibility policies.
export const TOPIC_MUTED = 1;
export const TOPIC_UNMUTED = 2;
export const TOPIC_FOLLOWED = 3;

export function load(reg) {
  Object.assign(state, {
    me: { user_id: reg.user_id, email: reg.email, delivery_email: reg.delivery_email, full_name: reg.full_name },
    users: new Map(),
    subs: new Map(),
    streams: new Map(),
    unread: new Map(),      // message id -> {stream_id, topic} | {dm: key}
    mentions: new Set(),
    starred: new Set(reg.starred_messages || []),
    presence: new Map(Object.entries(reg.presences || {}).map(([id, p]) => [Number(id), p])),
    status: new Map(Object.entries(reg.user_status || {}).map(([id, s]) => [Number(id), s])),
    userTopics: new Map(),
    topics: new Map(),      // stream id -> [{name, max_id}], newest first
    dms: new Map(),         // key -> {user_ids, max_id}
    typing: new Map(),      // conversation key -> Map(user id -> expiry timer)
    realmEmoji: reg.realm_emoji || {},
    settings: reg.user_settings || {},
    // What each group setting may name (organization, channel and group settings).
    permissionSettings: reg.server_supported_permission_settings || {},
    muted: new Map((reg.muted_users || []).map((m) => [m.id, m.timestamp])), // user id -> since
    alertWords: reg.alert_words || [],
    // The organization's settings, by their names without "realm_" (permissions, time limits,
    // `can_inspect_log_group`: who may read every conversation through the log inspector).
    realm: Object.fromEntries(Object.entries(reg).filter(([k]) => k.startsWith("realm_")).map(([k, v]) => [k.slice(6), v])),
    // User groups (id -> {members: Set, subgroups: [ids]}): loaded after the first screen
    // (loadGroups), then kept by events. Until then no permission reads as granted.
    groups: new Map(),
    // Channel folders, in the organization's order (the sidebar's sections).
    folders: reg.channel_folders || [],
    emojiDataUrl: reg.server_emoji_data_url,
    offlineAfter: reg.server_presence_offline_threshold_seconds || 140,
    pingEvery: reg.server_presence_ping_interval_seconds || 60,
  });
  for (const user of [...(reg.realm_users || []), ...(reg.cross_realm_bots || [])]) state.users.set(user.user_id, user);
  state.me.role = state.users.get(reg.user_id)?.role;
  for (const sub of reg.subscriptions || []) { state.subs.set(sub.stream_id, sub); state.streams.set(sub.stream_id, sub); }
  for (const stream of [...(reg.unsubscribed || []), ...(reg.never_subscribed || [])]) state.streams.set(stream.stream_id, stream);
  for (const ut of reg.user_topics || []) state.userTopics.set(topicKey(ut.stream_id, ut.topic_name), ut.visibility_policy);
  loadUnread(reg.unread_msgs || {});
  for (const conv of reg.recent_private_conversations || []) noteDm(conv.user_ids, conv.max_message_id);
}

// The largest id of a list (a spread into Math.max fails past about 100,000 arguments, and a
// conversation can hold up to 50,000 unread messages).
const newestOf = (ids) => ids.reduce((a, b) => Math.max(a, b), 0);

function loadUnread(unread) {
  for (const s of unread.streams || []) for (const id of s.unread_message_ids) state.unread.set(id, { stream_id: s.stream_id, topic: s.topic });
  for (const pm of unread.pms || []) {
    const key = dmKey([pm.other_user_id ?? pm.sender_id]);
    for (const id of pm.unread_message_ids) state.unread.set(id, { dm: key });
    noteDm([pm.other_user_id ?? pm.sender_id], newestOf(pm.unread_message_ids));
  }
  for (const h of unread.huddles || []) {
    const ids = h.user_ids_string.split(",").map(Number);
    for (const id of h.unread_message_ids) state.unread.set(id, { dm: dmKey(ids) });
    noteDm(ids, newestOf(h.unread_message_ids));
  }
  for (const id of unread.mentions || []) state.mentions.add(id);
}

export const isAdmin = () => state.me.role === ROLE_OWNER || state.me.role === ROLE_ADMIN;
export const isOwner = () => state.me.role === ROLE_OWNER;
export const topicKey = (streamId, topic) => `${streamId}\u0000${topic.toLowerCase()}`;
export const userName = (id) => state.users.get(id)?.full_name || t("common.user", { id });

// A DM conversation is named by the other people in it; a note to self by my own id.
export function dmKey(userIds) {
  const others = [...new Set(userIds.map(Number))].filter((id) => id !== state.me.user_id).sort((a, b) => a - b);
  return others.length ? others.join(",") : String(state.me.user_id);
}

export function dmUserIds(key) {
  return key.split(",").map(Number);
}

// As Zulip asks of its clients, a person one muted is "Muted user" in a conversation's name, and
// a one-on-one conversation with them is hidden (their messages arrive read and notify nobody).
export const shownName = (id) => (state.muted.has(id) ? t("common.muted_user") : userName(id));

export function dmTitle(key) {
  return dmUserIds(key).map(shownName).join(", ");
}

export const mutedOneOnOne = (key) => !key.includes(",") && state.muted.has(Number(key));

function noteDm(userIds, messageId) {
  const key = dmKey(userIds);
  const conv = state.dms.get(key);
  if (!conv || conv.max_id < messageId) state.dms.set(key, { key, max_id: messageId });
}

export function messageDmKey(message) {
  return dmKey(message.display_recipient.map((r) => r.id));
}

export function topicVisibility(streamId, topic) {
  return state.userTopics.get(topicKey(streamId, topic)) || 0;
}

// Whether a topic is heard, as Zulip decides it: not muted, and not in a muted channel unless
// unmuted or followed there.
export function topicHeard(streamId, topic) {
  const policy = topicVisibility(streamId, topic);
  if (policy === TOPIC_UNMUTED || policy === TOPIC_FOLLOWED) return true;
  return policy !== TOPIC_MUTED && !state.subs.get(streamId)?.is_muted;
}

// Unread counts, computed on demand: the numbers are small and a single source cannot drift.
// As in Zulip, a muted topic counts toward nothing but itself, and a muted channel's messages
// (but for its unmuted and followed topics) stay out of "All messages"; the channel's own,
// dimmed count still shows them.
export function counts() {
  const out = { all: 0, streams: new Map(), topics: new Map(), dms: new Map(), mentions: 0 };
  for (const [id, where] of state.unread) {
    if (state.mentions.has(id)) out.mentions++;
    if (where.dm) { out.all++; out.dms.set(where.dm, (out.dms.get(where.dm) || 0) + 1); continue; }
    const key = topicKey(where.stream_id, where.topic);
    out.topics.set(key, (out.topics.get(key) || 0) + 1);
    if (state.userTopics.get(key) === TOPIC_MUTED) continue;
    out.streams.set(where.stream_id, (out.streams.get(where.stream_id) || 0) + 1);
    if (topicHeard(where.stream_id, where.topic)) out.all++;
  }
  return out;
}

export function presenceOf(userId) {
  const p = state.presence.get(userId);
  if (!p) return "offline";
  const now = Date.now() / 1000;
  if (now - (p.active_timestamp || 0) < state.offlineAfter) return "active";
  if (now - (p.idle_timestamp || 0) < state.offlineAfter) return "idle";
  return "offline";
}

export function noteTopic(streamId, topic, messageId) {
  const list = state.topics.get(streamId);
  if (!list) return;
  const i = list.findIndex((entry) => entry.name.toLowerCase() === topic.toLowerCase());
  if (i >= 0) list.splice(i, 1);
  list.unshift({ name: topic, max_id: messageId });
}

export function markRead(ids) {
  for (const id of ids) { state.unread.delete(id); state.mentions.delete(id); }
}

// ---- events -------------------------------------------------------------------------------

const handlers = {
  message(ev) {
    const m = ev.message;
    m.flags = ev.flags || m.flags || [];
    const isMine = m.sender_id === state.me.user_id;
    const where = m.type === "stream" ? { stream_id: m.stream_id, topic: m.subject } : { dm: messageDmKey(m) };
    if (!m.flags.includes("read") && !isMine) state.unread.set(m.id, where);
    if (m.flags.includes("mentioned") || m.flags.includes("wildcard_mentioned")) state.mentions.add(m.id);
    if (m.type === "stream") noteTopic(m.stream_id, m.subject, m.id);
    else noteDm(m.display_recipient.map((r) => r.id), m.id);
  },
  update_message_flags(ev) {
    const add = ev.op === "add";
    if (ev.flag === "read" && add) {
      if (ev.all) { state.unread.clear(); state.mentions.clear(); } else markRead(ev.messages);
    } else if (ev.flag === "read") {
      for (const id of ev.messages) {
        const d = ev.message_details?.[id];
        if (!d) continue;
        state.unread.set(id, d.type === "stream" ? { stream_id: d.stream_id, topic: d.topic } : { dm: dmKey(d.user_ids || []) });
        if (d.mentioned) state.mentions.add(id);
      }
    } else if (ev.flag === "starred") {
      for (const id of ev.messages) add ? state.starred.add(id) : state.starred.delete(id);
    }
  },
  delete_message(ev) {
    markRead(ev.message_ids || [ev.message_id]);
    for (const id of ev.message_ids || [ev.message_id]) state.starred.delete(id);
  },
  update_message(ev) {
    const moved = ev.new_stream_id !== undefined || (ev.subject !== undefined && ev.orig_subject !== undefined);
    if (!moved) return;
    for (const id of ev.message_ids || [ev.message_id]) {
      const where = state.unread.get(id);
      if (!where || where.dm) continue;
      state.unread.set(id, { stream_id: ev.new_stream_id ?? where.stream_id, topic: ev.subject ?? where.topic });
    }
    // Topic lists are refetched by the view; the cached ones are stale now.
    state.topics.delete(ev.stream_id);
    if (ev.new_stream_id !== undefined) state.topics.delete(ev.new_stream_id);
  },
  subscription(ev) {
    if (ev.op === "add") for (const sub of ev.subscriptions) { state.subs.set(sub.stream_id, sub); state.streams.set(sub.stream_id, sub); }
    else if (ev.op === "remove") for (const sub of ev.subscriptions) state.subs.delete(sub.stream_id);
    else if (ev.op === "update") {
      const sub = state.subs.get(ev.stream_id);
      if (!sub) return;
      sub[ev.property] = ev.value;
      if (ev.property === "in_home_view") sub.is_muted = !ev.value;
    }
  },
  stream(ev) {
    if (ev.op === "create") for (const s of ev.streams) if (!state.streams.has(s.stream_id)) state.streams.set(s.stream_id, s);
    if (ev.op === "delete") for (const s of ev.streams) { state.streams.delete(s.stream_id); state.subs.delete(s.stream_id); }
    if (ev.op === "update") {
      // A privacy change (`invite_only`) carries the related properties beside its value.
      const extra = Object.fromEntries(["history_public_to_subscribers", "is_web_public"].filter((k) => k in ev).map((k) => [k, ev[k]]));
      for (const target of [state.streams.get(ev.stream_id), state.subs.get(ev.stream_id)]) if (target) Object.assign(target, { [ev.property]: ev.value }, extra);
    }
  },
  realm(ev) {
    if (ev.op === "update_dict" && ev.data) Object.assign(state.realm, ev.data);
    if (ev.op === "update") state.realm[ev.property] = ev.value;
  },
  channel_folder(ev) {
    if (ev.op === "add") state.folders.push(ev.channel_folder);
    if (ev.op === "update") Object.assign(state.folders.find((f) => f.id === ev.channel_folder_id) || {}, ev.data);
    if (ev.op === "reorder") for (const f of state.folders) f.order = ev.order.indexOf(f.id);
  },
  user_group(ev) {
    const group = state.groups.get(ev.group_id);
    if (ev.op === "add") setGroup(ev.group);
    else if (ev.op === "update" && group) {
      if ("name" in ev.data) group.name = ev.data.name;
      if ("deactivated" in ev.data) group.deactivated = ev.data.deactivated;
    }
    else if (ev.op === "remove") state.groups.delete(ev.group_id);
    else if (!group) return;
    else if (ev.op === "add_members") for (const id of ev.user_ids) group.members.add(id);
    else if (ev.op === "remove_members") for (const id of ev.user_ids) group.members.delete(id);
    else if (ev.op === "add_subgroups") group.subgroups.push(...ev.direct_subgroup_ids);
    else if (ev.op === "remove_subgroups") group.subgroups = group.subgroups.filter((id) => !ev.direct_subgroup_ids.includes(id));
  },
  realm_user(ev) {
    const p = ev.person;
    if (ev.op === "add") state.users.set(p.user_id, p);
    else if (ev.op === "update" && state.users.has(p.user_id)) {
      const user = state.users.get(p.user_id);
      // `new_email` is Zulip's name for a changed `email`.
      for (const [k, v] of Object.entries(p)) if (k !== "user_id") user[k === "new_email" ? "email" : k] = v;
      if (p.user_id === state.me.user_id) Object.assign(state.me, { full_name: user.full_name, role: user.role, email: user.email, delivery_email: user.delivery_email ?? state.me.delivery_email });
    } else if (ev.op === "remove") state.users.delete(p.user_id);
  },
  presence(ev) {
    if (ev.presences) {
      for (const [id, p] of Object.entries(ev.presences)) state.presence.set(Number(id), p);
      return;
    }
    // Older event shape: per-client status; fold it into the active/idle timestamps.
    const current = { ...(state.presence.get(ev.user_id) || {}) };
    for (const client of Object.values(ev.presence || {})) {
      if (client.status === "active") current.active_timestamp = Math.max(current.active_timestamp || 0, client.timestamp);
      current.idle_timestamp = Math.max(current.idle_timestamp || 0, client.timestamp);
    }
    state.presence.set(ev.user_id, current);
  },
  user_status(ev) {
    const current = { ...(state.status.get(ev.user_id) || {}) };
    for (const key of ["status_text", "emoji_name", "emoji_code", "reaction_type", "away"]) if (key in ev) current[key] = ev[key];
    state.status.set(ev.user_id, current);
  },
  user_topic(ev) {
    state.userTopics.set(topicKey(ev.stream_id, ev.topic_name), ev.visibility_policy);
  },
  user_settings(ev) {
    if (ev.op === "update") state.settings[ev.property] = ev.value;
  },
  muted_users(ev) {
    state.muted = new Map(ev.muted_users.map((m) => [m.id, m.timestamp]));
  },
  alert_words(ev) {
    state.alertWords = ev.alert_words;
  },
  realm_emoji(ev) {
    if (ev.op === "update") state.realmEmoji = ev.realm_emoji;
  },
};

function setGroup(g) {
  state.groups.set(g.id, { name: g.name, deactivated: Boolean(g.deactivated), members: new Set(g.members || []), subgroups: [...(g.direct_subgroup_ids || [])] });
}

export function loadGroups(groups) {
  for (const g of groups) setGroup(g);
}

export function apply(ev) {
  handlers[ev.type]?.(ev);
}

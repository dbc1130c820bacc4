// What the person may do to a message, by the organization's and the channel's settings, as
// the server decides it (src/commands/edit.rs, delete.rs): a control the person may not use is
// not shown. The server checks again; these only decide what to offer.

import { state, ROLE_OWNER, ROLE_ADMIN, ROLE_MODERATOR } from "./state.js";

function inGroup(groupId, userId, seen = new Set()) {
  const group = state.groups.get(groupId);
  if (!group || seen.has(groupId)) return false;
  seen.add(groupId);
  return group.members.has(userId) || group.subgroups.some((id) => inGroup(id, userId, seen));
}

// A group-setting value: a group's id, or {direct_members, direct_subgroups}.
export function allows(setting, userId = state.me.user_id) {
  if (typeof setting === "number") return inGroup(setting, userId);
  if (!setting || typeof setting !== "object") return false;
  return (setting.direct_members || []).includes(userId) || (setting.direct_subgroups || []).some((id) => inGroup(id, userId));
}

// The organization's setting, or the channel's of the same job (either grants).
const granted = (realmKey, channel, channelKey) => allows(state.realm[realmKey]) || Boolean(channel && allows(channel[channelKey]));

const moderator = () => [ROLE_OWNER, ROLE_ADMIN, ROLE_MODERATOR].includes(state.me.role);

// Within a limit in seconds (null or 0: none).
function within(limitKey, m) {
  const limit = state.realm[limitKey];
  return !limit || Date.now() / 1000 - m.timestamp < limit;
}

const channelOf = (m) => (m.type === "stream" ? state.streams.get(m.stream_id) : null);
const mine = (m) => m.sender_id === state.me.user_id;

export function mayEditContent(m) {
  return mine(m) && state.realm.allow_message_editing !== false && within("message_content_edit_limit_seconds", m);
}

// A channel message's topic: renaming or moving it within its channel.
export function mayMoveTopic(m) {
  const channel = channelOf(m);
  return Boolean(channel) && granted("can_move_messages_between_topics_group", channel, "can_move_messages_within_channel_group") &&
    (moderator() || within("move_messages_within_stream_limit_seconds", m));
}

export function mayMoveChannel(m) {
  const channel = channelOf(m);
  return Boolean(channel) && granted("can_move_messages_between_channels_group", channel, "can_move_messages_out_of_channel_group") &&
    (moderator() || within("move_messages_between_streams_limit_seconds", m));
}

// Resolving or unresolving a topic ("general chat" cannot be resolved).
export function mayResolve(m) {
  const channel = channelOf(m);
  return Boolean(channel) && m.subject !== "" && granted("can_resolve_topics_group", channel, "can_resolve_topics_group");
}

export function mayDelete(m) {
  const channel = channelOf(m);
  if (granted("can_delete_any_message_group", channel, "can_delete_any_message_group")) return true;
  return mine(m) && granted("can_delete_own_message_group", channel, "can_delete_own_message_group") &&
    within("message_content_delete_limit_seconds", m);
}

// Whether the edit history may be read at all ("moves": only the moves).
export const historyPolicy = () => state.realm.message_edit_history_visibility_policy || "all";

// Zulip's resolved-topic prefix.
export const RESOLVED = "✔ ";
export const isResolved = (topic) => topic.startsWith(RESOLVED);
export const resolvedTopic = (topic) => (isResolved(topic) ? topic.slice(RESOLVED.length) : RESOLVED + topic);

// Narrows are Zulip's own: a list of {operator, operand}. This module names them, decides
// whether a live message belongs in one, and parses the search box. Their addresses
// (#narrow/...) are address.js's and fetching a page of messages is requests.js's, passed on
// from here so that views import narrows from one place.

import { state, dmKey, dmUserIds, messageDmKey, userName } from "./state.js";

export { toHash, fromHash, nearOf, viewOf, isSettingsView, VIEWS } from "./address.js";
import { viewOf } from "./address.js";
import { t } from "./texts.js";
export { fetchPage } from "./requests.js";

export const find = (narrow, op) => narrow.find((term) => term.operator === op)?.operand;

export function streamOf(narrow) {
  const operand = find(narrow, "channel");
  if (operand === undefined) return null;
  if (typeof operand === "number") return operand;
  const match = [...state.streams.values()].find((s) => s.name.toLowerCase() === String(operand).toLowerCase());
  return match ? match.stream_id : null;
}

export const channel = (streamId) => [{ operator: "channel", operand: streamId }];
export const topic = (streamId, name) => [...channel(streamId), { operator: "topic", operand: name }];
export const dm = (key) => [{ operator: "dm", operand: key.split(",").map(Number) }];

// Narrows the sidebar has no entry for (full-text search, senders, attachments, unread, followed
// topics, several operators): shown as search results, with their terms in the search box.
export function isSearch(narrow) {
  if (!narrow.length || viewOf(narrow)) return false;
  const is = find(narrow, "is");
  if (is !== undefined) return narrow.length > 1 || !["starred", "mentioned", "dm"].includes(is);
  if (find(narrow, "dm") !== undefined) return narrow.length > 1;
  if (find(narrow, "channel") === undefined) return true;
  return narrow.length > (find(narrow, "topic") !== undefined ? 2 : 1);
}

// The narrow's name. With `isolate`, every part a person chose (a channel, a topic, a name) is
// set in a bidirectional isolate (U+2068 ... U+2069), so that a right-to-left override inside
// one cannot reorder the rest (the page title, which no style can isolate).
export function title(narrow, isolate = false) {
  const own = isolate ? (text) => `\u2068${text}\u2069` : (text) => text;
  if (!narrow.length) return t("common.all_messages");
  if (viewOf(narrow) === "inbox") return t("common.inbox");
  if (viewOf(narrow) === "recent") return t("common.recent_conversations");
  if (viewOf(narrow) === "drafts") return t("common.drafts");
  if (viewOf(narrow) === "scheduled") return t("common.scheduled_messages");
  if (viewOf(narrow)?.startsWith("settings/")) return t("common.settings");
  if (viewOf(narrow)?.startsWith("organization/")) return t("common.organization_settings");
  if (isSearch(narrow)) return t("narrow.search_results");
  const is = find(narrow, "is");
  if (is === "starred") return t("narrow.starred_messages");
  if (is === "mentioned") return t("common.mentions");
  if (is === "dm") return t("common.direct_messages");
  const dmIds = find(narrow, "dm");
  if (Array.isArray(dmIds)) return dmUserIds(dmKey(dmIds)).map((id) => own(userName(id))).join(", ");
  if (dmIds !== undefined) return own(String(dmIds));
  const name = state.streams.get(streamOf(narrow))?.name || find(narrow, "channel");
  const topic = find(narrow, "topic");
  return topic !== undefined ? `#${own(name)} › ${topic ? own(topic) : t("common.no_topic")}` : `#${own(name)}`;
}

// ---- live messages ---------------------------------------------------------------------------

// Whether a message that just arrived belongs to the open narrow. Full-text search and `has:`
// cannot be decided here, so such narrows take no live messages (the person searches again).
export function matches(narrow, m) {
  return narrow.every(({ operator, operand }) => {
    switch (operator) {
      case "channel": return m.type === "stream" && m.stream_id === streamOf([{ operator, operand }]);
      case "topic": return m.type === "stream" && m.subject.toLowerCase() === String(operand).toLowerCase();
      case "dm": return m.type === "private" && messageDmKey(m) === dmKey(operand);
      case "sender": return m.sender_email.toLowerCase() === String(operand).toLowerCase();
      case "is":
        if (operand === "dm") return m.type === "private";
        if (operand === "starred") return (m.flags || []).includes("starred");
        if (operand === "mentioned") return (m.flags || []).some((f) => f === "mentioned" || f === "wildcard_mentioned");
        return false;
      default: return false;
    }
  });
}

// ---- search ------------------------------------------------------------------------------------

const OPERATORS = new Set(["channel", "stream", "topic", "sender", "is", "has", "dm", "id"]);

// "channel:general topic:"big plans" is:starred hello" -> narrow terms; unknown words search.
export function parseSearch(text) {
  const terms = [];
  const words = [];
  for (const match of text.matchAll(/(?:(\w+):)?("([^"]*)"|\S+)/g)) {
    const op = match[1]?.toLowerCase();
    const value = match[3] ?? match[2];
    if (op && OPERATORS.has(op)) terms.push(term(op, value));
    else words.push(match[0]);
  }
  if (words.length) terms.push({ operator: "search", operand: words.join(" ") });
  return terms;
}

function term(op, value) {
  if (op === "channel" || op === "stream") {
    const stream = [...state.streams.values()].find((s) => s.name.toLowerCase() === value.toLowerCase());
    return { operator: "channel", operand: stream ? stream.stream_id : value };
  }
  if (op === "dm") {
    const ids = value.split(",").map((email) => [...state.users.values()].find((u) => u.email.toLowerCase() === email.toLowerCase())?.user_id);
    return { operator: "dm", operand: ids.every(Boolean) ? ids : value };
  }
  return { operator: op, operand: value };
}

// The search box shows the narrow it stands for, so a person can refine it.
export function toSearchText(narrow) {
  const quote = (v) => (/\s/.test(v) ? `"${v}"` : v);
  return narrow.map(({ operator, operand }) => {
    if (operator === "search") return operand;
    if (operator === "channel") return `channel:${quote(state.streams.get(operand)?.name || String(operand))}`;
    if (operator === "dm") return `dm:${(Array.isArray(operand) ? operand : [operand]).map((id) => state.users.get(id)?.email || id).join(",")}`;
    return `${operator}:${quote(String(operand))}`;
  }).join(" ");
}

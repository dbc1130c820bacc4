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
  return narrow.every(({ operator, operand, negated }) => {
    const found = termMatches(operator, operand, m);
    return found !== null && Boolean(negated) !== found;
  });
}

// Whether a message meets one term, or null when this client cannot tell (full text, `has:`,
// an `is:` it does not keep), negated or not.
function termMatches(operator, operand, m) {
  switch (operator) {
    case "channel": return m.type === "stream" && m.stream_id === streamOf([{ operator, operand }]);
    case "topic": return m.type === "stream" && m.subject.toLowerCase() === String(operand).toLowerCase();
    case "dm": return m.type === "private" && messageDmKey(m) === dmKey(operand);
    case "sender": return m.sender_email.toLowerCase() === String(operand).toLowerCase();
    case "is":
      if (operand === "dm") return m.type === "private";
      if (operand === "starred") return (m.flags || []).includes("starred");
      if (operand === "mentioned") return (m.flags || []).some((f) => f === "mentioned" || f === "wildcard_mentioned");
      return null;
    case "dm-including": return m.type === "private" && m.display_recipient.some((r) => r.id === operand);
    case "channels": return operand === "public" ? m.type === "stream" && state.streams.get(m.stream_id)?.invite_only === false : null;
    case "id": return m.id === Number(operand);
    default: return null;
  }
}

// ---- search ------------------------------------------------------------------------------------

export const OPERATORS = new Set(["channel", "stream", "channels", "topic", "sender", "is", "has", "dm", "dm-including", "id", "near"]);

// "channel:general topic:"big plans" is:starred -is:resolved hello" -> narrow terms, a leading
// "-" negating one (as in Zulip); unknown words search.
export function parseSearch(text) {
  const terms = [];
  const words = [];
  for (const match of text.matchAll(/(-)?(?:([\w-]+):)?("([^"]*)"|\S+)/g)) {
    const op = match[2]?.toLowerCase();
    const value = match[4] ?? match[3];
    if (op && OPERATORS.has(op)) terms.push(match[1] && op !== "near" ? { ...term(op, value), negated: true } : term(op, value));
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
  if (op === "dm-including") {
    const id = [...state.users.values()].find((u) => u.email.toLowerCase() === value.toLowerCase())?.user_id;
    return { operator: op, operand: id ?? value };
  }
  if (op === "channels") return { operator: op, operand: value.toLowerCase() };
  return { operator: op, operand: value };
}

// Completions of the search box's last word, as whole texts for its list of suggestions: an
// operator, and the channels, people and values it takes.
const VALUES = {
  is: ["dm", "starred", "mentioned", "unread", "resolved", "followed", "muted", "alerted"],
  has: ["link", "image", "attachment", "reaction"],
  channels: ["public"],
};
const PEOPLE_OPERATORS = new Set(["sender", "dm", "dm-including"]);
const SUGGESTED = 8;

export function suggestions(text) {
  const at = text.lastIndexOf(" ") + 1;
  const before = text.slice(0, at);
  const word = text.slice(at);
  if (!word) return [];
  const quote = (v) => (/\s/.test(v) ? `"${v}"` : v);
  const match = word.match(/^(-?)([\w-]+):(.*)$/);
  const channels = (part) => [...state.streams.values()].filter((c) => !c.is_archived && c.name.toLowerCase().includes(part.toLowerCase()))
    .map((c) => c.name).sort();
  const people = (part) => [...state.users.values()].filter((u) => u.is_active !== false && !u.is_bot
    && (u.full_name.toLowerCase().includes(part.toLowerCase()) || u.email.toLowerCase().includes(part.toLowerCase()))).map((u) => u.email).sort();
  let found;
  if (match && OPERATORS.has(match[2].toLowerCase())) {
    const [, minus, op, part] = match;
    const values = op === "channel" || op === "stream" ? channels(part).map(quote)
      : PEOPLE_OPERATORS.has(op) ? people(part)
        : (VALUES[op] || []).filter((v) => v.startsWith(part.toLowerCase()));
    found = values.map((v) => `${minus}${op}:${v}`);
  } else {
    const bare = word.replace(/^-/, "").toLowerCase();
    found = [
      ...[...OPERATORS].filter((op) => op.startsWith(bare) && op !== "stream").map((op) => `${op}:`),
      ...channels(bare).map((name) => `channel:${quote(name)}`),
      ...people(bare).map((email) => `sender:${email}`),
    ];
  }
  return found.slice(0, SUGGESTED).map((s) => before + s);
}

// The search box shows the narrow it stands for, so a person can refine it.
export function toSearchText(narrow) {
  const quote = (v) => (/\s/.test(v) ? `"${v}"` : v);
  const text = ({ operator, operand }) => {
    if (operator === "search") return operand;
    if (operator === "channel") return `channel:${quote(state.streams.get(operand)?.name || String(operand))}`;
    if (operator === "dm") return `dm:${(Array.isArray(operand) ? operand : [operand]).map((id) => state.users.get(id)?.email || id).join(",")}`;
    if (operator === "dm-including") return `dm-including:${state.users.get(operand)?.email || operand}`;
    return `${operator}:${quote(String(operand))}`;
  };
  return narrow.map((term) => (term.negated ? "-" : "") + text(term)).join(" ");
}

// The views that are not lists of messages, drawn in the middle column instead of the message
// list:
// - Inbox: every conversation with unread messages, direct messages first, then each channel
//   (pinned channels first, then by name) with its topics, newest first; from the unread state
//   alone, so it needs no request. Muted topics, and muted channels' topics that were not
//   unmuted or followed, are left out, as in Zulip.
// - Recent conversations: the conversations of the newest messages, newest first, with who
//   took part, the unread count and the time; one fetch of the newest messages when opened,
//   then kept by live messages.
// - Drafts: the drafts the server keeps (drafts.js), newest first, to restore or delete.
// - Scheduled messages: messages to be sent later and reminders, soonest first, to delete or
//   (a scheduled message) to take back into the compose box.

import { api } from "./api.js";
import { $, el, clear, badge, toast } from "./dom.js";
import { state, counts, topicKey, topicHeard, topicVisibility, TOPIC_FOLLOWED, dmKey, dmTitle, messageDmKey, mutedOneOnOne, shownName } from "./state.js";
import * as narrows from "./narrow.js";
import { shortTime, longTime, isoTime } from "./time.js";
import { compareNames } from "./names.js";
import { swapIfChanged, ui } from "./ui.js";
import { setMessageHtml } from "./sanitize.js";
import * as drafts from "./drafts.js";
import { t } from "./texts.js";

// How many of the newest messages Recent conversations reads (Zulip's first fetch is 400).
const RECENT_MESSAGES = 1000;
const RECENT_ROWS = 100;

let kind = null;
let recent = null; // conversation key -> {narrow, title, max_id, timestamp, senders: [ids]}
// Recent conversations' reach: the oldest message read and how many rows show; "Load older"
// reads the next messages and shows more.
let reach = { oldest: null, rows: 0, done: false };
// Its filters, as Zulip's: a text (channel, topic, people), unread only, those one took part
// in, and which muting to follow (standard: muted topics and channels left out, as elsewhere).
const filters = { text: "", unread: false, participated: false, muting: "standard" };
let scheduled = null; // {messages, reminders}
let generation = 0;
const collapsed = new Set();

const panel = () => $("view-panel");

export const isOpen = () => kind !== null;

export async function open(view) {
  kind = view;
  const mine = ++generation;
  $("messages").hidden = true;
  panel().hidden = false;
  clear(panel());
  if (view === "recent") {
    recent = null;
    panel().append(el("p", { class: "empty", text: t("common.loading") }));
    try {
      const page = await api("GET", "messages", { anchor: "newest", num_before: RECENT_MESSAGES, num_after: 0, narrow: [], apply_markdown: false });
      if (mine !== generation) return;
      recent = new Map();
      reach = { oldest: page.messages[0]?.id ?? null, rows: RECENT_ROWS, done: Boolean(page.found_oldest) };
      for (const m of page.messages) note(m);
    } catch (error) {
      if (mine !== generation) return;
      clear(panel()).append(el("p", { class: "empty", text: t("views.could_not_load_conversations", { message: error.message }) }));
      return;
    }
  }
  if (view === "scheduled" && !(await loadScheduled(mine))) return;
  if (view === "drafts" && !state.drafts) {
    try {
      drafts.load((await api("GET", "drafts")).drafts);
    } catch (error) {
      if (mine === generation) clear(panel()).append(el("p", { class: "empty", text: t("views.could_not_load_drafts", { message: error.message }) }));
      return;
    }
    if (mine !== generation) return;
  }
  render();
}

async function loadScheduled(mine) {
  try {
    const [messages, reminders] = await Promise.all([api("GET", "scheduled_messages"), api("GET", "reminders")]);
    if (mine !== generation) return false;
    scheduled = { messages: messages.scheduled_messages, reminders: reminders.reminders };
    return true;
  } catch (error) {
    if (mine === generation) clear(panel()).append(el("p", { class: "empty", text: t("views.could_not_load_scheduled_messages", { message: error.message }) }));
    return false;
  }
}

export function close() {
  if (kind === null) return;
  kind = null;
  recent = null;
  generation++;
  panel().hidden = true;
  clear(panel());
  $("messages").hidden = false;
}

export function render() {
  if (kind === "inbox") swapIfChanged(panel(), inboxNodes());
  if (kind === "recent" && recent) drawRecent();
  if (kind === "drafts" && state.drafts) swapIfChanged(panel(), draftNodes());
  if (kind === "scheduled" && scheduled) swapIfChanged(panel(), scheduledNodes());
}

export function onEvent(ev) {
  if (kind === "scheduled" && (ev.type === "scheduled_messages" || ev.type === "reminders")) {
    const mine = generation;
    loadScheduled(mine).then((ok) => { if (ok) render(); });
  }
  if (kind !== "recent" || !recent) return;
  if (ev.type === "message") note(ev.message);
  // A move or a deletion changes which conversations hold what: read them again.
  if ((ev.type === "update_message" && (ev.new_stream_id !== undefined || ev.orig_subject !== undefined)) || ev.type === "delete_message") open("recent");
}

// ---- Inbox ---------------------------------------------------------------------------------

function inboxNodes() {
  const c = counts();
  const dms = [...c.dms.entries()].map(([key, count]) => ({ key, count, max: newestUnread((w) => w.dm === key) }))
    .sort((a, b) => b.max - a.max);
  const channels = new Map();
  for (const [id, where] of state.unread) {
    if (where.dm || !topicHeard(where.stream_id, where.topic)) continue;
    const topics = channels.get(where.stream_id) || new Map();
    channels.set(where.stream_id, topics);
    const key = topicKey(where.stream_id, where.topic);
    const topic = topics.get(key) || { name: where.topic, count: 0, max: 0 };
    topic.count++;
    topic.max = Math.max(topic.max, id);
    topics.set(key, topic);
  }
  const streamIds = [...channels.keys()].sort((a, b) => {
    const sa = state.subs.get(a) || {}; const sb = state.subs.get(b) || {};
    return (Boolean(sb.pin_to_top) - Boolean(sa.pin_to_top)) || compareNames(sa.name || "", sb.name || "");
  });
  if (!dms.length && !streamIds.length) return [el("p", { class: "empty inbox-empty", text: t("views.there_are_no_unread_messages_in") })];
  const out = [];
  if (dms.length) {
    out.push(section("dms", t("common.direct_messages"), dms.reduce((n, d) => n + d.count, 0),
      dms.map((d) => row(narrows.dm(d.key), dmTitle(d.key), d.count))));
  }
  for (const sid of streamIds) {
    const topics = [...channels.get(sid).values()].sort((a, b) => b.max - a.max);
    const name = state.streams.get(sid)?.name || t("common.channel_id", { id: sid });
    out.push(section(`s${sid}`, `#${name}`, topics.reduce((n, topic) => n + topic.count, 0),
      topics.map((topic) => row(narrows.topic(sid, topic.name), topic.name || t("common.general_chat"), topic.count)), narrows.channel(sid)));
  }
  return out;
}

const newestUnread = (test) => [...state.unread].reduce((max, [id, w]) => (test(w) && id > max ? id : max), 0);

function section(key, title, total, rows, narrow) {
  const shut = collapsed.has(key);
  const toggle = el("button", { type: "button", class: "icon-btn small", text: shut ? "▸" : "▾", dataset: { key: `toggle-${key}` },
    attrs: { "aria-expanded": String(!shut), "aria-label": t(shut ? "views.show_section" : "views.hide_section", { title }) },
    on: { click: () => { if (collapsed.has(key)) collapsed.delete(key); else collapsed.add(key); render(); } } });
  const heading = narrow ? el("a", { href: narrows.toHash(narrow), text: title, dataset: { key: `head-${key}` } }) : el("span", { text: title });
  return el("section", { class: "inbox-section", dataset: { key } },
    el("h3", { class: "inbox-head" }, toggle, heading, badge(total)),
    shut ? null : el("ul", { class: "inbox-rows" }, rows));
}

function row(narrow, label, count) {
  const hash = narrows.toHash(narrow);
  return el("li", {}, el("a", { href: hash, class: "inbox-row", dataset: { key: hash } }, el("span", { class: "label", text: label }), badge(count)));
}

// ---- Recent conversations ----------------------------------------------------------------------

// A message into its conversation; `older` for one read before those already noted (its
// sender goes after them, as the senders are latest first).
function note(m, older = false) {
  const key = m.type === "stream" ? topicKey(m.stream_id, m.subject) : `d${messageDmKey(m)}`;
  const conv = recent.get(key) || { senders: [], max_id: 0 };
  if (m.id > conv.max_id) {
    Object.assign(conv, { max_id: m.id, timestamp: m.timestamp, message: m });
  }
  if (older) { if (!conv.senders.includes(m.sender_id)) conv.senders.push(m.sender_id); }
  else conv.senders = [m.sender_id, ...conv.senders.filter((id) => id !== m.sender_id)];
  recent.set(key, conv);
}

// The filter bar stays while the list under it is drawn again (a live message, a read), so
// the person typing in it keeps their place.
function drawRecent() {
  let bar = $("recent-filters");
  let box = $("recent-list");
  if (!bar || !box) {
    bar = filterBar();
    box = el("div", { id: "recent-list" });
    clear(panel()).append(bar, box);
  }
  swapIfChanged(box, recentNodes());
}

function filterBar() {
  const redraw = () => drawRecent();
  const text = el("input", { type: "search", id: "recent-filter-text", class: "filter", value: filters.text, placeholder: t("views.filter_conversations"), attrs: { "aria-label": t("views.filter_conversations") },
    on: { input: () => { filters.text = text.value; redraw(); } } });
  const check = (key, label) => el("label", { class: "check" }, el("input", { type: "checkbox", id: `recent-${key}`, checked: filters[key],
    on: { change: (e) => { filters[key] = e.currentTarget.checked; redraw(); } } }), ` ${label}`);
  const muting = el("select", { id: "recent-muting", attrs: { "aria-label": t("views.muted_conversations") }, on: { change: () => { filters.muting = muting.value; redraw(); } } },
    [["standard", t("views.standard_view")], ["all", t("views.include_muted")], ["followed", t("views.followed_only")]]
      .map(([value, label]) => el("option", { value, text: label, selected: filters.muting === value })));
  return el("div", { id: "recent-filters", class: "view-filters" }, text, check("unread", t("views.unread")), check("participated", t("views.participated")), muting);
}

// Whether a conversation passes the filters.
function shown(conv, c) {
  const m = conv.message;
  if (m.type !== "stream") {
    if (mutedOneOnOne(messageDmKey(m))) return false;
    if (filters.muting === "followed") return false;
  } else if (filters.muting === "standard" && !topicHeard(m.stream_id, m.subject)) return false;
  else if (filters.muting === "followed" && topicVisibility(m.stream_id, m.subject) !== TOPIC_FOLLOWED) return false;
  if (filters.unread && !unreadOf(m, c)) return false;
  if (filters.participated && !conv.senders.includes(state.me.user_id)) return false;
  const text = filters.text.trim().toLowerCase();
  if (!text) return true;
  const words = m.type === "stream"
    ? [state.streams.get(m.stream_id)?.name || "", m.subject]
    : [dmTitle(dmKey(m.display_recipient.map((r) => r.id)))];
  return [...words, ...conv.senders.map(shownName)].some((w) => String(w).toLowerCase().includes(text));
}

const unreadOf = (m, c) => (m.type === "stream" ? c.topics.get(topicKey(m.stream_id, m.subject)) : c.dms.get(dmKey(m.display_recipient.map((r) => r.id)))) || 0;

// The next messages before the oldest read, and more rows.
async function loadOlder(button) {
  button.disabled = true;
  const mine = generation;
  try {
    const page = await api("GET", "messages", { anchor: reach.oldest, include_anchor: false, num_before: RECENT_MESSAGES, num_after: 0, narrow: [], apply_markdown: false });
    if (mine !== generation || !recent) return;
    for (const m of [...page.messages].reverse()) note(m, true);
    reach = { oldest: page.messages[0]?.id ?? reach.oldest, rows: reach.rows + RECENT_ROWS, done: page.found_oldest || !page.messages.length };
    drawRecent();
  } catch (error) {
    toast(t("views.could_not_load_conversations", { message: error.message }));
    button.disabled = false;
  }
}

function recentNodes() {
  const c = counts();
  const all = [...recent.values()].filter((conv) => shown(conv, c)).sort((a, b) => b.max_id - a.max_id);
  const convs = all.slice(0, reach.rows);
  const more = all.length > convs.length || !reach.done
    ? el("button", { type: "button", id: "recent-more", class: "small", text: t("views.load_older_conversations"), on: { click: (e) => (all.length > convs.length ? (reach.rows += RECENT_ROWS, drawRecent()) : loadOlder(e.currentTarget)) } })
    : null;
  if (!convs.length) return [el("p", { class: "empty", text: recent.size ? t("views.no_conversation_matches") : t("common.no_conversations_yet") }), more];
  const rows = convs.map((conv) => {
    const m = conv.message;
    let where; let topicCell; let count;
    if (m.type === "stream") {
      const name = state.streams.get(m.stream_id)?.name || m.display_recipient;
      where = el("a", { href: narrows.toHash(narrows.channel(m.stream_id)), text: `#${name}` });
      topicCell = el("a", { href: narrows.toHash(narrows.topic(m.stream_id, m.subject)), text: m.subject || t("common.general_chat") });
      count = c.topics.get(topicKey(m.stream_id, m.subject));
    } else {
      const key = dmKey(m.display_recipient.map((r) => r.id));
      where = el("span", { text: t("views.direct_message") });
      topicCell = el("a", { href: narrows.toHash(narrows.dm(key)), text: dmTitle(key) });
      count = c.dms.get(key);
    }
    return el("tr", { dataset: { key: String(conv.max_id) } },
      el("td", {}, where),
      el("td", {}, topicCell, badge(count)),
      el("td", { class: "participants", text: conv.senders.slice(0, 4).map(shownName).join(", ") + (conv.senders.length > 4 ? ` +${conv.senders.length - 4}` : "") }),
      el("td", {}, el("time", { text: shortTime(conv.timestamp), attrs: { datetime: isoTime(conv.timestamp), title: longTime(conv.timestamp) } })));
  });
  return [el("table", { class: "recent-table" },
    el("thead", {}, el("tr", {}, [t("common.channel"), t("common.topic"), t("views.participants"), t("views.time")].map((h) => el("th", { text: h, attrs: { scope: "col" } })))),
    el("tbody", {}, rows)), more];
}

// ---- Drafts ----------------------------------------------------------------------------------

// Where a draft or a scheduled message goes, in words, and the narrow of that conversation.
function destinationOf(item) {
  if (item.type === "stream") {
    const sid = Array.isArray(item.to) ? item.to[0] : item.to;
    const name = state.streams.get(sid)?.name || t("common.channel_id", { id: sid });
    return { text: `#${name} › ${item.topic || t("common.general_chat")}`, narrow: narrows.topic(sid, item.topic) };
  }
  const key = dmKey(Array.isArray(item.to) ? item.to : [item.to]);
  return { text: t("views.direct_message_to", { people: dmTitle(key) }), narrow: narrows.dm(key) };
}

function draftNodes() {
  const list = [...state.drafts.values()].sort((a, b) => b.timestamp - a.timestamp);
  if (!list.length) return [el("p", { class: "empty", text: t("views.no_drafts_what_you_write_is") })];
  return [el("ul", { class: "card-list" }, list.map((d) => {
    const where = destinationOf(d);
    return el("li", { class: "card", dataset: { key: `draft-${d.id}` } },
      el("p", { class: "card-head" }, el("a", { href: narrows.toHash(where.narrow), text: where.text }),
        el("time", { text: shortTime(d.timestamp), attrs: { datetime: isoTime(d.timestamp), title: longTime(d.timestamp) } })),
      el("p", { class: "card-text", text: d.content }),
      el("div", { class: "card-actions" },
        el("button", { type: "button", text: t("views.restore"), attrs: { "aria-label": t("views.restore_the_draft_to", { text: where.text }) },
          on: { click: () => { ui.go(where.narrow); ui.restoreDraft(d); } } }),
        el("button", { type: "button", class: "ghost", text: t("common.delete"), attrs: { "aria-label": t("views.delete_the_draft_to", { text: where.text }) },
          on: { click: () => drafts.remove(d.id).catch((error) => toast(t("views.could_not_delete_the_draft", { message: error.message }))) } })));
  }))];
}

// ---- Scheduled messages and reminders -------------------------------------------------------------

function scheduledNodes() {
  const { messages, reminders } = scheduled;
  if (!messages.length && !reminders.length) return [el("p", { class: "empty", text: t("views.no_scheduled_messages_or_reminders") })];
  const when = (seconds) => el("time", { text: `${longTime(seconds)}`, attrs: { datetime: isoTime(seconds) } });
  // Soonest first, messages and reminders together.
  const items = [...messages.map((s) => ({ s })), ...reminders.map((r) => ({ r }))]
    .sort((a, b) => (a.s || a.r).scheduled_delivery_timestamp - (b.s || b.r).scheduled_delivery_timestamp);
  const cards = items.map(({ s, r }) => {
    if (r) {
      return el("li", { class: "card", dataset: { key: `reminder-${r.reminder_id}` } },
        el("p", { class: "card-head" }, el("span", { text: t("views.reminder") }), when(r.scheduled_delivery_timestamp)),
        rendered(r.rendered_content),
        el("div", { class: "card-actions" },
          el("button", { type: "button", class: "ghost", text: t("common.delete"), attrs: { "aria-label": t("views.delete_the_reminder") },
            on: { click: () => unschedule("reminders", r.reminder_id) } })));
    }
    const where = destinationOf(s);
    return el("li", { class: "card", dataset: { key: `scheduled-${s.scheduled_message_id}` } },
      el("p", { class: "card-head" }, el("span", { text: where.text }), when(s.scheduled_delivery_timestamp)),
      s.failed ? el("p", { class: "form-error", text: t("views.could_not_be_sent_at_its") }) : null,
      rendered(s.rendered_content),
      el("div", { class: "card-actions" },
        el("button", { type: "button", text: t("common.edit"), attrs: { "aria-label": t("views.take_the_message_to_back_into", { text: where.text }) },
          on: { click: () => takeBack(s, where) } }),
        el("button", { type: "button", class: "ghost", text: t("common.delete"), attrs: { "aria-label": t("views.delete_the_message_scheduled_to", { text: where.text }) },
          on: { click: () => unschedule("scheduled_messages", s.scheduled_message_id) } })));
  });
  return [el("ul", { class: "card-list" }, cards)];
}

function rendered(html) {
  const content = el("div", { class: "content rendered card-text" });
  setMessageHtml(content, html);
  return content;
}

// A scheduled message back into the compose box, as a draft to send or schedule again.
async function takeBack(s, where) {
  try {
    await api("DELETE", `scheduled_messages/${s.scheduled_message_id}`);
  } catch (error) {
    toast(t("views.could_not_take_it_back", { message: error.message }));
    return;
  }
  ui.go(where.narrow);
  ui.restoreDraft({ id: null, type: s.type, to: Array.isArray(s.to) ? s.to : [s.to], topic: s.topic || "", content: s.content });
}

async function unschedule(kind, id) {
  try {
    await api("DELETE", `${kind}/${id}`);
  } catch (error) {
    toast(t("views.could_not_delete_it", { message: error.message }));
  }
}

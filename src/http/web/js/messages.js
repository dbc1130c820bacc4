// The middle column: the messages of the open narrow, oldest at the top. Pages of 50 are
// fetched from the newest end, older ones as the reader scrolls up. Messages in view are
// marked read in batches.

import { api } from "./api.js";
import { $, el, clear, toast } from "./dom.js";
import { state, markRead, messageDmKey, dmTitle, topicHeard, topicVisibility, mutedOneOnOne } from "./state.js";
import * as narrows from "./narrow.js";
import { setMessageHtml } from "./sanitize.js";
import { shortTime, longTime, isoTime, dayLabel, dayOf } from "./time.js";
import { ui } from "./ui.js";
import { reactionButtons, toggleReaction } from "./reactions.js";
import * as perms from "./perms.js";
import * as menu from "./menu.js";
import * as widgets from "./widgets.js";
import * as lazy from "./lazy.js";
import { t } from "./texts.js";

// The actions in fixing.js, which loads on first use.
const fix = (action) => lazy.fixing().then(action);

let view = fresh([]);
let generation = 0;
const editing = new Set();

// `holdRead`: after "Mark as unread", nothing in this narrow is marked read on sight until
// another one is opened (as in Zulip).
function fresh(narrow) {
  return { narrow, messages: [], foundOldest: false, foundNewest: false, loading: false, holdRead: false };
}

const scroller = () => $("messages");
const list = () => $("message-list");

export const current = () => view.messages;
export const selected = () => view.messages.find((m) => m.id === Number(document.activeElement?.closest?.(".msg")?.dataset.id));

// Open a narrow. `firstPage` is an already started fetch (the first screen starts it beside
// /register); `near`, a message to select once it is loaded (a message link's).
export async function open(narrow, firstPage, near) {
  const mine = ++generation;
  // The same narrow opened again (a reload after a lost queue, an address written another way)
  // keeps "Mark as unread"'s hold: only another narrow ends it.
  const hold = view.holdRead && narrows.toHash(view.narrow) === narrows.toHash(narrow);
  view = fresh(narrow);
  view.holdRead = hold;
  clear(list()).append(el("p", { class: "empty", text: t("common.loading") }));
  try {
    const page = await (firstPage || narrows.fetchPage(narrow, "newest"));
    if (mine !== generation) return;
    take(page, true);
    renderAll();
    scroller().scrollTop = scroller().scrollHeight;
    if (near) rowOf(near)?.focus();
    fillViewport();
  } catch (error) {
    if (mine !== generation) return;
    clear(list()).append(el("p", { class: "empty", text: t("messages.could_not_load_messages", { message: error.message }) }));
  }
}

function take(page, newest) {
  view.foundOldest = page.found_oldest;
  if (newest) view.foundNewest = page.found_newest;
  const known = new Set(view.messages.map((m) => m.id));
  view.messages = [...page.messages.filter((m) => !known.has(m.id)), ...view.messages].sort((a, b) => a.id - b.id);
}

async function loadOlder() {
  if (view.loading || view.foundOldest || !view.messages.length) return;
  view.loading = true;
  const mine = generation;
  try {
    const page = await narrows.fetchPage(view.narrow, view.messages[0].id);
    if (mine !== generation) return;
    const fromBottom = scroller().scrollHeight - scroller().scrollTop;
    take(page, false);
    renderAll();
    scroller().scrollTop = scroller().scrollHeight - fromBottom;
  } catch (error) {
    toast(t("messages.could_not_load_older_messages", { message: error.message }));
  } finally {
    view.loading = false;
  }
  fillViewport();
}

// A short first page leaves no scrollbar, so no scroll event would ever ask for more.
function fillViewport() {
  if (scroller().scrollHeight <= scroller().clientHeight + 10) loadOlder();
}

export function setup() {
  scroller().addEventListener("scroll", () => { if (scroller().scrollTop < 400) loadOlder(); }, { passive: true });
  document.addEventListener("visibilitychange", observeUnread);
  // An image preview opens the image viewer; a modified or middle click keeps the link's own.
  list().addEventListener("click", (e) => {
    const link = e.target.closest?.(".message_inline_image a");
    if (!link || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    lazy.lightbox().then((viewer) => viewer.open(link));
  });
}

// ---- rendering -------------------------------------------------------------------------------

// A conversation's messages of one day: a new day starts a new group, whose head shows the date.
function groupKey(m) {
  const day = dayOf(m.timestamp);
  return m.type === "stream" ? `s${m.stream_id}:${m.subject.toLowerCase()}:${day}` : `d${messageDmKey(m)}:${day}`;
}

const rowOf = (id) => list().querySelector(`.msg[data-id="${id}"]`);

function renderAll() {
  observer.disconnect();
  clear(list());
  if (!view.messages.length) {
    list().append(el("p", { class: "empty", text: view.foundOldest ? t("messages.no_messages_here_yet") : t("common.loading") }));
    return;
  }
  if (view.foundOldest) list().append(el("p", { class: "history-start", text: t("messages.no_older_messages") }));
  let prev = null;
  for (const m of view.messages.filter(shownHere)) { appendRow(m, prev); prev = m; }
  observeUnread();
}

// "All messages" leaves out muted topics, and muted channels but for their unmuted and
// followed topics, as Zulip's combined feed does; every other narrow shows what it asked for.
// A one-on-one conversation with a person one muted shows only where it is asked for by name.
function shownHere(m) {
  if (m.type !== "stream") return !mutedOneOnOne(messageDmKey(m)) || view.narrow.some((term) => term.operator === "dm");
  return view.narrow.length > 0 || topicHeard(m.stream_id, m.subject);
}

function appendRow(m, prev) {
  let group = list().lastElementChild;
  if (!prev || !group?.classList.contains("group") || group.dataset.key !== groupKey(m)) {
    group = groupElement(m);
    list().append(group);
    prev = null;
  }
  group.append(row(m, prev));
}

function groupElement(m) {
  const head = el("h3", { class: "group-head" });
  if (m.type === "stream") {
    const name = state.streams.get(m.stream_id)?.name || m.display_recipient;
    head.append(
      el("a", { href: narrows.toHash(narrows.channel(m.stream_id)), text: `#${name}`, class: "group-channel" }),
      el("span", { class: "chevron", text: "›", attrs: { "aria-hidden": "true" } }),
      el("a", { href: narrows.toHash(narrows.topic(m.stream_id, m.subject)), text: m.subject || t("common.no_topic") }),
      topicActions(m),
    );
  } else {
    const key = messageDmKey(m);
    head.append(el("a", { href: narrows.toHash(narrows.dm(key)), text: t("messages.direct_message_with", { people: dmTitle(key) }) }));
  }
  head.append(el("time", { class: "group-date", text: dayLabel(m.timestamp), attrs: { datetime: isoTime(m.timestamp).slice(0, 10) } }));
  const group = el("section", { class: "group", dataset: { key: groupKey(m) } }, head);
  // The channel's colour marks its conversations, as in Zulip's recipient bars.
  const color = m.type === "stream" && state.subs.get(m.stream_id)?.color;
  if (color) group.style.borderLeft = `4px solid ${color}`;
  return group;
}

// The topic's own controls in its head: resolve or unresolve, rename or move the whole topic.
// They act through the group's newest message in the list, found when clicked (the group grows).
function topicActions(m) {
  const newest = (button) => byId(Number(button.closest(".group").querySelector(".msg:last-of-type")?.dataset.id)) || m;
  const resolved = perms.isResolved(m.subject);
  const box = el("span", { class: "topic-actions" });
  if (perms.mayResolve(m)) {
    box.append(el("button", { type: "button", class: `icon-btn small${resolved ? " on" : ""}`, text: "✔",
      attrs: { "aria-label": resolved ? t("messages.mark_as_unresolved") : t("messages.mark_as_resolved"), title: resolved ? t("messages.mark_as_unresolved") : t("messages.mark_as_resolved"), "aria-pressed": String(resolved) },
      on: { click: (e) => { const m = newest(e.currentTarget); fix((f) => f.toggleResolved(m)); } } }));
  }
  if (state.subs.has(m.stream_id)) box.append(visibilityButton(m));
  if (perms.mayMoveTopic(m) || perms.mayMoveChannel(m)) {
    box.append(el("button", { type: "button", class: "icon-btn small", text: "✎",
      attrs: { "aria-label": t("messages.rename_or_move_topic"), title: t("messages.rename_or_move_topic") },
      on: { click: (e) => { const m = newest(e.currentTarget); fix((f) => f.openMove(m, "change_all")); } } }));
  }
  return box.childElementCount ? box : null;
}

// The topic's visibility from its head, as Zulip's recipient bars offer it: a button showing
// it (🔔 default, 🔕 muted, 🔊 unmuted, 👁 followed) that opens the four choices.
const VISIBILITY = [[0, "🔔", "narrowbar.default"], [1, "🔕", "narrowbar.muted"], [2, "🔊", "narrowbar.unmuted"], [3, "👁", "narrowbar.followed"]];

function visibilityButton(m) {
  const policy = topicVisibility(m.stream_id, m.subject);
  const [, glyph, key] = VISIBILITY.find(([value]) => value === policy) || VISIBILITY[0];
  const label = t("messages.topic_visibility", { state: t(key) });
  return el("button", { type: "button", class: "icon-btn small topic-visibility", text: glyph,
    attrs: { "aria-label": label, title: label, "aria-haspopup": "menu", "aria-expanded": "false" },
    on: { click: (e) => menu.open(e.currentTarget, t("messages.topic_notifications"), VISIBILITY.map(([value, , text]) => [
      `${value === policy ? "✓ " : ""}${t(text)}`,
      () => api("POST", "user_topics", { stream_id: m.stream_id, topic: m.subject, visibility_policy: value })
        .catch((error) => toast(t("common.that_did_not_work", { message: error.message }))),
    ])) } });
}

// A topic's visibility changed: its heads' buttons show it.
function onUserTopic(ev) {
  for (const button of list().querySelectorAll(".group-head .topic-visibility")) {
    const m = byId(Number(button.closest(".group").querySelector(".msg")?.dataset.id));
    if (m && m.stream_id === ev.stream_id && m.subject.toLowerCase() === ev.topic_name.toLowerCase()) button.replaceWith(visibilityButton(m));
  }
}

function row(m, prev) {
  const continued = prev && prev.sender_id === m.sender_id && m.timestamp - prev.timestamp < 600;
  const classes = ["msg", continued && "continued", state.unread.has(m.id) && "unread",
    (m.flags || []).some((f) => f.endsWith("mentioned")) && "mentioned"].filter(Boolean).join(" ");
  const hidden = hiddenSender(m);
  const article = el("article", { class: classes, dataset: { id: m.id }, attrs: { tabindex: "-1", "aria-label": `${hidden ? t("common.muted_user") : m.sender_full_name}, ${longTime(m.timestamp)}` } });
  article.append(
    continued ? el("span", { class: "gutter-time", text: shortTime(m.timestamp), attrs: { "aria-hidden": "true" } })
      : hidden ? el("span", { class: "avatar muted-avatar", attrs: { "aria-hidden": "true" } })
        : el("img", { class: "avatar", src: state.users.get(m.sender_id)?.avatar_url || m.avatar_url, alt: "", width: 36, height: 36, loading: "lazy" }),
    el("div", { class: "msg-main" }, continued ? null : meta(m), body(m), reactionButtons(m)),
    actions(m),
  );
  return article;
}

function meta(m) {
  return el("div", { class: "msg-meta" },
    hiddenSender(m) ? el("span", { class: "sender", text: t("common.muted_user") })
      : el("button", { type: "button", class: "sender", text: state.users.get(m.sender_id)?.full_name || m.sender_full_name,
        attrs: { "aria-haspopup": "dialog" }, on: { click: () => lazy.cards().then((c) => c.openUser(m.sender_id)) } }),
    el("time", { text: shortTime(m.timestamp), attrs: { datetime: isoTime(m.timestamp), title: longTime(m.timestamp) } }));
}

// The messages of a person one muted are hidden behind a click, with their name and picture, as
// in Zulip; shown ones stay shown until the page is loaded again.
const revealed = new Set();
const hiddenSender = (m) => state.muted.has(m.sender_id) && !revealed.has(m.id);

function body(m) {
  if (hiddenSender(m)) {
    return el("div", { class: "content muted-message" },
      t("messages.this_message_was_hidden_because_you"),
      el("button", { type: "button", class: "ghost small", text: t("messages.show_it"),
        on: { click: () => { revealed.add(m.id); renderKeepingScroll(); } } }));
  }
  // A collapsed message (Zulip's `collapsed` flag, kept by the server for this person) shows a
  // line that expands it.
  if ((m.flags || []).includes("collapsed")) {
    return el("div", { class: "content collapsed-message" },
      el("button", { type: "button", class: "ghost small", text: t("messages.expand_message"), on: { click: () => setCollapsed(m, false) } }));
  }
  const content = el("div", { class: "content rendered" });
  // A poll or a task list shows as its widget, not as the text that made it.
  const widget = widgets.render(m);
  if (widget) content.append(widget); else setMessageHtml(content, m.content);
  spoilers(content);
  const marks = markers(m);
  // Inside the last paragraph, so the marker reads as the end of the text, not a line of its own.
  const last = content.lastElementChild?.tagName === "P" ? content.lastElementChild : content;
  if (marks) last.append(el("span", { class: "edit-marker", text: marks }));
  return content;
}

// Spoilers stay closed until their header is clicked (or Enter or Space on it).
function spoilers(content) {
  for (const header of content.querySelectorAll(".spoiler-header")) {
    const block = header.closest(".spoiler-block");
    header.setAttribute("role", "button");
    header.setAttribute("tabindex", "0");
    header.setAttribute("aria-expanded", "false");
    const toggle = () => {
      const open = block.classList.toggle("open");
      header.setAttribute("aria-expanded", String(open));
    };
    header.addEventListener("click", toggle);
    header.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); } });
  }
}

// "(edited)" for content changes, "(moved)" for a new channel or topic; the history when the
// server sends one, else the two timestamps.
function markers(m) {
  let edited = Boolean(m.last_edit_timestamp);
  let moved = Boolean(m.last_moved_timestamp);
  if (m.edit_history) {
    edited = m.edit_history.some((h) => "prev_content" in h || "prev_rendered_content" in h);
    moved = m.edit_history.some((h) => "prev_topic" in h || "prev_stream" in h || "prev_subject" in h);
  }
  return [edited && "(edited)", moved && "(moved)"].filter(Boolean).join(" ");
}

function actions(m) {
  const starred = state.starred.has(m.id);
  const bar = el("div", { class: "msg-actions" },
    el("button", { type: "button", class: "icon-btn", text: "☺", attrs: { "aria-label": t("common.add_reaction"), title: t("common.add_reaction") },
      on: { click: (e) => ui.pickEmoji(e.currentTarget, (name) => toggleReaction(m, name, true)) } }),
    el("button", { type: "button", class: "icon-btn", text: "↩", attrs: { "aria-label": t("messages.reply"), title: t("messages.reply") }, on: { click: () => ui.reply(m) } }),
    el("button", { type: "button", class: `icon-btn${starred ? " on" : ""}`, text: starred ? "★" : "☆",
      attrs: { "aria-label": starred ? t("messages.unstar") : t("messages.star"), "aria-pressed": String(starred), title: starred ? t("messages.unstar") : t("messages.star") }, on: { click: () => star(m) } }),
  );
  if (perms.mayEditContent(m)) {
    bar.append(el("button", { type: "button", class: "icon-btn", text: "✎", attrs: { "aria-label": t("common.edit"), title: t("common.edit") }, on: { click: () => edit(m) } }));
  }
  bar.append(el("button", { type: "button", class: "icon-btn", text: "⋯",
    attrs: { "aria-label": t("messages.message_actions"), title: t("messages.message_actions"), "aria-haspopup": "menu", "aria-expanded": "false" },
    on: { click: (e) => openMenu(m, e.currentTarget) } }));
  return bar;
}

// The message's menu: what the person may do with it, and nothing else.
export function openMenu(m, anchor) {
  const items = [
    [t("common.quote_and_reply"), () => fix((f) => f.quote(m))],
    [t("messages.forward_message"), () => fix((f) => f.forward(m))],
    [t("messages.copy_link_to_message"), () => fix((f) => f.copyLink(m))],
    [t("messages.mark_as_unread_from_here"), () => markUnread(m)],
    [t("messages.remind_me_about_this"), () => lazy.later().then((l) => l.choose(anchor, t("messages.remind_me_about_this_message"), (at) => fix((f) => f.remind(m, at))))],
    (m.flags || []).includes("collapsed") ? [t("messages.expand_message"), () => setCollapsed(m, false)] : [t("messages.collapse_message"), () => setCollapsed(m, true)],
  ];
  if (perms.mayEditContent(m)) items.push([t("messages.edit_message"), () => edit(m)]);
  if (perms.mayMoveTopic(m) || perms.mayMoveChannel(m)) items.push([t("common.move_messages"), () => fix((f) => f.openMove(m))]);
  if (perms.mayResolve(m)) items.push([perms.isResolved(m.subject) ? t("messages.mark_topic_as_unresolved") : t("messages.mark_topic_as_resolved"), () => fix((f) => f.toggleResolved(m))]);
  if (markers(m) && perms.historyPolicy() !== "none") items.push([t("messages.view_edit_history"), () => fix((f) => f.showHistory(m))]);
  if (state.realm.enable_read_receipts !== false) items.push([t("messages.view_read_receipts"), () => lazy.cards().then((c) => c.showReceipts(m))]);
  if (perms.mayDelete(m)) items.push([t("messages.delete_message"), () => fix((f) => f.confirmDelete(m))]);
  menu.open(anchor, t("messages.message_actions"), items);
}

// Collapses or expands a message for this person; the flag's event redraws it (here and in
// their other tabs).
async function setCollapsed(m, on) {
  try {
    await api("POST", "messages/flags", { messages: [m.id], op: on ? "add" : "remove", flag: "collapsed" });
  } catch (error) {
    toast(t("common.that_did_not_work", { message: error.message }));
  }
}

export async function markUnread(m) {
  view.holdRead = true;
  clearTimeout(readTimer);
  readTimer = 0;
  pendingRead.clear();
  const narrow = view.narrow;
  // A "read" still on its way must reach the server first, or it would mark them read again.
  await reading;
  await fix((f) => f.markUnreadFrom(m, narrow));
}

export const editSelected = (m) => (perms.mayEditContent(m) ? edit(m) : null);

function rerender(id) {
  if (editing.has(id)) return;
  const index = view.messages.findIndex((m) => m.id === id);
  const old = list().querySelector(`.msg[data-id="${id}"]`);
  if (index < 0 || !old) return;
  const prev = old.previousElementSibling?.classList.contains("msg") ? view.messages[index - 1] : null;
  const fresh = row(view.messages[index], prev);
  const hadFocus = old.contains(document.activeElement);
  // What the reader was doing in the row survives its redraw: open spoilers, and a field of a
  // widget being typed into (a new poll option), with its text.
  const open = [...old.querySelectorAll(".spoiler-block")].map((b) => b.classList.contains("open"));
  const field = old.contains(document.activeElement) && document.activeElement.tagName === "INPUT" ? document.activeElement : null;
  const typed = [...old.querySelectorAll(".widget input:not([type=checkbox])")].map((i) => [i.getAttribute("aria-label"), i.value]);
  old.replaceWith(fresh);
  fresh.querySelectorAll(".spoiler-block").forEach((b, i) => {
    if (open[i]) { b.classList.add("open"); b.querySelector(".spoiler-header")?.setAttribute("aria-expanded", "true"); }
  });
  for (const [label, value] of typed) { const input = fresh.querySelector(`.widget input[aria-label="${CSS.escape(label)}"]`); if (input) input.value = value; }
  const same = field && fresh.querySelector(`input[aria-label="${CSS.escape(field.getAttribute("aria-label") || "")}"]`);
  if (same) same.focus(); else if (hadFocus) fresh.focus();
  if (state.unread.has(id)) observer.observe(fresh);
}

// ---- actions -----------------------------------------------------------------------------------

// Stars or unstars a message (the ☆ button, Ctrl+S).
export async function star(m) {
  const on = !state.starred.has(m.id);
  try {
    await api("POST", "messages/flags", { messages: [m.id], op: on ? "add" : "remove", flag: "starred" });
  } catch (error) {
    toast(t(on ? "messages.could_not_star" : "messages.could_not_unstar", { message: error.message }));
  }
}

async function edit(m) {
  let raw;
  try {
    raw = (await api("GET", `messages/${m.id}`, { apply_markdown: false })).message.content;
  } catch (error) {
    toast(t("common.could_not_load_the_message", { message: error.message }));
    return;
  }
  const node = list().querySelector(`.msg[data-id="${m.id}"] .content`);
  if (!node) return;
  editing.add(m.id);
  const area = el("textarea", { class: "edit-area", value: raw, attrs: { "aria-label": t("messages.edit_message"), rows: 3 } });
  const done = () => { editing.delete(m.id); rerender(m.id); };
  const save = async () => {
    try {
      if (area.value.trim() && area.value !== raw) await api("PATCH", `messages/${m.id}`, { content: area.value });
      done();
    } catch (error) {
      toast(t("messages.could_not_save", { message: error.message }));
    }
  };
  area.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); save(); }
    if (e.key === "Escape") { e.stopPropagation(); done(); }
  });
  node.replaceWith(el("div", { class: "edit-box" }, area, el("div", { class: "edit-buttons" },
    el("button", { type: "button", text: t("common.cancel"), on: { click: done } }),
    el("button", { type: "button", class: "primary", text: t("common.save"), on: { click: save } }))));
  area.focus();
}

// ---- reading ---------------------------------------------------------------------------------

const pendingRead = new Set();
let readTimer = 0;

// Seen: half of the message is in view, or, for a message taller than that, it fills half of
// the view.
const seen = (entry) => entry.isIntersecting &&
  (entry.intersectionRatio >= 0.5 || entry.intersectionRect.height >= (entry.rootBounds?.height || Infinity) / 2);

const observer = new IntersectionObserver((entries) => {
  if (document.visibilityState !== "visible" || view.holdRead) return;
  for (const entry of entries) {
    if (!seen(entry)) continue;
    const id = Number(entry.target.dataset.id);
    observer.unobserve(entry.target);
    if (state.unread.has(id)) pendingRead.add(id);
  }
  if (pendingRead.size && !readTimer) readTimer = setTimeout(flushRead, 250);
}, { root: null, threshold: [0, 0.25, 0.5, 0.75, 1] });

function observeUnread() {
  if (document.visibilityState !== "visible" || view.holdRead) return;
  for (const node of list().querySelectorAll(".msg.unread")) {
    if (!state.unread.has(Number(node.dataset.id))) continue;
    observer.unobserve(node);
    observer.observe(node);
  }
}

// The request of the last flushRead, until the server answered it.
let reading = Promise.resolve();

function flushRead() {
  reading = reading.then(sendRead).catch((error) => console.error("marking messages read failed", error));
  return reading;
}

async function sendRead() {
  readTimer = 0;
  const ids = [...pendingRead];
  pendingRead.clear();
  if (!ids.length) return;
  markRead(ids);  // counts drop at once; the server's event confirms it later
  for (const id of ids) list().querySelector(`.msg[data-id="${id}"]`)?.classList.remove("unread");
  ui.refresh();
  try {
    await api("POST", "messages/flags", { messages: ids, op: "add", flag: "read" });
  } catch (error) {
    // They stay read here; the server hears of them again once it can be reached.
    if (error.transient) {
      for (const id of ids) pendingRead.add(id);
      if (!readTimer) readTimer = setTimeout(flushRead, 5000);
    } else {
      toast(t("messages.could_not_mark_messages_as_read", { message: error.message }));
    }
  }
}

// ---- events ------------------------------------------------------------------------------------

function nearBottom() {
  const s = scroller();
  return s.scrollHeight - s.scrollTop - s.clientHeight < 120;
}

const byId = (id) => view.messages.find((m) => m.id === id);

export function onEvent(ev) {
  switch (ev.type) {
    case "message": return onMessage(ev);
    case "update_message": return onUpdate(ev);
    case "delete_message": return onDelete(ev.message_ids || [ev.message_id]);
    case "reaction": return onReaction(ev);
    case "submessage": return onSubmessage(ev);
    case "update_message_flags": return onFlags(ev);
    case "realm_user": if (ev.op === "update") renderKeepingScroll(); return;
    case "muted_users": renderKeepingScroll(); return;
    case "user_topic": onUserTopic(ev); return;
    // What the person may do changed: the offered controls follow.
    case "realm": case "user_group": case "stream": renderKeepingScroll(); return;
    default: return;
  }
}

function onMessage(ev) {
  const m = ev.message;
  if (!view.foundNewest || !narrows.matches(view.narrow, m) || byId(m.id)) return;
  const stick = nearBottom() || m.sender_id === state.me.user_id;
  if (!shownHere(m)) { view.messages.push(m); return; }
  if (!view.messages.some(shownHere)) { view.messages.push(m); renderAll(); } else {
    const prev = view.messages.filter(shownHere).pop();
    view.messages.push(m);
    list().querySelector(".empty")?.remove();
    appendRow(m, prev);
    if (state.unread.has(m.id)) observer.observe(list().querySelector(`.msg[data-id="${m.id}"]`));
  }
  if (stick) scroller().scrollTop = scroller().scrollHeight;
}

function onUpdate(ev) {
  const ids = ev.message_ids || [ev.message_id];
  let relocated = false;
  for (const id of ids) {
    const m = byId(id);
    if (!m) continue;
    if (id === ev.message_id && ev.rendered_content !== undefined) {
      m.content = ev.rendered_content;
      m.last_edit_timestamp = ev.edit_timestamp;
      m.edit_history = undefined;  // the timestamps say it now
    }
    if (ev.new_stream_id !== undefined || (ev.subject !== undefined && ev.orig_subject !== undefined)) {
      if (ev.new_stream_id !== undefined) { m.stream_id = ev.new_stream_id; m.display_recipient = state.streams.get(ev.new_stream_id)?.name; }
      if (ev.subject !== undefined) m.subject = ev.subject;
      m.last_moved_timestamp = ev.edit_timestamp;
      m.edit_history = undefined;
      relocated = true;
    }
  }
  if (relocated) {
    // Moved out of this channel or topic: it leaves the list (search narrows cannot tell).
    view.messages = view.messages.filter((m) => !ids.includes(m.id) || hasSearch() || narrows.matches(view.narrow, m));
    renderKeepingScroll();
  } else {
    for (const id of ids) rerender(id);
  }
}

const hasSearch = () => view.narrow.some((term) => ["search", "has"].includes(term.operator));

function onDelete(ids) {
  const gone = new Set(ids);
  if (!view.messages.some((m) => gone.has(m.id))) return;
  view.messages = view.messages.filter((m) => !gone.has(m.id));
  renderKeepingScroll();
}

function onReaction(ev) {
  const m = byId(ev.message_id);
  if (!m) return;
  m.reactions = m.reactions || [];
  const same = (r) => r.user_id === ev.user_id && r.emoji_code === ev.emoji_code && r.reaction_type === ev.reaction_type;
  if (ev.op === "add" && !m.reactions.some(same)) m.reactions.push({ emoji_name: ev.emoji_name, emoji_code: ev.emoji_code, reaction_type: ev.reaction_type, user_id: ev.user_id });
  if (ev.op === "remove") m.reactions = m.reactions.filter((r) => !same(r));
  rerender(m.id);
}

function onSubmessage(ev) {
  const m = byId(ev.message_id);
  if (!m) return;
  m.submessages = m.submessages || [];
  if (m.submessages.some((s) => s.id === ev.submessage_id)) return;
  m.submessages.push({ id: ev.submessage_id, message_id: ev.message_id, sender_id: ev.sender_id, msg_type: ev.msg_type, content: ev.content });
  rerender(m.id);
}

function onFlags(ev) {
  const ids = ev.all ? view.messages.map((m) => m.id) : ev.messages;
  for (const id of ids) {
    const m = byId(id);
    if (!m) continue;
    m.flags = ev.op === "add" ? [...new Set([...(m.flags || []), ev.flag])] : (m.flags || []).filter((f) => f !== ev.flag);
    if (ev.flag === "starred" || ev.flag === "collapsed") rerender(id);
    if (ev.flag === "read") rowOf(id)?.classList.toggle("unread", state.unread.has(id));
  }
}

function renderKeepingScroll() {
  const stick = nearBottom();
  const top = scroller().scrollTop;
  renderAll();
  scroller().scrollTop = stick ? scroller().scrollHeight : top;
}

// The first page is fetched beside /register; a message sent between the two is in neither.
export async function catchUp(maxId) {
  const newest = view.messages[view.messages.length - 1]?.id ?? 0;
  if (!view.foundNewest || newest >= maxId) return;
  try {
    const page = await api("GET", "messages", { anchor: newest, include_anchor: false, num_before: 0, num_after: 100, narrow: view.narrow, apply_markdown: true });
    const known = new Set(view.messages.map((m) => m.id));
    view.messages = [...view.messages, ...page.messages.filter((m) => !known.has(m.id))].sort((a, b) => a.id - b.id);
    renderKeepingScroll();
  } catch {
    // The next event or narrow change shows them; nothing to tell the person.
  }
}

// ---- the selected message ------------------------------------------------------------------

// Moves the selection (the focused message) by `step` rows; with nothing selected, starts at
// the first unread message in view, or else the newest.
export function select(step) {
  const rows = [...list().querySelectorAll(".msg")];
  if (!rows.length) return;
  const at = rows.indexOf(document.activeElement?.closest?.(".msg"));
  let next;
  if (at < 0) next = rows.find((r) => r.classList.contains("unread")) || rows[rows.length - 1];
  else next = rows[Math.max(0, Math.min(rows.length - 1, at + step))];
  next.focus();
  next.scrollIntoView({ block: "nearest" });
  if (at === 0 && step < 0) loadOlder();
}

export function selectLast() {
  scroller().scrollTop = scroller().scrollHeight;
  const rows = list().querySelectorAll(".msg");
  rows[rows.length - 1]?.focus();
}

export const redraw = () => renderKeepingScroll();

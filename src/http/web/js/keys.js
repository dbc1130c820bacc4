// Keyboard shortcuts, Zulip's keys for Zulip's actions. Letters act only when no field has the
// cursor; Esc always works. The list below is also the help that `?` opens.

import { $, el, isTyping } from "./dom.js";
import { state, counts, topicKey, topicHeard, userName, mutedOneOnOne } from "./state.js";
import * as narrows from "./narrow.js";
import * as compose from "./compose.js";
import * as messages from "./messages.js";
import * as emoji from "./emoji.js";
import * as menu from "./menu.js";
import * as lazy from "./lazy.js";
import { toggleReaction } from "./reactions.js";
import { ui } from "./ui.js";
import { compareNames } from "./names.js";
import { t } from "./texts.js";

let panels = {};

export function setup({ closePanels, togglePanel }) {
  panels = { closePanels, togglePanel };
  $("keys-list").replaceChildren(...KEYS.map(([keys, what]) => el("tr", {},
    el("th", { attrs: { scope: "row" } }, keys.flatMap((k, i) => [i ? t("keys.or") : "", el("kbd", { text: k })])), el("td", { text: what }))));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") return escape(e, closePanels);
    // Ctrl+S (⌘+S) stars the selected message, as in Zulip (and keeps the browser's "save page"
    // away while the list has the keyboard).
    if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === "s" && !isTyping(e.target) && !document.querySelector("dialog[open]")
      && !document.body.classList.contains("in-settings")) {
      e.preventDefault();
      withTarget((m) => messages.star(m))();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target) || document.querySelector("dialog[open]") || menu.isOpen()) return;
    // The settings pages are forms: only the keys that leave them (search, filters, help) act.
    if (document.body.classList.contains("in-settings") && !["/", "q", "w", "?"].includes(e.key)) return;
    // Enter on a link or a button is theirs.
    if (e.key === "Enter" && e.target.closest?.("a, button, summary")) return;
    const action = ACTIONS[e.key];
    if (!action) return;
    e.preventDefault();
    action();
  });
}

// The selected message (focused, or last clicked), else the newest in view.
function target() {
  const list = messages.current();
  return messages.selected() || list[list.length - 1];
}

const withTarget = (fn) => () => { const m = target(); if (m) fn(m); };

const KEYS = [
  [["j", "↓"], t("keys.select_the_next_message")],
  [["k", "↑"], t("keys.select_the_previous_message")],
  [[t("keys.end")], t("keys.go_to_the_newest_message")],
  [[t("keys.enter"), "r"], t("keys.reply_to_the_selected_message")],
  [["R"], t("keys.reply_directly_to_its_sender")],
  [["@"], t("keys.reply_mentioning_its_sender")],
  [[">"], t("common.quote_and_reply")],
  [["e"], t("keys.edit_the_selected_message")],
  [["i"], t("keys.open_the_selected_message_s_actions")],
  [["+"], t("keys.react_with")],
  [["U"], t("keys.mark_as_unread_from_the_selected")],
  [["Ctrl+S"], t("keys.star_the_selected_message")],
  [["c"], t("keys.new_channel_message")],
  [["x"], t("common.new_direct_message")],
  [["n"], t("keys.next_topic_with_unread_messages")],
  [["p"], t("keys.next_unread_direct_message")],
  [["I"], t("keys.inbox")],
  [["t"], t("keys.recent_conversations")],
  [["/"], t("keys.search")],
  [["q"], t("common.filter_channels")],
  [["w"], t("common.filter_people")],
  [["?"], t("keys.this_list_of_shortcuts")],
  [[t("keys.esc")], t("keys.close_a_menu_a_dialog_a")],
];

const ACTIONS = {
  j: () => messages.select(1),
  ArrowDown: () => messages.select(1),
  k: () => messages.select(-1),
  ArrowUp: () => messages.select(-1),
  End: () => messages.selectLast(),
  Enter: withTarget((m) => compose.reply(m)),
  r: withTarget((m) => compose.reply(m)),
  R: withTarget((m) => compose.startDm(m.sender_id === state.me.user_id ? [] : [m.sender_id])),
  "@": withTarget((m) => { compose.reply(m); compose.insertText(`@**${userName(m.sender_id)}** `); }),
  ">": withTarget((m) => lazy.fixing().then((f) => f.quote(m))),
  e: withTarget((m) => messages.editSelected(m)),
  i: withTarget((m) => {
    const button = document.querySelector(`#message-list .msg[data-id="${m.id}"] [aria-label="${CSS.escape(t("messages.message_actions"))}"]`);
    if (button) messages.openMenu(m, button);
  }),
  "+": withTarget((m) => toggleReaction(m, "+1", !(m.reactions || []).some((r) => r.user_id === state.me.user_id && r.emoji_name === "+1"))),
  U: withTarget((m) => messages.markUnread(m)),
  c: () => compose.startChannel(),
  x: () => compose.startDm([]),
  n: () => nextUnreadTopic(),
  p: () => nextUnreadDm(),
  I: () => { location.hash = "#inbox"; },
  t: () => { location.hash = "#recent"; },
  "/": () => $("search").focus(),
  q: () => { openPanel("left"); $("channel-search").focus(); },
  w: () => { openPanel("right"); $("people-filter").focus(); },
  "?": () => $("keys-dialog").showModal(),
};

// On a phone or a narrow window the column is a panel: shown first.
function openPanel(side) {
  if (!$(side).offsetParent) panels.togglePanel(side);
}

function escape(e, closePanels) {
  if (menu.isOpen()) { menu.close(); return; }
  if (emoji.isOpen()) { emoji.close(); return; }
  if (document.querySelector("dialog[open]")) return; // the dialog closes itself on Esc
  if (closePanels()) return;
  if (isTyping(e.target)) e.target.blur();
  // Esc leaves the settings pages, back to where the person was (as ✕ does).
  else if (document.body.classList.contains("in-settings")) $("settings-close")?.click();
}

// The direct conversation with the oldest unread message, other than the open one (Zulip's `p`).
function nextUnreadDm() {
  const here = narrows.toHash(ui.narrow);
  const oldest = new Map();
  for (const [id, where] of state.unread) if (where.dm && !mutedOneOnOne(where.dm) && (!oldest.has(where.dm) || id < oldest.get(where.dm))) oldest.set(where.dm, id);
  const next = [...oldest.entries()].sort((a, b) => a[1] - b[1]).map(([key]) => narrows.dm(key)).find((n) => narrows.toHash(n) !== here);
  if (next) ui.go(next);
}

// The first topic with unread messages after the open one (channels by name, topics in the
// order of their unread messages), wrapping around; muted topics, and topics of muted channels
// that were not unmuted or followed, are skipped, as in Zulip.
function nextUnreadTopic() {
  const c = counts();
  const seen = new Set();
  const order = [];
  const subs = [...state.subs.values()].sort((a, b) => compareNames(a.name, b.name));
  for (const sub of subs) {
    const unreadTopics = [...state.unread.values()].filter((w) => w.stream_id === sub.stream_id)
      .map((w) => w.topic).filter((topic) => !seen.has(topicKey(sub.stream_id, topic)) && seen.add(topicKey(sub.stream_id, topic)));
    for (const topic of unreadTopics) {
      if (topicHeard(sub.stream_id, topic) && c.topics.get(topicKey(sub.stream_id, topic))) {
        order.push(narrows.topic(sub.stream_id, topic));
      }
    }
  }
  if (!order.length) return;
  const here = order.findIndex((n) => narrows.toHash(n) === narrows.toHash(ui.narrow));
  ui.go(order[(here + 1) % order.length]);
}

// Keyboard shortcuts. Letters act only when no field has the cursor; Esc always works.

import { $, isTyping } from "./dom.js";
import { state, counts, topicKey, topicHeard } from "./state.js";
import * as narrows from "./narrow.js";
import * as compose from "./compose.js";
import * as messages from "./messages.js";
import * as emoji from "./emoji.js";
import { ui } from "./ui.js";
import { compareNames } from "./names.js";

export function setup({ closePanels }) {
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") return escape(e, closePanels);
    if (e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target) || document.querySelector("dialog[open]")) return;
    const action = ACTIONS[e.key];
    if (!action) return;
    e.preventDefault();
    action();
  });
}

const ACTIONS = {
  c: () => compose.startChannel(),
  x: () => compose.startDm([]),
  r: () => {
    const list = messages.current();
    const m = messages.selected() || list[list.length - 1];
    if (m) compose.reply(m);
  },
  n: () => nextUnreadTopic(),
  "/": () => $("search").focus(),
};

function escape(e, closePanels) {
  if (emoji.isOpen()) { emoji.close(); return; }
  if (document.querySelector("dialog[open]")) return; // the dialog closes itself on Esc
  if (closePanels()) return;
  if (isTyping(e.target)) e.target.blur();
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
      .map((w) => w.topic).filter((t) => !seen.has(topicKey(sub.stream_id, t)) && seen.add(topicKey(sub.stream_id, t)));
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

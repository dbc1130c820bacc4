// Drafts kept by the server (Zulip's drafts API), so that a reload, another tab or another
// device finds them. The compose box's text is saved a second after it stops changing, and at
// once when the page is put away; sending it, or emptying the box, deletes its draft. Opening a
// conversation whose draft waits brings it back into an empty box. The list arrives after the
// first screen and is then kept by `drafts` events.

import { api } from "./api.js";
import { state } from "./state.js";

const SAVE_AFTER_MS = 1000;

// Which server draft the box's text is: {id}, or {id: null} until its first save. Each save
// holds the slot it was queued for, so a save still on its way when the box turns to another
// conversation updates the draft it began with.
let slot = { id: null };
let pending = null; // the draft to save
let timer = 0;
let saving = Promise.resolve();

export function load(list) {
  state.drafts = new Map(list.map((d) => [d.id, d]));
}

export function onEvent(ev) {
  if (ev.type !== "drafts" || !state.drafts) return;
  if (ev.op === "add") for (const d of ev.drafts) state.drafts.set(d.id, d);
  if (ev.op === "update") state.drafts.set(ev.draft.id, ev.draft);
  if (ev.op === "remove") {
    state.drafts.delete(ev.draft_id);
    if (slot.id === ev.draft_id) slot.id = null;
  }
}

const sameConversation = (a, b) => a.type === b.type && a.to.join(",") === b.to.join(",") &&
  (a.type !== "stream" || a.topic.toLowerCase() === b.topic.toLowerCase());

// The newest draft for a destination ({type, to, topic}), if one waits.
export function findFor(where) {
  if (!state.drafts || !where) return null;
  return [...state.drafts.values()].filter((d) => sameConversation(d, where)).sort((a, b) => b.timestamp - a.timestamp)[0] || null;
}

// The box now holds this draft (restored, or nothing: null).
export function adopt(draft) {
  flush();
  slot = { id: draft ? draft.id : null };
}

// The box changed: `draft` is what it holds ({type, to, topic, content}), or null if it is empty.
export function changed(draft) {
  pending = draft ? { ...draft, timestamp: Math.floor(Date.now() / 1000) } : "delete";
  clearTimeout(timer);
  timer = setTimeout(flush, SAVE_AFTER_MS);
}

// Saves what is pending now (the page is being put away, or the destination changes).
export function flush({ keepalive = false } = {}) {
  clearTimeout(timer);
  const work = pending;
  pending = null;
  if (!work) return saving;
  const target = slot;
  saving = saving.then(() => save(target, work, keepalive)).catch(() => {});
  return saving;
}

async function save(target, work, keepalive) {
  if (work === "delete") {
    if (target.id === null) return;
    const id = target.id;
    target.id = null;
    await api("DELETE", `drafts/${id}`, undefined, { keepalive });
  } else if (target.id !== null) {
    await api("PATCH", `drafts/${target.id}`, { draft: work }, { keepalive });
  } else {
    target.id = (await api("POST", "drafts", { drafts: [work] }, { keepalive })).ids[0];
  }
}

// The message was sent: its draft goes.
export function sent() {
  pending = "delete";
  return flush();
}

export function remove(id) {
  if (slot.id === id) slot.id = null;
  return api("DELETE", `drafts/${id}`);
}

// The compose box: a channel and topic, or people for a direct message; Enter sends. While the
// text changes it tells the server "typing" (again every 10 s) and "stopped" when done.

import { api, uploadFile } from "./api.js";
import { $, el, toast } from "./dom.js";
import { state, dmKey, messageDmKey } from "./state.js";
import * as narrows from "./narrow.js";
import { ui, swapIfChanged } from "./ui.js";
import { compareNames } from "./names.js";

const TYPING_REPEAT_MS = 10000;
// Where a message goes. The channel is kept here, not read back from the <select>: a select
// whose options are not drawn yet drops the value it is given, and a reload once sent a message
// to whichever channel came first instead of the one being read.
const compose = { mode: "stream", recipients: [], streamId: null };
let typingTarget = null;
let typingSince = 0;

const text = () => $("compose-text");

export function setup() {
  $("mode-stream").addEventListener("click", () => { setMode("stream"); $("compose-topic").focus(); });
  $("mode-dm").addEventListener("click", () => { setMode("dm"); $("compose-to").focus(); });
  $("compose").addEventListener("submit", (e) => { e.preventDefault(); send(); });
  text().addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  text().addEventListener("input", onTextChange);
  text().addEventListener("blur", stopTyping);
  $("compose-stream").addEventListener("change", () => {
    compose.streamId = Number($("compose-stream").value) || null;
    stopTyping(); fillTopics(); placeholder();
  });
  $("compose-topic").addEventListener("input", () => { stopTyping(); placeholder(); });
  $("compose-to").addEventListener("focus", fillPeople);
  $("compose-to").addEventListener("change", addTypedRecipient);
  $("compose-to").addEventListener("keydown", onRecipientKey);
  $("compose-file").addEventListener("change", attach);
  $("compose-emoji").addEventListener("click", (e) => ui.pickEmoji(e.currentTarget, (name) => insertText(`:${name}: `)));
}

function setMode(mode) {
  compose.mode = mode;
  $("stream-fields").hidden = mode !== "stream";
  $("dm-fields").hidden = mode !== "dm";
  $("mode-stream").setAttribute("aria-pressed", String(mode === "stream"));
  $("mode-dm").setAttribute("aria-pressed", String(mode === "dm"));
  stopTyping();
  placeholder();
}

// Called after state changes: the channel list and people list may have changed.
export function refresh() {
  const select = $("compose-stream");
  const subs = [...state.subs.values()].sort((a, b) => compareNames(a.name, b.name));
  swapIfChanged(select, subs.map((s) => el("option", { value: String(s.stream_id), text: s.name })));
  // The chosen channel, drawn; with none chosen (or one left), the first, shown as chosen.
  if (!state.subs.has(compose.streamId)) compose.streamId = subs.length ? subs[0].stream_id : null;
  select.value = compose.streamId === null ? "" : String(compose.streamId);
  if (document.activeElement === $("compose-to")) fillPeople();
  fillTopics();
  renderChips();
  placeholder();
}

// The names to pick a recipient from, built when the field is used: a large organization's
// thousand names are not rebuilt on every redraw.
function fillPeople() {
  swapIfChanged($("people-options"), [...state.users.values()]
    .filter((u) => u.is_active !== false && !compose.recipients.includes(u.user_id))
    .map((u) => el("option", { value: u.email, label: u.full_name, text: u.full_name })));
}

function fillTopics() {
  const topics = state.topics.get(compose.streamId) || [];
  swapIfChanged($("topic-options"), topics.slice(0, 50).map((t) => el("option", { value: t.name })));
}

function placeholder() {
  let target;
  if (compose.mode === "stream") {
    const name = state.subs.get(compose.streamId)?.name;
    const topic = $("compose-topic").value.trim();
    target = name ? `#${name}${topic ? ` › ${topic}` : ""}` : "a channel";
  } else {
    target = compose.recipients.length ? compose.recipients.map((id) => state.users.get(id)?.full_name).join(", ") : "…";
  }
  text().placeholder = `Message ${target}`;
}

// Point the compose box at the conversation being read, whenever one is opened (a draft keeps
// its words and goes where the reader now looks, as the box shows): what is sent goes where
// the person is looking.
export function followNarrow(narrow) {
  const dmIds = narrows.find(narrow, "dm");
  const sid = narrows.streamOf(narrow);
  if (dmIds) { compose.recipients = dmKey(dmIds).split(",").map(Number).filter((id) => state.users.has(id)); setMode("dm"); } else if (sid && state.subs.has(sid)) {
    compose.streamId = sid;
    $("compose-topic").value = narrows.find(narrow, "topic") ?? "";
    setMode("stream");
  }
  refresh();
}

export function reply(m) {
  if (m.type === "stream" && state.subs.has(m.stream_id)) {
    compose.streamId = m.stream_id;
    $("compose-topic").value = m.subject;
    setMode("stream");
  } else if (m.type !== "stream") {
    compose.recipients = messageDmKey(m).split(",").map(Number);
    setMode("dm");
  }
  refresh();
  text().focus();
}

export function startChannel() {
  setMode("stream");
  const sid = narrows.streamOf(ui.narrow);
  if (sid && state.subs.has(sid)) compose.streamId = sid;
  $("compose-topic").value = narrows.find(ui.narrow, "topic") ?? "";
  refresh();
  ($("compose-topic").value ? text() : $("compose-topic")).focus();
}

export function startDm(userIds) {
  compose.recipients = [...userIds];
  setMode("dm");
  refresh();
  (userIds.length ? text() : $("compose-to")).focus();
}

// ---- recipients ------------------------------------------------------------------------------

function findUser(value) {
  const v = value.trim().toLowerCase();
  const email = v.match(/<([^>]+)>/)?.[1] || v;
  const users = [...state.users.values()].filter((u) => u.is_active !== false);
  return users.find((u) => u.email.toLowerCase() === email) || users.find((u) => u.full_name.toLowerCase() === v);
}

function addTypedRecipient() {
  const input = $("compose-to");
  if (!input.value.trim()) return;
  const user = findUser(input.value);
  if (!user) { toast(`No one is called “${input.value.trim()}”.`); return; }
  if (!compose.recipients.includes(user.user_id)) compose.recipients.push(user.user_id);
  input.value = "";
  stopTyping();
  refresh();
}

function onRecipientKey(e) {
  const input = e.currentTarget;
  if (e.key === "Enter") { e.preventDefault(); addTypedRecipient(); if (compose.recipients.length) text().focus(); }
  if (e.key === "Backspace" && !input.value && compose.recipients.length) { compose.recipients.pop(); refresh(); }
}

function renderChips() {
  swapIfChanged($("recipients"), compose.recipients.map((id) => {
    const name = state.users.get(id)?.full_name || `User ${id}`;
    return el("span", { class: "chip", dataset: { user: String(id) } }, el("span", { text: name }), el("button", {
      type: "button", text: "✕", attrs: { "aria-label": `Remove ${name}` },
      on: { click: () => { compose.recipients = compose.recipients.filter((r) => r !== id); refresh(); $("compose-to").focus(); } },
    }));
  }));
}

// ---- sending -----------------------------------------------------------------------------------

function destination() {
  if (compose.mode === "dm") return compose.recipients.length ? { type: "direct", to: compose.recipients } : null;
  const sid = compose.streamId;
  return sid ? { type: "stream", to: sid, topic: $("compose-topic").value.trim() } : null;
}

async function send() {
  const content = text().value;
  if (!content.trim()) return;
  const where = destination();
  if (!where) { toast(compose.mode === "dm" ? "Add someone to send to." : "Choose a channel first."); return; }
  stopTyping();
  $("send").disabled = true;
  try {
    await api("POST", "messages", { ...where, content });
    text().value = "";
  } catch (error) {
    toast(`Not sent: ${error.message}`);
  } finally {
    $("send").disabled = false;
    text().focus();
  }
}

export function insertText(snippet) {
  const area = text();
  const start = area.selectionStart ?? area.value.length;
  area.setRangeText(snippet, start, area.selectionEnd ?? start, "end");
  area.focus();
  onTextChange();
}

async function attach(e) {
  const file = e.currentTarget.files[0];
  e.currentTarget.value = "";
  if (!file) return;
  toast(`Uploading ${file.name}…`);
  try {
    const answer = await uploadFile(file);
    const name = (answer.filename || file.name).replace(/[[\]]/g, "");
    insertText(`[${name}](${answer.url || answer.uri}) `);
    toast(`${file.name} attached.`);
  } catch (error) {
    toast(`Upload failed: ${error.message}`);
  }
}

// ---- typing notifications ------------------------------------------------------------------------

function typingParams() {
  const where = destination();
  if (!where) return null;
  if (where.type === "direct") return state.settings.send_private_typing_notifications === false ? null : { type: "direct", to: where.to };
  return state.settings.send_stream_typing_notifications === false ? null : { type: "stream", stream_id: where.to, topic: where.topic };
}

function onTextChange() {
  if (!text().value.trim()) { stopTyping(); return; }
  const params = typingParams();
  const key = params && JSON.stringify(params);
  if (key !== typingTarget) stopTyping();
  if (!params || (key === typingTarget && Date.now() - typingSince < TYPING_REPEAT_MS)) return;
  typingTarget = key;
  typingSince = Date.now();
  api("POST", "typing", { ...params, op: "start" }).catch(() => {});
}

function stopTyping() {
  if (!typingTarget) return;
  const params = JSON.parse(typingTarget);
  typingTarget = null;
  api("POST", "typing", { ...params, op: "stop" }).catch(() => {});
}

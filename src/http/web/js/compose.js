// The compose box: a channel and topic, or people for a direct message; Enter or Ctrl+Enter sends
// (the person's `enter_sends`). While the
// text changes it tells the server "typing" (again every 10 s) and "stopped" when done or after
// 5 s without a change.

import { api } from "./api.js";
import { $, el, toast } from "./dom.js";
import { state, dmKey, messageDmKey } from "./state.js";
import * as narrows from "./narrow.js";
import { ui, swapIfChanged } from "./ui.js";
import { compareNames } from "./names.js";
import * as drafts from "./drafts.js";
import * as lazy from "./lazy.js";
import { longTime } from "./time.js";
import { setMessageHtml } from "./sanitize.js";
import { t } from "./texts.js";

const TYPING_REPEAT_MS = 10000;
// Zulip's wait after the last change before "stopped" goes out by itself.
const TYPING_IDLE_MS = 5000;
let typingIdle = 0;
// Where a message goes. The channel is kept here, not read back from the <select>: a select
// whose options are not drawn yet drops the value it is given, and a reload once sent a message
// to whichever channel came first instead of the one being read.
const compose = { mode: "stream", recipients: [], streamId: null };
let typingTarget = null;
// typeahead.js, loaded when the text area is first used.
let typeahead = null;
let typingSince = 0;

const text = () => $("compose-text");

export function setup() {
  $("mode-stream").addEventListener("click", () => { setMode("stream"); keepDraft(); $("compose-topic").focus(); });
  $("mode-dm").addEventListener("click", () => { setMode("dm"); keepDraft(); $("compose-to").focus(); });
  $("compose").addEventListener("submit", (e) => { e.preventDefault(); send(); });
  text().addEventListener("focus", () => lazy.typeahead().then((module) => {
    if (typeahead) return;
    typeahead = module;
    typeahead.setup(text(), () => compose.mode === "stream");
  }), { once: true });
  text().addEventListener("keydown", (e) => {
    if (typeahead?.onKey(e)) return;
    const shortcut = formatKey(e);
    if (shortcut) { e.preventDefault(); format(shortcut); return; }
    if (e.key === "Enter" && !e.isComposing && ((e.ctrlKey || e.metaKey) || (enterSends && !e.shiftKey))) { e.preventDefault(); send(); }
  });
  text().addEventListener("input", onTextChange);
  text().addEventListener("blur", stopTyping);
  $("compose-stream").addEventListener("change", () => {
    compose.streamId = Number($("compose-stream").value) || null;
    stopTyping(); fillTopics(); placeholder(); keepDraft();
  });
  $("compose-topic").addEventListener("input", () => { stopTyping(); placeholder(); keepDraft(); });
  // Files pasted or dropped into the box are uploaded like attached ones.
  text().addEventListener("paste", (e) => {
    const files = [...(e.clipboardData?.files || [])];
    if (!files.length) return;
    e.preventDefault();
    for (const file of files) upload(file);
  });
  $("compose").addEventListener("dragover", (e) => {
    if (![...(e.dataTransfer?.types || [])].includes("Files")) return;
    e.preventDefault();
    $("compose").classList.add("dropping");
  });
  $("compose").addEventListener("dragleave", () => $("compose").classList.remove("dropping"));
  $("compose").addEventListener("drop", (e) => {
    $("compose").classList.remove("dropping");
    const files = [...(e.dataTransfer?.files || [])];
    if (!files.length) return;
    e.preventDefault();
    for (const file of files) upload(file);
  });
  $("compose-to").addEventListener("focus", fillPeople);
  $("compose-to").addEventListener("change", addTypedRecipient);
  $("compose-to").addEventListener("keydown", onRecipientKey);
  $("compose-file").addEventListener("change", attach);
  $("format-bar").addEventListener("click", (e) => {
    const kind = e.target.closest("[data-format]")?.dataset.format;
    if (kind) format(kind);
  });
  $("compose-preview-toggle").addEventListener("click", () => preview(!previewing()));
  $("compose-schedule").addEventListener("click", (e) => {
    const anchor = e.currentTarget;
    lazy.later().then((later) => later.choose(anchor, t("common.schedule_message"), scheduleAt));
  });
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
  swapIfChanged($("topic-options"), topics.slice(0, 50).map((topic) => el("option", { value: topic.name })));
}

function placeholder() {
  let target;
  if (compose.mode === "stream") {
    const name = state.subs.get(compose.streamId)?.name;
    const topic = $("compose-topic").value.trim();
    target = name ? `#${name}${topic ? ` › ${topic}` : ""}` : t("compose.a_channel");
  } else {
    target = compose.recipients.length ? compose.recipients.map((id) => state.users.get(id)?.full_name).join(", ") : "…";
  }
  text().placeholder = t("compose.message", { target });
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
  turned();
}

// The box turned to another conversation: words in it go along (their draft with them); an
// empty box takes up the draft waiting for the new conversation, if any.
function turned() {
  if (text().value.trim()) { keepDraft(); return; }
  const draft = drafts.findFor(draftOf(""));
  drafts.adopt(draft);
  if (draft) text().value = draft.content;
}

// What the box holds, as Zulip's draft object.
function draftOf(content) {
  const where = destination();
  if (!where) return null;
  return where.type === "direct" ? { type: "private", to: [...where.to].sort((a, b) => a - b), topic: "", content }
    : { type: "stream", to: [where.to], topic: where.topic, content };
}

function keepDraft() {
  const content = text().value;
  if (!content.trim()) { drafts.changed(null); return; }
  // Words with nowhere to go yet (no one added) keep their last draft as it was.
  const draft = draftOf(content);
  if (draft) drafts.changed(draft);
}

// The drafts arrived (after the first screen): a box left empty by a reload gets its draft back.
export function draftsLoaded() {
  if (!text().value.trim()) turned();
}

// "Restore" in the Drafts view: the draft's words and destination into the box.
export function restoreDraft(draft) {
  drafts.flush();
  if (draft.type === "private") { compose.recipients = [...draft.to]; setMode("dm"); } else {
    compose.streamId = draft.to[0];
    $("compose-topic").value = draft.topic;
    setMode("stream");
  }
  drafts.adopt(draft);
  text().value = draft.content;
  refresh();
  text().focus();
}

// The page goes away (a reload, another page): the words being written are saved now.
export const savePending = () => drafts.flush({ keepalive: true });

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
  turned();
  text().focus();
}

export function startChannel() {
  setMode("stream");
  const sid = narrows.streamOf(ui.narrow);
  if (sid && state.subs.has(sid)) compose.streamId = sid;
  $("compose-topic").value = narrows.find(ui.narrow, "topic") ?? "";
  refresh();
  turned();
  ($("compose-topic").value ? text() : $("compose-topic")).focus();
}

export function startDm(userIds) {
  compose.recipients = [...userIds];
  setMode("dm");
  refresh();
  turned();
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
  if (!user) { toast(t("compose.no_one_is_called", { name: input.value.trim() })); return; }
  if (!compose.recipients.includes(user.user_id)) compose.recipients.push(user.user_id);
  input.value = "";
  stopTyping();
  refresh();
  keepDraft();
}

function onRecipientKey(e) {
  const input = e.currentTarget;
  if (e.key === "Enter") { e.preventDefault(); addTypedRecipient(); if (compose.recipients.length) text().focus(); }
  if (e.key === "Backspace" && !input.value && compose.recipients.length) { compose.recipients.pop(); refresh(); }
}

function renderChips() {
  swapIfChanged($("recipients"), compose.recipients.map((id) => {
    const name = state.users.get(id)?.full_name || t("common.user", { id });
    return el("span", { class: "chip", dataset: { user: String(id) } }, el("span", { text: name }), el("button", {
      type: "button", text: "✕", attrs: { "aria-label": t("compose.remove", { name }) },
      on: { click: () => { compose.recipients = compose.recipients.filter((r) => r !== id); refresh(); keepDraft(); $("compose-to").focus(); } },
    }));
  }));
}

// ---- sending -----------------------------------------------------------------------------------

function destination() {
  if (compose.mode === "dm") return compose.recipients.length ? { type: "direct", to: compose.recipients } : null;
  const sid = compose.streamId;
  return sid ? { type: "stream", to: sid, topic: $("compose-topic").value.trim() } : null;
}

// The person's `enter_sends`: Enter sends (Shift+Enter adds a line), or Enter adds a line and
// Ctrl+Enter (⌘+Enter) sends, as in Zulip. Ctrl+Enter sends either way.
let enterSends = true;

export function useEnterSends(on) {
  enterSends = on;
  $("compose-hint").textContent = on ? t("common.enter_sends_shift_enter_adds_a") : t("compose.ctrl_enter_sends_enter_adds_a");
}

async function send() {
  const content = text().value;
  if (!content.trim()) return;
  const where = destination();
  if (!where) { toast(compose.mode === "dm" ? t("compose.add_someone_to_send_to") : t("compose.choose_a_channel_first")); return; }
  stopTyping();
  $("send").disabled = true;
  try {
    await api("POST", "messages", { ...where, content });
    text().value = "";
    preview(false);
    typeahead?.close();
    drafts.sent();
  } catch (error) {
    toast(t("compose.not_sent", { message: error.message }));
  } finally {
    $("send").disabled = false;
    text().focus();
  }
}

// Sends the box's message at `seconds` (Unix time) instead of now. Rejects with the reason.
async function scheduleAt(seconds) {
  const content = text().value;
  const where = destination();
  if (!content.trim()) throw new Error(t("compose.write_the_message_first"));
  if (!where) throw new Error(compose.mode === "dm" ? t("compose.add_someone_to_send_to") : t("compose.choose_a_channel_first"));
  await api("POST", "scheduled_messages", { ...where, content, scheduled_delivery_timestamp: seconds });
  stopTyping();
  text().value = "";
  drafts.sent();
  toast(t("compose.scheduled_for", { time: longTime(seconds) }));
}

// ---- formatting and preview ----------------------------------------------------------------------

// Markdown put around the selection (or around the caret, to be typed into).
const FORMATS = {
  bold: ["**", "**"], italic: ["*", "*"], strike: ["~~", "~~"], link: ["[", "](url)"], code: ["`", "`"],
  quote: ["```quote\n", "\n```"], spoiler: ["```spoiler Title\n", "\n```"],
};

// Zulip's compose shortcuts: Ctrl+B, Ctrl+I, Ctrl+Shift+L.
function formatKey(e) {
  if (!(e.ctrlKey || e.metaKey) || e.altKey) return null;
  const key = e.key.toLowerCase();
  if (key === "b" && !e.shiftKey) return "bold";
  if (key === "i" && !e.shiftKey) return "italic";
  if (key === "l" && e.shiftKey) return "link";
  return null;
}

// A list: each line of the selection (or the caret's line) gets "- " or "1. ", "2. ", ….
function formatList(numbered) {
  const area = text();
  const start = area.value.lastIndexOf("\n", area.selectionStart - 1) + 1;
  const endBreak = area.value.indexOf("\n", Math.max(area.selectionEnd, area.selectionStart));
  const end = endBreak < 0 ? area.value.length : endBreak;
  const lines = area.value.slice(start, end).split("\n");
  const listed = lines.map((line, i) => `${numbered ? `${i + 1}.` : "-"} ${line}`).join("\n");
  area.setRangeText(listed, start, end, "end");
  area.focus();
  onTextChange();
}

function format(kind) {
  preview(false);
  if (kind === "bullets" || kind === "numbers") { formatList(kind === "numbers"); return; }
  const [before, after] = FORMATS[kind];
  const area = text();
  const start = area.selectionStart;
  const end = area.selectionEnd;
  const selected = area.value.slice(start, end);
  // A block (quote, spoiler) starts on a line of its own.
  const lead = before.includes("\n") && start > 0 && area.value[start - 1] !== "\n" ? "\n" : "";
  area.setRangeText(lead + before + selected + after, start, end, "select");
  const inner = start + lead.length + before.length;
  if (kind === "link" && selected) area.setSelectionRange(inner + selected.length + 2, inner + selected.length + 5);
  else area.setSelectionRange(inner, inner + selected.length);
  area.focus();
  onTextChange();
}

const previewing = () => !$("compose-preview").hidden;

// The message as it will look, rendered by the server (POST /messages/render).
async function preview(on) {
  if (on === previewing()) return;
  const toggle = $("compose-preview-toggle");
  toggle.setAttribute("aria-pressed", String(on));
  toggle.textContent = on ? t("common.edit") : t("common.preview");
  $("compose-preview").hidden = !on;
  text().hidden = on;
  if (!on) { text().focus(); return; }
  const box = $("compose-preview");
  box.textContent = t("compose.rendering");
  try {
    const answer = await api("POST", "messages/render", { content: text().value || " " });
    if (previewing()) setMessageHtml(box, answer.rendered);
  } catch (error) {
    box.textContent = t("compose.could_not_render_the_preview", { message: error.message });
  }
}

export function insertText(snippet) {
  preview(false);
  const area = text();
  const start = area.selectionStart ?? area.value.length;
  area.setRangeText(snippet, start, area.selectionEnd ?? start, "end");
  area.focus();
  onTextChange();
}

function attach(e) {
  const files = [...e.currentTarget.files];
  e.currentTarget.value = "";
  for (const file of files) upload(file);
}

// Zulip's way: a placeholder where the link will go, a progress bar while the bytes travel,
// then the link (an image's preview comes with the message).
async function upload(file) {
  const name = file.name.replace(/[[\]]/g, "") || "file";
  const placeholder = t("compose.uploading", { name });
  insertText(`${placeholder} `);
  try {
    const answer = await (await lazy.uploads()).uploadWithProgress(file);
    replaceText(placeholder, `[${(answer.filename || name).replace(/[[\]]/g, "")}](${answer.url || answer.uri})`);
  } catch (error) {
    replaceText(placeholder, "");
    toast(t("compose.upload_failed", { message: error.message }));
  }
}

function replaceText(old, fresh) {
  const area = text();
  const at = area.value.indexOf(old);
  if (at < 0) return;
  area.setRangeText(fresh, at, at + old.length, "preserve");
  onTextChange();
}

// ---- typing notifications ------------------------------------------------------------------------

function typingParams() {
  const where = destination();
  if (!where) return null;
  if (where.type === "direct") return state.settings.send_private_typing_notifications === false ? null : { type: "direct", to: where.to };
  return state.settings.send_stream_typing_notifications === false ? null : { type: "stream", stream_id: where.to, topic: where.topic };
}

function onTextChange() {
  keepDraft();
  if (!text().value.trim()) { stopTyping(); return; }
  const params = typingParams();
  const key = params && JSON.stringify(params);
  if (key !== typingTarget) stopTyping();
  clearTimeout(typingIdle);
  if (params) typingIdle = setTimeout(stopTyping, TYPING_IDLE_MS);
  if (!params || (key === typingTarget && Date.now() - typingSince < TYPING_REPEAT_MS)) return;
  typingTarget = key;
  typingSince = Date.now();
  api("POST", "typing", { ...params, op: "start" }).catch(() => {});
}

function stopTyping() {
  clearTimeout(typingIdle);
  if (!typingTarget) return;
  const params = JSON.parse(typingTarget);
  typingTarget = null;
  api("POST", "typing", { ...params, op: "stop" }).catch(() => {});
}

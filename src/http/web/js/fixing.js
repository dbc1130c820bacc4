// Fixing what was said: moving messages and topics, resolving topics, deleting, the edit
// history; and the smaller message actions (quote, link, mark as unread). Each is offered only
// where perms.js says the person may (the message list builds the menu); the server decides.

import { api } from "./api.js";
import { $, el, toast } from "./dom.js";
import { state, userName, messageDmKey } from "./state.js";
import * as narrows from "./narrow.js";
import * as perms from "./perms.js";
import { setMessageHtml } from "./sanitize.js";
import { longTime } from "./time.js";
import { compareNames } from "./names.js";
import { ui } from "./ui.js";
import { ask } from "./confirm.js";
import { t } from "./texts.js";

// ---- links, quotes, unread -------------------------------------------------------------------

// The message's address: its conversation and `near/ID`, as Zulip's message links are.
export function messageLink(m) {
  const conversation = m.type === "stream" ? narrows.topic(m.stream_id, m.subject) : narrows.dm(messageDmKey(m));
  return `${location.origin}/${narrows.toHash(conversation)}/near/${m.id}`;
}

export async function copyLink(m) {
  const link = messageLink(m);
  try {
    await navigator.clipboard.writeText(link);
    toast(t("fixing.link_copied"));
  } catch {
    toast(t("fixing.link", { link }));
  }
}

async function rawContent(m) {
  return (await api("GET", `messages/${m.id}`, { apply_markdown: false })).message.content;
}

// Zulip's quote: a silent mention of the author, a link to the message, the text in a quote
// block (with a longer fence when the text holds one).
export async function quote(m) {
  const text = await quoteOf(m);
  if (text === null) return;
  ui.reply(m);
  ui.insertText(text);
}

// "Forward message": the same quote in a new direct message, its people still to be chosen.
export async function forward(m) {
  const text = await quoteOf(m);
  if (text === null) return;
  ui.startDm([]);
  ui.insertText(text);
  $("compose-to").focus();
}

// The message quoted as Zulip quotes it, or null (said in a toast) when it cannot be loaded.
async function quoteOf(m) {
  let raw;
  try {
    raw = await rawContent(m);
  } catch (error) {
    toast(t("common.could_not_load_the_message", { message: error.message }));
    return null;
  }
  // A fence longer than any run of backticks in the text.
  const fence = "\x60".repeat(Math.max(3, ...[...raw.matchAll(/\x60{3,}/g)].map((f) => f[0].length + 1)));
  return `@_**${userName(m.sender_id)}|${m.sender_id}** [said](${messageLink(m)}):\n${fence}quote\n${raw}\n${fence}\n`;
}

// "Mark as unread from here": this message and every later one of the narrow.
export async function markUnreadFrom(m, narrow) {
  try {
    await api("POST", "messages/flags/narrow", {
      anchor: m.id, include_anchor: true, num_before: 0, num_after: 5000, narrow, op: "remove", flag: "read",
    });
  } catch (error) {
    toast(t("fixing.could_not_mark_as_unread", { message: error.message }));
  }
}

export async function remind(m, seconds) {
  await api("POST", "reminders", { message_id: m.id, scheduled_delivery_timestamp: seconds });
  toast(t("fixing.reminder_set_for", { time: longTime(seconds) }));
}

// ---- moving and resolving ------------------------------------------------------------------------

let moving = null;

// The dialogs' own controls, wired once, when this module first loads.
$("move-form").addEventListener("submit", (e) => { e.preventDefault(); submitMove(); });

// The move dialog: a new topic (when the person may rename topics), a new channel (when they may
// move between channels), which messages, and the automated notices.
export function openMove(m, mode = "change_one") {
  moving = m;
  const topicOk = perms.mayMoveTopic(m);
  const channelOk = perms.mayMoveChannel(m);
  const select = $("move-channel");
  const targets = [...state.subs.values()].filter((s) => !s.is_archived).sort((a, b) => compareNames(a.name, b.name));
  select.replaceChildren(...targets.map((s) => el("option", { value: String(s.stream_id), text: `#${s.name}`, attrs: { selected: s.stream_id === m.stream_id } })));
  $("move-channel-row").hidden = !channelOk;
  $("move-topic").value = m.subject;
  $("move-topic").disabled = !topicOk;
  $("move-mode").value = mode;
  $("move-notify-new").checked = true;
  $("move-notify-old").checked = false;
  $("move-error").hidden = true;
  $("move-title").textContent = t("fixing.move_messages_from", { channel: state.streams.get(m.stream_id)?.name ?? "?", topic: m.subject || t("common.general_chat") });
  $("move-dialog").showModal();
  (topicOk ? $("move-topic") : select).focus();
}

async function submitMove() {
  const m = moving;
  const params = {
    propagate_mode: $("move-mode").value,
    send_notification_to_old_thread: $("move-notify-old").checked,
    send_notification_to_new_thread: $("move-notify-new").checked,
  };
  const topic = $("move-topic").value.trim();
  if (!$("move-topic").disabled && topic !== m.subject) params.topic = topic;
  const channel = Number($("move-channel").value);
  if (!$("move-channel-row").hidden && channel !== m.stream_id) params.stream_id = channel;
  if (params.topic === undefined && params.stream_id === undefined) { $("move-dialog").close(); return; }
  try {
    await api("PATCH", `messages/${m.id}`, params);
    $("move-dialog").close();
  } catch (error) {
    $("move-error").textContent = error.message;
    $("move-error").hidden = false;
  }
}

// Resolving is a rename of the whole topic to or from Zulip's "✔ " prefix.
export async function toggleResolved(m) {
  try {
    await api("PATCH", `messages/${m.id}`, {
      topic: perms.resolvedTopic(m.subject), propagate_mode: "change_all",
      send_notification_to_old_thread: false, send_notification_to_new_thread: true,
    });
  } catch (error) {
    toast(t(perms.isResolved(m.subject) ? "fixing.could_not_unresolve" : "fixing.could_not_resolve", { message: error.message }));
  }
}

// ---- deleting ----------------------------------------------------------------------------------

export function confirmDelete(m) {
  ask({
    title: t("fixing.delete_message"), text: t("fixing.deleting_a_message_removes_it_for"), ok: t("common.delete"),
    run: () => api("DELETE", `messages/${m.id}`),
  });
}

// ---- edit history ----------------------------------------------------------------------------

export async function showHistory(m) {
  let versions;
  try {
    versions = (await api("GET", `messages/${m.id}/history`)).message_history;
  } catch (error) {
    toast(t("fixing.could_not_load_the_edit_history", { message: error.message }));
    return;
  }
  const channelName = (id) => `#${state.streams.get(id)?.name ?? t("common.channel_id", { id })}`;
  $("history-list").replaceChildren(...versions.map((v, i) => {
    const what = i === 0 ? t("fixing.posted") : [
      ("prev_content" in v || "prev_rendered_content" in v) && t("fixing.edited"),
      "prev_topic" in v && t("fixing.topic_change", { from: v.prev_topic || t("common.general_chat"), to: v.topic || t("common.general_chat") }),
      "prev_stream" in v && t("fixing.channel", { from: channelName(v.prev_stream), to: channelName(v.stream) }),
    ].filter(Boolean).join("; ");
    const content = el("div", { class: "content rendered" });
    if (v.rendered_content !== undefined) setMessageHtml(content, v.rendered_content);
    return el("li", { class: "version" },
      el("p", { class: "version-head" }, el("strong", { text: t("fixing.by", { what, person: userName(v.user_id) }) }), ` · ${longTime(v.timestamp)}`),
      v.rendered_content !== undefined && (i === 0 || "prev_rendered_content" in v) ? content : null);
  }));
  $("history-dialog").showModal();
}

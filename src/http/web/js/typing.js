// "Ada is typing…" for the conversation being read, from the server's typing events. A start
// without a stop expires after the server's period, so a closed tab cannot leave it stuck.

import { $ } from "./dom.js";
import { state, dmKey, userName } from "./state.js";
import * as narrows from "./narrow.js";
import { ui } from "./ui.js";
import { t } from "./texts.js";

const typists = new Map(); // "conversation key|user id" -> {key, user_id, timer}

function eventKey(ev) {
  if (ev.message_type === "stream") return `s${ev.stream_id}:${(ev.topic ?? "").toLowerCase()}`;
  return `d${dmKey((ev.recipients || []).map((r) => r.user_id))}`;
}

export function onTyping(ev, expiryMs) {
  if (ev.sender.user_id === state.me.user_id) return;
  const id = `${eventKey(ev)}|${ev.sender.user_id}`;
  clearTimeout(typists.get(id)?.timer);
  typists.delete(id);
  if (ev.op === "start") {
    typists.set(id, { key: eventKey(ev), user_id: ev.sender.user_id, timer: setTimeout(() => { typists.delete(id); render(); }, expiryMs) });
  }
  render();
}

// The open narrow's conversation, or a prefix matching all topics of an open channel.
function narrowKey() {
  const dmIds = narrows.find(ui.narrow, "dm");
  if (dmIds) return { exact: `d${dmKey(dmIds)}` };
  const sid = narrows.streamOf(ui.narrow);
  if (!sid) return null;
  const topic = narrows.find(ui.narrow, "topic");
  return topic !== undefined ? { exact: `s${sid}:${topic.toLowerCase()}` } : { prefix: `s${sid}:` };
}

export function render() {
  const want = narrowKey();
  const names = want ? [...typists.values()]
    .filter((entry) => (want.exact ? entry.key === want.exact : entry.key.startsWith(want.prefix)))
    .map((entry) => userName(entry.user_id)) : [];
  const unique = [...new Set(names)];
  $("typing").textContent = !unique.length ? "" : unique.length === 1 ? t("typing.is_typing", { name: unique[0] })
    : unique.length <= 3 ? t("typing.are_typing", { names: unique.join(", ") }) : t("typing.several_people_are_typing");
}

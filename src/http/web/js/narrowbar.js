// The bar above the messages: the narrow's name and what can be done with it — mark it read,
// mute, pin or colour the channel, set the topic's visibility.

import { api } from "./api.js";
import { $, el, toast } from "./dom.js";
import { state, counts, topicKey, topicVisibility } from "./state.js";
import * as narrows from "./narrow.js";
import { ui, swapIfChanged } from "./ui.js";
import { t } from "./texts.js";

const VISIBILITY = [[0, t("narrowbar.default")], [1, t("narrowbar.muted")], [2, t("narrowbar.unmuted")], [3, t("narrowbar.followed")]];

export function render() {
  const narrow = ui.narrow;
  $("narrow-title").textContent = narrows.title(narrow);
  // The unread count first, as Zulip's tab title shows it: it reads in a row of tabs.
  const unread = counts().all;
  const title = t("narrowbar.document_title", { title: narrows.title(narrow, true) });
  document.title = unread ? t("narrowbar.document_title_unread", { count: unread > 999 ? "999+" : unread, title }) : title;
  const nodes = actions(narrow);
  // The handlers hold the channel and topic: mark the nodes with them so that another narrow's
  // identical-looking buttons are not kept.
  for (const node of nodes) node.dataset.narrow = narrows.toHash(narrow);
  swapIfChanged($("narrow-actions"), nodes);
}

function actions(narrow) {
  const sid = narrows.streamOf(narrow);
  const sub = state.subs.get(sid);
  const topic = narrows.find(narrow, "topic");
  if (!sub || narrow.length > 2 || (narrow.length === 2 && topic === undefined)) return [];
  const c = counts();
  const out = [];
  if (topic !== undefined) {
    if (c.topics.get(topicKey(sid, topic))) out.push(button("read-topic", t("narrowbar.mark_topic_as_read"), () => post("mark_topic_as_read", { stream_id: sid, topic_name: topic })));
    out.push(visibilitySelect(sid, topic));
  } else if (c.streams.get(sid)) {
    out.push(button("read-channel", t("narrowbar.mark_channel_as_read"), () => post("mark_stream_as_read", { stream_id: sid })));
  }
  const property = (name, value) => post("users/me/subscriptions/properties", { subscription_data: [{ stream_id: sid, property: name, value }] });
  out.push(button("mute", sub.is_muted ? t("narrowbar.unmute_channel") : t("narrowbar.mute_channel"), () => property("is_muted", !sub.is_muted)));
  out.push(button("pin", sub.pin_to_top ? t("narrowbar.unpin_channel") : t("narrowbar.pin_channel"), () => property("pin_to_top", !sub.pin_to_top)));
  const color = el("input", { type: "color", value: sub.color || "#c2c2c2", dataset: { key: "color" },
    attrs: { "aria-label": t("narrowbar.channel_colour"), title: t("narrowbar.channel_colour") } });
  color.addEventListener("change", () => property("color", color.value));
  out.push(color);
  return out;
}

function button(key, text, onClick) {
  return el("button", { type: "button", class: "ghost small", text, dataset: { key }, on: { click: onClick } });
}

function visibilitySelect(sid, topic) {
  const current = topicVisibility(sid, topic);
  const select = el("select", { class: "small", dataset: { key: "visibility" }, attrs: { "aria-label": t("narrowbar.topic_notifications_default_muted_unmuted_or") } },
    VISIBILITY.map(([value, label]) => el("option", { value: String(value), text: label, attrs: { selected: value === current } })));
  select.addEventListener("change", () => post("user_topics", { stream_id: sid, topic, visibility_policy: Number(select.value) }));
  return el("label", { class: "inline-label" }, el("span", { text: t("narrowbar.topic") }), select);
}

async function post(path, params) {
  try {
    await api("POST", path, params);
  } catch (error) {
    toast(t("common.that_did_not_work", { message: error.message }));
    render();
  }
}

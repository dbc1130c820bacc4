// The left column: the views, the subscribed channels (with the open channel's topics) and the
// direct-message conversations, each with its unread count. It is rebuilt from the state on
// every change; it is small enough that this costs nothing.

import { api } from "./api.js";
import { $, el, badge } from "./dom.js";
import { state, counts, topicKey, topicVisibility, topicHeard, TOPIC_FOLLOWED, dmTitle, dmUserIds, presenceOf, mutedOneOnOne } from "./state.js";
import * as narrows from "./narrow.js";
import { VIEWS } from "./address.js";
import { ui, swapIfChanged } from "./ui.js";
import { openChannels } from "./channels.js";
import { startDm } from "./compose.js";
import { compareNames } from "./names.js";
import { t } from "./texts.js";

const loadingTopics = new Map(); // stream id -> the fetch on its way
const TOPICS_SHOWN = 30;
const DMS_SHOWN = 25;
// Channels whose whole topic list is shown ("more topics"), and whether every direct-message
// conversation is.
const allTopics = new Set();
let allDms = false;

function item(key, narrow, label, count, extra = {}) {
  const hash = narrows.toHash(narrow);
  const active = hash === narrows.toHash(ui.narrow);
  return el("a", {
    href: hash, class: ["nav-item", active && "active", extra.dim && "dim"].filter(Boolean).join(" "),
    dataset: { key }, attrs: { "aria-current": active ? "page" : null },
  }, extra.color ? swatch(extra.color) : null, extra.icon || null, el("span", { class: "label", text: label }), extra.note || null, badge(count));
}

// A channel's colour (the person's choice, Zulip's `color`): a bar beside its name. Set through
// the style object, which the page's CSP allows, not a style attribute.
function swatch(color) {
  const bar = el("span", { class: "swatch", attrs: { "aria-hidden": "true" } });
  bar.style.backgroundColor = color;
  return bar;
}

export function render() {
  swapIfChanged($("left-lists"), sections());
}

export function setup() {
  $("channel-search").addEventListener("input", render);
  $("channel-search").addEventListener("keydown", (e) => {
    // Enter opens the first channel the filter leaves, and the keys are the app's again.
    if (e.key !== "Enter") return;
    e.preventDefault();
    $("left-lists").querySelector(".channels .nav-item")?.click();
    e.currentTarget.value = "";
    e.currentTarget.blur();
    render();
  });
}

function sections() {
  const c = counts();
  return [
    el("ul", { class: "nav" },
      el("li", {}, item("inbox", VIEWS.inbox, t("common.inbox"), c.all, { icon: icon("▤") })),
      el("li", {}, item("recent", VIEWS.recent, t("common.recent_conversations"), 0, { icon: icon("◷") })),
      el("li", {}, item("all", [], t("common.all_messages"), c.all, { icon: icon("≡") })),
      el("li", {}, item("mentioned", [{ operator: "is", operand: "mentioned" }], t("common.mentions"), c.mentions, { icon: icon("@") })),
      el("li", {}, item("starred", [{ operator: "is", operand: "starred" }], t("sidebar.starred"), 0, {
        icon: icon("☆"), note: state.starred.size ? el("span", { class: "note", text: String(state.starred.size) }) : null })),
      el("li", {}, item("drafts", VIEWS.drafts, t("common.drafts"), 0, {
        icon: icon("✎"), note: state.drafts?.size ? el("span", { class: "note", text: String(state.drafts.size) }) : null })),
      el("li", {}, item("scheduled", VIEWS.scheduled, t("common.scheduled_messages"), 0, { icon: icon("⏱") }))),
    ...channelSections(c),
    head(t("common.direct_messages"), t("common.new_direct_message"), () => startDm([])),
    el("ul", { class: "nav dms" }, dmItems(c)),
  ];
}

// Pinned channels first, then one section per channel folder (in the organization's order),
// then the rest, as Zulip's left sidebar groups them.
function channelSections(c) {
  const filter = $("channel-search").value.trim().toLowerCase();
  const subs = [...state.subs.values()].filter((s) => s.name.toLowerCase().includes(filter)).sort((a, b) => compareNames(a.name, b.name));
  const out = [head(t("common.channels"), t("sidebar.browse_and_create_channels"), () => openChannels())];
  if (!subs.length) {
    out.push(el("ul", { class: "nav channels" }, el("li", { class: "hint", text: filter ? t("sidebar.no_channel_matches") : t("sidebar.no_channels_yet_press_to_join") })));
    return out;
  }
  const pinned = subs.filter((s) => s.pin_to_top);
  const folders = [...(state.folders || [])].filter((f) => !f.is_archived).sort((a, b) => (a.order ?? a.id) - (b.order ?? b.id));
  const inFolder = (f) => subs.filter((s) => !s.pin_to_top && s.folder_id === f.id);
  const rest = subs.filter((s) => !s.pin_to_top && !folders.some((f) => f.id === s.folder_id));
  const group = (label, list) => list.length ? [el("h3", { class: "side-sub", text: label }), el("ul", { class: "nav channels" }, channelItems(list, c))] : [];
  if (!pinned.length && !folders.some((f) => inFolder(f).length)) {
    out.push(el("ul", { class: "nav channels" }, channelItems(rest, c)));
    return out;
  }
  out.push(...group(t("sidebar.pinned"), pinned));
  for (const f of folders) out.push(...group(f.name, inFolder(f)));
  out.push(...group(folders.length ? t("sidebar.other_channels") : t("common.channels"), rest));
  return out;
}

const icon = (glyph) => el("span", { class: "icon", text: glyph, attrs: { "aria-hidden": "true" } });
// Pictures for what common fonts lack as plain glyphs.
const picture = (name) => el("span", { class: "icon", attrs: { "aria-hidden": "true" } }, el("img", { src: new URL(`../icons/${name}.svg`, import.meta.url).href, alt: "", width: 14, height: 14 }));

function head(title, addLabel, onAdd) {
  return el("div", { class: "side-head" }, el("h2", { text: title }),
    el("button", { type: "button", class: "icon-btn small", text: "+", attrs: { "aria-label": addLabel, title: addLabel }, on: { click: onAdd } }));
}

function channelItems(subs, c) {
  const openId = narrows.streamOf(ui.narrow);
  return subs.map((sub) => {
    const li = el("li", {}, item(`s${sub.stream_id}`, narrows.channel(sub.stream_id), sub.name, c.streams.get(sub.stream_id), {
      icon: sub.invite_only ? picture("lock") : icon("#"), dim: sub.is_muted, color: sub.color,
    }));
    if (sub.stream_id === openId) li.append(topicItems(sub, c));
    return li;
  });
}

function topicItems(sub, c) {
  const topics = state.topics.get(sub.stream_id);
  if (!topics) { loadTopics(sub.stream_id); return el("ul", { class: "topics" }, el("li", { class: "hint", text: t("sidebar.loading_topics") })); }
  const all = allTopics.has(sub.stream_id);
  const shown = all ? topics : topics.slice(0, TOPICS_SHOWN);
  const list = el("ul", { class: "topics", attrs: { "aria-label": t("sidebar.topics_in", { name: sub.name }) } }, shown.map((topic) => {
    const vis = topicVisibility(sub.stream_id, topic.name);
    const dim = !topicHeard(sub.stream_id, topic.name);
    return el("li", {}, item(`t${sub.stream_id}:${topic.name}`, narrows.topic(sub.stream_id, topic.name), topic.name || t("common.no_topic"),
      c.topics.get(topicKey(sub.stream_id, topic.name)), { dim, note: vis === TOPIC_FOLLOWED ? el("span", { class: "note", text: t("sidebar.followed") }) : null }));
  }));
  if (topics.length > TOPICS_SHOWN) {
    list.append(el("li", {}, more(`more-topics-${sub.stream_id}`, all ? t("sidebar.fewer_topics") : t("sidebar.more_topics", { count: topics.length - TOPICS_SHOWN }), () => {
      if (allTopics.has(sub.stream_id)) allTopics.delete(sub.stream_id); else allTopics.add(sub.stream_id);
      render();
    })));
  }
  return list;
}

function more(key, text, onClick) {
  return el("button", { type: "button", class: "more-link", text, dataset: { key }, on: { click: onClick } });
}

// A channel's topics into the state, newest first (an empty list when they cannot be had), for
// the sidebar and the compose box's typeahead; one fetch at a time per channel.
export function loadTopics(streamId) {
  if (!loadingTopics.has(streamId)) {
    loadingTopics.set(streamId, (async () => {
      try {
        const answer = await api("GET", `users/me/${streamId}/topics`);
        state.topics.set(streamId, answer.topics.sort((a, b) => b.max_id - a.max_id));
      } catch {
        state.topics.set(streamId, []);
      } finally {
        loadingTopics.delete(streamId);
      }
      render();
    })());
  }
  return loadingTopics.get(streamId);
}

function dmItems(c) {
  const every = [...state.dms.values()].filter((conv) => !mutedOneOnOne(conv.key)).sort((a, b) => b.max_id - a.max_id);
  const convs = allDms ? every : every.slice(0, DMS_SHOWN);
  if (!convs.length) return [el("li", { class: "hint", text: t("common.no_conversations_yet") })];
  const items = convs.map((conv) => {
    const ids = dmUserIds(conv.key);
    const dot = ids.length === 1 ? el("span", { class: `dot ${presenceOf(ids[0])}`, attrs: { "aria-hidden": "true" } }) : picture("people");
    return el("li", {}, item(`d${conv.key}`, narrows.dm(conv.key), dmTitle(conv.key), c.dms.get(conv.key), { icon: dot }));
  });
  if (every.length > DMS_SHOWN) {
    items.push(el("li", {}, more("more-dms", allDms ? t("sidebar.fewer_conversations") : t("sidebar.more_conversations", { count: every.length - DMS_SHOWN }), () => { allDms = !allDms; render(); })));
  }
  return items;
}

// Compose typeahead, as Zulip's: "@" suggests people, user groups and the wildcard mentions
// ("@_" the same, silently); "#" channels, and after "#**channel>" that channel's topics; ":"
// and two letters, emoji. Arrows move, Enter or Tab chooses, Esc closes; the text area is the
// combobox (aria-activedescendant), the list a listbox.

import { $, el } from "./dom.js";
import { state } from "./state.js";
import { ui } from "./ui.js";
import { emojiList } from "./emoji.js";
import { t } from "./texts.js";

const SHOWN = 8;
const WILDCARDS = [["all", t("typeahead.notify_channel")], ["everyone", t("typeahead.notify_channel")], ["channel", t("typeahead.notify_channel")], ["topic", t("typeahead.notify_topic")]];

let area = null;
let choices = [];   // [{label, note, text}]
let active = 0;
let from = 0;       // where the typed token starts in the text
let streamOf = () => null;
let generation = 0;

const list = () => $("typeahead");
export const isOpen = () => !list().hidden;

// `channelOfCompose` tells whether the message goes to a channel (for the topic wildcard).
export function setup(textArea, channelOfCompose) {
  area = textArea;
  streamOf = channelOfCompose;
  area.setAttribute("aria-autocomplete", "list");
  area.setAttribute("aria-controls", "typeahead");
  area.setAttribute("aria-expanded", "false");
  area.addEventListener("input", suggest);
  area.addEventListener("blur", () => setTimeout(close, 150));
  list().addEventListener("pointerdown", (e) => {
    const option = e.target.closest("[role=option]");
    if (!option) return;
    e.preventDefault();
    choose(Number(option.dataset.index));
  });
}

// The compose box's keys come here first; true when the typeahead used the key.
export function onKey(e) {
  if (!isOpen()) return false;
  if (e.key === "ArrowDown" || e.key === "ArrowUp") {
    active = (active + (e.key === "ArrowDown" ? 1 : -1) + choices.length) % choices.length;
    draw();
  } else if ((e.key === "Enter" && !e.isComposing) || e.key === "Tab") {
    choose(active);
  } else if (e.key === "Escape") {
    e.stopPropagation();
    close();
  } else {
    return false;
  }
  e.preventDefault();
  return true;
}

export function close() {
  if (!area) return;
  list().hidden = true;
  list().replaceChildren();
  choices = [];
  area.setAttribute("aria-expanded", "false");
  area.removeAttribute("aria-activedescendant");
}

async function suggest() {
  const mine = ++generation;
  const before = area.value.slice(0, area.selectionStart);
  const found = await match(before);
  if (mine !== generation) return;
  if (!found || !found.choices.length) { close(); return; }
  ({ choices, from } = found);
  choices = choices.slice(0, SHOWN);
  active = 0;
  draw();
}

// The token before the caret and what it may become.
async function match(before) {
  let m = before.match(/(?:^|[\s(])#\*\*([^*\n>]+)>([^*\n]*)$/);
  if (m) return { from: before.length - m[0].replace(/^[\s(]/, "").length, choices: await topics(m[1], m[2]) };
  m = before.match(/(?:^|[\s(])(@_?)(?:\*\*)?([^@\s*][^@\n*]{0,40}|)$/);
  if (m && !/\s{2}|\s$/.test(m[2]) && m[2].split(" ").length <= 3) {
    return { from: before.length - m[1].length - m[2].length - (before.endsWith(`**${m[2]}`) ? 2 : 0), choices: mentions(m[2], m[1] === "@_") };
  }
  m = before.match(/(?:^|[\s(])#([^#\s*][^#\n*]{0,40}|)$/);
  if (m && !/\s$/.test(m[1])) return { from: before.length - m[1].length - 1, choices: channels(m[1]) };
  m = before.match(/(?:^|[\s(]):([a-z0-9_+-]{2,})$/i);
  if (m) return { from: before.length - m[1].length - 1, choices: await emoji(m[1]) };
  return null;
}

// Every word of the query starts a word of the text (case ignored); prefixes of the whole text
// come first.
function rank(query, text) {
  const q = query.toLowerCase().trim();
  const lower = text.toLowerCase();
  if (!q) return 1;
  if (lower.startsWith(q)) return 0;
  const words = lower.split(/[\s._@-]+/);
  return q.split(/\s+/).every((part) => words.some((w) => w.startsWith(part))) ? 1 : -1;
}

function best(items, query, key) {
  return items.map((item) => ({ item, r: rank(query, key(item)) })).filter((x) => x.r >= 0)
    .sort((a, b) => a.r - b.r || key(a.item).localeCompare(key(b.item))).map((x) => x.item);
}

function mentions(query, silent) {
  const at = silent ? "@_" : "@";
  const people = [...state.users.values()].filter((u) => u.is_active !== false && u.user_id !== state.me.user_id);
  const sameName = (u) => people.some((o) => o !== u && o.full_name === u.full_name);
  const byName = best(people, query, (u) => `${u.full_name} ${u.email}`).map((u) => ({
    label: u.full_name, note: u.delivery_email || u.email,
    text: `${at}**${u.full_name}${sameName(u) ? `|${u.user_id}` : ""}** `,
  }));
  const groups = best([...state.groups.values()].filter((g) => !g.name.startsWith("role:") && !g.deactivated), query, (g) => g.name)
    .map((g) => ({ label: g.name, note: t("typeahead.user_group"), text: `${at}*${g.name}* ` }));
  const wildcards = silent ? [] : WILDCARDS.filter(([name]) => name !== "topic" || streamOf())
    .filter(([name]) => query && name.startsWith(query.toLowerCase()))
    .map(([name, note]) => ({ label: name, note, text: `@**${name}** ` }));
  return [...wildcards, ...byName, ...groups];
}

function channels(query) {
  return best([...state.streams.values()], query, (s) => s.name)
    .map((s) => ({ label: `#${s.name}`, note: s.description || "", text: `#**${s.name}** ` }));
}

async function topics(channelName, query) {
  const stream = [...state.streams.values()].find((s) => s.name.toLowerCase() === channelName.toLowerCase());
  if (!stream) return [];
  if (!state.topics.has(stream.stream_id)) await ui.loadTopics(stream.stream_id);
  return (state.topics.get(stream.stream_id) || []).filter((topic) => topic.name.toLowerCase().includes(query.toLowerCase()))
    .map((topic) => ({ label: topic.name || t("common.general_chat"), note: `#${stream.name}`, text: `#**${stream.name}>${topic.name}** ` }));
}

async function emoji(query) {
  let all;
  try {
    all = await emojiList();
  } catch {
    return [];
  }
  const q = query.toLowerCase();
  return all.map((e) => ({ e, r: e.names.some((n) => n.startsWith(q)) ? 0 : e.names.some((n) => n.includes(q)) ? 1 : -1 }))
    .filter((x) => x.r >= 0).sort((a, b) => a.r - b.r || a.e.name.length - b.e.name.length).slice(0, SHOWN)
    .map(({ e }) => ({ label: `:${e.name}:`, glyph: e.char || null, src: e.src || null, text: `:${e.name}: ` }));
}

function draw() {
  const box = list();
  box.replaceChildren(...choices.map((c, i) => el("li", {
    id: `typeahead-${i}`, class: i === active ? "active" : null, dataset: { index: String(i) },
    attrs: { role: "option", "aria-selected": String(i === active) },
  }, c.glyph ? el("span", { class: "glyph", text: c.glyph, attrs: { "aria-hidden": "true" } }) : null,
  c.src ? el("img", { src: c.src, alt: "", width: 18, height: 18 }) : null,
  el("span", { class: "label", text: c.label }), c.note ? el("span", { class: "note", text: c.note }) : null)));
  box.hidden = false;
  area.setAttribute("aria-expanded", "true");
  area.setAttribute("aria-activedescendant", `typeahead-${active}`);
}

function choose(index) {
  const choice = choices[index];
  if (!choice) return;
  const caret = area.selectionStart;
  area.setRangeText(choice.text, from, caret, "end");
  close();
  area.focus();
  area.dispatchEvent(new Event("input"));
}

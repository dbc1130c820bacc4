// The emoji picker: a search box over the server's emoji names and the realm's custom emoji, and
// a grid of buttons. Without a search it shows one category at a time, chosen by the row of
// buttons above the grid: Popular (the person's recently used ones, kept in this browser, then
// Zulip's six popular ones), Unicode's groups in Unicode's order (the server's `emoji_catalog`),
// and the organization's custom emoji. One picker serves reactions and the compose box; the
// caller passes what to do with the chosen name.

import { getJson } from "./api.js";
import { $, el, clear } from "./dom.js";
import { state } from "./state.js";
import { emojiChar } from "./sanitize.js";
import { t } from "./texts.js";

const SHOWN = 240;
let catalog = null;     // [{name, names, char | src}]
let groups = [];        // [[group, [entries]]], Unicode's order
let group = "popular";  // the category shown without a search
let onPick = null;
let opener = null;

// Zulip's popular emoji, first in its picker.
const POPULAR = ["+1", "tada", "smile", "heart", "working_on_it", "octopus"];
const RECENT_KEY = "chronicle.emoji.recent";
const RECENT_MAX = 24;
// Unicode's group names, in words of the client's table.
const GROUP_TEXTS = {
  "Smileys & Emotion": "emoji.smileys_emotion", "People & Body": "emoji.people_body", "Animals & Nature": "emoji.animals_nature",
  "Food & Drink": "emoji.food_drink", "Travel & Places": "emoji.travel_places", Activities: "emoji.activities",
  Objects: "emoji.objects", Symbols: "emoji.symbols", Flags: "emoji.flags",
};

async function load() {
  if (catalog) return catalog;
  const data = await getJson(state.emojiDataUrl);
  const entries = Object.entries(data.code_to_names).map(([code, names]) => [code, { name: names[0], names, char: emojiChar(code) }])
    .filter(([, entry]) => entry.char);
  catalog = entries.map(([, entry]) => entry);
  const byCode = new Map(entries);
  groups = Object.entries(data.emoji_catalog || {}).map(([name, codes]) => [name, codes.map((code) => byCode.get(code)).filter(Boolean)])
    .filter(([, entries]) => entries.length);
  return catalog;
}

function recentNames() {
  try {
    const names = JSON.parse(localStorage.getItem(RECENT_KEY) || "[]");
    return Array.isArray(names) ? names.filter((n) => typeof n === "string") : [];
  } catch {
    return [];
  }
}

function remember(name) {
  try {
    localStorage.setItem(RECENT_KEY, JSON.stringify([name, ...recentNames().filter((n) => n !== name)].slice(0, RECENT_MAX)));
  } catch {
    // A browser that keeps nothing (private mode, full storage) has no recent emoji.
  }
}

// The entries of a category: Popular, a Unicode group, or the custom ones.
function categoryEntries(name) {
  const byName = new Map([...custom(), ...(catalog || [])].map((e) => [e.name, e]));
  if (name === "popular") return [...new Set([...recentNames(), ...POPULAR])].map((n) => byName.get(n)).filter(Boolean);
  if (name === "custom") return custom();
  return groups.find(([g]) => g === name)?.[1] || [];
}

// The category buttons: each shows its first emoji and says its name.
function drawTabs() {
  const tabs = [["popular", t("emoji.popular")], ...groups.map(([g]) => [g, t(GROUP_TEXTS[g] || g)]), ...(custom().length ? [["custom", t("emoji.custom")]] : [])];
  clear($("emoji-tabs")).append(...tabs.map(([name, label]) => {
    const first = categoryEntries(name)[0] || byNameOf(POPULAR[0]);
    return el("button", { type: "button", title: label, attrs: { "aria-label": label, "aria-pressed": String(name === group) },
      on: { click: () => { group = name; $("emoji-search").value = ""; drawTabs(); fill(); } } },
    first?.src ? el("img", { src: first.src, alt: "", class: "emoji-img" }) : first?.char || "");
  }));
}

const byNameOf = (name) => (catalog || []).find((e) => e.name === name);

// Every emoji a message may name: the standard ones, then the organization's own.
export async function emojiList() {
  return [...await load(), ...custom()];
}

function custom() {
  return Object.values(state.realmEmoji).filter((e) => !e.deactivated)
    .map((e) => ({ name: e.name, names: [e.name], src: e.source_url }));
}

export function setup() {
  $("emoji-search").addEventListener("input", fill);
  $("emoji-search").addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); $("emoji-grid").querySelector("button")?.click(); }
    if (e.key === "ArrowDown") { e.preventDefault(); $("emoji-grid").querySelector("button")?.focus(); }
  });
  $("emoji-grid").addEventListener("keydown", moveFocus);
  document.addEventListener("pointerdown", (e) => {
    if (!$("emoji-picker").hidden && !$("emoji-picker").contains(e.target) && !opener?.contains(e.target)) close();
  });
}

export const isOpen = () => !$("emoji-picker").hidden;

export async function open(anchor, pick) {
  if (isOpen() && opener === anchor) { close(); return; }
  onPick = pick;
  opener = anchor;
  const picker = $("emoji-picker");
  picker.hidden = false;
  place(picker, anchor);
  $("emoji-search").value = "";
  $("emoji-search").focus();
  clear($("emoji-grid")).append(el("p", { class: "hint", text: t("common.loading") }));
  try {
    await load();
    drawTabs();
    fill();
  } catch (error) {
    clear($("emoji-grid")).append(el("p", { class: "hint", text: t("emoji.could_not_load_emoji", { message: error.message }) }));
  }
}

export function close() {
  if (!isOpen()) return;
  $("emoji-picker").hidden = true;
  opener?.focus();
  opener = null;
}

// Above or below the button, whichever has room; a bottom sheet on phones (CSS).
function place(picker, anchor) {
  const box = anchor.getBoundingClientRect();
  const below = box.bottom + 340 < innerHeight;
  picker.classList.toggle("below", below);
  picker.style.setProperty("--top", `${below ? box.bottom + 6 : Math.max(8, box.top - 346)}px`);
  picker.style.setProperty("--left", `${Math.max(8, Math.min(box.left, innerWidth - 328))}px`);
}

function fill() {
  const query = $("emoji-search").value.trim().toLowerCase().replace(/^:|:$/g, "");
  const all = [...custom(), ...(catalog || [])];
  const found = query ? all.filter((e) => e.names.some((n) => n.includes(query))) : categoryEntries(group);
  const grid = clear($("emoji-grid"));
  if (!found.length) { grid.append(el("p", { class: "hint", text: t("emoji.no_emoji_match") })); return; }
  grid.append(...found.slice(0, SHOWN).map((e) => el("button", {
    type: "button", class: "emoji-choice", title: `:${e.name}:`, attrs: { "aria-label": e.name },
    on: { click: () => choose(e.name) },
  }, e.src ? el("img", { src: e.src, alt: "", class: "emoji-img" }) : e.char)));
}

function choose(name) {
  remember(name);
  const pick = onPick;
  close();
  pick?.(name);
}

const COLUMNS = 8;
function moveFocus(e) {
  const buttons = [...$("emoji-grid").querySelectorAll("button")];
  const i = buttons.indexOf(document.activeElement);
  const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: COLUMNS, ArrowUp: -COLUMNS }[e.key];
  if (i < 0 || !step) return;
  e.preventDefault();
  const next = i + step;
  if (next < 0) $("emoji-search").focus();
  else buttons[Math.min(next, buttons.length - 1)].focus();
}

// The emoji picker: a search box over the server's emoji names and the realm's custom emoji, and
// a grid of buttons. One picker serves reactions and the compose box; the caller passes what to
// do with the chosen name.

import { getJson } from "./api.js";
import { $, el, clear } from "./dom.js";
import { state } from "./state.js";
import { emojiChar } from "./sanitize.js";
import { t } from "./texts.js";

const SHOWN = 240;
let catalog = null;     // [{name, names, char | src}]
let onPick = null;
let opener = null;

async function load() {
  if (catalog) return catalog;
  const data = await getJson(state.emojiDataUrl);
  catalog = Object.entries(data.code_to_names).map(([code, names]) => ({ name: names[0], names, char: emojiChar(code) }))
    .filter((e) => e.char);
  return catalog;
}

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
  const found = query ? all.filter((e) => e.names.some((n) => n.includes(query))) : all;
  const grid = clear($("emoji-grid"));
  if (!found.length) { grid.append(el("p", { class: "hint", text: t("emoji.no_emoji_match") })); return; }
  grid.append(...found.slice(0, SHOWN).map((e) => el("button", {
    type: "button", class: "emoji-choice", title: `:${e.name}:`, attrs: { "aria-label": e.name },
    on: { click: () => choose(e.name) },
  }, e.src ? el("img", { src: e.src, alt: "", class: "emoji-img" }) : e.char)));
}

function choose(name) {
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

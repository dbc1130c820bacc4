// The channel browser: every channel the server shows me, with subscribe / unsubscribe, and a
// form to create one.

import { api } from "./api.js";
import { $, el, clear, toast } from "./dom.js";
import { state } from "./state.js";
import * as narrows from "./narrow.js";
import { ui } from "./ui.js";
import { compareNames } from "./names.js";
import { t } from "./texts.js";

let all = [];

export function setup() {
  $("channel-filter").addEventListener("input", render);
  $("create-channel").addEventListener("submit", (e) => { e.preventDefault(); create(); });
}

export async function openChannels() {
  const dialog = $("channels-dialog");
  if (!dialog.open) dialog.showModal();
  clear($("channel-browser")).append(el("li", { class: "hint", text: t("common.loading") }));
  try {
    all = (await api("GET", "streams")).streams;
    render();
  } catch (error) {
    clear($("channel-browser")).append(el("li", { class: "hint", text: t("channels.could_not_load_channels", { message: error.message }) }));
  }
  $("channel-filter").focus();
}

// Subscriptions change by events while the dialog is open; keep the buttons honest.
export function refresh() {
  if ($("channels-dialog").open) render();
}

function render() {
  const filter = $("channel-filter").value.trim().toLowerCase();
  const shown = all.filter((s) => !filter || s.name.toLowerCase().includes(filter))
    .sort((a, b) => compareNames(a.name, b.name));
  clear($("channel-browser")).append(...(shown.length ? shown.map(row) : [el("li", { class: "hint", text: t("channels.no_channels_match") })]));
}

function row(stream) {
  const subscribed = state.subs.has(stream.stream_id);
  return el("li", { class: "channel-row" },
    el("div", { class: "channel-text" },
      el("a", { class: "channel-name", href: narrows.toHash(narrows.channel(stream.stream_id)), text: `${stream.invite_only ? "" : "#"}${stream.name}${stream.invite_only ? " (private)" : ""}`,
        on: { click: () => $("channels-dialog").close() } }),
      stream.description ? el("span", { class: "channel-description", text: stream.description }) : null),
    el("button", { type: "button", class: subscribed ? "" : "primary", text: subscribed ? t("common.unsubscribe") : t("common.subscribe"),
      attrs: { "aria-label": t(subscribed ? "channels.unsubscribe_from" : "channels.subscribe_to", { name: stream.name }) },
      on: { click: (e) => toggle(stream, subscribed, e.currentTarget) } }));
}

async function toggle(stream, subscribed, button) {
  button.disabled = true;
  try {
    if (subscribed) await api("DELETE", "users/me/subscriptions", { subscriptions: [stream.name] });
    else await api("POST", "users/me/subscriptions", { subscriptions: [{ name: stream.name }] });
    // The subscription event updates the state; until it arrives, show the intended state.
    if (subscribed) state.subs.delete(stream.stream_id);
    else if (!state.subs.has(stream.stream_id)) state.subs.set(stream.stream_id, { ...stream, is_muted: false });
    ui.refresh();
  } catch (error) {
    toast(t(subscribed ? "channels.could_not_unsubscribe" : "channels.could_not_subscribe", { message: error.message }));
    button.disabled = false;
  }
}

async function create() {
  const name = $("new-channel-name").value.trim();
  if (!name) return;
  const sub = { name, description: $("new-channel-description").value.trim() };
  try {
    await api("POST", "users/me/subscriptions", { subscriptions: [sub], invite_only: $("new-channel-private").checked });
    $("create-channel").reset();
    toast(t("channels.created", { name }));
    all = (await api("GET", "streams")).streams;
    render();
    const made = all.find((s) => s.name.toLowerCase() === name.toLowerCase());
    if (made) { $("channels-dialog").close(); ui.go(narrows.channel(made.stream_id)); }
  } catch (error) {
    toast(t("channels.could_not_create_the_channel", { message: error.message }));
  }
}

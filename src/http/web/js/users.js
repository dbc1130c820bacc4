// The right column: everyone in the organization with a presence dot and status text; a click
// opens the direct-message conversation with that person.

import { $, el } from "./dom.js";
import { state, presenceOf, dmKey } from "./state.js";
import * as narrows from "./narrow.js";
import { swapIfChanged } from "./ui.js";
import { compareNames } from "./names.js";
import { t } from "./texts.js";

const RANK = { active: 0, idle: 1, offline: 2 };
const LABEL = { active: t("users.active"), idle: t("users.idle"), offline: t("users.offline") };

export function setup() {
  $("people-filter").addEventListener("input", render);
}

export function render() {
  const filter = $("people-filter").value.trim().toLowerCase();
  const people = [...state.users.values()]
    .filter((u) => u.is_active !== false && !u.is_bot && !state.muted.has(u.user_id))
    .filter((u) => !filter || u.full_name.toLowerCase().includes(filter) || u.email.toLowerCase().includes(filter))
    .map((u) => ({ user: u, presence: u.user_id === state.me.user_id ? "active" : presenceOf(u.user_id) }))
    .sort((a, b) => RANK[a.presence] - RANK[b.presence] || compareNames(a.user.full_name, b.user.full_name));
  swapIfChanged($("people"), people.map(person));
}

function person({ user, presence }) {
  const status = state.status.get(user.user_id)?.status_text;
  const me = user.user_id === state.me.user_id;
  return el("li", {}, el("a", {
    class: "person", href: narrows.toHash(narrows.dm(dmKey([user.user_id]))), dataset: { key: String(user.user_id) },
    attrs: { "aria-label": [user.full_name + (me ? t("users.you") : ""), LABEL[presence], status].filter(Boolean).join(", ") },
  },
  el("span", { class: `dot ${presence}`, attrs: { "aria-hidden": "true", title: LABEL[presence] } }),
  el("span", { class: "person-text" },
    el("span", { class: "name", text: user.full_name + (me ? t("users.you") : "") }),
    status ? el("span", { class: "status-text", text: status }) : null)));
}

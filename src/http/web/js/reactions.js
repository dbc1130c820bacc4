// Reactions under a message: one button per emoji with its count, pressed when one of them is
// mine; pressing toggles mine.

import { api } from "./api.js";
import { el, toast } from "./dom.js";
import { state, userName } from "./state.js";
import { emojiChar } from "./sanitize.js";
import { ui } from "./ui.js";
import { t } from "./texts.js";

function grouped(m) {
  const groups = new Map();
  for (const r of m.reactions || []) {
    const key = `${r.reaction_type}:${r.emoji_code}`;
    if (!groups.has(key)) groups.set(key, { ...r, users: [] });
    groups.get(key).users.push(r.user_id);
  }
  return [...groups.values()];
}

export function emojiGlyph(reaction) {
  if (reaction.reaction_type === "realm_emoji") {
    const custom = state.realmEmoji[reaction.emoji_code];
    if (custom) return el("img", { class: "emoji-img", src: custom.source_url, alt: `:${reaction.emoji_name}:` });
  }
  return el("span", { class: "emoji-char", text: emojiChar(reaction.emoji_code) || `:${reaction.emoji_name}:`, attrs: { "aria-hidden": "true" } });
}

export function reactionButtons(m) {
  const groups = grouped(m);
  if (!groups.length) return null;
  const box = el("div", { class: "reactions" });
  for (const g of groups) {
    const mine = g.users.includes(state.me.user_id);
    const who = g.users.map(userName).join(", ");
    box.append(el("button", {
      type: "button", class: `reaction${mine ? " mine" : ""}`,
      attrs: { "aria-pressed": String(mine), "aria-label": `${g.emoji_name}: ${g.users.length} (${who})`, title: `:${g.emoji_name}: ${who}` },
      on: { click: () => toggleReaction(m, g.emoji_name, !mine) },
    }, emojiGlyph(g), el("span", { class: "count", text: String(g.users.length) })));
  }
  box.append(el("button", { type: "button", class: "reaction add", text: "+", attrs: { "aria-label": t("common.add_reaction"), title: t("common.add_reaction") },
    on: { click: (e) => ui.pickEmoji(e.currentTarget, (name) => toggleReaction(m, name, true)) } }));
  return box;
}

export async function toggleReaction(m, emojiName, add) {
  const already = (m.reactions || []).some((r) => r.user_id === state.me.user_id && r.emoji_name === emojiName);
  if (add && already) return;
  try {
    await api(add ? "POST" : "DELETE", `messages/${m.id}/reactions`, { emoji_name: emojiName });
  } catch (error) {
    toast(t(add ? "reactions.could_not_add" : "reactions.could_not_remove", { message: error.message }));
  }
}

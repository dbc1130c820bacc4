// Who someone is and who read what: the user card (opened from a sender's name or the people
// list: their picture, role, status, local time, profile fields, and what to do next) and a
// message's read receipts. Both fetch what they show when opened.

import { api } from "./api.js";
import { $, el, clear, toast } from "./dom.js";
import { state, userName, ROLE_OWNER, ROLE_ADMIN, ROLE_MODERATOR, ROLE_MEMBER, ROLE_GUEST } from "./state.js";
import { ui } from "./ui.js";
import { longTime } from "./time.js";
import { compareNames } from "./names.js";
import { emojiGlyph } from "./reactions.js";
import { t } from "./texts.js";

const ROLES = { [ROLE_OWNER]: t("common.owner"), [ROLE_ADMIN]: t("common.administrator"), [ROLE_MODERATOR]: t("common.moderator"), [ROLE_MEMBER]: t("common.member"), [ROLE_GUEST]: t("common.guest") };
let fields = null; // the organization's custom profile fields, by id

// The time where they are, in their time zone (Intl is used here only, on a click, never on
// the first screen).
function localTime(zone) {
  if (!zone) return null;
  try {
    return new Date().toLocaleTimeString("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", hour12: !state.settings.twenty_four_hour_time });
  } catch {
    return null;
  }
}

export async function openUser(userId) {
  const known = state.users.get(userId);
  $("card-name").textContent = known?.full_name || userName(userId);
  const body = clear($("card-body"));
  body.append(el("p", { class: "hint", text: t("common.loading") }));
  $("user-card").showModal();
  let user;
  try {
    user = (await api("GET", `users/${userId}`, { include_custom_profile_fields: true })).user;
    if (!fields) fields = new Map((await api("GET", "realm/profile_fields")).custom_fields.map((f) => [String(f.id), f]));
  } catch (error) {
    clear(body).append(el("p", { class: "form-error", text: t("cards.could_not_load_this_person", { message: error.message }) }));
    return;
  }
  const status = state.status.get(userId) || {};
  const facts = [
    [t("common.role"), user.is_bot ? t("cards.bot") : ROLES[user.role] || t("common.member")],
    // The real address only where the organization lets this person see it (a stand-in
    // address is not one to write to).
    user.delivery_email ? [t("common.email"), user.delivery_email] : null,
    status.status_text || status.emoji_name ? [t("common.status"), statusNode(status)] : null,
    localTime(user.timezone) ? [t("cards.local_time"), `${localTime(user.timezone)} (${user.timezone})`] : null,
    user.date_joined ? [t("cards.joined"), longTime(Date.parse(user.date_joined) / 1000).replace(/, [^,]*$/, "")] : null,
    ...Object.entries(user.profile_data || {}).filter(([, v]) => v && v.value).map(([id, v]) => [fields.get(id)?.name || t("cards.field", { id }), v.value]),
  ].filter(Boolean);
  clear(body).append(
    el("div", { class: "card-top" },
      el("img", { src: user.avatar_url || known?.avatar_url, alt: "", width: 80, height: 80, class: "card-avatar" }),
      el("dl", { class: "card-facts" }, facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v instanceof Node ? v : String(v))]))),
    el("div", { class: "card-actions" },
      userId === state.me.user_id ? null : el("button", { type: "button", class: "primary", text: t("cards.send_a_direct_message"),
        on: { click: () => { $("user-card").close(); ui.go([{ operator: "dm", operand: [userId] }]); } } }),
      el("button", { type: "button", text: t("cards.view_messages_sent"),
        on: { click: () => { $("user-card").close(); ui.go([{ operator: "sender", operand: user.email }]); } } }),
      userId === state.me.user_id ? null : muteButton(userId)));
}

// A status: its emoji (named for screen readers) and its text.
function statusNode(status) {
  const emoji = status.emoji_name ? el("span", { class: "status-emoji", attrs: { role: "img", "aria-label": `:${status.emoji_name}:` } },
    emojiGlyph({ reaction_type: status.reaction_type || "unicode_emoji", emoji_code: status.emoji_code, emoji_name: status.emoji_name })) : null;
  return el("span", {}, emoji, emoji && status.status_text ? " " : null, status.status_text || null);
}

// Muting: the person's messages arrive read and do not notify (Settings › Muted users lists them).
function muteButton(userId) {
  const muted = state.muted.has(userId);
  const button = el("button", { type: "button", text: muted ? t("common.unmute") : t("cards.mute"), on: { click: async () => {
    button.disabled = true;
    try {
      await api(muted ? "DELETE" : "POST", `users/me/muted_users/${userId}`);
      $("user-card").close();
    } catch (error) {
      toast(t(muted ? "cards.could_not_unmute" : "cards.could_not_mute", { message: error.message }));
      button.disabled = false;
    }
  } } });
  return button;
}

export async function showReceipts(m) {
  let ids;
  try {
    ids = (await api("GET", `messages/${m.id}/read_receipts`)).user_ids;
  } catch (error) {
    toast(t("cards.could_not_load_the_read_receipts", { message: error.message }));
    return;
  }
  const names = ids.map(userName).sort(compareNames);
  $("receipts-summary").textContent = names.length ? t(names.length === 1 ? "cards.read_by_one" : "cards.read_by", { count: names.length }) : t("cards.nobody_has_read_this_message_yet");
  $("receipts-list").replaceChildren(...names.map((name) => el("li", { text: name })));
  $("receipts-dialog").showModal();
}

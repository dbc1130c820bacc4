// The person's own settings pages: profile, account and privacy, preferences, notifications,
// alert words and muted users. Settings save as they change (PATCH /settings) and follow
// `user_settings` events, so a change made on another device shows here too.

import { api } from "./api.js";
import { el, add, clear, toast } from "./dom.js";
import { state, isAdmin, userName } from "./state.js";
import { longTime } from "./time.js";
import { showTwoFactor } from "./two_factor.js";
import { logout } from "./session.js";
import { fieldset, liveFieldsets, control, form, field, table, button, act, groupSettingText, redrawWhenFree, picturePicker } from "./forms.js";
import { ask } from "./confirm.js";

function saveSetting(key, value) {
  // Desktop notifications need the browser's permission: asked for as they are turned on.
  if (key === "enable_desktop_notifications" && value && window.Notification?.permission === "default") Notification.requestPermission();
  return api("PATCH", "settings", { [key]: value });
}

// A fieldset of personal settings, kept live by `user_settings` events (liveSettings).
const settingsGroup = (title, specs) => fieldset(title, specs, (key) => state.settings[key], saveSetting);
const liveSettings = (box, sets) => liveFieldsets(box, sets, "user_settings");

// ---- profile -----------------------------------------------------------------------------------

// A password form names its account to password managers (and screen readers) by a hidden field.
const username = () => el("input", { type: "text", autocomplete: "username", value: state.me.delivery_email || state.me.email, hidden: true, attrs: { "aria-hidden": "true" } });

const me = () => state.users.get(state.me.user_id) || {};

export async function profile(box) {
  const avatar = el("img", { class: "settings-avatar", src: me().avatar_url, alt: "", width: 96, height: 96 });
  const removeAvatar = button("Use the generated avatar", () => act(removeAvatar, "remove the avatar", () => api("DELETE", "users/me/avatar")));

  const nameLocked = state.realm.name_changes_disabled && !isAdmin();
  const name = el("input", { id: "full-name", required: true, maxLength: 60, value: state.me.full_name, disabled: nameLocked });
  const status = el("input", { id: "status-text", maxLength: 60, placeholder: "What are you up to?", value: state.status.get(state.me.user_id)?.status_text || "" });
  const oldPassword = el("input", { type: "password", autocomplete: "current-password", required: true });
  const newPassword = el("input", { type: "password", autocomplete: "new-password", required: true, minLength: 6 });

  add(box,
    el("div", { class: "avatar-row" }, avatar,
      el("div", { class: "avatar-actions" },
        picturePicker("avatar-file", "Upload an avatar", "users/me/avatar", "avatar"), removeAvatar,
        el("span", { class: "hint", text: "PNG, JPEG, GIF or WebP, at most 5 MiB." }))),
    form({ id: "name-form", class: "setting-row" }, [el("label", { for: "full-name", text: "Full name" }), name,
      el("button", { type: "submit", text: "Save", disabled: nameLocked })], async () => {
      await api("PATCH", "settings", { full_name: name.value.trim() });
      toast("Name saved.");
    }),
    nameLocked ? el("p", { class: "hint", text: "Your organization does not allow members to change their names." }) : null,
    form({ id: "status-form", class: "setting-row" }, [el("label", { for: "status-text", text: "Status" }), status,
      el("button", { type: "submit", text: "Save" })], async () => {
      await api("POST", "users/me/status", { status_text: status.value.trim() });
      toast("Status saved.");
    }),
    el("div", { class: "setting-row" }, el("span", { class: "label-like", text: "Email" }), el("span", { id: "my-email", text: state.me.delivery_email || state.me.email })),
    el("h3", { text: "Password" }),
    el("p", { class: "hint", text: "A new password logs you out everywhere, in this browser too." }),
    form({ id: "password-form", class: "stack-form narrow-form" }, [username(),
      field("Current password", oldPassword), field("New password", newPassword, "At least 6 characters."),
      el("button", { type: "submit", class: "primary", text: "Change password" })], async () => {
      await api("PATCH", "settings", { old_password: oldPassword.value, new_password: newPassword.value });
      // A new password ends every session that knew the old one, this one too (as Django
      // does for the others): the login page says so.
      location.assign("/login/?reset=done");
    }),
  );
  const fields = el("div", { id: "my-profile-fields" });
  box.append(fields);
  await profileFields(fields);
  return (ev) => {
    if (ev.type === "realm_user" && ev.op === "update" && ev.person?.user_id === state.me.user_id) {
      if (ev.person.avatar_url) avatar.src = ev.person.avatar_url;
      if (ev.person.full_name && document.activeElement !== name) name.value = ev.person.full_name;
    }
    if (ev.type === "custom_profile_fields") redrawWhenFree(fields, () => profileFields(fields));
  };
}

// Zulip's profile field types: 1 short text, 2 long text, 3 dropdown, 4 date, 5 link, 6 users,
// 7 external account, 8 pronouns.
async function profileFields(box) {
  let fields, values;
  try {
    [{ custom_fields: fields }, { user: { profile_data: values = {} } }] = await Promise.all([
      api("GET", "realm/profile_fields"), api("GET", `users/${state.me.user_id}`, { include_custom_profile_fields: true })]);
  } catch (error) {
    clear(box).append(el("p", { class: "hint", text: `Could not load the profile fields: ${error.message}` }));
    return;
  }
  const usable = fields.filter((f) => f.type !== 6);
  if (!usable.length) { clear(box); return; }
  const save = (key, value) => api("PATCH", "users/me/profile_data", { data: [{ id: Number(key), value: value === "" ? null : value }] });
  const rows = usable.map((f) => {
    const spec = { key: String(f.id), label: f.name, hint: f.hint || undefined, disabled: f.editable_by_user === false, kind: f.type === 2 ? "long" : "text" };
    if (f.type === 3) {
      const choices = Object.entries(JSON.parse(f.field_data || "{}")).sort((a, b) => a[1].order - b[1].order);
      Object.assign(spec, { kind: "choice", options: [["", "—"], ...choices.map(([id, c]) => [id, c.text])] });
    }
    const row = control(spec, values[f.id]?.value ?? "", save);
    if (f.type === 4) row.input.type = "date";
    if (f.type === 5) row.input.type = "url";
    return row;
  });
  clear(box).append(el("fieldset", { class: "prefs" }, el("legend", { text: "Profile fields" }), rows));
}

// ---- account and privacy -----------------------------------------------------------------------

const PRIVACY = [
  { key: "presence_enabled", kind: "bool", label: "Let others see when I am online" },
  { key: "send_private_typing_notifications", kind: "bool", label: "Let recipients see when I am typing direct messages" },
  { key: "send_stream_typing_notifications", kind: "bool", label: "Let others see when I am typing in channels" },
  { key: "send_read_receipts", kind: "bool", label: "Let others see when I have read messages" },
  { key: "allow_private_data_export", kind: "bool", label: "Let administrators export my private data" },
];

export function account(box) {
  const twoFactor = el("div", { id: "two-factor", class: "two-factor" });
  const sessions = el("ul", { id: "sessions", class: "sessions" });
  const key = el("div", { id: "api-key" });
  const live = liveSettings(box, [settingsGroup("Privacy", PRIVACY)]);
  add(box,
    el("p", { id: "inspect-policy", class: "policy" },
      "Who can read every conversation, direct messages and private channels included, through the organization's log inspector: ",
      el("strong", { id: "inspect-who", text: groupSettingText(state.realm.can_inspect_log_group) }),
      ". Each use is recorded in the organization's log."),
    el("h3", { text: "Two-factor authentication" }), twoFactor,
    el("h3", { text: "API key" }), key,
    el("h3", { text: "Your sessions" }), sessions,
    isAdmin() ? el("p", { id: "admin-link" }, el("a", { href: "/admin/", text: "Organization audit log" })) : null,
    el("h3", { text: "Leave" }),
    el("div", { class: "row-actions" },
      el("button", { type: "button", id: "settings-logout", text: "Log out", on: { click: logout } }),
      el("button", { type: "button", class: "danger", text: "Deactivate your account", on: { click: deactivateSelf } })),
  );
  showTwoFactor(twoFactor);
  showApiKey(key);
  loadSessions(sessions);
  return live;
}

// The API key is shown after the password (as in Zulip), and the current code for a person with
// two-factor authentication (the server takes the two together, as its /fetch_api_key does),
// with a zuliprc file and a new key.
function showApiKey(box) {
  const password = el("input", { id: "api-key-password", type: "password", autocomplete: "current-password", required: true });
  const code = el("input", { id: "api-key-code", inputMode: "numeric", autocomplete: "one-time-code", maxLength: 8, size: 8 });
  clear(box).append(
    el("p", { class: "hint", text: "Your API key lets programs (bots, the terminal client, scripts) act as you. Keep it secret. Asking for it counts as a login: you get the usual login email." }),
    form({ class: "stack-form narrow-form", id: "api-key-form" }, [username(), field("Password", password),
      field("Two-factor code", code, "Only if you use two-factor authentication."),
      el("button", { type: "submit", text: "Show the API key" })], async () => {
      const answer = await api("POST", "fetch_api_key", { username: state.me.delivery_email || state.me.email, password: password.value + code.value.trim() }, { noLogin: true });
      password.value = code.value = "";
      showKey(box, answer.api_key);
    }));
}

function showKey(box, apiKey) {
  const text = el("code", { id: "api-key-value", text: apiKey });
  const regenerate = button("Generate a new API key", () => ask({
    title: "Generate a new API key?", text: "Programs using the current key will stop working until they are given the new one.", ok: "Generate",
    run: async () => { text.textContent = (await api("POST", "users/me/api_key/regenerate")).api_key; },
  }));
  clear(box).append(el("p", {}, "Your API key: ", text),
    el("div", { class: "row-actions" }, zuliprcLink(() => state.me.delivery_email || state.me.email, () => text.textContent), regenerate));
}

// A zuliprc file for the `zulip` package and the terminal client, made in the browser when
// clicked (the address and key as they are then).
export function zuliprcLink(emailOf, keyOf) {
  const link = el("a", { class: "button small", href: "#", download: "zuliprc", text: "Download zuliprc" });
  link.addEventListener("click", () => {
    const body = `[api]\nemail=${emailOf()}\nkey=${keyOf()}\nsite=${location.origin}\n`;
    link.href = URL.createObjectURL(new Blob([body], { type: "text/plain" }));
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  });
  return link;
}

async function loadSessions(list) {
  clear(list).append(el("li", { class: "hint", text: "Loading…" }));
  try {
    const { sessions } = await api("GET", "sessions");
    clear(list).append(...sessions.sort((a, b) => b.current - a.current || b.started - a.started).map((s) => session(s, list)));
  } catch (error) {
    clear(list).append(el("li", { class: "hint", text: `Could not load sessions: ${error.message}` }));
  }
}

function session(s, list) {
  // The client string is whatever the browser sent: text only.
  return el("li", { class: "session" },
    el("div", { class: "session-text" },
      el("span", { class: "session-client", text: s.client || "Unknown browser" }),
      el("span", { class: "session-when", text: `${s.current ? "This browser · " : ""}since ${longTime(s.started)} · expires ${longTime(s.expires)}` })),
    el("button", { type: "button", text: s.current ? "Log out" : "End", attrs: { "aria-label": s.current ? "Log out of this browser" : `End the session of ${s.client || "another browser"}` },
      on: { click: async () => {
        try {
          if (s.current) { await logout(); return; }
          await api("DELETE", `sessions/${encodeURIComponent(s.id)}`);
          loadSessions(list);
        } catch (error) {
          toast(`Could not end the session: ${error.message}`);
        }
      } } }));
}

function deactivateSelf() {
  ask({
    title: "Deactivate your account?", ok: "Deactivate",
    text: "You will be logged out everywhere and your bots deactivated. Only an administrator can reactivate the account.",
    run: async () => {
      await api("DELETE", "users/me");
      location.assign("/login/");
    },
  });
}

// ---- preferences -------------------------------------------------------------------------------

function zones() {
  const all = Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : [];
  const current = state.settings.timezone;
  const list = current && !all.includes(current) ? [current, ...all] : all;
  return [["", "Not set"], ...list.map((zone) => [zone, zone.replace(/_/g, " ")])];
}

export function preferences(box) {
  const detected = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return liveSettings(box, [
    settingsGroup("Display", [
      { key: "color_scheme", kind: "choice", label: "Theme", options: [[1, "Same as the system"], [3, "Light"], [2, "Dark"]] },
      { key: "twenty_four_hour_time", kind: "choice", label: "Time format", options: [[false, "12-hour (5:00 PM)"], [true, "24-hour (17:00)"]] },
    ]),
    settingsGroup("Writing", [
      { key: "enter_sends", kind: "choice", label: "Sending", options: [[true, "Enter sends, Shift+Enter adds a line"], [false, "Ctrl+Enter sends, Enter adds a line"]] },
    ]),
    settingsGroup("Time zone", [
      { key: "timezone", kind: "choice", label: "Your time zone", options: zones(), hint: `Shown to others on your card. This browser's: ${detected}.` },
    ]),
  ]);
}

// ---- notifications -----------------------------------------------------------------------------

const FOLLOW_POLICY = [[1, "Topics I take part in"], [2, "Topics I send a message to"], [3, "Topics I start"], [4, "Never"]];
const BATCHING = [[120, "2 minutes"], [300, "5 minutes"], [600, "10 minutes"], [1800, "30 minutes"], [3600, "1 hour"], [21600, "6 hours"], [86400, "1 day"], [604800, "1 week"]];

export function notifications(box) {
  const period = state.settings.email_notifications_batching_period_seconds;
  const batching = BATCHING.some(([s]) => s === period) ? BATCHING : [[period, `${period} seconds`], ...BATCHING];
  return liveSettings(box, [
    settingsGroup("Direct messages, mentions and alerts", [
      { key: "enable_desktop_notifications", kind: "bool", label: "Desktop notifications" },
      { key: "enable_sounds", kind: "bool", label: "Sound" },
      { key: "enable_offline_email_notifications", kind: "bool", label: "Email while I am away" },
      { key: "enable_offline_push_notifications", kind: "bool", label: "Phone notifications while I am away" },
      { key: "enable_online_push_notifications", kind: "bool", label: "Phone notifications while I am online" },
      { key: "pm_content_in_desktop_notifications", kind: "bool", label: "Show the message in desktop notifications" },
    ]),
    settingsGroup("Followed topics", [
      { key: "enable_followed_topic_desktop_notifications", kind: "bool", label: "Desktop notifications" },
      { key: "enable_followed_topic_audible_notifications", kind: "bool", label: "Sound" },
      { key: "enable_followed_topic_email_notifications", kind: "bool", label: "Email" },
      { key: "enable_followed_topic_push_notifications", kind: "bool", label: "Phone notifications" },
      { key: "enable_followed_topic_wildcard_mentions_notify", kind: "bool", label: "Notify me of @all and @topic mentions" },
    ]),
    settingsGroup("Channels (each channel can differ)", [
      { key: "enable_stream_desktop_notifications", kind: "bool", label: "Desktop notifications" },
      { key: "enable_stream_audible_notifications", kind: "bool", label: "Sound" },
      { key: "enable_stream_email_notifications", kind: "bool", label: "Email" },
      { key: "enable_stream_push_notifications", kind: "bool", label: "Phone notifications" },
      { key: "wildcard_mentions_notify", kind: "bool", label: "Notify me of @all and @topic mentions" },
    ]),
    settingsGroup("Topics", [
      { key: "automatically_follow_topics_policy", kind: "choice", label: "Follow automatically", options: FOLLOW_POLICY },
      { key: "automatically_unmute_topics_in_muted_streams_policy", kind: "choice", label: "Unmute automatically in muted channels", options: FOLLOW_POLICY },
      { key: "automatically_follow_topics_where_mentioned", kind: "bool", label: "Follow topics where I am mentioned" },
    ]),
    settingsGroup("Email", [
      { key: "email_notifications_batching_period_seconds", kind: "choice", label: "Wait before emailing", options: batching, hint: "Messages in this time come in one email." },
      { key: "message_content_in_email_notifications", kind: "bool", label: "Include the messages in emails" },
      { key: "realm_name_in_email_notifications_policy", kind: "choice", label: "Organization name in the subject", options: [[1, "When I belong to several"], [2, "Always"], [3, "Never"]] },
      { key: "enable_digest_emails", kind: "bool", label: "A weekly digest while I am away" },
      { key: "enable_login_emails", kind: "bool", label: "An email when my account is signed in to" },
      { key: "enable_marketing_emails", kind: "bool", label: "News about this server" },
    ]),
    settingsGroup("Other", [
      { key: "notification_sound", kind: "choice", label: "Notification sound", options: [["zulip", "Chime"], ["none", "None"]] },
      { key: "desktop_icon_count_display", kind: "choice", label: "Unread count on the app icon", options: [[1, "All unread messages"], [2, "Direct messages, mentions and followed topics"], [3, "Direct messages and mentions"], [4, "None"]] },
    ]),
  ]);
}

// ---- alert words and muted users --------------------------------------------------------------

export function alertWords(box) {
  const list = el("div", { id: "alert-word-list" });
  const word = el("input", { id: "alert-word", maxLength: 100, required: true });
  const draw = () => clear(list).append(table("Alert words", [["Word", (w) => w]], state.alertWords, (w) => [
    button("Remove", (e) => act(e.currentTarget, "remove the word", () => api("DELETE", "users/me/alert_words", { alert_words: [w] })),
      { attrs: { "aria-label": `Remove ${w}` } })], (w) => w));
  box.append(
    el("p", { class: "hint", text: "A message containing one of these words, as a whole word and in any case, is highlighted and notifies you like a mention." }),
    form({ class: "setting-row", id: "alert-word-form" }, [el("label", { for: "alert-word", text: "New word" }), word, el("button", { type: "submit", text: "Add" })], async () => {
      await api("POST", "users/me/alert_words", { alert_words: [word.value.trim()] });
      word.value = "";
    }),
    list);
  draw();
  return (ev) => { if (ev.type === "alert_words") draw(); };
}

export function mutedUsers(box) {
  const list = el("div", { id: "muted-user-list" });
  const draw = () => {
    const muted = [...state.muted.entries()].sort((a, b) => b[1] - a[1]);
    clear(list).append(table("Muted users", [["Name", ([id]) => userName(id)], ["Since", ([, at]) => longTime(at)]], muted,
      ([id]) => [button("Unmute", (e) => act(e.currentTarget, "unmute", () => api("DELETE", `users/me/muted_users/${id}`)), { attrs: { "aria-label": `Unmute ${userName(id)}` } })],
      ([id]) => id));
  };
  box.append(el("p", { class: "hint", text: "Messages from people you mute arrive already read and do not notify you; mute someone from their card." }), list);
  draw();
  return (ev) => { if (ev.type === "muted_users" || ev.type === "realm_user") draw(); };
}

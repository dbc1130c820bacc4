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
import { play } from "./notify.js";
import { t } from "./texts.js";

function saveSetting(key, value) {
  // Desktop notifications need the browser's permission: asked for as they are turned on.
  if (key === "enable_desktop_notifications" && value && window.Notification?.permission === "default") Notification.requestPermission();
  // A sound chosen plays once, to be heard.
  if (key === "notification_sound") play(value);
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
  const removeAvatar = button(t("prefs.use_the_generated_avatar"), () => act(removeAvatar, "prefs.could_not_remove_the_avatar", () => api("DELETE", "users/me/avatar")));

  const nameLocked = state.realm.name_changes_disabled && !isAdmin();
  const name = el("input", { id: "full-name", required: true, maxLength: 60, value: state.me.full_name, disabled: nameLocked });
  const status = el("input", { id: "status-text", maxLength: 60, placeholder: t("prefs.what_are_you_up_to"), value: state.status.get(state.me.user_id)?.status_text || "" });
  const oldPassword = el("input", { type: "password", autocomplete: "current-password", required: true });
  const newPassword = el("input", { type: "password", autocomplete: "new-password", required: true, minLength: 6 });
  // A new address is confirmed from itself (a link mailed to it); the address shown changes
  // when the link is opened, by the `realm_user` event.
  const myEmail = el("span", { id: "my-email", text: state.me.delivery_email || state.me.email });
  const emailLocked = state.realm.email_changes_disabled && !isAdmin();
  const emailBox = el("div");
  const changeEmail = button(t("prefs.change_your_address"), () => {
    const input = el("input", { id: "new-email", type: "email", required: true, maxLength: 254, autocomplete: "email" });
    clear(emailBox).append(form({ id: "email-form", class: "setting-row" }, [el("label", { for: "new-email", text: t("prefs.new_address") }), input,
      el("button", { type: "submit", class: "primary", text: t("prefs.send_a_confirmation_link") }), button(t("common.cancel"), () => clear(emailBox))], async () => {
      const address = input.value.trim();
      await api("PATCH", "settings", { email: address });
      clear(emailBox).append(el("p", { id: "email-sent", class: "hint", attrs: { role: "status" }, text: t("prefs.open_the_link_we_sent_to", { address }) }));
    }));
    input.focus();
  }, { id: "change-email" });

  add(box,
    el("div", { class: "avatar-row" }, avatar,
      el("div", { class: "avatar-actions" },
        picturePicker("avatar-file", t("prefs.upload_an_avatar"), "users/me/avatar", ["prefs.avatar_saved", "prefs.could_not_save_the_avatar"]), removeAvatar,
        el("span", { class: "hint", text: t("prefs.png_jpeg_gif_or_webp_at") }))),
    form({ id: "name-form", class: "setting-row" }, [el("label", { for: "full-name", text: t("common.full_name") }), name,
      el("button", { type: "submit", text: t("common.save"), disabled: nameLocked })], async () => {
      await api("PATCH", "settings", { full_name: name.value.trim() });
      toast(t("prefs.name_saved"));
    }),
    nameLocked ? el("p", { class: "hint", text: t("prefs.your_organization_does_not_allow_members") }) : null,
    form({ id: "status-form", class: "setting-row" }, [el("label", { for: "status-text", text: t("common.status") }), status,
      el("button", { type: "submit", text: t("common.save") })], async () => {
      await api("POST", "users/me/status", { status_text: status.value.trim() });
      toast(t("prefs.status_saved"));
    }),
    el("div", { class: "setting-row" }, el("span", { class: "label-like", text: t("common.email") }), myEmail, emailLocked ? null : changeEmail),
    emailLocked ? el("p", { class: "hint", text: t("prefs.your_organization_does_not_allow_address") }) : null,
    emailBox,
    el("h3", { text: t("common.password") }),
    el("p", { class: "hint", text: t("prefs.a_new_password_logs_you_out") }),
    form({ id: "password-form", class: "stack-form narrow-form" }, [username(),
      field(t("prefs.current_password"), oldPassword), field(t("common.new_password"), newPassword, t("prefs.at_least_6_characters")),
      el("button", { type: "submit", class: "primary", text: t("prefs.change_password") })], async () => {
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
      if (ev.person.delivery_email) { myEmail.textContent = ev.person.delivery_email; clear(emailBox); }
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
    clear(box).append(el("p", { class: "hint", text: t("prefs.could_not_load_the_profile_fields", { message: error.message }) }));
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
  clear(box).append(el("fieldset", { class: "prefs" }, el("legend", { text: t("prefs.profile_fields") }), rows));
}

// ---- account and privacy -----------------------------------------------------------------------

const PRIVACY = [
  { key: "presence_enabled", kind: "bool", label: t("prefs.let_others_see_when_i_am") },
  { key: "send_private_typing_notifications", kind: "bool", label: t("prefs.let_recipients_see_when_i_am") },
  { key: "send_stream_typing_notifications", kind: "bool", label: t("prefs.let_others_see_when_i_am_2") },
  { key: "send_read_receipts", kind: "bool", label: t("prefs.let_others_see_when_i_have") },
  { key: "allow_private_data_export", kind: "bool", label: t("prefs.let_administrators_export_my_private_data") },
];

export function account(box) {
  const twoFactor = el("div", { id: "two-factor", class: "two-factor" });
  const sessions = el("ul", { id: "sessions", class: "sessions" });
  const key = el("div", { id: "api-key" });
  const live = liveSettings(box, [settingsGroup(t("prefs.privacy"), PRIVACY)]);
  add(box,
    el("p", { id: "inspect-policy", class: "policy" },
      t("prefs.who_can_read_every_conversation_direct"),
      el("strong", { id: "inspect-who", text: groupSettingText(state.realm.can_inspect_log_group) }),
      t("prefs.each_use_is_recorded_in_the")),
    el("h3", { text: t("prefs.two_factor_authentication") }), twoFactor,
    el("h3", { text: t("common.api_key") }), key,
    el("h3", { text: t("prefs.your_sessions") }), sessions,
    isAdmin() ? el("p", { id: "admin-link" }, el("a", { href: "/admin/", text: t("prefs.organization_audit_log") })) : null,
    el("h3", { text: t("prefs.leave") }),
    el("div", { class: "row-actions" },
      el("button", { type: "button", id: "settings-logout", text: t("common.log_out"), on: { click: logout } }),
      el("button", { type: "button", class: "danger", text: t("prefs.deactivate_your_account"), on: { click: deactivateSelf } })),
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
    el("p", { class: "hint", text: t("prefs.your_api_key_lets_programs_bots") }),
    form({ class: "stack-form narrow-form", id: "api-key-form" }, [username(), field(t("common.password"), password),
      field(t("prefs.two_factor_code"), code, t("prefs.only_if_you_use_two_factor")),
      el("button", { type: "submit", text: t("prefs.show_the_api_key") })], async () => {
      const answer = await api("POST", "fetch_api_key", { username: state.me.delivery_email || state.me.email, password: password.value + code.value.trim() }, { noLogin: true });
      password.value = code.value = "";
      showKey(box, answer.api_key);
    }));
}

function showKey(box, apiKey) {
  const text = el("code", { id: "api-key-value", text: apiKey });
  const regenerate = button(t("prefs.generate_a_new_api_key"), () => ask({
    title: t("prefs.generate_a_new_api_key_2"), text: t("prefs.programs_using_the_current_key_will"), ok: t("common.generate"),
    run: async () => { text.textContent = (await api("POST", "users/me/api_key/regenerate")).api_key; },
  }));
  clear(box).append(el("p", {}, t("prefs.your_api_key"), text),
    el("div", { class: "row-actions" }, zuliprcLink(() => state.me.delivery_email || state.me.email, () => text.textContent), regenerate));
}

// A zuliprc file for the `zulip` package and the terminal client, made in the browser when
// clicked (the address and key as they are then).
export function zuliprcLink(emailOf, keyOf) {
  const link = el("a", { class: "button small", href: "#", download: "zuliprc", text: t("prefs.download_zuliprc") });
  link.addEventListener("click", () => {
    const body = `[api]\nemail=${emailOf()}\nkey=${keyOf()}\nsite=${location.origin}\n`;
    link.href = URL.createObjectURL(new Blob([body], { type: "text/plain" }));
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  });
  return link;
}

async function loadSessions(list) {
  clear(list).append(el("li", { class: "hint", text: t("common.loading") }));
  try {
    const { sessions } = await api("GET", "sessions");
    clear(list).append(...sessions.sort((a, b) => b.current - a.current || b.started - a.started).map((s) => session(s, list)));
  } catch (error) {
    clear(list).append(el("li", { class: "hint", text: t("prefs.could_not_load_sessions", { message: error.message }) }));
  }
}

function session(s, list) {
  // The client string is whatever the browser sent: text only.
  return el("li", { class: "session" },
    el("div", { class: "session-text" },
      el("span", { class: "session-client", text: s.client || t("prefs.unknown_browser") }),
      el("span", { class: "session-when", text: t(s.current ? "prefs.session_this_browser" : "prefs.session_times", { started: longTime(s.started), expires: longTime(s.expires) }) })),
    el("button", { type: "button", text: s.current ? t("common.log_out") : t("prefs.end_session"), attrs: { "aria-label": s.current ? t("prefs.log_out_of_this_browser") : t("prefs.end_the_session_of", { client: s.client || t("prefs.another_browser") }) },
      on: { click: async () => {
        try {
          if (s.current) { await logout(); return; }
          await api("DELETE", `sessions/${encodeURIComponent(s.id)}`);
          loadSessions(list);
        } catch (error) {
          toast(t("prefs.could_not_end_the_session", { message: error.message }));
        }
      } } }));
}

function deactivateSelf() {
  ask({
    title: t("prefs.deactivate_your_account_2"), ok: t("common.deactivate"),
    text: t("prefs.you_will_be_logged_out_everywhere"),
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
  return [["", t("prefs.not_set")], ...list.map((zone) => [zone, zone.replace(/_/g, " ")])];
}

export function preferences(box) {
  const detected = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return liveSettings(box, [
    settingsGroup(t("prefs.display"), [
      { key: "color_scheme", kind: "choice", label: t("prefs.theme"), options: [[1, t("prefs.same_as_the_system")], [3, t("prefs.light")], [2, t("prefs.dark")]] },
      { key: "twenty_four_hour_time", kind: "choice", label: t("prefs.time_format"), options: [[false, t("prefs.12_hour_5_00_pm")], [true, t("prefs.24_hour_17_00")]] },
    ]),
    settingsGroup(t("prefs.writing"), [
      { key: "enter_sends", kind: "choice", label: t("prefs.sending"), options: [[true, t("prefs.enter_sends_shift_enter_adds_a")], [false, t("prefs.ctrl_enter_sends_enter_adds_a")]] },
    ]),
    settingsGroup(t("prefs.time_zone"), [
      { key: "timezone", kind: "choice", label: t("prefs.your_time_zone"), options: zones(), hint: t("prefs.shown_to_others_on_your_card", { detected }) },
    ]),
  ]);
}

// ---- notifications -----------------------------------------------------------------------------

const FOLLOW_POLICY = [[1, t("prefs.topics_i_take_part_in")], [2, t("prefs.topics_i_send_a_message_to")], [3, t("prefs.topics_i_start")], [4, t("common.never")]];
const BATCHING = [[120, t("common.2_minutes")], [300, t("prefs.5_minutes")], [600, t("common.10_minutes")], [1800, t("prefs.30_minutes")], [3600, t("common.1_hour")], [21600, t("prefs.6_hours")], [86400, t("common.1_day")], [604800, t("common.1_week")]];

// Each subscribed channel's own notification settings (the subscription's properties; unset, the
// defaults above apply and are shown), as Zulip's table on this page: a change sets the
// channel's own value; "Default", shown where one differs from the defaults, sets them to the
// defaults, as Zulip's web app does.
const CHANNEL_TRIGGERS = [
  ["desktop_notifications", "enable_stream_desktop_notifications", "prefs.desktop_notifications"],
  ["audible_notifications", "enable_stream_audible_notifications", "prefs.sound"],
  ["email_notifications", "enable_stream_email_notifications", "common.email"],
  ["push_notifications", "enable_stream_push_notifications", "prefs.phone_notifications"],
];

function channelTriggers(box) {
  const setProperty = (sub, property, value) => api("POST", "users/me/subscriptions/properties", { subscription_data: [{ stream_id: sub.stream_id, property, value }] });
  const draw = () => {
    const subs = [...state.subs.values()].filter((s) => !s.is_archived).sort((a, b) => a.name.localeCompare(b.name));
    const cell = (sub, [property, fallback, label]) => {
      const own = sub[property];
      const check = el("input", { type: "checkbox", checked: Boolean(own ?? state.settings[fallback]),
        attrs: { "aria-label": t("prefs.trigger_for_channel", { trigger: t(label), channel: sub.name }) } });
      check.addEventListener("change", () => act(check, "prefs.could_not_save_the_channel_setting", () => setProperty(sub, property, check.checked)));
      return check;
    };
    clear(box).append(table(t("prefs.channels"), t("prefs.no_subscribed_channels"),
      [[t("common.channel"), (sub) => `#${sub.name}`], ...CHANNEL_TRIGGERS.map((trigger) => [t(trigger[2]), (sub) => cell(sub, trigger)])], subs,
      (sub) => (CHANNEL_TRIGGERS.some(([property, fallback]) => (sub[property] ?? state.settings[fallback]) !== state.settings[fallback])
        ? [button(t("prefs.default"), (e) => act(e.currentTarget, "prefs.could_not_save_the_channel_setting",
          () => api("POST", "users/me/subscriptions/properties", { subscription_data: CHANNEL_TRIGGERS.map(([property, fallback]) => ({ stream_id: sub.stream_id, property, value: Boolean(state.settings[fallback]) })) })),
        { attrs: { "aria-label": t("prefs.default_notifications_for", { channel: sub.name }) } })] : []),
      (sub) => sub.stream_id));
  };
  draw();
  return (ev) => { if (ev.type === "subscription" || ev.type === "user_settings") redrawWhenFree(box, draw); };
}

export function notifications(box) {
  const period = state.settings.email_notifications_batching_period_seconds;
  const batching = BATCHING.some(([s]) => s === period) ? BATCHING : [[period, `${period} seconds`], ...BATCHING];
  const perChannel = el("div", { id: "channel-notifications" });
  const channelsLive = channelTriggers(perChannel);
  const live = liveSettings(box, [
    settingsGroup(t("prefs.direct_messages_mentions_and_alerts"), [
      { key: "enable_desktop_notifications", kind: "bool", label: t("prefs.desktop_notifications") },
      { key: "enable_sounds", kind: "bool", label: t("prefs.sound") },
      { key: "enable_offline_email_notifications", kind: "bool", label: t("prefs.email_while_i_am_away") },
      { key: "enable_offline_push_notifications", kind: "bool", label: t("prefs.phone_notifications_while_i_am_away") },
      { key: "enable_online_push_notifications", kind: "bool", label: t("prefs.phone_notifications_while_i_am_online") },
      { key: "pm_content_in_desktop_notifications", kind: "bool", label: t("prefs.show_the_message_in_desktop_notifications") },
    ]),
    settingsGroup(t("prefs.followed_topics"), [
      { key: "enable_followed_topic_desktop_notifications", kind: "bool", label: t("prefs.desktop_notifications") },
      { key: "enable_followed_topic_audible_notifications", kind: "bool", label: t("prefs.sound") },
      { key: "enable_followed_topic_email_notifications", kind: "bool", label: t("common.email") },
      { key: "enable_followed_topic_push_notifications", kind: "bool", label: t("prefs.phone_notifications") },
      { key: "enable_followed_topic_wildcard_mentions_notify", kind: "bool", label: t("prefs.notify_me_of_all_and_topic") },
    ]),
    settingsGroup(t("prefs.channels_each_channel_can_differ"), [
      { key: "enable_stream_desktop_notifications", kind: "bool", label: t("prefs.desktop_notifications") },
      { key: "enable_stream_audible_notifications", kind: "bool", label: t("prefs.sound") },
      { key: "enable_stream_email_notifications", kind: "bool", label: t("common.email") },
      { key: "enable_stream_push_notifications", kind: "bool", label: t("prefs.phone_notifications") },
      { key: "wildcard_mentions_notify", kind: "bool", label: t("prefs.notify_me_of_all_and_topic") },
    ]),
    settingsGroup(t("prefs.topics"), [
      { key: "automatically_follow_topics_policy", kind: "choice", label: t("prefs.follow_automatically"), options: FOLLOW_POLICY },
      { key: "automatically_unmute_topics_in_muted_streams_policy", kind: "choice", label: t("prefs.unmute_automatically_in_muted_channels"), options: FOLLOW_POLICY },
      { key: "automatically_follow_topics_where_mentioned", kind: "bool", label: t("prefs.follow_topics_where_i_am_mentioned") },
    ]),
    settingsGroup(t("common.email"), [
      { key: "email_notifications_batching_period_seconds", kind: "choice", label: t("prefs.wait_before_emailing"), options: batching, hint: t("prefs.messages_in_this_time_come_in") },
      { key: "message_content_in_email_notifications", kind: "bool", label: t("prefs.include_the_messages_in_emails") },
      { key: "realm_name_in_email_notifications_policy", kind: "choice", label: t("prefs.organization_name_in_the_subject"), options: [[1, t("prefs.when_i_belong_to_several")], [2, t("prefs.always")], [3, t("common.never")]] },
      { key: "enable_digest_emails", kind: "bool", label: t("prefs.a_weekly_digest_while_i_am") },
      { key: "enable_login_emails", kind: "bool", label: t("prefs.an_email_when_my_account_is") },
      { key: "enable_marketing_emails", kind: "bool", label: t("prefs.news_about_this_server") },
    ]),
    settingsGroup(t("prefs.other"), [
      { key: "notification_sound", kind: "choice", label: t("prefs.notification_sound"), options: [["zulip", t("prefs.sound_zulip")], ["chime", t("prefs.chime")], ["ding", t("prefs.sound_ding")], ["none", t("common.none")]],
        hint: t("prefs.a_chosen_sound_plays_once") },
      { key: "desktop_icon_count_display", kind: "choice", label: t("prefs.unread_count_on_the_app_icon"), options: [[1, t("prefs.all_unread_messages")], [2, t("prefs.direct_messages_mentions_and_followed_topics")], [3, t("prefs.direct_messages_and_mentions")], [4, t("common.none")]] },
    ]),
  ]);
  box.append(el("h3", { text: t("prefs.each_channel") }), el("p", { class: "hint", text: t("prefs.a_channel_follows_the_defaults_above") }), perChannel);
  return (ev) => { live(ev); channelsLive(ev); };
}

// ---- alert words and muted users --------------------------------------------------------------

export function alertWords(box) {
  const list = el("div", { id: "alert-word-list" });
  const word = el("input", { id: "alert-word", maxLength: 100, required: true });
  const draw = () => clear(list).append(table(t("common.alert_words"), t("prefs.no_alert_words"), [[t("prefs.word"), (w) => w]], state.alertWords, (w) => [
    button(t("common.remove"), (e) => act(e.currentTarget, "prefs.could_not_remove_the_word", () => api("DELETE", "users/me/alert_words", { alert_words: [w] })),
      { attrs: { "aria-label": t("prefs.remove_2", { word: w }) } })], (w) => w));
  box.append(
    el("p", { class: "hint", text: t("prefs.a_message_containing_one_of_these") }),
    form({ class: "setting-row", id: "alert-word-form" }, [el("label", { for: "alert-word", text: t("prefs.new_word") }), word, el("button", { type: "submit", text: t("common.add") })], async () => {
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
    clear(list).append(table(t("common.muted_users"), t("prefs.no_muted_users"), [[t("common.name"), ([id]) => userName(id)], [t("prefs.since"), ([, at]) => longTime(at)]], muted,
      ([id]) => [button(t("common.unmute"), (e) => act(e.currentTarget, "prefs.could_not_unmute", () => api("DELETE", `users/me/muted_users/${id}`)), { attrs: { "aria-label": t("prefs.unmute_2", { person: userName(id) }) } })],
      ([id]) => id));
  };
  box.append(el("p", { class: "hint", text: t("prefs.messages_from_people_you_mute_arrive") }), list);
  draw();
  return (ev) => { if (ev.type === "muted_users" || ev.type === "realm_user") draw(); };
}

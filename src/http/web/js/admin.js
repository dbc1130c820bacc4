// The organization's settings pages: its profile, settings and permissions (PATCH /realm, kept
// live by `realm` events), custom emoji, linkifiers, custom profile fields and data exports.
// The server decides who may change what; these pages show the controls to those it allows
// and say why a control is locked.

import { api } from "./api.js";
import { el, clear, toast } from "./dom.js";
import { state, isAdmin, isOwner, userName } from "./state.js";
import { longTime } from "./time.js";
import { allows } from "./perms.js";
import { fieldset, liveFieldsets, form, field, table, button, act, groupControl, update, redrawWhenFree, picturePicker } from "./forms.js";
import { ask } from "./confirm.js";


// ---- the organization's own settings -----------------------------------------------------------

// A time limit as the API takes it: seconds, or "unlimited" (null or 0 in /register).
const LIMITS = [["unlimited", "Any time"], [120, "2 minutes"], [600, "10 minutes"], [3600, "1 hour"], [86400, "1 day"], [604800, "1 week"]];

function realmValue(key) {
  const value = state.realm[key];
  if (key.endsWith("_limit_seconds")) return value ? value : "unlimited";
  if (key === "message_retention_days") return value === -1 || value === null || value === undefined ? null : value;
  return value;
}

function saveRealm(key, value) {
  if (key === "message_retention_days") return api("PATCH", "realm", { [key]: value === null ? "unlimited" : value });
  return api("PATCH", "realm", { [key]: value });
}

// A fieldset of organization settings, kept live by `realm` events (liveRealm).
const realmGroup = (title, specs) => fieldset(title, specs, realmValue, saveRealm);
const liveRealm = (box, sets) => liveFieldsets(box, sets, "realm");

// (A channel this page does not know, as a private one the administrator is not in, is added to
// the list by its number: forms.show.)
const channelChoices = () => [[-1, "None"], ...[...state.streams.values()]
  .filter((s) => !s.is_archived).sort((a, b) => a.name.localeCompare(b.name)).map((s) => [s.stream_id, `#${s.name}`])];

export function organizationProfile(box) {
  const icon = el("img", { class: "settings-avatar", src: state.realm.icon_url, alt: "", width: 96, height: 96 });
  const live = liveRealm(box, [realmGroup("Profile", [
    { key: "name", kind: "text", label: "Organization name", maxLength: 40 },
    { key: "description", kind: "long", label: "Description", maxLength: 1000, hint: "Shown on the login page. Markdown." },
  ])]);
  box.append(el("div", { class: "avatar-row" }, icon, el("div", { class: "avatar-actions" },
    picturePicker("realm-icon-file", "Upload an icon", "realm/icon", "icon"))));
  return (ev) => {
    live(ev);
    if (ev.type === "realm" && ev.property === "icon") icon.src = ev.data.icon_url;
  };
}

export function organizationSettings(box) {
  const providers = Object.values(state.realm.available_video_chat_providers || {}).map((p) => [p.id, p.name]);
  const owner = isOwner();
  const weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"].map((d, i) => [i, d]);
  const limit = (key, label) => ({ key, label, kind: "choice", options: [...LIMITS], unlisted: (seconds) => `${seconds} seconds` });
  return liveRealm(box, [
    realmGroup("Messages", [
      { key: "allow_message_editing", kind: "bool", label: "Members may edit their messages" },
      limit("message_content_edit_limit_seconds", "Time to edit a message"),
      limit("message_content_delete_limit_seconds", "Time to delete one's message"),
      limit("move_messages_within_stream_limit_seconds", "Time to move messages between topics"),
      limit("move_messages_between_streams_limit_seconds", "Time to move messages between channels"),
      { key: "message_edit_history_visibility_policy", kind: "choice", label: "Edit history shown", options: [["all", "Edits and moves"], ["moves", "Moves only"], ["none", "None"]] },
      { key: "topics_policy", kind: "choice", label: "Messages without a topic", options: [["allow_empty_topic", "Allowed"], ["disable_empty_topic", "Not allowed"]] },
      { key: "enable_read_receipts", kind: "bool", label: "Read receipts" },
      { key: "message_retention_days", kind: "number", label: "Delete messages older than (days)", min: 1, disabled: !owner, hint: owner ? "Empty keeps messages for ever." : "Only owners change this. Empty keeps messages for ever." },
    ]),
    realmGroup("Joining", [
      { key: "invite_required", kind: "bool", label: "Invitations are required to join" },
      { key: "welcome_message_custom_text", kind: "long", label: "Welcome Bot's message to new members", maxLength: 8000 },
      { key: "signup_announcements_stream_id", kind: "choice", label: "Announce new members in", options: channelChoices() },
      { key: "new_stream_announcements_stream_id", kind: "choice", label: "Announce new channels in", options: channelChoices() },
    ]),
    realmGroup("People", [
      { key: "require_unique_names", kind: "bool", label: "Names must be unique" },
      { key: "name_changes_disabled", kind: "bool", label: "Members may not change their names" },
      { key: "email_address_visibility", kind: "choice", label: "Who can see email addresses", options: [[1, "Everyone"], [2, "Members"], [5, "Moderators, administrators and owners"], [3, "Administrators and owners"], [4, "Nobody"]] },
      { key: "enable_guest_user_indicator", kind: "bool", label: "Mark guests as guests" },
      { key: "enable_guest_user_dm_warning", kind: "bool", label: "Warn when a direct message includes guests" },
      { key: "moderation_request_channel_id", kind: "choice", label: "Message reports go to (a private channel)", options: channelChoices() },
    ]),
    realmGroup("Email and calls", [
      { key: "digest_emails_enabled", kind: "bool", label: "Weekly digests to members who were away" },
      { key: "digest_weekday", kind: "choice", label: "Digest day", options: weekdays },
      { key: "message_content_allowed_in_email_notifications", kind: "bool", label: "Messages may be shown in emails" },
      { key: "video_chat_provider", kind: "choice", label: "Video calls", options: providers.length ? providers : [[0, "None"]] },
    ]),
  ]);
}

// Zulip's words for the organization's group permissions; a setting not named here is shown by
// its key.
const PERMISSIONS = {
  can_access_all_users_group: "Who can see everyone in the organization",
  can_add_custom_emoji_group: "Who can add custom emoji",
  can_add_subscribers_group: "Who can subscribe others to channels",
  can_create_bots_group: "Who can create any bot",
  can_create_write_only_bots_group: "Who can create bots that only send messages",
  can_create_groups: "Who can create user groups",
  can_create_public_channel_group: "Who can create public channels",
  can_create_private_channel_group: "Who can create private channels",
  can_create_web_public_channel_group: "Who can create web-public channels",
  can_delete_any_message_group: "Who can delete any message",
  can_delete_own_message_group: "Who can delete their own messages",
  can_invite_users_group: "Who can send invitations",
  create_multiuse_invite_group: "Who can create invitation links",
  can_manage_all_groups: "Who can manage every user group",
  can_mention_many_users_group: "Who can notify many people with @all",
  can_move_messages_between_channels_group: "Who can move messages between channels",
  can_move_messages_between_topics_group: "Who can move messages between topics",
  can_resolve_topics_group: "Who can resolve topics",
  can_set_delete_message_policy_group: "Who can set channels' deletion permissions",
  can_set_topics_policy_group: "Who can set channels' topic rules",
  can_summarize_topics_group: "Who can summarize topics",
  direct_message_initiator_group: "Who can start direct message conversations",
  direct_message_permission_group: "Who can take part in direct messages",
  can_inspect_log_group: "Who can read every conversation through the log inspector",
  can_manage_billing_group: "Who can manage the organization's plan",
};
const OWNERS_ONLY = new Set(["can_invite_users_group", "create_multiuse_invite_group", "can_create_groups", "can_manage_all_groups", "can_inspect_log_group"]);
const words = (key) => key.replace(/_groups?$/, "").replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());

export function organizationPermissions(box) {
  // Every group setting the server has for the organization.
  const keys = Object.keys(state.permissionSettings.realm || {}).filter((k) => k in state.realm);
  keys.sort((a, b) => (PERMISSIONS[a] || words(a)).localeCompare(PERMISSIONS[b] || words(b)));
  const save = (key, value) => api("PATCH", "realm", { [key]: { new: value } });
  let rows = [];
  const draw = () => {
    rows = keys.map((key) => {
      const locked = OWNERS_ONLY.has(key) && !isOwner();
      return groupControl("realm", key, PERMISSIONS[key] || words(key), state.realm[key], save, { disabled: locked, hint: locked ? "Only owners change this." : undefined });
    });
    clear(box).append(el("fieldset", { class: "prefs" }, el("legend", { text: "Permissions" }), rows));
  };
  draw();
  return (ev) => {
    // The choices name the groups: a new, renamed or deactivated group draws them again.
    if (ev.type === "user_group" && (ev.op === "add" || ev.op === "remove" || (ev.op === "update" && ("name" in ev.data || "deactivated" in ev.data)))) redrawWhenFree(box, draw);
    if (ev.type === "realm" && ev.data) rows = rows.map((row) => (row.spec.key in ev.data ? update(row, ev.data[row.spec.key]) : row));
  };
}

// ---- custom emoji ------------------------------------------------------------------------------

export function emoji(box) {
  const list = el("div", { id: "emoji-list" });
  const name = el("input", { id: "emoji-name", required: true, maxLength: 60, pattern: "[a-z0-9_\\-]+", attrs: { autocapitalize: "none" } });
  const file = el("input", { id: "emoji-file", type: "file", required: true, accept: "image/png,image/jpeg,image/gif,image/webp" });
  const draw = () => {
    const all = Object.values(state.realmEmoji).filter((e) => !e.deactivated).sort((a, b) => a.name.localeCompare(b.name));
    clear(list).append(table("Custom emoji", [
      ["Emoji", (e) => el("img", { class: "emoji", src: e.source_url, alt: `:${e.name}:`, width: 24, height: 24 })],
      ["Name", (e) => e.name], ["Added by", (e) => (e.author_id ? userName(e.author_id) : "")],
    ], all, (e) => (isAdmin() || e.author_id === state.me.user_id ? [button("Delete", () => ask({
      title: `Delete :${e.name}:?`, text: "Messages that used it will show its name instead.", ok: "Delete",
      run: () => api("DELETE", `realm/emoji/${encodeURIComponent(e.name)}`),
    }), { attrs: { "aria-label": `Delete :${e.name}:` } })] : []), (e) => e.name));
  };
  // The form follows the organization's `can_add_custom_emoji_group` live.
  const adding = el("div");
  const drawForm = () => clear(adding).append(allows(state.realm.can_add_custom_emoji_group) || isAdmin()
    ? form({ id: "emoji-form", class: "stack-form narrow-form" }, [
      field("Name", name, "Lower-case letters, digits, - and _."), field("Image", file, "PNG, GIF, JPEG or WebP, at most 5 MiB; shrunk to 64 × 64."),
      el("button", { type: "submit", class: "primary", text: "Add emoji" })], async () => {
      const data = new FormData();
      data.append("file", file.files[0]);
      await api("POST", `realm/emoji/${encodeURIComponent(name.value.trim())}`, data);
      name.value = ""; file.value = "";
    })
    : el("p", { class: "hint", text: "Your organization does not let you add emoji." }));
  box.append(adding, list);
  drawForm();
  draw();
  return (ev) => {
    if (ev.type === "realm_emoji") draw();
    if (ev.type === "realm" && ev.data && "can_add_custom_emoji_group" in ev.data) drawForm();
  };
}

// ---- linkifiers --------------------------------------------------------------------------------

export async function linkifiers(box) {
  const list = el("div", { id: "linkifier-list" });
  const pattern = el("input", { required: true, placeholder: "#(?P<id>[0-9]+)" });
  const template = el("input", { required: true, placeholder: "https://github.com/org/repo/issues/{id}" });
  const draw = (items) => clear(list).append(table("Linkifiers", [["Pattern", (l) => el("code", { text: l.pattern })], ["Link", (l) => el("code", { text: l.url_template })]], items,
    (l) => [button("Delete", (e) => act(e.currentTarget, "delete the linkifier", async () => { await api("DELETE", `realm/filters/${l.id}`); load(); }), { attrs: { "aria-label": `Delete the linkifier ${l.pattern}` } })], (l) => l.id));
  const load = async () => {
    try {
      draw((await api("GET", "realm/linkifiers")).linkifiers);
    } catch (error) {
      clear(list).append(el("p", { class: "hint", text: `Could not load the linkifiers: ${error.message}` }));
    }
  };
  box.append(
    el("p", { class: "hint", text: "Text matching a pattern becomes a link in new messages: a regular expression with named groups, and a URL template using them." }),
    form({ id: "linkifier-form", class: "stack-form narrow-form" }, [field("Pattern", pattern), field("URL template", template),
      el("button", { type: "submit", class: "primary", text: "Add linkifier" })], async () => {
      await api("POST", "realm/filters", { pattern: pattern.value.trim(), url_template: template.value.trim() });
      pattern.value = template.value = "";
      await load();
    }),
    list);
  await load();
  return (ev) => { if (ev.type === "realm_linkifiers") draw(ev.realm_linkifiers); };
}

// ---- custom profile fields ---------------------------------------------------------------------

const FIELD_TYPES = [[1, "Short text"], [2, "Long text"], [3, "List of options"], [4, "Date"], [5, "Link"], [6, "People"], [7, "External account"], [8, "Pronouns"]];

export async function profileFields(box) {
  const list = el("div", { id: "profile-field-list" });
  const name = el("input", { required: true, maxLength: 40 });
  const hint = el("input", { maxLength: 80 });
  const type = el("select", {}, FIELD_TYPES.filter(([t]) => t !== 7).map(([t, label]) => el("option", { value: String(t), text: label })));
  const choices = el("textarea", { rows: 3 });
  const choicesRow = field("Options, one per line", choices);
  choicesRow.hidden = true;
  type.addEventListener("change", () => { choicesRow.hidden = type.value !== "3"; });
  const draw = (fields) => clear(list).append(table("Custom profile fields", [
    ["Name", (f) => f.name], ["Type", (f) => FIELD_TYPES.find(([t]) => t === f.type)?.[1] || String(f.type)], ["Hint", (f) => f.hint],
  ], fields, (f) => [button("Delete", () => ask({
    title: `Delete the field “${f.name}”?`, text: "Everyone's values for it are deleted too.", ok: "Delete",
    run: () => api("DELETE", `realm/profile_fields/${f.id}`),
  }), { attrs: { "aria-label": `Delete the field ${f.name}` } })], (f) => f.id));
  box.append(
    form({ id: "profile-field-form", class: "stack-form narrow-form" }, [field("Name", name), field("Type", type), field("Hint", hint), choicesRow,
      el("button", { type: "submit", class: "primary", text: "Add field" })], async () => {
      const params = { name: name.value.trim(), hint: hint.value.trim(), field_type: Number(type.value) };
      if (type.value === "3") {
        const options = choices.value.split("\n").map((t) => t.trim()).filter(Boolean);
        params.field_data = Object.fromEntries(options.map((text, i) => [String(i), { text, order: String(i + 1) }]));
      }
      await api("POST", "realm/profile_fields", params);
      name.value = hint.value = choices.value = "";
    }),
    list);
  try {
    draw((await api("GET", "realm/profile_fields")).custom_fields);
  } catch (error) {
    list.append(el("p", { class: "hint", text: `Could not load the fields: ${error.message}` }));
  }
  return (ev) => { if (ev.type === "custom_profile_fields") draw(ev.fields); };
}

// ---- data exports ------------------------------------------------------------------------------

export async function exports(box) {
  const list = el("div", { id: "export-list" });
  const kind = el("select", { id: "export-kind" }, el("option", { value: "1", text: "Public data" }), el("option", { value: "2", text: "Public data and the private data of those who allowed it" }));
  const status = (x) => (x.deleted_timestamp ? "Deleted" : x.failed_timestamp ? "Failed" : x.pending ? "Being made…" : el("a", { href: x.export_url, text: "Download" }));
  const draw = (items) => clear(list).append(table("Data exports", [
    ["Made", (x) => longTime(x.export_time)], ["By", (x) => (x.acting_user_id ? userName(x.acting_user_id) : "")], ["Kind", (x) => (x.export_type === 2 ? "With private data" : "Public data")], ["File", status],
  ], [...items].sort((a, b) => b.export_time - a.export_time), (x) => (x.deleted_timestamp || x.pending ? [] : [button("Delete", () => ask({
    title: "Delete this export?", text: "Its file is deleted from the server.", ok: "Delete", run: () => api("DELETE", `export/realm/${x.id}`),
  }), { attrs: { "aria-label": `Delete the export of ${longTime(x.export_time)}` } })]), (x) => x.id));
  box.append(
    el("p", { class: "hint", text: "An export is a file in Zulip's export format: it can be imported into Chronicle or Zulip." }),
    form({ id: "export-form", class: "setting-row" }, [el("label", { for: "export-kind", text: "Export" }), kind,
      el("button", { type: "submit", class: "primary", text: "Start an export" })], async () => {
      await api("POST", "export/realm", { export_type: Number(kind.value) });
      toast("The export has started; it is listed below when ready.");
    }),
    list);
  try {
    draw((await api("GET", "export/realm")).exports);
  } catch (error) {
    list.append(el("p", { class: "hint", text: `Could not load the exports: ${error.message}` }));
  }
  return (ev) => { if (ev.type === "realm_export") draw(ev.exports); };
}

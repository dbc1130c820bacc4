// The organization's settings pages: its profile, settings and permissions (PATCH /realm, kept
// live by `realm` events), custom emoji, linkifiers, custom profile fields and data exports.
// The server decides who may change what; these pages show the controls to those it allows
// and say why a control is locked.

import { api } from "./api.js";
import { el, clear, toast } from "./dom.js";
import { state, isAdmin, isOwner, userName } from "./state.js";
import { longTime } from "./time.js";
import { allows } from "./perms.js";
import { fieldset, liveFieldsets, form, field, table, button, act, moveButtons, editor, groupControl, update, redrawWhenFree, picturePicker } from "./forms.js";
import { ask } from "./confirm.js";
import { t } from "./texts.js";


// ---- the organization's own settings -----------------------------------------------------------

// A time limit as the API takes it: seconds, or "unlimited" (null or 0 in /register).
const LIMITS = [["unlimited", t("admin.any_time")], [120, t("common.2_minutes")], [600, t("common.10_minutes")], [3600, t("common.1_hour")], [86400, t("common.1_day")], [604800, t("common.1_week")]];

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
const channelChoices = () => [[-1, t("common.none")], ...[...state.streams.values()]
  .filter((s) => !s.is_archived).sort((a, b) => a.name.localeCompare(b.name)).map((s) => [s.stream_id, `#${s.name}`])];

export function organizationProfile(box) {
  const icon = el("img", { class: "settings-avatar", src: state.realm.icon_url, alt: "", width: 96, height: 96 });
  const live = liveRealm(box, [realmGroup(t("common.profile"), [
    { key: "name", kind: "text", label: t("admin.organization_name"), maxLength: 40 },
    { key: "description", kind: "long", label: t("common.description"), maxLength: 1000, hint: t("admin.shown_on_the_login_page_markdown") },
  ])]);
  box.append(el("div", { class: "avatar-row" }, icon, el("div", { class: "avatar-actions" },
    picturePicker("realm-icon-file", t("admin.upload_an_icon"), "realm/icon", ["admin.icon_saved", "admin.could_not_save_the_icon"]))));
  return (ev) => {
    live(ev);
    if (ev.type === "realm" && ev.property === "icon") icon.src = ev.data.icon_url;
  };
}

export function organizationSettings(box) {
  const providers = Object.values(state.realm.available_video_chat_providers || {}).map((p) => [p.id, p.name]);
  const owner = isOwner();
  const weekdays = [t("common.monday"), t("common.tuesday"), t("common.wednesday"), t("common.thursday"), t("common.friday"), t("common.saturday"), t("common.sunday")].map((d, i) => [i, d]);
  const limit = (key, label) => ({ key, label, kind: "choice", options: [...LIMITS], unlisted: (seconds) => `${seconds} seconds` });
  const live = liveRealm(box, [
    realmGroup(t("common.messages"), [
      { key: "allow_message_editing", kind: "bool", label: t("admin.members_may_edit_their_messages") },
      limit("message_content_edit_limit_seconds", t("admin.time_to_edit_a_message")),
      limit("message_content_delete_limit_seconds", t("admin.time_to_delete_one_s_message")),
      limit("move_messages_within_stream_limit_seconds", t("admin.time_to_move_messages_between_topics")),
      limit("move_messages_between_streams_limit_seconds", t("admin.time_to_move_messages_between_channels")),
      { key: "message_edit_history_visibility_policy", kind: "choice", label: t("admin.edit_history_shown"), options: [["all", t("admin.edits_and_moves")], ["moves", t("admin.moves_only")], ["none", t("common.none")]] },
      { key: "topics_policy", kind: "choice", label: t("admin.messages_without_a_topic"), options: [["allow_empty_topic", t("admin.allowed")], ["disable_empty_topic", t("admin.not_allowed")]] },
      { key: "enable_read_receipts", kind: "bool", label: t("common.read_receipts") },
      { key: "message_retention_days", kind: "number", label: t("admin.delete_messages_older_than_days"), min: 1, disabled: !owner, hint: owner ? t("admin.empty_keeps_messages_for_ever") : t("admin.only_owners_change_this_empty_keeps") },
    ]),
    realmGroup(t("admin.joining"), [
      { key: "invite_required", kind: "bool", label: t("admin.invitations_are_required_to_join") },
      { key: "emails_restricted_to_domains", kind: "bool", label: t("admin.only_addresses_in_the_allowed_domains"), disabled: !owner, hint: owner ? t("admin.the_domains_are_listed_below") : t("admin.only_owners_change_this") },
      { key: "welcome_message_custom_text", kind: "long", label: t("admin.welcome_bot_s_message_to_new"), maxLength: 8000 },
      { key: "signup_announcements_stream_id", kind: "choice", label: t("admin.announce_new_members_in"), options: channelChoices() },
      { key: "new_stream_announcements_stream_id", kind: "choice", label: t("admin.announce_new_channels_in"), options: channelChoices() },
    ]),
    realmGroup(t("common.people"), [
      { key: "require_unique_names", kind: "bool", label: t("admin.names_must_be_unique") },
      { key: "name_changes_disabled", kind: "bool", label: t("admin.members_may_not_change_their_names") },
      { key: "email_changes_disabled", kind: "bool", label: t("admin.members_may_not_change_their_addresses") },
      { key: "email_address_visibility", kind: "choice", label: t("admin.who_can_see_email_addresses"), options: [[1, t("admin.everyone")], [2, t("common.members")], [5, t("common.moderators_administrators_and_owners")], [3, t("common.administrators_and_owners")], [4, t("common.nobody")]] },
      { key: "enable_guest_user_indicator", kind: "bool", label: t("admin.mark_guests_as_guests") },
      { key: "enable_guest_user_dm_warning", kind: "bool", label: t("admin.warn_when_a_direct_message_includes") },
      { key: "moderation_request_channel_id", kind: "choice", label: t("admin.message_reports_go_to_a_private"), options: channelChoices() },
    ]),
    realmGroup(t("admin.email_and_calls"), [
      { key: "digest_emails_enabled", kind: "bool", label: t("admin.weekly_digests_to_members_who_were") },
      { key: "digest_weekday", kind: "choice", label: t("admin.digest_day"), options: weekdays },
      { key: "message_content_allowed_in_email_notifications", kind: "bool", label: t("admin.messages_may_be_shown_in_emails") },
      { key: "video_chat_provider", kind: "choice", label: t("admin.video_calls"), options: providers.length ? providers : [[0, t("common.none")]] },
    ]),
  ]);
  const domains = allowedDomains(box, owner);
  return (ev) => { live(ev); domains(ev); };
}

// The organization's allowed email domains (`/realm/domains`; owners change them, as in Zulip):
// while `emails_restricted_to_domains` is on, only their addresses (and their subdomains', where
// allowed) may join. Kept live by `realm_domains` events.
function allowedDomains(box, owner) {
  const list = el("div", { id: "realm-domain-list" });
  let domains = [];
  const draw = () => {
    const subdomains = (d) => {
      const check = el("input", { type: "checkbox", checked: d.allow_subdomains, disabled: !owner, attrs: { "aria-label": t("admin.allow_subdomains_of", { domain: d.domain }) } });
      // The `realm_domains` event draws the list again; a refusal puts the box back.
      check.addEventListener("change", async () => {
        check.disabled = true;
        try {
          await api("PATCH", `realm/domains/${encodeURIComponent(d.domain)}`, { allow_subdomains: check.checked });
        } catch (error) {
          check.checked = !check.checked;
          toast(t("admin.could_not_change_the_domain", { message: error.message }));
        } finally {
          check.disabled = false;
        }
      });
      return check;
    };
    clear(list).append(table(t("admin.allowed_domains"), t("admin.no_allowed_domains"), [[t("admin.domain"), (d) => d.domain], [t("admin.subdomains_too"), subdomains]],
      [...domains].sort((a, b) => a.domain.localeCompare(b.domain)),
      owner ? (d) => [button(t("common.remove"), (e) => act(e.currentTarget, "admin.could_not_remove_the_domain", () => api("DELETE", `realm/domains/${encodeURIComponent(d.domain)}`)),
        { attrs: { "aria-label": t("admin.remove_the_domain", { domain: d.domain }) } })] : null, (d) => d.domain));
  };
  const domain = el("input", { id: "realm-domain-name", required: true, maxLength: 255, placeholder: t("admin.domain_example"), attrs: { autocapitalize: "none" } });
  const allow = el("input", { type: "checkbox", id: "realm-domain-subdomains" });
  box.append(el("fieldset", { class: "prefs" }, el("legend", { text: t("admin.allowed_domains") }),
    el("p", { class: "hint", text: t("admin.addresses_in_these_domains_may_join") }),
    list,
    owner ? form({ id: "realm-domain-form", class: "setting-row" }, [el("label", { for: "realm-domain-name", text: t("admin.domain") }), domain,
      el("label", { class: "check", for: "realm-domain-subdomains" }, allow, ` ${t("admin.subdomains_too")}`),
      el("button", { type: "submit", class: "primary", text: t("common.add") })], async () => {
      await api("POST", "realm/domains", { domain: domain.value.trim(), allow_subdomains: allow.checked });
      domain.value = ""; allow.checked = false;
    }) : null));
  api("GET", "realm/domains").then((answer) => { domains = answer.domains; draw(); },
    (error) => clear(list).append(el("p", { class: "hint", text: t("admin.could_not_load_the_domains", { message: error.message }) })));
  return (ev) => {
    if (ev.type !== "realm_domains") return;
    if (ev.op === "remove") domains = domains.filter((d) => d.domain !== ev.domain);
    else domains = [...domains.filter((d) => d.domain !== ev.realm_domain.domain), ev.realm_domain];
    draw();
  };
}

// Zulip's words for the organization's group permissions; a setting not named here is shown by
// its key.
const PERMISSIONS = {
  can_access_all_users_group: t("admin.who_can_see_everyone_in_the"),
  can_add_custom_emoji_group: t("admin.who_can_add_custom_emoji"),
  can_add_subscribers_group: t("admin.who_can_subscribe_others_to_channels"),
  can_create_bots_group: t("admin.who_can_create_any_bot"),
  can_create_write_only_bots_group: t("admin.who_can_create_bots_that_only"),
  can_create_groups: t("admin.who_can_create_user_groups"),
  can_create_public_channel_group: t("admin.who_can_create_public_channels"),
  can_create_private_channel_group: t("admin.who_can_create_private_channels"),
  can_create_web_public_channel_group: t("admin.who_can_create_web_public_channels"),
  can_delete_any_message_group: t("common.who_can_delete_any_message"),
  can_delete_own_message_group: t("common.who_can_delete_their_own_messages"),
  can_invite_users_group: t("admin.who_can_send_invitations"),
  create_multiuse_invite_group: t("admin.who_can_create_invitation_links"),
  can_manage_all_groups: t("admin.who_can_manage_every_user_group"),
  can_mention_many_users_group: t("admin.who_can_notify_many_people_with"),
  can_move_messages_between_channels_group: t("admin.who_can_move_messages_between_channels"),
  can_move_messages_between_topics_group: t("admin.who_can_move_messages_between_topics"),
  can_resolve_topics_group: t("common.who_can_resolve_topics"),
  can_set_delete_message_policy_group: t("admin.who_can_set_channels_deletion_permissions"),
  can_set_topics_policy_group: t("admin.who_can_set_channels_topic_rules"),
  can_summarize_topics_group: t("admin.who_can_summarize_topics"),
  direct_message_initiator_group: t("admin.who_can_start_direct_message_conversations"),
  direct_message_permission_group: t("admin.who_can_take_part_in_direct"),
  can_inspect_log_group: t("admin.who_can_read_every_conversation_through"),
  can_manage_billing_group: t("admin.who_can_manage_the_organization_s"),
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
      return groupControl("realm", key, PERMISSIONS[key] || words(key), state.realm[key], save, { disabled: locked, hint: locked ? t("admin.only_owners_change_this") : undefined });
    });
    clear(box).append(el("fieldset", { class: "prefs" }, el("legend", { text: t("common.permissions") }), rows));
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
    clear(list).append(table(t("common.custom_emoji"), t("admin.no_custom_emoji"), [
      [t("common.emoji"), (e) => el("img", { class: "emoji", src: e.source_url, alt: `:${e.name}:`, width: 24, height: 24 })],
      [t("common.name"), (e) => e.name], [t("admin.added_by"), (e) => (e.author_id ? userName(e.author_id) : "")],
    ], all, (e) => (isAdmin() || e.author_id === state.me.user_id ? [button(t("common.delete"), () => ask({
      title: t("admin.delete_2", { name: e.name }), text: t("admin.messages_that_used_it_will_show"), ok: t("common.delete"),
      run: () => api("DELETE", `realm/emoji/${encodeURIComponent(e.name)}`),
    }), { attrs: { "aria-label": t("admin.delete_3", { name: e.name }) } })] : []), (e) => e.name));
  };
  // The form follows the organization's `can_add_custom_emoji_group` live.
  const adding = el("div");
  const drawForm = () => clear(adding).append(allows(state.realm.can_add_custom_emoji_group) || isAdmin()
    ? form({ id: "emoji-form", class: "stack-form narrow-form" }, [
      field(t("common.name"), name, t("admin.lower_case_letters_digits_and")), field(t("common.image"), file, t("admin.png_gif_jpeg_or_webp_at")),
      el("button", { type: "submit", class: "primary", text: t("admin.add_emoji") })], async () => {
      const data = new FormData();
      data.append("file", file.files[0]);
      await api("POST", `realm/emoji/${encodeURIComponent(name.value.trim())}`, data);
      name.value = ""; file.value = "";
    })
    : el("p", { class: "hint", text: t("admin.your_organization_does_not_let_you") }));
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
  const editing = el("div");
  let items = [];
  let open = null; // the id of the linkifier being edited
  const pattern = el("input", { required: true, placeholder: "#(?P<id>[0-9]+)" });
  const template = el("input", { required: true, placeholder: "https://github.com/org/repo/issues/{id}" });
  const close = () => { open = null; clear(editing); };
  const edit = (l) => {
    open = l.id;
    const newPattern = el("input", { id: "linkifier-edit-pattern", required: true, value: l.pattern });
    const newTemplate = el("input", { id: "linkifier-edit-template", required: true, value: l.url_template });
    clear(editing).append(editor("linkifier-editor", t("admin.edit_the_linkifier", { pattern: l.pattern }),
      [field(t("admin.pattern"), newPattern), field(t("admin.url_template"), newTemplate)],
      () => api("PATCH", `realm/filters/${l.id}`, { pattern: newPattern.value.trim(), url_template: newTemplate.value.trim() }), close));
    newPattern.focus();
  };
  // Linkifiers apply in this order: the first whose pattern matches makes the link.
  const draw = (next) => {
    items = next;
    const ids = items.map((l) => l.id);
    clear(list).append(table(t("common.linkifiers"), t("admin.no_linkifiers"), [[t("admin.pattern"), (l) => el("code", { text: l.pattern })], [t("admin.link"), (l) => el("code", { text: l.url_template })]], items,
      (l) => [
        ...moveButtons(ids, l.id, l.pattern, "admin.could_not_reorder_the_linkifiers", (order) => api("PATCH", "realm/linkifiers", { ordered_linkifier_ids: order })),
        button(t("common.edit"), () => edit(l), { attrs: { "aria-label": t("admin.edit_the_linkifier", { pattern: l.pattern }) } }),
        button(t("common.delete"), (e) => act(e.currentTarget, "admin.could_not_delete_the_linkifier", () => api("DELETE", `realm/filters/${l.id}`)), { attrs: { "aria-label": t("admin.delete_the_linkifier_2", { pattern: l.pattern }) } })],
      (l) => l.id));
    if (open !== null && !ids.includes(open)) close();
  };
  box.append(
    el("p", { class: "hint", text: t("admin.text_matching_a_pattern_becomes_a") }),
    form({ id: "linkifier-form", class: "stack-form narrow-form" }, [field(t("admin.pattern"), pattern), field(t("admin.url_template"), template),
      el("button", { type: "submit", class: "primary", text: t("admin.add_linkifier") })], async () => {
      await api("POST", "realm/filters", { pattern: pattern.value.trim(), url_template: template.value.trim() });
      pattern.value = template.value = "";
    }),
    list, editing);
  try {
    draw((await api("GET", "realm/linkifiers")).linkifiers);
  } catch (error) {
    clear(list).append(el("p", { class: "hint", text: t("admin.could_not_load_the_linkifiers", { message: error.message }) }));
  }
  return (ev) => { if (ev.type === "realm_linkifiers") draw(ev.realm_linkifiers); };
}

// ---- custom profile fields ---------------------------------------------------------------------

const FIELD_TYPES = [[1, t("admin.short_text")], [2, t("admin.long_text")], [3, t("admin.list_of_options")], [4, t("admin.date")], [5, t("admin.link")], [6, t("common.people")], [7, t("admin.external_account")], [8, t("admin.pronouns")]];

// A list field's options as Zulip's `field_data` takes them, from one option a line. An option
// kept from `before` (its text unchanged) keeps its key, so the people who chose it keep it.
function optionsData(lines, before = {}) {
  const keys = Object.fromEntries(Object.entries(before).map(([key, option]) => [option.text, key]));
  let next = Math.max(-1, ...Object.keys(before).map(Number).filter(Number.isFinite)) + 1;
  const texts = [...new Set(lines.split("\n").map((line) => line.trim()).filter(Boolean))];
  return Object.fromEntries(texts.map((text, i) => [keys[text] ?? String(next++), { text, order: String(i + 1) }]));
}
const optionsText = (data) => Object.values(data).sort((a, b) => Number(a.order) - Number(b.order)).map((o) => o.text).join("\n");
const parseData = (f) => { try { return JSON.parse(f.field_data || "{}") || {}; } catch { return {}; } };

export async function profileFields(box) {
  const list = el("div", { id: "profile-field-list" });
  const editing = el("div");
  let open = null;
  const name = el("input", { required: true, maxLength: 40 });
  const hint = el("input", { maxLength: 80 });
  const type = el("select", {}, FIELD_TYPES.filter(([kind]) => kind !== 7).map(([kind, label]) => el("option", { value: String(kind), text: label })));
  const choices = el("textarea", { rows: 3 });
  const choicesRow = field(t("admin.options_one_per_line"), choices);
  choicesRow.hidden = true;
  type.addEventListener("change", () => { choicesRow.hidden = type.value !== "3"; });
  const close = () => { open = null; clear(editing); };
  const check = (id, label, on) => el("div", { class: "pref check-pref" }, el("label", { class: "check", for: id }, el("input", { type: "checkbox", id, checked: Boolean(on) }), ` ${label}`));
  const edit = (f) => {
    open = f.id;
    const newName = el("input", { id: "field-edit-name", required: true, maxLength: 40, value: f.name });
    const newHint = el("input", { id: "field-edit-hint", maxLength: 80, value: f.hint || "" });
    const options = f.type === 3 ? el("textarea", { id: "field-edit-options", rows: 4, value: optionsText(parseData(f)) }) : null;
    const summary = check("field-edit-summary", t("admin.show_on_user_cards"), f.display_in_profile_summary);
    const required = check("field-edit-required", t("admin.required"), f.required);
    const editable = check("field-edit-editable", t("admin.people_may_edit_their_own_value"), f.editable_by_user !== false);
    const checked = (row) => row.querySelector("input").checked;
    clear(editing).append(editor("profile-field-editor", t("admin.edit_the_field", { name: f.name }),
      [field(t("common.name"), newName), field(t("admin.hint"), newHint), options ? field(t("admin.options_one_per_line"), options) : null, summary, required, editable],
      () => api("PATCH", `realm/profile_fields/${f.id}`, {
        name: newName.value.trim(), hint: newHint.value.trim(),
        display_in_profile_summary: checked(summary), required: checked(required), editable_by_user: checked(editable),
        ...(options ? { field_data: optionsData(options.value, parseData(f)) } : {}),
      }), close));
    newName.focus();
  };
  const draw = (fields) => {
    const ids = fields.map((f) => f.id);
    clear(list).append(table(t("common.custom_profile_fields"), t("admin.no_custom_profile_fields"), [
      [t("common.name"), (f) => f.name], [t("admin.type"), (f) => FIELD_TYPES.find(([kind]) => kind === f.type)?.[1] || String(f.type)], [t("admin.hint"), (f) => f.hint],
    ], fields, (f) => [
      ...moveButtons(ids, f.id, f.name, "admin.could_not_reorder_the_fields", (order) => api("PATCH", "realm/profile_fields", { order })),
      button(t("common.edit"), () => edit(f), { attrs: { "aria-label": t("admin.edit_the_field", { name: f.name }) } }),
      button(t("common.delete"), () => ask({
        title: t("admin.delete_the_field", { name: f.name }), text: t("admin.everyone_s_values_for_it_are"), ok: t("common.delete"),
        run: () => api("DELETE", `realm/profile_fields/${f.id}`),
      }), { attrs: { "aria-label": t("admin.delete_the_field_2", { name: f.name }) } })], (f) => f.id));
    if (open !== null && !ids.includes(open)) close();
  };
  box.append(
    form({ id: "profile-field-form", class: "stack-form narrow-form" }, [field(t("common.name"), name), field(t("admin.type"), type), field(t("admin.hint"), hint), choicesRow,
      el("button", { type: "submit", class: "primary", text: t("admin.add_field") })], async () => {
      const params = { name: name.value.trim(), hint: hint.value.trim(), field_type: Number(type.value) };
      if (type.value === "3") params.field_data = optionsData(choices.value);
      await api("POST", "realm/profile_fields", params);
      name.value = hint.value = choices.value = "";
    }),
    list, editing);
  try {
    draw((await api("GET", "realm/profile_fields")).custom_fields);
  } catch (error) {
    list.append(el("p", { class: "hint", text: t("admin.could_not_load_the_fields", { message: error.message }) }));
  }
  return (ev) => { if (ev.type === "custom_profile_fields") draw(ev.fields); };
}

// ---- data exports ------------------------------------------------------------------------------

export async function exports(box) {
  const list = el("div", { id: "export-list" });
  const kind = el("select", { id: "export-kind" }, el("option", { value: "1", text: t("admin.public_data") }), el("option", { value: "2", text: t("admin.public_data_and_the_private_data") }));
  const status = (x) => (x.deleted_timestamp ? t("admin.deleted") : x.failed_timestamp ? t("admin.failed") : x.pending ? t("admin.being_made") : el("a", { href: x.export_url, text: t("admin.download") }));
  const draw = (items) => clear(list).append(table(t("common.data_exports"), t("admin.no_data_exports"), [
    [t("admin.made"), (x) => longTime(x.export_time)], [t("common.by"), (x) => (x.acting_user_id ? userName(x.acting_user_id) : "")], [t("common.kind"), (x) => (x.export_type === 2 ? t("admin.with_private_data") : t("admin.public_data"))], [t("admin.file"), status],
  ], [...items].sort((a, b) => b.export_time - a.export_time), (x) => (x.deleted_timestamp || x.pending ? [] : [button(t("common.delete"), () => ask({
    title: t("admin.delete_this_export"), text: t("admin.its_file_is_deleted_from_the"), ok: t("common.delete"), run: () => api("DELETE", `export/realm/${x.id}`),
  }), { attrs: { "aria-label": t("admin.delete_the_export_of", { time: longTime(x.export_time) }) } })]), (x) => x.id));
  box.append(
    el("p", { class: "hint", text: t("admin.an_export_is_a_file_in") }),
    form({ id: "export-form", class: "setting-row" }, [el("label", { for: "export-kind", text: t("admin.export") }), kind,
      el("button", { type: "submit", class: "primary", text: t("admin.start_an_export") })], async () => {
      await api("POST", "export/realm", { export_type: Number(kind.value) });
      toast(t("admin.the_export_has_started_it_is"));
    }),
    list);
  try {
    draw((await api("GET", "export/realm")).exports);
  } catch (error) {
    list.append(el("p", { class: "hint", text: t("admin.could_not_load_the_exports", { message: error.message }) }));
  }
  return (ev) => { if (ev.type === "realm_export") draw(ev.exports); };
}

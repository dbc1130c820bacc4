// The people pages: one's bots, the user groups, the organization's users (roles, deactivation)
// and invitations. Lists are drawn from the server's answers and drawn again on the events that
// change them.

import { api } from "./api.js";
import { $, el, add, clear, toast } from "./dom.js";
import { state, isAdmin, isOwner, ROLE_OWNER, ROLE_ADMIN, ROLE_MODERATOR, ROLE_MEMBER, ROLE_GUEST, userName } from "./state.js";
import { longTime } from "./time.js";
import { allows } from "./perms.js";
import { form, field, table, button, act, control, update, redrawWhenFree } from "./forms.js";
import { ask } from "./confirm.js";
import { zuliprcLink } from "./prefs.js";
import { t } from "./texts.js";

const ROLES = [[ROLE_OWNER, t("common.owner")], [ROLE_ADMIN, t("common.administrator")], [ROLE_MODERATOR, t("common.moderator")], [ROLE_MEMBER, t("common.member")], [ROLE_GUEST, t("common.guest")]];
const roleName = (role) => ROLES.find(([r]) => r === role)?.[1] || t("common.member");

// A list drawn again after events, at most once per frame.
function redrawer(draw) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; draw(); });
  };
}

// ---- bots --------------------------------------------------------------------------------------

const BOT_TYPES = [[1, t("admin_people.generic_bot")], [2, t("admin_people.incoming_webhook")], [3, t("admin_people.outgoing_webhook")]];

export function yourBots(box) {
  const list = el("div", { id: "bot-list" });
  const keyBox = el("div", { id: "bot-key", class: "bot-key", attrs: { "aria-live": "polite" } });
  // Those allowed only bots that send messages into the organization may make incoming webhooks.
  const anyKind = isAdmin() || allows(state.realm.can_create_bots_group);
  const type = el("select", { id: "bot-type" }, BOT_TYPES.filter(([kind]) => anyKind || kind === 2).map(([kind, label]) => el("option", { value: String(kind), text: label })));
  const name = el("input", { id: "bot-name", required: true, maxLength: 60 });
  const short = el("input", { id: "bot-short-name", required: true, maxLength: 40, attrs: { autocapitalize: "none" } });
  const url = el("input", { id: "bot-url", type: "url", placeholder: "https://" });
  const urlRow = field(t("admin_people.endpoint_url"), url, t("admin_people.called_when_the_bot_is_mentioned"));
  urlRow.hidden = true;
  type.addEventListener("change", () => { urlRow.hidden = type.value !== "3"; url.required = type.value === "3"; });
  const mine = () => [...state.users.values()].filter((u) => u.is_bot && u.bot_owner_id === state.me.user_id && u.is_active !== false)
    .sort((a, b) => a.full_name.localeCompare(b.full_name));
  // (The bot's address is read when the file is made: a new bot's comes with its event.)
  const showKey = (botId, fullName, apiKey) => clear(keyBox).append(
    el("p", {}, t("admin_people.s_api_key", { name: fullName }), el("code", { text: apiKey })),
    el("div", { class: "row-actions" }, zuliprcLink(() => state.users.get(botId)?.email || "", () => apiKey)));
  const draw = () => clear(list).append(table(t("common.bots"), t("admin_people.no_bots"), [
    [t("common.name"), (b) => b.full_name], [t("admin_people.address"), (b) => b.email], [t("common.kind"), (b) => BOT_TYPES.find(([kind]) => kind === b.bot_type)?.[1] || ""],
  ], mine(), (b) => [
    button(t("common.api_key"), (e) => act(e.currentTarget, "admin_people.could_not_show_the_key", async () => showKey(b.user_id, b.full_name, (await api("GET", `bots/${b.user_id}/api_key`)).api_key)), { attrs: { "aria-label": t("admin_people.api_key_of", { full_name: b.full_name }) } }),
    button(t("admin_people.new_key"), () => ask({
      title: t("admin_people.a_new_api_key_for", { full_name: b.full_name }), text: t("admin_people.the_bot_stops_working_until_it"), ok: t("common.generate"),
      run: async () => showKey(b.user_id, b.full_name, (await api("POST", `bots/${b.user_id}/api_key/regenerate`)).api_key),
    }), { attrs: { "aria-label": t("admin_people.new_api_key_for", { full_name: b.full_name }) } }),
    button(t("common.deactivate"), () => ask({
      title: t("admin_people.deactivate_2", { full_name: b.full_name }), text: t("admin_people.the_bot_can_no_longer_send"), ok: t("common.deactivate"),
      run: () => api("DELETE", `bots/${b.user_id}`),
    }), { class: "small danger-text", attrs: { "aria-label": t("admin_people.deactivate_3", { full_name: b.full_name }) } }),
  ], (b) => b.user_id));
  const creating = anyKind || allows(state.realm.can_create_write_only_bots_group);
  add(box,
    creating ? form({ id: "bot-form", class: "stack-form narrow-form" }, [
      field(t("common.kind"), type), field(t("common.name"), name), field(t("admin_people.username"), short, t("admin_people.the_bot_s_address_starts_with")), urlRow,
      el("button", { type: "submit", class: "primary", text: t("admin_people.create_bot") })], async () => {
      const params = { bot_type: Number(type.value), full_name: name.value.trim(), short_name: short.value.trim() };
      if (type.value === "3") Object.assign(params, { payload_url: JSON.stringify(url.value.trim()), interface_type: 1 });
      const created = await api("POST", "bots", params);
      showKey(created.user_id, params.full_name, created.api_key);
      name.value = short.value = url.value = "";
    }) : el("p", { class: "hint", text: t("admin_people.your_organization_does_not_let_you") }),
    keyBox, list);
  draw();
  const again = redrawer(draw);
  return (ev) => { if (ev.type === "realm_user" || ev.type === "realm_bot") again(); };
}

// ---- user groups -------------------------------------------------------------------------------

export async function userGroups(box) {
  let info = new Map(); // id -> the server's group object (description, permissions)
  let editing = null;
  const list = el("div", { id: "group-list" });
  const editor = el("div", { id: "group-editor" });
  const name = el("input", { id: "group-name", required: true, maxLength: 100 });
  const description = el("input", { id: "group-description", maxLength: 1024 });
  const mayManage = (g) => isAdmin() || allows(state.realm.can_manage_all_groups) || allows(g?.can_manage_group);
  const mayAdd = (g) => mayManage(g) || allows(g?.can_add_members_group);
  const named = () => [...state.groups.entries()].filter(([, g]) => !g.name.startsWith("role:") && !g.deactivated)
    .sort((a, b) => a[1].name.localeCompare(b[1].name));
  const load = async () => { info = new Map((await api("GET", "user_groups")).user_groups.map((g) => [g.id, g])); };
  const draw = () => {
    clear(list).append(table(t("common.user_groups"), t("admin_people.no_user_groups"), [
      [t("common.name"), ([, g]) => g.name], [t("common.description"), ([id]) => info.get(id)?.description || ""], [t("common.members"), ([, g]) => String(g.members.size)],
    ], named(), ([id, g]) => [
      button(mayAdd(info.get(id)) ? t("common.edit") : t("admin_people.view"), () => { editing = id; drawEditor(); }, { attrs: { "aria-label": t("admin_people.members_of", { name: g.name }) } }),
      mayManage(info.get(id)) ? button(t("common.deactivate"), () => ask({
        title: t("admin_people.deactivate_4", { name: g.name }), text: t("admin_people.mentions_of_the_group_stop_notifying"), ok: t("common.deactivate"),
        run: async () => { await api("POST", `user_groups/${id}/deactivate`); if (editing === id) editing = null; },
      }), { class: "small danger-text", attrs: { "aria-label": t("admin_people.deactivate_5", { name: g.name }) } }) : null,
    ], ([id]) => id));
  };
  // The open group: its name and description (updated in place by events) and its members
  // (drawn again when they change).
  let renameRows = [];
  const members = el("div", { id: "group-members" });
  const drawEditor = () => {
    const g = editing !== null && state.groups.get(editing);
    if (!g || g.deactivated) { clear(editor); renameRows = []; return; }
    const full = info.get(editing);
    const id = editing;
    renameRows = mayManage(full) ? [
      control({ key: "name", label: t("common.name"), kind: "text", maxLength: 100 }, g.name, (key, value) => api("PATCH", `user_groups/${id}`, { name: value })),
      control({ key: "description", label: t("common.description"), kind: "text", maxLength: 1024 }, full?.description || "", (key, value) => api("PATCH", `user_groups/${id}`, { description: value })),
    ] : [];
    clear(editor).append(el("section", { class: "editor", attrs: { "aria-labelledby": "group-editor-title" } },
      el("h3", { id: "group-editor-title", text: g.name }), renameRows, members,
      button(t("common.close"), () => { editing = null; drawEditor(); })));
    drawMembers();
  };
  const drawMembers = () => {
    const g = editing !== null && state.groups.get(editing);
    if (!g) return;
    const id = editing;
    const adding = mayAdd(info.get(id));
    const people = [...g.members].sort((a, b) => userName(a).localeCompare(userName(b)));
    const others = [...state.users.values()].filter((u) => !g.members.has(u.user_id) && !u.is_bot && u.is_active !== false)
      .sort((a, b) => a.full_name.localeCompare(b.full_name));
    const pick = el("select", { id: "group-add-member" }, el("option", { value: "", text: t("common.choose_a_person") }), others.map((u) => el("option", { value: String(u.user_id), text: u.full_name })));
    add(clear(members),
      table(t("common.members"), t("admin_people.no_members"), [[t("common.member"), (uid) => userName(uid)]], people, adding ? (uid) => [button(t("common.remove"), (e) => act(e.currentTarget, "admin_people.could_not_remove_the_member",
        () => api("POST", `user_groups/${id}/members`, { delete: [uid] })), { attrs: { "aria-label": t("admin_people.remove_from", { person: userName(uid), group: g.name }) } })] : null, (uid) => uid),
      adding ? form({ class: "setting-row" }, [el("label", { for: "group-add-member", text: t("common.add") }), pick, el("button", { type: "submit", text: t("common.add") })], async () => {
        if (!pick.value) return;
        await api("POST", `user_groups/${id}/members`, { add: [Number(pick.value)] });
      }) : null);
  };
  const creating = isAdmin() || allows(state.realm.can_create_groups);
  add(box,
    creating ? form({ id: "group-form", class: "stack-form narrow-form" }, [field(t("common.name"), name), field(t("common.description"), description),
      el("button", { type: "submit", class: "primary", text: t("admin_people.create_group") })], async () => {
      const created = await api("POST", "user_groups/create", { name: name.value.trim(), description: description.value.trim(), members: [state.me.user_id] });
      name.value = description.value = "";
      // Its event may have come first: the editor opens now, or when it comes.
      editing = created.group_id;
      drawEditor();
    }) : null,
    list, editor);
  try {
    await load();
  } catch (error) {
    toast(t("admin_people.could_not_load_the_groups", { message: error.message }));
  }
  draw();
  const again = redrawer(draw);
  return (ev) => {
    if (ev.type !== "user_group") return;
    if (ev.op === "add") info.set(ev.group.id, ev.group);
    if (ev.op === "update" && info.has(ev.group_id)) Object.assign(info.get(ev.group_id), ev.data);
    again();
    const about = ev.op === "add" ? ev.group.id : ev.group_id;
    if (about !== editing) return;
    const g = state.groups.get(editing);
    if (ev.op === "add" || ev.op === "remove" || !g || g.deactivated) drawEditor();
    else if (ev.op === "update") {
      $("group-editor-title").textContent = g.name;
      renameRows = renameRows.map((row) => (row.spec.key in ev.data ? update(row, ev.data[row.spec.key]) : row));
    } else drawMembers();
  };
}

// ---- users -------------------------------------------------------------------------------------

export async function users(box) {
  const list = el("div", { id: "user-list" });
  const filter = el("input", { type: "search", class: "filter", placeholder: t("common.filter_people"), attrs: { "aria-label": t("common.filter_people") } });
  let everyone = [];
  const roleSelect = (u) => {
    const mayChange = u.user_id !== state.me.user_id && (isOwner() || u.role !== ROLE_OWNER);
    const options = ROLES.filter(([r]) => isOwner() || r !== ROLE_OWNER);
    const select = el("select", { class: "small", disabled: !mayChange, attrs: { "aria-label": t("admin_people.role_of", { full_name: u.full_name }) } },
      (options.some(([r]) => r === u.role) ? options : [[u.role, roleName(u.role)], ...options]).map(([r, label]) => el("option", { value: String(r), text: label, selected: r === u.role })));
    select.addEventListener("change", async () => {
      try {
        await api("PATCH", `users/${u.user_id}`, { role: Number(select.value) });
        toast(t("admin_people.is_now", { name: u.full_name, role: roleName(Number(select.value)).toLowerCase() }));
      } catch (error) {
        select.value = String(u.role);
        toast(t("admin_people.could_not_change_the_role", { message: error.message }));
      }
    });
    return select;
  };
  const draw = () => {
    const text = filter.value.trim().toLowerCase();
    const shown = everyone.filter((u) => !u.is_bot && (!text || u.full_name.toLowerCase().includes(text) || (u.delivery_email || u.email).toLowerCase().includes(text)));
    clear(list).append(table(t("common.users"), t("admin_people.no_users"), [
      [t("common.name"), (u) => u.full_name], [t("common.email"), (u) => u.delivery_email || u.email], [t("common.role"), (u) => (u.is_active ? roleSelect(u) : t("admin_people.deactivated"))],
    ], shown, (u) => (u.user_id === state.me.user_id ? [] : u.is_active
      ? [button(t("common.deactivate"), () => ask({
        title: t("admin_people.deactivate_2", { full_name: u.full_name }), text: t("admin_people.they_are_logged_out_everywhere_and"), ok: t("common.deactivate"),
        run: () => api("DELETE", `users/${u.user_id}`),
      }), { class: "small danger-text", attrs: { "aria-label": t("admin_people.deactivate_3", { full_name: u.full_name }) } })]
      : [button(t("admin_people.reactivate"), (e) => act(e.currentTarget, "admin_people.could_not_reactivate", () => api("POST", `users/${u.user_id}/reactivate`)), { attrs: { "aria-label": t("admin_people.reactivate_2", { full_name: u.full_name }) } })]),
    (u) => u.user_id));
  };
  // Only the newest of overlapping loads is drawn; not under a control being used.
  let generation = 0;
  const load = async () => {
    const mine = ++generation;
    try {
      const members = (await api("GET", "users")).members;
      if (mine !== generation) return;
      everyone = members.sort((a, b) => b.is_active - a.is_active || a.full_name.localeCompare(b.full_name));
      redrawWhenFree(list, draw);
    } catch (error) {
      if (mine === generation) clear(list).append(el("p", { class: "hint", text: t("admin_people.could_not_load_the_users", { message: error.message }) }));
    }
  };
  filter.addEventListener("input", draw);
  box.append(filter, list);
  await load();
  return (ev) => { if (ev.type === "realm_user") load(); };
}

// ---- invitations -------------------------------------------------------------------------------

export const mayInvite = () => isAdmin() || allows(state.realm.can_invite_users_group);

const EXPIRY = [[1440, t("common.1_day")], [4320, t("admin_people.3_days")], [14400, t("admin_people.10_days")], [43200, t("admin_people.30_days")], [null, t("common.never")]];

export async function invitations(box) {
  const list = el("div", { id: "invite-list" });
  const linkBox = el("div", { id: "invite-link", attrs: { "aria-live": "polite" } });
  const emails = el("textarea", { id: "invite-emails", rows: 2, placeholder: t("admin_people.one_example_com_two_example_com") });
  const role = el("select", { id: "invite-as" }, ROLES.filter(([r]) => r === ROLE_MEMBER || r === ROLE_GUEST || (r === ROLE_MODERATOR && isAdmin()) || (r === ROLE_ADMIN && isAdmin()) || (r === ROLE_OWNER && isOwner()))
    .sort((a, b) => (a[0] === ROLE_MEMBER ? -1 : b[0] === ROLE_MEMBER ? 1 : b[0] - a[0])).map(([r, label]) => el("option", { value: String(r), text: label })));
  const expiry = el("select", { id: "invite-expiry" }, EXPIRY.map(([m, label]) => el("option", { value: JSON.stringify(m), text: label, selected: m === 14400 })));
  const channels = [...state.subs.values()].sort((a, b) => a.name.localeCompare(b.name));
  const picks = el("fieldset", { class: "prefs channel-picks" }, el("legend", { text: t("admin_people.channels_to_join") }),
    el("label", { class: "check" }, el("input", { type: "checkbox", id: "invite-defaults", checked: true }), t("admin_people.the_organization_s_default_channels")),
    channels.map((s) => el("label", { class: "check" }, el("input", { type: "checkbox", value: String(s.stream_id) }), ` #${s.name}`)));
  const common = () => ({
    invite_as: Number(role.value), invite_expires_in_minutes: expiry.value,
    stream_ids: [...picks.querySelectorAll("input[value]:checked")].map((i) => Number(i.value)),
    include_realm_default_subscriptions: picks.querySelector("#invite-defaults").checked,
  });
  const draw = (invites) => clear(list).append(table(t("common.invitations"), t("admin_people.no_invitations"), [
    [t("admin_people.who"), (i) => (i.is_multiuse ? el("span", {}, t("admin_people.link"), el("code", { text: i.link_url || "" })) : i.email)],
    [t("admin_people.as"), (i) => roleName(i.invited_as)], [t("common.by"), (i) => userName(i.invited_by_user_id)],
    [t("admin_people.expires"), (i) => (i.expiry_date ? longTime(i.expiry_date) : t("common.never"))],
  ], invites, (i) => [
    i.is_multiuse ? null : button(t("admin_people.resend"), (e) => act(e.currentTarget, "admin_people.could_not_resend", async () => { await api("POST", `invites/${i.id}/resend`); toast(t("admin_people.sent_again_to", { email: i.email })); }), { attrs: { "aria-label": t("admin_people.resend_the_invitation_to", { email: i.email }) } }),
    button(t("admin_people.revoke"), (e) => act(e.currentTarget, "admin_people.could_not_revoke", () => api("DELETE", i.is_multiuse ? `invites/multiuse/${i.id}` : `invites/${i.id}`)), { class: "small danger-text", attrs: { "aria-label": i.is_multiuse ? t("admin_people.revoke_the_link_made", { time: longTime(i.invited) }) : t("admin_people.revoke_the_invitation_to", { email: i.email }) } }),
  ], (i) => `${i.is_multiuse ? "link" : "email"}-${i.id}`));
  const load = async () => {
    try {
      draw((await api("GET", "invites")).invites);
    } catch (error) {
      clear(list).append(el("p", { class: "hint", text: t("admin_people.could_not_load_the_invitations", { message: error.message }) }));
    }
  };
  const makeLink = el("button", { type: "button", id: "invite-make-link", text: t("admin_people.create_an_invitation_link") });
  makeLink.addEventListener("click", () => act(makeLink, "admin_people.could_not_create_the_link", async () => {
    const { invite_link: link } = await api("POST", "invites/multiuse", common());
    clear(linkBox).append(el("p", {}, t("admin_people.anyone_with_this_link_can_join"), el("code", { text: link })));
  }));
  box.append(
    form({ id: "invite-form", class: "stack-form narrow-form" }, [
      field(t("admin_people.email_addresses"), emails, t("admin_people.separated_by_commas_or_new_lines")), field(t("admin_people.join_as"), role), field(t("admin_people.expires_after"), expiry), picks,
      el("div", { class: "row-actions" }, el("button", { type: "submit", class: "primary", text: t("admin_people.send_invitations") }), makeLink)], async () => {
      await api("POST", "invites", { invitee_emails: emails.value.split(/[\s,]+/).filter(Boolean).join(","), ...common() });
      emails.value = "";
      toast(t("admin_people.invitations_sent"));
    }),
    linkBox, list);
  await load();
  return (ev) => { if (ev.type === "invites_changed") load(); };
}

// The channels pages for administrators: every channel of the organization, private ones
// included; each opens an editor for its name, description, privacy, permissions and
// subscribers, and can be archived. Drawn again on `stream` and `subscription` events. And the
// default channels, which new members join.

import { api } from "./api.js";
import { el, clear, toast } from "./dom.js";
import { swapIfChanged } from "./ui.js";
import { state, isAdmin, userName, ROLE_GUEST } from "./state.js";
import { allows } from "./perms.js";
import { form, field, table, button, act, moveButtons, editor, control, groupControl, update, redrawWhenFree } from "./forms.js";
import { ask } from "./confirm.js";
import { t } from "./texts.js";

// Zulip's words for a channel's group permissions; others are shown by their keys.
const PERMISSIONS = {
  can_send_message_group: t("admin_channels.who_can_post"),
  can_subscribe_group: t("admin_channels.who_can_subscribe_themselves"),
  can_create_topic_group: t("admin_channels.who_can_start_new_topics"),
  can_add_subscribers_group: t("admin_channels.who_can_subscribe_others"),
  can_remove_subscribers_group: t("admin_channels.who_can_unsubscribe_others"),
  can_administer_channel_group: t("admin_channels.who_can_administer_the_channel"),
  can_move_messages_within_channel_group: t("admin_channels.who_can_move_messages_between_its"),
  can_move_messages_out_of_channel_group: t("admin_channels.who_can_move_messages_out_of"),
  can_resolve_topics_group: t("common.who_can_resolve_topics"),
  can_delete_any_message_group: t("common.who_can_delete_any_message"),
  can_delete_own_message_group: t("common.who_can_delete_their_own_messages"),
};

const PRIVACY = [
  ["public", t("admin_channels.public_anyone_may_join_and_read")],
  ["private-shared", t("admin_channels.private_new_subscribers_read_its_history")],
  ["private", t("admin_channels.private_new_subscribers_read_only_what")],
];
// Who may open a channel's settings: the organization's administrators, for every channel, and a
// channel's own administrators (its `can_administer_channel_group`; never guests), as the server
// decides in commands/channels.rs.
const administers = (s) => isAdmin() || (state.me.role !== ROLE_GUEST && allows(s.can_administer_channel_group));
export const mayAdministerChannels = () => isAdmin() || [...state.streams.values()].some((s) => !s.is_archived && administers(s));

// The folders a channel may be put in: none, or one of the organization's (not archived).
const liveFolders = () => state.folders.filter((f) => !f.is_archived).sort((a, b) => (a.order ?? a.id) - (b.order ?? b.id));
const folderChoices = () => [[null, t("admin_channels.no_folder")], ...liveFolders().map((f) => [f.id, f.name])];

const privacyOf = (s) => (!s.invite_only ? "public" : s.history_public_to_subscribers ? "private-shared" : "private");

export async function channels(box) {
  let all = [];
  let editing = null;
  let members = [];
  let controls = []; // the open channel's setting controls, shown again in place on updates
  const list = el("div", { id: "channel-admin-list" });
  const editor = el("div", { id: "channel-editor" });
  const memberBox = el("div", { id: "channel-members" });
  const channel = () => all.find((c) => c.stream_id === editing);
  const load = async () => {
    try {
      const answer = await api("GET", "streams", isAdmin() ? { include_all: true } : {});
      all = answer.streams.filter(administers).sort((a, b) => a.name.localeCompare(b.name));
    } catch (error) {
      clear(list).append(el("p", { class: "hint", text: t("admin_channels.could_not_load_the_channels", { message: error.message }) }));
      return;
    }
    drawList();
    if (!channel()) { editing = null; clear(editor); }
  };
  const loadMembers = async () => {
    const id = editing;
    if (id === null) return;
    let subscribers;
    try {
      subscribers = (await api("GET", `streams/${id}/members`)).subscribers;
    } catch (error) {
      if (id === editing) toast(t("admin_channels.could_not_load_the_subscribers", { message: error.message }));
      subscribers = [];
    }
    // Another channel opened meanwhile: this answer is not for it.
    if (id !== editing) return;
    members = subscribers;
    drawMembers();
  };
  const drawList = () => swapIfChanged(list, [table(t("common.channels"), t("admin_channels.no_channels"), [
    [t("common.channel"), (s) => `#${s.name}`], [t("common.kind"), (s) => (s.invite_only ? t("admin_channels.private") : t("admin_channels.public"))], [t("common.description"), (s) => s.description],
  ], all, (s) => [button(t("common.edit"), () => { editing = s.stream_id; members = []; drawEditor(); loadMembers(); }, { attrs: { "aria-label": t("admin_channels.edit_2", { name: s.name }) } })], (s) => s.stream_id)]);
  const valueOf = (s, key) => (key === "privacy" ? privacyOf(s) : key === "new_name" ? s.name : s[key]);
  const drawEditor = () => {
    const s = channel();
    if (!s) { clear(editor); return; }
    const id = s.stream_id;
    const patch = (params) => api("PATCH", `streams/${id}`, params);
    const savePrivacy = (key, value) => patch({ is_private: value !== "public", history_public_to_subscribers: value !== "private" });
    const permissions = Object.keys(state.permissionSettings.stream || {}).filter((k) => k in s).sort((a, b) => (PERMISSIONS[a] || a).localeCompare(PERMISSIONS[b] || b))
      .map((key) => groupControl("stream", key, PERMISSIONS[key] || key.replace(/_/g, " "), s[key], (k, value) => patch({ [k]: { new: value } })));
    const about = [
      control({ key: "new_name", label: t("common.name"), kind: "text", maxLength: 60 }, s.name, (key, value) => patch({ new_name: value })),
      control({ key: "description", label: t("common.description"), kind: "text", maxLength: 1024 }, s.description, (key, value) => patch({ description: value })),
      control({ key: "privacy", label: t("admin_channels.who_can_see_it"), kind: "choice", options: PRIVACY }, privacyOf(s), savePrivacy),
      control({ key: "folder_id", label: t("admin_channels.folder"), kind: "choice", options: folderChoices(), unlisted: (id) => t("admin_channels.folder_id", { id }) },
        s.folder_id ?? null, (key, value) => patch({ folder_id: value })),
    ];
    controls = [...about, ...permissions];
    clear(editor).append(el("section", { class: "editor", attrs: { "aria-label": t("admin_channels.channel_settings") } },
      el("h3", { text: t("admin_channels.channel_settings") }),
      el("fieldset", { class: "prefs" }, el("legend", { text: t("admin_channels.about") }), about),
      el("fieldset", { class: "prefs" }, el("legend", { text: t("common.permissions") }), permissions),
      el("h3", { text: t("admin_channels.subscribers") }), memberBox,
      el("div", { class: "row-actions" },
        button(t("admin_channels.archive_the_channel"), () => ask({
          title: t("admin_channels.archive", { name: s.name }), text: t("admin_channels.nobody_can_post_in_it_any"), ok: t("admin_channels.archive_2"),
          run: async () => { await api("DELETE", `streams/${id}`); editing = null; await load(); },
        }), { class: "danger" }),
        button(t("common.close"), () => { editing = null; clear(editor); }))));
    drawMembers();
  };
  const drawMembers = () => {
    const s = channel();
    if (!s) return;
    const others = [...state.users.values()].filter((u) => !members.includes(u.user_id) && u.is_active !== false)
      .sort((a, b) => a.full_name.localeCompare(b.full_name));
    const pick = el("select", { id: "channel-add-member" }, el("option", { value: "", text: t("common.choose_a_person") }), others.map((u) => el("option", { value: String(u.user_id), text: u.full_name })));
    clear(memberBox).append(
      table(t("admin_channels.subscribers"), t("admin_channels.no_subscribers"), [[t("common.name"), (uid) => userName(uid)]], [...members].sort((a, b) => userName(a).localeCompare(userName(b))),
        (uid) => [button(t("common.unsubscribe"), (e) => act(e.currentTarget, "admin_channels.could_not_unsubscribe", () => api("DELETE", "users/me/subscriptions", { subscriptions: [s.name], principals: [uid] })),
          { attrs: { "aria-label": t("admin_channels.unsubscribe_from", { person: userName(uid), channel: s.name }) } })], (uid) => uid),
      form({ class: "setting-row" }, [el("label", { for: "channel-add-member", text: t("common.subscribe") }), pick, el("button", { type: "submit", text: t("common.subscribe") })], async () => {
        if (!pick.value) return;
        await api("POST", "users/me/subscriptions", { subscriptions: [{ name: s.name }], principals: [Number(pick.value)] });
      }));
  };
  box.append(list, editor);
  await load();
  return (ev) => {
    if (ev.type === "stream" && ev.op === "update") {
      const s = all.find((c) => c.stream_id === ev.stream_id);
      if (!s) return;
      s[ev.property] = ev.value;
      // A privacy change carries the related properties beside its value.
      for (const key of ["history_public_to_subscribers", "is_web_public"]) if (key in ev) s[key] = ev[key];
      if (ev.property === "name") all.sort((a, b) => a.name.localeCompare(b.name));
      drawList();
      if (s === channel()) controls = controls.map((row) => update(row, valueOf(s, row.spec.key)));
    } else if (ev.type === "stream") {
      load();
    }
    // Subscribers of the open channel changed: its list again.
    const ids = ev.type !== "subscription" ? [] : ev.stream_ids || (ev.subscriptions || []).map((sub) => sub.stream_id ?? sub);
    if (ev.type === "subscription" && ["peer_add", "peer_remove", "add", "remove"].includes(ev.op) && ids.includes(editing)) loadMembers();
  };
}

// ---- default channels ------------------------------------------------------------------------

// The channels every new member joins (Zulip's "Default channels"): listed, added from the
// organization's channels, removed; kept live by `default_streams` events (channel ids) and by
// `stream` events (names, archiving). `GET /default_streams` gives channel objects.
export async function defaultChannels(box) {
  const list = el("div", { id: "default-channel-list" });
  const choice = el("select", { id: "default-channel-add" });
  let ids = [];
  const idsOf = (streams) => streams.map((s) => (typeof s === "number" ? s : s.stream_id));
  const byName = (a, b) => a.name.localeCompare(b.name);
  const drawList = () => {
    const defaults = ids.map((id) => state.streams.get(id) || { stream_id: id, name: t("common.channel_id", { id }), description: "" }).sort(byName);
    clear(list).append(table(t("admin_channels.default_channels"), t("admin_channels.no_default_channels"),
      [[t("common.channel"), (s) => `#${s.name}`], [t("common.description"), (s) => s.description]], defaults,
      (s) => [button(t("common.remove"), (e) => act(e.currentTarget, "admin_channels.could_not_remove_the_default",
        () => api("DELETE", "default_streams", { stream_id: s.stream_id })), { attrs: { "aria-label": t("admin_channels.remove_from_the_defaults", { name: s.name }) } })],
      (s) => s.stream_id));
  };
  // The choices, never redrawn under the person choosing.
  const drawChoices = () => {
    const chosen = new Set(ids);
    const offered = [...state.streams.values()].filter((s) => !s.is_archived && !chosen.has(s.stream_id)).sort(byName);
    swapIfChanged(choice, offered.map((s) => el("option", { value: String(s.stream_id), text: `#${s.name}` })));
  };
  const draw = () => { drawList(); redrawWhenFree(choice, drawChoices); };
  box.append(
    el("p", { class: "hint", text: t("admin_channels.new_members_join_these_channels") }),
    form({ id: "default-channel-form", class: "setting-row" }, [el("label", { for: "default-channel-add", text: t("common.channel") }), choice,
      el("button", { type: "submit", class: "primary", text: t("common.add") })], async () => {
      if (choice.value) await api("POST", "default_streams", { stream_id: Number(choice.value) });
    }),
    list);
  try {
    ids = idsOf((await api("GET", "default_streams")).default_streams);
    draw();
  } catch (error) {
    clear(list).append(el("p", { class: "hint", text: t("admin_channels.could_not_load_the_default_channels", { message: error.message }) }));
  }
  return (ev) => {
    if (ev.type === "default_streams") ids = idsOf(ev.default_streams);
    if (ev.type === "default_streams" || ev.type === "stream") draw();
  };
}

// ---- channel folders ---------------------------------------------------------------------------

// The organization's channel folders (Zulip 11's): the sidebar's sections, in this order. Made,
// renamed, described, reordered, archived and brought back here; a channel is put in one from
// its settings (Channels, above). Kept live by `channel_folder` events, which state.js folds.
export function channelFolders(box) {
  const list = el("div", { id: "channel-folder-list" });
  const editing = el("div");
  const name = el("input", { id: "folder-name", required: true, maxLength: 60 });
  const description = el("input", { id: "folder-description", maxLength: 1024 });
  let open = null;
  const close = () => { open = null; clear(editing); };
  const edit = (f) => {
    open = f.id;
    const newName = el("input", { id: "folder-edit-name", required: true, maxLength: 60, value: f.name });
    const newDescription = el("input", { id: "folder-edit-description", maxLength: 1024, value: f.description || "" });
    clear(editing).append(editor("channel-folder-editor", t("admin_channels.edit_the_folder", { name: f.name }),
      [field(t("common.name"), newName), field(t("common.description"), newDescription)],
      () => api("PATCH", `channel_folders/${f.id}`, { name: newName.value.trim(), description: newDescription.value.trim() }), close));
    newName.focus();
  };
  const channelCount = (f) => [...state.streams.values()].filter((s) => s.folder_id === f.id && !s.is_archived).length;
  const draw = () => {
    const folders = [...state.folders].sort((a, b) => (a.order ?? a.id) - (b.order ?? b.id));
    const ids = folders.map((f) => f.id);
    const archive = (f, value) => button(value ? t("admin_channels.archive_2") : t("admin_channels.unarchive"),
      (e) => act(e.currentTarget, "admin_channels.could_not_change_the_folder", () => api("PATCH", `channel_folders/${f.id}`, { is_archived: value })),
      { attrs: { "aria-label": t(value ? "admin_channels.archive_the_folder" : "admin_channels.unarchive_the_folder", { name: f.name }) } });
    clear(list).append(table(t("admin_channels.channel_folders"), t("admin_channels.no_channel_folders"), [
      [t("common.name"), (f) => (f.is_archived ? t("admin_channels.archived_name", { name: f.name }) : f.name)],
      [t("common.description"), (f) => f.description],
      [t("common.channels"), (f) => String(channelCount(f))],
    ], folders, (f) => [
      ...moveButtons(ids, f.id, f.name, "admin_channels.could_not_reorder_the_folders", (order) => api("PATCH", "channel_folders", { order })),
      button(t("common.edit"), () => edit(f), { attrs: { "aria-label": t("admin_channels.edit_the_folder", { name: f.name }) } }),
      archive(f, !f.is_archived)], (f) => f.id));
    if (open !== null && !ids.includes(open)) close();
  };
  box.append(
    el("p", { class: "hint", text: t("admin_channels.folders_group_channels_in_the") }),
    form({ id: "channel-folder-form", class: "stack-form narrow-form" }, [field(t("common.name"), name), field(t("common.description"), description),
      el("button", { type: "submit", class: "primary", text: t("admin_channels.add_folder") })], async () => {
      await api("POST", "channel_folders/create", { name: name.value.trim(), description: description.value.trim() });
      name.value = description.value = "";
    }),
    list, editing);
  draw();
  return (ev) => { if (ev.type === "channel_folder" || ev.type === "stream") draw(); };
}

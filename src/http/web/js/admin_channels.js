// The channels page for administrators: every channel of the organization, private ones
// included; each opens an editor for its name, description, privacy, permissions and
// subscribers, and can be archived. Drawn again on `stream` and `subscription` events.

import { api } from "./api.js";
import { el, clear, toast } from "./dom.js";
import { swapIfChanged } from "./ui.js";
import { state, userName } from "./state.js";
import { form, table, button, act, control, groupControl, update } from "./forms.js";
import { ask } from "./confirm.js";

// Zulip's words for a channel's group permissions; others are shown by their keys.
const PERMISSIONS = {
  can_send_message_group: "Who can post",
  can_subscribe_group: "Who can subscribe themselves",
  can_create_topic_group: "Who can start new topics",
  can_add_subscribers_group: "Who can subscribe others",
  can_remove_subscribers_group: "Who can unsubscribe others",
  can_administer_channel_group: "Who can administer the channel",
  can_move_messages_within_channel_group: "Who can move messages between its topics",
  can_move_messages_out_of_channel_group: "Who can move messages out of it",
  can_resolve_topics_group: "Who can resolve topics",
  can_delete_any_message_group: "Who can delete any message",
  can_delete_own_message_group: "Who can delete their own messages",
};

const PRIVACY = [
  ["public", "Public: anyone may join and read its history"],
  ["private-shared", "Private, new subscribers read its history"],
  ["private", "Private, new subscribers read only what comes after"],
];
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
      all = (await api("GET", "streams", { include_all: true })).streams.sort((a, b) => a.name.localeCompare(b.name));
    } catch (error) {
      clear(list).append(el("p", { class: "hint", text: `Could not load the channels: ${error.message}` }));
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
      if (id === editing) toast(`Could not load the subscribers: ${error.message}`);
      subscribers = [];
    }
    // Another channel opened meanwhile: this answer is not for it.
    if (id !== editing) return;
    members = subscribers;
    drawMembers();
  };
  const drawList = () => swapIfChanged(list, [table("Channels", [
    ["Channel", (s) => `#${s.name}`], ["Kind", (s) => (s.invite_only ? "Private" : "Public")], ["Description", (s) => s.description],
  ], all, (s) => [button("Edit", () => { editing = s.stream_id; members = []; drawEditor(); loadMembers(); }, { attrs: { "aria-label": `Edit #${s.name}` } })], (s) => s.stream_id)]);
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
      control({ key: "new_name", label: "Name", kind: "text", maxLength: 60 }, s.name, (key, value) => patch({ new_name: value })),
      control({ key: "description", label: "Description", kind: "text", maxLength: 1024 }, s.description, (key, value) => patch({ description: value })),
      control({ key: "privacy", label: "Who can see it", kind: "choice", options: PRIVACY }, privacyOf(s), savePrivacy),
    ];
    controls = [...about, ...permissions];
    clear(editor).append(el("section", { class: "editor", attrs: { "aria-label": `Channel settings` } },
      el("h3", { text: "Channel settings" }),
      el("fieldset", { class: "prefs" }, el("legend", { text: "About" }), about),
      el("fieldset", { class: "prefs" }, el("legend", { text: "Permissions" }), permissions),
      el("h3", { text: "Subscribers" }), memberBox,
      el("div", { class: "row-actions" },
        button("Archive the channel", () => ask({
          title: `Archive #${s.name}?`, text: "Nobody can post in it any more; its messages stay readable to those who could read them.", ok: "Archive",
          run: async () => { await api("DELETE", `streams/${id}`); editing = null; await load(); },
        }), { class: "danger" }),
        button("Close", () => { editing = null; clear(editor); }))));
    drawMembers();
  };
  const drawMembers = () => {
    const s = channel();
    if (!s) return;
    const others = [...state.users.values()].filter((u) => !members.includes(u.user_id) && u.is_active !== false)
      .sort((a, b) => a.full_name.localeCompare(b.full_name));
    const pick = el("select", { id: "channel-add-member" }, el("option", { value: "", text: "Choose a person" }), others.map((u) => el("option", { value: String(u.user_id), text: u.full_name })));
    clear(memberBox).append(
      table("Subscribers", [["Name", (uid) => userName(uid)]], [...members].sort((a, b) => userName(a).localeCompare(userName(b))),
        (uid) => [button("Unsubscribe", (e) => act(e.currentTarget, "unsubscribe", () => api("DELETE", "users/me/subscriptions", { subscriptions: [s.name], principals: [uid] })),
          { attrs: { "aria-label": `Unsubscribe ${userName(uid)} from #${s.name}` } })], (uid) => uid),
      form({ class: "setting-row" }, [el("label", { for: "channel-add-member", text: "Subscribe" }), pick, el("button", { type: "submit", text: "Subscribe" })], async () => {
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

// The settings pages, drawn in the middle column at Zulip's addresses: #settings/<section> for
// the person's own settings (prefs.js) and #organization/<section> for the organization's
// (admin.js, admin_people.js, admin_channels.js). A list of sections on the left, the open
// section on the right; ✕ goes back to where the person was. Each section draws itself and may
// return an `onEvent(ev)` that keeps it live; a control the person is changing is left alone.

import { $, el, clear } from "./dom.js";
import { api } from "./api.js";
import { state, isAdmin, loadGroups } from "./state.js";
import * as prefs from "./prefs.js";
import * as admin from "./admin.js";
import * as people from "./admin_people.js";
import * as channels from "./admin_channels.js";
import { uploadedFiles } from "./uploaded.js";
import { t } from "./texts.js";

// [address, title, draw, who may open it]
const SECTIONS = [
  ["settings/profile", t("common.profile"), prefs.profile],
  ["settings/account-and-privacy", t("settings.account_privacy"), prefs.account],
  ["settings/preferences", t("settings.preferences"), prefs.preferences],
  ["settings/notifications", t("settings.notifications"), prefs.notifications],
  ["settings/alert-words", t("common.alert_words"), prefs.alertWords],
  ["settings/muted-users", t("common.muted_users"), prefs.mutedUsers],
  ["settings/uploaded-files", t("uploaded.uploaded_files"), uploadedFiles],
  ["settings/your-bots", t("common.bots"), people.yourBots],
  ["organization/organization-profile", t("settings.organization_profile"), admin.organizationProfile, isAdmin],
  ["organization/organization-settings", t("common.organization_settings"), admin.organizationSettings, isAdmin],
  ["organization/organization-permissions", t("settings.organization_permissions"), admin.organizationPermissions, isAdmin],
  ["organization/channels", t("common.channels"), channels.channels, channels.mayAdministerChannels],
  ["organization/default-channels-list", t("admin_channels.default_channels"), channels.defaultChannels, isAdmin],
  ["organization/channel-folders", t("admin_channels.channel_folders"), channels.channelFolders, isAdmin],
  ["organization/user-groups", t("common.user_groups"), people.userGroups],
  ["organization/users", t("common.users"), people.users, isAdmin],
  ["organization/invitations", t("common.invitations"), people.invitations, people.mayInvite],
  ["organization/emoji-settings", t("common.custom_emoji"), admin.emoji],
  ["organization/linkifier-settings", t("common.linkifiers"), admin.linkifiers, isAdmin],
  ["organization/profile-field-settings", t("common.custom_profile_fields"), admin.profileFields, isAdmin],
  ["organization/data-exports-admin", t("common.data_exports"), admin.exports, isAdmin],
];

const allowed = ([, , , may]) => !may || may();

let current = null; // {address, onEvent, pending: the events that came before onEvent}
let back = "#";

const panel = () => $("view-panel");

export async function open(address, previous) {
  if (!current && previous !== undefined) back = previous;
  $("messages").hidden = true;
  document.body.classList.add("in-settings");
  const mine = { address, onEvent: null, pending: [] };
  current = mine;
  // Who may open a section, and the group settings' choices, depend on the user groups, which
  // app.js fetches after the first screen: an address opened at once fetches them here first.
  if (!state.groups.size) {
    try {
      loadGroups((await api("GET", "user_groups")).user_groups);
    } catch {
      // Sections that need a group's permission stay hidden until the groups come.
    }
    if (current !== mine) return;
  }
  // A section the person may not open (or none) shows their profile, at its own address.
  const section = SECTIONS.find((entry) => entry[0] === address && allowed(entry)) || SECTIONS[0];
  if (section[0] !== address) history.replaceState(null, "", `#${section[0]}`);
  mine.address = section[0];
  const box = el("section", { class: "settings-section", attrs: { "aria-labelledby": "settings-section-title" } });
  const page = el("div", { id: "settings-view", class: "settings-view" },
    el("nav", { class: "settings-nav", attrs: { "aria-label": t("settings.settings_sections") } }, nav(section[0])),
    el("div", { class: "settings-main" },
      el("div", { class: "settings-head" },
        el("h2", { id: "settings-section-title", text: section[1] }),
        el("a", { id: "settings-close", class: "icon-btn close", href: back, attrs: { "aria-label": t("settings.close_settings") }, text: "✕" })),
      box));
  clear(panel()).append(page);
  panel().hidden = false;
  try {
    const handler = await section[2](box);
    if (current !== mine) return;
    mine.onEvent = handler || (() => {});
    // Events that came while the section was loading.
    for (const ev of mine.pending.splice(0)) mine.onEvent(ev);
  } catch (error) {
    mine.onEvent = () => {};
    if (current === mine) box.append(el("p", { class: "form-error", text: t("settings.this_page_could_not_be_drawn", { message: error.message }) }));
  }
}

function nav(active) {
  const link = ([address, title]) => el("li", {}, el("a", {
    href: `#${address}`, text: title, class: address === active ? "active" : null,
    attrs: { "aria-current": address === active ? "page" : null },
  }));
  const mine = SECTIONS.filter(([a]) => a.startsWith("settings/")).filter(allowed);
  const org = SECTIONS.filter(([a]) => a.startsWith("organization/")).filter(allowed);
  return [
    el("h3", { text: t("settings.personal") }), el("ul", {}, mine.map(link)),
    org.length ? el("h3", { text: t("settings.organization") }) : null, org.length ? el("ul", {}, org.map(link)) : null,
  ];
}

export function close() {
  if (!current) return;
  current = null;
  document.body.classList.remove("in-settings");
  panel().hidden = true;
  clear(panel());
  $("messages").hidden = false;
}

export function onEvent(ev) {
  // A role change can open or close sections: the list is drawn again, the section kept.
  const mine = ev.type === "realm_user" && ev.op === "update" && ev.person?.user_id === state.me.user_id && "role" in ev.person;
  // So can a channel's administrators changing (the Channels section).
  const channelAdmins = ev.type === "stream" && ev.op === "update" && ev.property === "can_administer_channel_group" && !isAdmin();
  if (mine || channelAdmins) {
    const address = current?.address;
    if (address) { current = null; open(address); }
    return;
  }
  if (!current) return;
  if (current.onEvent) current.onEvent(ev);
  else current.pending.push(ev);
}

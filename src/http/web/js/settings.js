// The settings dialog: name, status, two notification switches, who can read every
// conversation through the log inspector, two-factor authentication, the sessions of this
// account (each can be ended),
// and the audit-log link for administrators.

import { api } from "./api.js";
import { $, el, clear, toast } from "./dom.js";
import { state, isAdmin } from "./state.js";
import { longTime } from "./time.js";
import { showTwoFactor } from "./two_factor.js";

export function setup() {
  $("name-form").addEventListener("submit", (e) => { e.preventDefault(); saveName(); });
  $("status-form").addEventListener("submit", (e) => { e.preventDefault(); saveStatus(); });
  for (const box of document.querySelectorAll("[data-setting]")) box.addEventListener("change", () => saveSwitch(box));
}

export function open() {
  $("full-name").value = state.me.full_name;
  $("status-text").value = state.status.get(state.me.user_id)?.status_text || "";
  for (const box of document.querySelectorAll("[data-setting]")) box.checked = Boolean(state.settings[box.dataset.setting]);
  $("admin-link").hidden = !isAdmin();
  $("settings-dialog").showModal();
  loadSessions();
  showTwoFactor($("two-factor"));
  showInspectPolicy();
}

const ROLE_GROUPS = {
  "role:owners": "the organization's owners", "role:administrators": "its administrators and owners",
  "role:moderators": "its moderators, administrators and owners", "role:members": "all its members",
  "role:fullmembers": "its full members", "role:everyone": "everyone", "role:nobody": "nobody",
};

// The organization's `can_inspect_log_group`, in words: a group's name, or the people and
// groups of an anonymous one.
async function showInspectPolicy() {
  const who = $("inspect-who");
  const setting = state.realm.can_inspect_log_group;
  if (setting === undefined) { who.textContent = "the organization's owners"; return; }
  try {
    const { user_groups: groups } = await api("GET", "user_groups");
    const name = (id) => {
      const group = groups.find((g) => g.id === id);
      return group ? (ROLE_GROUPS[group.name] || group.name) : `group ${id}`;
    };
    if (typeof setting === "number") { who.textContent = name(setting); return; }
    const people = (setting.direct_members || []).map((id) => state.users.get(id)?.full_name || `User ${id}`);
    const parts = [...people, ...(setting.direct_subgroups || []).map(name)];
    who.textContent = parts.length ? parts.join(", ") : "nobody";
  } catch (error) {
    who.textContent = "unknown (the groups could not be loaded)";
  }
}

async function saveName() {
  try {
    await api("PATCH", "settings", { full_name: $("full-name").value.trim() });
    toast("Name saved.");
  } catch (error) {
    toast(`Could not save the name: ${error.message}`);
  }
}

async function saveStatus() {
  try {
    await api("POST", "users/me/status", { status_text: $("status-text").value.trim() });
    toast("Status saved.");
  } catch (error) {
    toast(`Could not save the status: ${error.message}`);
  }
}

async function saveSwitch(box) {
  const name = box.dataset.setting;
  if (box.checked && name === "enable_desktop_notifications" && window.Notification?.permission === "default") {
    Notification.requestPermission();
  }
  try {
    await api("PATCH", "settings", { [name]: box.checked });
    state.settings[name] = box.checked;
  } catch (error) {
    box.checked = !box.checked;
    toast(`Could not change the setting: ${error.message}`);
  }
}

async function loadSessions() {
  const list = clear($("sessions"));
  list.append(el("li", { class: "hint", text: "Loading…" }));
  try {
    const { sessions } = await api("GET", "sessions");
    clear(list).append(...sessions.sort((a, b) => b.current - a.current || b.started - a.started).map(session));
  } catch (error) {
    clear(list).append(el("li", { class: "hint", text: `Could not load sessions: ${error.message}` }));
  }
}

function session(s) {
  // The client string is whatever the browser sent: text only.
  return el("li", { class: "session" },
    el("div", { class: "session-text" },
      el("span", { class: "session-client", text: s.client || "Unknown browser" }),
      el("span", { class: "session-when", text: `${s.current ? "This browser · " : ""}since ${longTime(s.started)} · expires ${longTime(s.expires)}` })),
    el("button", { type: "button", text: s.current ? "Log out" : "End", attrs: { "aria-label": s.current ? "Log out of this browser" : `End the session of ${s.client || "another browser"}` },
      on: { click: () => end(s) } }));
}

async function end(s) {
  try {
    if (s.current) { await logout(); return; }
    await api("DELETE", `sessions/${encodeURIComponent(s.id)}`);
    loadSessions();
  } catch (error) {
    toast(`Could not end the session: ${error.message}`);
  }
}

export async function logout() {
  try {
    await api("POST", "logout");
    location.assign("/login/");
  } catch (error) {
    toast(`Could not log out: ${error.message}`);
  }
}

// Start-up and wiring: register and fetch the first messages in parallel, draw, then follow the
// event queue. The views read the state; this module decides when they redraw.

// First: it starts the requests the first screen waits for.
import { firstNarrow, firstPage, firstRegistration, rememberTheme } from "./start.js";
import { api } from "./api.js";
import { $ } from "./dom.js";
import { logout } from "./session.js";
import { state, load, apply, loadGroups } from "./state.js";
import * as narrows from "./narrow.js";
import { ui } from "./ui.js";
import { registerUntilDone, poll } from "./events.js";
import * as messages from "./messages.js";
import * as sidebar from "./sidebar.js";
import * as users from "./users.js";
import * as compose from "./compose.js";
import * as typing from "./typing.js";
import * as emoji from "./emoji.js";
import * as channels from "./channels.js";
import * as narrowbar from "./narrowbar.js";
import * as keys from "./keys.js";
import * as notify from "./notify.js";
import * as storage from "./storage.js";
import * as menu from "./menu.js";
import * as drafts from "./drafts.js";
import * as lazy from "./lazy.js";
import { useCollator } from "./names.js";

let typingExpiryMs = 15000;
// Inbox, Recent conversations, Drafts, Scheduled messages (views.js), and the settings pages
// (settings.js), once one was opened.
let views = null;
let settings = null;
// The address to go back to from the settings pages.
let beforeSettings = "#";

function refresh({ people = true } = {}) {
  sidebar.render();
  if (people) users.render();
  narrowbar.render();
  compose.refresh();
  typing.render();
  channels.refresh();
  views?.render();
}

// A narrow of messages, or one of the views (Inbox, Recent conversations) drawn in its place.
function show(narrow, firstPage, near) {
  menu.close();
  const view = narrows.viewOf(narrow);
  if (narrows.isSettingsView(view)) {
    views?.close();
    return lazy.settings().then((module) => { settings = module; return settings.open(view, beforeSettings); });
  }
  settings?.close();
  if (view) return lazy.views().then((module) => { views = module; return views.open(view); });
  views?.close();
  return messages.open(narrow, firstPage, near);
}

function navigate(narrow) {
  if (!narrows.isSettingsView(narrows.viewOf(ui.narrow))) beforeSettings = narrows.toHash(ui.narrow);
  ui.narrow = narrow;
  $("search").value = narrows.isSearch(narrow) ? narrows.toSearchText(narrow) : "";
  closePanels();
  compose.followNarrow(narrow);
  refresh();
  return show(narrow, undefined, narrows.nearOf(location.hash));
}

function onEvents(events) {
  for (const ev of events) {
    // One event this client cannot fold must not cost it the rest of the batch.
    try {
      apply(ev);
      messages.onEvent(ev);
      drafts.onEvent(ev);
      views?.onEvent(ev);
      settings?.onEvent(ev);
      if (ev.type === "user_settings") applySettings();
      if (ev.type === "typing") typing.onTyping(ev, typingExpiryMs);
      if (ev.type === "message") notify.onMessage(ev);
    } catch (error) {
      console.error("could not apply event", ev.type, error);
    }
  }
  refresh();
}

async function reload(reg) {
  load(reg);
  applySettings();
  loadUserGroups();
  refresh();
  await show(ui.narrow);
}

// The drafts the server keeps: a reload finds the words it interrupted.
async function loadDrafts() {
  try {
    drafts.load((await api("GET", "drafts")).drafts);
    compose.draftsLoaded();
    refresh();
  } catch {
    // The Drafts view asks again when opened.
  }
}

// The user groups decide what the person may do (perms.js); they come after the first screen.
async function loadUserGroups() {
  try {
    loadGroups((await api("GET", "user_groups")).user_groups);
    messages.redraw();
  } catch {
    // Without them no permission-gated control is offered; the next reload tries again.
  }
}

// ---- panels (phones and narrow windows) --------------------------------------------------------

function togglePanel(side) {
  const open = !document.body.classList.contains(`show-${side}`);
  closePanels();
  document.body.classList.toggle(`show-${side}`, open);
  $(`toggle-${side}`).setAttribute("aria-expanded", String(open));
  $("scrim").hidden = !open;
  if (open) $(side).querySelector("a, button, input")?.focus();
}

function closePanels() {
  const wasOpen = ["left", "right"].some((side) => document.body.classList.contains(`show-${side}`));
  for (const side of ["left", "right"]) {
    document.body.classList.remove(`show-${side}`);
    $(`toggle-${side}`).setAttribute("aria-expanded", "false");
  }
  $("scrim").hidden = true;
  return wasOpen;
}

// ---- presence ----------------------------------------------------------------------------------

async function ping() {
  try {
    const answer = await api("POST", "users/me/presence", {
      status: document.hidden ? "idle" : "active", ping_only: false, new_user_input: !document.hidden, slim_presence: true,
    });
    for (const [id, p] of Object.entries(answer.presences || {})) state.presence.set(Number(id), p);
    users.render();
    sidebar.render();
  } catch {
    // The event loop shows when the server is away; presence just waits for the next ping.
  }
}

// The person's display settings that act on the whole page: the theme (kept in the browser
// too, so that the next load starts in it before /register answers: start.js) and what Enter
// does in the compose box.
function applySettings() {
  const theme = { 2: "dark", 3: "light" }[state.settings.color_scheme] || "";
  document.documentElement.dataset.theme = theme;
  rememberTheme(theme);
  compose.useEnterSends(state.settings.enter_sends !== false);
}

// ---- start ---------------------------------------------------------------------------------------

function wire() {
  messages.setup();
  menu.setup();
  sidebar.setup();
  compose.setup();
  emoji.setup();
  channels.setup();
  users.setup();
  keys.setup({ closePanels, togglePanel });
  Object.assign(ui, {
    go: (narrow) => {
      const hash = narrows.toHash(narrow);
      if (hash === narrows.toHash(ui.narrow) && location.hash === hash) {
        // The conversation already open: the compose box still turns to it.
        compose.followNarrow(narrow);
        return;
      }
      location.hash = hash;
    },
    refresh,
    reply: compose.reply,
    startDm: compose.startDm,
    insertText: compose.insertText,
    restoreDraft: compose.restoreDraft,
    loadTopics: sidebar.loadTopics,
    pickEmoji: emoji.open,
  });
  addEventListener("hashchange", () => navigate(narrows.fromHash(location.hash)));
  // The words being written are saved as the page goes (a reload, another page in the tab).
  addEventListener("pagehide", compose.savePending);
  // Suggestions as the person types (a list the browser shows under the box).
  $("search").addEventListener("input", () => {
    $("search-suggestions").replaceChildren(...narrows.suggestions($("search").value).map((value) => Object.assign(document.createElement("option"), { value })));
  });
  $("search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    ui.go(narrows.parseSearch($("search").value.trim()));
    $("search").blur();
  });
  $("logout").addEventListener("click", logout);
  $("open-settings").addEventListener("click", () => { location.hash = "#settings/profile"; });
  $("toggle-left").addEventListener("click", () => togglePanel("left"));
  $("toggle-right").addEventListener("click", () => togglePanel("right"));
  $("scrim").addEventListener("click", closePanels);
  for (const button of document.querySelectorAll("dialog .close, dialog .cancel")) button.addEventListener("click", () => button.closest("dialog").close());
  // On phones a chosen conversation replaces the open panel.
  $("left").addEventListener("click", (e) => {
    const link = e.target.closest("a");
    if (!link) return;
    closePanels();
    // The conversation already open: no hashchange follows, but the compose box still turns
    // to it.
    if (new URL(link.href).hash === location.hash) compose.followNarrow(ui.narrow);
  });
  $("right").addEventListener("click", (e) => { if (e.target.closest("a")) closePanels(); });
}

async function main() {
  wire();
  const narrow = firstNarrow;
  const reg = await registerUntilDone(firstRegistration);
  load(reg);
  applySettings();
  typingExpiryMs = reg.server_typing_started_expiry_period_milliseconds || typingExpiryMs;
  ui.narrow = narrow;
  compose.followNarrow(narrow);
  refresh({ people: false });
  await show(narrow, firstPage, narrows.nearOf(location.hash));
  // The first usable screen: what scripts/web-first-screen.py measures from the login. Then
  // the lists are drawn again in the reader's collation, the people list (a thousand entries
  // in a large organization) with them.
  performance.mark("chronicle-first-screen");
  lazy.warm();
  useCollator();
  refresh();
  messages.catchUp(reg.max_message_id);
  loadUserGroups();
  loadDrafts();
  ping();
  setInterval(ping, state.pingEvery * 1000);
  storage.watch();
  poll(reg, { onEvents, onReload: reload });
}

main();

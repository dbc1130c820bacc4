// The audit page (served from a file: its CSP allows no inline script).
"use strict";
const api = "/api/v1";
let creds = null;          // {email, key}, kept in this tab only
let nextAfter = 0;         // where the next page of the listing starts
let filters = {};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

// With typed credentials through /api/v1; else through /json with the web client's session
// cookie (every call here is a read, so no CSRF token is needed).
async function call(path, params) {
  const url = new URL((creds ? api : "/json") + path, location.origin);
  for (const [k, v] of Object.entries(params || {})) if (v !== "" && v !== undefined) url.searchParams.set(k, v);
  const headers = creds ? { Authorization: "Basic " + btoa(creds.email + ":" + creds.key) } : {};
  const response = await fetch(url, { headers, credentials: "same-origin" });
  const body = await response.json();
  if (body.result !== "success") throw new Error(body.msg || ("HTTP " + response.status));
  return body;
}

function summary(payload) {
  return Object.entries(payload || {}).map(([k, v]) => {
    let text = typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v);
    if (text.length > 40) text = text.slice(0, 40) + "…";
    return k + "=" + text;
  }).join(" ");
}

async function signIn(email, key) {
  creds = { email, key };
  try {
    await call("/admin/events", { limit: 1 });
  } catch (error) {
    creds = null;
    throw error;
  }
  sessionStorage.setItem("chronicle-audit", JSON.stringify(creds));
  await show(email);
}

async function show(who) {
  document.getElementById("login").hidden = true;
  document.getElementById("app").hidden = false;
  document.getElementById("who").textContent = who;
  await load(true);
}

// An administrator signed in to the web client needs no API key here.
async function signInWithSession() {
  try {
    await call("/admin/events", { limit: 1 });
  } catch (error) {
    return false;
  }
  const me = await call("/users/me");
  await show(me.email);
  return true;
}

async function load(fresh) {
  const tbody = document.getElementById("events");
  const error = document.getElementById("list-error");
  error.textContent = "";
  if (fresh) { tbody.replaceChildren(); nextAfter = 0; }
  try {
    const body = await call("/admin/events", Object.assign({ after_seq: nextAfter, limit: 200 }, filters));
    for (const e of body.events) {
      const row = el("tr", { "data-seq": e.seq },
        el("td", { class: "seq" }, e.seq), el("td", { class: "time" }, e.time.replace("T", " ").slice(0, 19)),
        el("td", {}, e.actor === null ? "server" : "user " + e.actor), el("td", { class: "type" }, e.type),
        el("td", { class: "summary" }, summary(e.payload)));
      row.addEventListener("click", () => showEvent(e, row));
      tbody.append(row);
    }
    nextAfter = body.scanned_to_seq;
    document.getElementById("more").hidden = body.scanned_to_seq >= body.last_seq;
    document.getElementById("count").textContent = tbody.children.length + " shown; the log ends at " + body.last_seq;
  } catch (e) { error.textContent = e.message; }
}

async function showEvent(event, row) {
  for (const r of document.querySelectorAll("tbody tr.selected")) r.classList.remove("selected");
  row.classList.add("selected");
  document.getElementById("detail-title").textContent = "Event " + event.seq + ": " + event.type;
  const body = document.getElementById("detail-body");
  body.classList.remove("muted");
  const areaSelect = el("select", { id: "area" });
  const state = el("pre", { id: "state" }, "…");
  const changes = el("div", { id: "changes" }, "…");
  body.replaceChildren(
    el("div", { class: "muted" }, event.time + " by " + (event.actor === null ? "the server" : "user " + event.actor) + ", schema version " + event.schema_version),
    el("h2", {}, "Payload"), el("pre", {}, JSON.stringify(event.payload, null, 2)),
    el("h2", {}, "What it changed"), changes,
    el("h2", {}, "State as of this event: ", areaSelect), state);
  try {
    const diff = await call("/admin/diff", { from_seq: event.seq - 1, to_seq: event.seq });
    const areas = Object.entries(diff.diff.changes);
    changes.replaceChildren();
    if (areas.length === 0) changes.append(el("div", { class: "muted" }, "No projection changed (an event kept for the audit trail)."));
    for (const [area, list] of areas) {
      changes.append(el("div", {}, el("strong", {}, area)));
      for (const c of list) {
        const line = el("div", { class: "change" }, c.path + "  ");
        if ("added" in c) line.append(el("span", { class: "after" }, "+ " + JSON.stringify(c.added)));
        else if ("removed" in c) line.append(el("span", { class: "before" }, "− " + JSON.stringify(c.removed)));
        else line.append(el("span", { class: "before" }, JSON.stringify(c.before)), " → ", el("span", { class: "after" }, JSON.stringify(c.after)));
        changes.append(line);
      }
    }
    const first = areas.length ? areas[0][0] : "users";
    const dump = await call("/admin/projections", { at_seq: event.seq });
    for (const name of Object.keys(dump.projections).filter(k => k !== "seq")) {
      areaSelect.append(el("option", name === first ? { value: name, selected: "" } : { value: name }, name));
    }
    const show = () => { state.textContent = JSON.stringify(dump.projections[areaSelect.value], null, 2); };
    areaSelect.addEventListener("change", show);
    show();
  } catch (e) { changes.replaceChildren(el("div", { class: "error" }, e.message)); }
}

document.getElementById("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try { await signIn(document.getElementById("email").value.trim(), document.getElementById("key").value.trim()); }
  catch (e) { document.getElementById("login-error").textContent = e.message; }
});
document.getElementById("filters").addEventListener("submit", (ev) => {
  ev.preventDefault();
  filters = Object.fromEntries(new FormData(ev.target).entries());
  load(true);
});
document.getElementById("more").addEventListener("click", () => load(false));

(async () => {
  // Credentials in the address's fragment (#email=…&key=…, never sent to the server) sign in
  // at once, for scripted use; they are then removed from the address bar and history.
  const fragment = new URLSearchParams(location.hash.slice(1));
  const stored = sessionStorage.getItem("chronicle-audit");
  const given = fragment.get("email") && fragment.get("key") ? { email: fragment.get("email"), key: fragment.get("key") } : (stored && JSON.parse(stored));
  const wanted = fragment.get("seq");
  if (fragment.toString()) history.replaceState(null, "", location.pathname);
  // `#seq=N` opens that event (a link to one moment of the log).
  const open = () => {
    const row = wanted && document.querySelector('tbody tr[data-seq="' + Number(wanted) + '"]');
    if (row) row.click();
  };
  if (given) {
    try {
      await signIn(given.email, given.key);
      open();
      return;
    } catch (e) { document.getElementById("login-error").textContent = e.message; }
  } else if (await signInWithSession()) {
    open();
    return;
  }
  document.getElementById("login").hidden = false;
})();

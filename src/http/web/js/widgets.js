// Zulip's message widgets: a message that starts "/poll" or "/todo" carries its widget as its
// first submessage, and every vote, option, task or check is a submessage after it. The state
// is folded from the submessages each time the message is drawn (Zulip's rules: poll options
// are keyed "sender,idx", "canned,i" for the first ones; tasks "idx,sender", "i,canned"; only
// the author renames, in place here). Actions go to the server (POST /submessage) and come back as events.

import { api } from "./api.js";
import { el, toast } from "./dom.js";
import { state, userName } from "./state.js";
import { t } from "./texts.js";

const MAX_IDX = 1000;

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

// The message's widget, if it has one its sender started.
function widgetOf(m) {
  const first = (m.submessages || [])[0];
  if (!first || first.msg_type !== "widget" || first.sender_id !== m.sender_id) return null;
  const content = parse(first.content);
  if (!content || !["poll", "todo"].includes(content.widget_type)) return null;
  return content;
}

export const hasWidget = (m) => widgetOf(m) !== null;

function events(m) {
  return (m.submessages || []).slice(1).map((s) => ({ sender: s.sender_id, data: parse(s.content) }))
    .filter((e) => e.data && typeof e.data === "object");
}

function send(m, data) {
  return api("POST", "submessage", { message_id: m.id, msg_type: "widget", content: JSON.stringify(data) })
    .catch((error) => toast(t("common.that_did_not_work", { message: error.message })));
}

// The widget's element, or null for a message without one.
export function render(m) {
  const widget = widgetOf(m);
  if (!widget) return null;
  return widget.widget_type === "poll" ? poll(m, widget.extra_data || {}) : todo(m, widget.extra_data || {});
}

// The widget's heading: the poll's question or the list's title. Its author renames it in
// place (✎: a field, Enter or Save, Esc or Cancel), as Zulip's web app does; the new name goes
// out as a submessage and comes back as its event. A redraw meanwhile (another's vote) keeps the
// field open, its text kept by the message list with the other widget fields'.
const renaming = new Set();

function heading(m, text, fallback, label, dataOf) {
  const head = el("div", { class: "widget-head" });
  const shown = () => {
    head.replaceChildren(el("h4", { text: text || fallback }), m.sender_id === state.me.user_id
      ? el("button", { type: "button", class: "icon-btn small", text: "✎", attrs: { "aria-label": label },
        on: { click: () => { renaming.add(m.id); editing(); head.querySelector("input").focus(); } } })
      : null);
  };
  const editing = () => {
    const input = el("input", { value: text, attrs: { "aria-label": label, maxlength: "200" } });
    const stop = () => { renaming.delete(m.id); shown(); };
    input.addEventListener("keydown", (e) => { if (e.key === "Escape") { e.stopPropagation(); stop(); } });
    head.replaceChildren(el("form", { class: "widget-add", on: { submit: (e) => {
      e.preventDefault();
      const value = input.value.trim();
      renaming.delete(m.id);
      if (value && value !== text) send(m, dataOf(value));
      shown();
    } } }, input, el("button", { type: "submit", text: t("common.save") }), el("button", { type: "button", text: t("common.cancel"), on: { click: stop } })));
  };
  if (renaming.has(m.id)) editing(); else shown();
  return head;
}

// ---- poll ----------------------------------------------------------------------------------------

function pollState(m, extra) {
  let question = String(extra.question || "");
  const options = new Map();
  let myIdx = 1;
  const addOption = (sender, idx, text) => {
    if ([...options.values()].some((o) => o.text === text) || idx < 0 || idx > MAX_IDX) return;
    options.set(`${sender},${idx}`, { text, votes: new Set() });
    if (sender === state.me.user_id && myIdx <= idx) myIdx = idx + 1;
  };
  (extra.options || []).forEach((text, i) => addOption("canned", i, String(text)));
  for (const { sender, data } of events(m)) {
    if (data.type === "new_option" && typeof data.idx === "number" && typeof data.option === "string") addOption(sender, data.idx, data.option);
    else if (data.type === "question" && sender === m.sender_id && typeof data.question === "string") question = data.question;
    else if (data.type === "vote" && options.has(data.key) && (data.vote === 1 || data.vote === -1)) {
      const votes = options.get(data.key).votes;
      if (data.vote === 1) votes.add(sender); else votes.delete(sender);
    }
  }
  return { question, options, myIdx };
}

function poll(m, extra) {
  const { question, options, myIdx } = pollState(m, extra);
  const list = el("ul", { class: "widget-options" }, [...options].map(([key, option]) => {
    const mine = option.votes.has(state.me.user_id);
    const names = [...option.votes].map(userName).join(", ");
    return el("li", {},
      el("button", { type: "button", class: `vote${mine ? " on" : ""}`, text: String(option.votes.size),
        attrs: { "aria-pressed": String(mine), "aria-label": t(mine ? "widgets.remove_your_vote_for" : "widgets.vote_for", { option: option.text, count: option.votes.size }) },
        on: { click: () => send(m, { type: "vote", key, vote: mine ? -1 : 1 }) } }),
      el("span", { class: "widget-text", text: option.text }),
      names ? el("span", { class: "widget-note", text: names }) : null);
  }));
  const input = el("input", { attrs: { "aria-label": t("widgets.new_option"), placeholder: t("widgets.new_option"), maxlength: "200" } });
  const form = el("form", { class: "widget-add", on: { submit: (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    send(m, { type: "new_option", idx: myIdx, option: text });
  } } }, input, el("button", { type: "submit", text: t("widgets.add_option") }));
  return el("div", { class: "widget poll-widget" }, heading(m, question, t("widgets.poll"), t("widgets.edit_the_question"), (value) => ({ type: "question", question: value })), list, form);
}

// ---- todo ----------------------------------------------------------------------------------------

function todoState(m, extra) {
  let title = String(extra.task_list_title || "");
  const tasks = new Map();
  let myIdx = 1;
  const addTask = (sender, idx, task, desc, completed) => {
    if ([...tasks.values()].some((item) => item.task === task) || idx < 0 || idx > MAX_IDX) return;
    tasks.set(`${idx},${sender}`, { task, desc, completed });
    if (sender === state.me.user_id && myIdx <= idx) myIdx = idx + 1;
  };
  (extra.tasks || []).forEach((item, i) => addTask("canned", i, String(item.task || ""), String(item.desc || ""), false));
  for (const { sender, data } of events(m)) {
    if (data.type === "new_task" && typeof data.key === "number" && typeof data.task === "string") {
      addTask(sender, data.key, data.task, String(data.desc || ""), Boolean(data.completed));
    } else if (data.type === "strike" && tasks.has(data.key)) {
      const task = tasks.get(data.key);
      task.completed = !task.completed;
    } else if (data.type === "new_task_list_title" && sender === m.sender_id && typeof data.title === "string") {
      title = data.title;
    }
  }
  return { title, tasks, myIdx };
}

function todo(m, extra) {
  const { title, tasks, myIdx } = todoState(m, extra);
  const list = el("ul", { class: "widget-options" }, [...tasks].map(([key, item]) => {
    const box = el("input", { type: "checkbox", checked: item.completed, attrs: { "aria-label": t("widgets.task_done", { task: item.task }) },
      on: { change: () => send(m, { type: "strike", key }) } });
    return el("li", { class: item.completed ? "done" : null },
      el("label", { class: "check" }, box, el("strong", { class: "widget-text", text: item.task }),
        item.desc ? el("span", { class: "widget-note", text: item.desc }) : null));
  }));
  const task = el("input", { attrs: { "aria-label": t("widgets.new_task"), placeholder: t("widgets.new_task"), maxlength: "200" } });
  const desc = el("input", { attrs: { "aria-label": t("common.description"), placeholder: t("common.description"), maxlength: "200" } });
  const form = el("form", { class: "widget-add", on: { submit: (e) => {
    e.preventDefault();
    const text = task.value.trim();
    if (!text) return;
    send(m, { type: "new_task", key: myIdx, task: text, desc: desc.value.trim(), completed: false });
    task.value = "";
    desc.value = "";
  } } }, task, desc, el("button", { type: "submit", text: t("widgets.add_task") }));
  return el("div", { class: "widget todo-widget" }, heading(m, title, t("widgets.task_list"), t("widgets.edit_the_title"), (value) => ({ type: "new_task_list_title", title: value })), list, form);
}

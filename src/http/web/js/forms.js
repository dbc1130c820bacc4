// The settings pages' building blocks: a labelled control per setting that saves itself when
// changed (and goes back to the saved value when the server refuses), a group-setting picker, a
// form that submits once at a time, and the table rows of lists with actions. Everything shown
// goes in through textContent and attributes (dom.js).

import { el, toast } from "./dom.js";
import { api } from "./api.js";
import { state } from "./state.js";
import { t } from "./texts.js";

let ids = 0;
const nextId = () => `setting-${++ids}`;

// A control's value as the API takes it.
function read(spec, input) {
  if (spec.kind === "bool") return input.checked;
  if (spec.kind === "choice") return spec.options[input.selectedIndex][0];
  if (spec.kind === "number") return input.value === "" ? null : Number(input.value);
  return input.value.trim();
}

// Shows a value in a control, unless the person is changing it (`force`: even then, as when
// the server refused what they chose). A choice the list lacks (set elsewhere, or a value this
// page has no words for) is added to it as it is, rather than shown as another.
export function show(spec, input, value, force = false) {
  if (document.activeElement === input && !force) return;
  if (spec.kind === "bool") input.checked = Boolean(value);
  else if (spec.kind === "choice") {
    let index = spec.options.findIndex(([v]) => String(v) === String(value));
    if (index < 0) {
      spec.options.push([value, spec.unlisted ? spec.unlisted(value) : String(value)]);
      input.append(el("option", { text: spec.options[spec.options.length - 1][1] }));
      index = spec.options.length - 1;
    }
    input.selectedIndex = index;
  } else input.value = value ?? "";
}

// One setting: spec {key, label, kind: bool|choice|number|text|long, options: [[value, label]],
// unlisted(value) (words for a value the options lack), hint, min, max, maxLength, disabled};
// `save(key, value)` sends it. The row keeps its input, spec, save and the value last saved
// (`row.saved`), so live updates can show new values (`update`).
export function control(spec, value, save) {
  const id = nextId();
  const attrs = { min: spec.min, max: spec.max, "aria-describedby": spec.hint ? `${id}-hint` : undefined };
  let input;
  if (spec.kind === "bool") input = el("input", { type: "checkbox", id, attrs });
  else if (spec.kind === "choice") input = el("select", { id, attrs }, spec.options.map(([, label]) => el("option", { text: label })));
  else if (spec.kind === "long") input = el("textarea", { id, rows: 3, attrs, maxLength: spec.maxLength });
  else input = el("input", { id, type: spec.kind === "number" ? "number" : "text", attrs, maxLength: spec.maxLength });
  input.dataset.key = spec.key;
  input.disabled = Boolean(spec.disabled);
  show(spec, input, value);
  input.addEventListener("change", async () => {
    const next = read(spec, input);
    // The row's `data-state`: saving, then saved or refused (the visible "Saved" fades).
    row.dataset.state = "saving";
    try {
      await save(spec.key, next);
      row.saved = next;
      row.dataset.state = "saved";
      flash(row, t("forms.saved"));
    } catch (error) {
      show(spec, input, row.saved, true);
      row.dataset.state = "refused";
      flash(row, "");
      toast(t("forms.could_not_save", { label: spec.label, message: error.message }));
    }
  });
  const label = el("label", { for: id, text: spec.label });
  const hint = spec.hint ? el("span", { class: "hint", id: `${id}-hint`, text: spec.hint }) : null;
  const status = el("span", { class: "saved", attrs: { role: "status" } });
  const row = spec.kind === "bool"
    ? el("div", { class: "pref check-pref" }, el("label", { class: "check", for: id }, input, ` ${spec.label}`), status, hint)
    : el("div", { class: "pref" }, label, input, status, hint);
  Object.assign(row, { input, spec, save, saved: value });
  return row;
}

// Shows a new value in a control's row, in place; a group setting whose value is not among its
// choices (an anonymous group) gets a new row. Returns the row now in the page.
export function update(row, value) {
  const listed = !row.spec.group || (typeof value !== "object" && row.spec.options.some(([v]) => String(v) === String(value)));
  if (listed) {
    row.saved = value;
    show(row.spec, row.input, value);
    return row;
  }
  const fresh = row.spec.group
    ? groupControl(row.spec.group, row.spec.key, row.spec.label, value, row.save, { disabled: row.spec.disabled, hint: row.spec.hint })
    : control(row.spec, value, row.save);
  row.replaceWith(fresh);
  return fresh;
}

function flash(row, text) {
  const status = row.querySelector(".saved");
  status.textContent = text;
  clearTimeout(row.flashTimer);
  if (text) row.flashTimer = setTimeout(() => { status.textContent = ""; }, 3000);
}

// A fieldset of settings read by `valueOf` and sent by `save`, with `refresh()` showing their
// current values again.
export function fieldset(title, specs, valueOf, save) {
  const rows = specs.map((spec) => control(spec, valueOf(spec.key), save));
  const refresh = () => { for (const row of rows) update(row, valueOf(row.spec.key)); };
  return { node: el("fieldset", { class: "prefs" }, el("legend", { text: title }), rows), refresh };
}

// Puts fieldsets in a page; the handler returned refreshes them on events of `type`.
export function liveFieldsets(box, sets, type) {
  box.append(...sets.map((set) => set.node));
  return (ev) => { if (ev.type === type) for (const set of sets) set.refresh(); };
}

// ---- group settings ----------------------------------------------------------------------------

const SYSTEM_GROUPS = [
  ["role:everyone", t("forms.everyone_guests_included")],
  ["role:members", t("common.members")],
  ["role:fullmembers", t("forms.full_members")],
  ["role:moderators", t("common.moderators_administrators_and_owners")],
  ["role:administrators", t("common.administrators_and_owners")],
  ["role:owners", t("forms.owners")],
  ["role:nobody", t("common.nobody")],
];

const groupByName = (name) => [...state.groups.entries()].find(([, g]) => g.name === name)?.[0];

// The groups a group setting may name: the system groups in their order, then the organization's
// groups by name (deactivated ones left out), as the server allows for the setting
// (`server_supported_permission_settings`: some take no named groups, or not "nobody" or
// "everyone").
function groupChoices(config = {}) {
  const system = SYSTEM_GROUPS
    .filter(([name]) => (name !== "role:nobody" || config.allow_nobody_group !== false) && (name !== "role:everyone" || config.allow_everyone_group !== false))
    .map(([name, label]) => [groupByName(name), label]).filter(([id]) => id !== undefined);
  const named = config.require_system_group ? [] : [...state.groups.entries()]
    .filter(([, g]) => !g.name.startsWith("role:") && !g.deactivated)
    .sort((a, b) => a[1].name.localeCompare(b[1].name))
    .map(([id, g]) => [id, g.name]);
  return [...system, ...named];
}

// A group setting in words: a group's label, or the people and groups of an anonymous one.
export function groupSettingText(value) {
  const label = (id) => SYSTEM_GROUPS.find(([name]) => name === state.groups.get(id)?.name)?.[1] || state.groups.get(id)?.name || t("forms.group", { id });
  if (typeof value === "number") return label(value);
  if (!value || typeof value !== "object") return t("common.nobody");
  const parts = [...(value.direct_members || []).map((id) => state.users.get(id)?.full_name || t("common.user", { id })), ...(value.direct_subgroups || []).map(label)];
  return parts.length ? parts.join(", ") : t("common.nobody");
}

// A picker for a group setting of `scope` ("realm", "stream" or "group"). An anonymous group
// (people and groups, set through the API) is kept as the first choice, in words, until another
// is picked. `save(key, groupId)`.
export function groupControl(scope, key, label, value, save, { disabled, hint } = {}) {
  const options = groupChoices(state.permissionSettings?.[scope]?.[key]);
  if (typeof value !== "number") options.unshift([value, groupSettingText(value)]);
  return control({ key, label, kind: "choice", options, disabled, hint, group: scope, unlisted: groupSettingText }, value, save);
}

// ---- forms and lists ---------------------------------------------------------------------------

// Draws a part of a page again: now, or, while the person is in one of its controls, once they
// have left it (a redraw would take the control from under them).
export function redrawWhenFree(box, draw) {
  if (!box.contains(document.activeElement)) {
    draw();
    return;
  }
  if (box.dataset.redraw) return;
  box.dataset.redraw = "1";
  const later = () => setTimeout(() => {
    if (box.contains(document.activeElement)) return;
    box.removeEventListener("focusout", later);
    delete box.dataset.redraw;
    draw();
  });
  box.addEventListener("focusout", later);
}

// A form whose submit runs `run(form)` once at a time; an error is shown in the form.
export function form(props, children, run) {
  const error = el("p", { class: "form-error", attrs: { role: "alert" }, hidden: true });
  const node = el("form", { ...props, on: { submit: async (e) => {
    e.preventDefault();
    if (node.dataset.busy) return;
    node.dataset.busy = "1";
    error.hidden = true;
    try {
      await run(node);
    } catch (failure) {
      error.textContent = failure.message;
      error.hidden = false;
    } finally {
      delete node.dataset.busy;
    }
  } } }, children, error);
  return node;
}

// A labelled field for a form: el("input"/"select"/"textarea") with an id, and its label.
export function field(label, input, hint) {
  input.id ||= nextId();
  return el("div", { class: "pref" }, el("label", { for: input.id, text: label }), input, hint ? el("span", { class: "hint", text: hint }) : null);
}

// A table of items, or `empty` (a text) when there are none: `columns` [[heading, item -> text or
// node]]; `actions(item)` gives buttons.
export function table(caption, empty, columns, items, actions, keyOf) {
  if (!items.length) return el("p", { class: "empty", text: empty });
  const head = el("tr", {}, columns.map(([heading]) => el("th", { attrs: { scope: "col" }, text: heading })), actions ? el("th", { attrs: { scope: "col" } }, el("span", { class: "visually-hidden", text: t("forms.actions") })) : null);
  const rows = items.map((item) => el("tr", { dataset: { key: String(keyOf(item)) } },
    columns.map(([, cell]) => { const value = cell(item); return el("td", {}, value instanceof Node ? value : String(value ?? "")); }),
    actions ? el("td", { class: "row-actions" }, actions(item)) : null));
  return el("table", { class: "settings-table" }, el("caption", { class: "visually-hidden", text: caption }), el("thead", {}, head), el("tbody", {}, rows));
}

// A picture upload: a file input (hidden; its label is the button) that sends the chosen file to
// `path`, then toasts the text of `savedKey` or of `failedKey` ("…: {message}"); the new picture
// arrives by its event.
export function picturePicker(id, text, path, [savedKey, failedKey]) {
  const file = el("input", { type: "file", id, class: "visually-hidden", accept: "image/png,image/jpeg,image/gif,image/webp" });
  file.addEventListener("change", () => {
    if (!file.files.length) return;
    const data = new FormData();
    data.append("file", file.files[0]);
    file.value = "";
    api("POST", path, data).then(() => toast(t(savedKey)), (error) => toast(t(failedKey, { message: error.message })));
  });
  return [file, el("label", { for: id, class: "button small", text })];
}

// An editor under a list (a linkifier, a profile field, a channel folder): one open at a time,
// Save and Cancel; `fields` are the form's rows, `save()` sends them, then `close()` runs.
export function editor(id, title, fields, save, close) {
  return el("section", { id, class: "editor", attrs: { "aria-label": title } },
    el("h3", { text: title }),
    form({ class: "stack-form narrow-form" }, [...fields, el("div", { class: "row-actions" },
      el("button", { type: "submit", class: "primary", text: t("common.save") }),
      button(t("common.cancel"), close))], async () => { await save(); close(); }));
}

// "Move up" and "Move down" for an item of an ordered list (linkifiers, profile fields, channel
// folders): `save(ids)` sends the new order of every item's id; the first item has no "up" and
// the last no "down". `name` is the item's name for the buttons' accessible names.
export function moveButtons(ids, id, name, failedKey, save) {
  const at = ids.indexOf(id);
  const move = (by) => (e) => {
    const order = [...ids];
    order.splice(at, 1);
    order.splice(at + by, 0, id);
    return act(e.currentTarget, failedKey, () => save(order));
  };
  return [
    at > 0 ? button("↑", move(-1), { attrs: { "aria-label": t("forms.move_up", { name }) } }) : null,
    at < ids.length - 1 ? button("↓", move(1), { attrs: { "aria-label": t("forms.move_down", { name }) } }) : null,
  ];
}

export const button = (text, onClick, props = {}) => el("button", { type: "button", class: "small", text, ...props, on: { click: onClick } });

// Runs a request from a button, with the button disabled meanwhile; a failure becomes a toast,
// the text of `failedKey` ("Could not …: {message}").
export async function act(buttonNode, failedKey, run) {
  buttonNode.disabled = true;
  try {
    await run();
  } catch (error) {
    toast(t(failedKey, { message: error.message }));
  } finally {
    buttonNode.disabled = false;
  }
}

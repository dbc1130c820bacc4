// Small DOM helpers. Everything built here goes in through textContent and attributes, never
// HTML strings: user-typed text (names, topics, status) cannot become markup.

export const $ = (id) => document.getElementById(id);

// el("button", {class: "x", text: t("common.save"), attrs: {"aria-label": t(…)}, on: {click: fn}}, ...children)
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "attrs") for (const [a, v] of Object.entries(value)) { if (v !== undefined && v !== null && v !== false) node.setAttribute(a, v === true ? "" : v); }
    else if (key === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "for") node.htmlFor = value; // a label's control (the property's name differs)
    else node[key] = value;
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// node.append(...children), leaving out the null, undefined and false of conditional parts
// (which append would write out as text).
export function add(node, ...children) {
  node.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

let toastTimer = 0;
// One line of feedback at the bottom of the screen; role=alert on the element reads it out.
export function toast(message) {
  const box = $("toast");
  box.textContent = message;
  box.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { box.hidden = true; }, 6000);
}

export function badge(count) {
  return count > 0 ? el("span", { class: "badge", text: count > 999 ? "999+" : String(count) }) : null;
}

// Typing in a field must not trigger shortcuts or close things.
export function isTyping(target) {
  return target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

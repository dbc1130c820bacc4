// One popup menu at a time (a message's actions): opened from a button, operated by keyboard as
// a WAI-ARIA menu (arrows, Home, End, Enter, Esc, Tab), closed by a choice, a click elsewhere
// or a scroll. Items are [label, action] pairs; the caller leaves out what may not be done.

import { $, el } from "./dom.js";

let opener = null;

export const isOpen = () => !$("popup-menu").hidden;

export function open(anchor, label, items) {
  close();
  const menu = $("popup-menu");
  menu.setAttribute("aria-label", label);
  menu.replaceChildren(...items.map(([text, action]) => el("button", {
    type: "button", text, attrs: { role: "menuitem", tabindex: "-1" },
    on: { click: () => { close(); action(); } },
  })));
  menu.hidden = false;
  opener = anchor;
  anchor.setAttribute("aria-expanded", "true");
  // Below the button, or above it when it sits low; kept inside the window.
  const at = anchor.getBoundingClientRect();
  const height = menu.offsetHeight;
  const top = at.bottom + height + 8 > innerHeight ? Math.max(8, at.top - height - 4) : at.bottom + 4;
  menu.style.top = `${top}px`;
  menu.style.left = `${Math.max(8, Math.min(at.right - menu.offsetWidth, innerWidth - menu.offsetWidth - 8))}px`;
  menu.firstElementChild?.focus();
}

export function close() {
  const menu = $("popup-menu");
  if (menu.hidden) return;
  menu.hidden = true;
  menu.replaceChildren();
  if (opener?.isConnected) {
    opener.setAttribute("aria-expanded", "false");
    if (!document.activeElement || document.activeElement === document.body) opener.focus();
  }
  opener = null;
}

export function setup() {
  const menu = $("popup-menu");
  menu.addEventListener("keydown", (e) => {
    const items = [...menu.children];
    const at = items.indexOf(document.activeElement);
    const go = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: items.length - 1 }[e.key];
    if (go !== undefined) {
      e.preventDefault();
      items[(go + items.length) % items.length]?.focus();
    } else if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      const back = opener;
      close();
      back?.focus();
    } else if (e.key === "Tab") {
      close();
    }
  });
  document.addEventListener("pointerdown", (e) => { if (!menu.contains(e.target) && e.target !== opener) close(); }, true);
  $("messages").addEventListener("scroll", close, { passive: true });
  addEventListener("resize", close);
}

// The settings' two-factor authentication: its state, enrolment (QR code, key, first code,
// then the backup codes shown once), new backup codes and switching it off (each with a code).
// Everything shown is the server's text set with textContent.

import { api } from "./api.js";
import { el, clear, toast } from "./dom.js";

export async function showTwoFactor(box) {
  clear(box).append(el("p", { class: "hint", text: "Loading…" }));
  let status;
  try {
    status = await api("GET", "users/me/two_factor");
  } catch (error) {
    clear(box).append(el("p", { class: "hint", text: `Could not load it: ${error.message}` }));
    return;
  }
  if (!status.available && !status.enabled) {
    clear(box).append(el("p", { class: "hint", text: "This server does not offer two-factor authentication." }));
    return;
  }
  if (!status.enabled) {
    clear(box).append(
      el("p", { text: status.required
        ? "Your organization requires it for your role: set it up now."
        : "Off. With it on, logging in with your password also asks for a code from an authenticator app on your phone." }),
      el("button", { type: "button", text: "Set up two-factor authentication", on: { click: () => enrol(box) } }));
    return;
  }
  const left = status.backup_codes_left;
  clear(box).append(
    el("p", { id: "two-factor-state", text: `On. ${left} backup code${left === 1 ? "" : "s"} left.` }),
    codeForm("New backup codes", async (code) => {
      const { backup_codes: codes } = await api("POST", "users/me/two_factor/backup_codes", { code });
      showCodes(box, codes);
    }),
    codeForm("Turn off", async (code) => {
      await api("DELETE", "users/me/two_factor", { code });
      toast("Two-factor authentication is off.");
      showTwoFactor(box);
    }));
}

// A code field with one button: the action runs with the code typed.
function codeForm(label, action) {
  const input = el("input", { type: "text", attrs: { inputmode: "numeric", autocomplete: "one-time-code", maxlength: "20", "aria-label": `Code for “${label}”`, placeholder: "Code" } });
  const form = el("form", { class: "two-factor-action" }, input, el("button", { type: "submit", text: label }));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await action(input.value.trim());
    } catch (error) {
      toast(error.message);
    }
  });
  return form;
}

async function enrol(box) {
  let offer;
  try {
    offer = await api("POST", "users/me/two_factor/setup");
  } catch (error) {
    toast(`Could not start: ${error.message}`);
    return;
  }
  const qr = el("img", { class: "two-factor-qr", attrs: { alt: "QR code of your key", width: "200", height: "200",
    src: `/json/users/me/two_factor/qr.svg?setup_token=${encodeURIComponent(offer.setup_token)}` } });
  clear(box).append(
    el("p", { text: "Scan this code with an authenticator app (or type the key into it), then enter the code it shows." }),
    qr,
    el("p", {}, "Key: ", el("code", { class: "two-factor-secret", text: offer.secret.replace(/(.{4})/g, "$1 ").trim() })),
    codeForm("Turn on", async (code) => {
      const { backup_codes: codes } = await api("POST", "users/me/two_factor", { setup_token: offer.setup_token, code });
      showCodes(box, codes);
    }));
}

function showCodes(box, codes) {
  clear(box).append(
    el("p", { text: "Your backup codes. Each works once, in place of a code, if you lose your phone. Keep them somewhere safe: they are not shown again." }),
    el("ul", { class: "backup-codes", id: "backup-codes" }, ...codes.map((c) => el("li", {}, el("code", { text: c })))),
    el("button", { type: "button", text: "Done", on: { click: () => showTwoFactor(box) } }));
}

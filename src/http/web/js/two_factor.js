// The settings' two-factor authentication: its state, enrolment (QR code, key, first code,
// then the backup codes shown once), new backup codes and switching it off (each with a code).
// Everything shown is the server's text set with textContent.

import { api } from "./api.js";
import { el, clear, toast } from "./dom.js";
import { t } from "./texts.js";

export async function showTwoFactor(box) {
  clear(box).append(el("p", { class: "hint", text: t("common.loading") }));
  let status;
  try {
    status = await api("GET", "users/me/two_factor");
  } catch (error) {
    clear(box).append(el("p", { class: "hint", text: t("two_factor.could_not_load_it", { message: error.message }) }));
    return;
  }
  if (!status.available && !status.enabled) {
    clear(box).append(el("p", { class: "hint", text: t("two_factor.this_server_does_not_offer_two") }));
    return;
  }
  if (!status.enabled) {
    clear(box).append(
      el("p", { text: status.required
        ? t("two_factor.your_organization_requires_it_for_your")
        : t("two_factor.off_with_it_on_logging_in") }),
      el("button", { type: "button", text: t("two_factor.set_up_two_factor_authentication"), on: { click: () => enrol(box) } }));
    return;
  }
  const left = status.backup_codes_left;
  clear(box).append(
    el("p", { id: "two-factor-state", text: t(left === 1 ? "two_factor.on_one_code_left" : "two_factor.on_codes_left", { count: left }) }),
    codeForm(t("two_factor.new_backup_codes"), async (code) => {
      const { backup_codes: codes } = await api("POST", "users/me/two_factor/backup_codes", { code });
      showCodes(box, codes);
    }),
    codeForm(t("two_factor.turn_off"), async (code) => {
      await api("DELETE", "users/me/two_factor", { code });
      toast(t("two_factor.two_factor_authentication_is_off"));
      showTwoFactor(box);
    }));
}

// A code field with one button: the action runs with the code typed.
function codeForm(label, action) {
  const input = el("input", { type: "text", attrs: { inputmode: "numeric", autocomplete: "one-time-code", maxlength: "20", "aria-label": t("two_factor.code_for", { label }), placeholder: t("common.code") } });
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
    toast(t("two_factor.could_not_start", { message: error.message }));
    return;
  }
  const qr = el("img", { class: "two-factor-qr", attrs: { alt: t("common.qr_code_of_your_key"), width: "200", height: "200",
    src: `/json/users/me/two_factor/qr.svg?setup_token=${encodeURIComponent(offer.setup_token)}` } });
  clear(box).append(
    el("p", { text: t("two_factor.scan_this_code_with_an_authenticator") }),
    qr,
    el("p", {}, t("two_factor.key"), el("code", { class: "two-factor-secret", text: offer.secret.replace(/(.{4})/g, "$1 ").trim() })),
    codeForm(t("two_factor.turn_on"), async (code) => {
      const { backup_codes: codes } = await api("POST", "users/me/two_factor", { setup_token: offer.setup_token, code });
      showCodes(box, codes);
    }));
}

function showCodes(box, codes) {
  clear(box).append(
    el("p", { text: t("two_factor.your_backup_codes_each_works_once") }),
    el("ul", { class: "backup-codes", id: "backup-codes" }, ...codes.map((c) => el("li", {}, el("code", { text: c })))),
    el("button", { type: "button", text: t("two_factor.done"), on: { click: () => showTwoFactor(box) } }));
}

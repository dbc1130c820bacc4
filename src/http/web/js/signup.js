// The sign-up pages post by themselves; this module explains a refused attempt (a fixed message
// per code: the query string is never shown), shows the address a confirmation link is for (as
// text), and places the cursor.
import { t } from "./texts.js";

const MESSAGES = {
  origin: t("common.that_request_came_from_another_site"),
  missing: t("common.please_enter_your_email_address"),
  invalid: t("signup.that_is_not_an_email_address"),
  domain: t("common.your_email_address_is_not_in"),
  invite_required: t("signup.this_organization_requires_an_invitation_to"),
  disabled: t("signup.this_organization_signs_you_in_through"),
  expired: t("signup.that_link_has_expired_or_is"),
  taken: t("signup.an_account_with_this_address_exists"),
  name: "Please enter a name (at most 100 characters, without the characters Zulip does not allow).",
  name_taken: t("signup.someone_here_has_that_name_already"),
  short: t("common.the_password_is_too_short_at"),
  long: t("common.the_password_is_too_long_at"),
  busy: t("common.the_server_is_busy_please_try"),
};

const code = new URLSearchParams(location.search).get("error");
const box = document.getElementById("signup-error");
if (code && box) {
  box.textContent = MESSAGES[code] || t("common.that_did_not_work_please_try");
  box.hidden = false;
}

// A confirmation link's key is its address and expiry as base64url JSON, then a MAC.
const match = location.pathname.match(/^\/accounts\/do_confirm\/([A-Za-z0-9_-]+)\./);
const shown = document.getElementById("signup-email");
if (match && shown) {
  try {
    const base64 = match[1].replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    shown.textContent = JSON.parse(new TextDecoder().decode(bytes)).email;
  } catch {
    shown.textContent = "";
  }
}
const first = document.querySelector("form input:not([type=hidden])");
if (first) {
  first.focus();
}

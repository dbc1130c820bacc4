// The password-reset pages post by themselves; this module only explains a refused attempt and
// places the cursor. Messages are fixed per code: the query string is never shown.
import { t } from "./texts.js";

const MESSAGES = {
  origin: t("common.that_request_came_from_another_site"),
  missing: t("common.please_enter_your_email_address"),
  disabled: t("reset.this_organization_signs_you_in_through"),
  expired: t("reset.that_link_has_expired_or_has"),
  mismatch: t("reset.the_two_passwords_are_not_the"),
  short: t("common.the_password_is_too_short_at"),
  long: t("common.the_password_is_too_long_at"),
  busy: t("common.the_server_is_busy_please_try"),
};

const code = new URLSearchParams(location.search).get("error");
const box = document.getElementById("reset-error");
if (code && box) {
  box.textContent = MESSAGES[code] || t("common.that_did_not_work_please_try");
  box.hidden = false;
}
const first = document.querySelector("form input:not([type=hidden])");
if (first) {
  first.focus();
}

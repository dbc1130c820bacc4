// The form posts by itself; this module only explains a failed attempt and places the cursor.
// Messages are fixed per code: the query string is never shown, so a crafted link cannot put
// its own words on the page.
import { t } from "./texts.js";

const MESSAGES = {
  invalid: t("login.wrong_email_or_password_please_try"),
  deactivated: t("login.this_account_has_been_deactivated"),
  rate_limited: t("login.too_many_attempts_please_wait_a"),
  origin: t("login.that_login_request_came_from_another"),
  missing: t("login.please_enter_both_your_email_and"),
  unavailable: t("login.signing_in_is_not_possible_right"),
  sso_unavailable: t("login.the_sign_in_service_cannot_be"),
  sso_refused: t("login.the_sign_in_service_s_answer"),
  sso_expired: t("login.that_sign_in_took_too_long"),
  sso_no_address: t("login.the_sign_in_service_did_not"),
  sso_no_account: t("login.there_is_no_account_here_for"),
  sso_domain: t("common.your_email_address_is_not_in"),
  sso_signup_refused: t("login.an_account_could_not_be_made"),
  invalid_code: t("login.invalid_token_please_make_sure_you"),
  code_rate_limited: t("login.too_many_wrong_codes_please_wait"),
  two_factor_expired: t("login.that_login_took_too_long_please"),
};

const query = new URLSearchParams(location.search);
const code = query.get("error");
// The mobile app's sign-in through the browser: the pad goes back with the form.
const otp = query.get("mobile_flow_otp");
if (otp && /^[0-9a-fA-F]{64}$/.test(otp)) {
  const input = document.createElement("input");
  input.type = "hidden";
  input.name = "mobile_flow_otp";
  input.value = otp;
  document.querySelector("form.login-form").append(input);
}
const box = document.getElementById("login-error");
if (code) {
  box.textContent = MESSAGES[code] || t("login.login_failed_please_try_again");
  box.hidden = false;
} else if (query.get("reset") === "done") {
  box.textContent = t("login.your_password_has_been_changed_log");
  box.classList.add("login-notice");
  box.hidden = false;
}
// The second step of a login with two-factor authentication: a code, or (when the
// organization requires it and the account has none yet) enrolment first.
const secondStep = query.get("two_factor");
if (secondStep === "code" || secondStep === "setup") {
  document.querySelector("form.login-form").hidden = true;
  document.getElementById("forgot-password").hidden = true;
  document.getElementById("signup-link").hidden = true;
  document.getElementById("two-factor-form").hidden = false;
  if (secondStep === "setup") {
    document.getElementById("two-factor-setup").hidden = false;
    document.getElementById("two-factor-hint").textContent = t("login.enter_the_6_digit_code_your");
    fetch("/login/two_factor/setup")
      .then((answer) => answer.json())
      .then((offer) => {
        if (offer.result !== "success") throw new Error(offer.msg);
        document.getElementById("two-factor-secret").textContent = offer.secret.replace(/(.{4})/g, "$1 ").trim();
        document.getElementById("two-factor-qr").src = "/login/two_factor/qr.svg";
      })
      .catch(() => {
        box.textContent = MESSAGES.two_factor_expired;
        box.hidden = false;
      });
  }
  document.getElementById("code").focus();
} else {
  const target = code === "invalid" ? "password" : "username";
  document.getElementById(target).focus();
}

// With a directory (LDAP), people may sign in with their directory username as well; each
// identity provider gets a button (with the mobile app's pad, when the app started this).
fetch("/api/v1/server_settings")
  .then((answer) => answer.json())
  .then((settings) => {
    if (settings.require_email_format_usernames === false) {
      document.querySelector('label[for="username"]').textContent = t("login.email_or_username");
      document.getElementById("username").type = "text";
    }
    const external = settings.external_authentication_methods || [];
    if (external.length > 0 && !secondStep) {
      const list = document.createElement("div");
      list.className = "login-external";
      for (const method of external) {
        if (typeof method.login_url !== "string" || !method.login_url.startsWith("/")) continue;
        const link = document.createElement("a");
        link.className = "button wide";
        link.href = otp && /^[0-9a-fA-F]{64}$/.test(otp)
          ? `${method.login_url}?mobile_flow_otp=${otp}`
          : method.login_url;
        link.textContent = t("login.log_in_with", { display_name: method.display_name });
        list.append(link);
      }
      document.querySelector("form.login-form").after(list);
    }
    if (settings.authentication_methods && settings.authentication_methods.password === false) {
      document.querySelector("form.login-form").hidden = true;
    }
  })
  .catch(() => {});

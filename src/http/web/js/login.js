// The form posts by itself; this module only explains a failed attempt and places the cursor.
// Messages are fixed per code: the query string is never shown, so a crafted link cannot put
// its own words on the page.
const MESSAGES = {
  invalid: "Wrong email or password. Please try again.",
  deactivated: "This account has been deactivated.",
  rate_limited: "Too many attempts. Please wait a minute and try again.",
  origin: "That login request came from another site and was refused. Please log in here.",
  missing: "Please enter both your email and your password.",
  unavailable: "Signing in is not possible right now (the directory may be unreachable). Please try again in a moment.",
  sso_unavailable: "The sign-in service cannot be reached right now. Please try again in a moment.",
  sso_refused: "The sign-in service's answer could not be accepted. Please try again.",
  sso_expired: "That sign-in took too long or was started in another browser. Please start again.",
  sso_no_address: "The sign-in service did not give a verified email address.",
  sso_no_account: "There is no account here for that address. Ask an administrator for an invitation.",
  sso_domain: "Your email address is not in one of the domains allowed to join this organization.",
  sso_signup_refused: "An account could not be made from what the sign-in service says about you (your name or address). Ask an administrator.",
  invalid_code: "Invalid token. Please make sure you have entered it correctly.",
  code_rate_limited: "Too many wrong codes. Please wait a quarter of an hour and try again.",
  two_factor_expired: "That login took too long. Please log in again.",
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
  box.textContent = MESSAGES[code] || "Login failed. Please try again.";
  box.hidden = false;
} else if (query.get("reset") === "done") {
  box.textContent = "Your password has been changed. Log in with the new one.";
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
    document.getElementById("two-factor-hint").textContent = "Enter the 6-digit code your authenticator app shows now.";
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
      document.querySelector('label[for="username"]').textContent = "Email or username";
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
        link.textContent = `Log in with ${method.display_name}`;
        list.append(link);
      }
      document.querySelector("form.login-form").after(list);
    }
    if (settings.authentication_methods && settings.authentication_methods.password === false) {
      document.querySelector("form.login-form").hidden = true;
    }
  })
  .catch(() => {});

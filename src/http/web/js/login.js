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
const target = code === "invalid" ? "password" : "username";
document.getElementById(target).focus();

// With a directory (LDAP), people may sign in with their directory username as well.
fetch("/api/v1/server_settings")
  .then((answer) => answer.json())
  .then((settings) => {
    if (settings.require_email_format_usernames === false) {
      document.querySelector('label[for="username"]').textContent = "Email or username";
      document.getElementById("username").type = "text";
    }
  })
  .catch(() => {});

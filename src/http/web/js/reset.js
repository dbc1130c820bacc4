// The password-reset pages post by themselves; this module only explains a refused attempt and
// places the cursor. Messages are fixed per code: the query string is never shown.
const MESSAGES = {
  origin: "That request came from another site and was refused. Please try again here.",
  missing: "Please enter your email address.",
  disabled: "This organization signs you in through its directory: change your password there.",
  expired: "That link has expired or has already been used. Ask for a new one here.",
  mismatch: "The two passwords are not the same. Please type them again.",
  short: "The password is too short: at least 6 characters, please.",
  long: "The password is too long: at most 100 characters, please.",
  busy: "The server is busy. Please try again in a moment.",
};

const code = new URLSearchParams(location.search).get("error");
const box = document.getElementById("reset-error");
if (code && box) {
  box.textContent = MESSAGES[code] || "That did not work. Please try again.";
  box.hidden = false;
}
const first = document.querySelector("form input:not([type=hidden])");
if (first) {
  first.focus();
}

// The sign-up pages post by themselves; this module explains a refused attempt (a fixed message
// per code: the query string is never shown), shows the address a confirmation link is for (as
// text), and places the cursor.
const MESSAGES = {
  origin: "That request came from another site and was refused. Please try again here.",
  missing: "Please enter your email address.",
  invalid: "That is not an email address this organization can take. Please check it.",
  domain: "Your email address is not in one of the domains allowed to join this organization.",
  invite_required: "This organization requires an invitation to join. Ask an administrator for one.",
  disabled: "This organization signs you in through its directory: ask an administrator for an account.",
  expired: "That link has expired or is not valid. Ask for a new one here.",
  taken: "An account with this address exists already. Log in, or reset its password.",
  name: "Please enter a name (at most 100 characters, without the characters Zulip does not allow).",
  name_taken: "Someone here has that name already: this organization wants names to be unique.",
  short: "The password is too short: at least 6 characters, please.",
  long: "The password is too long: at most 100 characters, please.",
  busy: "The server is busy. Please try again in a moment.",
};

const code = new URLSearchParams(location.search).get("error");
const box = document.getElementById("signup-error");
if (code && box) {
  box.textContent = MESSAGES[code] || "That did not work. Please try again.";
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

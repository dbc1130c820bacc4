// The requests the first screen waits for, started as early as the page can: the page loads
// this module on its own (async) as well as through app.js, and it imports only the two small
// modules that make requests, so /register and the first page of messages travel while the rest
// of the app is still arriving and being compiled.

import { fromHash, viewOf } from "./address.js";
import { register, fetchPage } from "./requests.js";

export const firstNarrow = fromHash(location.hash);
// Inbox and Recent conversations are not narrows of messages: their first screen needs none.
export const firstPage = viewOf(firstNarrow) ? Promise.resolve(null) : fetchPage(firstNarrow, "newest");
export const firstRegistration = register();

// The theme the person chose (their `color_scheme`), kept in the browser so that the page starts
// in it before /register answers; app.js keeps it up to date. Empty: the system's.
const THEME_KEY = "chronicle-theme";
try {
  document.documentElement.dataset.theme = localStorage.getItem(THEME_KEY) || "";
} catch {
  // Storage refused (a private window's settings): the system's theme until /register answers.
}
export function rememberTheme(theme) {
  try {
    localStorage.setItem(THEME_KEY, theme);
  } catch {
    // As above.
  }
}

// Failures are handled where these are awaited (messages.open, registerUntilDone).
firstPage.catch(() => {});
firstRegistration.catch(() => {});

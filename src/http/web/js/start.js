// The requests the first screen waits for, started as early as the page can: app.js imports
// this module before any other, so /register and the first page of messages travel while the
// rest of the app is still being compiled and run.

import { register } from "./events.js";
import { fetchPage, fromHash } from "./narrow.js";

export const firstNarrow = fromHash(location.hash);
export const firstPage = fetchPage(firstNarrow, "newest");
export const firstRegistration = register();
// Failures are handled where these are awaited (messages.open, registerUntilDone).
firstPage.catch(() => {});
firstRegistration.catch(() => {});

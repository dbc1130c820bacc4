// The banner that says writes are refused: the server's disk is below its reserve or its
// storage failed (`STORAGE_FULL`, `STORAGE_UNAVAILABLE`). Anyone whose write was refused sees
// it; administrators also see it as soon as the server reports it on `/ready`, before anyone
// tries to write. It goes away by itself once writes go through again.

import { $ } from "./dom.js";
import { isAdmin } from "./state.js";
import { t } from "./texts.js";

export const STORAGE_CODES = new Set(["STORAGE_FULL", "STORAGE_UNAVAILABLE"]);

const ADMIN_CHECK_MS = 60000;
const RECHECK_MS = 10000;
let recheck = null;

function show(text) {
  const banner = $("storage-banner");
  banner.textContent = text;
  banner.hidden = false;
}

function hide() {
  $("storage-banner").hidden = true;
  clearTimeout(recheck);
  recheck = null;
}

// What `/ready` says about writes; nothing when it cannot be asked.
async function writesNow() {
  try {
    const response = await fetch("/ready", { credentials: "omit", cache: "no-store" });
    return await response.json();
  } catch {
    return null;
  }
}

async function check() {
  const ready = await writesNow();
  if (!ready || !ready.writes) return;
  if (ready.writes === "open") {
    hide();
    return;
  }
  const said = ready.writes_refused_with && ready.writes_refused_with.msg;
  if (said && (isAdmin() || !$("storage-banner").hidden)) show(said);
  clearTimeout(recheck);
  recheck = setTimeout(check, RECHECK_MS);
}

// A write was refused for the storage's sake: say so until writes go through again.
export function refused(body) {
  show((body && body.msg) || t("storage.the_server_cannot_save_anything_right"));
  clearTimeout(recheck);
  recheck = setTimeout(check, RECHECK_MS);
}

// Administrators hear of a refusing server without having to write first.
export function watch() {
  if (!isAdmin()) return;
  check();
  setInterval(check, ADMIN_CHECK_MS);
}

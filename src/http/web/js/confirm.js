// The one confirmation dialog (#confirm-dialog): a question, what it does, and the action. The
// action's error is shown in the dialog, which stays open so the person can try again or cancel.

import { $ } from "./dom.js";

let confirmed = null;

$("confirm-ok").addEventListener("click", async () => {
  const run = confirmed;
  if (!run) return;
  $("confirm-ok").disabled = true;
  try {
    await run();
    $("confirm-dialog").close();
  } catch (error) {
    $("confirm-error").textContent = error.message;
    $("confirm-error").hidden = false;
  } finally {
    $("confirm-ok").disabled = false;
  }
});
$("confirm-dialog").addEventListener("close", () => { confirmed = null; });

// ask({title, text, ok, run}): `run` is async; it throws to keep the dialog open with its message.
export function ask({ title, text, ok, run }) {
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = ok;
  $("confirm-error").hidden = true;
  confirmed = run;
  $("confirm-dialog").showModal();
  $("confirm-ok").focus();
}

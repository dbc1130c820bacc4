// The one confirmation dialog (#confirm-dialog): a question, what it does, and the action. The
// action's error is shown in the dialog, which stays open so the person can try again or cancel.

import { $ } from "./dom.js";

let confirmed = null;
// Each question asked; an answer that comes after another question was asked is not for it.
let asked = 0;

$("confirm-ok").addEventListener("click", async () => {
  const run = confirmed;
  const question = asked;
  if (!run) return;
  $("confirm-ok").disabled = true;
  try {
    await run();
    if (question === asked) $("confirm-dialog").close();
  } catch (error) {
    if (question !== asked) return;
    $("confirm-error").textContent = error.message;
    $("confirm-error").hidden = false;
  } finally {
    if (question === asked) $("confirm-ok").disabled = false;
  }
});
$("confirm-dialog").addEventListener("close", () => { confirmed = null; });

// ask({title, text, ok, run}): `run` is async; it throws to keep the dialog open with its message.
export function ask({ title, text, ok, run }) {
  asked++;
  $("confirm-ok").disabled = false;
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = ok;
  $("confirm-error").hidden = true;
  confirmed = run;
  $("confirm-dialog").showModal();
  $("confirm-ok").focus();
}

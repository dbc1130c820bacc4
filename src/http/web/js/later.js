// Sending later: the times offered for a scheduled message or a reminder (Zulip's: tomorrow at
// 9:00 and 16:00, Monday at 9:00, or a time of one's own), and the dialog for one's own time.

import { $, toast } from "./dom.js";
import * as menu from "./menu.js";
import { clock } from "./time.js";
import { t } from "./texts.js";

const DAYS = [t("common.sunday"), t("common.monday"), t("common.tuesday"), t("common.wednesday"), t("common.thursday"), t("common.friday"), t("common.saturday")];

function dayAt(daysAhead, hour, now = new Date()) {
  return new Date(now.getFullYear(), now.getMonth(), now.getDate() + daysAhead, hour, 0, 0);
}

// The offered times as [label, Date], from `now`.
export function offers(now = new Date()) {
  const untilMonday = ((8 - now.getDay()) % 7) || 7;
  const list = [
    [t("later.tomorrow_at", { clock: clock(dayAt(1, 9, now)) }), dayAt(1, 9, now)],
    [t("later.tomorrow_at", { clock: clock(dayAt(1, 16, now)) }), dayAt(1, 16, now)],
  ];
  if (untilMonday > 1) list.push([t("later.at", { day: DAYS[1], clock: clock(dayAt(untilMonday, 9, now)) }), dayAt(untilMonday, 9, now)]);
  return list;
}

let chosen = null;

// The dialog's form, wired once, when this module first loads.
$("schedule-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const at = new Date($("schedule-at").value);
  if (Number.isNaN(at.getTime()) || at <= new Date()) {
    $("schedule-error").textContent = t("later.choose_a_time_in_the_future");
    $("schedule-error").hidden = false;
    return;
  }
  try {
    await chosen(Math.floor(at.getTime() / 1000));
    $("schedule-dialog").close();
  } catch (error) {
    $("schedule-error").textContent = error.message;
    $("schedule-error").hidden = false;
  }
});

// A menu of times at `anchor`; `pick(seconds)` does the work (and may fail with an ApiError).
export function choose(anchor, title, pick) {
  const items = offers().map(([label, date]) => [label, () => pick(Math.floor(date.getTime() / 1000)).catch((error) => toast(error.message))]);
  items.push([t("later.custom_time"), () => custom(title, pick)]);
  menu.open(anchor, title, items);
}

function custom(title, pick) {
  chosen = pick;
  $("schedule-title").textContent = title;
  const soon = new Date(Date.now() + 3600 * 1000);
  soon.setMinutes(0, 0, 0);
  const local = new Date(soon.getTime() - soon.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
  $("schedule-at").value = local;
  $("schedule-at").min = new Date(Date.now() - new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 16);
  $("schedule-error").hidden = true;
  $("schedule-dialog").showModal();
  $("schedule-at").focus();
}

// Times as people read them: "14:05" (or "2:05 PM") today, "Mon 14:05" this week, "3 Mar 14:05"
// this year, "3 Mar 2023" before; 12- or 24-hour by the person's `twenty_four_hour_time`
// setting, as in Zulip, in the browser's time zone. Written by hand in English (the client's
// language) rather than with Intl.DateTimeFormat, whose first use costs tens of milliseconds
// of locale data on the first screen.

import { state } from "./state.js";
import { t } from "./texts.js";

const DAYS = [t("common.sunday"), t("common.monday"), t("common.tuesday"), t("common.wednesday"), t("common.thursday"), t("common.friday"), t("common.saturday")];
const MONTHS = [t("time.january"), t("time.february"), t("time.march"), t("time.april"), t("time.may"), t("time.june"), t("time.july"), t("time.august"), t("time.september"),
  t("time.october"), t("time.november"), t("time.december")];

const pad = (n) => String(n).padStart(2, "0");

export function clock(date) {
  const hours = date.getHours();
  const minutes = pad(date.getMinutes());
  if (state.settings?.twenty_four_hour_time) return `${pad(hours)}:${minutes}`;
  return t(hours < 12 ? "time.clock_am" : "time.clock_pm", { time: `${hours % 12 || 12}:${minutes}` });
}

export function shortTime(seconds) {
  const date = new Date(seconds * 1000);
  const now = new Date();
  if (date.toDateString() === now.toDateString()) return clock(date);
  if (now - date < 6 * 86400 * 1000 && now > date) return `${DAYS[date.getDay()].slice(0, 3)} ${clock(date)}`;
  const day = `${date.getDate()} ${MONTHS[date.getMonth()].slice(0, 3)}`;
  return date.getFullYear() === now.getFullYear() ? `${day} ${clock(date)}` : `${day} ${date.getFullYear()}`;
}

// "Wednesday, 25 November 2026, 14:05".
export function longTime(seconds) {
  const date = new Date(seconds * 1000);
  return `${DAYS[date.getDay()]}, ${date.getDate()} ${MONTHS[date.getMonth()]} ${date.getFullYear()}, ${clock(date)}`;
}

export const isoTime = (seconds) => new Date(seconds * 1000).toISOString();

// The local calendar day of a time, as a comparable key ("2026-11-30").
export function dayOf(seconds) {
  const date = new Date(seconds * 1000);
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

// A day as the message list's date separators name it: "Today", "Yesterday", "Mon 3 Mar"
// this year, "3 Mar 2023" before.
export function dayLabel(seconds, now = new Date()) {
  const date = new Date(seconds * 1000);
  const yesterday = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1);
  if (date.toDateString() === now.toDateString()) return t("time.today");
  if (date.toDateString() === yesterday.toDateString()) return t("time.yesterday");
  const day = `${date.getDate()} ${MONTHS[date.getMonth()].slice(0, 3)}`;
  return date.getFullYear() === now.getFullYear() ? `${DAYS[date.getDay()].slice(0, 3)} ${day}` : `${day} ${date.getFullYear()}`;
}

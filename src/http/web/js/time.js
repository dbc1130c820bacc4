// Times as people read them: "14:05" today, "Mon 14:05" this week, "3 Mar 14:05" otherwise.
const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const weekday = new Intl.DateTimeFormat(undefined, { weekday: "short", hour: "2-digit", minute: "2-digit" });
const dated = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
const full = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "short" });

export function shortTime(seconds) {
  const date = new Date(seconds * 1000);
  const age = Date.now() - date.getTime();
  if (date.toDateString() === new Date().toDateString()) return clock.format(date);
  if (age < 6 * 86400 * 1000) return weekday.format(date);
  return dated.format(date);
}

export const longTime = (seconds) => full.format(new Date(seconds * 1000));
export const isoTime = (seconds) => new Date(seconds * 1000).toISOString();

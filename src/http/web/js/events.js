// Registration and the event long-poll. A lost queue means registering again and reloading the
// state; an unreachable server means the "Reconnecting…" banner and retries with backoff.

import { api } from "./api.js";
import { register } from "./requests.js";
import { $ } from "./dom.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// Jitter spreads many clients coming back after a server restart.
const backoff = (delay) => Math.min(delay * 2, 30000) * (0.8 + Math.random() * 0.4);

function reconnecting(on) {
  $("reconnecting").hidden = !on;
}

// Registers until it succeeds, showing the banner while the server is away. `started` is a
// registration already under way (the first screen's), tried before any new one.
export async function registerUntilDone(started) {
  let delay = 1000;
  let attempt = started;
  for (;;) {
    try {
      const reg = await (attempt || register());
      attempt = null;
      reconnecting(false);
      return reg;
    } catch (error) {
      attempt = null;
      if (error.status === 401) throw error;
      reconnecting(true);
      await sleep(delay);
      delay = backoff(delay);
    }
  }
}

// A page the browser keeps in its back/forward cache must not keep its long-poll open: a
// browser opens at most six connections to a server, so a few visits away and back used them
// all and the next load hung. The poll stops when the page is put away (`pagehide`, `freeze`)
// and starts again when it is shown (`pageshow`, `resume`); a queue that expired meanwhile is
// registered again like any lost queue.
const away = { paused: false, controller: null, wake: () => {}, shown: Promise.resolve() };

function putAway() {
  if (away.paused) return;
  away.paused = true;
  away.shown = new Promise((resolve) => { away.wake = resolve; });
  away.controller?.abort();
}

function bringBack() {
  if (!away.paused) return;
  away.paused = false;
  away.wake();
}

addEventListener("pagehide", putAway);
addEventListener("pageshow", bringBack);
document.addEventListener("freeze", putAway);
document.addEventListener("resume", bringBack);

// Polls forever. `onEvents(events)` folds a batch in; `onReload(reg)` starts over from a fresh
// registration.
export async function poll(reg, { onEvents, onReload }) {
  let queueId = reg.queue_id;
  let lastId = reg.last_event_id;
  let delay = 1000;
  for (;;) {
    if (away.paused) await away.shown;
    try {
      away.controller = new AbortController();
      const answer = await api("GET", "events", { queue_id: queueId, last_event_id: lastId },
        { signal: away.controller.signal });
      reconnecting(false);
      delay = 1000;
      if (!answer.events.length) continue;
      lastId = Math.max(lastId, ...answer.events.map((e) => e.id));
      const real = answer.events.filter((e) => e.type !== "heartbeat");
      if (real.length) deliver(onEvents, real);
    } catch (error) {
      if (error.status === 401) return;
      // Stopped on purpose: the page was put away; it waits to be shown again.
      if (away.paused) continue;
      if (error.code === "BAD_EVENT_QUEUE_ID") {
        const fresh = await registerUntilDone();
        ({ queue_id: queueId, last_event_id: lastId } = fresh);
        await onReload(fresh);
        continue;
      }
      // Away (network, 5xx, 429) or refused for a reason a retry may fix: wait, then retry.
      reconnecting(error.transient);
      await sleep(delay);
      delay = backoff(delay);
    }
  }
}

// A bug in a view must not stop the event loop: later events would be lost.
function deliver(onEvents, events) {
  try {
    onEvents(events);
  } catch (error) {
    console.error("event handling failed", error);
  }
}

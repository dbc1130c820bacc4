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

// Polls forever. `onEvents(events)` folds a batch in; `onReload(reg)` starts over from a fresh
// registration.
export async function poll(reg, { onEvents, onReload }) {
  let queueId = reg.queue_id;
  let lastId = reg.last_event_id;
  let delay = 1000;
  for (;;) {
    try {
      const answer = await api("GET", "events", { queue_id: queueId, last_event_id: lastId });
      reconnecting(false);
      delay = 1000;
      if (!answer.events.length) continue;
      lastId = Math.max(lastId, ...answer.events.map((e) => e.id));
      const real = answer.events.filter((e) => e.type !== "heartbeat");
      if (real.length) deliver(onEvents, real);
    } catch (error) {
      if (error.status === 401) return;
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

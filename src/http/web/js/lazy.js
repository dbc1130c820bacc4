// Modules the first screen does not need: fetched on first use, and warmed right after the
// first screen (`warm`), so that a click finds them loaded. Each getter returns the module's
// promise, the same one every time. Keeping them out of the first screen's imports keeps its
// cost where it was as the client grows (docs/web-client.md, "Speed").

const once = (load) => {
  let loading = null;
  return () => (loading ||= load());
};

export const fixing = once(() => import("./fixing.js"));
export const views = once(() => import("./views.js"));
export const cards = once(() => import("./cards.js"));
export const later = once(() => import("./later.js"));
export const typeahead = once(() => import("./typeahead.js"));
export const uploads = once(() => import("./uploads.js"));
export const lightbox = once(() => import("./lightbox.js"));
// The settings pages: not warmed, as they are opened far less often than the rest.
export const settings = once(() => import("./settings.js"));

export function warm() {
  for (const load of [fixing, views, cards, later, typeahead, uploads, lightbox]) load().catch(() => {});
}

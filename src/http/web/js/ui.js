// Cross-view calls go through this hub (filled in by app.js), so view modules need not import
// each other: go(narrow), refresh(), reply(message), startDm(userIds), insertText(text), restoreDraft(draft),
// loadTopics(streamId), pickEmoji(anchor, onPick), and the current narrow.
export const ui = {
  narrow: [],
  go: () => {},
  refresh: () => {},
  reply: () => {},
  startDm: () => {},
  insertText: () => {},
  restoreDraft: () => {},
  loadTopics: async () => {},
  pickEmoji: () => {},
};

// Lists are rebuilt from the state after every event batch. Replacing elements that did not
// change would lose a click in progress (the pressed element disappears) and the keyboard
// focus, so only a list that differs is swapped in, and focus goes back to the same item.
export function swapIfChanged(container, nodes) {
  const fresh = document.createElement(container.tagName);
  fresh.append(...nodes);
  if (fresh.innerHTML === container.innerHTML) return;
  const key = container.contains(document.activeElement) ? document.activeElement.dataset.key : null;
  container.replaceChildren(...fresh.childNodes);
  if (key) container.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}

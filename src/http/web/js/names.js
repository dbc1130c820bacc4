// Ordering names (channels, people). A collator orders them as the reader's language does, but
// its first use costs tens of milliseconds of locale data, so the first screen sorts by the
// lower-cased text and the collator is made right after it (`useCollator`), when the lists are
// drawn again.

let collator = null;

export function compareNames(a, b) {
  if (collator) return collator.compare(a, b);
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
}

export function useCollator() {
  collator ??= new Intl.Collator(undefined, { sensitivity: "base", numeric: true });
}

// The address of a narrow (#narrow/...), in Zulip's form. No imports: the first requests
// (start.js) read the address before the rest of the app has loaded.

// Zulip's address encoding: percent-encoding with "." for "%" (so "plans 2" is "plans.202"),
// which Zulip's own links in rendered messages use too.
const encodeHash = (text) => encodeURIComponent(text).replace(/\./g, "%2E").replace(/%/g, ".");

function decodeHash(text) {
  try {
    return decodeURIComponent(text.replace(/\./g, "%"));
  } catch {
    return text;
  }
}

// The views that are not narrows of messages, at Zulip's addresses (#inbox, #recent, #drafts,
// #scheduled).
export const VIEWS = {
  inbox: [{ operator: "view", operand: "inbox" }],
  recent: [{ operator: "view", operand: "recent" }],
  drafts: [{ operator: "view", operand: "drafts" }],
  scheduled: [{ operator: "view", operand: "scheduled" }],
};
// The settings pages, at Zulip's addresses: #settings/<section> and #organization/<section>.
export const isSettingsView = (view) => /^(settings|organization)\//.test(view || "");
export const viewOf = (narrow) => (narrow.length === 1 && narrow[0].operator === "view" ? narrow[0].operand : null);

export function toHash(narrow) {
  if (!narrow.length) return "#";
  if (viewOf(narrow)) return `#${viewOf(narrow)}`;
  // A negated term is "-operator", as in Zulip's addresses.
  return "#narrow/" + narrow.map((t) => `${t.negated ? "-" : ""}${t.operator}/${encodeHash(Array.isArray(t.operand) ? t.operand.join(",") : String(t.operand))}`).join("/");
}

export function fromHash(hash) {
  const parts = hash.replace(/^#/, "").split("/");
  if (VIEWS[parts[0]] && parts.length === 1) return VIEWS[parts[0]];
  if (parts[0] === "settings" || parts[0] === "organization") return [{ operator: "view", operand: `${parts[0]}/${parts[1] || ""}` }];
  if (parts[0] !== "narrow") return [];
  const out = [];
  for (let i = 1; i + 1 < parts.length; i += 2) {
    const negated = parts[i].startsWith("-");
    const operator = negated ? parts[i].slice(1) : parts[i];
    // A message link's anchor, not a term (nearOf reads it).
    if (operator === "near" || operator === "with") continue;
    let operand = decodeHash(parts[i + 1]);
    // Ids, or (for a search by addresses the client does not know) the addresses as typed.
    if (operator === "dm" || operator === "pm-with") {
      if (/^\d+(,\d+)*$/.test(operand)) operand = operand.split(",").map(Number);
      else if (/^\d+-/.test(operand)) operand = [parseInt(operand, 10)];
    }
    // Our own links carry the id; Zulip-style ones "id-name".
    else if ((operator === "channel" || operator === "stream") && /^\d+(-|$)/.test(operand)) operand = parseInt(operand, 10);
    else if (operator === "dm-including" && /^\d+$/.test(operand)) operand = Number(operand);
    const name = { stream: "channel", "pm-with": "dm", streams: "channels" }[operator] || operator;
    out.push(negated ? { operator: name, operand, negated: true } : { operator: name, operand });
  }
  return out;
}

// The message a link points at (#narrow/.../near/ID), if any.
export function nearOf(hash) {
  const match = hash.match(/\/(?:near|with)\/(\d+)(?:\/|$)/);
  return match ? Number(match[1]) : null;
}

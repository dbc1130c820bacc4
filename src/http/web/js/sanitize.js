// The only door for HTML into the page. The server renders message Markdown to HTML; this
// module keeps an allowlist of that HTML and nothing else. The page's CSP enforces Trusted
// Types, so no HTML sink (innerHTML, DOMParser, ...) takes a plain string anywhere.

import { longTime } from "./time.js";

const ELEMENTS = new Set([
  "P", "BR", "STRONG", "B", "EM", "I", "DEL", "S", "A", "CODE", "PRE", "BLOCKQUOTE", "UL", "OL",
  "LI", "SPAN", "DIV", "IMG", "H1", "H2", "H3", "H4", "H5", "H6", "TABLE", "THEAD", "TBODY",
  "TFOOT", "TR", "TH", "TD", "HR", "SUP", "SUB", "TIME", "DETAILS", "SUMMARY", "MARK", "KBD",
]);
const ATTRIBUTES = new Set(["class", "title", "alt", "datetime", "data-user-id", "data-stream-id", "href", "src"]);
// Elements whose whole content is dropped, not just the tag.
const DROP_WITH_CONTENT = new Set(["SCRIPT", "STYLE", "TEMPLATE", "IFRAME", "OBJECT", "EMBED", "SVG", "MATH", "NOSCRIPT", "TITLE", "TEXTAREA", "SELECT", "FORM"]);

function linkTarget(value) {
  try {
    const url = new URL(value, location.href);
    return ["http:", "https:", "mailto:"].includes(url.protocol) ? url : null;
  } catch {
    return null;
  }
}

function cleanAttributes(node) {
  for (const attr of [...node.attributes]) {
    const name = attr.name.toLowerCase();
    const keep = ATTRIBUTES.has(name) &&
      (name !== "href" || (node.tagName === "A" && linkTarget(attr.value))) &&
      (name !== "src" || (node.tagName === "IMG" && sameOrigin(attr.value)));
    if (!keep) node.removeAttribute(attr.name);
  }
  if (node.tagName === "A" && node.hasAttribute("href")) {
    const url = linkTarget(node.getAttribute("href"));
    if (url.origin !== location.origin) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  }
}

function sameOrigin(value) {
  try {
    return new URL(value, location.href).origin === location.origin;
  } catch {
    return false;
  }
}

function cleanTree(root) {
  for (const node of [...root.childNodes]) {
    if (node.nodeType === Node.TEXT_NODE) continue;
    if (node.nodeType !== Node.ELEMENT_NODE || DROP_WITH_CONTENT.has(node.tagName)) {
      node.remove();
      continue;
    }
    cleanTree(node);
    if (!ELEMENTS.has(node.tagName)) {
      node.replaceWith(...node.childNodes); // unknown wrapper: keep its (already clean) text
      continue;
    }
    cleanAttributes(node);
  }
}

// The policy is the one way to hand text to an HTML parser on this page (the CSP names only it,
// and it is created here, first, so no other module can have it). It passes text through only
// while `parse` below is running, and into an inert document at that: no scripts run and
// nothing loads there. Everything else gets an error.
let parsing = false;

const policy = window.trustedTypes
  ? window.trustedTypes.createPolicy("chronicle-message-html", {
    createHTML: (html) => {
      if (!parsing) throw new TypeError("HTML enters the page only through setMessageHtml");
      return html;
    },
  })
  : null;

// The server's HTML parsed in an inert document and cleaned to the allowlist: its body.
function parse(html) {
  parsing = true;
  let raw;
  try {
    raw = policy ? policy.createHTML(html) : html;
  } finally {
    parsing = false;
  }
  const doc = new DOMParser().parseFromString(raw, "text/html");
  cleanTree(doc.body);
  return doc.body;
}

// "1f468-200d-1f4bb" -> the character sequence; null when the class holds no valid code.
export function emojiChar(code) {
  try {
    return String.fromCodePoint(...code.split("-").map((part) => parseInt(part, 16)));
  } catch {
    return null;
  }
}

// Server HTML shows Unicode emoji as <span class="emoji emoji-1f600">:grinning:</span>.
function showEmoji(root) {
  for (const span of root.querySelectorAll("span.emoji")) {
    const code = [...span.classList].find((c) => /^emoji-[0-9a-f-]+$/.test(c));
    const char = code && emojiChar(code.slice(6));
    if (char) {
      span.textContent = char;
      span.setAttribute("role", "img");
      span.setAttribute("aria-label", span.title || code);
    }
  }
}

// Put server-rendered message HTML into `container`: the cleaned nodes themselves are moved in,
// so the HTML is parsed once and never serialized and parsed again (where parsers can disagree).
export function setMessageHtml(container, html) {
  const body = parse(html || "");
  container.replaceChildren(...[...body.childNodes].map((node) => document.adoptNode(node)));
  showEmoji(container);
  showTimes(container);
}

// A message's text without its markup (for a desktop notification), from the cleaned tree.
export function messageText(html) {
  return parse(html || "").textContent.replace(/\s+/g, " ").trim();
}

// A global time (<time datetime="…Z">, Zulip's `<time:…>`) shows in the reader's time zone and
// clock, as in Zulip's web app; what the sender wrote stays as its tooltip.
function showTimes(root) {
  for (const time of root.querySelectorAll("time[datetime]")) {
    const ms = Date.parse(time.getAttribute("datetime"));
    if (Number.isNaN(ms)) continue;
    time.title = time.textContent;
    time.textContent = longTime(ms / 1000);
  }
}

// The image viewer: a click on a message's image preview opens the image itself, large, in a
// dialog; ← and → (or the buttons) go to the previous and next image of the messages shown, and
// "Open original" opens the file in a new tab. Ctrl-, ⌘-, Shift- or middle-clicks keep the
// link's own behaviour. The addresses are the previews' own links (same-origin uploads, kept
// by the sanitizer); the title is set as text.

import { $ } from "./dom.js";
import { t } from "./texts.js";

let images = [];
let index = 0;

$("lightbox-prev").addEventListener("click", () => step(-1));
$("lightbox-next").addEventListener("click", () => step(1));
$("lightbox").addEventListener("keydown", (e) => {
  if (e.key === "ArrowLeft") { e.preventDefault(); step(-1); }
  if (e.key === "ArrowRight") { e.preventDefault(); step(1); }
});
$("lightbox").addEventListener("close", () => { $("lightbox-image").removeAttribute("src"); images = []; });

export function open(link) {
  images = [...document.querySelectorAll("#message-list .message_inline_image a")];
  index = Math.max(images.indexOf(link), 0);
  show();
  $("lightbox").showModal();
}

function step(by) {
  const next = index + by;
  if (next < 0 || next >= images.length) return;
  index = next;
  show();
}

function show() {
  const link = images[index];
  if (!link) return;
  const title = link.title || t("common.image");
  $("lightbox-title").textContent = title;
  $("lightbox-image").alt = title;
  $("lightbox-image").src = link.href;
  $("lightbox-original").href = link.href;
  $("lightbox-count").textContent = images.length > 1 ? t("lightbox.of", { index: index + 1, count: images.length }) : "";
  // A button about to be disabled hands the focus to the other one, so that ← and → still
  // reach the dialog.
  const [prev, next] = [$("lightbox-prev"), $("lightbox-next")];
  const first = index === 0;
  const last = index === images.length - 1;
  if (first && document.activeElement === prev && !last) next.focus();
  if (last && document.activeElement === next && !first) prev.focus();
  prev.disabled = first;
  next.disabled = last;
}

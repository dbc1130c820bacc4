// The image viewer: a click on a message's image preview opens the image itself, large, in a
// dialog; ← and → (or the buttons) go to the previous and next image of the messages shown, and
// "Open original" opens the file in a new tab. Ctrl-, ⌘-, Shift- or middle-clicks keep the
// link's own behaviour. The addresses are the previews' own links (same-origin uploads, kept
// by the sanitizer); the title is set as text. Zoom: + and − (buttons or keys), the wheel (about
// the pointer), a double click; 0 or "Fit" fits it again; a zoomed image is dragged to pan (or
// moved with the arrow keys and Shift). The transform goes through the CSSOM, which the
// content security policy allows (no style attribute is written).

import { $ } from "./dom.js";
import { t } from "./texts.js";

let images = [];
let index = 0;

const MAX_SCALE = 8;
const view = { scale: 1, x: 0, y: 0 };

// The offset kept within what keeps some of the image in view.
function place() {
  const image = $("lightbox-image");
  const limitX = (image.clientWidth * (view.scale - 1)) / 2;
  const limitY = (image.clientHeight * (view.scale - 1)) / 2;
  view.x = Math.max(-limitX, Math.min(limitX, view.x));
  view.y = Math.max(-limitY, Math.min(limitY, view.y));
  image.style.transform = view.scale === 1 ? "" : `translate(${view.x}px, ${view.y}px) scale(${view.scale})`;
  $("lightbox-stage").classList.toggle("zoomed", view.scale > 1);
  $("lightbox-image").dataset.scale = String(Math.round(view.scale * 100) / 100);
  $("lightbox-zoom-out").disabled = view.scale <= 1;
  $("lightbox-zoom-in").disabled = view.scale >= MAX_SCALE;
}

// Zooms by `factor` about a point of the stage (its centre by default), which stays put.
function zoom(factor, around) {
  const scale = Math.max(1, Math.min(MAX_SCALE, view.scale * factor));
  if (around) {
    const box = $("lightbox-image").getBoundingClientRect();
    const cx = around.clientX - (box.left + box.width / 2);
    const cy = around.clientY - (box.top + box.height / 2);
    const ratio = scale / view.scale;
    view.x -= cx * (ratio - 1);
    view.y -= cy * (ratio - 1);
  }
  view.scale = scale;
  if (scale === 1) { view.x = 0; view.y = 0; }
  place();
}

function fit() {
  Object.assign(view, { scale: 1, x: 0, y: 0 });
  place();
}

$("lightbox-prev").addEventListener("click", () => step(-1));
$("lightbox-next").addEventListener("click", () => step(1));
$("lightbox-zoom-in").addEventListener("click", () => zoom(1.5));
$("lightbox-zoom-out").addEventListener("click", () => zoom(1 / 1.5));
$("lightbox-zoom-reset").addEventListener("click", fit);
$("lightbox-stage").addEventListener("wheel", (e) => { e.preventDefault(); zoom(e.deltaY < 0 ? 1.25 : 0.8, e); }, { passive: false });
$("lightbox-stage").addEventListener("dblclick", (e) => (view.scale > 1 ? fit() : zoom(2, e)));
let drag = null;
$("lightbox-stage").addEventListener("pointerdown", (e) => {
  if (view.scale <= 1) return;
  drag = { id: e.pointerId, x: e.clientX - view.x, y: e.clientY - view.y };
  $("lightbox-stage").setPointerCapture(e.pointerId);
});
$("lightbox-stage").addEventListener("pointermove", (e) => {
  if (!drag || drag.id !== e.pointerId) return;
  view.x = e.clientX - drag.x;
  view.y = e.clientY - drag.y;
  place();
});
for (const end of ["pointerup", "pointercancel"]) $("lightbox-stage").addEventListener(end, () => { drag = null; });
$("lightbox").addEventListener("keydown", (e) => {
  if (e.target.closest?.("a, input")) return;
  const panBy = { ArrowLeft: [40, 0], ArrowRight: [-40, 0], ArrowUp: [0, 40], ArrowDown: [0, -40] }[e.key];
  if (panBy && e.shiftKey && view.scale > 1) { e.preventDefault(); view.x += panBy[0]; view.y += panBy[1]; place(); return; }
  if (e.key === "ArrowLeft") { e.preventDefault(); step(-1); }
  if (e.key === "ArrowRight") { e.preventDefault(); step(1); }
  if (e.key === "+" || e.key === "=") { e.preventDefault(); zoom(1.5); }
  if (e.key === "-") { e.preventDefault(); zoom(1 / 1.5); }
  if (e.key === "0") { e.preventDefault(); fit(); }
});
$("lightbox").addEventListener("close", () => { $("lightbox-image").removeAttribute("src"); images = []; fit(); });

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
  fit();
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

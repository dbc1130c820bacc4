// The person's uploaded files (Zulip's Settings › Uploaded files): each file they uploaded, when,
// the messages that link it, its size; a filter; delete after a confirmation. `GET /attachments`
// once, then `attachment` events (which go to the owner only) keep the list and the space used.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { state } from "./state.js";
import { longTime } from "./time.js";
import { table, button } from "./forms.js";
import { ask } from "./confirm.js";
import { t } from "./texts.js";

// "12 KB", "3.4 MB": sizes as Zulip's page writes them (1,000 bytes a kilobyte).
export function sizeText(bytes) {
  const units = ["B", "KB", "MB", "GB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit += 1; }
  const shown = unit === 0 || value >= 10 ? Math.round(value) : Math.round(value * 10) / 10;
  return `${shown} ${units[unit]}`;
}

export async function uploadedFiles(box) {
  const used = el("p", { id: "upload-space", class: "hint" });
  const filter = el("input", { type: "search", class: "filter", placeholder: t("uploaded.filter_files"), attrs: { "aria-label": t("uploaded.filter_files") } });
  const list = el("div", { id: "upload-list" });
  let files = [];
  const showUsed = (bytes) => {
    const quota = state.realm.upload_quota_mib;
    used.textContent = quota
      ? t("uploaded.you_have_used_of", { used: sizeText(bytes), quota: sizeText(quota * 1024 * 1024) })
      : t("uploaded.you_have_used", { used: sizeText(bytes) });
  };
  const mentions = (f) => (f.messages.length
    ? el("span", { class: "links" }, f.messages.map((m) => el("a", { href: `#narrow/id/${m.id}`, text: t("uploaded.message", { id: m.id }) })))
    : t("uploaded.not_linked"));
  const draw = () => {
    const text = filter.value.trim().toLowerCase();
    const shown = files.filter((f) => !text || f.name.toLowerCase().includes(text)).sort((a, b) => b.create_time - a.create_time);
    clear(list).append(table(t("uploaded.uploaded_files"), text ? t("uploaded.no_file_matches") : t("uploaded.no_uploaded_files"), [
      [t("uploaded.file"), (f) => el("a", { href: `/user_uploads/${f.path_id}`, target: "_blank", rel: "noopener noreferrer", text: f.name })],
      [t("uploaded.uploaded"), (f) => longTime(Math.floor(f.create_time / 1000))],
      [t("uploaded.linked_from"), mentions],
      [t("uploaded.size"), (f) => sizeText(f.size)],
    ], shown, (f) => [button(t("common.delete"), () => ask({
      title: t("uploaded.delete_the_file", { name: f.name }),
      text: f.messages.length ? t("uploaded.its_links_stop_working") : t("uploaded.it_is_deleted_for_good"),
      ok: t("common.delete"),
      run: () => api("DELETE", `attachments/${f.id}`),
    }), { attrs: { "aria-label": t("uploaded.delete_2", { name: f.name }) } })], (f) => f.id));
  };
  filter.addEventListener("input", draw);
  box.append(used, filter, list);
  try {
    const answer = await api("GET", "attachments");
    files = answer.attachments;
    showUsed(answer.upload_space_used);
    draw();
  } catch (error) {
    list.append(el("p", { class: "hint", text: t("uploaded.could_not_load_the_files", { message: error.message }) }));
  }
  return (ev) => {
    if (ev.type !== "attachment") return;
    files = files.filter((f) => f.id !== ev.attachment.id);
    if (ev.op !== "remove") files.push(ev.attachment);
    if (typeof ev.upload_space_used === "number") showUsed(ev.upload_space_used);
    draw();
  };
}

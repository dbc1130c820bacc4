// Uploads with a progress bar: fetch() cannot report how much of a body has gone, so the bytes
// go by XMLHttpRequest, with the same session cookie, CSRF header and errors as api.js. Each
// upload has a row under the compose box while it travels.

import { ApiError, csrfToken } from "./api.js";
import { $, el } from "./dom.js";
import { STORAGE_CODES, refused as storageRefused } from "./storage.js";
import { t } from "./texts.js";

export function uploadWithProgress(file) {
  const bar = el("progress", { max: 100, value: 0, attrs: { "aria-label": t("uploads.uploading", { name: file.name }) } });
  const row = el("li", {}, el("span", { class: "upload-name", text: file.name }), bar);
  $("uploads").append(row);
  $("uploads").hidden = false;
  const done = () => {
    row.remove();
    $("uploads").hidden = !$("uploads").childElementCount;
  };
  return new Promise((resolve, reject) => {
    const form = new FormData();
    form.append("file", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/json/user_uploads");
    xhr.setRequestHeader("X-CSRFToken", csrfToken());
    xhr.responseType = "json";
    xhr.upload.addEventListener("progress", (e) => { if (e.lengthComputable) bar.value = Math.round((e.loaded / e.total) * 100); });
    xhr.addEventListener("load", () => {
      done();
      const body = xhr.response;
      if (xhr.status === 401) { location.assign("/login/"); return; }
      if (xhr.status >= 200 && xhr.status < 300 && body?.result === "success") resolve(body);
      else {
        const error = new ApiError(xhr.status, body);
        if (STORAGE_CODES.has(error.code)) storageRefused(body);
        reject(error);
      }
    });
    xhr.addEventListener("error", () => { done(); reject(new ApiError(0, null)); });
    xhr.send(form);
  });
}

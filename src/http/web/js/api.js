// The one way the client talks to the server: /json/* with the session cookie, the CSRF
// header on every write, Zulip's form encoding, and errors turned into ApiError.

import { STORAGE_CODES, refused as storageRefused } from "./storage.js";
import { t } from "./texts.js";

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.msg) || (status ? t("api.server_error", { status }) : t("api.the_server_cannot_be_reached")));
    this.status = status;
    this.code = (body && body.code) || (status ? "HTTP_" + status : "NETWORK");
    this.body = body || {};
  }
  // The server is away or overloaded, so trying again later makes sense.
  get transient() {
    return this.status === 0 || this.status >= 500 || this.status === 429;
  }
}

export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]*)/);
  return match ? decodeURIComponent(match[1]) : "";
}

// Zulip takes list and object parameters (narrow, to, subscriptions…) as JSON text.
export function encode(params = {}) {
  const out = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    out.append(key, typeof value === "object" && value !== null ? JSON.stringify(value) : String(value));
  }
  return out;
}

// `signal` (optional) aborts the request (the event long-poll, when the page is put away);
// `keepalive` lets a write outlive the page (a draft saved as the page goes); `noLogin` keeps a
// 401 from leaving the page (a wrong password when asking for the API key).
export async function api(method, path, params, { signal, keepalive, noLogin } = {}) {
  const init = { method, credentials: "same-origin", headers: {}, signal, keepalive };
  let url = "/json/" + path;
  if (method === "GET" || method === "HEAD") {
    const query = encode(params).toString();
    if (query) url += "?" + query;
  } else {
    init.headers["X-CSRFToken"] = csrfToken();
    if (params instanceof FormData) init.body = params;
    else if (params) init.body = encode(params);
  }
  return send(url, init, noLogin);
}

async function send(url, init, noLogin) {
  let response;
  try {
    response = await fetch(url, init);
  } catch {
    throw new ApiError(0, null);
  }
  const body = await response.json().catch(() => null);
  if (response.status === 401 && !noLogin) {
    // The session is gone (expired, ended elsewhere): the only way on is to log in again.
    location.assign("/login/");
    throw new ApiError(401, body);
  }
  if (!response.ok || !body || body.result !== "success") {
    const error = new ApiError(response.status, body);
    // Writes refused for the storage's sake: the storage banner says so (storage.js).
    if (STORAGE_CODES.has(error.code)) storageRefused(body);
    throw error;
  }
  return body;
}

// Static JSON from the same origin (the emoji data), no session semantics needed.
export async function getJson(url) {
  const response = await fetch(url, { credentials: "same-origin" });
  if (!response.ok) throw new ApiError(response.status, null);
  return response.json();
}

// The one place that talks HTTP to the server: every call goes to /json/..., the
// cookie-authenticated twin of /api/v1/... . Bodies are form-encoded as the API expects
// (arrays and objects as JSON text inside the form value); writes carry the CSRF token.

import { t } from "./i18n.js";

export class ApiError extends Error {
  constructor(message, { status = 0, code = "", body = null } = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.content : "";
}

// Form values: strings as they are, everything else (numbers, booleans, arrays, objects) as JSON.
export function encodeParams(params) {
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value === undefined) continue;
    form.append(key, typeof value === "string" ? value : JSON.stringify(value));
  }
  return form;
}

// What to do when the session is gone: the login page lives at "/".
let onUnauthorized = () => window.location.assign("/");
export function setUnauthorizedHandler(handler) {
  onUnauthorized = handler;
}

export async function request(method, path, params, { signal, body } = {}) {
  let url = "/json" + path;
  const init = { method, credentials: "same-origin", headers: {}, signal };
  if (method === "GET") {
    const query = encodeParams(params).toString();
    if (query) url += "?" + query;
  } else {
    init.headers["X-CSRFToken"] = csrfToken();
    // A FormData body (file upload) sets its own multipart Content-Type.
    init.body = body || encodeParams(params);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(t("Could not reach the server"), { status: 0, code: "NETWORK" });
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    // A proxy error page or an interrupted body: reported below by status.
  }
  if (response.status === 401 && (!data || data.code !== "BAD_EVENT_QUEUE_ID")) {
    onUnauthorized();
  }
  if (!response.ok || !data || data.result !== "success") {
    const message = (data && data.msg) || t("Server error ({status})", { status: response.status });
    throw new ApiError(message, { status: response.status, code: (data && data.code) || "", body: data });
  }
  return data;
}

export const get = (path, params, options) => request("GET", path, params, options);
export const post = (path, params, options) => request("POST", path, params, options);
export const patch = (path, params, options) => request("PATCH", path, params, options);
export const del = (path, params, options) => request("DELETE", path, params, options);

export function upload(file) {
  const form = new FormData();
  // The server reads the file from the multipart field named "filename".
  form.append("filename", file, file.name);
  return request("POST", "/user_uploads", null, { body: form });
}

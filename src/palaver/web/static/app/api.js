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
    throw unreachable();
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    // A proxy error page or an interrupted body: reported below by status.
  }
  if (!response.ok || !data || data.result !== "success") throw failure(response.status, data);
  return data;
}

function unreachable() {
  return new ApiError(t("Could not reach the server"), { status: 0, code: "NETWORK" });
}

// The error of an answer that is not a success (``data``: its JSON body, if it had one); a
// session gone (401, other than a queue gone) sends the page to sign in again.
function failure(status, data) {
  if (status === 401 && (!data || data.code !== "BAD_EVENT_QUEUE_ID")) onUnauthorized();
  const message = (data && data.msg) || t("Server error ({status})", { status });
  return new ApiError(message, { status, code: (data && data.code) || "", body: data });
}

// GET ``path`` with the answer parsed in a worker (slices_worker.js), and its list ``key``
// handed to ``onSlice`` ``size`` items at a time, each slice in a task of its own: a list of
// many thousands (GET /users) never holds the page's main thread for the whole of it.
// Resolves to the answer without the list once every slice was handed over; rejects as
// ``get`` does, or with what ``onSlice`` threw (which stops the worker: a way to give up).
export function getInSlices(path, params, key, onSlice, { size = 1000 } = {}) {
  const query = encodeParams(params).toString();
  const url = new URL("/json" + path + (query ? "?" + query : ""), window.location.href).href;
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./slices_worker.js", import.meta.url), { type: "module" });
    let head = null;
    const finish = (settle, value) => {
      worker.terminate();
      settle(value);
    };
    worker.onmessage = ({ data }) => {
      if (data.error) {
        const { status, code, msg } = data.error;
        finish(reject, status ? failure(status, { code, msg }) : unreachable());
        return;
      }
      if (data.head) {
        head = data.head;
        return;
      }
      try {
        onSlice(data.slice);
      } catch (error) {
        finish(reject, error);
        return;
      }
      if (data.last) finish(resolve, head);
    };
    // The worker's script failed to load or run.
    worker.onerror = (event) => {
      event.preventDefault();
      finish(reject, unreachable());
    };
    worker.postMessage({ url, key, size });
  });
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

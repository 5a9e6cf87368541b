// A module worker for api.getInSlices: GETs one URL, parses the JSON off the page's main
// thread, and posts one list of the answer back in slices, each its own message (so its own
// task on the page). Nothing here touches the DOM; it imports nothing.
//
// Posts {head} (the answer without the list) first, then {slice, last} until last is true;
// or {error: {status, code, msg}} once, for a failed request (status 0: no answer).

self.onmessage = async ({ data: { url, key, size } }) => {
  let response;
  let body = null;
  try {
    response = await fetch(url, { credentials: "same-origin" });
  } catch {
    self.postMessage({ error: { status: 0, code: "NETWORK", msg: "" } });
    return;
  }
  try {
    body = await response.json();
  } catch {
    // A proxy error page or an interrupted body: reported by status below.
  }
  if (!response.ok || !body || body.result !== "success") {
    self.postMessage({ error: { status: response.status, code: (body && body.code) || "", msg: (body && body.msg) || "" } });
    return;
  }
  const list = Array.isArray(body[key]) ? body[key] : [];
  delete body[key];
  self.postMessage({ head: body });
  for (let start = 0; ; start += size) {
    const last = start + size >= list.length;
    self.postMessage({ slice: list.slice(start, start + size), last });
    if (last) return;
  }
};

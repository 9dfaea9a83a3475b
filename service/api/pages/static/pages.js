// Shared code of the dashboard and annotator pages: the API key field and fetch helpers.
// No framework, no CDN: everything here is served by the API from the installed package.
"use strict";

const KEY_STORE = "omtl-api-key";

/** Fill the API key field from localStorage and keep it stored when it changes. */
function setupKeyField(input) {
  input.value = localStorage.getItem(KEY_STORE) || "";
  input.addEventListener("change", () => {
    const v = input.value.trim();
    if (v) localStorage.setItem(KEY_STORE, v); else localStorage.removeItem(KEY_STORE);
  });
}

/** Request headers: JSON, and ``Authorization: Bearer <key>`` when a key is set. */
function apiHeaders(extra) {
  const headers = Object.assign({ "Accept": "application/json" }, extra || {});
  const key = localStorage.getItem(KEY_STORE);
  if (key) headers["Authorization"] = "Bearer " + key;
  return headers;
}

/** fetch() a JSON endpoint of the API; throws an Error with the server's message on non-2xx. */
async function api(path, options) {
  const opts = Object.assign({}, options || {});
  opts.headers = apiHeaders(opts.headers);
  const answer = await fetch(path, opts);
  const text = await answer.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = text; }
  if (!answer.ok) {
    const detail = body && body.detail ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)) : text;
    throw new Error(answer.status + ": " + detail);
  }
  return body;
}

/** Escape text for innerHTML. */
function esc(value) {
  return String(value === null || value === undefined ? "" : value)
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** A number for people: null as an en dash, floats with 3 significant digits. */
function fmt(value, digits) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (Number.isInteger(value)) return value.toLocaleString("en");
  return Number(value).toPrecision(digits || 3);
}

/** The model named in the page's URL (?model=...), else null. */
function modelFromUrl() {
  return new URLSearchParams(location.search).get("model");
}

/** Put ``model`` into the URL without reloading. */
function rememberModel(model) {
  const url = new URL(location.href);
  url.searchParams.set("model", model);
  history.replaceState(null, "", url);
}

/**
 * Read a server-sent event stream with fetch (so the API key header can be sent),
 * calling onMessage(id, event, data) per message; reconnects with Last-Event-ID.
 * Returns a function that stops it.
 */
function readEvents(path, onMessage, onState) {
  let stopped = false;
  let lastId = null;
  let controller = null;
  async function once() {
    controller = new AbortController();
    const headers = apiHeaders({ "Accept": "text/event-stream" });
    if (lastId) headers["Last-Event-ID"] = lastId;
    const answer = await fetch(path, { headers, signal: controller.signal });
    if (!answer.ok) throw new Error("stream " + answer.status);
    if (onState) onState(true);
    const reader = answer.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let id = null, event = "message", data = null;
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "id") id = val;
          else if (field === "event") event = val;
          else if (field === "data") data = data === null ? val : data + "\n" + val;
        }
        if (id !== null) lastId = id;
        if (data !== null) onMessage(id, event, data);
      }
    }
  }
  (async () => {
    while (!stopped) {
      try { await once(); } catch (e) { if (onState) onState(false); }
      if (!stopped) await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  return () => { stopped = true; if (controller) controller.abort(); };
}

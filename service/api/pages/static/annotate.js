// The annotator page: pending label requests of one model, answered with one click or one key.
// Loads GET /models/{m}/queries/pending, follows GET /queries?answers=true (server-sent events)
// for new requests and for answers, answers with POST /label, and drops a request on every open
// page as soon as anyone answers it (event: label_answered, fanned out by the API like the
// requests). The pending list is also re-read every POLL_MS, for labels that reach the log
// without POST /label.
"use strict";

const POLL_MS = 10000;
const SHOWN = 200;
let model = null;
let kind = "classification";
let requests = [];          // pending requests, oldest first
let cursor = 0;             // index of the highlighted request
let answered = 0;
let stopStream = null;
let pollTimer = null;
let floor = null;           // stream id before which every request is answered
const gone = new Set();     // event ids answered here or elsewhere
const channel = "BroadcastChannel" in window ? new BroadcastChannel("omtl-annotate") : null;

/** Order of two stream ids "ms-seq". */
function idCompare(a, b) {
  const [am, as] = a.split("-").map(BigInt);
  const [bm, bs] = b.split("-").map(BigInt);
  return am !== bm ? (am < bm ? -1 : 1) : as === bs ? 0 : as < bs ? -1 : 1;
}

function setStatus(text) { document.getElementById("status").textContent = text; }

let shown = null;            // what the list shows (redrawn only when it changes)

function render() {
  const box = document.getElementById("requests");
  cursor = Math.max(0, Math.min(cursor, requests.length - 1));
  const signature = kind + "|" + cursor + "|" + answered + "|" + requests.slice(0, SHOWN).map((r) => r.id).join(",");
  if (signature === shown) return;
  shown = signature;
  box.innerHTML = requests.slice(0, SHOWN).map((r, i) => {
    const answer = kind === "regression"
      ? '<input class="value" type="number" step="any" placeholder="value" data-i="' + i + '">' +
        '<button class="send" data-i="' + i + '">label</button>'
      : '<button class="pos" data-i="' + i + '" data-y="1">+1</button>' +
        '<button class="neg" data-i="' + i + '" data-y="-1">-1</button>';
    return '<div class="req' + (i === cursor ? " current" : "") + '" data-event="' + esc(r.event_id) + '">' +
      '<div class="meta"><b>' + esc(r.task) + "</b>" + (r.ref ? " · ref <code>" + esc(r.ref) + "</code>" : "") +
      ' · event <code>' + esc(r.event_id) + "</code><br><span class=muted>prediction " + fmt(r.prediction) +
      ", score " + fmt(r.score) + (r.p !== null && r.p !== undefined ? ", query probability " + fmt(r.p) : "") +
      (r.ts ? ", asked " + new Date(r.ts).toLocaleTimeString() : "") + "</span></div>" + answer + "</div>";
  }).join("") || '<p class="muted" id="empty">no pending label requests</p>';
  document.getElementById("count").textContent = "(" + requests.length + ")";
  document.getElementById("answered").textContent = answered ? answered + " answered on this page" : "";
  for (const b of box.querySelectorAll("button[data-y]")) {
    b.addEventListener("click", () => answer(Number(b.dataset.i), Number(b.dataset.y)));
  }
  for (const b of box.querySelectorAll("button.send")) {
    b.addEventListener("click", () => answerValue(Number(b.dataset.i)));
  }
  for (const input of box.querySelectorAll("input.value")) {
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") answerValue(Number(input.dataset.i)); });
  }
  if (kind === "regression") {
    const input = box.querySelector('input.value[data-i="' + cursor + '"]');
    if (input && document.activeElement && document.activeElement.tagName !== "INPUT") input.focus();
  }
}

function drop(eventId) {
  gone.add(eventId);
  const before = requests.length;
  requests = requests.filter((r) => r.event_id !== eventId);
  return requests.length !== before;
}

function answerValue(i) {
  const input = document.querySelector('input.value[data-i="' + i + '"]');
  const y = Number(input && input.value);
  if (!input || input.value === "" || !Number.isFinite(y)) { document.getElementById("error").textContent = "enter a number"; return; }
  answer(i, y);
}

async function answer(i, y) {
  const r = requests[i];
  if (!r) return;
  drop(r.event_id);
  cursor = i;
  render();
  const body = { model: model, event_id: r.event_id, y: y };
  const who = document.getElementById("annotator").value.trim();
  if (who) body.annotator = who;
  try {
    await api("/label", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    answered += 1;
    document.getElementById("error").textContent = "";
  } catch (e) {
    document.getElementById("error").textContent = "event " + r.event_id + ": " + e.message;
  }
  if (channel) channel.postMessage({ model: model, event_id: r.event_id });
  render();
}

function add(r) {
  if (gone.has(r.event_id) || requests.some((q) => q.event_id === r.event_id)) return false;
  requests.push(r);
  return true;
}

async function poll() {
  clearTimeout(pollTimer);
  try {
    const from = floor ? "&start=" + floor : "";
    const data = await api("/models/" + encodeURIComponent(model) + "/queries/pending?limit=" + SHOWN + from);
    kind = data.kind;
    const live = new Set(data.requests.map((r) => r.event_id));
    const last = data.requests.length ? data.requests[data.requests.length - 1].id : null;
    // a request the server no longer lists as pending (and within the range it read) was answered
    requests = requests.filter((r) => live.has(r.event_id) || (!data.complete && last !== null && idCompare(r.id, last) > 0));
    for (const r of data.requests) add(r);
    requests.sort((a, b) => idCompare(a.id, b.id));
    // requests answered once stay answered: the next read starts at the oldest pending one
    if (data.requests.length) floor = data.requests[0].id;
    else if (data.complete && data.scanned_to) floor = data.scanned_to;
    render();
    setStatus("live · " + new Date().toLocaleTimeString());
    document.body.dataset.loaded = "1";
  } catch (e) {
    setStatus("error");
    document.getElementById("error").textContent = e.message;
  }
  pollTimer = setTimeout(poll, POLL_MS);
}

function follow() {
  if (stopStream) stopStream();
  stopStream = readEvents("/queries?answers=true&model=" + encodeURIComponent(model), (id, event, data) => {
    if (event === "label_answered") {
      if (drop(JSON.parse(data).event_id)) render();
      return;
    }
    if (event !== "label_request") return;
    const r = JSON.parse(data);
    if (add(r)) render();
  });
}

async function choose(name) {
  model = name;
  rememberModel(name);
  requests = [];
  cursor = 0;
  floor = null;
  await poll();
  follow();
}

async function start() {
  setupKeyField(document.getElementById("api-key"));
  const select = document.getElementById("model");
  try {
    const [models, root] = await Promise.all([api("/models"), api("/")]);
    const names = models.map((m) => m.name);
    select.innerHTML = names.map((n) => "<option>" + esc(n) + "</option>").join("");
    const wanted = modelFromUrl();
    const first = names.includes(wanted) ? wanted : names.includes(root.default_model) ? root.default_model : names[0];
    if (!first) { setStatus("no models"); return; }
    select.value = first;
    select.addEventListener("change", () => choose(select.value));
    await choose(first);
  } catch (e) {
    setStatus("error");
    document.getElementById("error").textContent = e.message;
  }
}

if (channel) {
  channel.onmessage = (e) => { if (e.data.model === model && drop(e.data.event_id)) render(); };
}

document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT" || !requests.length) return;
  if (kind !== "regression" && (e.key === "+" || e.key === "=" || e.key === "y")) { answer(cursor, 1); e.preventDefault(); }
  else if (kind !== "regression" && (e.key === "-" || e.key === "n")) { answer(cursor, -1); e.preventDefault(); }
  else if (e.key === "ArrowDown" || e.key === "j") { cursor += 1; render(); e.preventDefault(); }
  else if (e.key === "ArrowUp" || e.key === "k") { cursor -= 1; render(); e.preventDefault(); }
});

start();

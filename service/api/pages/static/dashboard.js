// The dashboard: polls GET /models and GET /dashboard/data/{model} every REFRESH_MS.
"use strict";

const REFRESH_MS = 2000;
let current = modelFromUrl();
let timer = null;

// An element's content replaced only when it changed: most refreshes bring the data of the
// last one, and a redraw would drop a reader's hover and text selection for nothing.
const shown = new Map();
function show(id, html) {
  if (shown.get(id) === html) return;
  shown.set(id, html);
  document.getElementById(id).innerHTML = html;
}

function card(key, value, id) {
  return '<div class="card"' + (id ? ' id="' + id + '"' : "") + '><div class="k">' + esc(key) +
    '</div><div class="v">' + esc(value) + "</div></div>";
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "none yet";
  if (seconds < 90) return seconds.toFixed(1) + " s";
  if (seconds < 5400) return (seconds / 60).toFixed(1) + " min";
  return (seconds / 3600).toFixed(1) + " h";
}

async function loadModels() {
  const models = await api("/models");
  const names = models.map((m) => m.name);
  if (!current || !names.includes(current)) {
    const root = await api("/");
    current = names.includes(root.default_model) ? root.default_model : names[0] || null;
  }
  document.getElementById("models").innerHTML = names.map((n) =>
    '<button data-model="' + esc(n) + '" class="' + (n === current ? "on" : "") + '">' + esc(n) + "</button>"
  ).join("") || '<span class="muted">no models</span>';
  for (const b of document.querySelectorAll("#models button")) {
    b.addEventListener("click", () => { current = b.dataset.model; rememberModel(current); refresh(); });
  }
}

function renderTasks(data) {
  const regression = data.kind === "regression";
  const head = "<tr><th>task</th><th class=num>events</th><th class=num>labels</th>" +
    (regression ? "<th class=num>rMSE</th><th class=num>MAE</th>" : "<th class=num>online accuracy</th>") +
    "<th class=num>label requests</th><th class=num>outlier score</th></tr>";
  const rows = data.tasks.map((t) => "<tr><td>" + esc(t.task) + (t.outlier ? ' <span class="flag">outlier</span>' : "") +
    "</td><td class=num>" + fmt(t.events) + "</td><td class=num>" + fmt(t.labels) + "</td>" +
    (regression ? "<td class=num>" + fmt(t.rmse) + "</td><td class=num>" + fmt(t.mae) + "</td>"
                : "<td class=num>" + fmt(t.online_accuracy) + "</td>") +
    "<td class=num>" + fmt(t.label_requests) + "</td><td class=num>" + fmt(t.outlier_score) + "</td></tr>").join("");
  show("tasks", head + rows);
  document.getElementById("task-note").textContent = data.task_count > data.tasks.length
    ? "(the " + data.tasks.length + " most labelled of " + data.task_count + ")" : "";
}

function render(data) {
  const m = data.model;
  const lr = data.label_requests || {};
  show("cards", [
    card("model", m.name), card("learner", m.learner), card("kind", m.kind),
    card("worker", data.worker_alive ? "live" : "no heartbeat", "card-worker"),
    card("snapshot version", fmt(m.version), "card-version"),
    card("snapshot age", age(m.snapshot_age_seconds)),
    card("log lag", data.log_lag === null ? "–" : fmt(data.log_lag)),
    card("events", fmt(m.counts.events)), card("labels", fmt(m.counts.labels)),
    card("requests issued", fmt(lr.issued)), card("answered", fmt(lr.answered)),
    card("pending", fmt(lr.pending), "card-pending"),
    card("dead letters", fmt(m.counts.dead_letters)),
  ].join(""));
  const rel = data.relations;
  document.getElementById("relation-kind").textContent = rel.kind;
  document.getElementById("relation-meaning").textContent = rel.meaning +
    (rel.shown_of && rel.shown_of > rel.tasks.length ? " Showing the " + rel.tasks.length + " most labelled of " + rel.shown_of + " tasks." : "");
  show("heatmap", rel.svg || '<p class="muted">no relation matrix</p>');
  const cv = data.curves;
  document.getElementById("curve-note").textContent = cv.metric + " of the most labelled tasks against the labels the model has learned, from " +
    cv.entries + " history entries (cumulative, progressive validation).";
  show("curves", cv.svg);
  renderTasks(data);
  show("outliers", data.outliers.length
    ? data.outliers.map((t) => '<span class="flag">' + esc(t) + "</span>").join(", ") : "none");
  document.getElementById("dead-count").textContent = "(" + fmt(m.counts.dead_letters) + ")";
  show("dead", data.dead_letters.length
    ? "<tr><th>entry</th><th>reason</th></tr>" + data.dead_letters.map((d) =>
      "<tr><td><code>" + esc(d.entry || d.id) + "</code></td><td>" + esc(d.reason) + "</td></tr>").join("")
    : '<tr><td class="muted">none</td></tr>');
}

async function refresh() {
  clearTimeout(timer);
  const status = document.getElementById("status");
  try {
    await loadModels();
    if (current) {
      const data = await api("/dashboard/data/" + encodeURIComponent(current));
      if (data.failed) {
        document.getElementById("error").textContent = "model failed: " + data.model.failure;
      } else {
        document.getElementById("error").textContent = "";
        render(data);
      }
    }
    status.textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = "1";
  } catch (e) {
    status.textContent = "error";
    document.getElementById("error").textContent = e.message;
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

setupKeyField(document.getElementById("api-key"));
document.getElementById("api-key").addEventListener("change", refresh);
refresh();

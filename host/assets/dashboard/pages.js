// The dashboard's pages, each a function of its route's parameters that returns the
// page's element, reading the API; `refresh` is called again while the page is shown.
// The overview, batches and modules are here; tasks, a task, groups and nodes, schedules
// and tenants have files of their own.

import { call, get } from "./api.js";
import { history } from "./charts.js";
import { nodesTable } from "./fleet.js";
import { tasksTable } from "./tasks.js";
import {
  act, batchLink, filters, h, link, more, progressBar, query, stateCell, STATES, table, when,
} from "./view.js";
import { graphView } from "./graph.js";
import { timeline } from "./timeline.js";

export { groups, nodes } from "./fleet.js";
export { schedules } from "./schedules.js";
export { task } from "./task.js";
export { tasks } from "./tasks.js";
export { tenants } from "./tenants.js";

/**
 * Tasks by state, queue age, throughput and queue age over the last hour, groups, the
 * deepest batches and the nodes' slots.
 */
export async function overview() {
  const [status, samples] = await Promise.all([get("/v1/status"), get("/v1/status/history")]);
  const age = status.oldest_ready_age_seconds;
  return [
    h("h1", {}, "Overview"),
    h("div", { class: "cards", "aria-label": "Tasks by state" },
      STATES.map((s) => h("div", { class: "card" }, h("b", {}, status.tasks[s]), s)),
      h("div", { class: "card" }, h("b", {}, age === null ? "–" : `${age.toFixed(1)} s`),
        "oldest ready")),
    h("h2", {}, "The last hour"), ...history(samples),
    h("h2", {}, "Ended since the store began"),
    h("div", { class: "cards" }, Object.entries(status.ended_total).map(([k, v]) =>
      h("div", { class: "card" }, h("b", {}, v), k))),
    h("h2", {}, "Nodes"), nodesTable(status.nodes),
    h("h2", {}, "Busiest groups"), groupsTable(status.groups),
    h("h2", {}, "Deepest open batches"),
    table([
      ["Batch", (b) => batchLink(b.batch)], ["Name", (b) => b.name ?? ""],
      ["Not ended", (b) => b.open, true], ["Paused", (b) => (b.paused ? "yes" : "")],
    ], status.batches),
  ];
}

function groupsTable(groups) {
  return table([
    ["Group", (g) => g.key], ["Limit", (g) => g.limit, true],
    ["Running", (g) => g.running, true], ["Ready", (g) => g.ready ?? g.pending, true],
    ["Paused", (g) => (g.paused ? "yes" : "")],
  ], groups);
}

/** Batches, newest first, filtered by name and state, paged. */
export async function batches(params) {
  const page = await get(`/v1/batches${query({
    name: params.name, state: params.state, cursor: params.cursor, limit: 50,
  })}`);
  return [
    h("h1", {}, "Batches"),
    filters(params, [["name", "Name"], ["state", "State", ["", "open", "sealed", "ended"]]]),
    table([
      ["Batch", (b) => batchLink(b.id)], ["Name", (b) => b.name ?? ""],
      ["State", (b) => stateCell(b.state)], ["Progress", (b) => progressBar(b.progress)],
      ["Priority", (b) => b.priority, true], ["Created", (b) => when(b.created_at)],
    ], page.batches),
    more(params, page.next_cursor),
  ];
}

/** What a batch's ended attempts used, in words. */
const used = (u) => `used by ${u.attempts} attempt${u.attempts === 1 ? "" : "s"}: ` +
  `slot ${(u.slot_micros / 1e6).toFixed(3)} s · CPU ${(u.cpu_micros / 1e6).toFixed(3)} s · ` +
  `memory ${u.memory_mib_seconds.toFixed(3)} MiB·s`;

/** A batch: its settings, progress and usage, actions, its graph, its timeline and its tasks by order. */
export async function batch({ id }) {
  const [info, page, log, running, edges, usage] = await Promise.all([
    get(`/v1/batches/${id}`),
    get(`/v1/tasks${query({ batch: id, limit: 500 })}`),
    get(`/v1/attempts${query({ batch: id, limit: 1000 })}`),
    get("/v1/running").catch(() => []),
    get(`/v1/batches/${id}/graph`),
    get(`/v1/batches/${id}/usage`),
  ]);
  const drawn = graphView(edges, page.tasks);
  const status = h("p", { role: "status" });
  const rows = [...page.tasks].sort((a, b) => a.order - b.order || a.id - b.id);
  const simple = (label, path, question) => h("button", { type: "button", onclick: () => act(
    question, () => call("POST", `/v1/batches/${id}/${path}`),
    () => `${label}: done`, status) }, label);
  return [
    h("h1", {}, `Batch ${id}${info.name ? ` · ${info.name}` : ""}`),
    h("p", {}, progressBar(info.progress), " ",
      STATES.filter((s) => info.progress[s]).map((s) => `${s} ${info.progress[s]}`).join(" · ")),
    h("p", { class: "muted" }, `priority ${info.priority} · max_parallel ${info.max_parallel ?? "none"}` +
      ` · ${info.sealed ? "sealed" : "open"}${info.paused ? " · paused" : ""} · created ${when(info.created_at)}`),
    h("p", { class: "muted usage" }, used(usage)),
    h("div", { class: "actions" },
      info.paused ? simple("Resume", "resume", "Let this batch's tasks run again?")
        : simple("Pause", "pause", "Hold this batch's tasks that have not started?"),
      simple("Retry failed", "retry", "Run this batch's failed tasks again?"),
      h("button", { type: "button", class: "danger", onclick: () => act(
        "Cancel this batch: its pending tasks, and stop those running?",
        () => call("POST", `/v1/batches/${id}/cancel`),
        (r) => `${r.cancelled} cancelled; running ones are asked to stop`, status) }, "Cancel batch")),
    status,
    drawn && h("h2", {}, "Graph"),
    drawn,
    h("h2", {}, "Timeline"),
    timeline(log.attempts, running.filter((r) => r.batch === Number(id)), Date.now() * 1000),
    h("h2", {}, "Tasks by order"),
    tasksTable(rows),
    page.next_cursor && h("p", {}, link(`#/tasks?batch=${id}`, "All its tasks…")),
  ];
}

export async function modules() {
  const list = await get("/v1/modules");
  return [
    h("h1", {}, "Modules"),
    table([
      ["Names", (m) => (m.names ?? []).join(", ")], ["Digest", (m) => h("code", {}, m.digest.slice(0, 12))],
      ["Size", (m) => `${(m.size / 1024).toFixed(0)} KiB`, true], ["Tag", (m) => m.tag ?? ""],
      ["Languages", (m) => (m.languages?.length ? m.languages.join(", ") : "unknown")],
      ["Made by", (m) => (m.processed_by?.length
        ? h("span", { title: m.processed_by.join("\n") },
          m.processed_by.map((t) => t.split(" ").slice(0, 2).join(" ")).join(", "))
        : "unknown")],
      ["Added", (m) => when(m.added_at)],
    ], list),
  ];
}

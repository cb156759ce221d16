// The dashboard's pages, each a function of its route's parameters that returns the
// page's element, reading the API; `refresh` is called again while the page is shown.

import { call, get, getBytes, query } from "./api.js";
import { history } from "./charts.js";
import { act, h, progressBar, span, STATES, TASK_STATES, table, when } from "./view.js";
import { timeline } from "./timeline.js";

const link = (href, text) => h("a", { href }, text);
const batchLink = (id) => link(`#/batch/${id}`, `batch ${id}`);
const taskLink = (id) => link(`#/task/${id}`, `task ${id}`);
const stateCell = (state) => h("span", { class: `state ${state}` }, state);

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

function nodesTable(nodes) {
  const now = Date.now() * 1000;
  return table([
    ["Node", (n) => n.node],
    ["Slots busy", (n) => `${n.busy} / ${n.workers}`, true],
    ["Heartbeat", (n) => `${span(Math.max(0, now - n.heartbeat_at))} ago`],
    ["Clock offset", (n) => span(Math.abs(n.clock_offset)), true],
    ["Started", (n) => when(n.started_at)],
  ], nodes);
}

function groupsTable(groups, actions) {
  return table([
    ["Group", (g) => g.key], ["Limit", (g) => g.limit, true],
    ["Running", (g) => g.running, true], ["Ready", (g) => g.ready ?? g.pending, true],
    ["Paused", (g) => (g.paused ? "yes" : "")],
    ...(actions ? [["", actions]] : []),
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

/** Tasks, newest first, filtered, paged; with bulk actions on the filter. */
export async function tasks(params) {
  const filter = { batch: params.batch, state: params.state, group: params.group,
    module: params.module, outcome: params.outcome };
  const page = await get(`/v1/tasks${query({ ...filter, cursor: params.cursor, limit: 50 })}`);
  const status = h("p", { role: "status" });
  const bulk = { batch: params.batch, group: params.group, outcome: params.outcome };
  return [
    h("h1", {}, "Tasks"),
    filters(params, [["batch", "Batch"], ["state", "State", ["", ...TASK_STATES]],
    ["group", "Group"], ["module", "Module"], ["outcome", "Outcome"]]),
    h("p", { class: "muted" }, Object.entries(page.counts).map(([k, v]) => `${k} ${v}`)
      .join(" · ") + (page.counts_capped ? " (counts capped)" : "")),
    bulkActions(bulk, status),
    status,
    tasksTable(page.tasks),
    more(params, page.next_cursor),
  ];
}

function tasksTable(rows) {
  return table([
    ["Task", (t) => taskLink(t.id)], ["Batch", (t) => batchLink(t.batch)],
    ["Order", (t) => t.order, true], ["Group", (t) => t.group ?? ""],
    ["Module", (t) => t.module_name ?? t.module.slice(0, 12)],
    ["State", (t) => stateCell(t.state)], ["Priority", (t) => t.priority, true],
    ["Waiting on", (t) => waitingOn(t.waiting_on)],
  ], rows);
}

/** What holds a task back, in words. */
export function waitingOn(w) {
  if (!w) return "";
  switch (w.kind) {
    case "gate": return `order ${w.order} (${w.open} not ended)`;
    case "batch_paused": return "its batch is paused";
    case "group_paused": return `group ${w.group} is paused`;
    case "delay": return `delayed until ${when(w.until)}`;
    case "retry": return `retry after attempt ${w.attempts}, at ${when(w.until)}`;
    case "group": return w.limit === 0 ? `group ${w.group} has limit 0`
      : `group ${w.group}: ${w.running} of ${w.limit} running`;
    case "batch": return w.max_parallel === 0 ? "its batch's max_parallel is 0"
      : `its batch: ${w.running} of ${w.max_parallel} running`;
    default: return w.kind;
  }
}

/** Cancel, retry and priority on every task a filter names (it must name something). */
function bulkActions(filter, status) {
  const named = Object.values(filter).some((v) => v);
  if (!named) return h("p", { class: "muted" }, "Filter by batch, group or outcome to act on many tasks at once.");
  const q = query(filter);
  const priority = h("input", { type: "number", id: "bulk-priority", value: 10, "aria-label": "New priority" });
  return h("div", { class: "actions", "aria-label": "Act on every task of the filter" },
    h("button", { type: "button", class: "danger", onclick: () => act(
      "Cancel every pending task of this filter, and stop its running ones?",
      () => call("POST", `/v1/tasks/cancel${q}`),
      (r) => `${r.cancelled} cancelled, ${r.stopping} stopping`, status) }, "Cancel all"),
    h("button", { type: "button", onclick: () => act(
      "Run every failed task of this filter again?",
      () => call("POST", `/v1/tasks/retry${q}`),
      (r) => `${r.retried} run again`, status) }, "Retry failed"),
    priority,
    h("button", { type: "button", onclick: () => act(
      `Set the priority of every task of this filter that has not started to ${priority.value}?`,
      () => call("PUT", `/v1/tasks/priority${q}`, { priority: Number(priority.value) }),
      (r) => `${r.changed} changed`, status) }, "Set priority"));
}

/** A batch: its settings and progress, actions, its timeline and its tasks by order. */
export async function batch({ id }) {
  const [info, page, log, running] = await Promise.all([
    get(`/v1/batches/${id}`),
    get(`/v1/tasks${query({ batch: id, limit: 500 })}`),
    get(`/v1/attempts${query({ batch: id, limit: 1000 })}`),
    get("/v1/running").catch(() => []),
  ]);
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
    h("div", { class: "actions" },
      info.paused ? simple("Resume", "resume", "Let this batch's tasks run again?")
        : simple("Pause", "pause", "Hold this batch's tasks that have not started?"),
      simple("Retry failed", "retry", "Run this batch's failed tasks again?"),
      h("button", { type: "button", class: "danger", onclick: () => act(
        "Cancel this batch: its pending tasks, and stop those running?",
        () => call("POST", `/v1/batches/${id}/cancel`),
        (r) => `${r.cancelled} cancelled; running ones are asked to stop`, status) }, "Cancel batch")),
    status,
    h("h2", {}, "Timeline"),
    timeline(log.attempts, running.filter((r) => r.batch === Number(id)), Date.now() * 1000),
    h("h2", {}, "Tasks by order"),
    tasksTable(rows),
    page.next_cursor && h("p", {}, link(`#/tasks?batch=${id}`, "All its tasks…")),
  ];
}

/** A task: what it is, why it waits, its attempts with their logs and captured output. */
export async function task({ id }) {
  const view = await get(`/v1/tasks/${id}`);
  const status = h("p", { role: "status" });
  const priority = h("input", { type: "number", id: "task-priority", value: view.priority,
    "aria-label": "Priority" });
  const pending = !["succeeded", "failed", "cancelled"].includes(view.state);
  return [
    h("h1", {}, `Task ${id}`),
    table([["Field", (r) => r[0]], ["Value", (r) => r[1]]], [
      ["batch", batchLink(view.batch)], ["state", stateCell(view.state)],
      ["waiting on", waitingOn(view.waiting_on) || "–"],
      ["module", `${view.module_name ?? ""} ${view.module}`], ["order", view.order],
      ["group", view.group ?? "–"], ["priority", view.priority],
      ["attempts", `${view.attempts} of ${view.max_attempts}`],
      ["submitted", when(view.submitted_at)], ["due", when(view.due_at) || "–"],
      ["ended", when(view.ended_at) || "–"],
      ["input size", bytes(view.input_size)],
      ["output size", view.output_size === null ? "–" : bytes(view.output_size)],
    ]),
    h("div", { class: "actions" },
      pending && h("button", { type: "button", class: "danger", id: "cancel-task", onclick: () => act(
        `Cancel task ${id}?`, () => call("POST", `/v1/tasks/${id}/cancel`),
        (r) => `task ${id}: ${r.result}`, status) }, "Cancel task"),
      pending && h("label", { for: "task-priority" }, "Priority"), pending && priority,
      pending && h("button", { type: "button", id: "set-priority", onclick: () => act(
        `Set task ${id}'s priority to ${priority.value}?`,
        () => call("PUT", `/v1/tasks/${id}/priority`, { priority: Number(priority.value) }),
        () => `task ${id}: priority ${priority.value}`, status) }, "Set priority"),
      !pending && view.state !== "succeeded" && h("button", { type: "button", onclick: () => act(
        `Run task ${id} again?`, () => call("POST", `/v1/tasks/${id}/retry`),
        (r) => `task ${id}: ${r.state}`, status) }, "Retry")),
    status,
    h("h2", {}, "Output"),
    await output(view),
    h("h2", {}, "Attempts"),
    view.log.length === 0 ? h("p", { class: "muted" }, "None yet.") : view.log.map((a) => h("section", {},
      h("h3", {}, `Attempt ${a.attempt}: ${a.outcome}`),
      h("p", { class: "muted" }, `${a.node} slot ${a.slot ?? "?"} · ${when(a.started_at)} · ` +
        `${span(a.ended_at - a.started_at)}${a.error ? ` · ${a.error}` : ""}`),
      captured("Log lines", a.logs.map((l) => `${l.level} ${l.message}`).join("\n")),
      captured("Standard output", a.stdout),
      captured("Standard error", a.stderr))),
  ];
}

/** A size in bytes, as people read it. */
function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Largest output the page shows; a larger one is left to `qhost task output`. */
const SHOWN_OUTPUT = 64 * 1024;

/** A succeeded task's output: as text if it is UTF-8, else its first bytes in hex. */
async function output(view) {
  if (view.output_size === null) {
    return h("p", { class: "muted", id: "task-output" }, `None: the task is ${view.state}.`);
  }
  if (view.output_size > SHOWN_OUTPUT) {
    return h("p", { class: "muted", id: "task-output" },
      `${bytes(view.output_size)}, too large to show here: \`qhost task output ${view.id}\` prints it.`);
  }
  let data;
  try {
    data = await getBytes(`/v1/tasks/${view.id}/output`);
  } catch (e) {
    return h("p", { class: "error", id: "task-output" }, e.message);
  }
  if (data.length === 0) return h("p", { class: "muted", id: "task-output" }, "Empty.");
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(data);
    return h("pre", { id: "task-output", "aria-label": "Output" }, text);
  } catch {
    const hex = [...data.slice(0, 256)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
    return h("pre", { id: "task-output", "aria-label": "Output, in hex" },
      `${hex}${data.length > 256 ? " …" : ""}`);
  }
}

/** A section of what an attempt captured, titled, or a line saying it is empty. */
function captured(title, text) {
  return [h("h4", {}, title), text
    ? h("pre", { "aria-label": title }, text)
    : h("p", { class: "muted" }, "None.")];
}

/** Groups with work, their limits; pause, resume, limit. */
export async function groups() {
  const status = await get("/v1/status");
  const line = h("p", { role: "status" });
  return [
    h("h1", {}, "Groups"),
    h("p", { class: "muted" }, "Groups with tasks ready or running."),
    line,
    groupsTable(status.groups, (g) => h("button", { type: "button", onclick: () => act(
      `${g.paused ? "Resume" : "Pause"} group ${g.key}?`,
      () => call("POST", `/v1/groups/${encodeURIComponent(g.key)}/${g.paused ? "resume" : "pause"}`),
      (r) => `group ${r.key}: ${r.paused ? "paused" : "running"}`, line) }, g.paused ? "Resume" : "Pause")),
  ];
}

export async function nodes() {
  return [h("h1", {}, "Nodes"), nodesTable(await get("/v1/nodes"))];
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

/** A filter form whose fields become the route's query. */
function filters(params, fields) {
  const form = h("form", { class: "filters", role: "search" },
    fields.map(([name, label, options]) => h("div", {},
      h("label", { for: `f-${name}` }, label),
      options ? h("select", { id: `f-${name}`, name }, options.map((o) =>
        h("option", { value: o, selected: params[name] === o }, o || "any")))
        : h("input", { id: `f-${name}`, name, value: params[name] ?? "" }))),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    location.hash = `${location.hash.split("?")[0]}${query(data)}`;
  });
  return form;
}

function more(params, cursor) {
  if (!cursor) return null;
  return h("p", {}, link(`${location.hash.split("?")[0]}${query({ ...params, cursor })}`, "Next page"));
}

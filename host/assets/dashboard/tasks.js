// Task lists: the tasks page (filtered, paged), the table every list of tasks shares (with
// attempts, duration, end and error), rows picked by their checkboxes, and actions on every
// task of the filter or on the rows picked.

import { call, get } from "./api.js";
import {
  act, ago, batchLink, filters, h, more, plural, query, span, stateCell, table, taskLink,
  TASK_STATES, when,
} from "./view.js";

/** The ids of the rows picked, kept while the page is redrawn; cleared on a new route. */
const picked = new Set();
let pickedRoute = "";

/** Tasks, newest first, filtered, paged; with actions on the filter and on rows picked. */
export async function tasks(params) {
  const filter = { batch: params.batch, state: params.state, group: params.group,
    module: params.module, outcome: params.outcome };
  const page = await get(`/v1/tasks${query({ ...filter, cursor: params.cursor, limit: 50 })}`);
  if (pickedRoute !== location.hash) {
    picked.clear();
    pickedRoute = location.hash;
  }
  const status = h("p", { role: "status", id: "bulk-status" });
  return [
    h("h1", {}, "Tasks"),
    filters(params, [["batch", "Batch"], ["state", "State", ["", ...TASK_STATES]],
      ["group", "Group"], ["module", "Module"], ["outcome", "Outcome"]]),
    h("p", { class: "muted", id: "task-counts" }, Object.entries(page.counts)
      .map(([k, v]) => `${k} ${v}`).join(" · ") + (page.counts_capped ? " (counts capped)" : "")),
    bulkActions(filter, page.counts, status),
    pickedActions(status),
    status,
    tasksTable(page.tasks, true),
    more(params, page.next_cursor),
  ];
}

/**
 * Tasks as rows: id, batch, order, group, module, state, priority, attempts, duration,
 * ended, error, and what holds each back; with a checkbox each when `pick` is set.
 */
export function tasksTable(rows, pick = false) {
  const now = Date.now() * 1000;
  const box = (t) => h("input", {
    type: "checkbox", class: "pick", value: t.id, "aria-label": `Pick task ${t.id}`,
    checked: picked.has(t.id), onchange: (e) => {
      if (e.target.checked) picked.add(t.id); else picked.delete(t.id);
      showPicked();
    },
  });
  const all = h("input", {
    type: "checkbox", id: "pick-all", "aria-label": "Pick every task of this page",
    checked: rows.length > 0 && rows.every((t) => picked.has(t.id)), onchange: (e) => {
      for (const t of rows) if (e.target.checked) picked.add(t.id); else picked.delete(t.id);
      for (const input of document.querySelectorAll("main input.pick")) input.checked = e.target.checked;
      showPicked();
    },
  });
  return table([
    ...(pick ? [[all, box]] : []),
    ["Task", (t) => taskLink(t.id)], ["Batch", (t) => batchLink(t.batch)],
    ["Order", (t) => t.order, true], ["Group", (t) => t.group ?? ""],
    ["Module", (t) => t.module_name ?? t.module.slice(0, 12)],
    ["State", (t) => stateCell(t.state)], ["Priority", (t) => t.priority, true],
    ["Attempts", (t) => `${t.attempts} / ${t.max_attempts}`, true],
    ["Duration", (t) => duration(t, now), true, "From submitted to ended (or to now)"],
    ["Ended", (t) => ago(t.ended_at, now)],
    ["Error", (t) => errorCell(t.error)],
    ["Waiting on", (t) => waitingOn(t.waiting_on)],
  ], rows);
}

/** How long a task took from its submission to its end, or has taken so far. */
function duration(t, now) {
  if (t.ended_at !== null) return span(Math.max(0, t.ended_at - t.submitted_at));
  return ["running", "reserved"].includes(t.state) ? span(Math.max(0, now - t.submitted_at)) : "";
}

/** An error's first line, cut short; the whole of it (as the list has it) as its title. */
function errorCell(error) {
  if (!error) return "";
  const first = error.split("\n")[0];
  const short = first.length > 80 ? `${first.slice(0, 80)}…` : first;
  return h("span", { class: "error-cell", title: error }, short);
}

/** What holds a task back, in words. */
export function waitingOn(w) {
  if (!w) return "";
  switch (w.kind) {
    case "gate": return `order ${w.order} (${w.open} not ended)`;
    case "after": return `${w.open} task(s) it runs after: ${w.tasks.map((t) => t.key ?? `#${t.id}`).join(", ")}${w.open > w.tasks.length ? ", …" : ""}`;
    case "batch_paused": return "its batch is paused";
    case "group_paused": return `group ${w.group} is paused`;
    case "delay": return `delayed until ${when(w.until)}`;
    case "retry": return `retry after attempt ${w.attempts}, at ${when(w.until)}`;
    case "group": return w.limit === 0 ? `group ${w.group} has limit 0`
      : `group ${w.group}: ${w.running} of ${w.limit} running`;
    case "rate": return `group ${w.group}'s rate: next token at ${when(w.until)}`;
    case "held": return `group ${w.group} held after a deferral, until ${when(w.until)}`;
    case "budget": return `tenant ${w.tenant}'s CPU budget is spent, until ${when(w.until)}`;
    case "batch": return w.max_parallel === 0 ? "its batch's max_parallel is 0"
      : `its batch: ${w.running} of ${w.max_parallel} running`;
    case "tenant": return `tenant ${w.tenant}: ${w.running} of ${w.max_running} running`;
    default: return w.kind;
  }
}

const ENDED = ["succeeded", "failed", "cancelled"];

/**
 * Cancel, retry and priority on every task of the filter, whatever it names (none: every
 * task). The counts say how many each reaches as the list counted them.
 */
function bulkActions(filter, counts, status) {
  const q = query(filter);
  const states = filter.state ? [filter.state] : TASK_STATES;
  // A retry takes the failed tasks, and the cancelled ones when the filter names them.
  const retryable = (filter.state === "cancelled" ? ["cancelled"] : ["failed"])
    .filter((s) => states.includes(s)).reduce((n, s) => n + (counts[s] ?? 0), 0);
  const open = states.filter((s) => !ENDED.includes(s)).reduce((n, s) => n + (counts[s] ?? 0), 0);
  const scope = Object.values(filter).some((v) => v) ? "of this filter" : "in the queue";
  const priority = h("input", { type: "number", id: "bulk-priority", value: 10, "aria-label": "New priority" });
  return h("div", { class: "actions", role: "group", "aria-label": "Act on every task of the filter" },
    h("button", { type: "button", id: "retry-all", disabled: retryable === 0, onclick: () => act(
      `Run every ${filter.state === "cancelled" ? "cancelled" : "failed"} task ${scope} again ` +
        `(${plural(retryable, "task")} when counted)?`,
      () => call("POST", `/v1/tasks/retry${q}`),
      (r) => `${plural(r.retried, "task")} run again`, status) },
    `Retry all ${filter.state === "cancelled" ? "cancelled" : "failed"} (${retryable})`),
    h("button", { type: "button", class: "danger", id: "cancel-all", disabled: open === 0, onclick: () => act(
      `Cancel every pending task ${scope}, and stop its running ones ` +
        `(${plural(open, "task")} when counted)?`,
      () => call("POST", `/v1/tasks/cancel${q}`),
      (r) => `${r.cancelled} cancelled, ${r.stopping} stopping`, status) }, `Cancel all (${open})`),
    priority,
    h("button", { type: "button", onclick: () => act(
      `Set the priority of every task ${scope} that has not started to ${priority.value}?`,
      () => call("PUT", `/v1/tasks/priority${q}`, { priority: Number(priority.value) }),
      (r) => `${plural(r.changed, "task")} changed`, status) }, "Set priority"));
}

/** Retry or cancel the rows picked. */
function pickedActions(status) {
  const ids = () => [...picked].sort((a, b) => a - b).join(",");
  return h("div", { class: "actions", role: "group", "aria-label": "Act on the tasks picked" },
    h("span", { id: "picked-count", class: "muted" }, pickedText()),
    h("button", { type: "button", id: "retry-picked", disabled: picked.size === 0, onclick: () => act(
      `Run the failed or cancelled ones of the ${plural(picked.size, "task")} picked again?`,
      () => call("POST", `/v1/tasks/retry?state=failed,cancelled&tasks=${ids()}`),
      (r) => { picked.clear(); return `${plural(r.retried, "task")} run again`; }, status) },
    "Retry picked"),
    h("button", { type: "button", class: "danger", id: "cancel-picked", disabled: picked.size === 0,
      onclick: () => act(`Cancel the ${plural(picked.size, "task")} picked?`,
        () => call("POST", `/v1/tasks/cancel?tasks=${ids()}`),
        (r) => { picked.clear(); return `${r.cancelled} cancelled, ${r.stopping} stopping`; }, status) },
    "Cancel picked"));
}

const pickedText = () => (picked.size ? `${plural(picked.size, "task")} picked` : "No task picked");

/** Updates what depends on the rows picked without redrawing the page. */
function showPicked() {
  document.getElementById("picked-count").textContent = pickedText();
  for (const id of ["retry-picked", "cancel-picked"]) {
    document.getElementById(id).disabled = picked.size === 0;
  }
}

// Where tasks run: the groups with their limits (idle ones too) and the nodes with the task
// in each of their slots.

import { call, get } from "./api.js";
import { act, ago, batchLink, h, more, span, table, taskLink, when } from "./view.js";

/** A group's rate as `5/1s`, with its burst when more than one. */
function rate(r) {
  return r ? `${r.limit}/${r.period}${r.burst > 1 ? ` burst ${r.burst}` : ""}` : "–";
}

/** Every group with its limit and rate, and its ready tasks and tokens left when it has
 * some; pause, resume. */
export async function groups(params) {
  const [page, status] = await Promise.all([
    get(`/v1/groups?limit=200${params.cursor ? `&cursor=${encodeURIComponent(params.cursor)}` : ""}`),
    get("/v1/status").catch(() => ({ groups: [] })),
  ]);
  const ready = new Map(status.groups.map((g) => [g.key, g.ready ?? g.pending]));
  const tokens = new Map(status.groups.map((g) => [g.key, g.tokens]));
  const line = h("p", { role: "status" });
  return [
    h("h1", {}, "Groups"),
    h("p", { class: "muted" }, "Every group with its limit and rate, idle ones too; ready counts and tokens left for the busiest."),
    line,
    table([
      ["Group", (g) => g.key], ["Limit", (g) => g.limit, true],
      ["Running", (g) => g.running, true],
      ["Ready", (g) => ready.get(g.key) ?? "–", true],
      ["Rate", (g) => rate(g.rate)],
      ["Tokens", (g) => tokens.get(g.key) ?? "–", true],
      ["Paused", (g) => (g.paused ? "yes" : "")],
      ["", (g) => h("button", { type: "button", onclick: () => act(
        `${g.paused ? "Resume" : "Pause"} group ${g.key}?`,
        () => call("POST", `/v1/groups/${encodeURIComponent(g.key)}/${g.paused ? "resume" : "pause"}`),
        (r) => `group ${r.key}: ${r.paused ? "paused" : "running"}`, line) }, g.paused ? "Resume" : "Pause")],
    ], page.groups),
    more(params, page.next_cursor),
  ];
}

/** The nodes, then each slot of each live node with the task it runs. */
export async function nodes() {
  const [list, running] = await Promise.all([get("/v1/nodes"), get("/v1/running").catch(() => [])]);
  const now = Date.now() * 1000;
  const slots = [];
  for (const n of list) {
    const here = running.filter((r) => r.node === n.node);
    for (let slot = 0; slot < n.workers; slot++) {
      slots.push({ node: n.node, slot, task: here.find((r) => r.slot === slot) });
    }
    // Claimed, not yet on a slot: reserved.
    for (const r of here.filter((r) => r.slot === null || r.slot === undefined)) {
      slots.push({ node: n.node, slot: null, task: r });
    }
  }
  return [
    h("h1", {}, "Nodes"),
    nodesTable(list),
    h("h2", {}, "Slots"),
    table([
      ["Node", (s) => s.node], ["Slot", (s) => (s.slot === null ? "reserved" : s.slot), true],
      ["Task", (s) => (s.task ? taskLink(s.task.task) : h("span", { class: "muted" }, "idle"))],
      ["Batch", (s) => (s.task ? batchLink(s.task.batch) : "")],
      ["Group", (s) => s.task?.group ?? ""],
      ["Attempt", (s) => s.task?.attempt ?? "", true],
      ["For", (s) => (s.task ? span(Math.max(0, now - s.task.since)) : ""), true],
    ], slots),
  ];
}

/** The nodes: slots busy, heartbeat, clock offset, start. */
export function nodesTable(nodes) {
  const now = Date.now() * 1000;
  return table([
    ["Node", (n) => n.node],
    ["Slots busy", (n) => `${n.busy} / ${n.workers}`, true],
    ["Heartbeat", (n) => ago(n.heartbeat_at, now)],
    ["Clock offset", (n) => span(Math.abs(n.clock_offset)), true],
    ["Started", (n) => when(n.started_at)],
  ], nodes);
}

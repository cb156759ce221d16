// A batch's graph: a node per task and an arrow per edge (`after`), in columns by depth
// (a task one column right of the deepest task it runs after), each node coloured by its
// state and a link to its task. Drawn only for batches with edges, and for at most
// MAX_NODES tasks: past that the page says how many were left out.

import { h } from "./view.js";

const SVG = "http://www.w3.org/2000/svg";
const MAX_NODES = 400;
const COLUMN = 120;
const ROW = 28;
const COLOURS = {
  succeeded: "#1a7f37", failed: "#b42318", cancelled: "#6e7781", running: "#0b5cad",
  reserved: "#0b5cad", ready: "#9a6700", held: "#9a6700", waiting: "#8c959f",
};

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

/** The depth of each task: 0 for one after none, else one more than its deepest. */
function depths(ids, edges) {
  const deps = new Map(ids.map((id) => [id, []]));
  for (const e of edges) if (deps.has(e.task) && deps.has(e.dep)) deps.get(e.task).push(e.dep);
  const depth = new Map();
  const visit = (id) => {
    if (depth.has(id)) return depth.get(id);
    depth.set(id, 0); // a cycle cannot be stored; this only guards the walk
    const d = Math.max(-1, ...deps.get(id).map(visit)) + 1;
    depth.set(id, d);
    return d;
  };
  ids.forEach(visit);
  return depth;
}

/**
 * Draws `graph` (`GET /v1/batches/{id}/graph`) over `tasks` (rows of `GET /v1/tasks`,
 * for their keys and states) into a new element; none when the batch has no edges.
 */
export function graphView(graph, tasks) {
  if (graph.edges.length === 0) return null;
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const all = [...new Set(graph.edges.flatMap((e) => [e.dep, e.task]).concat(tasks.map((t) => t.id)))]
    .sort((a, b) => a - b);
  const ids = all.slice(0, MAX_NODES);
  const depth = depths(ids, graph.edges);
  const columns = [];
  for (const id of ids) (columns[depth.get(id)] ??= []).push(id);
  const at = new Map();
  columns.forEach((column, x) => column.forEach((id, y) => at.set(id, [x, y])));
  const rows = Math.max(...columns.map((c) => c.length));
  const width = columns.length * COLUMN + 20;
  const svg = s("svg", {
    width, height: rows * ROW + 10, role: "img",
    "aria-label": `Graph of ${ids.length} tasks and their edges, in ${columns.length} columns by depth`,
  });
  const point = (id) => { const [x, y] = at.get(id); return [x * COLUMN + 10, y * ROW + 8]; };
  for (const e of graph.edges) {
    if (!at.has(e.dep) || !at.has(e.task)) continue;
    const [x1, y1] = point(e.dep);
    const [x2, y2] = point(e.task);
    svg.append(s("line", { x1: x1 + 90, y1: y1 + 10, x2, y2: y2 + 10, class: "edge",
      stroke: "#8c959f", "data-dep": e.dep, "data-task": e.task }));
  }
  for (const id of ids) {
    const [x, y] = point(id);
    const task = byId.get(id);
    const state = task?.state ?? "unknown";
    const name = task?.key ?? `#${id}`;
    const title = `task ${id}${task?.key ? ` (${task.key})` : ""} · ${state}`;
    svg.append(s("a", { href: `#/task/${id}`, "aria-label": title },
      s("rect", { class: "node", x, y, width: 90, height: 20, rx: 4,
        fill: COLOURS[state] ?? "#8c959f", "data-task": id, "data-state": state },
        s("title", {}, title)),
      s("text", { x: x + 4, y: y + 14, class: "on-bar" },
        name.length > 12 ? `${name.slice(0, 11)}…` : name)));
  }
  const left = all.length - ids.length;
  return h("div", { class: "timeline-box" },
    h("div", { class: "timeline" }, svg),
    (left > 0 || graph.cut) && h("p", { class: "muted" },
      `${left > 0 ? `${left} more tasks are not drawn. ` : ""}` +
      `${graph.cut ? "The batch has more edges than the 20,000 read." : ""}`));
}

// A batch's timeline: one lane per node and slot, one bar per attempt from its start to
// its end (or to now while it runs), coloured by outcome and labelled with the task's
// order and group, so the gates between orders and a group's one-at-a-time runs show at
// a glance. Zoomed with its buttons; each bar is a link to its task.

import { h, span } from "./view.js";

const SVG = "http://www.w3.org/2000/svg";
const LANE = 26;
const GUTTER = 120;
const COLOURS = {
  succeeded: "#1a7f37", cancelled: "#6e7781", running: "#0b5cad",
};
const FAILED = "#b42318";

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

/**
 * Draws `attempts` (ended, from the log) and `running` (now) into a new element;
 * `now` is the time the running bars end at, in microseconds.
 */
export function timeline(attempts, running, now) {
  const bars = [
    ...attempts.map((a) => ({ ...a, outcome: a.outcome })),
    ...running.map((r) => ({ ...r, started_at: r.since, ended_at: now, outcome: "running" })),
  ];
  const holder = h("div", { class: "timeline-box" });
  if (bars.length === 0) {
    holder.append(h("p", { class: "muted" }, "No attempt has started yet."));
    return holder;
  }
  const lanes = [...new Set(bars.map(lane))].sort();
  const start = Math.min(...bars.map((b) => b.started_at));
  const end = Math.max(...bars.map((b) => b.ended_at));
  let zoom = 1;
  const box = h("div", { class: "timeline" });
  const draw = () => {
    const width = Math.max(600, 1000 * zoom);
    const x = (t) => GUTTER + ((t - start) / Math.max(1, end - start)) * (width - GUTTER - 10);
    const svg = s("svg", {
      width, height: lanes.length * LANE + 24, role: "img",
      "aria-label": `Timeline of ${bars.length} attempts on ${lanes.length} slots`,
    });
    lanes.forEach((name, i) => {
      svg.append(s("text", { x: 4, y: i * LANE + 17, class: "lane" }, name));
      svg.append(s("line", { x1: GUTTER, x2: width, y1: (i + 1) * LANE, y2: (i + 1) * LANE,
        stroke: "#c9d1d9" }));
    });
    for (const b of bars) {
      const left = x(b.started_at);
      const w = Math.max(2, x(b.ended_at) - left);
      const y = lanes.indexOf(lane(b)) * LANE + 4;
      const label = `task ${b.task} · order ${b.order}${b.group ? ` · ${b.group}` : ""}`;
      const title = `${label} · attempt ${b.attempt} · ${b.outcome} · ${span(b.ended_at - b.started_at)}`;
      const link = s("a", { href: `#/task/${b.task}`, "aria-label": title },
        s("rect", { class: "attempt", x: left, y, width: w, height: LANE - 8, rx: 3,
          fill: COLOURS[b.outcome] ?? FAILED, "data-task": b.task, "data-outcome": b.outcome },
          s("title", {}, title)));
      if (w > 40) {
        link.append(s("text", { x: left + 3, y: y + 13, class: "on-bar" },
          `o${b.order}${b.group ? ` ${b.group}` : ""}`));
      }
      svg.append(link);
    }
    svg.append(s("text", { x: GUTTER, y: lanes.length * LANE + 18 }, "0"));
    svg.append(s("text", { x: width - 70, y: lanes.length * LANE + 18 }, span(end - start)));
    box.replaceChildren(svg);
  };
  const zoomBy = (f) => { zoom = Math.min(64, Math.max(1, zoom * f)); draw(); };
  holder.append(
    h("div", { class: "actions" },
      h("button", { type: "button", onclick: () => zoomBy(2) }, "Zoom in"),
      h("button", { type: "button", onclick: () => zoomBy(0.5) }, "Zoom out"),
      h("button", { type: "button", onclick: () => { zoom = 1; draw(); } }, "Fit")),
    box,
    h("p", { class: "legend" },
      ["succeeded", "running", "cancelled"].map((o) =>
        h("span", {}, h("i", { style: `background:${COLOURS[o]}` }), o)),
      h("span", {}, h("i", { style: `background:${FAILED}` }), "failed (any other outcome)")));
  draw();
  return holder;
}

/** The lane of an attempt: its node and slot. */
function lane(b) {
  return `${b.node} #${b.slot ?? "?"}`;
}

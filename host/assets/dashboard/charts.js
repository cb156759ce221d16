// The overview's charts of the last hour, drawn from the samples `GET /v1/status/history`
// returns (one every 10 s, kept in memory by the node that answers, since it started):
// tasks ended per minute, and the ready queue's depth and oldest age. Inline SVG, each
// with a summary in words beside it for whoever cannot see it.

import { h, span, when } from "./view.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 560;
const HEIGHT = 150;
const PAD = { left: 48, right: 48, top: 10, bottom: 22 };
const HOUR = 3600e6;
const COLOURS = { succeeded: "#1a7f37", failed: "#b42318", age: "#8a6100", ready: "#0b5cad" };

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

/** A rounded-up top for an axis whose largest value is `max`. */
function top(max) {
  if (!(max > 0)) return 1;
  const step = 10 ** Math.floor(Math.log10(max));
  return Math.ceil(max / step) * step;
}

/**
 * A chart over the last hour up to `now`: `series` of [{at, value}] points with a name,
 * colour and axis (`left` or `right`, each scaled to its own largest value).
 */
function chart(label, series, now, units) {
  const x = (at) => PAD.left + ((at - (now - HOUR)) / HOUR) * (WIDTH - PAD.left - PAD.right);
  const tops = {};
  for (const side of ["left", "right"]) {
    tops[side] = top(Math.max(0, ...series.filter((l) => l.axis === side)
      .flatMap((l) => l.points.map((p) => p.value))));
  }
  const y = (v, side) => HEIGHT - PAD.bottom - (v / tops[side]) * (HEIGHT - PAD.top - PAD.bottom);
  const svg = s("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, width: WIDTH, height: HEIGHT,
    role: "img", "aria-label": `${label}, over the last hour`, class: "chart" },
  s("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: HEIGHT - PAD.bottom, y2: HEIGHT - PAD.bottom,
    class: "axis" }),
  s("text", { x: PAD.left, y: HEIGHT - 6 }, "1 h ago"),
  s("text", { x: WIDTH - PAD.right, y: HEIGHT - 6, "text-anchor": "end" }, "now"));
  for (const side of series.some((l) => l.axis === "right") ? ["left", "right"] : ["left"]) {
    const at = side === "left" ? PAD.left - 4 : WIDTH - PAD.right + 4;
    const anchor = side === "left" ? "end" : "start";
    svg.append(s("text", { x: at, y: PAD.top + 8, "text-anchor": anchor }, `${tops[side]}`),
      s("text", { x: at, y: HEIGHT - PAD.bottom, "text-anchor": anchor }, "0"));
  }
  for (const line of series) {
    if (line.points.length === 0) continue;
    svg.append(s("polyline", {
      class: "series", "data-series": line.name, fill: "none", stroke: line.colour,
      "stroke-width": 2,
      points: line.points.map((p) => `${x(p.at).toFixed(1)},${y(p.value, line.axis).toFixed(1)}`)
        .join(" "),
    }));
    // A dot at each point, so that a line of one point shows too.
    for (const p of line.points) {
      svg.append(s("circle", { cx: x(p.at).toFixed(1), cy: y(p.value, line.axis).toFixed(1), r: 2.5,
        fill: line.colour }));
    }
  }
  const legend = h("p", { class: "legend" }, series.map((l) =>
    h("span", {}, h("i", { style: `background:${l.colour}` }), `${l.name} (${units[l.axis]})`)));
  return h("figure", { class: "chart-box" }, h("figcaption", {}, label), svg, legend);
}

/** Tasks ended per minute between consecutive samples, and the queue's depth and age. */
export function history(data) {
  const now = Date.now() * 1000;
  const samples = data.samples.filter((p) => p.at >= now - HOUR);
  const note = h("p", { class: "muted" },
    `Sampled every ${data.interval_seconds} s by the node that answers, since it started at ` +
    `${when(data.since)}; the ended counts are the whole cluster's.`);
  if (samples.length < 2) {
    return [note, h("p", { id: "history-summary" },
      `Not enough samples yet: the charts start ${data.interval_seconds} s after the node starts.`)];
  }
  const rate = (kind) => samples.slice(1).map((p, i) => {
    const before = samples[i];
    const minutes = (p.at - before.at) / 60e6;
    return { at: p.at, value: (p.ended_total[kind] - before.ended_total[kind]) / minutes };
  });
  const first = samples[0];
  const last = samples[samples.length - 1];
  const ended = (kind) => last.ended_total[kind] - first.ended_total[kind];
  const age = last.oldest_ready_age_seconds;
  const summary = h("p", { id: "history-summary" },
    `Over the last ${span(last.at - first.at)}: ${ended("succeeded")} succeeded, ` +
    `${ended("failed")} failed. Now ${last.ready} ready` +
    `${age === null ? "" : `, the oldest for ${age.toFixed(1)} s`}.`);
  return [
    note, summary,
    h("div", { class: "charts" },
      chart("Tasks ended per minute", [
        { name: "succeeded", colour: COLOURS.succeeded, axis: "left", points: rate("succeeded") },
        { name: "failed", colour: COLOURS.failed, axis: "left", points: rate("failed") },
      ], now, { left: "per minute" }),
      chart("Ready tasks: the oldest one's age (left axis) and how many (right)", [
        { name: "oldest ready", colour: COLOURS.age, axis: "left",
          points: samples.map((p) => ({ at: p.at, value: p.oldest_ready_age_seconds ?? 0 })) },
        { name: "ready", colour: COLOURS.ready, axis: "right",
          points: samples.map((p) => ({ at: p.at, value: p.ready })) },
      ], now, { left: "seconds", right: "tasks" })),
  ];
}

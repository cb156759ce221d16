// Schedules: each with its next ticks in its own time zone (and the viewer's), its recent
// ticks and what became of them; pause, resume, run now.

import { call, get } from "./api.js";
import { act, ago, batchLink, h, table, when } from "./view.js";

/** A time in microseconds as a date and time in the IANA zone `zone`. */
function inZone(micros, zone) {
  try {
    return new Date(micros / 1000).toLocaleString(undefined, { timeZone: zone, timeZoneName: "short" });
  } catch {
    return when(micros);
  }
}

/** Every schedule, and each one's next and recent ticks. */
export async function schedules() {
  const list = (await get("/v1/schedules")).schedules;
  const views = await Promise.all(list.map((s) => get(`/v1/schedules/${encodeURIComponent(s.name)}`)));
  const line = h("p", { role: "status", id: "schedule-status" });
  const path = (s, what) => `/v1/schedules/${encodeURIComponent(s.name)}/${what}`;
  return [
    h("h1", {}, "Schedules"),
    line,
    table([
      ["Schedule", (s) => s.name], ["Cron", (s) => h("code", {}, s.cron)], ["Zone", (s) => s.timezone],
      ["Next tick", (s) => (s.paused ? "paused" : s.next_due ? [inZone(s.next_due, s.timezone), " (", ago(s.next_due), ")"] : "none")],
      ["Last batch", (s) => (s.last_batch ? batchLink(s.last_batch) : "–")],
      ["Missed", (s) => s.missed, true],
      ["", (s) => h("span", { class: "actions" },
        h("button", { type: "button", id: `pause-${s.name}`, onclick: () => act(
          `${s.paused ? "Resume" : "Pause"} schedule ${s.name}?`,
          () => call("POST", path(s, s.paused ? "resume" : "pause")),
          (r) => `schedule ${r.name}: ${r.paused ? "paused" : "running"}`, line) },
        s.paused ? "Resume" : "Pause"),
        h("button", { type: "button", id: `run-${s.name}`, onclick: () => act(
          `Run schedule ${s.name} now, out of turn?`, () => call("POST", path(s, "run")),
          (t) => `schedule ${s.name}: ${t.result}${t.batch ? `, batch ${t.batch}` : ""}` +
            `${t.detail ? `: ${t.detail}` : ""}`, line) }, "Run now"))],
    ], views),
    views.map((s) => h("section", { "aria-label": `Schedule ${s.name}` },
      h("h2", {}, `${s.name}`),
      h("p", { class: "muted" }, `${s.cron} in ${s.timezone} · overlap ${s.overlap} · ` +
        `catch up ${s.catch_up}${s.paused ? " · paused" : ""}`),
      h("h3", {}, "Next ticks"),
      s.next_ticks.length === 0 ? h("p", { class: "muted" }, "None.")
        : h("ul", { class: "ticks" }, s.next_ticks.map((t) =>
          h("li", {}, inZone(t, s.timezone), " · ", ago(t)))),
      h("h3", {}, "Recent ticks"),
      table([
        ["Due", (t) => inZone(t.due_at, s.timezone)], ["Fired", (t) => ago(t.fired_at)],
        ["Result", (t) => h("span", { class: `tick ${t.result}` }, t.result)],
        ["Batch", (t) => (t.batch ? batchLink(t.batch) : "")], ["Detail", (t) => t.detail ?? ""],
      ], s.ticks.slice(0, 10)))),
  ];
}

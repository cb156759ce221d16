// A task's page: first what triage needs (its state, how it ended, its error and its
// input), then its details and actions, its output, and its attempts with what each
// captured.

import { call, get, getBytes } from "./api.js";
import {
  act, ago, batchLink, bytes, h, outcomeText, span, stateCell, table, when,
} from "./view.js";
import { waitingOn } from "./tasks.js";

/** Largest input or output the page shows; a larger one is left to the CLI. */
const SHOWN = 64 * 1024;

/** A task: why it ended or waits, what it is, its actions, output and attempts. */
export async function task({ id }) {
  const view = await get(`/v1/tasks/${id}`);
  const status = h("p", { role: "status" });
  const priority = h("input", { type: "number", id: "task-priority", value: view.priority,
    "aria-label": "Priority" });
  const pending = !["succeeded", "failed", "cancelled"].includes(view.state);
  const [input, output] = await Promise.all([
    bytesShown(view.input_size, `/v1/tasks/${id}/input`, "task-input", "Input",
      `\`GET /v1/tasks/${id}/input\` gives it whole.`),
    view.output_size === null
      ? h("p", { class: "muted", id: "task-output" }, `None: the task is ${view.state}.`)
      : bytesShown(view.output_size, `/v1/tasks/${id}/output`, "task-output", "Output",
        `\`qhost task output ${id}\` prints it.`),
  ]);
  return [
    h("h1", {}, `Task ${id}`),
    h("section", { class: "summary", "aria-label": "Why it ended or waits" },
      h("dl", {},
        h("div", {}, h("dt", {}, "State"), h("dd", { id: "task-state" }, stateCell(view.state),
          view.waiting_on ? ` · ${waitingOn(view.waiting_on)}` : "")),
        h("div", {}, h("dt", {}, "Outcome"), h("dd", { id: "task-outcome" },
          view.outcome ? `${outcomeText(view.outcome)} (${view.outcome})` : "–",
          view.ended_at ? [" · ended ", ago(view.ended_at)] : "")),
        h("div", {}, h("dt", {}, "Attempts"), h("dd", {}, `${view.attempts} of ${view.max_attempts}`))),
      h("h2", {}, "Error"),
      view.error ? h("pre", { id: "task-error", class: "error-text", "aria-label": "Error" }, view.error)
        : h("p", { class: "muted", id: "task-error" }, "None."),
      h("h2", {}, "Input"), input),
    h("h2", {}, "Details"),
    table([["Field", (r) => r[0]], ["Value", (r) => r[1]]], [
      ["batch", batchLink(view.batch)], ["state", view.state],
      ["waiting on", waitingOn(view.waiting_on) || "–"],
      ["module", `${view.module_name ?? ""} ${view.module}`], ["order", view.order],
      ["group", view.group ?? "–"], ["cost", `${view.cost} token${view.cost === 1 ? "" : "s"}`],
      ["priority", view.priority],
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
      !pending && view.state !== "succeeded" && h("button", { type: "button", id: "retry-task",
        onclick: () => act(`Run task ${id} again?`, () => call("POST", `/v1/tasks/${id}/retry`),
          (r) => `task ${id}: ${r.state}`, status) }, "Retry")),
    status,
    h("h2", {}, "Output"),
    output,
    h("h2", {}, "Attempts"),
    view.log.length === 0 ? h("p", { class: "muted" }, "None yet.")
      : view.log.map((a) => attemptSection(id, a)),
  ];
}

/** Bytes the page reads from `path`: as text if UTF-8, else the first ones in hex. */
async function bytesShown(size, path, id, label, tooLarge) {
  if (size > SHOWN) {
    return h("p", { class: "muted", id }, `${bytes(size)}, too large to show here: ${tooLarge}`);
  }
  let data;
  try {
    data = await getBytes(path);
  } catch (e) {
    return h("p", { class: "error", id }, e.message);
  }
  if (data.length === 0) return h("p", { class: "muted", id }, "Empty.");
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(data);
    return h("pre", { id, "aria-label": label }, text);
  } catch {
    const hex = [...data.slice(0, 256)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
    return h("pre", { id, "aria-label": `${label}, in hex` },
      `${hex}${data.length > 256 ? " …" : ""}`);
  }
}

/**
 * An attempt: how it ran and what it captured, each field cut to 4 KiB in the task's view;
 * when one was, a button reads the attempt whole in its place.
 */
function attemptSection(id, a) {
  const section = h("section", { id: `attempt-${a.attempt}` }, ...attemptParts(a));
  if (a.cut.length > 0) {
    const status = h("span", { role: "status" });
    section.append(h("p", { class: "muted cut-note" }, `Cut to 4 KiB: ${a.cut.join(", ")}. `,
      h("button", { type: "button", class: "whole-attempt", onclick: async () => {
        try {
          const whole = await get(`/v1/tasks/${id}/attempts/${a.attempt}`);
          section.replaceChildren(...attemptParts(whole).flat());
        } catch (e) {
          status.textContent = e.message;
        }
      } }, "Show it whole"), " ", status));
  }
  return section;
}

/** What an attempt section shows: how it ran, its error, and what it captured. */
function attemptParts(a) {
  return [
    h("h3", {}, `Attempt ${a.attempt}: ${a.outcome}`),
    h("p", { class: "muted" }, `${a.node} slot ${a.slot ?? "?"} · ${when(a.started_at)} · ` +
      `${span(a.ended_at - a.started_at)}`),
    a.error && h("pre", { class: "error-text", "aria-label": `Attempt ${a.attempt}'s error` }, a.error),
    captured("Log lines", a.logs.map((l) => `${l.level} ${l.message}`).join("\n")),
    captured("Standard output", a.stdout),
    captured("Standard error", a.stderr),
  ];
}

/** A section of what an attempt captured, titled, or a line saying it is empty. */
function captured(title, text) {
  return [h("h4", {}, title), text
    ? h("pre", { "aria-label": title }, text)
    : h("p", { class: "muted" }, "None.")];
}

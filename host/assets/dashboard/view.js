// Building blocks of every page: elements from data (never HTML from strings, so no
// server text is ever read as markup), tables that scroll within the page, links, times,
// durations and sizes as people read them, filter forms, and the confirmation every
// action asks for.

/** `h("td", {class: "num"}, "3")`: an element with attributes and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "style") el.style.cssText = v; // an attribute would break the CSP
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/**
 * A table with `columns` ([heading, cell(row), numeric?, title?]) over `rows`, in a box that
 * scrolls sideways on a narrow screen rather than widening the page.
 */
export function table(columns, rows, caption) {
  return h("div", { class: "table-box" }, h("table", {},
    caption && h("caption", { class: "muted" }, caption),
    h("thead", {}, h("tr", {}, columns.map(([name, , num, title]) =>
      h("th", { scope: "col", class: num ? "num" : null, title }, name)))),
    h("tbody", {}, rows.length === 0
      ? h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, "None."))
      : rows.map((row) => h("tr", {}, columns.map(([, cell, num]) =>
        h("td", { class: num ? "num" : null }, cell(row))))))));
}

export const link = (href, text) => h("a", { href }, text);
export const batchLink = (id) => link(`#/batch/${id}`, `batch ${id}`);
export const taskLink = (id) => link(`#/task/${id}`, `task ${id}`);
export const stateCell = (state) => h("span", { class: `state ${state}` }, state);

/** How a task's attempt ended, in words (the server's `Outcome`). */
const OUTCOMES = {
  "succeeded": "succeeded",
  "guest-error": "returned an error",
  "trap": "trapped (crashed)",
  "timeout": "timed out",
  "memory-limit": "went over its memory limit",
  "output-too-large": "returned too large an output",
  "http-limit": "went over its HTTP limits",
  "budget": "stopped: its tenant's CPU budget ran out",
  "cancelled": "cancelled",
  "lost": "lost with its node",
  "host-error": "failed in the host",
  "skipped": "skipped: a task it runs after did not succeed",
  "deferred": "deferred: asked to run again later",
};
export const outcomeText = (outcome) => (outcome ? OUTCOMES[outcome] ?? outcome : "");

/** `n thing`, or `n things`. */
export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A time in microseconds as how long ago it was (`5 s ago`), its date and time as title. */
export function ago(micros, now = Date.now() * 1000) {
  if (micros === null || micros === undefined) return "";
  const past = now >= micros;
  const text = span(Math.abs(now - micros));
  return h("time", { datetime: new Date(micros / 1000).toISOString(), title: when(micros) },
    past ? `${text} ago` : `in ${text}`);
}

/** A size in bytes, as people read it. */
export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** `?a=1&b=2` from the entries of `params` that have a value. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** A filter form whose fields become the route's query. */
export function filters(params, fields) {
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

/** A link to the next page of a list, if there is one. */
export function more(params, cursor) {
  if (!cursor) return null;
  return h("p", {}, link(`${location.hash.split("?")[0]}${query({ ...params, cursor })}`, "Next page"));
}

/** A time in microseconds since the epoch, as a local date and time. */
export function when(micros) {
  if (micros === null || micros === undefined) return "";
  return new Date(micros / 1000).toLocaleString();
}

/** A duration in microseconds, as `1.2 s`, `3 m 4 s`. */
export function span(micros) {
  const ms = micros / 1000;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} m`;
}

/** Every task state, in the order a task goes through them: the server's `TaskState`
 * (`host/src/store/state.rs` says what each means; a test there keeps this list alike). */
export const TASK_STATES = ["waiting", "ready", "held", "reserved", "running", "succeeded",
  "failed", "cancelled"];

/** The states a batch's progress counts, in the order a bar shows them: ended first. */
export const STATES = [...TASK_STATES.slice(5), ...TASK_STATES.slice(0, 5).reverse()];

/** A progress bar of a batch's tasks by state. */
export function progressBar(progress) {
  const total = STATES.reduce((n, s) => n + (progress[s] ?? 0), 0);
  const ended = progress.succeeded + progress.failed + progress.cancelled;
  return h("div", {
    class: "bar", role: "img",
    "aria-label": `${ended} of ${total} ended: ${progress.succeeded} succeeded, ` +
      `${progress.failed} failed, ${progress.cancelled} cancelled`,
  }, STATES.filter((s) => progress[s]).map((s) =>
    h("span", { class: `s-${s}`, style: `width:${(100 * progress[s]) / total}%` })));
}

/** Asks before an action; resolves to true if the user confirmed. */
export function confirm(text) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  dialog.returnValue = "";
  dialog.showModal();
  document.getElementById("confirm-ok").focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

/** Runs `action` after a confirmation, then shows what it answered in `status`. */
export async function act(question, action, describe, status) {
  if (!(await confirm(question))) return false;
  try {
    status.textContent = describe(await action());
    status.className = "";
    return true;
  } catch (e) {
    status.textContent = e.message;
    status.className = "error";
    return false;
  }
}

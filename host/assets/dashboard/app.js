// The dashboard's frame: sign-in, routes (`#/batch/7?...`) to pages, and keeping the page
// shown up to date: a batch page follows its batch's events, every page reads again every
// few seconds while the tab is visible.

import { ApiError, follow, get, token } from "./api.js";
import * as pages from "./pages.js";
import { h } from "./view.js";

const ROUTES = [
  [/^\/$/, pages.overview],
  [/^\/batches$/, pages.batches],
  [/^\/batch\/(?<id>\d+)$/, pages.batch],
  [/^\/tasks$/, pages.tasks],
  [/^\/task\/(?<id>\d+)$/, pages.task],
  [/^\/groups$/, pages.groups],
  [/^\/nodes$/, pages.nodes],
  [/^\/modules$/, pages.modules],
  [/^\/schedules$/, pages.schedules],
  [/^\/tenants$/, pages.tenants],
];
const REFRESH_MS = 3000;

const view = document.getElementById("view");
const live = document.getElementById("live");
let current = null; // { key, stop: AbortController }

/** The route's page function and its parameters (path captures and query). */
function route() {
  const [path, search] = (location.hash.slice(1) || "/").split("?");
  for (const [pattern, page] of ROUTES) {
    const match = pattern.exec(path);
    if (match) {
      const params = { ...Object.fromEntries(new URLSearchParams(search)), ...match.groups };
      return { path, page, params };
    }
  }
  return null;
}

/** Shows the route's page; again and again while it is shown. */
async function show() {
  current?.stop.abort();
  live.textContent = "";
  const stop = new AbortController();
  current = { stop };
  const target = route();
  for (const a of document.querySelectorAll("nav a")) {
    const here = a.getAttribute("href").slice(1) === (target?.path ?? "");
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  if (!target) {
    view.replaceChildren(h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Overview")));
    return;
  }
  if (!(await render(target, stop.signal, true))) return;
  view.focus({ preventScroll: true });
  const redraw = oneAtATime(() => render(target, stop.signal), stop.signal);
  if (target.page === pages.batch) {
    follow(target.params.id, (name) => {
      if (name === "end") live.textContent = "all tasks ended";
      redraw();
    }, stop.signal, (state) => {
      live.textContent = state === "live" ? "live" : "reconnecting…";
    }).catch(() => {});
  }
  while (!stop.signal.aborted) {
    await new Promise((r) => setTimeout(r, REFRESH_MS));
    if (!stop.signal.aborted && document.visibilityState === "visible" && !busy()) {
      await redraw();
    }
  }
}

/**
 * `draw`, never two at once: asked while one runs, it runs once more after it, however
 * often it was asked (a busy batch sends thousands of events a second). Nothing once
 * `signal` is aborted.
 */
function oneAtATime(draw, signal) {
  let running = null;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await draw();
        } while (again && !signal.aborted);
      } finally {
        running = null; // in the step that checked `again`: no ask falls between
      }
    })();
    return running;
  };
}

/** While a dialog is open or the user types in a field, the page is not redrawn. */
function busy() {
  const active = document.activeElement;
  return document.querySelector("dialog[open]") ||
    (active && ["INPUT", "SELECT"].includes(active.tagName) && view.contains(active));
}

/**
 * Draws the page; false if the user must sign in first, or left the page (`signal`
 * aborted) while its reads were under way: a page left never draws over the next one.
 */
async function render(target, signal, first = false) {
  try {
    const content = await target.page(target.params);
    if (signal.aborted) return false;
    const focused = document.activeElement?.id;
    // A page is a list of elements, lists of them among it (a task's attempts) at any depth.
    view.replaceChildren(...[content].flat(Infinity).filter(Boolean));
    if (!first && focused) document.getElementById(focused)?.focus();
    view.dataset.loaded = String(Date.now());
    return true;
  } catch (e) {
    if (signal.aborted) return false;
    if (e instanceof ApiError && e.status === 401) {
      signIn();
      return false;
    }
    view.replaceChildren(h("h1", {}, "Could not load this page"),
      h("p", { class: "error", role: "alert" }, e.message));
    return true;
  }
}

function signIn(message = "") {
  const dialog = document.getElementById("sign-in");
  document.getElementById("sign-in-error").textContent = message;
  if (!dialog.open) dialog.showModal();
  document.getElementById("token").focus();
}

document.getElementById("sign-in-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = document.getElementById("token");
  token.set(input.value.trim());
  try {
    // A handle opens only its batch: go there.
    const handle = /^qhb_(\d+)_/.exec(token.get());
    await get(handle ? `/v1/batches/${handle[1]}` : "/v1/status");
    input.value = "";
    document.getElementById("sign-in").close();
    document.getElementById("sign-out").hidden = false;
    if (handle) location.hash = `#/batch/${handle[1]}`;
    show();
  } catch (err) {
    token.clear();
    signIn(err instanceof ApiError && err.status === 401 ? "That token is not accepted." : err.message);
  }
});

document.getElementById("sign-out").addEventListener("click", () => {
  token.clear();
  current?.stop.abort();
  view.replaceChildren();
  document.getElementById("sign-out").hidden = true;
  signIn();
});

window.addEventListener("hashchange", show);
if (token.get()) {
  document.getElementById("sign-out").hidden = false;
  show();
} else {
  signIn();
}

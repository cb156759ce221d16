// The dashboard's one way to the server: the JSON API with the token kept in this tab's
// session storage (never in a URL), and a batch's server-sent events read over fetch, as
// EventSource cannot send an Authorization header.

const KEY = "qhost-token";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

/** A failed request: its status, and the server's `{error, detail}`. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.detail ?? `the server answered ${status}`);
    this.status = status;
    this.error = body?.error;
  }
}

/** Calls `method path` with an optional JSON body; resolves to the JSON answer. */
export async function call(method, path, body) {
  const headers = { Authorization: `Bearer ${token.get() ?? ""}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, json);
  return json;
}

export const get = (path) => call("GET", path);

/** `GET path`'s body as bytes (a task's output). */
export async function getBytes(path) {
  const response = await fetch(path, { headers: { Authorization: `Bearer ${token.get() ?? ""}` } });
  if (!response.ok) {
    const text = await response.text();
    throw new ApiError(response.status, text ? JSON.parse(text) : null);
  }
  return new Uint8Array(await response.arrayBuffer());
}

/**
 * Follows a batch's events until its `end` or until `signal` aborts, calling
 * `onEvent(name, data)` for each; reconnects after a dropped connection with
 * `Last-Event-ID`, so nothing is missed.
 */
export async function follow(batch, onEvent, signal, onState = () => {}) {
  let last = null;
  while (!signal.aborted) {
    try {
      const headers = { Authorization: `Bearer ${token.get() ?? ""}` };
      if (last !== null) headers["Last-Event-ID"] = last;
      const response = await fetch(`/v1/batches/${batch}/events`, { headers, signal });
      if (!response.ok) throw new ApiError(response.status, null);
      onState("live");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const event = parse(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (event.id !== null) last = event.id;
          if (event.data !== null) onEvent(event.name, JSON.parse(event.data));
          // Every task has ended: the server closes the stream, and there is no more.
          if (event.name === "end") return;
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof ApiError && e.status < 500) throw e;
    }
    onState("reconnecting");
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** One server-sent event's fields. */
function parse(block) {
  const event = { name: "message", data: null, id: null };
  for (const line of block.split("\n")) {
    const colon = line.indexOf(":");
    if (colon === 0) continue;
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event.name = value;
    else if (field === "data") event.data = event.data === null ? value : `${event.data}\n${value}`;
    else if (field === "id") event.id = value;
  }
  return event;
}

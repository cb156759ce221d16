// qhost's JavaScript guest SDK: write a task as a plain function.
//
//   // task.js
//   import { log } from "./qhost.js";
//   export function run(input, info) {          // input: Uint8Array
//     log.info(`task ${info.id}: ${input.length} bytes`);
//     return "done";                             // a string, bytes, or a value sent as JSON
//   }
//
// main.js, the component's entry, wraps that `run` with `task` below. What it handles once,
// for QuickJS (componentize-qjs) and SpiderMonkey (componentize-js) alike:
// - the return value becomes the output: a Uint8Array or ArrayBuffer as it is, a string as
//   UTF-8, undefined or null as no output, anything else as JSON;
// - anything thrown (an Error, a string, anything) ends the attempt with outcome
//   `guest-error` and its message (SpiderMonkey traps on a thrown Error object otherwise);
// - info's id, batch and order are Numbers in both engines (SpiderMonkey gives BigInts,
//   which JSON.stringify refuses), and `group` is a string or null;
// - `console.log` and the others write to the attempt's log where the engine has no
//   console (QuickJS); `log.info(...)` and the other levels always do;
// - `retryAfter(seconds)`: an upstream pushed back (429 with `Retry-After`, say); the
//   attempt ends `deferred` once `run` returns, and the task runs again after that many
//   seconds without using an attempt, its group waiting meanwhile.

// The host interface is named with its version: the componentizers match imports against
// the versioned WIT name.
import * as host from "qhost:task/host@0.1.0";

function line(value) {
  return typeof value === "string" ? value : String(value);
}

/** The attempt's log, one function per level: `log.warn("slow")`. */
export const log = {
  trace: (message) => host.log("trace", line(message)),
  debug: (message) => host.log("debug", line(message)),
  info: (message) => host.log("info", line(message)),
  warn: (message) => host.log("warn", line(message)),
  error: (message) => host.log("error", line(message)),
};

/**
 * Ends this attempt as `deferred` once `run` returns, whatever it returns, and runs the
 * task again after `seconds` (rounded up) without using one of its attempts; its group
 * starts no task meanwhile. The operator caps the wait and how often a task may be
 * deferred.
 */
export function retryAfter(seconds) {
  host.retryAfter(Math.max(0, Math.min(Math.ceil(Number(seconds)), 4294967295)));
}

if (typeof globalThis.console === "undefined") {
  const join = (args) => args.map((a) => (typeof a === "string" ? a : show(a))).join(" ");
  globalThis.console = {
    log: (...args) => log.info(join(args)),
    info: (...args) => log.info(join(args)),
    debug: (...args) => log.debug(join(args)),
    warn: (...args) => log.warn(join(args)),
    error: (...args) => log.error(join(args)),
  };
}

function show(value) {
  try {
    return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? Number(v) : v)) ?? String(value);
  } catch {
    return String(value);
  }
}

/** UTF-8 bytes of a string (neither engine is sure to have TextEncoder). */
export function encode(text) {
  if (typeof TextEncoder !== "undefined") return new TextEncoder().encode(text);
  const bytes = [];
  for (const char of text) {
    const c = char.codePointAt(0);
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(bytes);
}

/** The input read as UTF-8 text; throws if it is not valid UTF-8. */
export function text(bytes) {
  if (typeof TextDecoder !== "undefined") return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  // decodeURIComponent checks the UTF-8 as it decodes.
  let escaped = "";
  for (let i = 0; i < bytes.length; i++) escaped += "%" + (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
  try {
    return decodeURIComponent(escaped);
  } catch {
    throw new Error("the input is not UTF-8 text");
  }
}

/** The input read as JSON; throws an error saying so if it is not. */
export function json(bytes) {
  try {
    return JSON.parse(text(bytes));
  } catch (e) {
    throw new Error(`the input is not the JSON this task takes: ${message(e)}`);
  }
}

function message(error) {
  if (error instanceof Error) return error.message ? `${error.name}: ${error.message}`.replace(/^Error: /, "") : error.name;
  return line(error);
}

function output(value) {
  if (value === undefined || value === null) return new Uint8Array(0);
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === "string") return encode(value);
  return encode(show(value));
}

function number(value) {
  return typeof value === "bigint" ? Number(value) : value;
}

/** Wraps `run(input, info)` as the component's export (main.js does this). */
export function task(run) {
  return function (input, info) {
    const plain = {
      id: number(info.id),
      batch: number(info.batch),
      attempt: number(info.attempt),
      order: number(info.order),
      group: info.group ?? null,
    };
    try {
      return output(run(input, plain));
    } catch (e) {
      // Both engines turn a thrown string into the `err` of the result.
      throw message(e);
    }
  };
}

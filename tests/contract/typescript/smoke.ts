// Drives a task from upload to output with a typed TypeScript client: openapi-fetch over
// the types openapi-typescript generated from qhost's OpenAPI document (generate.mjs), as
// a user of that client would. Compiled with tsc, so a call the document does not allow
// fails the build before anything runs.
//
// Run by tests/tests/contract.rs: node out/smoke.js SERVER_URL ADMIN_TOKEN COMPONENT.
// Exits 1, saying which step failed, if any answer is not the one documented.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import createClient from "openapi-fetch";
import type { components, paths } from "./qhost-api.js";

type Schemas = components["schemas"];
// States and error codes are typed as their enums, not as any string.
type IsEnum<T> = string extends T ? false : true;
const typedStates: IsEnum<Schemas["TaskState"]> = true;
const typedCodes: IsEnum<Schemas["Error"]["error"]> = true;

function fail(step: string, why: unknown): never {
  console.error(`${step}: ${typeof why === "string" ? why : JSON.stringify(why)}`);
  process.exit(1);
}

/** The body of a documented success, or the step's failure. */
function expect<T>(step: string, status: number, answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.response.status !== status || answer.data === undefined) {
    fail(step, `expected ${status}, got ${answer.response.status}: ${JSON.stringify(answer.error)}`);
  }
  return answer.data;
}

async function main(): Promise<void> {
  const [url, token, component] = process.argv.slice(2);
  if (!url || !token || !component || !typedStates || !typedCodes) {
    fail("usage", "node smoke.js SERVER_URL ADMIN_TOKEN COMPONENT");
  }
  const admin = createClient<paths>({ baseUrl: url, headers: { Authorization: `Bearer ${token}` } });

  const module = expect(
    "add_module",
    201,
    await admin.POST("/v1/modules", {
      params: { query: { name: "smoke-echo-ts" } },
      body: new Blob([readFileSync(component)]),
      bodySerializer: (body) => body,
      headers: { "Content-Type": "application/wasm" },
    }),
  );
  if (!module.names.includes("smoke-echo-ts")) fail("add_module", module);

  // An opening sent twice with one key is done once: the repeat gets the first answer.
  const key = randomUUID();
  const open = () =>
    admin.POST("/v1/batches", {
      params: { header: { "Idempotency-Key": key } },
      body: { name: "smoke-ts", failure_policy: "continue" },
    });
  const first = await open();
  const opened = expect("open_batch", 201, first);
  const again = await open();
  const repeated = expect("open_batch again", 201, again);
  if (first.response.headers.get("Idempotent-Replayed") !== null) {
    fail("open_batch", "a first answer says it was replayed");
  }
  if (again.response.headers.get("Idempotent-Replayed") !== "true" || repeated.batch.id !== opened.batch.id) {
    fail("open_batch again", `expected the first answer replayed, got batch ${repeated.batch.id}`);
  }

  // From here on the batch's handle, not the admin token, as a tenant would.
  const handle = createClient<paths>({ baseUrl: url, headers: { Authorization: `Bearer ${opened.handle}` } });
  const batch = opened.batch.id;
  const submitted = expect(
    "submit_tasks",
    201,
    await handle.POST("/v1/batches/{id}/tasks", {
      params: { path: { id: batch } },
      body: { tasks: [{ module: module.digest, input: "hello, typescript" }] },
    }),
  );
  const [task] = submitted.tasks;
  if (task === undefined || submitted.tasks.length !== 1) fail("submit_tasks", submitted);

  const done = expect(
    "wait_batch",
    200,
    await handle.GET("/v1/batches/{id}/wait", { params: { path: { id: batch }, query: { timeout: "60s" } } }),
  );
  if (done.progress.succeeded !== 1) fail("wait_batch", done.progress);

  const view = expect("show_task", 200, await handle.GET("/v1/tasks/{id}", { params: { path: { id: task } } }));
  const state: Schemas["TaskState"] = view.state;
  if (state !== "succeeded" || view.outcome !== "succeeded" || view.log.length !== 1) {
    fail("show_task", view);
  }

  const output = expect(
    "task_output",
    200,
    await handle.GET("/v1/tasks/{id}/output", { params: { path: { id: view.id } }, parseAs: "arrayBuffer" }),
  );
  const text = new TextDecoder().decode(output);
  if (text !== "hello, typescript" || output.byteLength !== view.output_size) {
    fail("task_output", `expected the input back, got ${JSON.stringify(text)}`);
  }

  // A failure parses as the documented error: the handle does not open the modules.
  const refused = await handle.GET("/v1/modules");
  const code: Schemas["Error"]["error"] | undefined = refused.error?.error;
  if (refused.response.status !== 403 || code !== "forbidden") {
    fail("list_modules with a handle", `expected a 403 forbidden, got ${refused.response.status} ${JSON.stringify(refused.error)}`);
  }

  const released = await handle.DELETE("/v1/batches/{id}", { params: { path: { id: batch } } });
  if (released.response.status !== 204) fail("release_batch", released.error);
  console.log(`ok: task ${task} of batch ${batch} ran module ${module.digest} and returned its input`);
}

main().catch((error: unknown) => fail("unexpected", String(error)));

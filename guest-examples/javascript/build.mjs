// Builds wordcount.js into qhost components with both JavaScript engines:
//   node build.mjs OUT_DIR
// writes OUT_DIR/wordcount-js.wasm (QuickJS, componentize-qjs) and
// OUT_DIR/wordcount-js-spidermonkey.wasm (SpiderMonkey, componentize-js).
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { componentize as componentizeQuickJs } from "componentize-qjs";
import { componentize as componentizeSpiderMonkey } from "@bytecodealliance/componentize-js";

const here = dirname(fileURLToPath(import.meta.url));
const wit = resolve(here, "../../wit");
const source = join(here, "wordcount.js");
const outDir = resolve(process.argv[2] ?? join(here, "../target/languages"));
await mkdir(outDir, { recursive: true });

// QuickJS: `sync` because qhost calls `run` with the plain (not async) component ABI.
const quickjs = await componentizeQuickJs({
  witPath: wit,
  world: "qhost:task/task",
  jsSource: await readFile(source, "utf8"),
  jsPath: source,
  sync: true,
});
await writeFile(join(outDir, "wordcount-js.wasm"), quickjs.component);

// SpiderMonkey: only stdio, for console.log and uncaught errors; no fetch, no clocks.
const spidermonkey = await componentizeSpiderMonkey({
  sourcePath: source,
  witPath: wit,
  worldName: "qhost:task/task",
  disableFeatures: ["random", "clocks", "http", "fetch-event"],
});
await writeFile(join(outDir, "wordcount-js-spidermonkey.wasm"), spidermonkey.component);

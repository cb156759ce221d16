// {{name}}: a qhost task. Its input is a name; its output greets it.
import { log, text } from "./qhost.js";

// Runs once per attempt, on the task's input (a Uint8Array). The return value is the
// output (a string, bytes, or a value sent as JSON). Anything thrown ends the attempt
// with outcome `guest-error` and its message (retried while attempts are left).
// JSON input: `const request = json(input);` (import `json` from "./qhost.js").
export function run(input, info) {
  const name = text(input).trim();
  if (!name) throw new Error("the input is empty: give a name, such as --input world");
  log.info(`task ${info.id} attempt ${info.attempt}: ${input.length} bytes`);
  return `Hello, ${name}!`;
}

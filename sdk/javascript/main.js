// The component's entry: exports the `run` of task.js, wrapped by the SDK (qhost.js).
import { task } from "./qhost.js";
import { run } from "./task.js";

const wrapped = task(run);
export { wrapped as run };

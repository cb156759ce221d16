// Who uses the server: each tenant's tasks running and open against its limits, what its
// attempts have used (slot time, CPU time, memory over time, HTTP bytes), and where it
// stands against its budget. The admin sees every tenant; a tenant's token its own.

import { get } from "./api.js";
import { h, table } from "./view.js";

const seconds = (micros) => (micros / 1e6).toFixed(3);
const against = (count, most) => `${count} / ${most ?? "none"}`;
/** `CPU 1.250 s of 10s, HTTP 2000 of 100000 B per 1h`, and when its tasks may start
 * again once it is spent. */
const budget = (t) => {
  const b = t.budget;
  if (!b) return "none";
  const used = t.budget_used;
  const meters = [];
  if (b.cpu) meters.push(`CPU ${seconds(used.cpu_micros)} s of ${b.cpu}`);
  if (b.memory_mib_seconds != null) {
    meters.push(`memory ${used.memory_mib_seconds.toFixed(3)} of ${b.memory_mib_seconds} MiB·s`);
  }
  if (b.http_bytes != null) meters.push(`HTTP ${used.http_bytes} of ${b.http_bytes} B`);
  const text = `${meters.join(", ")} per ${b.period}`;
  if (t.held_until == null) return text;
  return `${text}: spent, its tasks wait until ${new Date(t.held_until / 1000).toISOString()}`;
};

/** Every tenant's usage, as `GET /v1/usage` has it. */
export async function tenants() {
  const { tenants: list } = await get("/v1/usage");
  return [
    h("h1", {}, "Tenants"),
    h("p", { class: "muted" },
      "What each tenant runs now against its limits, and what its attempts have used since it was added."),
    table([
      ["Tenant", (t) => t.tenant],
      ["Running", (t) => against(t.running, t.max_running), true],
      ["Open", (t) => against(t.open, t.max_open), true],
      ["Weight", (t) => String(t.weight), true, "its share of the slots under saturation"],
      ["Slot s", (t) => seconds(t.slot_micros), true, "slot time its attempts held"],
      ["CPU s", (t) => seconds(t.cpu_micros), true, "CPU time its attempts used"],
      ["Memory MiB·s", (t) => t.memory_mib_seconds.toFixed(3), true, "memory its attempts held over time"],
      ["HTTP bytes", (t) => String(t.http_bytes), true, "HTTP body bytes its attempts sent and received"],
      ["Budget", budget, false, "what was used in the budget's current window"],
    ], list),
  ];
}

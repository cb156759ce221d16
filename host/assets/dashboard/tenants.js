// Who uses the server: each tenant's tasks running and open against its limits, what its
// attempts have used (slot time, CPU time, memory over time), and where it stands against
// its CPU budget. The admin sees every tenant; a tenant's token its own.

import { get } from "./api.js";
import { h, table } from "./view.js";

const seconds = (micros) => (micros / 1e6).toFixed(3);
const against = (count, most) => `${count} / ${most ?? "none"}`;
/** `1.250 s of 10s per 1h`, and when its tasks may start again once it is spent. */
const budget = (t) => {
  if (!t.cpu_budget) return "none";
  const used = `${seconds(t.budget_used_micros)} s of ${t.cpu_budget.cpu} per ${t.cpu_budget.period}`;
  if (t.held_until == null) return used;
  return `${used}: spent, its tasks wait until ${new Date(t.held_until / 1000).toISOString()}`;
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
      ["CPU budget", budget, false, "CPU time used in the budget's current window"],
    ], list),
  ];
}

-- Tenants, by name, with their tokens not revoked, their open tasks, their budget's
-- columns (store/budget.rs) and their weight: every one, or the one of id $1.
SELECT t.id, t.name, t.created_at,
       (SELECT count(*) FROM tenant_tokens k WHERE k.tenant_id = t.id AND k.revoked_at IS NULL),
       t.max_priority, t.shared_groups, t.modules, t.allow_http, t.max_running, t.running, t.max_limits,
       t.max_open, (SELECT coalesce(SUM(o.open), 0)::bigint FROM batch_orders o WHERE o.tenant_id = t.id),
       t.slot_micros, t.cpu_micros, t.memory_mib_seconds,
       t.budget_period, t.cpu_budget, t.memory_budget, t.http_budget,
       t.budget_window, t.budget_used, t.memory_used, t.http_used, t.held_until,
       t.weight, t.http_bytes
FROM tenants t
WHERE $1::bigint IS NULL OR t.id = $1
ORDER BY t.name

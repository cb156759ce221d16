-- Changes what tenant $1's batches may do in one statement: a field whose flag is false
-- keeps its value. A budget set, raised or lifted keeps the tenant held only if what it
-- used in the window at $18 (now) reaches the new budget of a meter (store/budget.rs
-- states the window's rule; keep them together).
--
-- $2, $3 max_priority; $4 shared_groups (NULL: kept); $5, $6 modules; $7, $8 allow_http;
-- $9, $10 max_running; $11, $12 max_limits; $13, $14 max_open; $15 the budget set, then
-- its period $17 (NULL: none) and meters $16 CPU microseconds, $20 memory
-- MiB-milliseconds, $21 HTTP bytes (NULL: not bounded); $19 weight (NULL: kept), which
-- keeps the tenant's pass (fair_used / weight, store/fair.rs): a new weight changes its
-- share from now on
UPDATE tenants
SET max_priority = CASE WHEN $2 THEN $3 ELSE max_priority END,
    shared_groups = coalesce($4, shared_groups),
    modules = CASE WHEN $5 THEN $6 ELSE modules END,
    allow_http = CASE WHEN $7 THEN $8 ELSE allow_http END,
    max_running = CASE WHEN $9 THEN $10 ELSE max_running END,
    max_limits = CASE WHEN $11 THEN $12 ELSE max_limits END,
    max_open = CASE WHEN $13 THEN $14 ELSE max_open END,
    cpu_budget = CASE WHEN $15 THEN $16 ELSE cpu_budget END,
    budget_period = CASE WHEN $15 THEN $17 ELSE budget_period END,
    memory_budget = CASE WHEN $15 THEN $20 ELSE memory_budget END,
    http_budget = CASE WHEN $15 THEN $21 ELSE http_budget END,
    fair_used = CASE WHEN $19::int IS NULL THEN fair_used ELSE fair_used * $19 / weight END,
    weight = coalesce($19, weight),
    held_until = CASE
        WHEN NOT $15 THEN held_until
        WHEN $17::bigint IS NOT NULL AND budget_window = $18 - $18 % $17
             AND (budget_used >= $16 OR memory_used >= $20::bigint
                  OR http_used >= $21::bigint)
        THEN budget_window + $17
        ELSE 0 END
WHERE id = $1

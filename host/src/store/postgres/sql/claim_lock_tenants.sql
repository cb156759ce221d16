-- The claim's tenants, each with its room (NULL: no limit; none while held at $2) and its
-- budget's columns (store/budget.rs). A tenant with a running limit is returned only when
-- this claim could lock its counter (another claim holding it makes it full for this
-- one); one without is read as it stands, and counted at the claim's end.
--
-- $1 tenant ids (bigint[])
-- $2 now
WITH limited AS (
    SELECT id, CASE WHEN held_until > $2 THEN 0 ELSE max_running - running END AS room,
           budget_period, cpu_budget, memory_budget, http_budget,
           budget_window, budget_used, memory_used, http_used
    FROM tenants
    WHERE id = ANY($1) AND max_running IS NOT NULL
    ORDER BY id FOR UPDATE SKIP LOCKED)
SELECT id, room, budget_period, cpu_budget, memory_budget, http_budget,
       budget_window, budget_used, memory_used, http_used
FROM limited
UNION ALL
SELECT id, CASE WHEN held_until > $2 THEN 0 END,
       budget_period, cpu_budget, memory_budget, http_budget,
       budget_window, budget_used, memory_used, http_used
FROM tenants
WHERE id = ANY($1) AND max_running IS NULL

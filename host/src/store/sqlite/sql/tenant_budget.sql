-- Sets or lifts tenant ?6's budget (?1 period in microseconds, NULL: none; ?2 CPU
-- microseconds, ?3 memory MiB-milliseconds, ?4 HTTP bytes, NULL: not bounded), and holds
-- it to the window's end at ?5 (now) only if what it used in the window already reaches
-- the new budget of a meter: a raised or lifted budget lets its work go at once
-- (store/budget.rs states the window's rule; keep them together).
UPDATE tenants SET budget_period = ?1, cpu_budget = ?2, memory_budget = ?3, http_budget = ?4,
    held_until = CASE WHEN ?1 IS NOT NULL AND budget_window = ?5 - ?5 % ?1
                       AND (budget_used >= ?2 OR memory_used >= ?3 OR http_used >= ?4)
                      THEN budget_window + ?1 ELSE 0 END
WHERE id = ?6

-- Sets or lifts tenant ?4's CPU budget (?1 microseconds per ?2; NULLs: none), and holds it
-- to the window's end at ?3 (now) only if what it used in the window already reaches the
-- new budget: a raised or lifted budget lets its work go at once (store/budget.rs states
-- the window's rule; keep them together).
UPDATE tenants SET cpu_budget = ?1, budget_period = ?2,
    held_until = CASE WHEN ?1 IS NOT NULL AND budget_window = ?3 - ?3 % ?2
                       AND budget_used >= ?1
                      THEN budget_window + ?2 ELSE 0 END
WHERE id = ?4

-- Frees ?1 of tenant ?3's slots, whose ?7 attempts that ran held ?2 microseconds of slot
-- time, used ?4 of CPU and ?5 MiB-seconds of memory; counts their slot time in its fair
-- share (store/fair.rs) and their CPU in its budget's window at ?6 (now), and holds the
-- tenant to the window's end once the window's use reaches its budget (store/budget.rs
-- states the window's rule; keep them together). Returns whether the tenant is held.
UPDATE tenants SET running = running - ?1, slot_micros = slot_micros + ?2,
    fair_used = fair_used + ?2, attempts_ended = attempts_ended + ?7,
    cpu_micros = cpu_micros + ?4, memory_mib_seconds = memory_mib_seconds + ?5,
    budget_used = CASE WHEN cpu_budget IS NULL THEN 0
                       WHEN budget_window = ?6 - ?6 % budget_period THEN budget_used + ?4
                       ELSE ?4 END,
    budget_window = coalesce(?6 - ?6 % budget_period, 0),
    held_until = CASE
        WHEN cpu_budget IS NOT NULL
         AND CASE WHEN budget_window = ?6 - ?6 % budget_period THEN budget_used + ?4
                  ELSE ?4 END >= cpu_budget
        THEN max(held_until, ?6 - ?6 % budget_period + budget_period)
        ELSE held_until END
WHERE id = ?3
RETURNING held_until > ?6

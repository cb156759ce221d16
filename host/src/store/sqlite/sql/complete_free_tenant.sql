-- Frees ?1 of tenant ?3's slots, whose ?7 attempts that ran held ?2 microseconds of slot
-- time, used ?4 of CPU, ?5 MiB-seconds of memory (?8 in MiB-milliseconds, as a budget
-- counts it) and ?9 HTTP bytes; counts their slot time in its fair share (store/fair.rs)
-- and their use in its budget's window at ?6 (now), and holds the tenant to the window's
-- end once the window's use of any meter reaches its budget (store/budget.rs states the
-- window's rule; keep them together). Returns whether the tenant is held.
UPDATE tenants SET running = running - ?1, slot_micros = slot_micros + ?2,
    fair_used = fair_used + ?2, attempts_ended = attempts_ended + ?7,
    cpu_micros = cpu_micros + ?4, memory_mib_seconds = memory_mib_seconds + ?5,
    http_bytes = http_bytes + ?9,
    budget_used = CASE WHEN budget_period IS NULL THEN 0
                       WHEN budget_window = ?6 - ?6 % budget_period THEN budget_used + ?4
                       ELSE ?4 END,
    memory_used = CASE WHEN budget_period IS NULL THEN 0
                       WHEN budget_window = ?6 - ?6 % budget_period THEN memory_used + ?8
                       ELSE ?8 END,
    http_used = CASE WHEN budget_period IS NULL THEN 0
                     WHEN budget_window = ?6 - ?6 % budget_period THEN http_used + ?9
                     ELSE ?9 END,
    budget_window = coalesce(?6 - ?6 % budget_period, 0),
    held_until = CASE
        WHEN budget_period IS NULL THEN held_until
        WHEN CASE WHEN budget_window = ?6 - ?6 % budget_period THEN budget_used + ?4
                  ELSE ?4 END >= cpu_budget
          OR CASE WHEN budget_window = ?6 - ?6 % budget_period THEN memory_used + ?8
                  ELSE ?8 END >= memory_budget
          OR CASE WHEN budget_window = ?6 - ?6 % budget_period THEN http_used + ?9
                  ELSE ?9 END >= http_budget
        THEN max(held_until, ?6 - ?6 % budget_period + budget_period)
        ELSE held_until END
WHERE id = ?3
RETURNING held_until > ?6

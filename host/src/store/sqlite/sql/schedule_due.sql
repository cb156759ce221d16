-- The schedules not paused whose next tick is due, earliest first (index schedules_due).
--
-- ?1 now
SELECT id, name, cron, timezone, plan, overlap, catch_up, paused, next_due, last_batch, missed,
       created_at
FROM schedules WHERE paused = 0 AND next_due IS NOT NULL AND next_due <= ?1
ORDER BY next_due

-- One schedule, by name.
--
-- ?1 name
SELECT id, name, cron, timezone, plan, overlap, catch_up, paused, next_due, last_batch, missed,
       created_at
FROM schedules WHERE name = ?1

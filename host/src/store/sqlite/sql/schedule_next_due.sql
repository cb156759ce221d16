-- The earliest tick still to come of the schedules not paused (index schedules_due).
--
-- ?1 now
SELECT MIN(next_due) FROM schedules WHERE paused = 0 AND next_due IS NOT NULL AND next_due > ?1

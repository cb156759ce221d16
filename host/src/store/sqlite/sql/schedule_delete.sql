-- Deletes a schedule (its ticks go by schedule_ticks_delete.sql).
--
-- ?1 schedule id
DELETE FROM schedules WHERE id = ?1

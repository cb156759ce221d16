-- Deletes a schedule's ticks.
--
-- ?1 schedule id
DELETE FROM schedule_ticks WHERE schedule_id = ?1

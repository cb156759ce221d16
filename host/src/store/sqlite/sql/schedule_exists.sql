-- Whether a schedule exists.
--
-- ?1 schedule id
SELECT EXISTS (SELECT 1 FROM schedules WHERE id = ?1)

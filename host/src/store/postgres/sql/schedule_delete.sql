-- Deletes a schedule; its ticks go with it (ON DELETE CASCADE).
--
-- $1 name
DELETE FROM schedules WHERE name = $1

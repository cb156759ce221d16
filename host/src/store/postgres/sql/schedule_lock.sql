-- Locks a schedule for a tick out of turn (run now).
--
-- $1 schedule id
SELECT id FROM schedules WHERE id = $1 FOR UPDATE

-- A schedule's handled ticks, newest first.
--
-- $1 schedule id, $2 how many
SELECT due_at, fired_at, result, batch_id, detail FROM schedule_ticks
WHERE schedule_id = $1 ORDER BY due_at DESC LIMIT $2

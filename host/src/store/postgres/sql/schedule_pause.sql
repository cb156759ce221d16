-- Pauses or resumes a schedule, with the tick it waits for next.
--
-- $1 name, $2 paused, $3 next tick (NULL: none)
UPDATE schedules SET paused = $2, next_due = $3 WHERE name = $1

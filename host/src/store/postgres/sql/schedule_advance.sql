-- Moves a schedule past a tick, only if its next tick is still the one the caller read.
-- Nodes handling the same tick queue on the row's lock; after the first commits, the
-- others find the next tick changed and move nothing.
--
-- $1 schedule id, $2 next tick read (NULL: none), $3 new next tick, $4 missed ticks to add
UPDATE schedules SET next_due = $3, missed = missed + $4
WHERE id = $1 AND next_due IS NOT DISTINCT FROM $2

-- Runs an ended task (4 failed or 5 cancelled) again: back at its batch's gate or behind
-- it, due at once, with a new place in its batch's fair queue. Its attempts stay counted
-- (the log keeps every one); its max attempts count again from them (its deferrals, which
-- were never charged, are counted on top of them still). It keeps the outcome
-- and error of its last attempt until the next one ends.
--
-- ?1 state: 1 ready if its order is the batch's gate, else 0 waiting
-- ?2 vseq: its new fair-queueing position
-- ?3 task id
UPDATE tasks SET state = ?1, listed = ?1, vseq = ?2, redriven_after = attempts - deferrals,
    not_before = 0,
    ended_at = NULL, cancel_requested = 0
WHERE id = ?3 AND state IN (4, 5);

-- Cancels every pending task of a batch; the caller counts its open orders again after.
--
-- ?1 now (ended_at)
-- ?2 the reason, kept as the tasks' error
-- ?3 batch id
--
-- state: 0 waiting and 1 ready (pending) become 5 cancelled.
UPDATE tasks SET state = 5, ended_at = ?1, outcome = 'cancelled', error = ?2
WHERE batch_id = ?3 AND state IN (0, 1);

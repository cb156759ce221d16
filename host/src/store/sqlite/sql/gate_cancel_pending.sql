-- Cancels every pending task of a batch; the caller counts its open orders again after.
--
-- ?1 now (ended_at)
-- ?2 the reason, kept as the tasks' error
-- ?3 batch id
--
-- state: 0 waiting and 1 ready (pending) become 5 cancelled; claimed ones, listed as
-- ready too (migrations/0012_listed.sql), stay.
UPDATE tasks SET state = 5, listed = 5, ended_at = ?1, outcome = 'cancelled',
    error = ?2
WHERE batch_id = ?3 AND listed IN (0, 1) AND state IN (0, 1);

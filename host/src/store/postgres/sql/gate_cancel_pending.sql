-- Ends every pending task of a batch as cancelled, out of the ready queue too. Returns how
-- many. The caller holds the batch's gate lock.
--
-- $1 now (ended_at)
-- $2 the error the tasks end with
-- $3 batch id
--
-- state: 0 waiting at a gate, 1 ready (also in the ready table), 5 cancelled.
WITH cancelled AS (
    UPDATE tasks SET state = 5, ended_at = $1, outcome = 'cancelled', error = $2
    WHERE batch_id = $3 AND state IN (0, 1)
    RETURNING id),
dequeued AS (DELETE FROM ready WHERE task_id IN (SELECT id FROM cancelled))
SELECT COUNT(*) FROM cancelled

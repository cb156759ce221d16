-- Puts a task whose attempt did not succeed back in the ready queue for another attempt,
-- due after its backoff. The caller has locked the task's row.
--
-- $1 not before: when the next attempt is due
-- $2 the outcome of the attempt that ended
-- $3 its error (or NULL)
-- $4 task id
--
-- state: 1 ready (also in the ready table).
WITH back AS (
    UPDATE tasks SET state = 1, not_before = $1, outcome = $2, error = $3,
        lease_node = NULL, lease_token = NULL
    WHERE id = $4
    RETURNING id, batch_id, group_key, priority, vseq, not_before)
INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before)
SELECT * FROM back

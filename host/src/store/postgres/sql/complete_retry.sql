-- Puts a task whose attempt did not succeed back in the queue for another attempt, due
-- after its backoff: ready at its batch's gate (and in the ready table), or waiting behind
-- it when a re-drive has reopened a lower order since its claim. The caller has locked the
-- task's row and its batch's gate.
--
-- $1 not before: when the next attempt is due
-- $2 the outcome of the attempt that ended
-- $3 its error (or NULL)
-- $4 task id
-- $5 attempts given back: 1 after a host error (the attempt is not the task's), else 0
-- $6 deferrals: 1 after a deferred attempt (which the attempts it may make count on top
--    of max_attempts), else 0
--
-- state: 1 ready (also in the ready table), 0 waiting at a gate.
WITH back AS (
    UPDATE tasks AS t SET not_before = $1, outcome = $2, error = $3,
        max_attempts = t.max_attempts + $5, deferrals = t.deferrals + $6,
        lease_node = NULL, lease_token = NULL,
        state = CASE WHEN t.ord = (SELECT MIN(o.ord) FROM batch_orders o
                                   WHERE o.batch_id = t.batch_id AND o.open > 0)
                     THEN 1 ELSE 0 END
    WHERE t.id = $4
    RETURNING t.id, t.batch_id, t.group_key, t.priority, t.vseq, t.not_before, t.state,
        t.submitted_at, t.tenant_id)
INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before,
        submitted_at, tenant_id)
SELECT id, batch_id, group_key, priority, vseq, not_before, submitted_at, tenant_id FROM back
WHERE state = 1

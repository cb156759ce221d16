-- Puts claimed tasks that their node hands back unstarted back in the queue, as before the
-- claim: the claim's attempt is not counted. Each is ready at its batch's gate (and
-- queued), and waits behind it when a re-drive has reopened a lower order since its
-- claim. The caller has locked the tasks' rows and their batches' gates.
--
-- $1 task ids (bigint[])
--
-- state: 1 ready (also in the ready table), 0 waiting at a gate.
WITH back AS (
    UPDATE tasks AS t SET attempts = attempts - 1, lease_node = NULL, lease_token = NULL,
        state = CASE WHEN t.ord = (SELECT MIN(o.ord) FROM batch_orders o
                                   WHERE o.batch_id = t.batch_id AND o.open > 0)
                     THEN 1 ELSE 0 END
    WHERE t.id = ANY($1)
    RETURNING t.id, t.batch_id, t.group_key, t.priority, t.vseq, t.not_before, t.state,
        t.submitted_at, t.tenant_id)
INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before,
        submitted_at, tenant_id)
SELECT id, batch_id, group_key, priority, vseq, not_before, submitted_at, tenant_id FROM back
WHERE state = 1

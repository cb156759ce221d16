-- Puts a task whose attempt suspended back to wait for its children that have not ended
-- (the edges from them, store/spawn.rs), with the state it saved; the attempt is given
-- back (its max_attempts rises by one): waiting is not a failure. Ready (and in the ready
-- table) at once when none is left and its order is its batch's gate. The caller has
-- locked the task's row, its open children's rows (so that none ends unseen while this
-- counts them) and its batch's gate.
--
-- $1 the saved state
-- $2 task id
--
-- state: 0 waiting, 1 ready; a dependency is open while its state is below 3 (ended).
WITH waiting_on AS (
    SELECT COUNT(*)::int AS n FROM task_edges e JOIN tasks d ON d.id = e.dep_id
    WHERE e.task_id = $2 AND d.state < 3),
back AS (
    UPDATE tasks AS t SET saved_state = $1, outcome = 'suspended', error = NULL,
        max_attempts = t.max_attempts + 1,
        lease_node = NULL, lease_token = NULL,
        deps_open = (SELECT n FROM waiting_on),
        state = CASE WHEN (SELECT n FROM waiting_on) = 0
                      AND t.ord = (SELECT MIN(o.ord) FROM batch_orders o
                                   WHERE o.batch_id = t.batch_id AND o.open > 0)
                     THEN 1 ELSE 0 END
    WHERE t.id = $2
    RETURNING t.id, t.batch_id, t.group_key, t.priority, t.vseq, t.not_before, t.state,
        t.submitted_at, t.tenant_id)
INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before,
        submitted_at, tenant_id)
SELECT id, batch_id, group_key, priority, vseq, not_before, submitted_at, tenant_id FROM back
WHERE state = 1

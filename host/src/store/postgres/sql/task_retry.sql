-- Runs ended tasks (4 failed or 5 cancelled) again: back at their batch's gate (and in the
-- ready queue) or behind it, due at once, with new places in their batch's fair queue.
-- Their attempts stay counted (the log keeps every one); their max attempts count again
-- from them (their deferrals, never charged, are counted on top of them still). Each keeps the outcome and error of its last attempt until the next one ends.
-- The caller has locked the tasks' rows and their batch's gate.
--
-- $1 task ids (bigint[])
-- $2 their states (int[]): 1 ready if the order is the batch's gate, else 0 waiting
-- $3 their new vseqs (bigint[])
WITH again AS (
    UPDATE tasks AS t SET state = u.state, vseq = u.vseq, redriven_after = t.attempts - t.deferrals,
        not_before = 0, ended_at = NULL, cancel_requested = FALSE
    FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS u(id, state, vseq)
    WHERE t.id = u.id AND t.state IN (4, 5)
    RETURNING t.id, t.batch_id, t.group_key, t.priority, t.vseq, t.not_before, t.state,
        t.submitted_at, t.tenant_id)
INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before,
        submitted_at, tenant_id)
SELECT id, batch_id, group_key, priority, vseq, not_before, submitted_at, tenant_id FROM again
WHERE state = 1

-- Counts dependents down: each has this many fewer dependencies open. Those at zero whose
-- order is their batch's gate are made ready, and queued, in the same update (a row is
-- updated once per statement). The caller holds their batches' gate locks (graph.rs).
--
-- $1 task ids (bigint[], distinct)
-- $2 how many of each one's dependencies ended (int[], matching $1)
--
-- state: 0 waiting, 1 ready (also in the ready table).
WITH counted AS (
    UPDATE tasks AS t SET deps_open = t.deps_open - u.n,
        state = CASE WHEN t.deps_open - u.n <= 0
                      AND t.ord = (SELECT MIN(o.ord) FROM batch_orders o
                                   WHERE o.batch_id = t.batch_id AND o.open > 0)
                     THEN 1 ELSE 0 END
    FROM unnest($1::bigint[], $2::int[]) AS u(id, n)
    WHERE t.id = u.id AND t.state = 0 AND t.deps_open > 0
    RETURNING t.id, t.batch_id, t.group_key, t.priority, t.vseq, t.not_before,
        t.submitted_at, t.state, t.tenant_id)
INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before, submitted_at,
    tenant_id)
SELECT id, batch_id, group_key, priority, vseq, not_before, submitted_at, tenant_id FROM counted
WHERE state = 1

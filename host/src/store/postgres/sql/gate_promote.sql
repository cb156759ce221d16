-- Makes ready, and queues, the waiting tasks at each batch's gate: its lowest order still
-- open. The caller holds these batches' gate locks and has dropped their closed orders.
--
-- $1 batch ids (bigint[])
--
-- state: 0 waiting at a gate, 1 ready (also in the ready table). A task with dependencies
-- open (deps_open) waits on, until its last one ends (graph.rs).
WITH promoted AS (
    UPDATE tasks AS t SET state = 1
    FROM (SELECT batch_id, MIN(ord) AS gate FROM batch_orders
          WHERE batch_id = ANY($1) GROUP BY batch_id) AS g
    WHERE t.batch_id = g.batch_id AND t.ord = g.gate AND t.state = 0 AND t.deps_open = 0
    RETURNING t.id, t.batch_id, t.group_key, t.priority, t.vseq, t.not_before,
        t.submitted_at, t.tenant_id)
INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before,
        submitted_at, tenant_id)
SELECT * FROM promoted

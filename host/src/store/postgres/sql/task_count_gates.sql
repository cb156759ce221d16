-- How many stored waiting tasks (0: behind their batch's gate) a list's filter names, up
-- to a cap, read from the batches' open orders: every task not ended counts in its
-- order's `open` (batch_orders), so each waiting one is among the tasks of an open order
-- (along tasks_batch), not among the ended tasks that make most of the table. None waits
-- at its batch's gate, the lowest open order: a gate's waiting tasks are made ready in the
-- transaction that moves it (gate_promote.sql), so the orders above the gate are read.
--
-- $1 submitted at or after; $2 submitted before; $3 batch, $4 group, $5 module digests,
-- $6 outcomes, each NULL for any; $7 cap
SELECT COUNT(*) FROM (
    SELECT 1
    FROM batch_orders o
    JOIN tasks t ON t.batch_id = o.batch_id AND t.ord = o.ord
    WHERE o.open > 0 AND t.state = 0
      AND o.ord > (SELECT MIN(g.ord) FROM batch_orders g
                   WHERE g.batch_id = o.batch_id AND g.open > 0)
      AND t.submitted_at >= $1 AND t.submitted_at < $2
      AND ($3::bigint IS NULL OR o.batch_id = $3)
      AND ($4::text IS NULL OR t.group_key = $4)
      AND ($5::text[] IS NULL OR t.module = ANY($5))
      AND ($6::text[] IS NULL OR t.outcome = ANY($6))
    LIMIT $7
) x

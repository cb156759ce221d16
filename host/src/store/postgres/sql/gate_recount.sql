-- Counts a batch's open orders again from its claimed tasks, the only ones left open
-- after its pending ones were cancelled (its batch_orders rows were deleted first).
--
-- $1 batch id
--
-- state: 2 claimed.
INSERT INTO batch_orders (batch_id, ord, open, tenant_id)
SELECT batch_id, ord, COUNT(*), (SELECT tenant_id FROM batches WHERE id = $1)
FROM tasks WHERE batch_id = $1 AND state = 2
GROUP BY batch_id, ord

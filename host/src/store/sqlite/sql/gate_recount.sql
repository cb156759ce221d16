-- Counts a batch's open tasks per order again, once its pending tasks were cancelled:
-- only its claimed tasks are left open. The caller has deleted the batch's old counts.
--
-- ?1 batch id
--
-- state: 2 claimed, listed as 1 ready (migrations/0012_listed.sql).
INSERT INTO batch_orders (batch_id, ord, open, tenant_id)
SELECT batch_id, ord, COUNT(*), (SELECT tenant_id FROM batches WHERE id = ?1) FROM tasks
WHERE batch_id = ?1 AND listed = 1 AND state = 2 GROUP BY ord;

-- Counts one more open task at an order of a batch; the lowest order with open tasks is
-- the batch's gate.
--
-- ?1 batch id
-- ?2 order
-- ?3 the batch's tenant (NULL: the admin's)
INSERT INTO batch_orders (batch_id, ord, open, tenant_id) VALUES (?1, ?2, 1, ?3)
ON CONFLICT (batch_id, ord) DO UPDATE SET open = open + 1;

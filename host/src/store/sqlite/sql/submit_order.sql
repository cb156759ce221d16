-- Counts one more open task at an order of a batch; the lowest order with open tasks is
-- the batch's gate.
--
-- ?1 batch id
-- ?2 order
INSERT INTO batch_orders (batch_id, ord, open) VALUES (?1, ?2, 1)
ON CONFLICT (batch_id, ord) DO UPDATE SET open = open + 1;

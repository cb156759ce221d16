-- Counts submitted tasks as open in their batch's orders.
--
-- $1 batch id
-- $2 orders (bigint[])
-- $3 how many tasks each order gets (bigint[], matching $2)
-- $4 the batch's tenant (NULL: the admin's)
INSERT INTO batch_orders (batch_id, ord, open, tenant_id)
SELECT $1, o, n, $4::bigint FROM unnest($2::bigint[], $3::bigint[]) AS u(o, n)
ON CONFLICT (batch_id, ord) DO UPDATE SET open = batch_orders.open + excluded.open

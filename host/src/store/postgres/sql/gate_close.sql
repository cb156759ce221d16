-- Counts ended tasks out of their batches' orders. Returns each order's batch and what
-- stays open; an order at zero (or below) has closed.
--
-- $1 batch ids (bigint[])
-- $2 orders (bigint[], matching $1)
-- $3 tasks ended in each (bigint[], matching $1)
UPDATE batch_orders AS o SET open = o.open - u.n
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(b, ord, n)
WHERE o.batch_id = u.b AND o.ord = u.ord
RETURNING o.batch_id, o.open

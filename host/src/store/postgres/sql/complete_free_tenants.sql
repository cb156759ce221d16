-- Frees the slots ended attempts held in their tenants, locked after the batches and
-- groups (one order of locking across completions).
--
-- $1 tenant ids (bigint[])
-- $2 slots freed in each (int[], matching $1)
UPDATE tenants AS n SET running = n.running - u.n
FROM unnest($1::bigint[], $2::int[]) AS u(id, n) WHERE n.id = u.id

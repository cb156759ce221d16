-- Counts claimed tasks in their tenants. The caller has locked these tenant rows.
--
-- $1 tenant ids (bigint[])
-- $2 tasks claimed in each (int[], matching $1)
UPDATE tenants AS n SET running = n.running + u.n
FROM unnest($1::bigint[], $2::int[]) AS u(id, n) WHERE n.id = u.id

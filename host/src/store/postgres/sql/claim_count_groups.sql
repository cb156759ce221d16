-- Counts claimed tasks in their groups. The caller has locked these group rows.
--
-- $1 group keys (text[])
-- $2 tasks claimed in each (int[], matching $1)
UPDATE groups AS g SET running = g.running + u.n
FROM unnest($1::text[], $2::int[]) AS u(key, n) WHERE g.key = u.key

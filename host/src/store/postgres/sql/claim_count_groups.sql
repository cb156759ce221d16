-- Counts claimed tasks in their groups, and moves the bucket of each group with a rate on
-- by their cost in tokens (store/rate.rs: Bucket::take). The caller has locked these group
-- rows.
--
-- $1 group keys (text[])
-- $2 tasks claimed in each (int[], matching $1)
-- $3 now (the claim's time)
-- $4 the tokens they cost in each (bigint[], matching $1)
UPDATE groups AS g SET running = g.running + u.n,
    rate_tat = CASE WHEN g.rate_limit IS NULL THEN g.rate_tat
                    ELSE greatest(g.rate_tat, $3::bigint)
                         + u.cost * greatest(1, g.rate_period / g.rate_limit) END
FROM unnest($1::text[], $2::int[], $4::bigint[]) AS u(key, n, cost) WHERE g.key = u.key

-- Counts claimed tasks in their groups, and moves the bucket of each group with a rate on
-- by as many tokens (store/rate.rs: Bucket::take). The caller has locked these group rows.
--
-- $1 group keys (text[])
-- $2 tasks claimed in each (int[], matching $1)
-- $3 now (the claim's time)
UPDATE groups AS g SET running = g.running + u.n,
    rate_tat = CASE WHEN g.rate_limit IS NULL THEN g.rate_tat
                    ELSE greatest(g.rate_tat, $3::bigint)
                         + u.n * greatest(1, g.rate_period / g.rate_limit) END
FROM unnest($1::text[], $2::int[]) AS u(key, n) WHERE g.key = u.key

-- When the next group with a rate, room and ready tasks gets a token back, if one of them
-- has none now: the claim loop sleeps until then (store/rate.rs: Bucket::next_token).
-- Reads only the groups with a rate (groups_rated), and one ready task of each at most,
-- along ready_group (the LIMIT keeps it a lookup per group).
--
-- $1 now: only times after it
--
-- Every task in the ready table has state 1 (ready).
SELECT MIN(g.rate_tat - (g.rate_burst - 1) * greatest(1, g.rate_period / g.rate_limit))
FROM groups g
CROSS JOIN LATERAL (SELECT 1 FROM ready r
                    WHERE r.group_key IS NOT NULL AND r.group_key = g.key LIMIT 1) AS has
WHERE g.rate_limit IS NOT NULL AND g.running < g.lim
  AND g.rate_tat - (g.rate_burst - 1) * greatest(1, g.rate_period / g.rate_limit) > $1

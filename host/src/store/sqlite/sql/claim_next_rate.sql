-- When the next group with a rate, room and ready tasks gets a token back, if one of them
-- has none now: the claim loop sleeps until then (store/rate.rs: Bucket::next_token).
-- Reads only the groups with a rate, along groups_rated.
--
-- ?1 now: only times after it
--
-- state: 1 ready.
SELECT MIN(g.rate_tat - (g.rate_burst - 1) * max(1, g.rate_period / g.rate_limit))
FROM groups g INDEXED BY groups_rated
WHERE g.rate_limit IS NOT NULL AND g.running < g.lim
  AND g.rate_tat - (g.rate_burst - 1) * max(1, g.rate_period / g.rate_limit) > ?1
  AND EXISTS (SELECT 1 FROM tasks t INDEXED BY tasks_ready_group
              WHERE t.state = 1 AND t.group_key IS NOT NULL AND t.group_key = g.key);

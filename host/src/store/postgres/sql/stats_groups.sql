-- The groups with tasks ready (due by $2) or claimed, most such tasks first, at most $1:
-- key, limit (a paused group's: the one it gets back), paused, its rate (limit, period,
-- burst, tat: NULLs when none), claimed, ready (a delayed task is waiting:
-- TaskState::shown).
SELECT g.key, CASE WHEN g.paused THEN g.resume_lim ELSE g.lim END, g.paused,
       g.rate_limit, g.rate_period, g.rate_burst, g.rate_tat,
       g.running::bigint, coalesce(r.ready, 0)::bigint AS ready
FROM groups g
LEFT JOIN (SELECT group_key, COUNT(*) AS ready FROM ready
           WHERE group_key IS NOT NULL AND not_before <= $2 GROUP BY group_key) r
    ON r.group_key = g.key
WHERE g.running > 0 OR r.ready > 0
ORDER BY g.running + coalesce(r.ready, 0) DESC, g.key
LIMIT $1

-- The groups with tasks ready (state 1, due by ?2) or claimed, most such tasks first, at
-- most ?1: key, limit (a paused group's: the one it gets back), paused, its rate (limit,
-- period, burst, tat: NULLs when none), claimed, ready (a delayed task is waiting:
-- TaskState::shown). The ready tasks are counted in the index of ready tasks per group alone, in group order, less the delayed ones, counted along
-- the index of delayed tasks: reading each ready task's due time would cost a row each.
SELECT g.key, CASE WHEN g.paused THEN g.resume_lim ELSE g.lim END, g.paused,
       g.rate_limit, g.rate_period, g.rate_burst, g.rate_tat, g.running,
       coalesce(r.ready, 0) - coalesce(d.delayed, 0) AS ready
FROM groups g
LEFT JOIN (SELECT group_key, COUNT(*) AS ready FROM tasks INDEXED BY tasks_ready_group
           WHERE state = 1 AND group_key IS NOT NULL GROUP BY group_key) r
    ON r.group_key = g.key
LEFT JOIN (SELECT group_key, COUNT(*) AS delayed FROM tasks INDEXED BY tasks_delayed
           WHERE state = 1 AND not_before > 0 AND not_before > ?2 AND group_key IS NOT NULL
           GROUP BY group_key) d
    ON d.group_key = g.key
WHERE g.running > 0 OR coalesce(r.ready, 0) > coalesce(d.delayed, 0)
ORDER BY g.running + coalesce(r.ready, 0) - coalesce(d.delayed, 0) DESC, g.key
LIMIT ?1

-- The groups with tasks ready (state 1, due by ?2) or claimed, most such tasks first, at
-- most ?1: key, limit (a paused group's: the one it gets back), paused, claimed, ready
-- (a delayed task is waiting: TaskState::shown). The ready tasks are read along the index
-- of ready tasks per group, in group order.
SELECT g.key, CASE WHEN g.paused THEN g.resume_lim ELSE g.lim END, g.paused, g.running,
       coalesce(r.ready, 0) AS ready
FROM groups g
LEFT JOIN (SELECT group_key, COUNT(*) AS ready FROM tasks INDEXED BY tasks_ready_group
           WHERE state = 1 AND group_key IS NOT NULL AND not_before <= ?2
           GROUP BY group_key) r
    ON r.group_key = g.key
WHERE g.running > 0 OR r.ready > 0
ORDER BY g.running + coalesce(r.ready, 0) DESC, g.key
LIMIT ?1

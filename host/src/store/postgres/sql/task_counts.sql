-- All tasks counted per state, as reads report states.
--
-- state: 0 waiting at a gate (a lower order of its batch is still open), 1 ready,
-- 2 claimed, 3 succeeded, 4 failed, 5 cancelled. A claimed task whose lease has no start
-- mark is reported as 6 (reserved: its node has not started it); 6 is never stored.
SELECT CASE WHEN t.state = 2 AND l.started_at IS NULL THEN 6 ELSE t.state END, COUNT(*)
FROM tasks t
LEFT JOIN leases l ON l.task_id = t.id
GROUP BY 1

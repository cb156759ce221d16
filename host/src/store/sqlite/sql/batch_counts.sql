-- A batch's tasks counted per state, as reads report states.
--
-- ?1 batch id
--
-- state: 0 waiting (behind its batch's gate: a lower order is still open), 1 ready,
-- 2 claimed, 3 succeeded, 4 failed, 5 cancelled. A claimed task without a start mark is
-- reported as 6 (reserved: its node has not started it on a slot); 6 is never stored.
SELECT CASE WHEN state = 2 AND started_at IS NULL THEN 6 ELSE state END, COUNT(*)
FROM tasks WHERE batch_id = ?1 GROUP BY 1;

-- One task as reads report it.
--
-- ?1 task id
--
-- state: 0 waiting (behind its batch's gate: a lower order is still open), 1 ready,
-- 2 claimed, 3 succeeded, 4 failed, 5 cancelled. A claimed task without a start mark is
-- reported as 6 (reserved: its node has not started it on a slot); 6 is never stored.
-- The last column is when a pending (waiting or ready) task is due, if it was delayed.
SELECT id, batch_id, module, ord, group_key, priority,
       CASE WHEN state = 2 AND started_at IS NULL THEN 6 ELSE state END,
       attempts, max_attempts, submitted_at, ended_at, outcome, error, length(output),
       CASE WHEN state IN (0, 1) AND not_before > 0 THEN not_before END
FROM tasks WHERE id = ?1;

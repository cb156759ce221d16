-- A batch's tasks counted per state, as reads report states.
--
-- ?1 batch id
--
-- state: 0 waiting (behind its batch's gate: a lower order is still open), 1 ready,
-- 2 claimed, 3 succeeded, 4 failed, 5 cancelled. A claimed task without a start mark is
-- reported as 6 (reserved: its node has not started it on a slot); a ready task whose
-- batch or group has a limit of 0 (which a pause sets) as 7 (held); 6 and 7 are never
-- stored. The states that need no more than the state are counted from tasks_list_batch
-- alone, where they are listed as stored; ready and claimed tasks are both listed as
-- ready (migrations/0012_listed.sql); the batch's limit is read once, not per task.
SELECT listed, COUNT(*) FROM tasks INDEXED BY tasks_list_batch
WHERE batch_id = ?1 AND listed IN (0, 3, 4, 5) GROUP BY listed
UNION ALL
SELECT CASE WHEN state = 2 AND started_at IS NULL THEN 6
            WHEN state = 1 AND (
                (SELECT max_parallel FROM batches WHERE id = ?1) = 0
                OR EXISTS (SELECT 1 FROM groups g WHERE g.key = tasks.group_key AND g.lim = 0)) THEN 7
            ELSE state END, COUNT(*)
FROM tasks INDEXED BY tasks_list_batch
WHERE batch_id = ?1 AND listed = 1 GROUP BY 1;

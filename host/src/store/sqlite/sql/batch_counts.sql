-- A batch's tasks counted per state, as reads report states.
--
-- ?1 batch id; ?2 now
--
-- state, as task_get.sql reports it (TaskState::shown): 0 waiting (behind its batch's
-- gate, or stored ready and not due by ?2), 1 ready, 2 running, 3 succeeded, 4 failed,
-- 5 cancelled, 6 reserved, 7 held. The states that need no more than the state are
-- counted from tasks_list_batch alone, where they are listed as stored; ready and claimed
-- tasks are both listed as ready (migrations/0012_listed.sql); the batch's limit is read
-- once, not per task.
SELECT listed, COUNT(*) FROM tasks INDEXED BY tasks_list_batch
WHERE batch_id = ?1 AND listed IN (0, 3, 4, 5) GROUP BY listed
UNION ALL
SELECT CASE WHEN state = 2 AND started_at IS NULL THEN 6
            WHEN state = 1 AND (
                (SELECT max_parallel FROM batches WHERE id = ?1) = 0
                OR EXISTS (SELECT 1 FROM groups g WHERE g.key = tasks.group_key AND g.lim = 0)) THEN 7
            WHEN state = 1 AND not_before > ?2 THEN 0
            ELSE state END, COUNT(*)
FROM tasks INDEXED BY tasks_list_batch
WHERE batch_id = ?1 AND listed = 1 GROUP BY 1;

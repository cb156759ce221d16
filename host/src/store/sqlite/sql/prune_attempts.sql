-- Deletes the attempt records of the tasks prune_tasks.sql deletes next, in the same
-- transaction: the same oldest chunk of tasks that ended before a time.
--
-- ?1 the time before which tasks ended are pruned
-- ?2 at most this many tasks
--
-- state: 3 succeeded, 4 failed, 5 cancelled (ended).
DELETE FROM attempts WHERE task_id IN
    (SELECT id FROM tasks WHERE state >= 3 AND ended_at < ?1 ORDER BY ended_at LIMIT ?2);

-- Deletes the oldest chunk of tasks that ended before a time (their attempt records went
-- first, see prune_attempts.sql).
--
-- ?1 the time before which tasks ended are pruned
-- ?2 at most this many tasks
--
-- state: 3 succeeded, 4 failed, 5 cancelled (ended).
DELETE FROM tasks WHERE id IN
    (SELECT id FROM tasks WHERE state >= 3 AND ended_at < ?1 ORDER BY ended_at LIMIT ?2);

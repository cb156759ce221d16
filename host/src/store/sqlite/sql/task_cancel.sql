-- Ends a pending task as cancelled. The caller has seen it pending (0 waiting or
-- 1 ready), and closes its place in its order after.
--
-- ?1 now (ended_at)
-- ?2 task id
--
-- state: 5 cancelled.
UPDATE tasks SET state = 5, listed = 5, ended_at = ?1, outcome = 'cancelled',
    error = 'cancelled before it ran'
WHERE id = ?2;

-- Ends a pending task as cancelled and takes it out of the ready queue. The caller has
-- locked the task's row and seen it pending, and closes its place in its order after.
--
-- $1 now (ended_at)
-- $2 task id
--
-- state: 5 cancelled.
WITH cancelled AS (
    UPDATE tasks SET state = 5, ended_at = $1, outcome = 'cancelled',
        error = 'cancelled before it ran'
    WHERE id = $2
    RETURNING id)
DELETE FROM ready WHERE task_id IN (SELECT id FROM cancelled)

-- Ends pending tasks as cancelled and takes them out of the ready queue. The caller has
-- locked the tasks' rows and their batches' gates, and closes their places in their
-- orders after.
--
-- $1 now (ended_at)
-- $2 task ids (bigint[])
--
-- state: 0 waiting, 1 ready (also in the ready table), 5 cancelled.
WITH cancelled AS (
    UPDATE tasks SET state = 5, ended_at = $1, outcome = 'cancelled',
        error = 'cancelled before it ran'
    WHERE id = ANY($2) AND state IN (0, 1)
    RETURNING id)
DELETE FROM ready WHERE task_id IN (SELECT id FROM cancelled)

-- A submission lowered a batch's gate: the ready tasks at the old gate wait again, out of
-- the ready queue, until the new lower order closes.
--
-- $1 batch id
-- $2 the old gate (the order whose tasks were ready)
--
-- state: 0 waiting at a gate, 1 ready.
WITH held AS (
    UPDATE tasks SET state = 0 WHERE batch_id = $1 AND ord = $2 AND state = 1
    RETURNING id)
DELETE FROM ready WHERE task_id IN (SELECT id FROM held)

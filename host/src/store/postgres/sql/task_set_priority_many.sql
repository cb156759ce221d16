-- Sets the priority of tasks that have not started, in the ready queue too. The caller
-- has locked the tasks' rows and seen them pending or reserved.
--
-- $1 the new priority
-- $2 task ids (bigint[])
WITH changed AS (UPDATE tasks SET priority = $1 WHERE id = ANY($2) RETURNING id)
UPDATE ready SET priority = $1 WHERE task_id IN (SELECT id FROM changed)

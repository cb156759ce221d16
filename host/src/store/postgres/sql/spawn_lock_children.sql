-- Locks a parent's children that have not ended, in id order, before its suspension
-- counts them: a child's end that is being written is waited for, and one written after
-- finds its parent waiting.
--
-- $1 parent task id
SELECT d.id FROM task_edges e JOIN tasks d ON d.id = e.dep_id
WHERE e.task_id = $1 AND d.state < 3 ORDER BY d.id FOR SHARE OF d

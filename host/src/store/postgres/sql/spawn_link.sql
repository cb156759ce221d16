-- A child just submitted: its parent and depth, and the edge on which its parent waits
-- (on_failure 1, run: a child's failure does not cancel its parent; see
-- migrations/0019_task_edges.sql). `dependents`: an edge leads from it.
--
-- $1 child id
-- $2 parent id
-- $3 depth
WITH linked AS (
    UPDATE tasks SET parent_id = $2, depth = $3, dependents = TRUE WHERE id = $1
    RETURNING id)
INSERT INTO task_edges (dep_id, task_id, on_failure)
SELECT id, $2, 1 FROM linked ON CONFLICT DO NOTHING

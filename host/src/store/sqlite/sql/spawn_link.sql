-- A child just submitted: its parent and depth; `dependents`: an edge leads from it, the
-- one to its parent (spawn_edge.sql).
--
-- ?1 child id
-- ?2 parent id
-- ?3 depth
UPDATE tasks SET parent_id = ?2, depth = ?3, dependents = 1 WHERE id = ?1;

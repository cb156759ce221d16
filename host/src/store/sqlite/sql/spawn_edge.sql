-- The edge on which a parent waits for its child: on_failure 1 (run), a child's failure
-- does not cancel its parent (see migrations/0019_task_edges.sql).
--
-- ?1 child id
-- ?2 parent id
INSERT OR IGNORE INTO task_edges (dep_id, task_id, on_failure) VALUES (?1, ?2, 1);

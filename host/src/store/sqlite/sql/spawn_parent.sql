-- The parent of a child being submitted, with what bounds the child (store/spawn.rs): its
-- batch's quotas on children per task and depth among them.
--
-- ?1 parent task id
--
-- state: 2 claimed (only a running task submits children).
SELECT t.batch_id, t.priority, t.depth, t.state = 2,
       (SELECT COUNT(*) FROM tasks c INDEXED BY tasks_parent WHERE c.parent_id = ?1),
       q.quota_children, q.quota_depth
FROM tasks t
LEFT JOIN batch_quotas q ON q.batch_id = t.batch_id
WHERE t.id = ?1;

-- The parent of a child being submitted, with what bounds the child (store/spawn.rs).
--
-- ?1 parent task id
--
-- state: 2 claimed (only a running task submits children).
SELECT batch_id, priority, depth, state = 2,
       (SELECT COUNT(*) FROM tasks c INDEXED BY tasks_parent WHERE c.parent_id = ?1)
FROM tasks WHERE id = ?1;

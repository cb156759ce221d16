-- The parent of a child being submitted, with what bounds the child (store/spawn.rs),
-- its row locked: the spawns of one parent, and its attempt's end, go one at a time.
--
-- $1 parent task id
--
-- state: 2 claimed (only a running task submits children).
SELECT batch_id, priority, depth, state = 2,
       (SELECT COUNT(*) FROM tasks c WHERE c.parent_id = $1)
FROM tasks WHERE id = $1 FOR UPDATE

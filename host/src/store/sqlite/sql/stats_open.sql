-- The tasks not ended, each count from a small index, never from the ended tasks:
-- open (every task not ended, from the open counts per batch and order), ready (state 1),
-- held (ready, in a batch or a group with a limit of 0, which a pause sets), reserved
-- (state 2 without a start mark), running (state 2 started on a slot) and delayed (ready,
-- not held, due after ?1, which reads show waiting: TaskState::shown), read along the
-- index of delayed tasks. Waiting tasks are the open ones that are none of the others,
-- and the delayed ones. Held tasks are read along the indexes
-- that hold a batch's or a group's ready tasks alone (claimed ones are listed as ready:
-- migrations/0012_listed.sql), never along all the tasks a paused batch or group had.
SELECT
    (SELECT coalesce(SUM(open), 0) FROM batch_orders),
    (SELECT COUNT(*) FROM tasks WHERE state = 1),
    (SELECT COUNT(*) FROM tasks t INDEXED BY tasks_list_batch
        WHERE t.listed = 1 AND t.state = 1
          AND t.batch_id IN (SELECT id FROM batches WHERE max_parallel = 0))
    + (SELECT COUNT(*) FROM tasks t INDEXED BY tasks_ready_group
        WHERE t.state = 1 AND t.group_key IN (SELECT key FROM groups WHERE lim = 0)
          AND t.batch_id NOT IN (SELECT id FROM batches WHERE max_parallel = 0)),
    (SELECT COUNT(*) FROM tasks WHERE state = 2 AND started_at IS NULL),
    (SELECT COUNT(*) FROM tasks WHERE state = 2 AND started_at IS NOT NULL),
    (SELECT COUNT(*) FROM tasks t INDEXED BY tasks_delayed
        WHERE t.state = 1 AND t.not_before > 0 AND t.not_before > ?1
          AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.id = t.batch_id AND b.max_parallel = 0)
          AND NOT EXISTS (SELECT 1 FROM groups g WHERE g.key = t.group_key AND g.lim = 0))

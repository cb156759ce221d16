-- The tasks a bulk action selects (cancel, re-drive, priority), in id order, with what
-- acting on them needs. Each branch reads along the index of the first filter given (the
-- primary key, tasks_batch, tasks_list_group, else the whole table) and runs only when the
-- filters before it are absent; every filter given applies.
--
-- ?1 task id, or NULL
-- ?2 batch id, or NULL
-- ?3 group key, or NULL
-- ?4 outcomes, a JSON array of names, or NULL for any
-- ?5 the states the action applies to, a JSON array of stored codes (0 waiting, 1 ready,
--    2 claimed, 3 succeeded, 4 failed, 5 cancelled)
-- ?6 module digests, a JSON array of hex digests, or NULL for any
-- ?7 task ids, a JSON array (a selection of rows), or NULL for any
--
-- Columns, in the order redrive.rs reads them: id, batch, order, state, whether it has a
-- start mark (a claimed task without one is reserved), module, due time, and whether its
-- batch or group holds it (a limit of 0: `held`, as task_list.sql reads it).
SELECT s.id, s.batch_id, s.ord, s.state, s.started, s.module, s.not_before,
       EXISTS (SELECT 1 FROM batches b WHERE b.id = s.batch_id AND b.max_parallel = 0)
       OR EXISTS (SELECT 1 FROM groups g WHERE g.key = s.group_key AND g.lim = 0)
FROM (
    SELECT id, batch_id, ord, state, started_at IS NOT NULL AS started, module, not_before,
           group_key FROM tasks
    WHERE id = ?1
      AND (?2 IS NULL OR batch_id = ?2) AND (?3 IS NULL OR group_key = ?3)
      AND (?4 IS NULL OR outcome IN (SELECT value FROM json_each(?4)))
      AND (?6 IS NULL OR module IN (SELECT value FROM json_each(?6)))
      AND (?7 IS NULL OR id IN (SELECT value FROM json_each(?7)))
      AND state IN (SELECT value FROM json_each(?5))
    UNION ALL
    SELECT id, batch_id, ord, state, started_at IS NOT NULL AS started, module, not_before,
           group_key FROM tasks
    WHERE ?1 IS NULL AND id IN (SELECT value FROM json_each(?7))
      AND (?2 IS NULL OR batch_id = ?2) AND (?3 IS NULL OR group_key = ?3)
      AND (?4 IS NULL OR outcome IN (SELECT value FROM json_each(?4)))
      AND (?6 IS NULL OR module IN (SELECT value FROM json_each(?6)))
      AND (?7 IS NULL OR id IN (SELECT value FROM json_each(?7)))
      AND state IN (SELECT value FROM json_each(?5))
    UNION ALL
    SELECT id, batch_id, ord, state, started_at IS NOT NULL AS started, module, not_before,
           group_key FROM tasks
    WHERE ?1 IS NULL AND ?7 IS NULL AND batch_id = ?2
      AND (?2 IS NULL OR batch_id = ?2) AND (?3 IS NULL OR group_key = ?3)
      AND (?4 IS NULL OR outcome IN (SELECT value FROM json_each(?4)))
      AND (?6 IS NULL OR module IN (SELECT value FROM json_each(?6)))
      AND (?7 IS NULL OR id IN (SELECT value FROM json_each(?7)))
      AND state IN (SELECT value FROM json_each(?5))
    UNION ALL
    SELECT id, batch_id, ord, state, started_at IS NOT NULL AS started, module, not_before,
           group_key FROM tasks
    WHERE ?1 IS NULL AND ?7 IS NULL AND ?2 IS NULL AND group_key = ?3
      AND (?2 IS NULL OR batch_id = ?2) AND (?3 IS NULL OR group_key = ?3)
      AND (?4 IS NULL OR outcome IN (SELECT value FROM json_each(?4)))
      AND (?6 IS NULL OR module IN (SELECT value FROM json_each(?6)))
      AND (?7 IS NULL OR id IN (SELECT value FROM json_each(?7)))
      AND state IN (SELECT value FROM json_each(?5))
    UNION ALL
    SELECT id, batch_id, ord, state, started_at IS NOT NULL AS started, module, not_before,
           group_key FROM tasks
    WHERE ?1 IS NULL AND ?7 IS NULL AND ?2 IS NULL AND ?3 IS NULL
      AND (?2 IS NULL OR batch_id = ?2) AND (?3 IS NULL OR group_key = ?3)
      AND (?4 IS NULL OR outcome IN (SELECT value FROM json_each(?4)))
      AND (?6 IS NULL OR module IN (SELECT value FROM json_each(?6)))
      AND (?7 IS NULL OR id IN (SELECT value FROM json_each(?7)))
      AND state IN (SELECT value FROM json_each(?5))
) s
ORDER BY s.id;

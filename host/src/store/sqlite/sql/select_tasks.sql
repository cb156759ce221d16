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
--
-- Columns, in the order redrive.rs reads them: id, batch, order, state, whether it has a
-- start mark (a claimed task without one is reserved), module.
SELECT * FROM (
    SELECT id, batch_id, ord, state, started_at IS NOT NULL, module FROM tasks
    WHERE id = ?1
      AND (?2 IS NULL OR batch_id = ?2) AND (?3 IS NULL OR group_key = ?3)
      AND (?4 IS NULL OR outcome IN (SELECT value FROM json_each(?4)))
      AND state IN (SELECT value FROM json_each(?5))
    UNION ALL
    SELECT id, batch_id, ord, state, started_at IS NOT NULL, module FROM tasks
    WHERE ?1 IS NULL AND batch_id = ?2
      AND (?3 IS NULL OR group_key = ?3)
      AND (?4 IS NULL OR outcome IN (SELECT value FROM json_each(?4)))
      AND state IN (SELECT value FROM json_each(?5))
    UNION ALL
    SELECT id, batch_id, ord, state, started_at IS NOT NULL, module FROM tasks
    WHERE ?1 IS NULL AND ?2 IS NULL AND group_key = ?3
      AND (?4 IS NULL OR outcome IN (SELECT value FROM json_each(?4)))
      AND state IN (SELECT value FROM json_each(?5))
    UNION ALL
    SELECT id, batch_id, ord, state, started_at IS NOT NULL, module FROM tasks
    WHERE ?1 IS NULL AND ?2 IS NULL AND ?3 IS NULL
      AND (?4 IS NULL OR outcome IN (SELECT value FROM json_each(?4)))
      AND state IN (SELECT value FROM json_each(?5))
)
ORDER BY id;

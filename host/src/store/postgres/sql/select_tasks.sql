-- Locks the tasks a bulk action selects (cancel, re-drive, priority), in id order, and
-- reads what acting on them needs. Each branch of the inner selection reads along the
-- index of the first filter given (the primary key, tasks_batch, tasks_group, else the
-- whole table) and runs only when the filters before it are absent; every filter given
-- applies. Waits for rows another transaction holds, then looks at them again.
--
-- $1 task id, or NULL
-- $2 batch id, or NULL
-- $3 group key, or NULL
-- $4 outcomes (text[]), or NULL for any
-- $5 the states the action applies to (int[]: 0 waiting, 1 ready, 2 claimed,
--    3 succeeded, 4 failed, 5 cancelled)
-- $6 module digests in hex (text[]), or NULL for any
-- $7 task ids (bigint[], a selection of rows), or NULL for any
--
-- Columns, in the order redrive.rs reads them: id, batch, order, state, whether its lease
-- has a start mark (a claimed task without one is reserved), module, due time, and
-- whether its batch or group holds it (a limit of 0: `held`, as task_list.sql reads it).
SELECT t.id, t.batch_id, t.ord, t.state, l.started_at IS NOT NULL, t.module, t.not_before,
       EXISTS (SELECT 1 FROM batches b WHERE b.id = t.batch_id AND b.max_parallel = 0)
       OR EXISTS (SELECT 1 FROM groups g WHERE g.key = t.group_key AND g.lim = 0)
FROM tasks t
LEFT JOIN leases l ON l.task_id = t.id
WHERE t.id IN (
        SELECT id FROM tasks WHERE id = $1
          AND ($2::bigint IS NULL OR batch_id = $2) AND ($3::text IS NULL OR group_key = $3)
        UNION ALL
        SELECT id FROM tasks WHERE $1::bigint IS NULL AND id = ANY($7::bigint[])
          AND ($2::bigint IS NULL OR batch_id = $2) AND ($3::text IS NULL OR group_key = $3)
        UNION ALL
        SELECT id FROM tasks WHERE $1::bigint IS NULL AND $7::bigint[] IS NULL
          AND batch_id = $2 AND ($3::text IS NULL OR group_key = $3)
        UNION ALL
        SELECT id FROM tasks WHERE $1::bigint IS NULL AND $7::bigint[] IS NULL
          AND $2::bigint IS NULL AND group_key = $3
        UNION ALL
        SELECT id FROM tasks WHERE $1::bigint IS NULL AND $7::bigint[] IS NULL
          AND $2::bigint IS NULL AND $3::text IS NULL)
  AND ($4::text[] IS NULL OR t.outcome = ANY($4))
  AND ($6::text[] IS NULL OR t.module = ANY($6))
  AND t.state = ANY($5)
ORDER BY t.id
FOR UPDATE OF t

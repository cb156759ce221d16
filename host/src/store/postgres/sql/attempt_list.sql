-- Attempt records with their task's module and its name, in the order they were written,
-- each filter NULL when not given.
--
-- $1 batch id
-- $2 task id
-- $3 group key
-- $4 outcome (succeeded, guest-error, trap, timeout, lost, ...)
-- $5 started at or after this time
-- $6 started before this time
-- $7 after this record id (paging)
-- $8 at most this many
SELECT a.id, a.task_id, a.batch_id, a.attempt, a.node, a.slot, a.group_key, a.ord,
       a.started_at, a.ended_at, a.outcome, a.error, a.logs, a.stdout, a.stderr,
       t.module, m.name
FROM attempts a
JOIN tasks t ON t.id = a.task_id
LEFT JOIN modules m ON m.digest = t.module
WHERE ($1::bigint IS NULL OR a.batch_id = $1)
  AND ($2::bigint IS NULL OR a.task_id = $2)
  AND ($3::text IS NULL OR a.group_key = $3)
  AND ($4::text IS NULL OR a.outcome = $4)
  AND ($5::bigint IS NULL OR a.started_at >= $5)
  AND ($6::bigint IS NULL OR a.started_at < $6)
  AND ($7::bigint IS NULL OR a.id > $7)
ORDER BY a.id LIMIT $8

-- Attempt records in the order they were written, each filter NULL when not given.
--
-- $1 batch id
-- $2 task id
-- $3 group key
-- $4 outcome (succeeded, guest-error, trap, timeout, lost, ...)
-- $5 started at or after this time
-- $6 started before this time
-- $7 after this record id (paging)
-- $8 at most this many
SELECT id, task_id, batch_id, attempt, node, slot, group_key, ord, started_at,
       ended_at, outcome, error, logs, stdout, stderr
FROM attempts
WHERE ($1::bigint IS NULL OR batch_id = $1)
  AND ($2::bigint IS NULL OR task_id = $2)
  AND ($3::text IS NULL OR group_key = $3)
  AND ($4::text IS NULL OR outcome = $4)
  AND ($5::bigint IS NULL OR started_at >= $5)
  AND ($6::bigint IS NULL OR started_at < $6)
  AND ($7::bigint IS NULL OR id > $7)
ORDER BY id LIMIT $8

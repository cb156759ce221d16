-- A page of groups in key order, idle ones too: each one's limit (a paused group's is the
-- one it gets back on resume), whether it is paused, its claimed tasks, and its rate
-- (limit, period, burst; NULLs: none). Reads along
-- the primary key; a batch's groups are those its tasks name.
--
-- $1 the key the previous page ended at ('' for the first page)
-- $2 a batch id, or NULL for every group
-- $3 the most rows to read
SELECT key, CASE WHEN paused THEN resume_lim ELSE lim END, paused, running,
       rate_limit, rate_period, rate_burst
FROM groups
WHERE key > $1
  AND ($2::bigint IS NULL OR key IN (SELECT group_key FROM tasks WHERE batch_id = $2))
ORDER BY key
LIMIT $3;

-- Tasks a list shows, as reads report them (the columns of task_get.sql), with the state
-- lists filter by. The caller puts the rows to read in place of the source comment below:
-- `tasks t` walks tasks_list_batch, _group, _module, else _submitted, newest first (the
-- state is in no index of tasks: see `migrations/0007_lists.sql`); the tables that hold
-- some states only (ready, leases, dead letters) joined to tasks read those states' tasks
-- only. Then it appends the order and the limit, or counts the rows (`lists.rs`).
--
-- $1 stored states (int[]): 0 waiting (behind its batch's gate), 1 ready, 2 claimed,
--    3 succeeded, 4 failed, 5 cancelled
-- $2 now: a task due after it is waiting
-- $3 the list states wanted, codes
-- $4 submitted at or after; $5 submitted before
-- $6, $7 the position a page ended at: rows strictly before it, newest first
-- $8 batch, $9 group, $10 module digests, $11 outcomes; each NULL for any
--
-- The error is read cut to 1,024 characters, the most a list gives (LIST_CUT in
-- api/attempt_page.rs), with its whole length in bytes (after the input's size), so that
-- a page of tasks that failed with long errors is not read whole into memory.
--
-- list_code: the state as reads report it (task_get.sql, TaskState::shown), which the
-- list filters by.
SELECT t.id, t.batch_id, t.module, t.ord, t.group_key, t.priority,
       c.list_code,
       t.attempts, t.redriven_after + t.max_attempts + t.deferrals, t.submitted_at, t.ended_at, t.outcome,
       left(t.error, 1024), octet_length(t.output),
       CASE WHEN t.state IN (0, 1) AND t.not_before > 0 THEN t.not_before END, m.name, octet_length(t.input),
       octet_length(t.error),
       t.task_key, coalesce(t.cost, 1)
FROM /* source */
-- A lateral read, so that a page read along an index keeps its order (a hash join would
-- not, and the planner sorts).
LEFT JOIN LATERAL (SELECT started_at FROM leases WHERE task_id = t.id LIMIT 1) l ON TRUE
LEFT JOIN modules m ON m.digest = t.module
CROSS JOIN LATERAL (
    SELECT CASE WHEN t.state = 2 AND l.started_at IS NULL THEN 6
                WHEN t.state = 1 AND (
                    EXISTS (SELECT 1 FROM batches b
                            WHERE b.id = t.batch_id AND b.max_parallel = 0)
                    OR EXISTS (SELECT 1 FROM groups g
                               WHERE g.key = t.group_key AND g.lim = 0)) THEN 7
                WHEN t.state = 1 AND t.not_before > $2 THEN 0
                ELSE t.state END AS list_code
) c
WHERE t.state = ANY($1::int[])
  -- An ended task's state shown is its stored one, which $1 holds only when it is wanted;
  -- said so, the planner does not take the list state for a rare one and read every row.
  AND (c.list_code = ANY($3::int[]) OR t.state >= 3)
  AND t.submitted_at >= $4 AND t.submitted_at < $5
  AND (t.submitted_at, t.id) < ($6, $7)
  AND ($8::bigint IS NULL OR t.batch_id = $8)
  AND ($9::text IS NULL OR t.group_key = $9)
  AND ($10::text[] IS NULL OR t.module = ANY($10))
  AND ($11::text[] IS NULL OR t.outcome = ANY($11))

-- How many ready tasks (stored state 1) a list's filter names in each state, up to
-- a cap, read from the ready queue alone: it holds each one's batch, group, submission
-- and due time (set when it is queued, never changed), which decide its state as in
-- task_list.sql. The tasks table is read only for a module or outcome asked.
--
-- $1 now; $2 the states wanted, codes; $3 submitted at or after; $4 submitted
-- before; $5 batch, $6 group, $7 module digests, $8 outcomes, each NULL for any; $9 cap
SELECT list_code, COUNT(*) FROM (
  SELECT list_code FROM (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM batches b
                             WHERE b.id = r.batch_id AND b.max_parallel = 0)
                    OR EXISTS (SELECT 1 FROM groups g
                               WHERE g.key = r.group_key AND g.lim = 0) THEN 7
                WHEN r.not_before > $1 THEN 0
                ELSE 1 END AS list_code
    FROM ready r
    WHERE r.submitted_at >= $3 AND r.submitted_at < $4
      AND ($5::bigint IS NULL OR r.batch_id = $5)
      AND ($6::text IS NULL OR r.group_key = $6)
      AND ($7::text[] IS NULL AND $8::text[] IS NULL
           OR EXISTS (SELECT 1 FROM tasks t WHERE t.id = r.task_id
                        AND ($7::text[] IS NULL OR t.module = ANY($7))
                        AND ($8::text[] IS NULL OR t.outcome = ANY($8))))
  ) c
  WHERE list_code = ANY($2::int[])
  LIMIT $9
) x
GROUP BY 1

-- Ready tasks behind the last one read that the window could not supply: tasks without a
-- group, and the first tasks of every group with room, but those already filled, none of
-- the batches and tenants already full. Each row carries the limit its list was read
-- with, so that a list cut off by it can be read on; and each task's cost when it is
-- dearer than 1 (along tasks_costly, which holds only such tasks, in a batch that has
-- one). Walks two short indexes, never the tasks of busy groups: so a claim costs what it
-- can take, however many tasks wait behind a busy group.
--
-- $1 now: tasks not before it are due (not_before 0: due at once)
-- $2, $3, $4 the priority, vseq and id of the last task read: rows come after it
-- $5 at most this many tasks without a group, and per group
-- $6 groups already filled (text[])
-- $7 batches already full (bigint[])
-- $8 tenants already full (bigint[])
--
-- Every task in the ready table has state 1 (ready).
SELECT * FROM (
  (SELECT r.task_id, r.batch_id, r.group_key, b.max_parallel IS NOT NULL, r.vseq, r.priority,
          b.tenant_id,
          CASE WHEN b.costly
               THEN (SELECT t.cost FROM tasks t WHERE t.id = r.task_id AND t.cost IS NOT NULL)
          END,
          $5::bigint AS lim
   FROM ready r
   JOIN batches b ON b.id = r.batch_id
   WHERE r.group_key IS NULL AND r.not_before <= $1
     AND (r.priority < $2 OR (r.priority = $2 AND (r.vseq, r.task_id) > ($3, $4)))
     AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
     AND NOT (r.batch_id = ANY($7::bigint[]))
     AND (b.tenant_id IS NULL OR NOT (b.tenant_id = ANY($8::bigint[])))
   ORDER BY r.priority DESC, r.vseq, r.task_id
   LIMIT $5)
  UNION ALL
  (SELECT h.*
   FROM groups g
   LEFT JOIN unnest($6::text[]) AS filled(key) ON filled.key = g.key
   CROSS JOIN LATERAL (
     SELECT r.task_id, r.batch_id, r.group_key, b.max_parallel IS NOT NULL, r.vseq, r.priority,
            b.tenant_id,
            CASE WHEN b.costly
                 THEN (SELECT t.cost FROM tasks t WHERE t.id = r.task_id AND t.cost IS NOT NULL)
            END,
            least(g.lim - g.running, $5)::bigint AS lim
     FROM ready r
     JOIN batches b ON b.id = r.batch_id
     WHERE r.group_key = g.key AND r.not_before <= $1
       AND (r.priority < $2 OR (r.priority = $2 AND (r.vseq, r.task_id) > ($3, $4)))
       AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
       AND NOT (r.batch_id = ANY($7::bigint[]))
       AND (b.tenant_id IS NULL OR NOT (b.tenant_id = ANY($8::bigint[])))
     ORDER BY r.priority DESC, r.vseq, r.task_id
     LIMIT least(g.lim - g.running, $5)) AS h
   WHERE g.running < g.lim AND filled.key IS NULL
     -- A held group has no room (store/hold.rs).
     AND g.held_until <= $1
     -- A group whose rate has no token now has no room (store/rate.rs).
     AND (g.rate_limit IS NULL
          OR g.rate_tat - (g.rate_burst - 1) * greatest(1, g.rate_period / g.rate_limit) <= $1))
) AS beyond
ORDER BY 6 DESC, 5, 1

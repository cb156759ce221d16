-- The head of the queue: ready tasks in claim order (priority, then fair-queueing sequence,
-- then id), of batches with room; nothing locked yet. Groups and tenants are not looked
-- at here: a claim locks the counters of those it meets anyway, and learns their room
-- from that. Columns as claim.rs's `candidate` reads them, the cost last (NULL: 1).
--
-- $1 now: tasks not before it are due (not_before 0: due at once)
-- $2 at most this many
--
-- Every task in the ready table has state 1 (ready).
SELECT r.task_id, r.batch_id, r.group_key, b.max_parallel IS NOT NULL, r.vseq, r.priority,
       b.tenant_id,
       -- Its cost when it is dearer than 1: a probe of tasks_costly, which holds only such
       -- tasks, made only in a batch that has one (migrations 0031, 0032).
       CASE WHEN b.costly
            THEN (SELECT t.cost FROM tasks t WHERE t.id = r.task_id AND t.cost IS NOT NULL)
       END
FROM ready r
JOIN batches b ON b.id = r.batch_id
WHERE r.not_before <= $1
  AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
ORDER BY r.priority DESC, r.vseq, r.task_id
LIMIT $2

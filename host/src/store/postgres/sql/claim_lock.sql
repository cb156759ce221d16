-- Locks the picked tasks that are still ready and that no other claim holds. A task of a
-- batch with a max_parallel (which a pause sets to 0) is taken only when the claim holds
-- that batch's counter: a limit set since the claim read its window is seen here, as the
-- change waited for the batch's gate lock, which the claim holds shared.
--
-- $1 the picked task ids (bigint[])
-- $2 the batches whose counters the claim holds (bigint[])
--
-- state: 1 ready.
SELECT t.id FROM tasks t
JOIN batches b ON b.id = t.batch_id
WHERE t.id = ANY($1) AND t.state = 1
  AND (b.max_parallel IS NULL OR b.id = ANY($2))
ORDER BY t.id
FOR UPDATE OF t SKIP LOCKED

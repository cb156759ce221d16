-- A look behind the claim's scan: claimable tasks without a group behind the scan's last
-- one, in claim order, along tasks_ready_free. Tasks of batches that are full are left
-- out, and those of tenants that are.
--
-- ?1 now: tasks whose not_before has come are due
-- ?2 priority of the place to read behind
-- ?3 vseq of that place
-- ?4 task id of that place
-- ?5 at most this many
-- ?6 the batches full already, a JSON array of ids
-- ?7 the tenants full already, a JSON array of ids
--
-- Columns as claim_candidates.sql's: id, batch, group (NULL), vseq, the batch's room
-- (NULL: no limit), the group's room (NULL), priority, the group's rate, tat and hold
-- (NULLs), the batch's tenant and its room (none while it is held: store/budget.rs), and
-- the task's cost.
--
-- state: 1 ready.
SELECT t.id, t.batch_id, t.group_key, t.vseq, b.max_parallel - b.running, NULL, t.priority,
       NULL, NULL, NULL, NULL, NULL, b.tenant_id,
       CASE WHEN n.held_until > ?1 THEN 0 ELSE n.max_running - n.running END, t.cost
FROM tasks t INDEXED BY tasks_ready_free
JOIN batches b ON b.id = t.batch_id
LEFT JOIN tenants n ON n.id = b.tenant_id
WHERE t.state = 1 AND t.group_key IS NULL
  AND t.not_before <= ?1
  AND (t.priority < ?2 OR (t.priority = ?2 AND (t.vseq, t.id) > (?3, ?4)))
  AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
  AND t.batch_id NOT IN (SELECT value FROM json_each(?6))
  AND (n.max_running IS NULL OR n.running < n.max_running)
  AND coalesce(n.held_until, 0) <= ?1
  AND (b.tenant_id IS NULL OR b.tenant_id NOT IN (SELECT value FROM json_each(?7)))
ORDER BY t.priority DESC, t.vseq, t.id
LIMIT ?5;

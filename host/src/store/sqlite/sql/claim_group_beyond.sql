-- A look behind the claim's scan: the first claimable tasks of one group with room behind
-- the scan's last task, in claim order, along tasks_ready_group. Tasks of batches that
-- are full are left out, and those of tenants that are.
--
-- ?1 now: tasks whose not_before has come are due
-- ?2 priority of the place to read behind
-- ?3 vseq of that place
-- ?4 task id of that place
-- ?5 group key
-- ?6 at most this many: the group's room, within its rate's tokens
-- ?7 the batches full already, a JSON array of ids
-- ?8 the tenants full already, a JSON array of ids
--
-- Columns as claim_candidates.sql's: id, batch, group, vseq, the batch's room (NULL: no
-- limit), NULL for the group's room, priority, and NULLs for the group's rate and hold:
-- the claim knows the group's room and tokens already, and gives them to each row; the
-- batch's tenant and its room (none while it is held: store/budget.rs), and the task's
-- cost.
--
-- state: 1 ready.
SELECT t.id, t.batch_id, t.group_key, t.vseq, b.max_parallel - b.running, NULL, t.priority,
       NULL, NULL, NULL, NULL, NULL, b.tenant_id,
       CASE WHEN n.held_until > ?1 THEN 0 ELSE n.max_running - n.running END, t.cost
FROM tasks t INDEXED BY tasks_ready_group
JOIN batches b ON b.id = t.batch_id
LEFT JOIN tenants n ON n.id = b.tenant_id
WHERE t.state = 1 AND t.group_key = ?5
  AND t.not_before <= ?1
  AND (t.priority < ?2 OR (t.priority = ?2 AND (t.vseq, t.id) > (?3, ?4)))
  AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
  AND t.batch_id NOT IN (SELECT value FROM json_each(?7))
  AND (n.max_running IS NULL OR n.running < n.max_running)
  AND coalesce(n.held_until, 0) <= ?1
  AND (b.tenant_id IS NULL OR b.tenant_id NOT IN (SELECT value FROM json_each(?8)))
ORDER BY t.priority DESC, t.vseq, t.id
LIMIT ?6;

-- The claim's scan: ready tasks in claim order (priority, then fair-queueing position,
-- then id), with the room left in their batch and group, along tasks_ready (named: the
-- list indexes that lead with the state would have SQLite read every ready task and sort
-- them on every claim).
--
-- Tasks of full groups and batches are read too, and passed over by the pick: filtering
-- them here would have SQLite read on through every task of a busy group, and a scan
-- would cost the whole queue when most groups are busy.
--
-- ?1 now: tasks whose not_before has come are due
-- ?2 how many to read
--
-- Columns, in the order claim.rs's candidate_row reads them: id, batch, group, vseq, the
-- batch's room (NULL: no limit), the group's room (NULL: no group), priority, and the
-- group's rate (limit, period, burst: NULLs when it has none) and its tat, from which
-- claim.rs takes the room its tokens leave (store/rate.rs), when its hold ends (none
-- while it is held: store/hold.rs), and the batch's tenant and its room (NULL: no limit;
-- none while the tenant is held: store/budget.rs), and the task's cost in its group's
-- tokens.
--
-- state: 1 ready.
SELECT t.id, t.batch_id, t.group_key, t.vseq,
       b.max_parallel - b.running AS batch_room,
       g.lim - g.running AS group_room,
       t.priority,
       g.rate_limit, g.rate_period, g.rate_burst, g.rate_tat, g.held_until,
       b.tenant_id,
       CASE WHEN n.held_until > ?1 THEN 0 ELSE n.max_running - n.running END,
       t.cost
FROM tasks t INDEXED BY tasks_ready
JOIN batches b ON b.id = t.batch_id
LEFT JOIN groups g ON g.key = t.group_key
LEFT JOIN tenants n ON n.id = b.tenant_id
WHERE t.state = 1
  AND t.not_before <= ?1
ORDER BY t.priority DESC, t.vseq, t.id
LIMIT ?2;

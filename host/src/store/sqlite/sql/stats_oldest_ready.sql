-- When the oldest claimable task was submitted: ready (state 1), due by ?1, and not held
-- by a batch or group with a limit of 0.
SELECT submitted_at FROM tasks t INDEXED BY tasks_list_state
WHERE t.listed = 1 AND t.state = 1 AND t.not_before <= ?1
  AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.id = t.batch_id AND b.max_parallel = 0)
  AND NOT EXISTS (SELECT 1 FROM groups g WHERE g.key = t.group_key AND g.lim = 0)
ORDER BY t.submitted_at LIMIT 1

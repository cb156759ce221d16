-- When the oldest claimable task was submitted: in the ready queue, due by $1, and not
-- held by a batch or group with a limit of 0. Ids grow with submission: the smallest
-- such id is the oldest.
SELECT t.submitted_at
FROM ready r JOIN tasks t ON t.id = r.task_id
WHERE r.not_before <= $1
  AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.id = r.batch_id AND b.max_parallel = 0)
  AND NOT EXISTS (SELECT 1 FROM groups g WHERE g.key = r.group_key AND g.lim = 0)
ORDER BY r.task_id LIMIT 1

-- The tasks running now: claimed and started on a node's slot (their lease has a start
-- mark), longest running first.
SELECT t.id, t.batch_id, l.node, t.attempts, t.group_key, t.ord, l.started_at, l.expires
FROM leases l
JOIN tasks t ON t.id = l.task_id
WHERE l.started_at IS NOT NULL
ORDER BY l.started_at, t.id

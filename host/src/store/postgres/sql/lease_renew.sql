-- Extends every lease a node holds. Returns each leased task with whether its
-- cancellation was asked (the node stops those).
--
-- $1 the new expiry
-- $2 node name
UPDATE leases AS l SET expires = $1 FROM tasks AS t
WHERE l.node = $2 AND t.id = l.task_id
RETURNING l.task_id, t.cancel_requested

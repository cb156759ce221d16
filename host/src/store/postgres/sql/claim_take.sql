-- Takes the locked tasks out of the ready queue and leases them to the node; counts the
-- attempt. The caller has locked the task rows (state 1, ready).
--
-- $1 now (claimed_at)
-- $2 node name
-- $3 lease token base: each task's token is this plus its id
-- $4 when the leases expire
-- $5 task ids (bigint[])
--
-- state: 2 claimed (with a lease; reserved until the node's start mark).
WITH queued AS (DELETE FROM ready WHERE task_id = ANY($5) RETURNING task_id),
     leased AS (INSERT INTO leases (task_id, node, expires) SELECT task_id, $2, $4 FROM queued)
UPDATE tasks SET state = 2, attempts = attempts + 1, claimed_at = $1, lease_node = $2,
    lease_token = $3 + id
WHERE id = ANY($5)
RETURNING id, batch_id, module, input, ord, group_key, limits, mounts, attempts, lease_token,
    priority, vseq, trace_parent

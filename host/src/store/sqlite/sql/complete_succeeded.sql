-- Ends a task whose attempt succeeded, if the caller still holds its lease, and returns
-- what counting its ended attempt needs (nothing when the lease is gone: the completion
-- is stale).
--
-- ?1 now (ended_at)
-- ?2 the output
-- ?3 task id
-- ?4 lease token of the attempt that succeeded
--
-- state: 2 claimed, 3 succeeded. `dependents`: whether tasks run after it (graph.rs).
-- OR FAIL: no statement journal (see the driver's mod.rs).
UPDATE OR FAIL tasks SET state = 3, listed = 3, ended_at = ?1, outcome = 'succeeded',
    error = NULL, output = ?2,
    lease_node = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?3 AND state = 2 AND lease_token = ?4
RETURNING batch_id, ord, group_key, attempts, claimed_at, dependents;

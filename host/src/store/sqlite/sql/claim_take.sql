-- Takes one picked task: leases it to the node and counts the attempt. The claim clears
-- its start mark, so the task is reserved until its node starts it on a slot.
--
-- ?1 now (claimed_at)
-- ?2 node name
-- ?3 its lease token
-- ?4 when the lease expires
-- ?5 task id
--
-- state: 2 claimed.
-- OR FAIL: no statement journal (see the driver's mod.rs).
UPDATE OR FAIL tasks SET state = 2, attempts = attempts + 1, claimed_at = ?1,
    started_at = NULL, lease_node = ?2, lease_token = ?3, lease_expires = ?4
WHERE id = ?5
RETURNING module, input, ord, limits, mounts, attempts;

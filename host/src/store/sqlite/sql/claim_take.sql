-- Takes the picked tasks: leases them to the node and counts their attempts. The claim
-- clears their start marks, so each is reserved until its node starts it on a slot.
--
-- ?1 now (claimed_at)
-- ?2 node name
-- ?3 lease token base: each task's token is this plus its id
-- ?4 when the leases expire
-- ?5 the task ids, a JSON array
--
-- state: 2 claimed.
-- OR FAIL: no statement journal (see the driver's mod.rs).
UPDATE OR FAIL tasks SET state = 2, attempts = attempts + 1, claimed_at = ?1,
    started_at = NULL, lease_node = ?2, lease_token = ?3 + id, lease_expires = ?4
WHERE id IN (SELECT value FROM json_each(?5))
RETURNING id, module, input, ord, limits, mounts, attempts, trace_parent;

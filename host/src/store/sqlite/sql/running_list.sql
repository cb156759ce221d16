-- The tasks running now, longest running first.
--
-- state: 2 claimed; with a start mark (started_at) it runs on its node's slot, without
-- one it is only reserved and not listed.
SELECT id, batch_id, lease_node, attempts, group_key, ord, started_at, lease_expires
FROM tasks WHERE state = 2 AND started_at IS NOT NULL ORDER BY started_at, id;

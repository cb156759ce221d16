-- Records a node's heartbeat, registering the node at its first.
--
-- $1 node name
-- $2 its worker slots
-- $3 when it started (database time, microseconds)
-- $4 now (heartbeat_at)
-- $5 the database's clock minus the node's, microseconds
INSERT INTO nodes (name, workers, started_at, heartbeat_at, clock_offset)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (name) DO UPDATE SET workers = excluded.workers,
    started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
    clock_offset = excluded.clock_offset

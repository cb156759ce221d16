-- Locks the tasks a node holds leases on, waiting for rows another transaction holds: a
-- node restarting must end every attempt of its earlier run, since it renews every lease
-- under its name, and one its rescue skipped would never expire.
--
-- $1 node name
SELECT 1 FROM tasks
WHERE id IN (SELECT task_id FROM leases WHERE node = $1)
ORDER BY id FOR UPDATE

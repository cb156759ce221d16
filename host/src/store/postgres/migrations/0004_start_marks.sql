-- qhost's PostgreSQL schema, version 4: a claimed task's start mark, on its lease.
--
-- A claimed task (state 2, with a lease) is reserved until its node starts it on a slot,
-- then running; the node writes leases.started_at when it starts the task. Reads report a
-- claimed task without a start mark as reserved (code 6, never stored).

ALTER TABLE leases ADD COLUMN started_at BIGINT;
-- Claimed tasks from before this version were taken as running.
UPDATE leases SET started_at = t.claimed_at FROM tasks t WHERE t.id = leases.task_id;

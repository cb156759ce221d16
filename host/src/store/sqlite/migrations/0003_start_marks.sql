-- qhost's SQLite schema, version 3: a claimed task's start mark.
--
-- A claimed task (state 2) is reserved until its node starts it on a slot, then running;
-- the node writes started_at when it starts the task, and the claim clears it. Reads
-- report a claimed task without a start mark as reserved (code 6, never stored).

ALTER TABLE tasks ADD COLUMN started_at INTEGER;
-- Claimed tasks from before this version were taken as running.
UPDATE tasks SET started_at = claimed_at WHERE state = 2;

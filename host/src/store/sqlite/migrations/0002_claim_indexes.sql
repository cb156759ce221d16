-- qhost's SQLite schema, version 2: indexes that let a claim read past a group with more
-- ready tasks than it scans, and find the next delayed task, without reading the queue.
--
-- A task that may run at once has not_before 0, so that only delayed tasks (a retry
-- waiting out its backoff, or a submission with a start time) enter tasks_delayed.

UPDATE tasks SET not_before = 0 WHERE state IN (0, 1) AND not_before <= submitted_at;

-- Ready tasks without a group, and ready tasks per group, each in claim order. A claim
-- whose scan a single group filled reads on from these, past that group's tasks,
-- instead of leaving the tasks behind it waiting.
CREATE INDEX tasks_ready_free ON tasks (priority DESC, vseq, id)
    WHERE state = 1 AND group_key IS NULL;
CREATE INDEX tasks_ready_group ON tasks (group_key, priority DESC, vseq, id)
    WHERE state = 1 AND group_key IS NOT NULL;
CREATE INDEX tasks_delayed ON tasks (not_before) WHERE state = 1 AND not_before > 0;

-- qhost's SQLite schema, version 9: counters of ended tasks, so that metrics and status
-- cost the same however many tasks ended, and indexes for reading the execution log by
-- time, outcome and group.
--
-- Per ended state (3 succeeded, 4 failed, 5 cancelled): `ended` counts every time a task
-- ended so and is never lowered (a task run again and ended again counts twice); `gone`
-- counts those that left the state since (run again, pruned, released). Tasks in the
-- state now: ended - gone. Triggers keep both in the transaction that changes the task;
-- a migration that rebuilds `tasks` must create them again.
CREATE TABLE task_totals (
    state  INTEGER PRIMARY KEY,
    ended  INTEGER NOT NULL,
    gone   INTEGER NOT NULL
);
-- An upgraded store starts from the tasks it keeps: those pruned before are not known.
INSERT INTO task_totals (state, ended, gone)
SELECT s.state, (SELECT COUNT(*) FROM tasks t WHERE t.state = s.state), 0
FROM (SELECT 3 AS state UNION ALL SELECT 4 UNION ALL SELECT 5) s;

CREATE TRIGGER task_totals_insert AFTER INSERT ON tasks WHEN NEW.state >= 3
BEGIN
    UPDATE task_totals SET ended = ended + 1 WHERE state = NEW.state;
END;
CREATE TRIGGER task_totals_update AFTER UPDATE OF state ON tasks
WHEN NEW.state <> OLD.state AND (NEW.state >= 3 OR OLD.state >= 3)
BEGIN
    UPDATE task_totals SET ended = ended + 1 WHERE state = NEW.state;
    UPDATE task_totals SET gone = gone + 1 WHERE state = OLD.state;
END;
CREATE TRIGGER task_totals_delete AFTER DELETE ON tasks WHEN OLD.state >= 3
BEGIN
    UPDATE task_totals SET gone = gone + 1 WHERE state = OLD.state;
END;

-- The oldest ready task is found along tasks_list_state (0008), as is the page of ready
-- tasks: an index of its own would only cost claims and submissions.

-- The log by time (since, until), by outcome and by group, each read newest or oldest
-- first by position.
CREATE INDEX attempts_started ON attempts (started_at);
CREATE INDEX attempts_outcome ON attempts (outcome, id);
CREATE INDEX attempts_group ON attempts (group_key, id) WHERE group_key IS NOT NULL;
-- The batches and groups paused (a limit of 0), whose ready tasks count as held.
CREATE INDEX batches_held ON batches (id) WHERE max_parallel = 0;
CREATE INDEX groups_held ON groups (key) WHERE lim = 0;

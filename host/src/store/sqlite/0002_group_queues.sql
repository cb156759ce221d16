-- qhost's SQLite schema, version 2: ready tasks without a group, and ready tasks per
-- group, each in claim order. A claim whose scan a single group filled reads on from
-- these, past that group's tasks, instead of leaving the tasks behind it waiting.
CREATE INDEX tasks_ready_free ON tasks (priority DESC, vseq, id)
    WHERE state = 1 AND group_key IS NULL;
CREATE INDEX tasks_ready_group ON tasks (group_key, priority DESC, vseq, id)
    WHERE state = 1 AND group_key IS NOT NULL;

-- qhost's SQLite schema, version 12: a claim moves no entry of the list indexes.
--
-- The list indexes (0008) kept each task under its state, so a claim (ready to claimed)
-- and its end moved the task in all five, on top of the claim's own indexes: a state
-- change cost several index writes per task. They now key on `listed`, the state a list
-- reads a task under: its state, but a claimed task stays listed as ready (1) until it
-- ends, so a claim and a hand-back write no list entry; lists of claimed tasks read
-- tasks_running, which is small. So: listed = state, except listed = 1 where state = 2.
--
-- The group index keeps no state at all: its entries of many groups lie all over it, so
-- each end moved an entry on a page of its own (a fifth less drain with 1,000 groups,
-- measured); a list of one group's tasks in one state filters them as it reads.
--
-- The statements on the hot path set `listed` with the state; the triggers below keep it
-- for every other change of state (a trigger whose condition is false costs no write).
ALTER TABLE tasks ADD COLUMN listed INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET listed = CASE state WHEN 2 THEN 1 ELSE state END;

DROP INDEX tasks_list_state;
DROP INDEX tasks_list_batch;
DROP INDEX tasks_list_group;
DROP INDEX tasks_list_module;
DROP INDEX tasks_list_outcome;
CREATE INDEX tasks_list_state ON tasks (listed, submitted_at);
CREATE INDEX tasks_list_batch ON tasks (batch_id, listed, submitted_at);
CREATE INDEX tasks_list_group ON tasks (group_key, submitted_at)
    WHERE group_key IS NOT NULL;
CREATE INDEX tasks_list_module ON tasks (module, listed, submitted_at);
CREATE INDEX tasks_list_outcome ON tasks (outcome, listed, submitted_at)
    WHERE outcome IS NOT NULL;

CREATE TRIGGER tasks_listed_insert AFTER INSERT ON tasks
WHEN NEW.listed IS NOT (CASE NEW.state WHEN 2 THEN 1 ELSE NEW.state END)
BEGIN
    UPDATE tasks SET listed = CASE NEW.state WHEN 2 THEN 1 ELSE NEW.state END
    WHERE id = NEW.id;
END;
CREATE TRIGGER tasks_listed_update AFTER UPDATE OF state ON tasks
WHEN NEW.listed IS NOT (CASE NEW.state WHEN 2 THEN 1 ELSE NEW.state END)
BEGIN
    UPDATE tasks SET listed = CASE NEW.state WHEN 2 THEN 1 ELSE NEW.state END
    WHERE id = NEW.id;
END;

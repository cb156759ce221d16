-- The dead letters: the tasks that ended failed or cancelled (states 4 and 5), in a table
-- of their own, so that a list or a count of them under a wide filter (a module, an
-- outcome, a day of submissions) reads them alone instead of walking every task for the
-- few among the successes. Each row holds what lists filter on, none of which changes while
-- the task stays ended so.
--
-- A task is here exactly while its state is 4 or 5. Many statements end, cancel, re-drive
-- and delete tasks, so triggers keep the table, in the transaction that changes the task;
-- tasks are inserted waiting or ready only (`bench fill` adds the rows of those it inserts
-- ended).
CREATE TABLE dead_letters (
    task_id       BIGINT PRIMARY KEY,
    state         INT NOT NULL,
    batch_id      BIGINT NOT NULL,
    group_key     TEXT,
    module        TEXT NOT NULL,
    outcome       TEXT,
    submitted_at  BIGINT NOT NULL
);
CREATE INDEX dead_letters_submitted ON dead_letters (submitted_at, task_id);
CREATE INDEX dead_letters_outcome ON dead_letters (outcome, submitted_at, task_id);

INSERT INTO dead_letters
SELECT id, state, batch_id, group_key, module, outcome, submitted_at
FROM tasks WHERE state IN (4, 5);

-- Per row, but only for a change into, out of or within the dead states: a small part of
-- the updates, and the trigger's condition is checked without calling it.
CREATE FUNCTION dead_letters_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IN (4, 5) THEN
        INSERT INTO dead_letters
        VALUES (NEW.id, NEW.state, NEW.batch_id, NEW.group_key, NEW.module, NEW.outcome,
                NEW.submitted_at)
        ON CONFLICT (task_id) DO UPDATE SET state = EXCLUDED.state, outcome = EXCLUDED.outcome;
    ELSE
        DELETE FROM dead_letters WHERE task_id = OLD.id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER dead_letters_update AFTER UPDATE OF state, outcome ON tasks FOR EACH ROW
WHEN ((NEW.state IN (4, 5) OR OLD.state IN (4, 5))
      AND (NEW.state <> OLD.state OR NEW.outcome IS DISTINCT FROM OLD.outcome))
EXECUTE FUNCTION dead_letters_moved();

CREATE FUNCTION dead_letters_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM dead_letters d USING old_rows o WHERE d.task_id = o.id AND o.state IN (4, 5);
    RETURN NULL;
END $$;
CREATE TRIGGER dead_letters_delete AFTER DELETE ON tasks
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letters_deleted();

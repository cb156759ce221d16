-- Counters of ended tasks, so that metrics and status cost the same however many tasks
-- ended, and indexes for reading the execution log by time, outcome and group.
--
-- Per ended state (3 succeeded, 4 failed, 5 cancelled) and shard: `ended` counts every
-- time a task ended so and is never lowered (a task run again and ended again counts
-- twice); `gone` counts those that left the state since (run again, pruned, released).
-- Tasks in the state now: the sum of ended - gone. Triggers keep them in the transaction
-- that changes the task; each connection writes the shard of its backend, so that nodes
-- ending tasks at once rarely wait on the same row.
CREATE TABLE task_totals (
    state  INT NOT NULL,
    shard  INT NOT NULL,
    ended  BIGINT NOT NULL DEFAULT 0,
    gone   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (state, shard)
);
INSERT INTO task_totals (state, shard)
SELECT s, h FROM generate_series(3, 5) s, generate_series(0, 15) h;
-- An upgraded store starts from the tasks it keeps: those pruned before are not known.
UPDATE task_totals SET ended = (SELECT COUNT(*) FROM tasks t WHERE t.state = task_totals.state)
WHERE shard = 0;

CREATE FUNCTION task_totals_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE task_totals c SET ended = c.ended + n.count
    FROM (SELECT state, COUNT(*) AS count FROM new_rows WHERE state >= 3 GROUP BY state) n
    WHERE c.state = n.state AND c.shard = pg_backend_pid() % 16;
    RETURN NULL;
END $$;
CREATE TRIGGER task_totals_insert AFTER INSERT ON tasks
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION task_totals_inserted();

CREATE FUNCTION task_totals_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE task_totals c SET gone = c.gone + o.count
    FROM (SELECT state, COUNT(*) AS count FROM old_rows WHERE state >= 3 GROUP BY state) o
    WHERE c.state = o.state AND c.shard = pg_backend_pid() % 16;
    RETURN NULL;
END $$;
CREATE TRIGGER task_totals_delete AFTER DELETE ON tasks
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION task_totals_deleted();

-- Updates: per row, and only for a change into or out of an ended state, a count kept in
-- the transaction's settings (`qhost.ended_3`, `qhost.gone_4`, ...); then once per
-- statement, the counts added to the counters and set back to 0. Most updates (claims,
-- starts, priorities) pay nothing per row. Updating the counter row once per task instead
-- makes each update walk the chain of that row's versions in the transaction: 15 us a
-- task at 2,048 tasks a statement against 2.7 here, measured, and the slower the
-- completions, the larger the batches they are written in.
CREATE FUNCTION task_totals_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    name TEXT;
BEGIN
    IF NEW.state >= 3 THEN
        name := 'qhost.ended_' || NEW.state;
        PERFORM set_config(name,
            (COALESCE(NULLIF(current_setting(name, true), ''), '0')::bigint + 1)::text, true);
    END IF;
    IF OLD.state >= 3 THEN
        name := 'qhost.gone_' || OLD.state;
        PERFORM set_config(name,
            (COALESCE(NULLIF(current_setting(name, true), ''), '0')::bigint + 1)::text, true);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER task_totals_update AFTER UPDATE OF state ON tasks FOR EACH ROW
WHEN (NEW.state <> OLD.state AND (NEW.state >= 3 OR OLD.state >= 3))
EXECUTE FUNCTION task_totals_moved();

CREATE FUNCTION task_totals_moved_add() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    new_ends BIGINT;
    new_gone BIGINT;
BEGIN
    FOR s IN 3..5 LOOP
        new_ends := COALESCE(NULLIF(current_setting('qhost.ended_' || s, true), ''), '0');
        new_gone := COALESCE(NULLIF(current_setting('qhost.gone_' || s, true), ''), '0');
        IF new_ends <> 0 OR new_gone <> 0 THEN
            UPDATE task_totals c SET ended = c.ended + new_ends, gone = c.gone + new_gone
            WHERE c.state = s AND c.shard = pg_backend_pid() % 16;
            PERFORM set_config('qhost.ended_' || s, '0', true);
            PERFORM set_config('qhost.gone_' || s, '0', true);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER task_totals_update_add AFTER UPDATE OF state ON tasks FOR EACH STATEMENT
EXECUTE FUNCTION task_totals_moved_add();

-- With the position, so that a page in a time range is found from the index alone.
CREATE INDEX attempts_started ON attempts (started_at) INCLUDE (id);
CREATE INDEX attempts_outcome ON attempts (outcome, id);
CREATE INDEX attempts_group ON attempts (group_key, id) WHERE group_key IS NOT NULL;
-- The batches and groups paused (a limit of 0), whose ready tasks count as held.
CREATE INDEX batches_held ON batches (id) WHERE max_parallel = 0;
CREATE INDEX groups_held ON groups (key) WHERE lim = 0;

-- qhost's PostgreSQL schema, version 3: the ready queue and the leases in tables of their
-- own, so that no index of tasks mentions a column a claim or a completion changes.
-- PostgreSQL then rewrites the task row within its page (a heap-only update) without
-- touching any of its indexes: a claim and a completion each cost an index entry or two
-- in small tables instead of one in every index of tasks.
--
-- A task is in ready exactly while its state is 1, and in leases exactly while its state
-- is 2; whoever changes the state changes these in the same transaction, after locking the
-- task row.

CREATE TABLE ready (
    task_id     BIGINT PRIMARY KEY,
    batch_id    BIGINT NOT NULL,
    group_key   TEXT,
    priority    INT NOT NULL,
    vseq        BIGINT NOT NULL,
    not_before  BIGINT NOT NULL            -- 0: due at once
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.02,
        autovacuum_vacuum_cost_delay = 0);

-- Claim order; the same split by group, so a claim can pass over busy groups; delayed tasks.
CREATE INDEX ready_order ON ready (priority DESC, vseq, task_id);
CREATE INDEX ready_free ON ready (priority DESC, vseq, task_id) WHERE group_key IS NULL;
CREATE INDEX ready_group ON ready (group_key, priority DESC, vseq, task_id)
    WHERE group_key IS NOT NULL;
CREATE INDEX ready_delayed ON ready (not_before) WHERE not_before > 0;

INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before)
SELECT id, batch_id, group_key, priority, vseq, not_before FROM tasks WHERE state = 1;

CREATE TABLE leases (
    task_id  BIGINT PRIMARY KEY,
    node     TEXT NOT NULL,
    expires  BIGINT NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0);

INSERT INTO leases (task_id, node, expires)
SELECT id, lease_node, lease_expires FROM tasks WHERE state = 2;

DROP INDEX tasks_ready, tasks_ready_free, tasks_ready_group, tasks_delayed, tasks_running,
    tasks_ended;
ALTER TABLE tasks DROP COLUMN lease_expires;
-- Room in each page for the row versions claims and completions write.
ALTER TABLE tasks SET (fillfactor = 50);

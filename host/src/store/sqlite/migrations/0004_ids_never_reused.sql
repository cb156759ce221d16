-- qhost's SQLite schema, version 4: batch, task and attempt ids are never given twice.
--
-- An INTEGER PRIMARY KEY without AUTOINCREMENT takes the largest id in use plus one, so
-- once the newest batch was released the next batch got its id, and with it whatever the
-- release had left behind. The three tables are rebuilt with AUTOINCREMENT, every column,
-- index and row kept; their counters start above every id ever seen, including those of
-- rows that releases left behind, which are then removed: a released batch owns nothing.

CREATE TABLE batches_new (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    handle_hash       BLOB NOT NULL UNIQUE,   -- sha256 of the batch handle; the handle is never stored
    name              TEXT,
    priority          INTEGER NOT NULL,
    max_parallel      INTEGER,               -- NULL: no limit
    halt_on_failure   INTEGER NOT NULL,
    sealed            INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    running           INTEGER NOT NULL DEFAULT 0,  -- tasks claimed now
    next_vseq         INTEGER NOT NULL DEFAULT 0,  -- fair-queueing position of its next task
    max_started_order INTEGER                      -- highest order that has had a task claimed
);
INSERT INTO batches_new (id, handle_hash, name, priority, max_parallel, halt_on_failure,
    sealed, created_at, running, next_vseq, max_started_order)
SELECT id, handle_hash, name, priority, max_parallel, halt_on_failure,
    sealed, created_at, running, next_vseq, max_started_order
FROM batches;
DROP TABLE batches;
ALTER TABLE batches_new RENAME TO batches;

CREATE TABLE tasks_new (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    batch_id         INTEGER NOT NULL REFERENCES batches (id),
    module           TEXT NOT NULL,          -- digest; kept after the module is deleted
    input            BLOB NOT NULL,
    ord              INTEGER NOT NULL,
    group_key        TEXT,
    priority         INTEGER NOT NULL,
    vseq             INTEGER NOT NULL,
    state            INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    backoff_ms       INTEGER NOT NULL,
    limits           TEXT NOT NULL,          -- JSON TaskLimits
    mounts           TEXT NOT NULL,          -- JSON [MountGrant]
    not_before       INTEGER NOT NULL,
    submitted_at     INTEGER NOT NULL,
    claimed_at       INTEGER,
    ended_at         INTEGER,
    lease_node       TEXT,
    lease_token      INTEGER,
    lease_expires    INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    outcome          TEXT,
    error            TEXT,
    output           BLOB,
    started_at       INTEGER                 -- when its node started it; NULL: reserved
);
INSERT INTO tasks_new (id, batch_id, module, input, ord, group_key, priority, vseq, state,
    attempts, max_attempts, backoff_ms, limits, mounts, not_before, submitted_at, claimed_at,
    ended_at, lease_node, lease_token, lease_expires, cancel_requested, outcome, error,
    output, started_at)
SELECT id, batch_id, module, input, ord, group_key, priority, vseq, state,
    attempts, max_attempts, backoff_ms, limits, mounts, not_before, submitted_at, claimed_at,
    ended_at, lease_node, lease_token, lease_expires, cancel_requested, outcome, error,
    output, started_at
FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;

CREATE INDEX tasks_ready ON tasks (priority DESC, vseq, id) WHERE state = 1;
CREATE INDEX tasks_batch ON tasks (batch_id, ord);
CREATE INDEX tasks_running ON tasks (lease_node) WHERE state = 2;
CREATE INDEX tasks_ended ON tasks (ended_at) WHERE state >= 3;
CREATE INDEX tasks_group ON tasks (group_key) WHERE group_key IS NOT NULL;
CREATE INDEX tasks_ready_free ON tasks (priority DESC, vseq, id)
    WHERE state = 1 AND group_key IS NULL;
CREATE INDEX tasks_ready_group ON tasks (group_key, priority DESC, vseq, id)
    WHERE state = 1 AND group_key IS NOT NULL;
CREATE INDEX tasks_delayed ON tasks (not_before) WHERE state = 1 AND not_before > 0;

CREATE TABLE attempts_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     INTEGER NOT NULL REFERENCES tasks (id),
    batch_id    INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    node        TEXT NOT NULL,
    slot        INTEGER,
    lease_token INTEGER NOT NULL,
    group_key   TEXT,
    ord         INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    ended_at    INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    error       TEXT,
    logs        TEXT,                       -- JSON [LogLine]
    stdout      BLOB,
    stderr      BLOB
);
INSERT INTO attempts_new (id, task_id, batch_id, attempt, node, slot, lease_token, group_key,
    ord, started_at, ended_at, outcome, error, logs, stdout, stderr)
SELECT id, task_id, batch_id, attempt, node, slot, lease_token, group_key,
    ord, started_at, ended_at, outcome, error, logs, stdout, stderr
FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_new RENAME TO attempts;

CREATE INDEX attempts_task ON attempts (task_id, attempt);
CREATE INDEX attempts_batch ON attempts (batch_id, started_at);

-- Counters above every id seen, in a table or as a reference from another.
INSERT INTO sqlite_sequence (name, seq)
SELECT name, 0 FROM (SELECT 'batches' AS name UNION ALL SELECT 'tasks' UNION ALL SELECT 'attempts')
WHERE name NOT IN (SELECT name FROM sqlite_sequence);
UPDATE sqlite_sequence SET seq = max(seq,
    coalesce((SELECT max(id) FROM batches), 0),
    coalesce((SELECT max(batch_id) FROM tasks), 0),
    coalesce((SELECT max(batch_id) FROM batch_orders), 0))
WHERE name = 'batches';
UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT max(id) FROM tasks), 0))
WHERE name = 'tasks';
UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT max(id) FROM attempts), 0))
WHERE name = 'attempts';

-- What releases left behind.
DELETE FROM tasks WHERE batch_id NOT IN (SELECT id FROM batches);
DELETE FROM batch_orders WHERE batch_id NOT IN (SELECT id FROM batches);

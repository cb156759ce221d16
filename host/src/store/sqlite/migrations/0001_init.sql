-- qhost's SQLite schema, version 1.
--
-- Task states: 0 waiting (a lower order of its batch is still open), 1 ready (at its
-- batch's gate), 2 running (claimed under a lease), 3 succeeded, 4 failed, 5 cancelled.
-- Times are microseconds since the Unix epoch. References are documentation: the driver
-- keeps them (deleting dependent rows itself), without the cost of enforcing them on
-- every claim and completion.

CREATE TABLE modules (
    digest     TEXT PRIMARY KEY,           -- sha256 of the component, hex
    name       TEXT,
    tag        TEXT,
    size       INTEGER NOT NULL,
    bytes      BLOB NOT NULL,
    added_at   INTEGER NOT NULL
);

CREATE TABLE batches (
    id                INTEGER PRIMARY KEY,
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

-- Open (not ended) tasks per batch and order. The lowest order present is the batch's gate.
CREATE TABLE batch_orders (
    batch_id  INTEGER NOT NULL REFERENCES batches (id),
    ord       INTEGER NOT NULL,
    open      INTEGER NOT NULL,
    PRIMARY KEY (batch_id, ord)
) WITHOUT ROWID;

CREATE TABLE groups (
    key      TEXT PRIMARY KEY,
    lim      INTEGER NOT NULL DEFAULT 1,
    running  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE tasks (
    id               INTEGER PRIMARY KEY,
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
    output           BLOB
);

-- The claim scans ready tasks in priority, then fair-queueing, order.
CREATE INDEX tasks_ready ON tasks (priority DESC, vseq, id) WHERE state = 1;
-- Indexes that a state change does not touch, except the partial ones a claim and a
-- completion must move a task between.
CREATE INDEX tasks_batch ON tasks (batch_id, ord);
CREATE INDEX tasks_running ON tasks (lease_node) WHERE state = 2;
CREATE INDEX tasks_ended ON tasks (ended_at) WHERE state >= 3;
CREATE INDEX tasks_group ON tasks (group_key) WHERE group_key IS NOT NULL;

CREATE TABLE attempts (
    id          INTEGER PRIMARY KEY,
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

CREATE INDEX attempts_task ON attempts (task_id, attempt);
CREATE INDEX attempts_batch ON attempts (batch_id, started_at);

CREATE TABLE scheduler (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    vtime  INTEGER NOT NULL                 -- fair-queueing clock: vseq of the latest claim
);
INSERT INTO scheduler (id, vtime) VALUES (1, 0);

-- qhost's SQLite schema, version 6: tasks run again, batches and groups paused, and the
-- idempotency keys of requests done exactly once.
--
-- A re-driven task (state 4 failed or 5 cancelled, back to 0 waiting or 1 ready) keeps
-- its attempts: redriven_after counts those it had made then, and its max_attempts counts
-- from there.
ALTER TABLE tasks ADD COLUMN redriven_after INTEGER NOT NULL DEFAULT 0;

-- A paused batch has max_parallel 0, and a paused group lim 0, which the claim reads as
-- no room; what they get back on resume is kept beside (NULL: no limit).
ALTER TABLE batches ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN resume_max_parallel INTEGER;
ALTER TABLE groups ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE groups ADD COLUMN resume_lim INTEGER NOT NULL DEFAULT 1;

-- Requests sent with an Idempotency-Key: the first answer, kept with the batch.
CREATE TABLE request_keys (
    batch_id    INTEGER NOT NULL REFERENCES batches (id),
    kind        INTEGER NOT NULL,          -- 0 opened the batch, 1 submitted into it
    key_hash    BLOB NOT NULL,             -- sha256 of the key; the key is never stored
    body_hash   BLOB NOT NULL,             -- sha256 of the request
    answer      BLOB NOT NULL,             -- the first answer (JSON)
    sealed      BLOB,                      -- an open's handle secret, sealed under the key
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (batch_id, kind, key_hash)
) WITHOUT ROWID;
-- A key opens one batch at most.
CREATE UNIQUE INDEX request_keys_open ON request_keys (key_hash) WHERE kind = 0;

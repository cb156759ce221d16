-- qhost's PostgreSQL schema, version 6: tasks run again, batches and groups paused, and
-- the idempotency keys of requests done exactly once.
--
-- A re-driven task (state 4 failed or 5 cancelled, back to 0 waiting or 1 ready) keeps
-- its attempts: redriven_after counts those it had made then, and its max_attempts counts
-- from there.
ALTER TABLE tasks ADD COLUMN redriven_after INT NOT NULL DEFAULT 0;

-- A paused batch has max_parallel 0, and a paused group lim 0, which claims read as no
-- room; what they get back on resume is kept beside (NULL: no limit). batches.running is
-- kept while max_parallel is set, and counted again whenever it is set.
ALTER TABLE batches ADD COLUMN paused BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE batches ADD COLUMN resume_max_parallel INT;
ALTER TABLE groups ADD COLUMN paused BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE groups ADD COLUMN resume_lim INT NOT NULL DEFAULT 1;

-- Requests sent with an Idempotency-Key: the first answer, kept with the batch.
CREATE TABLE request_keys (
    batch_id    BIGINT NOT NULL,
    kind        INT NOT NULL,              -- 0 opened the batch, 1 submitted into it
    key_hash    BYTEA NOT NULL,            -- sha256 of the key; the key is never stored
    body_hash   BYTEA NOT NULL,            -- sha256 of the request
    answer      BYTEA NOT NULL,            -- the first answer (JSON)
    sealed      BYTEA,                     -- an open's handle secret, sealed under the key
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (batch_id, kind, key_hash)
);
-- A key opens one batch at most.
CREATE UNIQUE INDEX request_keys_open ON request_keys (key_hash) WHERE kind = 0;

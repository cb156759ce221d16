-- qhost's SQLite schema, version 14: webhooks.
--
-- A batch may be opened with a webhook: its URL, and its secret sealed under the server's
-- secret key. The completion that frees a batch's slots reads whether it has one from the
-- same row (`RETURNING`), so a batch without one costs no statement more.
ALTER TABLE batches ADD COLUMN webhook_url TEXT;
ALTER TABLE batches ADD COLUMN webhook_secret TEXT;

-- The outbox: one row per delivery owed (the server's webhook, url NULL; or the batch's
-- own, its url and sealed secret copied, so a released batch's events still go out),
-- written in the transaction that ends the task or the batch. A sender claims a row by
-- moving due_at past its try; a delivered or given-up row is deleted. AUTOINCREMENT: an
-- event's id is never given again, so receivers may tell repeats by it.
CREATE TABLE webhook_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    batch_id    INTEGER NOT NULL,
    task_id     INTEGER,
    kind        TEXT NOT NULL,       -- batch.ended, task.failed
    url         TEXT,                -- NULL: the server's webhook
    secret      TEXT,                -- the batch's webhook secret, sealed
    outcome     TEXT,
    error       TEXT,
    created_at  INTEGER NOT NULL,
    due_at      INTEGER NOT NULL,
    tries       INTEGER NOT NULL DEFAULT 0,
    body        BLOB                 -- what the first try sent, sent again by the others
);
CREATE INDEX webhook_events_due ON webhook_events (due_at);
CREATE INDEX webhook_events_batch ON webhook_events (batch_id);

-- Webhooks.
--
-- A batch may be opened with a webhook: its URL, and its secret sealed under the server's
-- secret key. The completion reads whether it has one from the batch row it joins anyway,
-- so a batch without one costs no statement more.
ALTER TABLE batches ADD COLUMN webhook_url TEXT;
ALTER TABLE batches ADD COLUMN webhook_secret TEXT;

-- The outbox: one row per delivery owed (the server's webhook, url NULL; or the batch's
-- own, its url and sealed secret copied, so a released batch's events still go out),
-- written in the transaction that ends the task or the batch. Senders on every node claim
-- due rows with FOR UPDATE SKIP LOCKED and move due_at past their try, so one try goes
-- out once; a delivered or given-up row is deleted. Ids come from an identity: never given
-- again, so receivers may tell repeats by them.
CREATE TABLE webhook_events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    batch_id    BIGINT NOT NULL,
    task_id     BIGINT,
    kind        TEXT NOT NULL,       -- batch.ended, task.failed
    url         TEXT,                -- NULL: the server's webhook
    secret      TEXT,                -- the batch's webhook secret, sealed
    outcome     TEXT,
    error       TEXT,
    created_at  BIGINT NOT NULL,
    due_at      BIGINT NOT NULL,
    tries       INT NOT NULL DEFAULT 0,
    body        BYTEA                -- what the first try sent, sent again by the others
);
CREATE INDEX webhook_events_due ON webhook_events (due_at);
CREATE INDEX webhook_events_batch ON webhook_events (batch_id);

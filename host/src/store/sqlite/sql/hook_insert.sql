-- Writes the deliveries an event of a batch owes: one for the server's webhook when it has
-- one, one for the batch's own when it was opened with one (its URL and sealed secret
-- copied). A task's failure is not written once the batch has as many events waiting as
-- it may; a batch's end always is.
--
-- ?1 batch id
-- ?2 task id, or NULL
-- ?3 kind: batch.ended or task.failed
-- ?4 a failed task's outcome, or NULL
-- ?5 its error, or NULL
-- ?6 now (created_at, due_at)
-- ?7 whether the server has a webhook
-- ?8 most events waiting per batch
INSERT INTO webhook_events (batch_id, task_id, kind, url, secret, outcome, error,
                            created_at, due_at)
SELECT b.id, ?2, ?3,
       CASE d.own WHEN 1 THEN b.webhook_url END,
       CASE d.own WHEN 1 THEN b.webhook_secret END,
       ?4, ?5, ?6, ?6
FROM batches b, (SELECT 0 AS own UNION ALL SELECT 1) d
WHERE b.id = ?1
  AND ((d.own = 0 AND ?7) OR (d.own = 1 AND b.webhook_url IS NOT NULL))
  AND (?3 = 'batch.ended'
       OR (SELECT COUNT(*) FROM webhook_events WHERE batch_id = ?1) < ?8)

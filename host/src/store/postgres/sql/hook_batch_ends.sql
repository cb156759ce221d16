-- Writes a `batch.ended` event for each of the batches $1 (whose orders closed in this
-- transaction) that has no open order left, for the server's webhook when it has one and
-- for the batch's own. Run after the gates' locks are taken: of two transactions closing
-- a batch's last orders, the later one sees the other's and writes the end, once.
--
-- $1 batch ids (bigint[])
-- $2 now (created_at, due_at)
-- $3 whether the server has a webhook
INSERT INTO webhook_events (batch_id, kind, url, secret, created_at, due_at)
SELECT b.id, 'batch.ended',
       CASE WHEN d.own THEN b.webhook_url END,
       CASE WHEN d.own THEN b.webhook_secret END,
       $2::bigint, $2::bigint
FROM batches b, (VALUES (FALSE), (TRUE)) AS d(own)
WHERE b.id = ANY($1::bigint[])
  AND ((NOT d.own AND $3::boolean) OR (d.own AND b.webhook_url IS NOT NULL))
  AND NOT EXISTS (SELECT 1 FROM batch_orders o WHERE o.batch_id = b.id AND o.open > 0)

-- Deletes a chunk of the idempotency keys kept before a time whose batch has nothing open
-- (no order with open tasks): such a batch takes no repeat worth answering any more.
--
-- $1 the time before which keys were kept
-- $2 at most this many
DELETE FROM request_keys WHERE ctid IN (
    SELECT k.ctid FROM request_keys k
    WHERE k.created_at < $1
      AND NOT EXISTS (SELECT 1 FROM batch_orders o WHERE o.batch_id = k.batch_id AND o.open > 0)
    LIMIT $2)

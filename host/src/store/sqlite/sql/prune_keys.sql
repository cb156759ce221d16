-- Deletes a chunk of the idempotency keys kept before a time whose batch has nothing open
-- (no row in batch_orders): such a batch takes no repeat worth answering any more.
--
-- ?1 the time before which keys were kept
-- ?2 at most this many
DELETE FROM request_keys WHERE (batch_id, kind, key_hash) IN (
    SELECT batch_id, kind, key_hash FROM request_keys
    WHERE created_at < ?1 AND batch_id NOT IN (SELECT batch_id FROM batch_orders)
    LIMIT ?2);

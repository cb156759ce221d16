-- The request kept under an idempotency key, if any: a submission's within its batch, a
-- batch's opening among all (along request_keys_open).
--
-- $1 batch id (for a submission; ignored for an opening)
-- $2 kind: 0 opened a batch, 1 submitted into one
-- $3 sha256 of the key
--
-- Columns: the request's hash, the first answer, what was sealed beside it.
SELECT body_hash, answer, sealed FROM request_keys
WHERE kind = 0 AND $2::int = 0 AND key_hash = $3
UNION ALL
SELECT body_hash, answer, sealed FROM request_keys
WHERE $2::int = 1 AND batch_id = $1 AND kind = 1 AND key_hash = $3

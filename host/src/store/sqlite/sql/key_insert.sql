-- Keeps a request's first answer under its idempotency key.
--
-- ?1 batch id
-- ?2 kind: 0 opened the batch, 1 submitted into it
-- ?3 sha256 of the key
-- ?4 sha256 of the request
-- ?5 the answer (JSON)
-- ?6 what is sealed beside it, or NULL
-- ?7 now (created_at)
INSERT INTO request_keys (batch_id, kind, key_hash, body_hash, answer, sealed, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7);

-- ?1 batch id
SELECT allow_http, settings FROM batch_grants WHERE batch_id = ?1;

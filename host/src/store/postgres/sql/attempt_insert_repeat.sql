-- Records an ended attempt with an error that may repeat its task's previous attempt's:
-- then the text is kept once, in the attempt that first had it, which `error_from` names.
-- Returns whether it was a repeat. Parameters as attempt_insert.sql's, one value each.
WITH last AS (
    SELECT coalesce(error_from, attempt) AS holder FROM attempts
    WHERE task_id = $1 ORDER BY attempt DESC LIMIT 1
), held AS (
    SELECT a.attempt, a.error FROM attempts a JOIN last
        ON a.task_id = $1 AND a.attempt = last.holder
)
INSERT INTO attempts (task_id, batch_id, attempt, node, slot, lease_token, group_key, ord,
    started_at, ended_at, outcome, error, error_from, logs, stdout, stderr, cpu_micros,
    memory_mib_seconds, http_bytes)
SELECT $1::bigint, $2::bigint, $3::int, $4::text, $5::int, $6::bigint, $7::text, $8::bigint,
       $9::bigint, $10::bigint, $11::text,
       CASE WHEN held.error IS NOT DISTINCT FROM $12::text THEN NULL ELSE $12::text END,
       CASE WHEN held.error IS NOT DISTINCT FROM $12::text THEN held.attempt END,
       $13::text, $14::bytea, $15::bytea, $16::bigint, $17::float8, $18::bigint
FROM (SELECT 1) AS one LEFT JOIN held ON TRUE
RETURNING error_from IS NOT NULL

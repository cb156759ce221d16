-- Records an ended attempt with an error that may repeat its task's previous attempt's:
-- then the text is kept once, in the attempt that first had it, which `error_from` names.
-- Returns whether it was a repeat. Parameters as attempt_insert.sql's.
WITH last AS (
    SELECT coalesce(error_from, attempt) AS holder FROM attempts INDEXED BY attempts_task
    WHERE task_id = ?1 ORDER BY attempt DESC LIMIT 1
), held AS (
    SELECT a.attempt, a.error FROM attempts a INDEXED BY attempts_task JOIN last
    WHERE a.task_id = ?1 AND a.attempt = last.holder
)
INSERT INTO attempts (task_id, batch_id, attempt, node, slot, lease_token, group_key, ord,
    started_at, ended_at, outcome, error, error_from, logs, stdout, stderr, cpu_micros,
    memory_mib_seconds, http_bytes)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
       CASE WHEN held.error IS ?12 THEN NULL ELSE ?12 END,
       CASE WHEN held.error IS ?12 THEN held.attempt END,
       ?13, ?14, ?15, ?16, ?17, ?18
FROM (SELECT 1) LEFT JOIN held ON TRUE
RETURNING error_from IS NOT NULL;

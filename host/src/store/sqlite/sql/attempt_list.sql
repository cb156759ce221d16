-- Attempt records with their task's module and its name, in the order they were written;
-- an error kept once for a run of repeats (error_from) read from the attempt that holds it.
-- The caller appends one `AND a.column ...` clause per filter given, then the order and
-- the limit (see `log.rs`).
SELECT a.id, a.task_id, a.batch_id, a.attempt, a.node, a.slot, a.group_key, a.ord,
       a.started_at, a.ended_at, a.outcome,
       CASE WHEN a.error_from IS NULL THEN a.error
            ELSE (SELECT p.error FROM attempts p
                  WHERE p.task_id = a.task_id AND p.attempt = a.error_from) END,
       a.logs, a.stdout, a.stderr,
       t.module, m.name, a.cpu_micros, a.memory_mib_seconds, a.http_bytes
FROM attempts a
JOIN tasks t ON t.id = a.task_id
LEFT JOIN modules m ON m.digest = t.module
WHERE 1 = 1

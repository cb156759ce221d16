-- Attempt records with their task's module and its name, in the order they were written.
-- The caller appends one `AND a.column ...` clause per filter given, then the order and
-- the limit (see `log.rs`), so that each filter can use its index of the log.
SELECT a.id, a.task_id, a.batch_id, a.attempt, a.node, a.slot, a.group_key, a.ord,
       a.started_at, a.ended_at, a.outcome, a.error, a.logs, a.stdout, a.stderr,
       t.module, m.name
FROM attempts a
JOIN tasks t ON t.id = a.task_id
LEFT JOIN modules m ON m.digest = t.module
WHERE TRUE

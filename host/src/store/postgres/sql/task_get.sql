-- One task as reads report it, with its module's name (NULL when the module has none or
-- was deleted since).
--
-- $1 task id
--
-- state: 0 waiting at a gate (a lower order of its batch is still open), 1 ready,
-- 2 claimed, 3 succeeded, 4 failed, 5 cancelled. A claimed task whose lease has no start
-- mark is reported as 6 (reserved: its node has not started it); 6 is never stored.
SELECT t.id, t.batch_id, t.module, t.ord, t.group_key, t.priority,
       CASE WHEN t.state = 2 AND l.started_at IS NULL THEN 6 ELSE t.state END,
       t.attempts, t.max_attempts, t.submitted_at, t.ended_at, t.outcome, t.error,
       octet_length(t.output), m.name
FROM tasks t
LEFT JOIN leases l ON l.task_id = t.id
LEFT JOIN modules m ON m.digest = t.module
WHERE t.id = $1

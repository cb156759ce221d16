-- One task as reads report it, with its module's name (NULL when the module has none or
-- was deleted since).
--
-- ?1 task id
--
-- state: 0 waiting (behind its batch's gate: a lower order is still open), 1 ready,
-- 2 claimed, 3 succeeded, 4 failed, 5 cancelled. A claimed task without a start mark is
-- reported as 6 (reserved: its node has not started it on a slot); 6 is never stored.
SELECT t.id, t.batch_id, t.module, t.ord, t.group_key, t.priority,
       CASE WHEN t.state = 2 AND t.started_at IS NULL THEN 6 ELSE t.state END,
       t.attempts, t.max_attempts, t.submitted_at, t.ended_at, t.outcome, t.error,
       length(t.output), m.name
FROM tasks t
LEFT JOIN modules m ON m.digest = t.module
WHERE t.id = ?1;

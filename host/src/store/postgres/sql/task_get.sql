-- One task as reads report it, with its module's name (NULL when the module has none or
-- was deleted since).
--
-- $1 task id
--
-- state: 0 waiting at a gate (a lower order of its batch is still open), 1 ready,
-- 2 claimed, 3 succeeded, 4 failed, 5 cancelled. A claimed task whose lease has no start
-- mark is reported as 6 (reserved: its node has not started it); a ready task whose batch
-- or group has a limit of 0 (which a pause sets) as 7 (held); 6 and 7 are never stored.
-- Then when a pending (waiting or ready) task is due, if it was delayed; the module's
-- name; the input's size.
SELECT t.id, t.batch_id, t.module, t.ord, t.group_key, t.priority,
       CASE WHEN t.state = 2 AND l.started_at IS NULL THEN 6
            WHEN t.state = 1 AND (
                EXISTS (SELECT 1 FROM batches b WHERE b.id = t.batch_id AND b.max_parallel = 0)
                OR EXISTS (SELECT 1 FROM groups g WHERE g.key = t.group_key AND g.lim = 0)) THEN 7
            ELSE t.state END,
       t.attempts, t.redriven_after + t.max_attempts, t.submitted_at, t.ended_at, t.outcome,
       t.error, octet_length(t.output),
       CASE WHEN t.state IN (0, 1) AND t.not_before > 0 THEN t.not_before END, m.name, octet_length(t.input)
FROM tasks t
LEFT JOIN leases l ON l.task_id = t.id
LEFT JOIN modules m ON m.digest = t.module
WHERE t.id = $1

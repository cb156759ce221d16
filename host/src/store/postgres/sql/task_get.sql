-- One task as reads report it, with its module's name (NULL when the module has none or
-- was deleted since).
--
-- $1 task id
--
-- state, as TaskState::shown (store/state.rs) says: 0 waiting (at a gate, or stored ready
-- and not due now, on the database's clock, which due times are on), 1 ready, 2 running,
-- 3 succeeded, 4 failed, 5 cancelled, 6 reserved (claimed, its lease has no start mark),
-- 7 held (stored ready, its batch or group at a limit of 0, which a pause sets); 6 and 7
-- are never stored. Then when a pending (waiting
-- or ready) task is due, if it was delayed; the module's name; the input's size;
-- the error's size in bytes.
SELECT t.id, t.batch_id, t.module, t.ord, t.group_key, t.priority,
       CASE WHEN t.state = 2 AND l.started_at IS NULL THEN 6
            WHEN t.state = 1 AND (
                EXISTS (SELECT 1 FROM batches b WHERE b.id = t.batch_id AND b.max_parallel = 0)
                OR EXISTS (SELECT 1 FROM groups g WHERE g.key = t.group_key AND g.lim = 0)) THEN 7
            WHEN t.state = 1 AND t.not_before > (extract(epoch FROM clock_timestamp()) * 1000000)::bigint THEN 0
            ELSE t.state END,
       t.attempts, t.redriven_after + t.max_attempts + t.deferrals, t.submitted_at, t.ended_at, t.outcome,
       t.error, octet_length(t.output),
       CASE WHEN t.state IN (0, 1) AND t.not_before > 0 THEN t.not_before END, m.name, octet_length(t.input),
       octet_length(t.error),
       t.task_key, coalesce(t.cost, 1)
FROM tasks t
LEFT JOIN leases l ON l.task_id = t.id
LEFT JOIN modules m ON m.digest = t.module
WHERE t.id = $1

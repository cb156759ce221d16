-- One task as reads report it, with its module's name (NULL when the module has none or
-- was deleted since).
--
-- ?1 task id; ?2 now
--
-- state, as TaskState::shown (store/state.rs) says: 0 waiting (behind its batch's gate,
-- or stored ready and not due by ?2), 1 ready, 2 running, 3 succeeded, 4 failed,
-- 5 cancelled, 6 reserved (claimed, no start mark), 7 held (stored ready, its batch or
-- group at a limit of 0, which a pause sets); 6 and 7 are never stored. Then when a
-- pending (waiting or ready) task is due, if it was delayed; and the module's name, if it
-- has one; the input's size; the error's size in bytes.
SELECT t.id, t.batch_id, t.module, t.ord, t.group_key, t.priority,
       CASE WHEN t.state = 2 AND t.started_at IS NULL THEN 6
            WHEN t.state = 1 AND (
                EXISTS (SELECT 1 FROM batches b WHERE b.id = t.batch_id AND b.max_parallel = 0)
                OR EXISTS (SELECT 1 FROM groups g WHERE g.key = t.group_key AND g.lim = 0)) THEN 7
            WHEN t.state = 1 AND t.not_before > ?2 THEN 0
            ELSE t.state END,
       t.attempts, t.redriven_after + t.max_attempts + t.deferrals, t.submitted_at, t.ended_at, t.outcome,
       t.error, length(t.output),
       CASE WHEN t.state IN (0, 1) AND t.not_before > 0 THEN t.not_before END, m.name, length(t.input),
       length(CAST(t.error AS BLOB)),
       t.task_key, t.cost
FROM tasks t
LEFT JOIN modules m ON m.digest = t.module
WHERE t.id = ?1;
